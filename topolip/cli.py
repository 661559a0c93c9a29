"""Command line: ``topolip run|book|params [--profile NAME] [name=value ...]``.

Examples::

    topolip book                                   # quick profile, whole chain, then the book
    topolip book --profile quick epochs=2 seeds=[1]
    topolip run --only 02_topolip eps=0.05         # one notebook (earlier outputs reused)
    topolip params                                 # every parameter, its value, who reads it
    topolip run --dry-run epochs=2                 # what would execute, and why
    topolip figure fig-topolip-by-layer            # redraw one figure from the saved tables
"""

from __future__ import annotations

import argparse
import signal
import sys
from pathlib import Path

from .pipeline import (
    ParameterError,
    apply_overrides,
    build_book,
    chain,
    check_parameters,
    load_profile,
    run_chain,
)

__all__ = ["main"]


def _params(args) -> dict:
    profile = load_profile(args.profile, root=args.root)
    known = set(profile)
    import jupytext

    from .pipeline.params import declared_parameters
    for path in chain(args.root):
        known |= set(declared_parameters(jupytext.read(path), name=str(path)))
    return apply_overrides(profile, args.overrides, known=known)


def _add_figure_command(sub) -> None:
    """``topolip figure ID [--profile NAME] [--results-dir DIR]``: redraw one registered figure."""
    p = sub.add_parser("figure", help="redraw one figure from the saved tables")
    p.add_argument("fig_id", metavar="ID", help="figure id, e.g. fig-topolip-by-layer")
    p.add_argument("--profile", default="quick",
                   help="read the tables of this profile's results_dir (a profile without a "
                        "file reads results/NAME)")
    p.add_argument("--results-dir", default=None, help="read the tables here instead")
    p.add_argument("--root", default=".", type=Path, help="repository root (default .)")


def _figure(args) -> int:
    """Run ``topolip figure``: redraw ``args.fig_id`` from the tables under the results folder."""
    from .pipeline.figures_io import redraw_figure

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


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="topolip", description=__doc__.split("\n")[0])
    sub = parser.add_subparsers(dest="command", required=True)
    for name, text in (("run", "execute the notebook chain"),
                       ("book", "execute the chain, then build the Jupyter Book"),
                       ("params", "list the parameters of the chain")):
        p = sub.add_parser(name, help=text)
        p.add_argument("--profile", default="quick", help="name in data/profiles or a YAML path")
        p.add_argument("--root", default=".", type=Path, help="repository root (default .)")
        p.add_argument("overrides", nargs="*", metavar="name=value",
                       help="override a parameter (YAML value; group.key=value for a mapping)")
        if name != "params":
            p.add_argument("--only", action="append", metavar="NOTEBOOK",
                           help="run only this notebook (repeatable), e.g. 02_topolip")
            p.add_argument("--force", action="store_true", help="ignore the notebook cache")
            p.add_argument("--dry-run", action="store_true",
                           help="print what would execute and why; execute nothing")
    _add_figure_command(sub)
    args = parser.parse_args(argv)
    if hasattr(signal, "SIGPIPE"):  # `topolip params | head` ends quietly, as Unix tools do
        signal.signal(signal.SIGPIPE, signal.SIG_DFL)
    try:
        if args.command == "figure":
            return _figure(args)
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
    except (ParameterError, FileNotFoundError) as exc:
        print(f"topolip: error: {exc}", file=sys.stderr)
        return 2
    except RuntimeError as exc:  # the book build
        print(f"topolip: error: {exc}", file=sys.stderr)
        return 1
    except Exception as exc:
        from papermill import PapermillExecutionError

        if not isinstance(exc, PapermillExecutionError):
            raise
        print(f"topolip: error: a notebook failed at cell {exc.exec_count}: {exc.ename}: "
              f"{exc.evalue}", file=sys.stderr)
        return 1
    return 0


if __name__ == "__main__":  # pragma: no cover
    sys.exit(main())
