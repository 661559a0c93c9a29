"""The display tables of 08_verdict and 09_measures (topolip.report.verdict_tables and
topolip.report.measure_tables): which rows, which columns, what the cells say."""

import math

import pandas as pd
import pytest

from topolip.report import measure_tables, verdict_tables
from topolip.report.format import MISSING, show_table

NAN = math.nan


def _verdicts():
    base = {"coverage": 0.95, "p_adjusted": 0.01, "n_pairs": 5, "n_excluded": 0, "flag": "",
            "comparison": "vit vs resnet"}
    rows = [
        # a TopoLip primary on the log scale
        dict(base, claim="attention-smoother", verdict="contradicted", group="gaussian_noise",
             measure="end_to_end_scale_free", role="primary", scale="log", effect=1.9,
             low=1.5, high=2.3, ratio=6.7628, ratio_low=4.7432, ratio_high=9.6428),
        # a secondary on the difference scale, one not tested (no interval)
        dict(base, claim="attention-more-robust", verdict="contradicted", group="fgsm",
             measure="accuracy_drop", role="secondary", scale="difference", effect=0.3,
             low=0.1, high=0.5, ratio=NAN, ratio_low=NAN, ratio_high=NAN, coverage=0.99),
        dict(base, claim="attention-more-robust", verdict="floor/ceiling", group="pgd",
             measure="accuracy_drop", role="secondary", scale="difference", effect=0.05,
             low=NAN, high=NAN, ratio=NAN, ratio_low=NAN, ratio_high=NAN, p_adjusted=NAN),
        dict(base, claim="attention-more-robust", verdict="supported", group="autoattack_radius",
             measure="median_radius", role="primary", scale="log", effect=0.2, low=0.1,
             high=0.3, ratio=1.2214, ratio_low=1.1052, ratio_high=1.3499, n_excluded=1),
        # not a ladder row: a corruption of the robustness claim
        dict(base, claim="attention-more-robust", verdict="inconclusive", group="contrast",
             measure="accuracy_drop", role="secondary", scale="difference", effect=-0.02,
             low=-0.1, high=0.06, ratio=NAN, ratio_low=NAN, ratio_high=NAN),
        dict(base, claim="envelope", verdict="supported", group="all", measure="bottleneck",
             role="check", scale="difference", effect=0.5, low=NAN, high=NAN, ratio=NAN,
             ratio_low=NAN, ratio_high=NAN),
    ]
    return pd.DataFrame(rows)


def _power():
    return pd.DataFrame({"claim": ["attention-smoother", "attention-more-robust"],
                         "comparison": ["vit vs resnet"] * 2,
                         "group": ["gaussian_noise", "autoattack_radius"],
                         "text": ["1.4× or more", "1.2× or more"],
                         "power_at_target": [0.93, 0.88]})


def test_primary_table_has_one_row_per_primary_with_its_power():
    t = verdict_tables.primary_table(_verdicts(), _power())
    assert t.columns.tolist() == ["claim", "verdict", "comparison", "effect (95% interval)", "p",
                                  "pairs", "dropped", "detectable (80% power)",
                                  "power at target"]
    assert t["claim"].tolist() == [
        "Attention is smoother (end-to-end TopoLip)", "Attention is more robust"]
    assert t["comparison"].tolist() == ["ViT vs ResNet, Gaussian noise",
                                        "ViT vs ResNet, median minimal radius (APGD-CE + APGD-T)"]
    assert t["effect (95% interval)"].tolist() == ["6.76 [4.74, 9.64]", "1.22 [1.11, 1.35]"]
    assert t["power at target"].tolist() == [0.93, 0.88]
    assert t["dropped"].tolist() == [0, 1]


def test_ladder_table_keeps_the_ladder_and_signs_differences():
    t = verdict_tables.ladder_table(_verdicts())
    assert t["comparison"].str.endswith("Gaussian noise").sum() == 0
    assert len(t) == 3                      # fgsm, pgd, the radius; not contrast, not smoother
    assert t["effect (interval)"].tolist() == ["+0.300 [+0.100, +0.500]", "+0.050",
                                               "1.22 [1.11, 1.35]"]
    assert t.columns[-2:].tolist() == ["deciding p", "flag"]


def test_every_row_table_leaves_out_checks_and_names_measures():
    t = verdict_tables.every_row_table(_verdicts())
    assert len(t) == 5 and "envelope" not in t["claim"].tolist()
    assert t["measure"].iloc[0] == "end-to-end scale-free TopoLip"
    assert t["effect (interval)"].iloc[4] == "-0.02 [-0.1, 0.06]"


def test_a_missing_effect_is_spelled_like_every_missing_value():
    v = _verdicts().iloc[[2]].assign(effect=NAN)
    assert verdict_tables.every_row_table(v)["effect (interval)"].tolist() == [MISSING]


def test_verdict_tables_name_a_missing_column():
    with pytest.raises(ValueError, match=r"lacks column\(s\) \['scale'"):
        verdict_tables.every_row_table(_verdicts().drop(columns="scale"))
    with pytest.raises(ValueError, match="power table lacks"):
        verdict_tables.primary_table(_verdicts(), _power().drop(columns="text"))


def test_shown_tables_keep_their_labels():
    html = show_table(verdict_tables.primary_table(_verdicts(), _power()), digits=3).data
    assert "detectable (80% power)" in html and "power_at_target" not in html


def _study():
    return pd.DataFrame({
        "measure": ["e2e", "norm", "e2e", "e2e", "norm", "norm"],
        "label": ["TopoLip", "weight norm"] * 1 + ["TopoLip"] * 2 + ["weight norm"] * 2,
        "role": ["primary", "primary", "secondary", "secondary", "secondary", "secondary"],
        "perturbation": ["all", "all", "gaussian_noise", "fgsm", "gaussian_noise", "fgsm"],
        "tau_within": [0.5, 0.2, 0.6, 0.4, 0.3, 0.1], "p_within": [0.01, 0.2, 0, 0, 0, 0],
        "p_within_holm": [0.01, 0.4, 0, 0, 0, 0], "tau_pooled": [0.6, 0.1, 0, 0, 0, 0],
        "diff": [NAN, 0.3, NAN, NAN, NAN, NAN], "diff_low": [NAN, 0.05, NAN, NAN, NAN, NAN],
        "diff_high": [NAN, 0.55, NAN, NAN, NAN, NAN],
        "p_diff_holm": [NAN, 0.03, NAN, NAN, NAN, NAN],
        "comparison": ["", "TopoLip better", "", "", "", ""]})


def test_measure_primary_table():
    t = measure_tables.primary_table(_study())
    assert t["measure"].tolist() == ["TopoLip", "weight norm"]
    assert t["τ(TopoLip) − τ(measure)"].tolist() == [MISSING, "+0.30 [+0.05, +0.55]"]
    assert t["verdict"].tolist() == ["", "TopoLip better"]


def test_measure_kind_table_is_measures_by_kinds():
    t = measure_tables.kind_table(_study())
    assert t.columns.tolist() == ["measure", "Gaussian noise", "FGSM"]
    assert t.set_index("measure").loc["weight norm", "FGSM"] == pytest.approx(0.1)


def test_granulated_table_averages_axes_then_kinds():
    gran = pd.DataFrame({"measure": ["e2e"] * 4 + ["norm"],
                         "arch": ["vit", "vit", "vit", "resnet", "vit"],
                         "perturbation": ["fgsm", "fgsm", "pgd", "fgsm", "fgsm"],
                         "tau": [0.2, 0.4, 0.0, NAN, -0.5]})
    t = measure_tables.granulated_table(gran, _study()).set_index("measure")
    # ViT, TopoLip: fgsm axes 0.2 and 0.4 → 0.3, pgd 0.0; mean of kinds 0.15
    assert t.loc["TopoLip", "ViT"] == pytest.approx(0.15)
    assert t.loc["weight norm", "ViT"] == pytest.approx(-0.5)
    assert "ResNet" not in t.columns        # its only axis had too few models
