"""Publish a figure under a stable id: byte-stable PNG and SVG, a JSON provenance sidecar, and
(inside a notebook kernel) a glue entry for the book; and redraw any registered figure from the
saved tables (``topolip figure ID``).

Every figure of the book goes through :func:`publish_figure`. A figure that can be redrawn from
saved tables is registered in :data:`FIGURES` (:func:`register_figure`): its id, the drawing
function of :mod:`topolip.report.figures`, the tables it reads and the notebook that draws it.
"""

from __future__ import annotations

import contextlib
import hashlib
import io
import json
import re
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from topolip import roster
from topolip.io import atomic_write_bytes, atomic_write_json
from topolip.pipeline._helpers import git, json_safe

__all__ = ["FIGURES", "FigureSpec", "figure_provenance_text", "publish_figure",
           "publish_registered", "redraw_figure", "register_figure"]

#: ``fig-`` then lowercase words (letters and digits) joined by single dashes.
FIG_ID = re.compile(r"^fig(-[a-z0-9]+)+$")
#: Resolution of every PNG (dots per inch); fixed so equal inputs give equal bytes.
DPI = 120
#: Salt of the ids matplotlib writes into SVG (clip paths, glyphs); fixed for byte-stable SVG.
SVG_HASHSALT = "topolip"
LOCK_FILE = "requirements.lock"


def check_figure_id(fig_id: str) -> str:
    """Return ``fig_id`` if it is ``fig-`` followed by lowercase words and dashes.

    Raises
    ------
    ValueError
        Naming ``fig_id``, for anything else (``fig_Topolip``, ``topolip``, ``fig--x``).

    Examples
    --------
    >>> check_figure_id("fig-sweep-vit")
    'fig-sweep-vit'
    """
    if not isinstance(fig_id, str) or not FIG_ID.match(fig_id):
        raise ValueError(
            f"fig_id must be 'fig-' followed by lowercase words joined by single dashes "
            f"(e.g. 'fig-topolip-by-layer'); got {fig_id!r}")
    return fig_id


@dataclass(frozen=True)
class FigureSpec:
    """How to redraw one figure from saved tables.

    Attributes
    ----------
    fig_id : str
        Stable id (``fig-topolip-by-layer``); also the file stem under ``figures/``.
    draw : callable
        ``draw(*frames) -> matplotlib.figure.Figure``, called with one DataFrame per entry of
        ``tables``, in that order (a function of :mod:`topolip.report.figures`, a
        :func:`functools.partial` of one, or one applied to a torch-free join of the tables).
    tables : tuple of str
        Tables the figure is drawn from, relative to ``results_dir`` (``tables/topolip.csv``).
    notebook : str
        Stem of the notebook that publishes it (``03_compare``).
    """

    fig_id: str
    draw: Callable[..., Any]
    tables: tuple[str, ...]
    notebook: str


#: Every figure ``topolip figure ID`` can redraw, by id.
FIGURES: dict[str, FigureSpec] = {}


def register_figure(fig_id: str, draw: Callable[..., Any], *, tables: Sequence[str],
                    notebook: str, replace: bool = False) -> FigureSpec:
    """Register how ``fig_id`` is redrawn: ``draw(*frames)`` over ``tables``.

    Parameters
    ----------
    fig_id : str
        Stable id, ``fig-`` and lowercase words joined by dashes.
    draw : callable
        Returns a matplotlib figure given one DataFrame per table, in order.
    tables : sequence of str
        Paths relative to ``results_dir`` (``"tables/topolip.csv"``), at least one.
    notebook : str
        Stem of the notebook that publishes the figure.
    replace : bool, default=False
        Allow redefining an id already registered.

    Returns
    -------
    FigureSpec
        The entry now in :data:`FIGURES`.

    Raises
    ------
    ValueError
        For a malformed ``fig_id``, an id already registered (without ``replace``), empty or
        absolute ``tables``, or a ``draw`` that is not callable.
    """
    check_figure_id(fig_id)
    if fig_id in FIGURES and not replace:
        raise ValueError(f"fig_id {fig_id!r} is already registered (by notebook "
                         f"{FIGURES[fig_id].notebook}); pass replace=True to redefine it")
    if not callable(draw):
        raise ValueError(f"draw must be callable; got {type(draw).__name__}")
    tables = tuple(str(t) for t in tables)
    if not tables or any(Path(t).is_absolute() for t in tables):
        raise ValueError(f"tables must be paths relative to results_dir; got {tables!r}")
    spec = FigureSpec(fig_id, draw, tables, str(notebook))
    FIGURES[fig_id] = spec
    return spec


def _sha256_file(path: Path) -> str:
    digest = hashlib.sha256()
    with open(path, "rb") as f:
        for block in iter(lambda: f.read(1 << 20), b""):
            digest.update(block)
    return digest.hexdigest()


def _relative_tables(tables: Sequence[str | Path], results_dir: Path) -> list[str]:
    """Each table as a POSIX path relative to ``results_dir``; accepts a bare table name
    (``x.csv``, looked up in ``results_dir/tables``) or a path relative to ``results_dir`` or to
    the working directory (``results/quick/tables/x.csv``)."""
    rel = []
    for t in tables:
        p = Path(t)
        if len(p.parts) == 1 and (results_dir / "tables" / p).is_file():
            p = results_dir / "tables" / p
        try:
            r = p.resolve().relative_to(results_dir.resolve())
        except ValueError:
            if p.is_absolute() or not (results_dir / p).exists():
                raise FileNotFoundError(
                    f"table {str(t)!r} (of tables) is neither under results_dir "
                    f"{str(results_dir)!r} nor an existing path relative to it") from None
            r = p
        if not (results_dir / r).is_file():
            raise FileNotFoundError(f"table {str(t)!r} (of tables) does not exist under "
                                    f"{str(results_dir)!r}")
        rel.append(r.as_posix())
    return rel


def _render(fig, fmt: str) -> bytes:
    """``fig`` as PNG or SVG bytes with no date, software or version string in the metadata."""
    import matplotlib as mpl

    metadata = ({"Software": None} if fmt == "png"
                else {"Date": None, "Creator": None, "Format": None, "Type": None})
    buf = io.BytesIO()
    with mpl.rc_context({"svg.hashsalt": SVG_HASHSALT, "svg.fonttype": "path",
                         "path.simplify": True}):
        fig.savefig(buf, format=fmt, dpi=DPI, metadata=metadata, bbox_inches="tight")
    return buf.getvalue()


def regenerate_command(fig_id: str, results_dir: str | Path) -> str:
    """The one-line command that redraws ``fig_id`` from the tables under ``results_dir``.

    Examples
    --------
    >>> regenerate_command("fig-sweep-vit", "results/quick")
    'topolip figure fig-sweep-vit --profile quick'
    >>> regenerate_command("fig-sweep-vit", "results/tiny")
    'topolip figure fig-sweep-vit --profile tiny'
    """
    return f"topolip figure {fig_id} --profile {Path(results_dir).name}"


def figure_provenance_text(sidecar: Mapping[str, Any]) -> str:
    """The short line shown under a figure in the book, from its sidecar.

    Examples
    --------
    >>> figure_provenance_text({"figure": "fig-a", "profile": "quick",
    ...                         "git_commit": "1a2b3c4d5e", "git_dirty": False,
    ...                         "command": "topolip figure fig-a --profile quick"})
    'fig-a · profile quick · commit 1a2b3c4 · regenerate: topolip figure fig-a --profile quick'
    """
    commit = (sidecar.get("git_commit") or "unknown")[:7]
    if sidecar.get("git_dirty"):
        commit += " (uncommitted changes)"
    return (f"{sidecar['figure']} · profile {sidecar['profile']} · commit {commit} · "
            f"regenerate: {sidecar['command']}")


class _GluedText:
    """The provenance line for glue: ``text/plain`` without quotes (``{glue:text}`` shows the
    repr) and ``text/markdown`` with the command as inline code (``{glue:md}``), which Sphinx's
    smart quotes leave alone (in plain text they turn ``--profile`` into ``–profile``)."""

    def __init__(self, text: str, markdown: str):
        self.text, self.markdown = text, markdown

    def __repr__(self) -> str:
        return self.text

    __str__ = __repr__

    def _repr_markdown_(self) -> str:
        return self.markdown


def _in_kernel() -> bool:
    try:
        from IPython import get_ipython
    except ImportError:  # pragma: no cover - IPython ships with ipykernel
        return False
    shell = get_ipython()
    return shell is not None and getattr(shell, "kernel", None) is not None


def _displayed_image(png: bytes):
    """The image a notebook shows (or glues) for a published figure: ``png`` itself.

    A matplotlib figure displayed in a kernel is rendered again at the kernel's
    ``figure.dpi`` (100 under matplotlib-inline), so the book would show a different image
    from the 120-dpi file its sidecar hashes; an :class:`IPython.display.Image` of the saved
    bytes is shown pixel for pixel.

    Parameters
    ----------
    png : bytes
        A PNG file's bytes (as written by :func:`publish_figure`).

    Returns
    -------
    IPython.display.Image
        Its ``image/png`` representation is ``png``, unchanged.

    Raises
    ------
    ValueError
        If ``png`` does not start with the PNG signature.

    Examples
    --------
    >>> _displayed_image(b"GIF89a")  # doctest: +ELLIPSIS
    Traceback (most recent call last):
    ...
    ValueError: png must be the bytes of a PNG file (signature ...); got b'GIF89a'
    """
    from IPython.display import Image

    signature = b"\x89PNG\r\n\x1a\n"
    if not isinstance(png, bytes | bytearray) or not png.startswith(signature):
        raise ValueError(f"png must be the bytes of a PNG file (signature {signature!r}); "
                         f"got {bytes(png[:8]) if isinstance(png, bytes | bytearray) else png!r}")
    return Image(data=bytes(png), format="png")


def publish_figure(fig, fig_id: str, *, results_dir, notebook: str,
                   tables: Sequence[str] = (), params: Mapping | None = None,
                   seeds: Sequence[int] | None = None, glue: bool = True) -> Path:
    """Write ``fig`` as ``{results_dir}/figures/{fig_id}.png``, ``.svg`` and ``.json``.

    The PNG (120 dpi) and SVG carry no date, software or version string, and the SVG's ids are
    salted with a fixed ``svg.hashsalt``: the same figure gives the same bytes. Each file is
    written atomically (a temporary file renamed in place). The JSON sidecar records

    ``figure``, ``profile`` (last part of ``results_dir``), ``notebook``, ``parameters``,
    ``git_commit`` and ``git_dirty``, ``lock_sha256`` (of ``requirements.lock`` in the working
    directory, null when absent), ``data_sha256`` (of the tables, names and bytes), ``seeds``,
    ``tables`` (relative to ``results_dir``), ``files`` (PNG and SVG, with their SHA-256) and
    ``command`` (the one line that redraws it: ``topolip figure {fig_id} --profile {profile}``).

    Inside a notebook kernel, with ``glue``, the figure is glued (``myst_nb.glue``, not
    displayed) under ``fig_id`` as the very PNG bytes written to ``figures/`` (the book shows
    the 120-dpi file the sidecar describes, not the kernel's own render at its ``figure.dpi``),
    and the provenance line under ``f"{fig_id}-provenance"`` (see
    :func:`figure_provenance_text`); the figure is then closed so that it is not shown a second
    time at the end of the cell. A Markdown cell of the same notebook places it::

        ```{glue:figure} fig-topolip-by-layer
        :name: fig-topolip-by-layer
        :alt: Per-layer TopoLip of each architecture

        Caption text. {glue:md}`fig-topolip-by-layer-provenance`
        ```

    Checked with the pinned myst-nb 1.4.0 and Jupyter Book 1
    (``tests/test_figure_registry.py::test_glued_figure_and_provenance_render_in_a_book``): the
    caption is parsed as nested Markdown, so inline glue roles work in it. Both
    ``{glue:text}`` and ``{glue:md}`` render the line (it is glued as an object whose
    ``text/plain`` form is the bare line, without quotes, and whose ``text/markdown`` form has the
    command as inline code), but in ``{glue:text}`` Sphinx's smart quotes turn the command's
    ``--profile`` into ``–profile``, which no shell accepts: use ``{glue:md}``, which shows the
    command as code, exactly. Outside a kernel (scripts, ``topolip figure``) nothing is glued
    and ``fig`` stays open.

    Parameters
    ----------
    fig : matplotlib.figure.Figure
        The figure to publish.
    fig_id : str
        Stable id: ``fig-`` followed by lowercase words (letters, digits) joined by dashes.
    results_dir : path
        The profile's results folder (``results/quick``); its last part names the profile.
    notebook : str
        Stem of the notebook that draws it (``03_compare``).
    tables : sequence of str, default=()
        Tables the figure is drawn from: paths relative to ``results_dir``
        (``tables/topolip.csv``) or to the working directory (``results/quick/tables/...``).
    params : mapping, optional
        Parameters the figure depends on (written to the sidecar, non-finite floats as
        strings).
    seeds : sequence of int, optional
        Random seeds of the runs drawn.
    glue : bool, default=True
        Glue the figure and its provenance line when running in a notebook kernel.

    Returns
    -------
    pathlib.Path
        The PNG path.

    Raises
    ------
    ValueError
        If ``fig_id`` is malformed or ``notebook`` is empty.
    FileNotFoundError
        If a table of ``tables`` does not exist.
    """
    check_figure_id(fig_id)
    if not notebook:
        raise ValueError("notebook must name the notebook that draws the figure (e.g. "
                         "'03_compare'); got an empty value")
    results_dir = Path(results_dir)
    rel_tables = _relative_tables(tables, results_dir)
    data = hashlib.sha256()
    for rel in rel_tables:
        data.update(rel.encode() + b"\0" + _sha256_file(results_dir / rel).encode() + b"\0")
    lock = Path(LOCK_FILE)
    root = Path.cwd()
    status = git("status", "--porcelain", "--untracked-files=no", cwd=root)
    out = results_dir / "figures"
    png, svg = _render(fig, "png"), _render(fig, "svg")
    sidecar = {
        "figure": fig_id,
        "profile": results_dir.name,
        "notebook": notebook,
        "parameters": json_safe(dict(params or {})),
        "git_commit": git("rev-parse", "HEAD", cwd=root),
        "git_dirty": bool(status) if status is not None else None,
        "lock_sha256": _sha256_file(lock) if lock.is_file() else None,
        "data_sha256": data.hexdigest(),
        "seeds": [int(s) for s in seeds] if seeds is not None else None,
        "tables": rel_tables,
        "files": {
            "png": {"path": f"figures/{fig_id}.png", "sha256": hashlib.sha256(png).hexdigest()},
            "svg": {"path": f"figures/{fig_id}.svg", "sha256": hashlib.sha256(svg).hexdigest()},
        },
        "command": regenerate_command(fig_id, results_dir),
    }
    path = atomic_write_bytes(out / f"{fig_id}.png", png)
    atomic_write_bytes(out / f"{fig_id}.svg", svg)
    atomic_write_json(out / f"{fig_id}.json", sidecar)
    if glue and _in_kernel():
        import matplotlib.pyplot as plt
        from myst_nb import glue as myst_glue

        myst_glue(fig_id, _displayed_image(png), display=False)
        text = figure_provenance_text(sidecar)
        markdown = text.replace(sidecar["command"], f"`{sidecar['command']}`")
        myst_glue(f"{fig_id}-provenance", _GluedText(text, markdown), display=False)
        plt.close(fig)
    return path


def redraw_figure(fig_id: str, *, results_dir: str | Path, root: str | Path = ".") -> Path:
    """Redraw a registered figure from its saved tables and publish it again (no glue).

    The sidecar's parameters and seeds are kept from the published figure when there is one,
    so redrawing unchanged tables gives byte-identical files.

    Parameters
    ----------
    fig_id : str
        A key of :data:`FIGURES`.
    results_dir : path
        Results folder, relative to ``root`` (``results/quick``).
    root : path, default="."
        Repository root (git commit and ``requirements.lock`` are read there).

    Returns
    -------
    pathlib.Path
        The PNG path, relative to ``root``.

    Raises
    ------
    KeyError
        For an id that is not registered (the message lists the known ids).
    FileNotFoundError
        If a table the figure reads is missing (run the notebook chain first).
    """
    import matplotlib.pyplot as plt

    from topolip.pipeline.provenance import read_table

    if fig_id not in FIGURES:
        known = ", ".join(sorted(FIGURES)) or "none"
        raise KeyError(f"no figure registered as {fig_id!r}; known: {known}")
    spec = FIGURES[fig_id]
    with contextlib.chdir(root):
        results_dir = Path(results_dir)
        frames = [read_table(results_dir / t) for t in spec.tables]
        old = results_dir / "figures" / f"{fig_id}.json"
        before = json.loads(old.read_text()) if old.exists() else {}
        fig = spec.draw(*frames)
        try:
            return publish_figure(fig, fig_id, results_dir=results_dir, notebook=spec.notebook,
                                  tables=spec.tables, params=before.get("parameters"),
                                  seeds=before.get("seeds"), glue=False)
        finally:
            plt.close(fig)


def publish_registered(fig_id: str, *, results_dir: str | Path, params: Mapping | None = None,
                       seeds: Sequence[int] | None = None, glue: bool = True,
                       **draw_kwargs) -> Path:
    """Draw the registered figure ``fig_id`` from its saved tables and publish it: what a
    notebook calls, so that a figure is declared once (in :data:`FIGURES`).

    The tables of the entry are read from ``results_dir`` (relative to the working directory),
    drawn by the entry's function and published by :func:`publish_figure` under the entry's
    notebook and tables; :func:`redraw_figure` does the same later from the sidecar.

    Parameters
    ----------
    fig_id : str
        A key of :data:`FIGURES`.
    results_dir : path
        The profile's results folder (``results/quick``).
    params : mapping, optional
        Parameters the figure depends on (written to the sidecar).
    seeds : sequence of int, optional
        Random seeds of the runs drawn.
    glue : bool, default=True
        Glue the figure and its provenance line when running in a notebook kernel.
    **draw_kwargs
        Keyword arguments of the drawing function beyond the entry's own (``width=`` of
        ``fig-theory-attention``); only for a function that accepts them.

    Returns
    -------
    pathlib.Path
        The PNG path.

    Raises
    ------
    KeyError
        For an id that is not registered (the message lists the known ids).
    FileNotFoundError
        If a table the figure reads is missing.
    """
    from topolip.pipeline.provenance import read_table

    if fig_id not in FIGURES:
        known = ", ".join(sorted(FIGURES)) or "none"
        raise KeyError(f"no figure registered as {fig_id!r}; known: {known}")
    spec = FIGURES[fig_id]
    results_dir = Path(results_dir)
    frames = [read_table(results_dir / t) for t in spec.tables]
    fig = spec.draw(*frames, **draw_kwargs)
    return publish_figure(fig, fig_id, results_dir=results_dir, notebook=spec.notebook,
                          tables=spec.tables, params=params, seeds=seeds, glue=glue)


def _plot(name: str, **kwargs) -> Callable[..., Any]:
    """``topolip.report.figures.<name>`` with ``kwargs`` (and any given when drawn), imported when
    first called (matplotlib and seaborn are not loaded by ``import topolip.pipeline``)."""

    def draw(*frames, **extra):
        from topolip.report import figures

        return getattr(figures, name)(*frames, **{**kwargs, **extra})

    draw.__name__ = draw.__qualname__ = name
    return draw


def _bounds_vs_measured(bounds, measured):
    """05's figure from ``tables/bounds.csv`` and ``tables/topolip.csv``: their join
    (:func:`topolip.evidence.bound_tables.bounds_vs_measured`) drawn by
    :func:`topolip.report.figures.plot_bounds_vs_measured`."""
    from topolip.evidence.bound_tables import bounds_vs_measured
    from topolip.report import figures

    return figures.plot_bounds_vs_measured(bounds_vs_measured(bounds, measured))


def _effective_robustness(radius_summary):
    """04's effective-robustness figure from ``tables/radius_summary.csv``: the fit of
    :func:`topolip.evidence.claims.effective_radius` drawn by
    :func:`topolip.report.figures.plot_effective_robustness`."""
    from topolip.evidence.claims import effective_radius
    from topolip.report import figures

    return figures.plot_effective_robustness(radius_summary, effective_radius(radius_summary))


def _register_book_figures() -> None:
    """The figures the notebooks draw from saved tables with :mod:`topolip.report.figures`: every
    figure of the book."""
    t = "tables/{}.csv".format
    register_figure("fig-bounds-vs-measured", _bounds_vs_measured,
                    tables=[t("bounds"), t("topolip")], notebook="05_bounds_vs_measured")
    register_figure("fig-effective-robustness", _effective_robustness,
                    tables=[t("radius_summary")], notebook="04_robustness")
    register_figure("fig-lit-attention", _plot("plot_literature_attention"),
                    tables=[t("lit_attention_growth"), t("lit_castin"),
                            t("lit_castin_real")],
                    notebook="10_literature")
    register_figure("fig-lit-topology", _plot("plot_literature_topology"),
                    tables=[t("lit_betti"), t("lit_confidence")], notebook="10_literature")
    for fig_id, name, table, notebook, kwargs in (
        ("fig-theory-attention", "plot_attention_scaling", "theory_attention", "00_theory", {}),
        ("fig-theory-conv", "plot_conv_scaling", "theory_conv", "00_theory", {}),
        ("fig-train-curves", "plot_training_curves", "training", "01_train", {}),
        ("fig-noise-floor", "plot_noise_floor", "topolip", "02_topolip", {}),
        ("fig-compare-end-to-end", "plot_end_to_end", "topolip_summary", "03_compare", {}),
        ("fig-compare-by-layer", "plot_topolip_by_layer", "topolip", "03_compare", {}),
        ("fig-robustness-curves", "plot_accuracy_curves", "robustness", "04_robustness", {}),
        ("fig-radius-curves", "plot_robust_curve", "robust_curve", "04_robustness", {}),
        ("fig-topolip-vs-drop", "plot_topolip_vs_accuracy", "topolip_summary", "04_robustness",
         {}),
        ("fig-sweep-size", "plot_size_sweep", "sweeps", "07_sweeps", {}),
        ("fig-ood-topolip", "plot_end_to_end", "ood_topolip_summary", "06_ood",
         {"group": "ood_set"}),
        ("fig-ood-behaviour", "plot_ood_behaviour", "ood_behaviour", "06_ood", {}),
        ("fig-ood-detectors", "plot_ood_detectors", "ood_behaviour", "06_ood", {}),
        ("fig-verdicts", "plot_verdicts", "verdicts", "08_verdict", {}),
        ("fig-measure-study", "plot_measure_study", "measure_study", "09_measures", {}),
    ):
        register_figure(fig_id, _plot(name, **kwargs), tables=[t(table)], notebook=notebook)
    for arch in roster.arch_names():
        register_figure(f"fig-sweep-{arch.replace('_', '-')}",
                        _plot("plot_sweep", arch=arch,
                              measures=("end_to_end", "end_to_end_scale_free")),
                        tables=[t("sweeps")], notebook="07_sweeps")


_register_book_figures()
