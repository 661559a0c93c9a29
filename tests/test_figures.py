"""Figures read at page width: palette families, human labels, font sizes, widths."""

import colorsys

import matplotlib
import matplotlib.colors as mcolors
import matplotlib.pyplot as plt
import numpy as np
import pandas as pd
import pytest

from topolip.experiments.model_measurement import (
    measure_model,
)
from topolip.experiments.ood import (
    measure_ood,
    ood_behaviour,
    ood_scores,
)
from topolip.experiments.robustness import robustness_curves
from topolip.perturbations.ood_sets import load_ood_batches
from topolip.report import figures
from topolip.report.figures import (
    plot_accuracy_curves,
    plot_ood_behaviour,
    plot_sweep,
    plot_topolip_by_layer,
    plot_topolip_vs_accuracy,
)
from topolip.report.format import ARCH_COLORS, ARCH_LABELS
from topolip.topology.spec import TopoLipSpec

matplotlib.use("Agg")


def _hue(color: str) -> float:
    return colorsys.rgb_to_hsv(*mcolors.to_rgb(color))[0] * 360


def test_attention_models_are_blue_and_convolution_models_orange():
    # Okabe-Ito blues sit near 200 degrees of hue, its orange and vermillion near 25-40
    for arch in ("vit", "attention_stack"):
        assert 190 <= _hue(ARCH_COLORS[arch]) <= 215, arch
    for arch in ("resnet", "conv_stack"):
        assert 15 <= _hue(ARCH_COLORS[arch]) <= 45, arch
    # the two members of a family still differ (lightness)
    assert ARCH_COLORS["vit"] != ARCH_COLORS["attention_stack"]
    assert ARCH_COLORS["resnet"] != ARCH_COLORS["conv_stack"]


def _layer_table():
    rows = []
    for arch in ARCH_LABELS:
        for seed in (0, 1):
            for depth in range(4):
                rows.append({"arch": arch, "seed": seed, "perturbation": "fgsm",
                             "strength": 0.1, "depth": depth, "layer": f"l{depth}",
                             "topolip": 1.0 + depth + seed, "topolip_scale_free": 1.0 + seed})
    return pd.DataFrame(rows)


def _texts(fig):
    out = []
    for ax in fig.axes:
        out += [ax.title, ax.xaxis.label, ax.yaxis.label, *ax.get_xticklabels(),
                *ax.get_yticklabels()]
        if ax.get_legend() is not None:
            out += ax.get_legend().get_texts()
    for leg in fig.legends:
        out += leg.get_texts()
    return [t for t in out if t.get_text()]


def test_per_layer_figure_reads_at_page_width():
    fig = figures.plot_topolip_by_layer(_layer_table(), profile_note="quick profile: MNIST, CPU")
    try:
        assert fig.get_figwidth() <= figures.FIG_WIDTH
        sizes = [t.get_fontsize() for t in _texts(fig)]
        assert min(sizes) >= 9
        legend = sorted(t.get_text() for t in fig.legends[0].get_texts())
        assert legend == sorted(ARCH_LABELS.values())
        assert any("quick profile" in t.get_text() for t in fig.texts)
        # lines take the architecture colours
        colors = {mcolors.to_hex(line.get_color()) for line in fig.axes[0].get_lines()}
        assert {c.lower() for c in ARCH_COLORS.values()} <= colors
    finally:
        plt.close(fig)


def test_bounds_figure_needs_the_ratio_columns():
    with pytest.raises(ValueError, match="ratio"):
        figures.plot_bounds_vs_measured(pd.DataFrame({"arch": ["vit"], "x": [1.0]}))


def test_attention_scaling_takes_the_width_of_the_sweeps_by_default():
    rows = [{"n": n, "R": r, "width": 8, "bound": n * r, "estimate": n * r / 2}
            for r in (1.0, 2.0) for n in (1, 4, 16)]
    rows += [{"n": n, "R": 1.0, "width": w, "bound": 1.0, "estimate": 0.5}
             for w in (4, 16) for n in (4, 16)]
    t = pd.DataFrame(rows)
    fig = figures.plot_attention_scaling(t)
    try:
        assert fig.axes[0].get_title().startswith("(a) against the sequence length (D = 8;")
        # one bound and one estimate line per radius, and the √n guide
        assert len(fig.axes[0].get_lines()) == 2 * 2 + 1
    finally:
        plt.close(fig)
    with pytest.raises(ValueError, match="no row of attention has width=32"):
        figures.plot_attention_scaling(t, width=32)


def test_end_to_end_figure_puts_the_mean_over_seeds():
    t = pd.DataFrame({"arch": ["vit", "vit", "resnet"], "seed": [0, 1, 0],
                      "perturbation": ["fgsm"] * 3, "end_to_end_scale_free": [2.0, 8.0, 3.0]})
    fig = figures.plot_end_to_end(t)
    try:
        means = [c for c in fig.axes[0].collections if len(c.get_offsets()) == 1
                 and c.get_sizes()[0] == 80]
        ys = sorted(float(c.get_offsets()[0][1]) for c in means)
        np.testing.assert_allclose(ys, [3.0, 5.0])
    finally:
        plt.close(fig)


def test_log_axis_labels_use_powers_of_ten_for_wide_ranges():
    assert figures._plain_log_label(1e8) == "$10^{8}$"
    assert figures._plain_log_label(0.5) == "0.5"
    fig, ax = plt.subplots()
    try:
        ax.set_ylim(1, 1e9)
        figures._log_axis(ax)
        ax.set_ylim(1, 1e9)
        fmt = ax.yaxis.get_major_formatter()
        assert fmt(1e8) == "$10^{8}$" and fmt(10.0) == "10"
        ax.set_ylim(0.1, 1)  # one decade: minor ticks labelled too, as plain numbers
        assert ax.yaxis.get_minor_formatter()(0.5) == "0.5"
    finally:
        plt.close(fig)


def _labelled_ticks_drawn(fig, axis) -> list[str]:
    """The tick labels ``axis`` shows once ``fig`` is drawn: ticks inside the view with text."""
    fig.canvas.draw()
    lo, hi = sorted(axis.get_view_interval())
    shown = {}
    for ticks in (axis.get_major_ticks(len(axis.get_majorticklocs())),
                  axis.get_minor_ticks(len(axis.get_minorticklocs()))):
        for tick in ticks:
            if lo <= tick.get_loc() <= hi and tick.label1.get_visible() \
                    and tick.label1.get_text().strip():
                shown.setdefault(round(tick.get_loc(), 12), tick.label1.get_text())
    return list(shown.values())


@pytest.mark.parametrize("values", [(0.83, 0.84, 0.96),   # a tenth of a decade, under 1
                                    (1.4, 1.6, 2.2),      # between two minor ticks
                                    (1.1, 3.0, 9.0),      # most of a decade, no power of ten
                                    (0.15, 0.6, 2.5)])    # over a decade, one power of ten
def test_every_log_axis_shows_at_least_three_tick_labels(values):
    # a sweep's TopoLip panels are log axes: narrow ranges used to show one or two labels
    t = pd.DataFrame({"arch": ["attention_stack"] * 3, "parameter": ["num_layers"] * 3,
                      "value": ["1", "2", "4"], "value_numeric": [1.0, 2.0, 4.0],
                      "seed": [0] * 3, "test_accuracy": [0.7, 0.71, 0.72],
                      "geometric_mean": list(values), "geometric_mean_scale_free": list(values)})
    fig = figures.plot_sweep(t, "attention_stack")
    try:
        for ax in fig.axes[:2]:
            assert ax.get_yscale() == "log"
            labels = _labelled_ticks_drawn(fig, ax.yaxis)
            assert len(labels) >= figures.MIN_LOG_TICK_LABELS, (values, labels)
            assert len(set(labels)) == len(labels), labels
    finally:
        plt.close(fig)
    # and a log x axis (TopoLip against the accuracy drop, one panel per kind)
    t = pd.DataFrame({"arch": ["vit", "resnet", "vit"], "perturbation": ["fgsm"] * 3,
                      "end_to_end_scale_free": list(values), "accuracy_drop": [0.1, 0.2, 0.3]})
    fig = figures.plot_topolip_vs_accuracy(t)
    try:
        assert fig.axes[0].get_xscale() == "log"
        labels = _labelled_ticks_drawn(fig, fig.axes[0].xaxis)
        assert len(labels) >= figures.MIN_LOG_TICK_LABELS, (values, labels)
    finally:
        plt.close(fig)


def test_neighbouring_category_labels_do_not_overlap():
    # "Gaussian noise" and "Gaussian blur" side by side under the end-to-end figure's points
    kinds = ["fgsm", "pgd", "gaussian_noise", "gaussian_blur", "contrast", "rotation", "elastic"]
    t = pd.DataFrame({"arch": ["vit"] * len(kinds), "seed": [0] * len(kinds),
                      "perturbation": kinds, "end_to_end_scale_free": [2.0] * len(kinds)})
    fig = figures.plot_end_to_end(t)
    try:
        fig.canvas.draw()
        boxes = [lab.get_window_extent() for lab in fig.axes[0].get_xticklabels()]
        assert len(boxes) == len(kinds)
        for a, b in zip(boxes[:-1], boxes[1:], strict=True):
            assert b.x0 - a.x1 >= 0.2 * fig.dpi, "tick labels touch (a fifth of an inch apart)"
    finally:
        plt.close(fig)


def test_sweep_panel_titles_do_not_overlap():
    # three panels a row at page width: the titles used to run into each other
    t = pd.DataFrame({"arch": ["resnet"] * 2, "parameter": ["stem_kernel"] * 2,
                      "value": ["3", "5"], "value_numeric": [3.0, 5.0], "seed": [0, 0],
                      "test_accuracy": [0.9, 0.95], "geometric_mean": [1.2, 1.3],
                      "geometric_mean_scale_free": [1.1, 1.6]})
    fig = figures.plot_sweep(t, "resnet")
    try:
        fig.canvas.draw()
        boxes = [ax.title.get_window_extent() for ax in fig.axes]
        for a, b in zip(boxes[:-1], boxes[1:], strict=True):
            assert a.x1 < b.x0, "panel titles overlap"
    finally:
        plt.close(fig)


# --- figures of a trained model's tables ---------------------------------------------------------

def _png(fig) -> bytes:
    """``fig`` as PNG bytes without time stamps or version strings."""
    import io

    buf = io.BytesIO()
    fig.savefig(buf, format="png", dpi=120, metadata={"Software": None}, bbox_inches="tight")
    return buf.getvalue()


def test_figures_draw_from_tables_and_are_byte_stable(tiny_resnet, mnist_600):
    import matplotlib.pyplot as plt

    x, y = mnist_600.x_test[:30], mnist_600.y_test[:30]
    curves = robustness_curves(tiny_resnet, x, y, {"fgsm": [0.0, 0.1], "contrast": [0, 3]})
    m = measure_model(tiny_resnet, x, y, {"fgsm": 0.1, "contrast": 3}, TopoLipSpec(),
                      baseline_measures=False)
    curves2, topo2, summary2 = [], [], []
    for seed in (0, 1):
        curves2.append(curves.assign(arch="resnet", seed=seed))
        topo2.append(m.layers.assign(arch="resnet", seed=seed))
        summary2.append(m.summary.assign(arch="resnet", seed=seed))
    curves, topo, summary = pd.concat(curves2), pd.concat(topo2), pd.concat(summary2)
    ood = ood_behaviour(ood_scores(tiny_resnet, x, y, load_ood_batches(["digits"], mnist_600,
                                                                         n=20))).assign(
        arch="resnet", seed=0)
    sweep = pd.DataFrame({"arch": ["vit"] * 3, "parameter": ["num_layers"] * 3,
                          "value": ["1", "2", "4"], "value_numeric": [1.0, 2.0, 4.0],
                          "seed": [0] * 3, "test_accuracy": [0.7, 0.8, 0.9],
                          "geometric_mean": [1.1, 1.2, 1.3],
                          "geometric_mean_scale_free": [0.9, 1.0, 1.1]})
    for name, draw in {"curves": lambda: plot_accuracy_curves(curves),
                       "scatter": lambda: plot_topolip_vs_accuracy(summary),
                       "sweep": lambda: plot_sweep(sweep, "vit"),
                       "ood": lambda: plot_ood_behaviour(ood),
                       "layers": lambda: plot_topolip_by_layer(topo)}.items():
        images = []
        for _ in range(2):
            fig = draw()
            images.append(_png(fig))
            plt.close(fig)
        assert images[0] == images[1], name
    with pytest.raises(ValueError, match="no sweep rows for arch 'resnet'"):
        plot_sweep(sweep, "resnet")
    with pytest.raises(ValueError, match=r"lacks column\(s\) \['unit'\]"):
        plot_accuracy_curves(curves.drop(columns="unit"))
    with pytest.raises(ValueError, match="empty"):
        plot_ood_behaviour(ood.head(0))


def test_ood_table_draws_by_set_without_strength(tiny_resnet, mnist_600):
    import matplotlib.pyplot as plt

    ood = {"digits": load_ood_batches(["digits"], mnist_600, n=20)["digits"][0]}
    t = measure_ood(tiny_resnet, mnist_600.x_test[:20], ood).assign(arch="resnet", seed=0)
    fig = plot_topolip_by_layer(t, row="ood_set")
    assert fig.axes[0].get_title() == "digits: raw"
    plt.close(fig)


# --- readable, honest figures (labels, clipped bands, flagged points, integer ticks) -------------

def _plain(text: str) -> str:
    """``text`` without its mathtext (``$_L$`` subscripts are markup, not identifiers)."""
    import re

    return re.sub(r"\$[^$]*\$", "", text)


def _all_texts(fig) -> list[str]:
    """Every non-empty text of ``fig``: titles (all three places), labels, ticks, legends,
    annotations."""
    out = [t.get_text() for t in fig.texts]
    for ax in fig.axes:
        out += [ax.get_title(loc=loc) for loc in ("left", "center", "right")]
        out += [ax.get_xlabel(), ax.get_ylabel()]
        out += [t.get_text() for t in (*ax.get_xticklabels(), *ax.get_yticklabels(), *ax.texts)]
        if ax.get_legend() is not None:
            out += [t.get_text() for t in ax.get_legend().get_texts()]
    for leg in fig.legends:
        out += [t.get_text() for t in leg.get_texts()]
    return [t for t in out if t.strip()]


def _verdict_table():
    rows = [("attention-smoother", "vit vs resnet", "gaussian_noise", "end_to_end_scale_free",
             "primary", "log", 0.9, 0.5, 1.4, "contradicted"),
            ("attention-smoother", "vit vs resnet", "fgsm", "end_to_end_scale_free",
             "secondary", "log", -0.3, -0.6, 0.1, "inconclusive"),
            ("attention-smoother", "vit vs resnet", "gaussian_noise", "end_to_end",
             "secondary", "log", 2.4, 1.6, 3.3, "contradicted"),
            ("attention-more-robust", "vit vs resnet", "autoattack", "accuracy_drop",
             "primary", "raw", 0.7, 0.1, 1.37, "contradicted"),
            ("attention-more-robust", "attention_stack vs conv_stack", "pgd", "accuracy_drop",
             "secondary", "raw", 0.05, -0.08, 0.18, "inconclusive"),
            ("attention-helps-only-weak", "vit vs resnet", "fgsm vs autoattack",
             "accuracy_drop", "primary", "raw", -0.06, -0.3, 0.18, "inconclusive"),
            ("attention-ood-robust", "vit vs resnet", "photo_patches", "auroc", "primary",
             "raw", 0.53, 0.1, 0.96, "supported"),
            ("smoothness-robustness", "Kendall τ within architecture, accuracy_drop", "pooled",
             "end_to_end_scale_free", "primary", "raw", 0.08, np.nan, np.nan, "inconclusive")]
    return pd.DataFrame(rows, columns=["claim", "comparison", "group", "measure", "role",
                                       "scale", "effect", "low", "high", "verdict"])


def test_verdict_panels_read_as_words_and_tell_their_rows_apart():
    fig = figures.plot_verdicts(_verdict_table())
    try:
        titles = [ax.get_title(loc="left") for ax in fig.axes]
        assert titles == ["Attention is smoother (end-to-end TopoLip)",
                          "Attention is more robust",
                          "Attention helps only against weak attacks",
                          "Attention separates out-of-distribution data better (AUROC)"]
        for ax in fig.axes:
            labels = [_tick(t) for t in ax.get_yticklabels()]
            assert len(set(labels)) == len(labels), labels  # no two rows read the same
        first = [_tick(t) for t in fig.axes[0].get_yticklabels()]
        assert "ViT vs ResNet, Gaussian noise (scale-free)" in first
        assert "ViT vs ResNet, Gaussian noise (raw)" in first
        # the primary row, and only it, is bold in each panel
        for ax in fig.axes:
            bold = [t.get_text() for t in ax.get_yticklabels() if t.get_fontweight() == "bold"]
            assert len(bold) == 1, bold
        assert [_tick(t) for t in fig.axes[0].get_yticklabels()
                if t.get_fontweight() == "bold"] == ["ViT vs ResNet, Gaussian noise (scale-free)"]
        texts = _all_texts(fig)
        assert not any("autoattack" in t.lower() for t in texts), texts
        assert "ViT vs ResNet, FGSM vs APGD-CE+T" in [
            _tick(t) for t in fig.axes[2].get_yticklabels()]
        assert not any("_" in _plain(t) for t in texts), [t for t in texts if "_" in t]
        # each panel says which side favours attention: lower (left) but for AUROC (right)
        cues = [[t.get_text() for t in ax.texts] for ax in fig.axes]
        assert cues[0] == ["← favours attention"] and cues[1] == ["← favours attention"]
        assert cues[3] == ["favours attention →"]
        assert cues[2][0].startswith("←")
    finally:
        plt.close(fig)


def _tick(t) -> str:
    """A tick label's text on one line (long labels wrap after the comparison's comma)."""
    return t.get_text().replace(",\n", ", ")


def test_radius_rows_get_their_own_panel_whose_right_side_favours_attention():
    extra = pd.DataFrame([("attention-more-robust", "vit vs resnet", "autoattack_radius",
                           "median_radius", "primary", "log", -1.5, -1.8, -1.2, "contradicted"),
                          ("attention-helps-only-weak", "vit vs resnet",
                           "fgsm_radius vs autoattack_radius", "log_median_radius", "secondary",
                           "log", -0.2, -0.4, 0.0, "inconclusive")],
                         columns=_verdict_table().columns)
    table = pd.concat([_verdict_table(), extra], ignore_index=True)
    fig = figures.plot_verdicts(table)
    try:
        titles = [ax.get_title(loc="left") for ax in fig.axes]
        assert "Attention is more robust: minimal radius" in titles
        assert "Attention is more robust: fixed budget" in titles
        radius = fig.axes[titles.index("Attention is more robust: minimal radius")]
        assert [t.get_text() for t in radius.texts] == ["favours attention →"]
        assert [_tick(t) for t in radius.get_yticklabels()] == [
            "ViT vs ResNet, median radius, APGD-CE+T"]
        fixed = fig.axes[titles.index("Attention is more robust: fixed budget")]
        assert [t.get_text() for t in fixed.texts] == ["← favours attention"]
        rival = fig.axes[titles.index("Attention helps only against weak attacks: minimal "
                                      "radius")]
        assert rival.texts[0].get_text().endswith("→")
        assert [_tick(t) for t in rival.get_yticklabels()] == ["ViT vs ResNet, FGSM vs APGD-CE+T"]
    finally:
        plt.close(fig)


def test_verdict_intervals_of_fractions_stay_within_what_a_difference_can_take():
    fig = figures.plot_verdicts(_verdict_table())
    try:
        ax = fig.axes[1]  # accuracy drop: one interval reaches 1.37 in the table
        xs = np.concatenate([seg[:, 0] for c in ax.collections
                             for seg in getattr(c, "get_segments", list)()])
        assert xs.max() <= 1.0 + 1e-12 and xs.max() > 0.9
        assert any(line.get_marker() == ">" for line in ax.get_lines())  # the clipped end
    finally:
        plt.close(fig)


def _curves(square_strengths=(0.0, 0.05)):
    rows = []
    for arch in ("vit", "resnet"):
        for seed in range(3):
            for kind, strengths in (("fgsm", (0.0, 0.05, 0.1)), ("autoattack", (0.0, 0.05)),
                                    ("square", square_strengths)):
                for s in strengths:
                    # accuracies near 1 with a large spread: mean + sd lies above 1
                    acc = min(1.0, 0.99 - s * (5 + 3 * seed) + (0.0 if seed else -0.3))
                    rows.append({"arch": arch, "seed": seed, "perturbation": kind,
                                 "strength": s, "unit": "eps", "accuracy": max(acc, 0.0)})
    return pd.DataFrame(rows)


def test_accuracy_bands_stay_in_the_unit_interval():
    t = _curves()
    spread = t.groupby(["perturbation", "arch", "strength"])["accuracy"].agg(["mean", "std"])
    assert ((spread["mean"] + spread["std"]) > 1).any()  # the data would push a band above 1
    fig = plot_accuracy_curves(t)
    try:
        for ax in fig.axes:
            if not ax.get_visible():
                continue
            ys = [p.vertices[:, 1] for c in ax.collections
                  if isinstance(c, matplotlib.collections.PolyCollection)
                  for p in c.get_paths()]
            ys += [np.asarray(line.get_ydata(), float) for line in ax.get_lines()]
            ys += [seg[:, 1] for c in ax.collections
                   if isinstance(c, matplotlib.collections.LineCollection)
                   for seg in c.get_segments()]
            ys = np.concatenate([y for y in ys if len(y)])
            assert ys.max() <= 1.0 + 1e-12 and ys.min() >= -1e-12, ax.get_title()
            assert ax.get_ylim()[0] <= 0.0 and ax.get_ylim()[1] >= 1.0
    finally:
        plt.close(fig)


def test_a_kind_at_one_strength_is_drawn_as_points_and_apgd_is_named():
    fig = plot_accuracy_curves(_curves())
    try:
        titles = [ax.get_title() for ax in fig.axes if ax.get_visible()]
        assert titles == ["FGSM", "APGD-CE + APGD-T", "Square (black box)"]
        square = fig.axes[2]
        data = [line for line in square.get_lines() if len(line.get_xdata()) >= 2]
        assert data, "no marks drawn for Square"
        for line in data:
            assert line.get_linestyle() in ("None", "none", " ", ""), "Square joined by a line"
            assert line.get_marker() not in (None, "None", "none", "")
        assert any(isinstance(c, matplotlib.collections.LineCollection)
                   for c in square.collections)  # whiskers (three seeds)
        # FGSM at two nonzero strengths stays a line
        assert any(line.get_linestyle() not in ("None", "none", " ", "")
                   and len(line.get_xdata()) >= 3 for line in fig.axes[0].get_lines())
    finally:
        plt.close(fig)


def test_models_within_the_noise_floor_are_hollow_and_counted():
    t = pd.DataFrame({"arch": ["vit", "vit", "vit", "resnet", "resnet", "resnet"],
                      "perturbation": ["fgsm"] * 6,
                      "end_to_end_scale_free": [1.0, 2.0, 3.0, 4.0, 5.0, 6.0],
                      "accuracy_drop": [0.1, 0.2, 0.3, 0.4, 0.5, 0.6],
                      "end_to_end_flag": ["input displacement within the noise floor", "", "",
                                          np.nan, "input displacement within the noise floor",
                                          ""]})
    fig = plot_topolip_vs_accuracy(t)
    try:
        ax = fig.axes[0]
        hollow = [c for c in ax.collections if len(c.get_offsets())
                  and np.allclose(c.get_facecolors()[:, 3], 0)]
        assert sum(len(c.get_offsets()) for c in hollow) == 2
        filled = sum(len(c.get_offsets()) for c in ax.collections) - 2
        assert filled == 4
        legend = [x.get_text() for x in fig.legends[0].get_texts()]
        assert "left out of the test (noise floor): 2 of 6" in legend
        assert ax.get_title().endswith("(n = 4)")
    finally:
        plt.close(fig)
    fig = plot_topolip_vs_accuracy(t.drop(columns="end_to_end_flag"))
    try:
        assert fig.axes[0].get_title().endswith("(n = 6)")
        assert not any("noise floor" in x.get_text() for x in fig.legends[0].get_texts())
    finally:
        plt.close(fig)


def _integer_ticks(fig, ax) -> list[float]:
    fig.canvas.draw()
    lo, hi = sorted(ax.get_xlim())
    return [v for v in ax.get_xticks() if lo <= v <= hi]


def test_depth_axes_have_integer_ticks_only():
    t = _layer_table()
    t = t[t["depth"] <= 2]  # two probes: matplotlib would tick 1, 1.25, 1.5, ...
    noise = t.assign(delta_scale_free=1.0, noise_floor_scale_free=0.5)
    for fig in (plot_topolip_by_layer(t), figures.plot_noise_floor(noise)):
        try:
            for ax in fig.axes:
                if ax.get_visible():
                    ticks = _integer_ticks(fig, ax)
                    assert ticks and all(float(v).is_integer() for v in ticks), ticks
        finally:
            plt.close(fig)


def test_training_curves_have_one_legend_naming_every_line():
    h = pd.DataFrame({"arch": ["vit"] * 2 + ["resnet"] * 2, "seed": [0] * 4,
                      "epoch": [1, 2] * 2, "loss": [2.0, 1.0, 2.2, 1.5],
                      "train_accuracy": [0.90, 0.92, 0.91, 0.93]})
    fig = figures.plot_training_curves(h)
    try:
        assert len(fig.legends) == 1
        assert all(ax.get_legend() is None for ax in fig.axes)
        assert sorted(t.get_text() for t in fig.legends[0].get_texts()) == ["ResNet", "ViT"]
        # every drawn line's colour is one the legend names
        legend_colors = {mcolors.to_hex(hd.get_color()) for hd in fig.legends[0].legend_handles}
        for ax in fig.axes:
            for line in ax.get_lines():
                if len(line.get_xdata()):
                    assert mcolors.to_hex(line.get_color()) in legend_colors
        lo, hi = fig.axes[1].get_ylim()  # accuracy axis anchored: a 2-point wiggle stays small
        assert lo <= 0.0 and hi >= 1.0
    finally:
        plt.close(fig)


def test_no_figure_prints_a_raw_identifier():
    sweep = pd.DataFrame({"arch": ["vit"] * 3, "parameter": ["num_layers"] * 3,
                          "value": ["1", "2", "4"], "value_numeric": [1.0, 2.0, 4.0],
                          "seed": [0] * 3, "test_accuracy": [0.95, 0.96, 0.95],
                          "end_to_end": [1.1, 1.2, 1.3], "end_to_end_scale_free": [0.9, 1, 1.1],
                          "parameters": [1000, 2000, 4000], "accuracy_drop": [0.3, 0.31, 0.3]})
    summary = pd.DataFrame({"arch": ["vit", "resnet", "vit"], "perturbation": ["fgsm"] * 3,
                            "end_to_end": [1.0, 2, 3], "accuracy_drop": [0.1, 0.2, 0.3]})
    for fig in (plot_sweep(sweep, "vit", measures=("end_to_end", "end_to_end_scale_free")),
                figures.plot_size_sweep(sweep),
                plot_topolip_vs_accuracy(summary, measure="end_to_end"),
                figures.plot_verdicts(_verdict_table())):
        try:
            texts = _all_texts(fig)
            bad = [t for t in texts if "_" in _plain(t)]
            assert not bad, bad
        finally:
            plt.close(fig)
    fig = plot_sweep(sweep, "vit", measures=("end_to_end", "end_to_end_scale_free"))
    try:
        assert fig.axes[0].get_ylabel() == "end-to-end raw TopoLip"
        assert fig.axes[1].get_ylabel() == "end-to-end scale-free TopoLip"
        lo, hi = fig.axes[2].get_ylim()  # 0.95, 0.96, 0.95: not drawn as a V across the panel
        assert hi - lo >= figures.MIN_FRACTION_SPAN - 1e-12 and -0.02 <= lo and hi <= 1.02
    finally:
        plt.close(fig)


def test_ood_whiskers_stay_in_the_unit_interval():
    t = pd.DataFrame({"arch": ["vit"] * 4, "seed": [0, 1, 0, 1],
                      "dataset": ["in_distribution"] * 2 + ["digits"] * 2,
                      "mean_confidence": [0.99, 0.6, 0.99, 0.2],
                      "auroc": [np.nan, np.nan, 0.99, 0.5]})
    fig = plot_ood_behaviour(t)
    try:
        for ax in fig.axes:
            ys = np.concatenate([np.asarray(line.get_ydata(), float)
                                 for line in ax.get_lines()])
            assert np.nanmax(ys) <= 1.0 + 1e-12
    finally:
        plt.close(fig)


def test_effective_robustness_draws_every_model_and_the_fit_through_its_predictions():
    from topolip.evidence.claims import effective_radius

    acc = [0.90, 0.95, 0.97, 0.99, 0.93, 0.96]
    rad = [0.010, 0.030, 0.020, 0.080, 0.015, 0.050]
    rs = pd.DataFrame({"arch": ["vit", "resnet", "attention_stack"] * 2,
                       "seed": [0, 0, 0, 1, 1, 1], "method": "autoattack",
                       "clean_accuracy": acc, "median_radius": rad, "n_images": 200})
    eff = effective_radius(rs)
    fig = figures.plot_effective_robustness(rs, eff)
    left, right = fig.axes[:2]
    assert sum(len(c.get_offsets()) for c in left.collections
               if hasattr(c, "get_offsets") and c.get_offsets().shape[1] == 2) >= 6
    (line,) = [ln for ln in right.get_lines() if ln.get_linestyle() == "--"]
    x = np.log(np.asarray(acc) / (1 - np.asarray(acc)))
    slope, intercept = np.polyfit(x, np.log(rad), 1)
    xs, ys = line.get_data()
    np.testing.assert_allclose(np.log(ys), intercept + slope * xs, rtol=1e-9, atol=1e-9)
    assert right.get_yscale() == "log"
    assert "logit" in right.get_xlabel()
    plt.close(fig)
    with pytest.raises(ValueError, match="no row for method 'fgsm'"):
        figures.plot_effective_robustness(rs, eff, method="fgsm")


def test_effective_robustness_draws_a_run_where_no_model_keeps_half_its_images():
    rs = pd.DataFrame({"arch": ["vit", "resnet"], "seed": 0, "method": "autoattack",
                       "clean_accuracy": [0.3, 0.4], "median_radius": [0.0, 0.0]})
    fig = figures.plot_effective_robustness(rs, pd.DataFrame())
    assert "no finite positive median radius" in " ".join(t.get_text() for t in fig.axes[1].texts)
    plt.close(fig)


def test_literature_attention_draws_the_real_token_medians_per_vit():
    from pathlib import Path

    d = Path(__file__).parent / "expect" / "literature"
    growth, castin, real = (pd.read_csv(d / f"{n}.csv") for n in
                            ("lit_attention_growth", "lit_castin", "lit_castin_real"))
    fig = figures.plot_literature_attention(growth, castin, real)
    right = fig.axes[1]
    green = [ln for ln in right.get_lines() if ln.get_marker() == "s"]
    assert len(green) == real["seed"].nunique()
    med = real.groupby(["seed", "n"])["measured"].median()
    for line, seed in zip(green, sorted(real["seed"].unique()), strict=True):
        xs, ys = line.get_data()
        np.testing.assert_allclose(ys, med.loc[seed].loc[list(xs)].to_numpy(), rtol=1e-12)
    (guide,) = [ln for ln in right.get_lines() if ln.get_linestyle() == "-."]
    xs, ys = (np.asarray(a, float) for a in guide.get_data())
    np.testing.assert_allclose(np.diff(np.log(ys)) / np.diff(np.log(xs)), 0.25, rtol=1e-9)
    assert "real tokens" in right.get_title()
    plt.close(fig)
    # without the real-token table the panel is the worst case alone
    fig = figures.plot_literature_attention(growth, castin)
    assert not [ln for ln in fig.axes[1].get_lines() if ln.get_marker() == "s"]
    plt.close(fig)
    with pytest.raises(ValueError, match="lit_castin_real"):
        figures.plot_literature_attention(growth, castin, real.drop(columns="measured"))


def test_bounds_figure_has_one_legend_and_no_colour_of_a_family():
    rows = [dict(arch=a, seed=0, perturbation=k, depth=d, layer=f"l{d}",
                 ratio=float("nan") if d == 0 else 0.5, two_lip=float("nan") if d == 0 else 4.0,
                 bottleneck=0.1 * (d + 1), envelope=0.3 * (d + 1), envelope_chain=0.3 * 3 ** d)
            for a in ("vit", "resnet") for k in ("fgsm", "pgd", "gaussian_noise")
            for d in range(4)]
    fig = figures.plot_bounds_vs_measured(pd.DataFrame(rows))
    try:
        assert all(ax.get_legend() is None for ax in fig.axes) and len(fig.legends) == 1
        texts = [t.get_text() for t in fig.legends[0].get_texts()]
        assert {"FGSM", "PGD", "Gaussian noise"} <= set(texts)
        family = {mcolors.to_hex(c) for c in ARCH_COLORS.values()}
        drawn = {mcolors.to_hex(ln.get_color()) for ax in fig.axes for ln in ax.get_lines()}
        assert len(drawn) == 3 and not drawn & family     # one colour per kind, none a family's
        assert "#000000" not in drawn                     # no unlabelled black bound lines
    finally:
        plt.close(fig)
