"""The display tables of the chapters (topolip.report.topolip_tables for 02 and 03,
robustness_tables for 04, verdict_tables for 08, measure_tables for 09): which rows, which
columns, what the cells say."""

import math

import pandas as pd
import pytest

from topolip import roster
from topolip.evidence.masking import MASKING_CHECKS
from topolip.report import measure_tables, robustness_tables, topolip_tables, verdict_tables
from topolip.report.format import MISSING, masking_check_label, show_table

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


def test_noise_floor_share_counts_only_layers_with_a_ratio():
    t = pd.DataFrame({"arch": ["vit"] * 4 + ["resnet"] * 4,
                      "perturbation": (["fgsm"] * 2 + ["gaussian_noise"] * 2) * 2,
                      "depth": [0, 1, 0, 1, 1, 2, 1, 2],
                      "flag": ["floor", "", "", "floor", "floor", "floor", "", ""]})
    share = topolip_tables.noise_floor_share_table(t).set_index("architecture")
    assert share.columns.tolist() == ["FGSM", "Gaussian noise"]
    assert share.loc["ViT"].tolist() == [0.0, 1.0]       # the flagged input row is not a ratio
    assert share.loc["ResNet"].tolist() == [1.0, 0.0]


def test_architecture_means_are_geometric_and_count_seeds():
    summary = pd.DataFrame({"perturbation": ["fgsm"] * 3, "arch": ["vit", "vit", "resnet"],
                            "seed": [0, 1, 0], "end_to_end_scale_free": [0.5, 2.0, 3.0],
                            "end_to_end": [1.0, 9.0, 1.0],
                            "geometric_mean_scale_free": [4.0, 1.0, 1.0]})
    table = pd.DataFrame({"arch": ["vit", "vit", "resnet", "resnet"], "depth": [0, 6, 0, 4]})
    t = topolip_tables.architecture_means_table(summary, table).set_index("architecture")
    assert t.loc["ViT", "Δˢᶠ_L / Δˢᶠ_0 (primary)"] == pytest.approx(1.0)
    assert t.loc["ViT", "Δ_L / Δ_0 (raw)"] == pytest.approx(3.0)
    assert t.loc["ViT", "scale-free geometric mean"] == pytest.approx(2.0)
    assert (t.loc["ViT", "L"], t.loc["ViT", "seeds"]) == (6, 2)
    assert (t.loc["ResNet", "L"], t.loc["ResNet", "seeds"]) == (4, 1)
    with pytest.raises(ValueError, match="TopoLip table lacks"):
        topolip_tables.architecture_means_table(summary, table.drop(columns="depth"))


def test_attack_ladder_names_models_and_attacks():
    ladder = pd.DataFrame({"arch": ["vit", "resnet"], "perturbation": ["autoattack", "square"],
                           "n_models": [5, 5], "accuracy_mean": [0.1, 0.3],
                           "accuracy_sd": [0.02, NAN], "accuracy_drop_mean": [0.8, 0.6],
                           "n_flagged": [0, 2]})
    t = robustness_tables.attack_ladder_table(ladder)
    assert t["model"].tolist() == ["ViT", "ResNet"]
    assert t["attack"].tolist() == [roster.label("autoattack"), roster.label("square")]
    assert t["seeds failing a masking check"].tolist() == [0, 2]
    html = show_table(t, digits=2, na_reason="one seed: no spread").data
    assert "one seed: no spread" in html and "ResNet" in html


def test_masking_table_is_one_row_per_model_in_check_order():
    checks = list(MASKING_CHECKS)[:2]
    masking = pd.DataFrame({"arch": ["vit", "vit", "resnet", "resnet"], "seed": [0, 0, 0, 0],
                            "check": checks[::-1] * 2, "passed": [True, False, True, True]})
    t = robustness_tables.masking_table(masking)
    assert t.columns.tolist() == ["model", "seed", *map(masking_check_label, checks)]
    rows = {r[0]: r[2:] for r in t.values.tolist()}
    assert rows == {"ViT": ["FAIL", "pass"], "ResNet": ["pass", "pass"]}


def test_smoothness_tau_table_words_the_pooled_row():
    smooth = pd.DataFrame({"level": ["within", "between"], "group": ["pooled", "pgd"],
                           "response": ["accuracy_drop", "median_radius"],
                           "role": ["primary", "context"], "n": [20, 4], "tau": [0.3, -0.2],
                           "pvalue": [0.04, 0.7], "p_adjusted": [0.04, NAN]})
    t = robustness_tables.smoothness_tau_table(smooth)
    assert t["perturbation"].tolist() == ["all kinds", "PGD"]
    assert t["response"].tolist() == ["accuracy drop", "median radius"]
    assert t["Kendall τ"].tolist() == [0.3, -0.2]
