"""Command line: ``topolip run|book|params|figure|diff`` (``--profile NAME``, ``name=value``).

Examples::

    topolip book                                   # quick profile, whole chain, then the book
    topolip book --profile quick epochs=2 seeds=[1]
    topolip run --only 02_topolip topolip_strengths.fgsm=0.1   # one notebook
    topolip params                                 # every parameter, its value, who reads it
    topolip params --schema                        # what each parameter allows
    topolip --debug run epochs=abc                 # the traceback, not just the one line
    topolip run --dry-run epochs=2                 # what would execute, and why
    topolip figure fig-noise-floor                 # redraw one figure from the saved tables
    topolip diff results/before results/after      # which verdicts, numbers and tables changed
    topolip pdf                                    # _build/html printed to _build/pdf/*.pdf
"""

from __future__ import annotations

import argparse
import signal
import sys
from pathlib import Path

from topolip.pipeline.book import build_book
from topolip.pipeline.param_schema import ParameterError, describe_schema
from topolip.pipeline.params import load_params, load_profile
from topolip.pipeline.runner import NotebookFailed, chain, check_parameters, run_chain

__all__ = ["main"]


def _params(args) -> dict:
    """Profile + overrides, validated against the schema (one line on any mistake)."""
    params, _ = load_params(args.profile, args.overrides, root=args.root)
    return params


def _one_line(exc: BaseException) -> str:
    text = " ".join(str(exc).split())
    return text if len(text) <= 600 else text[:597] + "..."


def _run(args) -> int:
    if args.command == "params" and args.schema:
        for line in describe_schema():
            print(line)
        return 0
    params = _params(args)
    if args.command == "params":
        per = check_parameters(chain(args.root), params)
        for key in sorted(params):
            users = [p.stem for p, d in per.items() if key in d]
            print(f"{key} = {params[key]!r}    # {', '.join(users) or 'no notebook'}")
        return 0
    run_chain(args.root, params, only=args.only, force=args.force, dry_run=args.dry_run)
    if args.command == "book" and not args.dry_run:
        html = build_book(args.root)
        print(f"[topolip] book built: {html / 'index.html'}")
    return 0


def _add_figure_command(sub) -> None:
    """``topolip figure ID [--profile NAME] [--results-dir DIR]``: redraw one registered figure."""
    p = sub.add_parser("figure", help="redraw one figure from the saved tables")
    p.add_argument("fig_id", metavar="ID", help="figure id, e.g. fig-noise-floor")
    p.add_argument("--profile", default="quick",
                   help="read the tables of this profile's results_dir (a profile without a "
                        "file reads results/NAME)")
    p.add_argument("--results-dir", default=None, help="read the tables here instead")
    p.add_argument("--root", default=".", type=Path, help="repository root (default .)")


def _figure(args) -> int:
    """Run ``topolip figure``: redraw ``args.fig_id`` from the tables under the results folder."""
    from topolip.pipeline.figure_registry import redraw_figure

    results_dir = args.results_dir
    if results_dir is None:
        try:
            results_dir = load_profile(args.profile, root=args.root)["results_dir"]
        except ParameterError:
            if not (args.root / "results" / args.profile).is_dir():
                raise
            results_dir = f"results/{args.profile}"  # e.g. results/tiny of the tests
    try:
        png = redraw_figure(args.fig_id, results_dir=results_dir, root=args.root)
    except (KeyError, FileNotFoundError) as exc:
        message = exc.args[0] if isinstance(exc, KeyError) else str(exc)
        print(f"topolip: error: {message}", file=sys.stderr)
        return 2
    print(f"[topolip] {args.fig_id}: {png} (.svg, .json)")
    return 0


def _add_diff_command(sub) -> None:
    """``topolip diff A B [--rtol R]``: what changed between two results folders."""
    p = sub.add_parser("diff", help="compare two results folders: verdicts, glued numbers, "
                                    "tables (exit 1 when a verdict changed)")
    p.add_argument("before", type=Path, help="results folder (results/<profile>) or tables/")
    p.add_argument("after", type=Path, help="the results folder to compare with it")
    p.add_argument("--rtol", type=float, default=1e-3,
                   help="relative tolerance for a number to count as moved (default 1e-3)")


def _diff(args) -> int:
    """Run ``topolip diff``: print the report; 1 when a verdict changed, else 0."""
    from topolip.report.diff import diff_results, format_diff

    diff = diff_results(args.before, args.after, rtol=args.rtol)
    for line in format_diff(diff):
        print(line)
    return 1 if diff.verdict_changed else 0


def _add_pdf_command(sub) -> None:
    """``topolip pdf [--html DIR]``: print the built book to ``_build/pdf/<name>.pdf``."""
    p = sub.add_parser("pdf", help="print the built book (_build/html) to one PDF with "
                                   "headless chromium, offline")
    p.add_argument("--root", default=".", type=Path, help="repository root (default .)")
    p.add_argument("--html", default=None, type=Path,
                   help="the built book (default ROOT/_build/html)")


def _pdf(args) -> int:
    from topolip.pipeline.pdf import build_pdf

    out = build_pdf(args.html or args.root / "_build" / "html", args.root)
    print(f"[topolip] PDF: {out} ({out.stat().st_size / 1e6:.1f} MB)")
    return 0


def main(argv: list[str] | None = None) -> int:
    """Run the command line; return the exit status (0 ok, 1 a failed run, 2 a bad input).

    A user's mistake (bad parameter, missing file, failed notebook) prints one line
    ``topolip: error: ...`` on stderr, never a traceback; ``--debug`` shows the traceback.
    """
    parser = argparse.ArgumentParser(prog="topolip", description=__doc__.split("\n")[0])
    parser.add_argument("--debug", action="store_true",
                        help="show the full traceback of an error")
    sub = parser.add_subparsers(dest="command", required=True)
    for name, text in (("run", "execute the notebook chain"),
                       ("book", "execute the chain, then build the Jupyter Book"),
                       ("params", "list (and validate) the parameters of the chain")):
        p = sub.add_parser(name, help=text)
        p.add_argument("--profile", default="quick", help="name in data/profiles or a YAML path")
        p.add_argument("--root", default=".", type=Path, help="repository root (default .)")
        p.add_argument("--debug", action="store_true", default=argparse.SUPPRESS,
                       help="show the full traceback of an error")
        p.add_argument("overrides", nargs="*", metavar="name=value",
                       help="override a parameter (YAML value; group.key=value for a mapping)")
        if name == "params":
            p.add_argument("--schema", action="store_true",
                           help="print every parameter's type, allowed values and meaning")
        else:
            p.add_argument("--only", action="append", metavar="NOTEBOOK",
                           help="run only this notebook (repeatable), e.g. 02_topolip")
            p.add_argument("--force", action="store_true", help="ignore the notebook cache")
            p.add_argument("--dry-run", action="store_true",
                           help="print what would execute and why; execute nothing")
    _add_figure_command(sub)
    _add_diff_command(sub)
    _add_pdf_command(sub)
    args = parser.parse_args(argv)
    if hasattr(signal, "SIGPIPE"):  # `topolip params | head` ends quietly, as Unix tools do
        signal.signal(signal.SIGPIPE, signal.SIG_DFL)
    try:
        if args.command == "figure":
            return _figure(args)
        if args.command == "diff":
            return _diff(args)
        if args.command == "pdf":
            return _pdf(args)
        return _run(args)
    except Exception as exc:
        if args.debug:
            raise
        from papermill import PapermillExecutionError

        if isinstance(exc, ParameterError | FileNotFoundError | NotADirectoryError
                      | PermissionError | UnicodeError):
            status, text = 2, _one_line(exc)
        elif isinstance(exc, PapermillExecutionError):
            status, text = 1, _one_line(exc if isinstance(exc, NotebookFailed) else
                                        f"a notebook failed at cell {exc.exec_count}: "
                                        f"{exc.ename}: {exc.evalue}")
        elif isinstance(exc, RuntimeError | ValueError | OSError):  # the book build, a table
            status, text = 1, _one_line(exc)
        else:  # a bug, not a user's mistake: still one line, the traceback on request
            status, text = 1, (f"internal error {type(exc).__name__}: {_one_line(exc)} "
                               f"(rerun with --debug for the traceback)")
        print(f"topolip: error: {text}", file=sys.stderr)
        return status
    except KeyboardInterrupt as exc:  # Ctrl-C or SIGTERM: the runner rolled back and says so
        if args.debug:
            raise
        print(f"topolip: {exc}" if str(exc) else "topolip: interrupted", file=sys.stderr)
        return 128 + getattr(exc, "signum", signal.SIGINT)


if __name__ == "__main__":  # pragma: no cover
    sys.exit(main())
