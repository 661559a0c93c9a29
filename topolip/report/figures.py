"""Figures of the book, drawn from the tidy tables (so a figure and a check read the same
numbers); :func:`topolip.pipeline.figure_registry.publish_figure` saves them byte-stably.

Every figure is at most 7.5 inches wide (the page width, so it is shown at about its natural
size) with fonts of at least 9 pt, human labels and the
colour-blind-safe palette of :mod:`topolip.roster`: blues for attention-based
models, oranges for convolution-based ones. A figure names the profile it came from only
through its ``profile_note`` argument (a small line under the panels) or the book's caption.

Every log axis shows at least :data:`MIN_LOG_TICK_LABELS` labelled ticks, as plain numbers
(:func:`_label_log_axes`, applied before each figure's layout).
"""

from __future__ import annotations

import functools
import math
import textwrap

import matplotlib.collections as mcollections
import matplotlib.pyplot as plt
import matplotlib.ticker as mticker
import matplotlib.transforms as mtransforms
import numpy as np
import pandas as pd
import seaborn as sns
from matplotlib.lines import Line2D

from topolip import roster
from topolip.report.format import ARCH_COLORS, ARCH_DASHES, ARCH_MARKERS, shown_kind
from topolip.schema import require_columns

__all__ = [
    "FIG_WIDTH", "STYLE", "plot_accuracy_curves", "plot_attention_scaling",
    "plot_bounds_vs_measured", "plot_conv_scaling", "plot_end_to_end", "plot_measure_study",
    "plot_effective_robustness", "plot_literature_attention", "plot_literature_topology",
    "plot_noise_floor", "plot_ood_behaviour", "plot_ood_detectors", "plot_robust_curve",
    "plot_size_sweep",
    "plot_sweep",
    "plot_topolip_by_layer",
    "plot_topolip_vs_accuracy", "plot_training_curves", "plot_verdicts",
]

#: Width of every figure, inches: the book's text column, so figures are not shrunk.
FIG_WIDTH = 7.5

#: Colours of perturbation kinds where a figure needs one per kind (Okabe–Ito via seaborn's
#: ``colorblind``), leaving out the blue, orange and vermillion that mark architecture families
#: (:data:`topolip.report.format.ARCH_COLORS`): green, purple, brown, grey, yellow, pink.
KIND_COLORS = tuple(sns.color_palette("colorblind")[i] for i in (2, 4, 5, 7, 8, 6))

#: Matplotlib settings of every figure (fonts >= 9 pt at display size).
STYLE = {
    "font.size": 10, "axes.titlesize": 10, "axes.labelsize": 10, "xtick.labelsize": 9,
    "ytick.labelsize": 9, "legend.fontsize": 9, "legend.title_fontsize": 9,
    "figure.titlesize": 11, "axes.spines.top": False, "axes.spines.right": False,
    "svg.hashsalt": "topolip",
}


def _name(value) -> str:
    """Human name of a table value or column in a label (:func:`topolip.roster.label`)."""
    return roster.label(value)


def _styled(func):
    """Draw under :data:`STYLE`."""

    @functools.wraps(func)
    def wrapper(*args, **kwargs):
        with plt.rc_context(STYLE):
            return func(*args, **kwargs)

    return wrapper


def _note(fig: plt.Figure, profile_note: str | None) -> None:
    """A small line under the panels naming the profile (e.g. "quick profile: MNIST, CPU")."""
    if profile_note:
        fig.text(0.99, -0.01, profile_note, ha="right", va="top", fontsize=9, color="0.35")


def _palette(values) -> dict:
    """One colour per value: the architecture palette for ``arch`` values, else seaborn's
    colour-blind palette, the same for the same set of values in every figure."""
    values = sorted(pd.unique(values))
    if all(v in ARCH_COLORS for v in values):
        return {v: ARCH_COLORS[v] for v in values}
    return dict(zip(values, sns.color_palette("colorblind"), strict=False))


def _order(values) -> list:
    """Architectures in the book's order (ViT, attention stack, ResNet, convolution stack)."""
    book = [a.name for f in roster.ARCH_FAMILIES for a in roster.ARCHS if a.family == f]
    ranks = {a: i for i, a in enumerate(book)}
    return sorted(pd.unique(values), key=lambda v: (ranks.get(v, len(ranks)), str(v)))


def _arch_lines(values) -> dict:
    """seaborn ``dashes``/``markers`` for architecture values (None for other hues)."""
    values = list(pd.unique(values))
    if all(v in ARCH_COLORS for v in values):
        return {"dashes": {v: ARCH_DASHES[v] for v in values},
                "markers": {v: ARCH_MARKERS[v] for v in values}}
    return {"dashes": False, "markers": True}


def _band(table: pd.DataFrame) -> str | None:
    """Standard-deviation bands only where there are at least two seeds to spread."""
    return "sd" if "seed" in table and table["seed"].nunique() >= 2 else None


#: The short name of a measure that tells two rows of one comparison apart (raw or scale-free).
#: Verdict measures on the radii (higher: attention more robust; their own panel).
_RADIUS_MEASURES = frozenset({"median_radius", "effective_radius", "log_median_radius"})

_MEASURE_SHORT = {"end_to_end": "raw", "end_to_end_scale_free": "scale-free",
                  "geometric_mean": "raw", "geometric_mean_scale_free": "scale-free",
                  "max": "raw", "max_scale_free": "scale-free"}

#: Short names of perturbation kinds inside a contrast of two kinds ("FGSM vs APGD-CE+T").
_KIND_SHORT = {"autoattack": "APGD-CE+T", "fgsm_radius": "FGSM", "pgd_radius": "PGD",
               "autoattack_radius": "APGD-CE+T"}

#: Short names of the radius groups in the verdict figure (their panel names the radius).
_GROUP_SHORT = {"autoattack_radius": "median radius, APGD-CE+T",
                "pgd_radius": "median radius, PGD",
                "fgsm_radius": "median radius, FGSM",
                "effective_radius": "median radius at equal clean accuracy",
                "autoattack_radius_accuracy_matched": "median radius, accuracy-matched epoch"}

#: Measures whose values are fractions in [0, 1] (accuracies, AUROC, accuracy drops); the
#: difference of two lies in [-1, 1] (:func:`plot_verdicts` clips its intervals there).
_FRACTIONS = frozenset({"accuracy", "test_accuracy", "train_accuracy", "val_accuracy",
                        "accuracy_clean", "accuracy_perturbed", "accuracy_drop",
                        *roster.OOD_DETECTORS.values(),
                        "mean_confidence"})

#: Smallest span of an axis of fractions (:func:`_anchor_fractions`), so that a wiggle of a point
#: or two of accuracy does not look like a V.
MIN_FRACTION_SPAN = 0.2


def _group_label(group: str) -> str:
    """A verdict's group for reading: a kind or set by its human name, a contrast of two kinds
    ``"fgsm vs autoattack"`` as ``"FGSM vs APGD-CE+T"``."""
    parts = str(group).split(" vs ")
    if len(parts) == 1:
        return _GROUP_SHORT.get(group, _name(group))
    return " vs ".join(_KIND_SHORT.get(p, _name(p)) for p in parts)


def _clip_fractions(ax: plt.Axes, lo: float = 0.0, hi: float = 1.0) -> None:
    """Clip every line and band (filled polygon) of ``ax`` to ``lo <= y <= hi``: a mean ± sd
    band or whisker of a fraction never shows values the fraction cannot take."""
    for line in ax.get_lines():
        y = np.asarray(line.get_ydata(), dtype=float)
        if y.size:
            line.set_ydata(np.clip(y, lo, hi))
    for coll in ax.collections:
        if isinstance(coll, mcollections.PolyCollection):
            for path in coll.get_paths():
                path.vertices[:, 1] = np.clip(path.vertices[:, 1], lo, hi)


def _anchor_fractions(ax: plt.Axes, lo: float = 0.0, hi: float = 1.0, *,
                      span: float = MIN_FRACTION_SPAN) -> None:
    """Give a y axis of fractions (values in [``lo``, ``hi``]) a view inside
    [``lo`` − 2 %, ``hi`` + 2 %] of at least ``span``, widened around the data's middle, so a
    difference of a point or two of accuracy reads as small. Call it once all data are drawn."""
    pad = 0.02 * (hi - lo)
    a, b = ax.get_ylim()
    a, b = max(a, lo - pad), min(b, hi + pad)
    if b - a < span:
        mid = 0.5 * (a + b)
        a, b = mid - span / 2, mid + span / 2
        if a < lo - pad:
            a, b = lo - pad, lo - pad + span
        if b > hi + pad:
            a, b = hi + pad - span, hi + pad
    ax.set_ylim(a, b)


@_styled
def plot_topolip_by_layer(table: pd.DataFrame, *, hue: str = "arch", row: str = "perturbation",
                          profile_note: str | None = None) -> plt.Figure:
    """Per-layer TopoLip, raw (left) and scale-free (right), one row per perturbation.

    Parameters
    ----------
    table : pandas.DataFrame
        Tidy rows of ``topolip.experiments.model_measurement.measure_model`` (its ``layers``) with
        columns ``arch``, ``seed``, ``perturbation``, ``strength``, ``depth``, ``layer``,
        ``topolip``, ``topolip_scale_free``. Lines are means over seeds, bands one standard
        deviation (drawn only with two seeds or more).
    hue : str, default="arch"
        Column whose values get one line (and colour) each.
    row : str, default="perturbation"
        Column whose values get one row of panels each (``"ood_set"`` for
        ``topolip.experiments.ood.measure_ood``, whose tables have no ``strength``).
    profile_note : str, optional
        The profile the data came from, written under the panels.

    Returns
    -------
    matplotlib.figure.Figure
        Log-scale y axes; the dashed line at 1 separates expanding from contracting layers.

    Examples
    --------
    >>> t = pd.DataFrame({"arch": ["vit", "vit", "resnet", "resnet"], "seed": [0] * 4,
    ...                   "perturbation": ["fgsm"] * 4, "strength": [0.1] * 4,
    ...                   "depth": [1, 2, 1, 2], "layer": ["a", "b", "a", "b"],
    ...                   "topolip": [1.0, 2, 3, 4], "topolip_scale_free": [1.0, 1, 2, 2]})
    >>> fig = plot_topolip_by_layer(t); [ax.get_title() for ax in fig.axes]
    ['FGSM (strength 0.1): raw', 'FGSM (strength 0.1): scale-free']
    >>> sorted(t.get_text() for t in fig.legends[0].get_texts())
    ['ResNet', 'ViT']
    >>> plt.close(fig)
    """
    _require(table, [hue, row, "depth", "topolip", "topolip_scale_free"], "table")
    kinds = list(dict.fromkeys(table[row]))
    fig, axes = plt.subplots(len(kinds), 2, figsize=(FIG_WIDTH, 2.7 * len(kinds) + 0.6),
                             squeeze=False, sharex=True)
    palette = _palette(table[hue])
    order = _order(table[hue])
    for i, kind in enumerate(kinds):
        part = table[(table[row] == kind) & (table["depth"] > 0)]
        strength = (part["strength"].iloc[0] if len(part) and "strength" in part
                    else np.nan)
        where = (f"{_name(kind)} (strength {strength:g})" if np.isfinite(strength)
                 else _name(kind))
        for j, (col, title) in enumerate((("topolip", "raw"),
                                          ("topolip_scale_free", "scale-free"))):
            ax = axes[i, j]
            sns.lineplot(data=part, x="depth", y=col, hue=hue, hue_order=order,
                         palette=palette, style=hue, style_order=order, **_arch_lines(part[hue]),
                         errorbar=_band(part), ax=ax, legend=(i == 0 and j == 0))
            ax.axhline(1.0, color="0.4", ls=":", lw=1)
            _log_axis(ax)
            ax.set_title(f"{where}: {title}")
            ax.set_xlabel("probe depth ℓ" if i == len(kinds) - 1 else "")
            ax.set_ylabel("TopoLip$_\\ell$ = Δ$_\\ell$ / Δ$_{\\ell-1}$" if j == 0 else "")
            ax.xaxis.set_major_locator(mticker.MaxNLocator(integer=True))
    _figure_legend(fig, axes[0, 0])
    _note(fig, profile_note)
    _label_log_axes(fig)
    fig.tight_layout(rect=(0, 0, 1, 1 - 0.45 / fig.get_figheight()))
    return fig


def _figure_legend(fig: plt.Figure, ax: plt.Axes, *, ncol: int | None = None) -> None:
    """Move ``ax``'s legend above the panels, one row, human labels."""
    leg = ax.get_legend()
    if leg is None:
        return
    handles, labels = ax.get_legend_handles_labels()
    leg.remove()
    fig.legend(handles, [_name(t) for t in labels], loc="upper center", frameon=False,
               ncol=ncol or min(len(labels), 4), bbox_to_anchor=(0.5, 1.0))


def _plain_log_label(x: float) -> str:
    """A log-axis tick label as a plain number (0.6, 2, 1000); outside 1e-3..1e4 a power of
    ten, or a mantissa times one (``3×10⁴``), never ``e`` notation."""
    if x > 0 and not 1e-3 <= x < 1e4:
        exponent = math.floor(np.log10(x) + 1e-9)
        mantissa = x / 10.0 ** exponent
        if np.isclose(mantissa, 1.0):
            return f"$10^{{{exponent}}}$"
        return f"${mantissa:.2g}{{\\times}}10^{{{exponent}}}$"
    return f"{x:g}"


class _PlainLogFormatter(mticker.LogFormatter):
    """matplotlib's log-axis label policy (which ticks get a label), with
    :func:`_plain_log_label` as the label (public ``__call__`` only)."""

    def __call__(self, x, pos=None):
        return self.fix_minus(_plain_log_label(x)) if super().__call__(x, pos) else ""


def _log_axis(ax: plt.Axes, axis: str = "y") -> None:
    """Log axis with plain numbers; minor ticks labelled only when the axis spans about one
    decade or less (matplotlib's ``minor_thresholds``), so wide ranges stay readable."""
    getattr(ax, f"set_{axis}scale")("log")
    target = ax.yaxis if axis == "y" else ax.xaxis
    target.set_major_formatter(_PlainLogFormatter(labelOnlyBase=False))
    target.set_minor_formatter(_PlainLogFormatter(labelOnlyBase=False,
                                                  minor_thresholds=(1, 0.4)))
    ax.tick_params(axis=axis, which="minor", labelsize=9)


#: Fewest labelled ticks on a log axis (:func:`_label_log_axes`).
MIN_LOG_TICK_LABELS = 3
#: Below this span (decades) a log axis is labelled at evenly spaced round numbers.
_NARROW_DECADES = 0.5
#: Mantissas tried in turn as labelled ticks of a log axis, fewest first.
_LOG_SUBS = ((1.0,), (1.0, 3.0), (1.0, 2.0, 5.0), (1.0, 2.0, 3.0, 5.0, 7.0), tuple(range(1, 10)))


def _labelled_ticks(axis) -> int:
    """How many distinct ticks of ``axis`` inside its view carry a non-empty label."""
    lo, hi = sorted(axis.get_view_interval())
    labelled = set()
    for locator, formatter in ((axis.get_major_locator(), axis.get_major_formatter()),
                               (axis.get_minor_locator(), axis.get_minor_formatter())):
        locs = [v for v in locator() if lo <= v <= hi]
        formatter.set_locs(locs)
        labelled.update(round(float(v), 12) for i, v in enumerate(locs)
                        if str(formatter(v, i)).strip())
    return len(labelled)


def _label_log_axes(fig: plt.Figure, minimum: int = MIN_LOG_TICK_LABELS) -> None:
    """Give every visible log axis of ``fig`` at least ``minimum`` labelled ticks.

    An axis that spans under half a decade, or that shows fewer than ``minimum`` labels with
    matplotlib's log ticks (one or two powers of ten, say), is ticked at round numbers: evenly
    spaced ones (``MaxNLocator``: 0.85, 0.9, 0.95, 1) under half a decade, else the first of
    1·10^k; 1, 3·10^k; 1, 2, 5·10^k; 1, 2, 3, 5, 7·10^k; or every integer mantissa that puts
    ``minimum`` ticks in view, labelled as plain numbers (:func:`_plain_log_label`); the other
    log ticks stay as unlabelled minor ticks. Call it once all data are drawn (it reads the
    axis limits) and before the layout is computed (labels change width). Only ticks change:
    limits, scale and data are left as they are.
    """
    for ax in fig.axes:
        if not ax.get_visible():
            continue
        for axis in (ax.xaxis, ax.yaxis):
            if axis.get_scale() != "log":
                continue
            lo, hi = sorted(axis.get_view_interval())
            if not (np.isfinite(lo) and np.isfinite(hi) and 0 < lo < hi):
                continue
            narrow = np.log10(hi / lo) < _NARROW_DECADES
            if not narrow and _labelled_ticks(axis) >= minimum:
                continue
            plain = mticker.FuncFormatter(lambda v, _pos: _plain_log_label(v))
            if narrow:
                axis.set_major_locator(mticker.MaxNLocator(nbins=5, steps=[1, 2, 2.5, 5, 10],
                                                           min_n_ticks=minimum))
                axis.set_minor_locator(mticker.NullLocator())
            else:
                for subs in _LOG_SUBS:
                    axis.set_major_locator(mticker.LogLocator(base=10, subs=subs))
                    if sum(lo <= v <= hi for v in axis.get_major_locator()()) >= minimum:
                        break
                axis.set_minor_locator(mticker.LogLocator(base=10, subs="auto"))
            axis.set_major_formatter(plain)
            axis.set_minor_formatter(mticker.NullFormatter())


@_styled
def plot_training_curves(history: pd.DataFrame, *, profile_note: str | None = None
                         ) -> plt.Figure:
    """Training loss and accuracy against the epoch, one line per architecture.

    Parameters
    ----------
    history : pandas.DataFrame
        Rows of ``topolip.nets.train.fit`` histories with ``arch`` and ``seed`` added: ``epoch``,
        ``loss`` (cross-entropy, nats), ``train_accuracy`` (in [0, 1]). Lines are means over
        seeds, bands one standard deviation (two seeds or more).
    profile_note : str, optional
        The profile the data came from, written under the panels.

    Returns
    -------
    matplotlib.figure.Figure
        Left: loss; right: training accuracy on an axis from 0 to 1 (bands clipped to
        [0, 1]); integer epochs; one legend above the panels names every line.

    Raises
    ------
    ValueError
        If ``history`` is empty or lacks a column.

    Examples
    --------
    >>> h = pd.DataFrame({"arch": ["vit"] * 2 + ["resnet"] * 2, "seed": [0] * 4,
    ...                   "epoch": [1, 2] * 2, "loss": [2.0, 1.0, 2.2, 1.5],
    ...                   "train_accuracy": [0.5, 0.8, 0.4, 0.7]})
    >>> fig = plot_training_curves(h); [ax.get_ylabel() for ax in fig.axes]
    ['training loss (cross-entropy)', 'training accuracy']
    >>> plt.close(fig)
    """
    _require(history, ["arch", "epoch", "loss", "train_accuracy"], "history")
    fig, axes = plt.subplots(1, 2, figsize=(FIG_WIDTH, 3.2), squeeze=False)
    order = _order(history["arch"])
    for ax, col, label in zip(axes[0], ("loss", "train_accuracy"),
                              ("training loss (cross-entropy)", "training accuracy"),
                              strict=True):
        sns.lineplot(data=history, x="epoch", y=col, hue="arch", hue_order=order,
                     palette=_palette(history["arch"]), style="arch", style_order=order,
                     **_arch_lines(history["arch"]), errorbar=_band(history), ax=ax,
                     legend=(col == "loss"))
        ax.set(xlabel="epoch", ylabel=label)
        ax.xaxis.set_major_locator(mticker.MaxNLocator(integer=True))
    _clip_fractions(axes[0, 1])
    axes[0, 1].set_ylim(0.0, 1.02)
    _figure_legend(fig, axes[0, 0])
    _note(fig, profile_note)
    _label_log_axes(fig)
    fig.tight_layout(rect=(0, 0, 1, 0.9))
    return fig


@_styled
def plot_end_to_end(summary: pd.DataFrame, *, measure: str = "end_to_end_scale_free",
                    label: str = "scale-free Δ$_L$ / Δ$_0$", group: str = "perturbation",
                    profile_note: str | None = None) -> plt.Figure:
    """The model-level TopoLip of every trained model, one column of points per perturbation.

    Parameters
    ----------
    summary : pandas.DataFrame
        One row per model, seed and perturbation (``topolip_summary.csv``) with ``arch``,
        ``perturbation`` and ``measure``.
    measure : str, default="end_to_end_scale_free"
        The column to plot (log scale; 1 = the model neither expands nor contracts).
    label : str
        Its axis label.
    group : str, default="perturbation"
        The column whose values are the columns of points (``"ood_set"`` for shifts).
    profile_note : str, optional
        The profile the data came from, written under the panel.

    Returns
    -------
    matplotlib.figure.Figure
        One point per seed (small), the mean over seeds (large, outlined).

    Raises
    ------
    ValueError
        If ``summary`` is empty or lacks a column.

    Examples
    --------
    >>> t = pd.DataFrame({"arch": ["vit", "resnet"], "seed": [0, 0],
    ...                   "perturbation": ["fgsm"] * 2, "end_to_end_scale_free": [2.0, 5.0]})
    >>> fig = plot_end_to_end(t); fig.axes[0].get_yscale()
    'log'
    >>> plt.close(fig)
    """
    _require(summary, ["arch", group, measure], "summary")
    order = _order(summary["arch"])
    kinds = list(dict.fromkeys(summary[group]))
    fig, ax = plt.subplots(figsize=(FIG_WIDTH, 3.4))
    width = 0.8 / max(len(order), 1)
    for k, kind in enumerate(kinds):
        for a, arch in enumerate(order):
            vals = summary[(summary[group] == kind) & (summary["arch"] == arch)][measure]
            x = k - 0.4 + width * (a + 0.5)
            ax.scatter(np.full(len(vals), x), vals, s=18, color=ARCH_COLORS.get(arch, "0.3"),
                       alpha=0.6, marker=ARCH_MARKERS.get(arch, "o"), zorder=2)
            ax.scatter([x], [vals.mean()], s=80, color=ARCH_COLORS.get(arch, "0.3"),
                       edgecolor="k", marker=ARCH_MARKERS.get(arch, "o"), zorder=3,
                       label=_name(arch) if k == 0 else None)
    ax.axhline(1.0, color="0.4", ls=":", lw=1)
    _log_axis(ax)
    # a name longer than its column's share of the width (about 80 characters at 9 pt, over
    # the columns) on two lines, so neighbours never touch ("Gaussian noise", "Gaussian blur")
    chars = max(8, 80 // max(len(kinds), 1))
    ax.set_xticks(range(len(kinds)), [textwrap.fill(_name(k), chars) for k in kinds])
    ax.set_ylabel(label)
    fig.legend(loc="upper center", frameon=False, ncol=min(len(order), 4),
               bbox_to_anchor=(0.5, 1.0))
    _note(fig, profile_note)
    _label_log_axes(fig)
    fig.tight_layout(rect=(0, 0, 1, 0.88))
    return fig


@_styled
def plot_accuracy_curves(curves: pd.DataFrame, *, hue: str = "arch", ncols: int = 3,
                         profile_note: str | None = None) -> plt.Figure:
    """Accuracy against perturbation strength, one panel per perturbation kind.

    Parameters
    ----------
    curves : pandas.DataFrame
        Rows of :func:`topolip.experiments.robustness.robustness_curves` or ``robustness.csv`` (the
        attack
        ladder of :func:`topolip.experiments.robustness.attack_ladder`, then the corruptions) with
        ``hue``
        and ``seed`` columns: ``perturbation``, ``strength``, ``unit``, ``accuracy``. One panel
        per perturbation in the table's order (the ladder's weak to strong). Lines are means
        over seeds, bands one standard deviation (two seeds or more).
    hue : str, default="arch"
        Column with one line (and colour) per value.
    ncols : int, default=3
        Panels per row.
    profile_note : str, optional
        The profile the data came from, written under the panels.

    Returns
    -------
    matplotlib.figure.Figure
        x: ε in pixel units of [0, 1] images (attacks) or severity 0..5 (corruptions);
        y: accuracy, the axis from 0 to 1; bands (and whiskers) clipped to [0, 1]. A kind
        measured at one nonzero strength only (the Square attack) is drawn as points with
        one-standard-deviation whiskers, no line (two points do not make a curve); panels are
        titled by the kinds' human names (``autoattack``: "APGD-CE + APGD-T").

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
    fig, axes = plt.subplots(nrows, ncols, figsize=(FIG_WIDTH, 2.5 * nrows + 0.6),
                             squeeze=False, sharey=True)
    palette = _palette(curves[hue])
    order = _order(curves[hue])
    for ax, kind in zip(axes.flat, kinds, strict=False):
        part = curves[curves["perturbation"] == kind]
        if part.loc[part["strength"] > 0, "strength"].nunique() <= 1:
            _accuracy_points(ax, part, hue, order, palette, legend=(ax is axes.flat[0]))
        else:
            sns.lineplot(data=part, x="strength", y="accuracy", hue=hue, hue_order=order,
                         palette=palette, style=hue, style_order=order,
                         **_arch_lines(part[hue]), errorbar=_band(part), ax=ax,
                         legend=(ax is axes.flat[0]))
        _clip_fractions(ax)
        unit = part["unit"].iloc[0]
        ax.set_xlabel("ε (L∞, pixels of [0, 1])" if unit == "eps" else "severity")
        ax.set_ylabel("accuracy")
        ax.set_ylim(-0.02, 1.02)
        ax.set_title(_name(kind))
    for ax in list(axes.flat)[len(kinds):]:
        ax.set_visible(False)
    _figure_legend(fig, axes.flat[0])
    _note(fig, profile_note)
    _label_log_axes(fig)
    fig.tight_layout(rect=(0, 0, 1, 1 - 0.45 / fig.get_figheight()))
    return fig


@_styled
def plot_robust_curve(curve: pd.DataFrame, *, profile_note: str | None = None) -> plt.Figure:
    """Robust accuracy over the ε grid from the minimal radii: one panel per bisected attack,
    one line per model (architecture × seed).

    Parameters
    ----------
    curve : pandas.DataFrame
        ``robust_curve.csv`` (:func:`topolip.experiments.radii.robust_curve`): ``arch``,
        ``seed``, ``method``, ``eps``, ``robust_accuracy``.
    profile_note : str, optional
        The profile the data came from, written under the panels.

    Returns
    -------
    matplotlib.figure.Figure
        x: ε in pixel units of [0, 1] images, log axis (the grid's positive budgets); y: the
        share of the model's images whose minimal radius exceeds ε, from 0 to 1; a dotted line
        at one half, where each curve crosses its model's median radius. One panel per attack of
        the ladder present, weak to strong (FGSM, PGD, APGD-CE + APGD-T; :data:`topolip.roster.
        LADDER`), then any other method.

    Raises
    ------
    ValueError
        If ``curve`` is empty or lacks a column.

    Examples
    --------
    >>> t = pd.DataFrame({"arch": "vit", "seed": 0, "method": "fgsm",
    ...                   "eps": [0.0, 0.01, 0.1], "robust_accuracy": [0.9, 0.5, 0.1]})
    >>> fig = plot_robust_curve(t); len(fig.axes)
    1
    >>> plt.close(fig)
    """
    _require(curve, ["arch", "seed", "method", "eps", "robust_accuracy"], "robust curve")
    c = curve[curve["eps"].astype(float) > 0]
    if c.empty:
        raise ValueError("robust curve has no positive budget to draw")
    methods = [m for m in roster.LADDER if m in set(c["method"])] + [
        m for m in dict.fromkeys(c["method"]) if m not in roster.LADDER]
    fig, axes = plt.subplots(1, len(methods), figsize=(FIG_WIDTH, 3.2), squeeze=False,
                             sharey=True)
    palette = _palette(c["arch"])
    order = _order(c["arch"])
    for ax, method in zip(axes.flat, methods, strict=True):
        part = c[c["method"] == method]
        for arch in order:
            for k, (_, g) in enumerate(part[part["arch"] == arch].groupby("seed")):
                g = g.sort_values("eps")
                ax.plot(g["eps"], g["robust_accuracy"], color=palette[arch], lw=1.1,
                        alpha=0.8, label=arch if k == 0 else None)
        ax.axhline(0.5, color="0.4", ls=":", lw=0.8)
        ax.set_xscale("log")
        ax.set_xlabel("ε (L∞, pixels of [0, 1])")
        ax.set_ylabel("robust accuracy")
        ax.set_ylim(-0.02, 1.02)
        ax.set_title(_name(method))
    axes.flat[0].legend()
    _figure_legend(fig, axes.flat[0])
    _note(fig, profile_note)
    _label_log_axes(fig)
    fig.tight_layout(rect=(0, 0, 1, 1 - 0.45 / fig.get_figheight()))
    return fig


@_styled
def plot_effective_robustness(radius_summary: pd.DataFrame, effective: pd.DataFrame, *,
                              method: str = "autoattack", profile_note: str | None = None
                              ) -> plt.Figure:
    """Clean accuracy per architecture, and robustness against clean accuracy with the
    effective-robustness fit (Taori et al. 2020) on the minimal radii.

    Parameters
    ----------
    radius_summary : pandas.DataFrame
        ``radius_summary.csv``: ``arch``, ``seed``, ``method``, ``clean_accuracy`` (share of
        the radius images classified correctly, in [0, 1]), ``median_radius`` (L∞, pixels of
        [0, 1]).
    effective : pandas.DataFrame
        :func:`topolip.evidence.claims.effective_radius` of the same table: ``arch``,
        ``slope``, ``intercept`` (the fit's line, the same on every row). May be empty (no fit
        drawn).
    method : str, default="autoattack"
        The bisected attack whose radii are drawn.
    profile_note : str, optional
        The profile the data came from, written under the panels.

    Returns
    -------
    matplotlib.figure.Figure
        Left: clean accuracy, one point per model (seed) and a bar at each architecture's
        mean; right: median radius (log axis) against clean accuracy on the logit scale (ticks
        labelled as accuracies), one point per model, and the least-squares line of the fit:
        a point above the line is more robust than its accuracy predicts.

    Raises
    ------
    ValueError
        If ``radius_summary`` lacks a column or has no row for ``method``. Models with a
        median radius of 0 (fewer than half their images correct) or infinite (more than half
        unbroken) are not drawn on the right; with none left, the panel says so.

    Examples
    --------
    >>> rs = pd.DataFrame({"arch": ["vit", "resnet"] * 2, "seed": [0, 0, 1, 1],
    ...                    "method": "autoattack", "clean_accuracy": [0.9, 0.95, 0.92, 0.97],
    ...                    "median_radius": [0.01, 0.05, 0.012, 0.06]})
    >>> fig = plot_effective_robustness(rs, pd.DataFrame()); len(fig.axes)
    2
    >>> plt.close(fig)
    """
    _require(radius_summary, ["arch", "seed", "method", "clean_accuracy", "median_radius"],
             "radius summary")
    t = radius_summary[radius_summary["method"] == method].copy()
    if t.empty:
        raise ValueError(f"radius summary has no row for method {method!r}")
    t["clean_accuracy"] = t["clean_accuracy"].astype(float)
    t["median_radius"] = t["median_radius"].astype(float)
    palette, order = _palette(t["arch"]), _order(t["arch"])
    markers = _arch_lines(t["arch"])["markers"]
    fig, (left, right) = plt.subplots(1, 2, figsize=(FIG_WIDTH, 3.4),
                                      gridspec_kw={"width_ratios": [1, 1.6]})
    for i, arch in enumerate(order):
        g = t[t["arch"] == arch]
        jitter = np.linspace(-0.12, 0.12, len(g)) if len(g) > 1 else np.zeros(1)
        mk = markers[arch] if isinstance(markers, dict) else "o"
        left.scatter(i + jitter, g["clean_accuracy"], color=palette[arch], marker=mk, s=22,
                     zorder=3, label=arch)
        left.hlines(g["clean_accuracy"].mean(), i - 0.3, i + 0.3, color=palette[arch], lw=2)
        ok = (g["median_radius"] > 0) & np.isfinite(g["median_radius"]) & \
            (g["clean_accuracy"] > 0) & (g["clean_accuracy"] < 1)
        acc = g["clean_accuracy"][ok]
        right.scatter(np.log(acc / (1 - acc)), g["median_radius"][ok], color=palette[arch],
                      marker=mk, s=22, zorder=3)
    left.set_xticks(range(len(order)),
                    [textwrap.fill(_name(a), 10, break_long_words=False) for a in order],
                    fontsize="small")
    left.legend()
    left.set_ylabel("clean accuracy (radius images)")
    left.set_xlim(-0.6, len(order) - 0.4)
    acc = t["clean_accuracy"][(t["clean_accuracy"] > 0) & (t["clean_accuracy"] < 1)]
    if len(effective) and len(acc):
        _require(effective, ["slope", "intercept"], "effective radius")
        slope, intercept = float(effective["slope"].iloc[0]), float(effective["intercept"].iloc[0])
        x = np.log(acc / (1 - acc))
        xs = np.linspace(x.min() - 0.2, x.max() + 0.2, 50)
        right.plot(xs, np.exp(intercept + slope * xs), color="0.3", lw=1, ls="--",
                   label=f"fit: log radius = {intercept:.2f} + {slope:.2f} logit(acc)")
        right.legend(loc="lower right", fontsize="small")
    if right.collections and any(len(c.get_offsets()) for c in right.collections):
        _log_axis(right, "y")
    else:  # no model keeps half its images (radius 0) or none breaks (infinite): no points
        right.text(0.5, 0.5, "no finite positive median radius to draw", ha="center",
                   va="center", transform=right.transAxes, color="0.4")
    right.xaxis.set_major_formatter(mticker.FuncFormatter(
        lambda v, _: f"{1 / (1 + math.exp(-v)):.3g}"))
    right.set_xlabel("clean accuracy (logit axis)")
    right.set_ylabel(f"median radius, {_name(method)}")
    _figure_legend(fig, left)
    _note(fig, profile_note)
    _label_log_axes(fig)
    fig.tight_layout(rect=(0, 0, 1, 1 - 0.45 / fig.get_figheight()))
    return fig


def _accuracy_points(ax: plt.Axes, part: pd.DataFrame, hue: str, order: list, palette: dict,
                     *, legend: bool) -> None:
    """Mean accuracy per ``hue`` value and strength as markers with one-standard-deviation
    whiskers clipped to [0, 1] (two seeds or more), no line; values of ``hue`` are dodged
    sideways by 2 % of the largest strength so their whiskers do not hide each other."""
    stats = (part.groupby([hue, "strength"], sort=False)["accuracy"]
             .agg(["mean", "std", "count"]).reset_index())
    spread = float(part["strength"].max()) or 1.0
    markers = _arch_lines(part[hue])["markers"]
    for i, h in enumerate(order):
        d = stats[stats[hue] == h].sort_values("strength")
        if d.empty:
            continue
        mean = d["mean"].to_numpy(float)
        sd = np.where(d["count"] >= 2, d["std"].fillna(0.0), 0.0)
        err = np.vstack([mean - np.clip(mean - sd, 0, 1), np.clip(mean + sd, 0, 1) - mean])
        x = d["strength"].to_numpy(float) + 0.02 * spread * (i - (len(order) - 1) / 2)
        ax.errorbar(x, mean, yerr=err, ls="none", capsize=2, ms=5, color=palette[h],
                    marker=markers[h] if isinstance(markers, dict) else "o", label=h)
    ax.set_xticks(sorted(part["strength"].unique()))
    ax.xaxis.set_major_formatter(mticker.FormatStrFormatter("%g"))
    if legend:
        ax.legend()


@_styled
def plot_topolip_vs_accuracy(table: pd.DataFrame, *, measure: str = "end_to_end_scale_free",
                             y: str = "accuracy_drop", hue: str = "arch", ncols: int = 4,
                             flag: str | None = "end_to_end_flag",
                             profile_note: str | None = None) -> plt.Figure:
    """Model TopoLip against the accuracy a perturbation costs, one panel per perturbation kind.

    Kinds are kept apart (their models are the same, their scales and difficulties are not), so
    each panel's title gives the within-kind Kendall τ (:func:`topolip.evidence.stats.kendall_tau`);
    the tests with intervals are in :func:`topolip.evidence.claims.smoothness_table`.

    Parameters
    ----------
    table : pandas.DataFrame
        One row per model, seed and perturbation (``topolip_summary.csv``), with ``measure``,
        ``y``, ``hue`` and ``perturbation``.
    measure : str, default="end_to_end_scale_free"
        The TopoLip column (log axis; dotted line at 1).
    y : str, default="accuracy_drop"
        The robustness column (clean minus perturbed accuracy, in [-1, 1]).
    hue : str, default="arch"
        The column that colours the points.
    ncols : int, default=4
        Panels per row.
    flag : str or None, default="end_to_end_flag"
        The noise-floor flag column (``topolip.evidence.claims.FLAG_COLUMN``): a model whose
        value is a non-empty text has its input displacement within the noise floor and is
        left out of the ranking (as in :func:`topolip.evidence.measures.measure_study`). Ignored
        when None or when the table lacks it.
    profile_note : str, optional
        The profile the data came from, written under the panels.

    Returns
    -------
    matplotlib.figure.Figure
        One panel per kind: each model's point in its architecture's colour; a flagged model
        hollow and grey, counted in the legend ("left out of the test (noise floor): k of n")
        and left out of the panel's τ and its n. y: the robustness column, an axis spanning
        at least :data:`MIN_FRACTION_SPAN` within [-1, 1] for a fraction.

    Raises
    ------
    ValueError
        If ``table`` is empty or lacks a column.

    Examples
    --------
    >>> t = pd.DataFrame({"arch": ["vit", "resnet", "vit"], "perturbation": ["fgsm"] * 3,
    ...                   "end_to_end_scale_free": [1.0, 2, 3], "accuracy_drop": [0.1, 0.2, 0.3]})
    >>> fig = plot_topolip_vs_accuracy(t); fig.axes[0].get_title()
    'FGSM\\nτ = 1.00 (n = 3)'
    >>> plt.close(fig)
    """
    from topolip.evidence.stats import kendall_tau

    _require(table, [measure, y, hue, "perturbation"], "table")
    kinds = list(dict.fromkeys(table["perturbation"]))
    ncols = min(ncols, len(kinds))
    nrows = -(-len(kinds) // ncols)
    height = 2.3 * nrows + 0.7
    fig, axes = plt.subplots(nrows, ncols, figsize=(FIG_WIDTH, height), squeeze=False,
                             sharey=True)
    palette = _palette(table[hue])
    order = _order(table[hue])
    table = table.reset_index(drop=True)  # tables concatenated over seeds repeat labels
    if flag is not None and flag in table:
        flagged = table[flag].fillna("").astype(str).str.strip().ne("")
    else:
        flagged = pd.Series(False, index=table.index)
    for ax, kind in zip(axes.flat, kinds, strict=False):
        part = table[table["perturbation"] == kind]
        out = flagged[part.index]
        for h in order:
            d = part[(part[hue] == h) & ~out]
            ax.scatter(d[measure], d[y], s=22, color=palette[h], marker=ARCH_MARKERS.get(h, "o"),
                       label=_name(h) if kind == kinds[0] else None, alpha=0.85)
            d = part[(part[hue] == h) & out]
            if len(d):
                ax.scatter(d[measure], d[y], s=22, facecolor="none", edgecolor="0.6", lw=0.9,
                           marker=ARCH_MARKERS.get(h, "o"), zorder=1)
        tested = part[~out]
        tau = kendall_tau(tested[measure], tested[y])
        n = int(tested[[measure, y]].notna().all(axis=1).sum())
        ax.set_title(f"{_name(kind)}\nτ = {tau:.2f} (n = {n})" if np.isfinite(tau)
                     else f"{_name(kind)}\nτ undefined (n = {n})")
        if (part[measure] > 0).all():
            ax.set_xscale("log")
            ax.xaxis.set_major_formatter(mticker.FuncFormatter(lambda v, _: f"{v:g}"))
            ax.xaxis.set_minor_formatter(mticker.NullFormatter())
        ax.axvline(1.0, color="0.4", ls=":", lw=1)
        ax.set_xlabel("scale-free Δ$_L$/Δ$_0$" if measure == "end_to_end_scale_free"
                      else roster.measure_label(measure))
    for ax in axes.flat[len(kinds):]:
        ax.set_visible(False)
    for ax in axes[:, 0]:
        ax.set_ylabel(roster.measure_label(y))
    if y in _FRACTIONS:
        _anchor_fractions(axes.flat[0], -1.0, 1.0)
    if flagged.any():
        axes.flat[0].scatter([], [], s=22, facecolor="none", edgecolor="0.6", lw=0.9,
                             label=f"left out of the test (noise floor): "
                                   f"{int(flagged.sum())} of {len(table)}")
    fig.legend(loc="upper center", frameon=False, ncol=4 + int(flagged.any()),
               bbox_to_anchor=(0.5, 1.0))
    _note(fig, profile_note)
    _label_log_axes(fig)
    fig.tight_layout(rect=(0, 0, 1, 1 - 0.35 / height))
    return fig


@_styled
def plot_sweep(table: pd.DataFrame, arch: str, *,
               measures: tuple[str, str] = ("geometric_mean", "geometric_mean_scale_free"),
               perturbation: str | None = None,
               profile_note: str | None = None) -> plt.Figure:
    """TopoLip (raw, scale-free) and clean accuracy against each swept parameter of ``arch``.

    Parameters
    ----------
    table : pandas.DataFrame
        Rows of :func:`topolip.experiments.sweeps.run_sweeps` (columns ``arch``, ``parameter``,
        ``value``, ``value_numeric``, ``seed``, ``test_accuracy`` and ``measures``). Lines are
        means over seeds, bands one standard deviation (two seeds or more).
    arch : str
        Which architecture's sweeps to draw: one row of panels per swept parameter.
    measures : tuple of 2 str
        TopoLip columns of the first two panels (log scale, dashed line at 1).
    perturbation : str, optional
        With rows for several perturbation kinds, draw this one (default: the kind with the
        fewest rows within the noise floor, :func:`topolip.report.format.shown_kind`).
    profile_note : str, optional
        The profile the data came from, written under the panels.

    Returns
    -------
    matplotlib.figure.Figure
        Columns: raw TopoLip, scale-free TopoLip, clean test accuracy (its axis spans at
        least :data:`MIN_FRACTION_SPAN` inside [0, 1], bands clipped to [0, 1]) (the titles;
        the swept parameter is each row's x label, the architecture is the caption's); x ticks
        are the swept values (a list-valued parameter such as ResNet ``blocks`` is placed at
        its sum).

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
    ['raw TopoLip', 'scale-free TopoLip', 'clean accuracy']
    >>> fig.axes[0].get_xlabel()
    'num layers'
    >>> plt.close(fig)
    """
    _require(table, ["arch", "parameter", "value", "value_numeric", "seed", "test_accuracy",
                     *measures], "table")
    if "perturbation" in table and table["perturbation"].nunique() > 1:
        kind = perturbation if perturbation is not None else shown_kind(table)
        table = table[table["perturbation"] == kind]
    part = table[table["arch"] == arch]
    if part.empty:
        raise ValueError(f"no sweep rows for arch {arch!r}; the table has "
                         f"{sorted(table['arch'].unique())}")
    params = list(dict.fromkeys(part["parameter"]))
    fig, axes = plt.subplots(len(params), 3, figsize=(FIG_WIDTH, 2.6 * len(params)),
                             squeeze=False)
    color = ARCH_COLORS.get(arch, "0.3")
    for i, param in enumerate(params):
        rows = part[part["parameter"] == param].sort_values("value_numeric")
        ticks = rows.drop_duplicates("value_numeric")
        for j, (col, title) in enumerate(((measures[0], "raw TopoLip"),
                                          (measures[1], "scale-free TopoLip"),
                                          ("test_accuracy", "clean accuracy"))):
            ax = axes[i, j]
            sns.lineplot(data=rows, x="value_numeric", y=col, marker=ARCH_MARKERS.get(arch, "o"),
                         errorbar=_band(rows), color=color, ax=ax)
            if j < 2:
                _log_axis(ax)
                ax.axhline(1.0, color="0.4", ls=":", lw=1)
                ax.set_ylabel(roster.measure_label(col))
            else:
                ax.set_ylabel("test accuracy")
                _clip_fractions(ax)
                _anchor_fractions(ax)
            ax.set_xticks(ticks["value_numeric"].to_list(), ticks["value"].to_list())
            listed = ticks["value"].str.startswith("[").any()
            ax.set_xlabel(_name(param) + (" per stage\n(at their sum)" if listed else ""))
            ax.set_title(title)
    _note(fig, profile_note)
    _label_log_axes(fig)
    fig.tight_layout()
    return fig


@_styled
def plot_size_sweep(table: pd.DataFrame, *, measure: str = "end_to_end_scale_free",
                    response: str = "accuracy_drop", perturbation: str | None = None,
                    profile_note: str | None = None) -> plt.Figure:
    """Each family's sweep models against their size: TopoLip and robustness against weights.

    Parameters
    ----------
    table : pandas.DataFrame
        Rows of :func:`topolip.experiments.sweeps.run_sweeps` (columns ``arch``, ``parameters``,
        ``seed``,
        ``measure``, ``response``; ``perturbation`` when several kinds were measured). Points
        are sweep models (means over seeds), one colour and marker per architecture.
    measure : str, default="end_to_end_scale_free"
        The TopoLip column of the left panel (log axis, dotted line at 1).
    response : str, default="accuracy_drop"
        The robustness column of the right panel.
    perturbation : str, optional
        With rows for several kinds, draw this one (default: the kind with the fewest rows
        within the noise floor, :func:`topolip.report.format.shown_kind`).
    profile_note : str, optional
        The profile the data came from, written under the panels.

    Returns
    -------
    matplotlib.figure.Figure
        Two panels against the number of weights (log axis): ``measure`` and ``response``.

    Raises
    ------
    ValueError
        If ``table`` is empty or lacks a column.

    Examples
    --------
    >>> t = pd.DataFrame({"arch": ["vit", "vit", "resnet"], "seed": 0,
    ...                   "parameters": [1000, 4000, 3000],
    ...                   "end_to_end_scale_free": [0.5, 0.8, 2.0],
    ...                   "accuracy_drop": [0.3, 0.2, 0.4]})
    >>> fig = plot_size_sweep(t); [ax.get_xlabel() for ax in fig.axes]
    ['weights', 'weights']
    >>> plt.close(fig)
    """
    _require(table, ["arch", "parameters", "seed", measure, response], "table")
    if table.empty:
        raise ValueError("table has no rows")
    if "perturbation" in table and table["perturbation"].nunique() > 1:
        kind = perturbation if perturbation is not None else shown_kind(table)
        table = table[table["perturbation"] == kind]
    points = (table.groupby(["arch", "parameters"], sort=False)[[measure, response]].mean()
              .reset_index())
    fig, axes = plt.subplots(1, 2, figsize=(FIG_WIDTH, 3.4))
    for ax, col in zip(axes, (measure, response), strict=True):
        for arch, rows in points.groupby("arch", sort=False):
            rows = rows.sort_values("parameters")
            ax.plot(rows["parameters"], rows[col], marker=ARCH_MARKERS.get(arch, "o"),
                    ls="none", color=ARCH_COLORS.get(arch, "0.3"), label=_name(arch))
        ax.set_xscale("log")
        ax.set_xlabel("weights")
        ax.set_ylabel(roster.measure_label(col))
        if col == measure:
            _log_axis(ax)
            ax.axhline(1.0, color="0.4", ls=":", lw=1)
        elif col in _FRACTIONS:
            _anchor_fractions(ax, -1.0, 1.0)
    axes[1].legend(frameon=False, fontsize="small")
    _note(fig, profile_note)
    _label_log_axes(fig)
    fig.tight_layout()
    return fig


@_styled
def plot_ood_behaviour(table: pd.DataFrame, *, hue: str = "arch",
                       profile_note: str | None = None) -> plt.Figure:
    """Max-softmax confidence on each data set and AUROC of in- against out-of-distribution.

    Parameters
    ----------
    table : pandas.DataFrame
        Rows of :func:`topolip.experiments.ood.ood_behaviour` with ``hue`` and ``seed`` columns
        added (``dataset``, ``mean_confidence``, ``auroc``). Bars are means over seeds, error
        bars one standard deviation (two seeds or more).
    hue : str, default="arch"
        Column with one bar colour per value.
    profile_note : str, optional
        The profile the data came from, written under the panels.

    Returns
    -------
    matplotlib.figure.Figure
        Top: mean max-softmax confidence (in [1/K, 1]) per data set; bottom: AUROC per OOD
        set (0.5, dashed: confidence does not separate the sets); error bars clipped to [0, 1].

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
    fig, axes = plt.subplots(2, 1, figsize=(FIG_WIDTH, 5.6), squeeze=False)
    palette = _palette(table[hue])
    order = _order(table[hue])
    table = table.assign(dataset=table["dataset"].map(_name))
    sns.barplot(data=table, x="dataset", y="mean_confidence", hue=hue, hue_order=order,
                palette=palette, errorbar=_band(table), ax=axes[0, 0])
    axes[0, 0].set_ylim(0, 1.02)
    axes[0, 0].set_ylabel("mean max-softmax\nconfidence")
    axes[0, 0].set_title("confidence on each data set")
    ood = table[table["dataset"] != _name("in_distribution")]
    sns.barplot(data=ood, x="dataset", y="auroc", hue=hue, hue_order=order, palette=palette,
                errorbar=_band(ood), ax=axes[1, 0], legend=False)
    axes[1, 0].axhline(0.5, color="0.4", ls=":", lw=1)
    for ax in axes[:, 0]:
        _clip_fractions(ax)
    axes[1, 0].set_ylim(0, 1.02)
    axes[1, 0].set_ylabel("AUROC\n(in vs out of distribution)")
    axes[1, 0].set_title("separating in- from out-of-distribution")
    for ax in axes[:, 0]:
        ax.set_xlabel("")
    _figure_legend(fig, axes[0, 0])
    _note(fig, profile_note)
    _label_log_axes(fig)
    fig.tight_layout(rect=(0, 0, 1, 0.93))
    return fig


@_styled
def plot_ood_detectors(table: pd.DataFrame, *, profile_note: str | None = None) -> plt.Figure:
    """AUROC of each OOD detection score, per OOD set and architecture, one point per seed.

    Parameters
    ----------
    table : pandas.DataFrame
        Rows of :func:`topolip.experiments.ood.ood_behaviour` with ``arch`` and ``seed``
        columns added (``dataset`` and the AUROC columns of
        :data:`topolip.roster.OOD_DETECTORS`; a column the table lacks is left out, the
        max-softmax ``auroc`` is required). The ``in_distribution`` rows are skipped.
    profile_note : str, optional
        The profile the data came from, written under the panels.

    Returns
    -------
    matplotlib.figure.Figure
        One panel per OOD set (top to bottom in the table's order): for each detection score
        (max-softmax, max-logit, energy), the AUROC of every seed (small points) and the mean
        over seeds (large points), one colour and marker per architecture; dotted line at 0.5
        (the score does not separate the sets; below it the OOD set scores higher than the
        test images).

    Raises
    ------
    ValueError
        If ``table`` lacks a column or holds no OOD row.

    Examples
    --------
    >>> t = pd.DataFrame({"arch": ["vit", "vit"], "seed": [0, 1], "dataset": ["digits"] * 2,
    ...                   "auroc": [0.8, 0.7], "auroc_energy": [0.6, 0.9]})
    >>> fig = plot_ood_detectors(t); len(fig.axes), fig.axes[0].get_xticklabels()[1].get_text()
    (1, 'energy')
    >>> plt.close(fig)
    """
    _require(table, ["arch", "seed", "dataset", "auroc"], "table")
    ood = table[table["dataset"] != "in_distribution"]
    if not len(ood):
        raise ValueError("table holds no out-of-distribution row (only 'in_distribution')")
    detectors = [(score, column) for score, column in roster.OOD_DETECTORS.items()
                 if column in ood.columns]
    sets = list(dict.fromkeys(ood["dataset"]))
    order = _order(ood["arch"])
    fig, axes = plt.subplots(len(sets), 1, figsize=(FIG_WIDTH, 1.0 + 2.0 * len(sets)),
                             squeeze=False, sharex=True)
    width = 0.8 / max(len(order), 1)
    for ax, name in zip(axes[:, 0], sets, strict=True):
        part = ood[ood["dataset"] == name]
        for k, (_, column) in enumerate(detectors):
            for a, arch in enumerate(order):
                vals = part.loc[part["arch"] == arch, column].astype(float).dropna()
                x = k - 0.4 + width * (a + 0.5)
                ax.scatter(np.full(len(vals), x), vals, s=18, color=ARCH_COLORS.get(arch, "0.3"),
                           alpha=0.6, marker=ARCH_MARKERS.get(arch, "o"), zorder=2)
                if len(vals):
                    ax.scatter([x], [vals.mean()], s=80, color=ARCH_COLORS.get(arch, "0.3"),
                               edgecolor="k", marker=ARCH_MARKERS.get(arch, "o"), zorder=3,
                               label=_name(arch) if k == 0 and ax is axes[0, 0] else None)
        ax.axhline(0.5, color="0.4", ls=":", lw=1)
        ax.set_ylim(-0.02, 1.02)
        ax.set_ylabel("AUROC")
        ax.set_title(_name(name), loc="left")
    axes[-1, 0].set_xticks(range(len(detectors)), [score.replace("_", "-")
                                                   for score, _ in detectors])
    axes[-1, 0].set_xlabel("detection score")
    fig.legend(loc="upper center", frameon=False, ncol=min(len(order), 4),
               bbox_to_anchor=(0.5, 1.0))
    _note(fig, profile_note)
    fig.tight_layout(rect=(0, 0, 1, 1 - 0.45 / (1.0 + 2.0 * len(sets))))
    return fig


@_styled
def plot_attention_scaling(attention: pd.DataFrame, *, width: int | None = None,
                           profile_note: str | None = None) -> plt.Figure:
    """The local attention bound and its estimate against sequence length, radius and width.

    Parameters
    ----------
    attention : pandas.DataFrame
        Columns ``n`` (tokens), ``R`` (token norm), ``width`` (D), ``bound``, ``estimate``
        (NaN where not computed), as :func:`topolip.experiments.theory.attention_scaling` builds it.
    width : int, optional
        The width D of the rows used in the first two panels; by default the width with the
        most rows (that of the length and radius sweeps).
    profile_note : str, optional
        Written under the panels.

    Returns
    -------
    matplotlib.figure.Figure
        Three panels (log-log): against n (one colour per R, with a √n guide), against R
        (n = 4, 16, 64), against D (R = 1). Solid: bound; dashed: estimate.

    Raises
    ------
    ValueError
        If ``attention`` lacks a column or has no row, or no row has the given ``width``.

    Examples
    --------
    >>> t = pd.DataFrame({"n": [1, 4, 1, 4], "R": [1.0, 1.0, 2.0, 2.0], "width": [8] * 4,
    ...                   "bound": [1.0, 2, 3, 6], "estimate": [0.5, 1, 1, 2]})
    >>> fig = plot_attention_scaling(t, width=8); len(fig.axes)
    3
    >>> plt.close(fig)
    """
    _require(attention, ["n", "R", "width", "bound", "estimate"], "attention")
    if attention.empty:
        raise ValueError("attention has no row")
    if width is None:  # the most frequent width; the smallest on a tie
        counts = attention["width"].value_counts()
        width = int(min(counts.index[counts == counts.max()]))
    elif not (attention["width"] == width).any():
        raise ValueError(f"no row of attention has width={width}; widths: "
                         f"{sorted(attention['width'].unique().tolist())}")
    fig, axes = plt.subplots(3, 1, figsize=(FIG_WIDTH, 8.4), squeeze=False)
    ax = axes[0, 0]
    by_n = attention[attention["width"] == width]
    radii = sorted(by_n["R"].unique())
    colors = sns.color_palette("crest", len(radii))
    for color, radius in zip(colors, radii, strict=True):
        part = by_n[by_n["R"] == radius].sort_values("n")
        ax.plot(part["n"], part["bound"], "o-", color=color, label=f"R = {radius:g}")
        ax.plot(part["n"], part["estimate"], "x--", color=color, alpha=0.8)
    ref = by_n[by_n["R"] == radii[-1]].sort_values("n")
    if len(ref):
        ax.plot(ref["n"], ref["bound"].iloc[0] * np.sqrt(ref["n"] / ref["n"].iloc[0]), ":",
                color="0.3", label="∝ √n")
    ax.set(xlabel="sequence length n", ylabel="Lipschitz constant",
           title=f"(a) against the sequence length (D = {width}; dashed: estimate)")
    ax.legend(loc="upper left", bbox_to_anchor=(1.01, 1), frameon=False)
    ax = axes[1, 0]
    markers = ("o", "s", "^", "D")
    for k, n in enumerate(sorted(set(by_n["n"]) & {4, 16, 64})):
        part = by_n[by_n["n"] == n].sort_values("R")
        line, = ax.plot(part["R"], part["bound"], markers[k] + "-", label=f"n = {n}")
        ax.plot(part["R"], part["estimate"], markers[k] + "--", color=line.get_color(),
                alpha=0.8)
    ax.set(xlabel="token radius R", ylabel="Lipschitz constant",
           title=f"(b) against the token radius (D = {width}; dashed: estimate)")
    ax.legend(loc="upper left", bbox_to_anchor=(1.01, 1), frameon=False)
    ax = axes[2, 0]
    by_w = attention[attention["R"] == 1.0]
    for k, n in enumerate(sorted(set(by_w["n"]) & {4, 16})):
        part = by_w[by_w["n"] == n].drop_duplicates("width").sort_values("width")
        line, = ax.plot(part["width"], part["bound"], markers[k] + "-", label=f"n = {n}")
        ax.plot(part["width"], part["estimate"], markers[k] + "--", color=line.get_color(),
                alpha=0.8)
    ax.set(xlabel="width D", ylabel="Lipschitz constant",
           title="(c) against the width (R = 1; dashed: estimate)")
    ax.legend(loc="upper left", bbox_to_anchor=(1.01, 1), frameon=False)
    for ax in axes[:, 0]:
        ax.set_xscale("log")
        ax.xaxis.set_major_formatter(mticker.FormatStrFormatter("%g"))
        ax.xaxis.set_minor_formatter(mticker.NullFormatter())
        _log_axis(ax)
    _note(fig, profile_note)
    _label_log_axes(fig)
    fig.tight_layout()
    return fig


@_styled
def plot_conv_scaling(conv: pd.DataFrame, *, profile_note: str | None = None) -> plt.Figure:
    """Bounds on one convolution's operator norm against kernel size, channels and input size.

    Parameters
    ----------
    conv : pandas.DataFrame
        Columns ``sweep`` ("kernel size", "channels", "input size"), ``value``, ``certified``,
        ``circular``, ``cheap``, ``estimate``, as :func:`topolip.experiments.theory.conv_scaling`
        builds it.
    profile_note : str, optional
        Written under the panels.

    Returns
    -------
    matplotlib.figure.Figure
        One panel per sweep (log y); the legend names the four curves once.

    Raises
    ------
    ValueError
        If ``conv`` lacks a column.

    Examples
    --------
    >>> t = pd.DataFrame({"sweep": ["kernel size"] * 2, "value": [1, 3],
    ...                   "certified": [1.0, 2], "circular": [1.1, 2.2], "cheap": [1.0, 5],
    ...                   "estimate": [0.99, 1.9]})
    >>> fig = plot_conv_scaling(t); len(fig.axes)
    1
    >>> plt.close(fig)
    """
    _require(conv, ["sweep", "value", "certified", "circular", "cheap", "estimate"], "conv")
    sweeps = list(dict.fromkeys(conv["sweep"]))
    fig, axes = plt.subplots(1, len(sweeps), figsize=(FIG_WIDTH, 3.2), squeeze=False)
    curves = (("certified", "o-", "certified (Cholesky test)"),
              ("circular", "s--", "circular embedding"),
              ("cheap", "^:", "patch counting"), ("estimate", "x", "estimate"))
    colors = dict(zip(("certified", "circular", "cheap"), sns.color_palette("colorblind"),
                      strict=False), estimate="k")
    for ax, sweep in zip(axes[0], sweeps, strict=True):
        part = conv[conv["sweep"] == sweep].sort_values("value")
        for col, fmt, label in curves:
            ax.plot(part["value"], part[col], fmt, color=colors[col], label=label)
        ax.set(xlabel=sweep, ylabel="Lipschitz constant" if ax is axes[0, 0] else "")
        _log_axis(ax)
        ax.xaxis.set_major_locator(mticker.FixedLocator(part["value"].to_list()))
    handles, labels = axes[0, 0].get_legend_handles_labels()
    fig.legend(handles, labels, loc="upper center", ncol=4, frameon=False,
               bbox_to_anchor=(0.5, 1.0))
    _note(fig, profile_note)
    _label_log_axes(fig)
    fig.tight_layout(rect=(0, 0, 1, 0.88))
    return fig


@_styled
def plot_bounds_vs_measured(table: pd.DataFrame, *, profile_note: str | None = None
                            ) -> plt.Figure:
    """Per layer: the bound 2·L_ℓ against the measured W∞∞,ℓ / ε_{ℓ-1}, and the envelope.

    Parameters
    ----------
    table : pandas.DataFrame
        One row per model (``arch``, ``seed``), ``perturbation`` and probe (``depth``,
        ``layer``) with ``ratio`` (measured ``W_{∞,∞,ℓ} / ε_{ℓ-1}``), ``two_lip`` (2·L_ℓ with
        margin ε_{ℓ-1}), ``bottleneck`` (W∞∞,ℓ), ``envelope`` (2ε_ℓ) and ``envelope_chain``
        (2·∏L_j·ε_0). Means over seeds are drawn.
    profile_note : str, optional
        Written under the panels.

    Returns
    -------
    matplotlib.figure.Figure
        One row per architecture, one colour per perturbation (:data:`KIND_COLORS`). Left:
        2·L_ℓ (solid, with the kind's own margin) over the measured ratio (dashed, markers).
        Right: W∞∞,ℓ (solid, markers), 2ε_ℓ (dashed) and the chained bound (dotted). One
        legend above the panels: the colours in its first column, the line styles in its
        second.

    Raises
    ------
    ValueError
        If ``table`` lacks a column.

    Examples
    --------
    >>> t = pd.DataFrame({"arch": ["vit"] * 2, "seed": [0, 0], "perturbation": ["fgsm"] * 2,
    ...                   "depth": [0, 1], "layer": ["input", "embed"],
    ...                   "ratio": [float("nan"), 0.5], "two_lip": [float("nan"), 4.0],
    ...                   "bottleneck": [0.1, 0.2], "envelope": [0.4, 0.5],
    ...                   "envelope_chain": [0.4, 1.6]})
    >>> fig = plot_bounds_vs_measured(t); [ax.get_title() for ax in fig.axes]
    ['ViT: per-layer growth', 'ViT: displacement']
    >>> plt.close(fig)
    """
    _require(table, ["arch", "perturbation", "depth", "layer", "ratio", "two_lip",
                     "bottleneck", "envelope", "envelope_chain"], "table")
    archs = _order(table["arch"])
    kinds = list(dict.fromkeys(table["perturbation"]))
    colors = dict(zip(kinds, KIND_COLORS, strict=False))
    fig, axes = plt.subplots(len(archs), 2, figsize=(FIG_WIDTH, 2.7 * len(archs) + 1.0),
                             squeeze=False)
    for i, arch in enumerate(archs):
        part = table[table["arch"] == arch]
        mean = (part.groupby(["perturbation", "depth", "layer"], sort=False)
                .mean(numeric_only=True).reset_index().sort_values("depth"))
        labels = list(dict.fromkeys(mean.sort_values("depth")["layer"]))
        ax = axes[i, 0]
        for kind in kinds:   # the bound's margin is the kind's own, so one bound per kind
            m = mean[(mean["perturbation"] == kind) & (mean["depth"] > 0)]
            ax.plot(m["depth"], m["two_lip"], "-", color=colors[kind], lw=1.4)
            ax.plot(m["depth"], m["ratio"], "--o", color=colors[kind], ms=4, lw=1)
        ax.set_title(f"{_name(arch)}: per-layer growth")
        ax.set_ylabel("ratio")
        ax = axes[i, 1]
        for kind in kinds:
            m = mean[mean["perturbation"] == kind]
            ax.plot(m["depth"], m["bottleneck"], "-o", color=colors[kind], ms=4, lw=1)
            ax.plot(m["depth"], m["envelope"], "--", color=colors[kind], lw=1)
            ax.plot(m["depth"], m["envelope_chain"], ":", color=colors[kind], lw=1.4)
        ax.set_title(f"{_name(arch)}: displacement")
        ax.set_ylabel("activation units")
        for ax in axes[i]:
            _log_axis(ax)
            ax.set_xticks(range(len(labels)), labels, rotation=30, ha="right")
    # one legend for the figure: colour is the perturbation, line style the quantity
    key = [Line2D([], [], color=colors[k], lw=3, label=_name(k)) for k in kinds]
    style = [Line2D([], [], color="0.2", ls=ls, marker=mk, ms=4, lw=1.2, label=lab)
             for ls, mk, lab in (
                 ("-", "", "left: bound 2·L$_\\ell$ (margin ε$_{\\ell-1}$)"),
                 ("--", "o", "left: measured W$_{\\infty,\\infty,\\ell}$ / ε$_{\\ell-1}$"),
                 ("-", "o", "right: measured W$_{\\infty,\\infty,\\ell}$"),
                 ("--", "", "right: envelope 2ε$_\\ell$"),
                 (":", "", "right: chained bound 2·∏L$_j$·ε$_0$"))]
    rows = max(len(key), len(style))   # column 1 the colours, column 2 the line styles
    key += [Line2D([], [], ls="none", label=" ")] * (rows - len(key))
    fig.legend(handles=key + style, loc="upper center", bbox_to_anchor=(0.5, 1.0),
               ncol=2, frameon=False, fontsize=9)
    _note(fig, profile_note)
    _label_log_axes(fig)
    fig.tight_layout(rect=(0, 0, 1, 1 - (0.2 * rows + 0.1) / fig.get_figheight()))
    return fig


@_styled
def plot_noise_floor(table: pd.DataFrame, *, ncols: int = 4,
                     profile_note: str | None = None) -> plt.Figure:
    """Scale-free displacement per layer against the noise floor, one panel per perturbation.

    Parameters
    ----------
    table : pandas.DataFrame
        Per-layer rows (``topolip.csv``) with ``arch``, ``perturbation``, ``depth``,
        ``delta_scale_free`` and ``noise_floor_scale_free``.
    ncols : int, default=4
        Panels per row.
    profile_note : str, optional
        The profile the data came from.

    Returns
    -------
    matplotlib.figure.Figure
        Solid lines: ``Δ_ℓ / s_ℓ`` (mean over seeds); dashed: the noise floor (displacement
        between two disjoint clean batches, mean over seeds), both on a log axis; integer
        depth ticks.

    Raises
    ------
    ValueError
        If ``table`` is empty or lacks a column.

    Examples
    --------
    >>> t = pd.DataFrame({"arch": "vit", "perturbation": "fgsm", "seed": 0, "depth": [0, 1],
    ...                   "delta_scale_free": [0.1, 0.2], "noise_floor_scale_free": [1.0, 1.0]})
    >>> fig = plot_noise_floor(t); len(fig.axes)
    1
    >>> plt.close(fig)
    """
    _require(table, ["arch", "perturbation", "depth", "delta_scale_free",
                     "noise_floor_scale_free"], "table")
    kinds = list(dict.fromkeys(table["perturbation"]))
    ncols = min(ncols, len(kinds))
    nrows = -(-len(kinds) // ncols)
    fig, axes = plt.subplots(nrows, ncols, figsize=(FIG_WIDTH, 2.1 * nrows + 0.6),
                             sharey=True, squeeze=False)
    order = _order(table["arch"])
    mean = table.groupby(["perturbation", "arch", "depth"], sort=False)[
        ["delta_scale_free", "noise_floor_scale_free"]].mean().reset_index()
    for ax, kind in zip(axes.flat, kinds, strict=False):
        part = mean[mean["perturbation"] == kind]
        for arch in order:
            d = part[part["arch"] == arch]
            color = ARCH_COLORS.get(arch, "0.3")
            ax.plot(d["depth"], d["delta_scale_free"], color=color,
                    marker=ARCH_MARKERS.get(arch, "o"), ms=4, lw=1.5,
                    label=_name(arch) if kind == kinds[0] else None)
            ax.plot(d["depth"], d["noise_floor_scale_free"], color=color, ls="--", lw=1)
        _log_axis(ax)
        ax.yaxis.set_minor_formatter(mticker.NullFormatter())  # small panels: majors only
        ax.set_title(_name(kind))
        ax.set_xlabel("probe depth ℓ")
        ax.xaxis.set_major_locator(mticker.MaxNLocator(integer=True))
    for ax in axes.flat[len(kinds):]:
        ax.set_visible(False)
    for ax in axes[:, 0]:
        ax.set_ylabel("Δ$_ℓ$ / s$_ℓ$")
    axes.flat[0].plot([], [], color="0.3", ls="--", lw=1, label="noise floor")
    fig.legend(loc="upper center", frameon=False, ncol=5, bbox_to_anchor=(0.5, 1.0))
    _note(fig, profile_note)
    _label_log_axes(fig)
    fig.tight_layout(rect=(0, 0, 1, 1 - 0.35 / (2.1 * nrows + 0.6)))
    return fig


@_styled
def plot_measure_study(study: pd.DataFrame, *, alpha: float = 0.05,
                       profile_note: str | None = None) -> plt.Figure:
    """The measure study: within-architecture Kendall τ of each measure, and TopoLip against
    each baseline.

    Parameters
    ----------
    study : pandas.DataFrame
        From :func:`topolip.evidence.measures.measure_study` (``measure_study.csv``:
        ``perturbation``, ``role``, ``label``, ``baseline``, ``tau_within``,
        ``p_within_holm``, ``tau_pooled``, ``diff``, ``diff_low``, ``diff_high``,
        ``comparison``).
    alpha : float, default=0.05
        The level the Holm-adjusted p-values are read at (filled markers).
    profile_note : str, optional
        The profile the data came from, written under the panels.

    Returns
    -------
    matplotlib.figure.Figure
        Left: one row per measure (TopoLip first), its within-architecture τ averaged over the
        perturbation kinds (black; filled where its Holm p < ``alpha``), each kind's
        within-architecture τ (small grey dots), and the τ over all models pooled (open
        diamond: confounded by architecture); dotted line at τ = 0. Right: for each baseline,
        τ(TopoLip) − τ(baseline) within architectures averaged over kinds, with the
        Holm-consistent interval of its jackknife test, coloured by the verdict (the rows
        are shared; a non-baseline row is empty on the right).

    Raises
    ------
    ValueError
        If ``study`` is empty or lacks a column.

    Examples
    --------
    >>> s = pd.DataFrame({"perturbation": ["all", "all", "fgsm", "fgsm"],
    ...     "role": ["primary", "primary", "secondary", "secondary"],
    ...     "label": ["TopoLip", "CKA"] * 2, "baseline": [False, True] * 2,
    ...     "tau_within": [0.2, 0.5, 0.3, 0.4], "p_within_holm": [0.2, 0.01, 0.3, 0.2],
    ...     "tau_pooled": [0.5, 0.4, 0.5, 0.4], "diff": [np.nan, -0.3, np.nan, -0.1],
    ...     "diff_low": [np.nan, -0.9, np.nan, -0.8], "diff_high": [np.nan, 0.3, np.nan, 0.6],
    ...     "comparison": ["", "no difference shown", "", "no difference shown"]})
    >>> fig = plot_measure_study(s); [t.get_text() for t in fig.axes[0].get_yticklabels()]
    ['TopoLip', 'CKA']
    >>> plt.close(fig)
    """
    _require(study, ["perturbation", "role", "label", "baseline", "tau_within",
                     "p_within_holm", "tau_pooled", "diff", "diff_low", "diff_high",
                     "comparison"], "study")
    s = study.copy()
    s["baseline"] = s["baseline"].astype(str).str.lower().isin(["true", "1"])
    s["comparison"] = s["comparison"].astype(object).where(s["comparison"].notna(), "")
    prim = s[s["role"] == "primary"]
    labels = list(dict.fromkeys(prim["label"]))
    base = prim[prim["baseline"]]
    height = 0.36 * len(labels) + 1.6
    fig, (ax, bx) = plt.subplots(1, 2, figsize=(FIG_WIDTH, height), sharey=True,
                                 gridspec_kw={"width_ratios": [1.3, 1]})
    y = {lab: i for i, lab in enumerate(labels)}
    sec = s[s["role"] == "secondary"]
    ax.scatter(sec["tau_within"], sec["label"].map(y) + 0.18, s=9, color="0.6", lw=0,
               label="one kind, within architectures")
    sig = prim["p_within_holm"] < alpha
    ax.scatter(prim["tau_pooled"], prim["label"].map(y) - 0.18, s=30, marker="D",
               facecolor="none", edgecolor="#D55E00", lw=1, label="all models pooled "
               "(confounded)")
    ax.scatter(prim.loc[~sig, "tau_within"], prim.loc[~sig, "label"].map(y), s=40,
               facecolor="white", edgecolor="black", lw=1.2, zorder=3,
               label="within architectures, mean over kinds")
    ax.scatter(prim.loc[sig, "tau_within"], prim.loc[sig, "label"].map(y), s=40,
               color="black", zorder=3, label=f"the same, significant at α = {alpha:g}")
    ax.axvline(0.0, color="0.4", ls=":", lw=1)
    ax.set_yticks(range(len(labels)), labels)
    ax.set_ylim(len(labels) - 0.5, -0.5)
    ax.set_xlim(-1.05, 1.05)
    ax.set_xlabel("Kendall τ with the accuracy drop")
    colors = {"TopoLip better": "#009E73", "TopoLip worse": "#CC79A7",
              "no difference shown": "0.45", "not testable": "0.75"}
    for _, r in base.iterrows():
        i, c = y[r["label"]], colors.get(r["comparison"], "0.45")
        if np.isfinite(r["diff_low"]) and np.isfinite(r["diff_high"]):
            bx.plot([r["diff_low"], r["diff_high"]], [i, i], color=c, lw=1.5)
        if np.isfinite(r["diff"]):
            bx.scatter([r["diff"]], [i], color=c, s=30, zorder=3)
        else:
            bx.text(0, i, "not testable", ha="center", va="center", fontsize=7, color="0.4")
    bx.axvline(0.0, color="0.4", ls=":", lw=1)
    bx.set_xlim(-2.05, 2.05)
    bx.set_xlabel("τ(TopoLip) − τ(baseline)")
    for verdict, c in colors.items():
        if (base["comparison"] == verdict).any():
            bx.plot([], [], color=c, lw=1.5, marker="o", ms=4, label=verdict)
    handles = ax.get_legend_handles_labels()
    bh = bx.get_legend_handles_labels()
    fig.legend(handles[0] + bh[0], handles[1] + bh[1], loc="upper center", frameon=False,
               ncol=3, fontsize=7, bbox_to_anchor=(0.5, 1.0))
    _note(fig, profile_note)
    _label_log_axes(fig)
    fig.tight_layout(rect=(0, 0, 1, 1 - 0.75 / height))
    return fig


@_styled
def plot_verdicts(verdicts: pd.DataFrame, *, profile_note: str | None = None) -> plt.Figure:
    """Forest plot of the architecture comparisons: effect and the interval its verdict uses,
    by claim.

    Parameters
    ----------
    verdicts : pandas.DataFrame
        From :func:`topolip.evidence.claims.evaluate` (``verdicts.csv``); rows with a finite
        ``effect`` and a ``comparison`` of the form ``"a vs b"`` are drawn. Optional columns:
        ``role`` (the ``"primary"`` row of each claim is marked), ``measure`` (rows of one
        comparison and group that differ only by measure are told apart by it, e.g.
        scale-free and raw TopoLip; it also names each panel's x axis) and ``scale``
        (``"log"``: the effect is a log ratio).
    profile_note : str, optional
        The profile the data came from, written under the panel.

    Returns
    -------
    matplotlib.figure.Figure
        One panel per claim, titled by the claim in words (:data:`_CLAIM_TITLES`); one row per
        comparison and group (``"ViT vs ResNet, Gaussian noise"``; a contrast of two attacks
        as ``"FGSM vs APGD-CE+T"``); colour by verdict; the primary row in bold, its point a
        larger black-edged diamond. The effect is attention minus convolution in the claim's
        units: the log of the ratio for a log-scale (TopoLip) row, a difference otherwise; the
        bar is the row's ``low``–``high``, the interval at the coverage its decision uses (no
        bar where there is no interval, e.g. with one seed), clipped to the values a
        difference of two fractions can take ([-1, 1]; [-2, 2] for a contrast of two such
        differences), a clipped end marked by a triangle. Under each panel's last row, at
        the edge of that side, an arrow says which side of 0 favours attention (the claim's
        direction: lower TopoLip and accuracy drop, higher AUROC; for a contrast of two
        attacks, a larger advantage under the weaker one).

    Raises
    ------
    ValueError
        If no row compares two architectures, or a column is missing.

    Examples
    --------
    >>> v = pd.DataFrame({"claim": "attention-smoother", "comparison": "vit vs resnet",
    ...                   "group": "fgsm", "effect": [-1.0], "low": [-2.0], "high": [-0.5],
    ...                   "verdict": ["supported"]})
    >>> fig = plot_verdicts(v); len(fig.axes)
    1
    >>> fig.axes[0].get_title(loc="left"), fig.axes[0].texts[0].get_text()
    ('Attention is smoother (end-to-end TopoLip)', '← favours attention')
    >>> plt.close(fig)
    """
    _require(verdicts, ["claim", "comparison", "group", "effect", "low", "high", "verdict"],
             "verdicts")
    v = verdicts[np.isfinite(verdicts["effect"].astype(float))
                 & verdicts["comparison"].astype(str).str.contains(" vs ")].copy()
    if v.empty:
        raise ValueError("no architecture comparison to draw")
    for col, default in (("role", ""), ("measure", ""), ("scale", "")):
        v[col] = v[col].fillna(default).astype(str) if col in v else default
    v["group"] = v["group"].astype(str)
    # a claim whose rows mix the radii (higher: attention more robust) with accuracy drops
    # (lower: more robust) gets one panel per kind, so each axis has one direction
    v["panel"] = [f"{c}|radius" if m in _RADIUS_MEASURES else c
                  for c, m in zip(v["claim"], v["measure"], strict=True)]
    claims = list(dict.fromkeys(v["panel"]))
    colors = {"supported": "#009E73", "contradicted": "#CC79A7", "inconclusive": "0.55",
              "not enough seeds": "0.75", "noise floor": "0.85", "floor/ceiling": "0.85"}
    heights = [len(v[v["panel"] == c]) + 1 for c in claims]  # a row for the direction cue
    height = 0.34 * sum(heights) + 1.15 * len(claims) + 0.6
    fig, axes = plt.subplots(len(claims), 1, figsize=(FIG_WIDTH, height),
                             gridspec_kw={"height_ratios": heights}, squeeze=False)
    for ax, panel in zip(axes[:, 0], claims, strict=True):
        part = v[v["panel"] == panel].reset_index(drop=True)
        claim = panel.split("|")[0]
        y = np.arange(len(part))
        contrast = part["group"].str.contains(" vs ")
        bound = np.where(part["measure"].isin(_FRACTIONS) & (part["scale"] != "log"),
                         np.where(contrast, 2.0, 1.0), np.inf)
        effect = part["effect"].astype(float).to_numpy()
        low = np.maximum(part["low"].astype(float).to_numpy(), -bound)
        high = np.minimum(part["high"].astype(float).to_numpy(), bound)
        primary = (part["role"] == "primary").to_numpy()
        for verdict, color in colors.items():
            m = (part["verdict"] == verdict).to_numpy()
            for sel, style in ((m & ~primary, dict(fmt="o", ms=4)),
                               (m & primary, dict(fmt="D", ms=7, mec="k", mew=1.2))):
                if sel.any():
                    ax.errorbar(effect[sel], y[sel],
                                xerr=np.nan_to_num(np.vstack([effect[sel] - low[sel],
                                                              high[sel] - effect[sel]])),
                                lw=1.2, color=color, zorder=3 if style["fmt"] == "D" else 2,
                                **style)
        for side, marker in ((-1, "<"), (1, ">")):
            ends = np.isfinite(bound) & (np.where(side < 0, part["low"], part["high"])
                                         .astype(float) * side > bound)
            if ends.any():
                ax.plot(side * bound[ends], y[ends], marker, ms=5, color="0.3", ls="none")
        twins = part.duplicated(["comparison", "group"], keep=False)
        names = []
        for r, twin in zip(part.itertuples(), twins, strict=True):
            name = f"{roster.pair_label(r.comparison)}, " \
                   f"{_group_label(r.group)}"
            if twin and r.measure:
                name += f" ({_MEASURE_SHORT.get(r.measure, roster.measure_label(r.measure))})"
            # two lines (comparison, then group) when long, so the axes keep their width
            names.append(name.replace(", ", ",\n", 1) if len(name) > 36 else name)
        ax.set_yticks(y, names, fontsize=8.5, linespacing=0.95)
        for tick, is_primary in zip(ax.get_yticklabels(), primary, strict=True):
            tick.set_fontweight("bold" if is_primary else "normal")
        ax.axvline(0.0, color="0.4", ls=":", lw=1)
        radius = panel.endswith("|radius")
        mixed = radius or f"{claim}|radius" in claims
        suffix = (": minimal radius" if radius else ": fixed budget") if mixed else ""
        ax.set_title(roster.claim_title(claim) + suffix, loc="left")
        main = part.loc[primary, "measure"].iloc[0] if primary.any() else part["measure"].iloc[0]
        higher_better = main in roster.OOD_DETECTORS.values() or main in _RADIUS_MEASURES
        cue = (("attention's edge larger under the weaker attack →" if higher_better
                else "← attention's edge larger under the weaker attack") if contrast.all()
               else "favours attention →" if higher_better else "← favours attention")
        # under the last row, at the edge of the side it names
        ax.set_ylim(len(part) + 0.4, -0.6)
        ax.text(0.99 if higher_better else 0.01, len(part) - 0.05, cue,
                transform=mtransforms.blended_transform_factory(ax.transAxes, ax.transData),
                ha="right" if higher_better else "left", va="center", fontsize=9,
                color="0.3", style="italic")
        log = (part["scale"] == "log").all() and bool(main)
        what = roster.measure_label(main) if main else "the claim's measure"
        if contrast.all() and log:
            xlabel = "Δ log(attention / convolution) median radius, weak − strong attack"
        elif contrast.all():
            xlabel = f"Δ (attention − convolution) {what}, weak − strong attack"
        elif log:
            xlabel = f"log(attention / convolution), {what}"
        else:
            xlabel = f"attention − convolution, {what}"
        ax.set_xlabel(xlabel, fontsize=9)
    for verdict, color in colors.items():
        if verdict in set(v["verdict"]):
            axes[0, 0].plot([], [], "o", color=color, label=verdict)
    if (v["role"] == "primary").any():
        axes[0, 0].plot([], [], "D", ms=7, mfc="white", mec="k", mew=1.2,
                        label="primary comparison (bold)")
    fig.legend(loc="upper center", frameon=False, ncol=3, bbox_to_anchor=(0.5, 1.0))
    _note(fig, profile_note)
    _label_log_axes(fig)
    fig.tight_layout(rect=(0, 0, 1, 1 - 0.55 / height), h_pad=1.2)
    return fig


def _require(table: pd.DataFrame, columns: list[str], name: str) -> None:
    if table.empty:
        raise ValueError(f"{name} is empty: nothing to plot")
    require_columns(table, columns, name)


#: the MLP activations of the literature chapter's row 3 (not the architecture colours)
_ACTIVATION_COLORS = {"relu": "0.15", "tanh": "#CC79A7"}


@_styled
def plot_literature_attention(growth: pd.DataFrame, castin: pd.DataFrame,
                              castin_real: pd.DataFrame | None = None) -> plt.Figure:
    """Rows 1 and 2: measured local constants of attention against our bound.

    Parameters
    ----------
    growth : pandas.DataFrame
        ``lit_attention_growth``: ``seed``, ``block``, ``R`` (largest token norm), ``measured``
        and ``bound`` (local Lipschitz constants, output norm per input norm).
    castin : pandas.DataFrame
        ``lit_castin``: ``seed``, ``block``, ``head``, ``n`` (tokens), ``measured``,
        ``bound_ours``.
    castin_real : pandas.DataFrame, optional
        ``lit_castin_real``: ``seed``, ``block``, ``head``, ``n``, ``measured`` (each head at
        ``n`` of its own observed tokens, :func:`topolip.experiments.literature.
        castin_real_table`). Drawn on the right when given and not empty.

    Returns
    -------
    matplotlib.figure.Figure
        Left: measured (solid) and bound (dashed) against R per block, log-log. Right: the
        median over heads of the measured constant and of our bound against n per ViT, with a
        slope-1/2 guide through the first measured point; with ``castin_real``, the median
        over heads at real tokens per ViT (green squares) and a slope-1/4 guide through its
        first point (the source's n^(1/4) on real tokens).

    Examples
    --------
    >>> growth = pd.DataFrame({"seed": 0, "block": "b", "R": [1.0, 2.0],
    ...                        "measured": [1.0, 3.0], "bound": [2.0, 8.0]})
    >>> castin = pd.DataFrame({"seed": 0, "block": "b", "head": 0, "n": [2, 8],
    ...                        "measured": [1.0, 2.0], "bound_ours": [3.0, 9.0]})
    >>> real = castin.drop(columns="bound_ours").assign(measured=[0.9, 1.2])
    >>> fig = plot_literature_attention(growth, castin, real)
    >>> len(fig.axes[1].get_lines())   # worst case, our bound, real tokens, two guides
    5
    >>> plt.close(fig)

    Raises
    ------
    ValueError
        If a table lacks a column or is empty.
    """
    require_columns(growth, ["seed", "block", "R", "measured", "bound"], "lit_attention_growth")
    require_columns(castin, ["seed", "block", "head", "n", "measured", "bound_ours"],
                    "lit_castin")
    if growth.empty or castin.empty:
        raise ValueError("the attention tables are empty (no ViT in this run)")
    fig, (left, right) = plt.subplots(1, 2, figsize=(FIG_WIDTH, 3.3))
    blocks = sorted(growth["block"].unique())
    colors = dict(zip(blocks, plt.get_cmap("viridis")(np.linspace(0.1, 0.8, len(blocks))),
                      strict=True))
    for (seed, block), g in growth.groupby(["seed", "block"]):
        g = g.sort_values("R")
        label = f"block {blocks.index(block) + 1}" if seed == growth["seed"].min() else None
        left.plot(g["R"], g["measured"], "-o", ms=3, lw=1, color=colors[block], label=label)
        left.plot(g["R"], g["bound"], "--", lw=0.8, color=colors[block], alpha=0.7)
    left.set(xscale="log", yscale="log", xlabel="largest token norm R",
             ylabel="local Lipschitz constant", title="Row 1: scaled test tokens")
    _log_ticks(left, growth["R"])
    left.plot([], [], "k--", lw=0.8, label="our bound")
    left.legend(frameon=False, fontsize=8, loc="upper left")
    med = castin.groupby(["seed", "n"], as_index=False)[["measured", "bound_ours"]].median()
    for seed, g in med.groupby("seed"):
        g = g.sort_values("n")
        right.plot(g["n"], g["measured"], "-o", ms=3, lw=1, color="#0072B2",
                   label="worst case (median head)" if seed == med["seed"].min() else None)
        right.plot(g["n"], g["bound_ours"], "--", lw=0.8, color="0.4",
                   label="our bound" if seed == med["seed"].min() else None)
    _slope_guide(right, med, 0.5, ":", "slope ½ (√n)")
    ticks, title = med["n"], "Row 2: worst-case input"
    if castin_real is not None and len(castin_real):
        require_columns(castin_real, ["seed", "block", "head", "n", "measured"],
                        "lit_castin_real")
        real = castin_real.groupby(["seed", "n"], as_index=False)["measured"].median()
        for seed, g in real.groupby("seed"):
            g = g.sort_values("n")
            right.plot(g["n"], g["measured"], "-s", ms=3, lw=1, color="#009E73",
                       label="real tokens (median head)" if seed == real["seed"].min()
                       else None)
        _slope_guide(right, real, 0.25, "-.", r"slope ¼ ($n^{1/4}$)")
        ticks, title = pd.concat([ticks, real["n"]]), "Row 2: worst-case and real tokens"
    right.set(xscale="log", yscale="log", xlabel="tokens n",
              ylabel="local Lipschitz constant", title=title)
    _log_ticks(right, ticks)
    right.legend(frameon=False, fontsize=8, loc="center left", bbox_to_anchor=(0, 0.52))
    fig.tight_layout()
    return fig


def _slope_guide(ax, med: pd.DataFrame, exponent: float, ls: str, label: str) -> None:
    """A black guide line of log-log slope ``exponent`` over the token counts of ``med``
    (``seed``, ``n``, ``measured``: one median curve per ViT), through the median over the
    ViTs of their first measured point."""
    first = med.sort_values("n").groupby("seed").first()
    n = np.sort(med["n"].unique()).astype(float)
    ax.plot(n, first["measured"].median() * (n / n[0]) ** exponent, ls, color="k", lw=1,
            label=label)


def _log_ticks(ax, values) -> None:
    """Label a log x axis at the measured values only, as plain numbers."""
    ax.xaxis.set_major_locator(mticker.FixedLocator(sorted(pd.unique(values))))
    ax.xaxis.set_major_formatter(mticker.FormatStrFormatter("%g"))
    ax.xaxis.set_minor_locator(mticker.NullLocator())


@_styled
def plot_literature_topology(betti: pd.DataFrame, confidence: pd.DataFrame) -> plt.Figure:
    """Rows 3 and 4: complexity of MLP activations per layer, confidence on scaled images.

    Parameters
    ----------
    betti : pandas.DataFrame
        ``lit_betti``: ``arch`` (the activation, ``relu``/``tanh``), ``seed``, ``layer``
        (0 = input), ``label``, ``betti0``, ``betti1``.
    confidence : pandas.DataFrame
        ``lit_confidence``: ``arch``, ``seed``, ``alpha`` (input scale), ``relu`` (piecewise
        affine), ``confidence`` (mean max-softmax, in [0, 1]).

    Returns
    -------
    matplotlib.figure.Figure
        Left: complexity (beta0 + beta1 summed over classes) against layer, one thin line per
        seed and the mean thick, per activation. Right: confidence against alpha (log axis),
        one line per model, solid for piecewise-affine models, dashed otherwise; a dotted line
        at 0.99.

    Raises
    ------
    ValueError
        If a table lacks a column or is empty.
    """
    require_columns(betti, ["arch", "seed", "layer", "label", "betti0", "betti1"], "lit_betti")
    require_columns(confidence, ["arch", "seed", "alpha", "relu", "confidence"],
                    "lit_confidence")
    if betti.empty or confidence.empty:
        raise ValueError("the topology or confidence table is empty")
    fig, (left, right) = plt.subplots(1, 2, figsize=(FIG_WIDTH, 3.3))
    from topolip.evidence.literature_topology import activation_label, complexity_profiles

    prof = complexity_profiles(betti)
    for act, g in prof.groupby("arch"):
        color = _ACTIVATION_COLORS.get(act, "0.3")
        for _, s in g.groupby("seed"):
            left.plot(s["layer"], s["complexity"], lw=0.6, alpha=0.45, color=color)
        mean = g.groupby("layer")["complexity"].mean()
        left.plot(mean.index, mean.values, lw=2.2, color=color,
                  label=f"{activation_label(act)} (mean)")
    left.set(xlabel="layer (0 = input)", ylabel="β₀ + β₁ over classes",
             title="Row 3: topology with depth")
    left.xaxis.get_major_locator().set_params(integer=True)
    left.legend(frameon=False, fontsize=8)
    palette = _palette(confidence["arch"])
    for arch in _order(confidence["arch"]):
        for i, (_, g) in enumerate(confidence[confidence["arch"] == arch].groupby("seed")):
            g = g.sort_values("alpha")
            right.plot(g["alpha"], g["confidence"], "-" if bool(g["relu"].iloc[0]) else "--",
                       lw=1, color=palette[arch], label=_name(arch) if i == 0 else None)
    right.axhline(0.99, color="k", lw=0.8, ls=":")
    right.set(xscale="log", ylim=(0, 1.02), xlabel="input scale α",
              ylabel="mean max-softmax confidence", title="Row 4: far from the data")
    right.legend(frameon=False, fontsize=8, loc="lower right")
    fig.tight_layout()
    return fig
