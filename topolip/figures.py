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

__all__ = [
    "plot_accuracy_curves", "plot_ood_behaviour", "plot_sweep", "plot_topolip_by_layer",
    "plot_topolip_vs_accuracy", "save_figure",
]


def _palette(values) -> dict:
    """One colour per value, the same for the same set of values in every figure."""
    return dict(zip(sorted(pd.unique(values)), sns.color_palette("colorblind"), strict=False))


def save_figure(fig: plt.Figure, path: str | Path, *, dpi: int = 120) -> Path:
    """Save ``fig`` as PNG without time stamps or version strings (same figure, same bytes)."""
    import io

    buf = io.BytesIO()
    fig.savefig(buf, format="png", dpi=dpi, metadata={"Software": None}, bbox_inches="tight")
    return atomic_write(path, lambda f: f.write(buf.getvalue()))


def plot_topolip_by_layer(table: pd.DataFrame, *, hue: str = "arch",
                          row: str = "perturbation") -> plt.Figure:
    """Per-layer TopoLip, raw (left) and scale-free (right), one row per perturbation.

    Parameters
    ----------
    table : pandas.DataFrame
        Tidy rows of ``topolip.experiments.measure_topolip`` with columns ``arch``, ``seed``,
        ``perturbation``, ``strength``, ``depth``, ``layer``, ``topolip``,
        ``topolip_scale_free``. Lines are means over seeds, bands one standard deviation.
    hue : str, default="arch"
        Column whose values get one line (and colour) each.
    row : str, default="perturbation"
        Column whose values get one row of panels each (``"ood_set"`` for
        ``topolip.experiments.measure_ood``, whose tables have no ``strength``).

    Returns
    -------
    matplotlib.figure.Figure
        Log-scale y axes; the dashed line at 1 separates expanding from contracting layers.
    """
    kinds = list(dict.fromkeys(table[row]))
    fig, axes = plt.subplots(len(kinds), 2, figsize=(11, 3.4 * len(kinds)), squeeze=False,
                             sharex=True)
    palette = _palette(table[hue])
    for i, kind in enumerate(kinds):
        part = table[(table[row] == kind) & (table["depth"] > 0)]
        strength = (part["strength"].iloc[0] if len(part) and "strength" in part
                    else np.nan)
        where = f"{kind} (strength {strength:g})" if np.isfinite(strength) else f"{kind}"
        for j, (col, title) in enumerate((("topolip", "raw"),
                                          ("topolip_scale_free", "scale-free"))):
            ax = axes[i, j]
            sns.lineplot(data=part, x="depth", y=col, hue=hue, palette=palette, marker="o",
                         errorbar="sd", ax=ax, legend=(i == 0 and j == 0))
            ax.axhline(1.0, color="0.4", ls="--", lw=1)
            _log_axis(ax)
            ax.set_title(f"{where}: {title} TopoLip")
            ax.set_xlabel("probe depth ℓ (1 = first probe after the input)")
            ax.set_ylabel("TopoLip$_\\ell$ = Δ$_\\ell$ / Δ$_{\\ell-1}$")
    fig.tight_layout()
    return fig


class _PlainLogFormatter(mticker.LogFormatter):
    """matplotlib's log-axis label policy, with plain numbers (0.6, 2, 10) as labels."""

    def _num_to_string(self, x, vmin, vmax):  # noqa: ARG002 - matplotlib's signature
        return f"{x:g}"


def _log_axis(ax: plt.Axes) -> None:
    """Log y axis with plain numbers; minor ticks labelled only when the axis spans about one
    decade or less (matplotlib's ``minor_thresholds``), so wide ranges stay readable."""
    ax.set_yscale("log")
    ax.yaxis.set_major_formatter(_PlainLogFormatter(labelOnlyBase=False))
    ax.yaxis.set_minor_formatter(_PlainLogFormatter(labelOnlyBase=False,
                                                    minor_thresholds=(1, 0.4)))
    ax.tick_params(axis="y", which="minor", labelsize=7)


def plot_accuracy_curves(curves: pd.DataFrame, *, hue: str = "arch",
                         ncols: int = 4) -> plt.Figure:
    """Accuracy against perturbation strength, one panel per perturbation kind.

    Parameters
    ----------
    curves : pandas.DataFrame
        Rows of :func:`topolip.robustness.robustness_curves` with ``hue`` and ``seed`` columns
        added: ``perturbation``, ``strength``, ``unit``, ``accuracy``. Lines are means over
        seeds, bands one standard deviation.
    hue : str, default="arch"
        Column with one line (and colour) per value.
    ncols : int, default=4
        Panels per row.

    Returns
    -------
    matplotlib.figure.Figure
        x: ε in pixel units of [0, 1] images (attacks) or severity 0..5 (corruptions);
        y: accuracy in [0, 1].

    Raises
    ------
    ValueError
        If ``curves`` is empty or lacks a column.

    Examples
    --------
    >>> t = pd.DataFrame({"arch": ["a"] * 4, "seed": [0] * 4,
    ...                   "perturbation": ["fgsm", "fgsm", "blur", "blur"],
    ...                   "strength": [0, 0.1, 0, 2], "unit": ["eps", "eps", "severity",
    ...                   "severity"], "accuracy": [0.9, 0.5, 0.9, 0.8]})
    >>> fig = plot_accuracy_curves(t); len(fig.axes)
    2
    >>> plt.close(fig)
    """
    _require(curves, [hue, "perturbation", "strength", "unit", "accuracy"], "curves")
    kinds = list(dict.fromkeys(curves["perturbation"]))
    ncols = min(ncols, len(kinds))
    nrows = -(-len(kinds) // ncols)
    fig, axes = plt.subplots(nrows, ncols, figsize=(3.6 * ncols, 3.1 * nrows), squeeze=False,
                             sharey=True)
    palette = _palette(curves[hue])
    for ax, kind in zip(axes.flat, kinds, strict=False):
        part = curves[curves["perturbation"] == kind]
        sns.lineplot(data=part, x="strength", y="accuracy", hue=hue, palette=palette,
                     marker="o", errorbar="sd", ax=ax, legend=(ax is axes.flat[0]))
        unit = part["unit"].iloc[0]
        ax.set_xlabel("ε (L∞, pixels of [0, 1])" if unit == "eps" else "severity")
        ax.set_ylabel("accuracy")
        ax.set_ylim(-0.02, 1.02)
        ax.set_title(kind)
    for ax in list(axes.flat)[len(kinds):]:
        ax.set_visible(False)
    fig.tight_layout()
    return fig


def plot_topolip_vs_accuracy(table: pd.DataFrame, *,
                             measures: tuple[str, str] = ("geometric_mean",
                                                          "geometric_mean_scale_free"),
                             y: str = "accuracy_drop", hue: str = "arch",
                             style: str = "perturbation") -> plt.Figure:
    """Scatter of model TopoLip against the accuracy a perturbation costs, raw and scale-free.

    Parameters
    ----------
    table : pandas.DataFrame
        One row per model, seed and perturbation, as from
        :func:`topolip.robustness.topolip_vs_accuracy`.
    measures : tuple of 2 str
        The TopoLip columns of the left (raw) and right (scale-free) panels.
    y : str, default="accuracy_drop"
        The robustness column (clean minus perturbed accuracy, in [-1, 1]).
    hue, style : str
        Columns giving colour and marker.

    Returns
    -------
    matplotlib.figure.Figure
        The dashed line marks TopoLip 1 (left of it, the model contracts the displacement);
        each panel's title gives Spearman's ρ pooled over all points
        (:func:`topolip.stats.rank_correlations`).

    Raises
    ------
    ValueError
        If ``table`` is empty or lacks a column.

    Examples
    --------
    >>> t = pd.DataFrame({"arch": ["a", "b", "a"], "perturbation": ["fgsm"] * 3,
    ...                   "geometric_mean": [1.0, 2, 3], "geometric_mean_scale_free": [1.0, 1.5, 2],
    ...                   "accuracy_drop": [0.1, 0.2, 0.3]})
    >>> fig = plot_topolip_vs_accuracy(t); fig.axes[1].get_title()
    'scale-free: Spearman ρ = 1.00 (n = 3)'
    >>> plt.close(fig)
    """
    from .stats import rank_correlations

    _require(table, [*measures, y, hue, style], "table")
    corr = rank_correlations(table, list(measures), y).set_index("measure")
    fig, axes = plt.subplots(1, 2, figsize=(11, 4.2), squeeze=False)
    palette = _palette(table[hue])
    for ax, col, title in zip(axes[0], measures, ("raw", "scale-free"), strict=True):
        sns.scatterplot(data=table, x=col, y=y, hue=hue, style=style, palette=palette, s=55,
                        ax=ax, legend=(col == measures[-1]))
        ax.axvline(1.0, color="0.4", ls="--", lw=1)
        ax.set_xlabel(f"{title} model TopoLip ({col})")
        ax.set_ylabel("accuracy drop (clean − perturbed)")
        rho, n = corr.loc[col, "rho"], corr.loc[col, "n"]
        ax.set_title(f"{title}: Spearman ρ = {rho:.2f} (n = {n})")
    if axes[0, 1].get_legend() is not None:
        sns.move_legend(axes[0, 1], "upper left", bbox_to_anchor=(1.02, 1), fontsize=8)
    fig.tight_layout()
    return fig


def plot_sweep(table: pd.DataFrame, arch: str, *,
               measures: tuple[str, str] = ("geometric_mean", "geometric_mean_scale_free"),
               ) -> plt.Figure:
    """TopoLip (raw, scale-free) and clean accuracy against each swept parameter of ``arch``.

    Parameters
    ----------
    table : pandas.DataFrame
        Rows of :func:`topolip.sweeps.run_sweep` (columns ``arch``, ``parameter``,
        ``value``, ``value_numeric``, ``seed``, ``test_accuracy`` and ``measures``). Lines are
        means over seeds, bands one standard deviation.
    arch : str
        Which architecture's sweeps to draw: one row of panels per swept parameter.
    measures : tuple of 2 str
        TopoLip columns of the first two panels (log scale, dashed line at 1).

    Returns
    -------
    matplotlib.figure.Figure
        Columns: raw TopoLip, scale-free TopoLip, clean test accuracy; x ticks are the swept
        values (a list-valued parameter such as ResNet ``blocks`` is placed at its sum).

    Raises
    ------
    ValueError
        If ``table`` has no rows for ``arch`` or lacks a column.

    Examples
    --------
    >>> t = pd.DataFrame({"arch": ["vit"] * 2, "parameter": ["num_layers"] * 2,
    ...                   "value": ["1", "2"], "value_numeric": [1.0, 2.0], "seed": [0, 0],
    ...                   "test_accuracy": [0.8, 0.9], "geometric_mean": [1.2, 1.1],
    ...                   "geometric_mean_scale_free": [0.9, 1.0]})
    >>> fig = plot_sweep(t, "vit"); [ax.get_title() for ax in fig.axes]
    ['vit num_layers: raw TopoLip', 'vit num_layers: scale-free TopoLip', 'vit num_layers: clean accuracy']
    >>> plt.close(fig)
    """
    _require(table, ["arch", "parameter", "value", "value_numeric", "seed", "test_accuracy",
                     *measures], "table")
    part = table[table["arch"] == arch]
    if part.empty:
        raise ValueError(f"no sweep rows for arch {arch!r}; the table has "
                         f"{sorted(table['arch'].unique())}")
    params = list(dict.fromkeys(part["parameter"]))
    fig, axes = plt.subplots(len(params), 3, figsize=(12, 3.0 * len(params)), squeeze=False)
    colors = sns.color_palette("colorblind")
    for i, param in enumerate(params):
        rows = part[part["parameter"] == param].sort_values("value_numeric")
        ticks = rows.drop_duplicates("value_numeric")
        for j, (col, title) in enumerate(((measures[0], "raw TopoLip"),
                                          (measures[1], "scale-free TopoLip"),
                                          ("test_accuracy", "clean accuracy"))):
            ax = axes[i, j]
            sns.lineplot(data=rows, x="value_numeric", y=col, marker="o", errorbar="sd",
                         color=colors[j], ax=ax)
            if j < 2:
                _log_axis(ax)
                ax.axhline(1.0, color="0.4", ls="--", lw=1)
                ax.set_ylabel(f"{col}")
            else:
                ax.set_ylabel("test accuracy")
            ax.set_xticks(ticks["value_numeric"].to_list(), ticks["value"].to_list())
            listed = ticks["value"].str.startswith("[").any()
            ax.set_xlabel(param + (" (placed at the total number)" if listed else ""))
            ax.set_title(f"{arch} {param}: {title}")
    fig.tight_layout()
    return fig


def plot_ood_behaviour(table: pd.DataFrame, *, hue: str = "arch") -> plt.Figure:
    """Max-softmax confidence on each data set and AUROC of in- against out-of-distribution.

    Parameters
    ----------
    table : pandas.DataFrame
        Rows of :func:`topolip.robustness.ood_behaviour` with ``hue`` and ``seed`` columns
        added (``dataset``, ``mean_confidence``, ``auroc``). Bars are means over seeds, error
        bars one standard deviation.
    hue : str, default="arch"
        Column with one bar colour per value.

    Returns
    -------
    matplotlib.figure.Figure
        Left: mean max-softmax confidence (in [1/K, 1]) per data set; right: AUROC per OOD
        set (0.5, dashed: confidence does not separate the sets).

    Raises
    ------
    ValueError
        If ``table`` is empty or lacks a column.

    Examples
    --------
    >>> t = pd.DataFrame({"arch": ["a", "a"], "seed": [0, 0],
    ...                   "dataset": ["in_distribution", "digits"],
    ...                   "mean_confidence": [0.95, 0.7], "auroc": [float("nan"), 0.8]})
    >>> fig = plot_ood_behaviour(t); len(fig.axes)
    2
    >>> plt.close(fig)
    """
    _require(table, [hue, "dataset", "mean_confidence", "auroc"], "table")
    fig, axes = plt.subplots(1, 2, figsize=(12, 4), squeeze=False)
    palette = _palette(table[hue])
    sns.barplot(data=table, x="dataset", y="mean_confidence", hue=hue, palette=palette,
                errorbar="sd", ax=axes[0, 0], legend=False)
    axes[0, 0].set_ylim(0, 1.02)
    axes[0, 0].set_ylabel("mean max-softmax confidence")
    axes[0, 0].set_title("confidence on each data set")
    ood = table[table["dataset"] != "in_distribution"]
    sns.barplot(data=ood, x="dataset", y="auroc", hue=hue, palette=palette, errorbar="sd",
                ax=axes[0, 1])
    if axes[0, 1].get_legend() is not None:
        sns.move_legend(axes[0, 1], "upper left", bbox_to_anchor=(1.02, 1), fontsize=8)
    axes[0, 1].axhline(0.5, color="0.4", ls="--", lw=1)
    axes[0, 1].set_ylim(0, 1.02)
    axes[0, 1].set_ylabel("AUROC (max-softmax, in vs OOD)")
    axes[0, 1].set_title("separating in- from out-of-distribution")
    for ax in axes[0]:
        ax.set_xlabel("")
        ax.tick_params(axis="x", labelrotation=15)
    fig.tight_layout()
    return fig


def _require(table: pd.DataFrame, columns: list[str], name: str) -> None:
    if table.empty:
        raise ValueError(f"{name} is empty: nothing to plot")
    missing = [c for c in dict.fromkeys(columns) if c not in table.columns]
    if missing:
        raise ValueError(f"{name} lacks column(s) {missing}; it has {list(table.columns)}")
