"""Figures read at page width: palette families, human labels, font sizes, widths."""

import colorsys

import matplotlib
import matplotlib.colors as mcolors
import matplotlib.pyplot as plt
import numpy as np
import pandas as pd
import pytest

from topolip.experiments.measure import (
    measure_model,
)
from topolip.experiments.ood import (
    measure_ood,
    ood_behaviour,
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
    ood = ood_behaviour(tiny_resnet, x, y, load_ood_batches(["digits"], mnist_600, n=20)).assign(
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
