"""The pipeline around the science: parameters, the papermill runner with its cache, provenance
of tables, and the book build. Science modules never import this package."""

from __future__ import annotations

from .book import build_book, stage
from .figures_io import FIGURES, FigureSpec, publish_figure, redraw_figure, register_figure
from .params import ParameterError, apply_overrides, declared_parameters, load_profile
from .provenance import provenance, read_table, write_table
from .runner import NotebookRun, chain, check_parameters, run_chain

__all__ = [
    "FIGURES", "FigureSpec", "NotebookRun", "ParameterError", "apply_overrides", "build_book",
    "chain", "check_parameters", "declared_parameters", "load_profile", "provenance",
    "publish_figure",
    "read_table", "redraw_figure", "register_figure", "run_chain", "stage", "write_table",
]
