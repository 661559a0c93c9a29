"""The pipeline around the science: parameters, the papermill runner with its cache, provenance
of tables, and the book build. Science modules never import this package."""

from __future__ import annotations

from topolip.pipeline.book import (
    SOURCES,
    build_book,
    figure_bibtex,
    figure_links,
    figure_numbers,
    glue_values,
    install_cell,
    paste_glue,
    paste_sources,
    publish_results,
    site_url,
    stage,
    stage_book,
    tidy_page,
    toc_documents,
)
from topolip.pipeline.diff import ResultsDiff, VerdictChange, diff_results, format_diff
from topolip.pipeline.figure_registry import (
    FIGURES,
    FigureSpec,
    figure_provenance_text,
    publish_figure,
    publish_registered,
    redraw_figure,
    register_figure,
)
from topolip.pipeline.params import (
    SCHEMA,
    Param,
    ParameterError,
    apply_overrides,
    declared_parameters,
    describe_schema,
    load_params,
    load_profile,
    notebook_parameters,
    parse_override,
    schema_defaults,
    validate_params,
)
from topolip.pipeline.pdf import build_pdf, pdf_name, print_page
from topolip.pipeline.provenance import library_fingerprint, provenance, read_table, write_table
from topolip.pipeline.runner import (
    ChainInterrupted,
    DependencyError,
    NotebookDeps,
    NotebookFailed,
    NotebookRun,
    OutputsMissing,
    ResultsInUse,
    chain,
    check_parameters,
    load_dependencies,
    run_chain,
    write_glue,
)

__all__ = [
    "FIGURES", "SCHEMA", "SOURCES", "DependencyError", "FigureSpec", "NotebookDeps",
    "NotebookFailed", "NotebookRun", "Param", "ParameterError", "apply_overrides", "build_book",
    "chain", "check_parameters", "declared_parameters", "describe_schema",
    "figure_provenance_text", "install_cell", "library_fingerprint", "load_dependencies",
    "load_params", "load_profile", "notebook_parameters", "parse_override", "provenance",
    "publish_figure", "publish_registered", "read_table", "redraw_figure", "register_figure",
    "run_chain", "schema_defaults", "stage", "stage_book", "toc_documents", "validate_params",
    "write_glue", "write_table",
    # publishing (issue 19): the site's extras, the PDF, the verdict diff
    "ResultsDiff", "VerdictChange", "build_pdf", "diff_results", "figure_bibtex", "figure_links",
    "figure_numbers",
    "format_diff", "glue_values", "pdf_name", "print_page", "publish_results", "site_url",
    "tidy_page",
    # the downloaded Markdown holds the glued text (issue 27)
    "paste_glue", "paste_sources",
    # faults (issue 21): interrupts, missing outputs, a results folder in use
    "ChainInterrupted", "OutputsMissing", "ResultsInUse",
]
