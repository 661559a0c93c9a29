"""Publish a book figure: PNG and SVG files, a provenance sidecar, and a glued figure.

Minimal stand-in written for issue 9's notebooks; the issue-8/10 developer's version of
:func:`publish_figure` (same signature) replaces it at merge.
"""

from __future__ import annotations

import io
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

from ..io import atomic_write, atomic_write_json
from .provenance import provenance

__all__ = ["publish_figure"]


def publish_figure(fig, fig_id: str, *, results_dir: str | Path, notebook: str,
                   tables: Sequence[str] = (), params: Mapping[str, Any] | None = None,
                   seeds: Sequence[int] | None = None, glue: bool = True) -> Path:
    """Save ``fig`` under ``{results_dir}/figures/{fig_id}.png`` (and ``.svg``, ``.json``) and
    glue it under ``fig_id`` with a provenance sentence under ``f"{fig_id}-provenance"``.

    Parameters
    ----------
    fig : matplotlib.figure.Figure
    fig_id : str
        Stable figure label, e.g. ``"fig-train-accuracy"`` (the ``{glue:figure}`` key).
    results_dir : path
        The run's results folder.
    notebook : str
        The notebook that draws it, e.g. ``"01_train"``.
    tables : sequence of str
        Table files (relative to ``results_dir/tables``) the figure reads.
    params : mapping, optional
        Parameters written to the sidecar.
    seeds : sequence of int, optional
        Seeds the figure averages over (named in the provenance sentence).
    glue : bool, default=True
        Glue the figure and the sentence (needs ``myst_nb``; inside an executed notebook).

    Returns
    -------
    pathlib.Path
        The PNG file.

    Raises
    ------
    ValueError
        If ``fig_id`` is empty or holds a path separator.
    """
    import matplotlib.pyplot as plt

    if not fig_id or "/" in fig_id or "\\" in fig_id:
        raise ValueError(f"fig_id must be a plain non-empty label, got {fig_id!r}")
    out = Path(results_dir) / "figures"
    png = out / f"{fig_id}.png"
    for fmt, path in (("png", png), ("svg", out / f"{fig_id}.svg")):
        buf = io.BytesIO()
        meta = {"Software": None} if fmt == "png" else {"Date": None, "Creator": None}
        fig.savefig(buf, format=fmt, dpi=120, metadata=meta, bbox_inches="tight")
        atomic_write(path, lambda f, b=buf: f.write(b.getvalue()))
    atomic_write_json(out / f"{fig_id}.json",
                      {"figure": fig_id, "notebook": notebook, "tables": list(tables),
                       "seeds": None if seeds is None else [int(s) for s in seeds],
                       **provenance(params)})
    parts = [f"Drawn by notebook {notebook}"]
    if tables:
        parts.append("from " + ", ".join(f"tables/{t}" for t in tables))
    if seeds is not None:
        parts.append(f"seeds {', '.join(str(int(s)) for s in seeds)}")
    sentence = "; ".join(parts) + f"; files figures/{fig_id}.png and .svg."
    if glue:
        from myst_nb import glue as _glue

        from ..report import glue_number

        _glue(fig_id, fig, display=False)
        glue_number(f"{fig_id}-provenance", sentence, fmt="{}")
    plt.close(fig)
    return png
