"""Claims registry and checks: verdicts follow the numbers, in both directions, with intervals,
Holm's correction and the minimum number of seeds."""

from pathlib import Path

import numpy as np
import pandas as pd
import pytest

from topolip.claims import (
    CHECKS,
    Claim,
    evaluate,
    family_below_counts,
    load_claims,
    most_robust_vs_smoothest,
    smoothness_table,
    verdict_counts,
    with_options,
)

ROOT = Path(__file__).resolve().parents[1]
SMOOTH = Claim("smooth", "attention is smoother", "test", "lower_topolip",
               {"measure": "end_to_end_scale_free", "resamples": "none"})


def summary(vit, resnet, group="fgsm", column="perturbation"):
    rows = [{"arch": a, "seed": s, column: group, "n_images": 100, "end_to_end_scale_free": v}
            for a, values in (("vit", vit), ("resnet", resnet)) for s, v in enumerate(values)]
    return {"topolip_summary": pd.DataFrame(rows)}


@pytest.mark.parametrize(("vit", "resnet", "expected"), [
    ([1.0, 1.1, 0.9], [2.0, 2.1, 1.9], "supported"),       # paired differences -1 each
    ([2.0, 2.2, 2.1], [1.0, 1.2, 1.1], "contradicted"),
    ([1.0, 2.0, 1.5], [1.4, 1.6, 1.5], "inconclusive"),    # differences -0.4, 0.4, 0
    ([1.0, 1.1], [2.0, 2.1], "not enough seeds"),          # decisive-looking, but 2 seeds
    ([1.0], [2.0], "not enough seeds"),
])
def test_lower_topolip_verdicts(vit, resnet, expected):
    v = evaluate([SMOOTH], summary(vit, resnet))
    assert v["verdict"].tolist() == [expected]
    assert v.loc[0, "attention"] == pytest.approx(np.mean(vit))
    assert v.loc[0, "convolution"] == pytest.approx(np.mean(resnet))
    assert v.loc[0, "effect"] == pytest.approx(np.mean(vit) - np.mean(resnet))
    assert v.loc[0, "n_seeds"] == f"{len(vit)}/{len(resnet)}"


def test_paired_interval_is_the_student_interval_of_the_seed_differences():
    # no image level: the interval is mean(d) ± t_{2, 0.975} sd(d)/sqrt(3), up to the Monte Carlo
    # error of the bootstrap standard error
    vit, resnet = [1.0, 1.3, 0.8], [2.0, 2.1, 1.9]
    d = np.subtract(vit, resnet)
    half = 4.302652729911275 * d.std(ddof=1) / np.sqrt(3)
    v = evaluate([SMOOTH], summary(vit, resnet)).iloc[0]
    assert v["low"] == pytest.approx(d.mean() - half, rel=0.05)
    assert v["high"] == pytest.approx(d.mean() + half, rel=0.05)


def test_holm_correction_spans_the_comparisons_of_a_claim():
    # two groups with the same moderate evidence: Holm doubles the smaller p-value
    t = pd.concat([summary([1.0, 1.2, 0.7], [1.6, 1.5, 1.4], g)["topolip_summary"]
                   for g in ("fgsm", "pgd")], ignore_index=True)
    v = evaluate([SMOOTH], {"topolip_summary": t})
    assert len(v) == 2
    p = v["pvalue"].to_numpy()
    assert np.allclose(np.sort(v["p_adjusted"]), np.maximum.accumulate(
        np.sort(p) * np.array([2, 1])).clip(max=1))
    assert (v["p_adjusted"] >= v["pvalue"]).all()


def test_image_resamples_widen_the_interval_and_pair_by_seed():
    tables = summary([1.0, 1.1, 0.9], [2.0, 2.1, 1.9])
    rng = np.random.default_rng(0)
    rows = []
    for arch, centre in (("vit", 1.0), ("resnet", 2.0)):
        for s in range(3):
            for b in range(20):
                rows.append({"arch": arch, "seed": s, "group": "fgsm",
                             "measure": "end_to_end_scale_free", "resample": b,
                             "value": centre + rng.normal(0, 0.8)})
    tables["resamples"] = pd.DataFrame(rows)
    seeds_only = evaluate([SMOOTH], tables).iloc[0]
    with_images = evaluate([Claim("s", "x", "t", "lower_topolip")], tables).iloc[0]
    assert (with_images["high"] - with_images["low"]) > 2 * (seeds_only["high"] - seeds_only["low"])
    assert "paired by seed, 20 image resamples" in with_images["detail"]


def test_missing_architecture_gives_no_verdict_and_nan_drops_the_seed():
    tables = summary([1.0, 1.1, 0.9], [2.0, 2.1, 1.9])
    only_vit = {"topolip_summary": tables["topolip_summary"].query("arch == 'vit'")}
    assert evaluate([SMOOTH], only_vit).empty
    tables["topolip_summary"].loc[0, "end_to_end_scale_free"] = float("nan")
    v = evaluate([SMOOTH], tables).iloc[0]
    assert v["n_seeds"] == "2/3" and v["verdict"] == "not enough seeds"


def test_accuracy_drop_and_envelope_checks():
    rows = [{"arch": arch, "seed": s, "perturbation": "fgsm", "n_images": 500,
             "accuracy_drop": drop + 0.01 * s}
            for arch, drop in (("vit", 0.1), ("resnet", 0.4)) for s in range(3)]
    res = pd.DataFrame([{"arch": r["arch"], "seed": r["seed"], "group": "fgsm",
                         "measure": "accuracy_drop", "resample": b,
                         "value": r["accuracy_drop"] + 0.01 * (b - 1)}
                        for r in rows for b in range(3)])
    robust = Claim("robust", "attention is more robust", "test", "smaller_accuracy_drop")
    env = Claim("env", "envelope", "test", "envelope_holds")
    topo = pd.DataFrame({"bottleneck": [0.5, 0.2], "envelope": [1.0, 1.0]})
    v = evaluate([robust, env], {"topolip_summary": pd.DataFrame(rows), "resamples": res,
                                 "topolip": topo})
    assert v["verdict"].tolist() == ["supported", "supported"]
    assert v.loc[0, "attention"] == pytest.approx(0.11)
    topo.loc[1, "bottleneck"] = 1.1
    assert evaluate([env], {"topolip": topo})["verdict"].tolist() == ["contradicted"]


def test_registry_loads_and_rejects_bad_entries(tmp_path):
    claims = load_claims(ROOT / "data/claims.yml")
    assert {c.check for c in claims} <= set(CHECKS)
    assert "envelope" in {c.id for c in claims}
    bad = tmp_path / "c.yml"
    bad.write_text("- {id: a, statement: s, source: x, check: nope}\n")
    with pytest.raises(ValueError, match="unknown check 'nope'"):
        load_claims(bad)
    bad.write_text("- {id: a, statement: s}\n")
    with pytest.raises(ValueError, match=r"lacks \['source', 'check'\]"):
        load_claims(bad)


def test_ood_auroc_higher_is_the_claim():
    ood = pd.DataFrame({"arch": ["vit"] * 3 + ["resnet"] * 3 + ["vit"], "seed": [0, 1, 2] * 2 + [0],
                        "dataset": ["digits"] * 6 + ["in_distribution"], "n": 1000,
                        "auroc": [0.9, 0.92, 0.91, 0.6, 0.62, 0.61, float("nan")]})
    res = pd.DataFrame(columns=["arch", "seed", "group", "measure", "resample", "value"])
    c = Claim("ood", "attention separates OOD better", "test", "higher_ood_auroc")
    v = evaluate([c], {"ood_behaviour": ood, "ood_resamples": res})
    assert v[["comparison", "group", "verdict"]].values.tolist() == [
        ["vit vs resnet", "digits", "supported"]]


def test_smoothness_is_tested_within_kinds_and_stratified():
    rng = np.random.default_rng(0)
    rows = []
    for kind, slope in (("fgsm", 1.0), ("blur", -1.0)):
        for arch in ("vit", "resnet", "attention_stack", "conv_stack"):
            for s in range(3):
                t = rng.random()
                rows.append({"arch": arch, "seed": s, "perturbation": kind,
                             "end_to_end_scale_free": t, "accuracy_drop": slope * t,
                             "relative_drop": slope * t, "accuracy_clean": rng.random()})
    summ = pd.DataFrame(rows)
    table = smoothness_table(summ, n_resamples=999)
    within = table[(table["response"] == "accuracy_drop") & ~table["partial"]]
    assert within.set_index("group").loc["fgsm", "tau"] == pytest.approx(1.0)
    assert within.set_index("group").loc["blur", "tau"] == pytest.approx(-1.0)
    # opposite kinds cancel when stratified, instead of looking like 24 independent points
    assert abs(within.set_index("group").loc["stratified", "tau"]) < 1e-9
    claim = Claim("s", "smooth is robust", "test", "smoothness_predicts_robustness")
    v = evaluate([claim], {"smoothness": table, "topolip_summary": summ}).set_index(
        ["comparison", "group"])
    assert v.loc[("Kendall τ, accuracy_drop", "fgsm"), "verdict"] == "supported"
    assert v.loc[("Kendall τ, accuracy_drop", "blur"), "verdict"] == "contradicted"
    assert v.loc[("Kendall τ, accuracy_drop", "stratified"), "verdict"] == "inconclusive"
    two_seeds = summ[summ["seed"] < 2]
    v2 = evaluate([claim], {"smoothness": smoothness_table(two_seeds, n_resamples=99),
                            "topolip_summary": two_seeds})
    assert set(v2["verdict"]) == {"not enough seeds"}


def test_registry_options_reach_the_check():
    t = summary([2.0, 2.1, 2.2], [1.0, 1.1, 1.2], "digits", "ood_set")["topolip_summary"]
    c = Claim("o", "smoother on OOD", "test", "lower_topolip",
              {"table": "ood_topolip_summary", "group": "ood_set", "resamples": "none"})
    v = evaluate([c], {"ood_topolip_summary": t})
    assert v["verdict"].tolist() == ["contradicted"]
    assert v[["comparison", "group", "measure"]].values.tolist() == [
        ["vit vs resnet", "digits", "end_to_end_scale_free"]]


def test_most_robust_vs_smoothest_per_kind():
    s = pd.DataFrame({"arch": ["vit", "resnet", "attention_stack", "conv_stack"] * 2,
                      "seed": 0, "perturbation": ["fgsm"] * 4 + ["blur"] * 4,
                      "accuracy_drop": [0.5, 0.1, 0.3, 0.2, 0.1, 0.2, 0.3, 0.4],
                      "end_to_end_scale_free": [0.2, 0.9, 0.5, 0.6, 0.1, 0.2, 0.3, 0.4]})
    t = most_robust_vs_smoothest(s).set_index("perturbation")
    assert t.loc["fgsm", ["most_robust", "smoothest", "agree"]].tolist() == ["resnet", "vit", False]
    assert t.loc["blur", "agree"] and t.loc["blur", "vit_smaller_drop"]
    assert not t.loc["fgsm", "vit_smaller_drop"] and t.loc["fgsm", "vit_lower_measure"]


def test_with_options_adds_alpha_without_touching_the_originals():
    claims = load_claims(ROOT / "data" / "claims.yml")
    strict = with_options(claims, alpha=0.01)
    assert [c.id for c in strict] == [c.id for c in claims]
    assert all(c.options["alpha"] == 0.01 for c in strict)
    assert all({k: v for k, v in s.options.items() if k != "alpha"}
               == {k: v for k, v in c.options.items() if k != "alpha"}
               for s, c in zip(strict, claims, strict=True))
    assert all("alpha" not in c.options or c.options["alpha"] != 0.01 for c in claims)


def test_verdict_counts_text():
    v = pd.DataFrame({"claim": ["a"] * 4 + ["b"],
                      "comparison": ["vit vs resnet"] * 3 + ["s vs c", "vit vs resnet"],
                      "verdict": ["undecided", "supported", "undecided", "contradicted",
                                  "supported"]})
    assert verdict_counts(v, "a") == "1 contradicted, 1 supported, 2 undecided"
    assert verdict_counts(v, "a", comparison="vit vs resnet",
                          by_count=True) == "2 undecided, 1 supported"
    assert verdict_counts(v, "c") == "no comparison"
    with pytest.raises(ValueError, match="lacks column"):
        verdict_counts(v.drop(columns="verdict"), "a")


def test_family_below_counts_uses_seed_means_and_only_complete_architectures():
    rows = []
    for kind, vit, resnet, att in (("fgsm", (1.0, 3.0), (2.5, 2.5), 1.0),
                                   ("pgd", (4.0, 4.0), (1.0, 2.0), 1.0),
                                   ("contrast", (1.0, 1.0), (2.0, 2.0), None)):
        for seed in (0, 1):
            rows += [{"arch": "vit", "seed": seed, "perturbation": kind,
                      "end_to_end_scale_free": vit[seed]},
                     {"arch": "resnet", "seed": seed, "perturbation": kind,
                      "end_to_end_scale_free": resnet[seed]},
                     {"arch": "conv_stack", "seed": seed, "perturbation": kind,
                      "end_to_end_scale_free": 5.0}]
            if att is not None:
                rows.append({"arch": "attention_stack", "seed": seed, "perturbation": kind,
                             "end_to_end_scale_free": att})
    counts = family_below_counts(pd.DataFrame(rows))
    # fgsm: mean 2 < 2.5; pgd: 4 > 1.5; contrast: 1 < 2
    assert counts[("vit", "resnet")] == "2 of 3"
    # the attention stack lacks contrast: not compared
    assert counts[("attention_stack", "conv_stack")] == "none"
