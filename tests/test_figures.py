"""Figures read at page width: palette families, human labels, font sizes, widths."""

import colorsys

import matplotlib
import matplotlib.colors as mcolors
import matplotlib.pyplot as plt
import numpy as np
import pandas as pd
import pytest

from topolip import figures
from topolip.report import ARCH_COLORS, ARCH_LABELS

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
