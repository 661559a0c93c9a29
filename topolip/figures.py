"""Figures of the book, drawn from the tidy tables (so a figure and a check read the same
numbers), and saved byte-stably."""

from __future__ import annotations

from pathlib import Path

import matplotlib.pyplot as plt
import matplotlib.ticker as mticker
import numpy as np
import pandas as pd
import seaborn as sns

from .io import atomic_write

__all__ = ["plot_topolip_by_layer", "save_figure"]


def save_figure(fig: plt.Figure, path: str | Path, *, dpi: int = 120) -> Path:
    """Save ``fig`` as PNG without time stamps or version strings (same figure, same bytes)."""
    import io

    buf = io.BytesIO()
    fig.savefig(buf, format="png", dpi=dpi, metadata={"Software": None}, bbox_inches="tight")
    return atomic_write(path, lambda f: f.write(buf.getvalue()))


def plot_topolip_by_layer(table: pd.DataFrame, *, hue: str = "arch") -> plt.Figure:
    """Per-layer TopoLip, raw (left) and scale-free (right), one row per perturbation.

    Parameters
    ----------
    table : pandas.DataFrame
        Tidy rows of ``topolip.experiments.measure_topolip`` with columns ``arch``, ``seed``,
        ``perturbation``, ``strength``, ``depth``, ``layer``, ``topolip``,
        ``topolip_scale_free``. Lines are means over seeds, bands one standard deviation.

    Returns
    -------
    matplotlib.figure.Figure
        Log-scale y axes; the dashed line at 1 separates expanding from contracting layers.
    """
    kinds = list(dict.fromkeys(table["perturbation"]))
    fig, axes = plt.subplots(len(kinds), 2, figsize=(11, 3.4 * len(kinds)), squeeze=False,
                             sharex=True)
    palette = dict(zip(sorted(table[hue].unique()), sns.color_palette("colorblind"), strict=False))
    for i, kind in enumerate(kinds):
        part = table[(table["perturbation"] == kind) & (table["depth"] > 0)]
        strength = part["strength"].iloc[0] if len(part) else np.nan
        for j, (col, title) in enumerate((("topolip", "raw"),
                                          ("topolip_scale_free", "scale-free"))):
            ax = axes[i, j]
            sns.lineplot(data=part, x="depth", y=col, hue=hue, palette=palette, marker="o",
                         errorbar="sd", ax=ax, legend=(i == 0 and j == 0))
            ax.axhline(1.0, color="0.4", ls="--", lw=1)
            ax.set_yscale("log")
            ax.yaxis.set_major_formatter(mticker.FormatStrFormatter("%g"))
            ax.yaxis.set_minor_formatter(mticker.FormatStrFormatter("%g"))
            ax.tick_params(axis="y", which="minor", labelsize=7)
            ax.set_title(f"{kind} (strength {strength:g}): {title} TopoLip")
            ax.set_xlabel("probe depth ℓ (1 = first probe after the input)")
            ax.set_ylabel("TopoLip$_\\ell$ = Δ$_\\ell$ / Δ$_{\\ell-1}$")
    fig.tight_layout()
    return fig
