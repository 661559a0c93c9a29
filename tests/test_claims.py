"""Claims registry and checks: verdicts follow the numbers in both directions; the primary is
tested alone and the secondaries under Holm; paired t on logs for TopoLip with noise-floor
pairs dropped; the attack ladder at the TopoLip ε with its flags; the rival claim; AUROC with
its image level; the within-architecture association; the glued findings."""

import math
from pathlib import Path

import numpy as np
import pandas as pd
import pytest
from scipy import stats as st

from topolip import roster
from topolip.evidence.claims import (
    CHECKS,
    FLOOR_VERDICT,
    Claim,
    effective_radius,
    evaluate,
    families,
    family_below_counts,
    load_claims,
    most_robust_vs_smoothest,
    smoothness_table,
    verdict_counts,
    with_options,
)
from topolip.report.verdict_sentences import claim_findings

ROOT = Path(__file__).resolve().parents[1]
PRIMARY = {"comparison": "vit vs resnet", "group": "pgd"}
SMOOTH = Claim("smooth", "attention is smoother", "test", "lower_topolip", {}, PRIMARY)


def summary(vit, resnet, group="pgd", column="perturbation", flags=None):
    rows = [{"arch": a, "seed": s, column: group, "n_images": 100, "end_to_end_scale_free": v,
             "end_to_end": 10 * v, "end_to_end_flag": ""}
            for a, values in (("vit", vit), ("resnet", resnet)) for s, v in enumerate(values)]
    t = pd.DataFrame(rows)
    for arch, seed in flags or []:
        t.loc[(t["arch"] == arch) & (t["seed"] == seed), "end_to_end_flag"] = \
            "input displacement within the noise floor"
    return {"topolip_summary": t}


@pytest.mark.parametrize(("vit", "resnet", "expected"), [
    ([1.0, 1.1, 0.9], [2.0, 2.1, 1.9], "supported"),
    ([2.0, 2.2, 2.1], [1.0, 1.2, 1.1], "contradicted"),
    ([1.0, 2.0, 1.5], [1.4, 1.6, 1.5], "inconclusive"),
    ([1.0, 1.1], [2.0, 2.1], "not enough seeds"),          # decisive-looking, but 2 pairs
])
def test_lower_topolip_is_a_paired_t_on_logs(vit, resnet, expected):
    v = evaluate([SMOOTH], summary(vit, resnet))
    assert v["verdict"].tolist() == [expected] and v["role"].tolist() == ["primary"]
    d = np.log(vit) - np.log(resnet)
    r = v.iloc[0]
    assert r["scale"] == "log" and r["effect"] == pytest.approx(d.mean())
    assert r["ratio"] == pytest.approx(math.exp(d.mean()))
    assert r["attention"] == pytest.approx(math.exp(np.log(vit).mean()))   # geometric mean
    assert r["n_pairs"] == len(vit) and r["n_seeds"] == f"{len(vit)}/{len(resnet)}"
    assert r["pvalue"] == pytest.approx(st.ttest_rel(np.log(vit), np.log(resnet)).pvalue)
    assert r["p_adjusted"] == r["pvalue"] and r["coverage"] == 0.95   # primary: alone


def test_primary_interval_is_students_of_the_log_differences():
    vit, resnet = [1.0, 1.3, 0.8, 1.1], [2.0, 2.1, 1.9, 2.6]
    d = np.log(vit) - np.log(resnet)
    half = st.t.ppf(0.975, 3) * d.std(ddof=1) / 2
    r = evaluate([SMOOTH], summary(vit, resnet)).iloc[0]
    assert (r["low"], r["high"]) == pytest.approx((d.mean() - half, d.mean() + half))
    assert (r["ratio_low"], r["ratio_high"]) == pytest.approx(
        (math.exp(d.mean() - half), math.exp(d.mean() + half)))


def test_secondaries_form_one_holm_family_and_show_the_interval_they_use():
    t = pd.concat([summary([1.0, 1.2, 0.7], [1.6, 1.5, 1.4], g)["topolip_summary"]
                   for g in ("pgd", "fgsm", "gaussian_noise")], ignore_index=True)
    t.loc[t["perturbation"] == "fgsm", "end_to_end_scale_free"] *= [1, 1.1, 0.9, 1, 1, 1]
    v = evaluate([SMOOTH], {"topolip_summary": t})
    prim, sec = v[v["role"] == "primary"], v[v["role"] == "secondary"]
    assert prim["group"].tolist() == ["pgd"] and len(sec) == 2
    assert set(sec["family"]) == {"smooth: secondary"}
    p = sec["pvalue"].to_numpy()
    np.testing.assert_allclose(sec["p_adjusted"], np.minimum(
        1, np.maximum.accumulate(np.sort(p) * [2, 1]))[np.argsort(np.argsort(p))])
    for r in sec.itertuples():
        assert r.coverage == pytest.approx(1 - 0.05 * r.pvalue / r.p_adjusted)
        assert (r.high < 0 or r.low > 0) == (r.p_adjusted < 0.05)


def test_noise_floor_pairs_are_dropped_and_counted_and_raw_is_a_secondary_row():
    c = Claim("s", "x", "t", "lower_topolip", {"extra_measures": ["end_to_end"]}, PRIMARY)
    tables = summary([1.0, 1.1, 0.9, 1.0], [2.0, 2.1, 1.9, 9.0], flags=[("resnet", 3)])
    v = evaluate([c], tables)
    prim = v[v["role"] == "primary"].iloc[0]
    assert prim["n_pairs"] == 3 and prim["n_excluded"] == 1
    assert "1 pairs dropped: input displacement within the noise floor" in prim["detail"]
    raw = v[v["measure"] == "end_to_end"].iloc[0]
    assert raw["role"] == "secondary" and raw["group"] == "pgd"
    assert raw["ratio"] == pytest.approx(prim["ratio"])   # raw = 10 × scale-free here


def test_missing_primary_is_reported_not_replaced():
    v = evaluate([SMOOTH], summary([1.0, 1.1, 0.9], [2.0, 2.1, 1.9], group="fgsm"))
    assert v[["role", "verdict"]].values.tolist() == [["primary", "not measured"],
                                                      ["secondary", "supported"]]
    only_vit = {"topolip_summary": summary([1.0, 1.1, 0.9], [1, 1, 1])["topolip_summary"]
                .query("arch == 'vit'")}
    assert evaluate([SMOOTH], only_vit)["verdict"].tolist() == ["not measured"]


def _robustness(drops, eps=0.05):
    """``drops[(arch, kind)] = per-seed accuracy drops`` as robustness.csv rows, at ε and 0."""
    rows = []
    for (arch, kind), values in drops.items():
        for s, d in enumerate(values):
            for strength, dd in ((0.0, 0.0), (eps, d)):
                rows.append({"arch": arch, "seed": s, "perturbation": kind,
                             "strength": strength, "unit": "linf", "n": 500,
                             "accuracy": 0.9 - dd, "accuracy_clean": 0.9, "accuracy_drop": dd,
                             "steps": 20, "restarts": 1})
    return pd.DataFrame(rows)


def _topolip_eps(eps=0.05):
    return pd.DataFrame({"arch": "vit", "seed": 0, "perturbation": ["fgsm", "pgd"],
                         "strength": eps, "accuracy_drop": 0.1})


def test_more_robust_uses_the_ladder_at_the_topolip_eps_and_flags_changes():
    drops = {("vit", "fgsm"): [0.10, 0.12, 0.11], ("resnet", "fgsm"): [0.40, 0.41, 0.43],
             ("vit", "pgd"): [0.5, 0.6, 0.55], ("resnet", "pgd"): [0.52, 0.58, 0.56],
             ("vit", "autoattack"): [0.7, 0.8, 0.6], ("resnet", "autoattack"): [0.72, 0.7, 0.7]}
    rob = _robustness(drops)
    weaker = rob[(rob["perturbation"] == "pgd") & (rob["strength"] > 0)].assign(
        steps=5, accuracy_drop=0.0)                # a 5-step PGD of a masking check: not used
    rob = pd.concat([rob, rob.assign(strength=0.2, accuracy_drop=0.9), weaker])
    c = Claim("robust", "x", "t", "smaller_accuracy_drop", {},
              {"comparison": "vit vs resnet", "group": "autoattack"})
    masking = pd.DataFrame({"arch": ["vit", "resnet"], "seed": 0, "check": "all",
                            "passed": ["False", True], "value": 0.0, "detail": ""})
    v = evaluate([c], {"robustness": rob, "topolip_summary": _topolip_eps(),
                       "masking": masking}).set_index("group")
    assert v.loc["autoattack", "role"] == "primary"
    d = np.subtract(drops[("vit", "autoattack")], drops[("resnet", "autoattack")])
    assert v.loc["autoattack", "effect"] == pytest.approx(d.mean())
    assert v.loc["autoattack", "pvalue"] == pytest.approx(st.ttest_1samp(d, 0).pvalue)
    assert v.loc["fgsm", "verdict"] == "supported"
    assert v.loc["pgd", "effect"] == pytest.approx(np.mean(np.subtract(
        drops[("vit", "pgd")], drops[("resnet", "pgd")])))
    assert ("verdict changes with attack strength: FGSM supported, PGD inconclusive, "
            f"{roster.label('autoattack')} inconclusive") in v.loc["pgd", "flag"]
    assert "gradient-masking check failed in 1 seed pairs" in v.loc["fgsm", "flag"]


def test_rival_claim_tests_the_change_of_advantage_along_the_ladder():
    drops = {("vit", "fgsm"): [0.10, 0.12, 0.11, 0.10], ("resnet", "fgsm"): [0.3, 0.33, 0.31, 0.35],
             ("vit", "autoattack"): [0.7, 0.8, 0.6, 0.7],
             ("resnet", "autoattack"): [0.72, 0.7, 0.7, 0.69],
             ("vit", "pgd"): [0.5] * 4, ("resnet", "pgd"): [0.5] * 4}
    c = Claim("weak", "x", "t", "helps_only_weak", {},
              {"comparison": "vit vs resnet", "group": "fgsm vs autoattack"})
    v = evaluate([c], {"robustness": _robustness(drops),
                       "topolip_summary": _topolip_eps()}).set_index("group")
    adv_w = np.subtract(drops[("vit", "fgsm")], drops[("resnet", "fgsm")])
    adv_s = np.subtract(drops[("vit", "autoattack")], drops[("resnet", "autoattack")])
    r = v.loc["fgsm vs autoattack"]
    assert r["role"] == "primary" and r["effect"] == pytest.approx((adv_w - adv_s).mean())
    assert r["pvalue"] == pytest.approx(st.ttest_rel(adv_w, adv_s).pvalue)
    assert r["verdict"] == "supported"          # attention's advantage only under FGSM
    assert v.loc["fgsm vs pgd", "role"] == "secondary"


def _radius_summary(radii):
    """``radii[(arch, method)] = per-seed median radii`` as radius_summary.csv rows."""
    return pd.DataFrame([{"arch": a, "seed": s, "method": m, "group": f"{m}_radius",
                          "n_images": 200, "median_radius": r}
                         for (a, m), values in radii.items() for s, r in enumerate(values)])


def test_radius_primary_is_a_paired_log_ratio_with_attention_claimed_larger():
    vit, res = [0.010, 0.013, 0.011, 0.012], [0.030, 0.033, 0.036, 0.031]
    drops = {(a, k): [0.3] * 4 for a in ("vit", "resnet") for k in ("fgsm", "pgd", "autoattack")}
    c = Claim("robust", "x", "t", "smaller_accuracy_drop", {},
              {"comparison": "vit vs resnet", "group": "autoattack_radius"})
    tables = {"robustness": _robustness(drops), "topolip_summary": _topolip_eps(),
              "radius_summary": _radius_summary({("vit", "autoattack"): vit,
                                                 ("resnet", "autoattack"): res})}
    r = evaluate([c], tables).set_index("group").loc["autoattack_radius"]
    d = np.log(vit) - np.log(res)
    assert r["role"] == "primary" and r["scale"] == "log" and r["measure"] == "median_radius"
    assert r["ratio"] == pytest.approx(math.exp(d.mean()))
    assert r["pvalue"] == pytest.approx(st.ttest_1samp(d, 0).pvalue)
    assert r["verdict"] == "contradicted"       # the ViT's radius is a third of the ResNet's
    tables["radius_summary"] = _radius_summary({("vit", "autoattack"): res,
                                                ("resnet", "autoattack"): vit})
    r = evaluate([c], tables).set_index("group").loc["autoattack_radius"]
    assert r["verdict"] == "supported" and r["ratio"] > 1
    sentence = claim_findings(evaluate([c], tables))["primary"]["robust"]
    assert sentence.startswith("The ViT is more robust: the ViT's median minimal radius")


@pytest.mark.parametrize("vit_acc, resnet_acc, floored", [
    (0.01, 0.6, True), (0.02, 0.6, True), (0.03, 0.6, False), (0.5, 0.98, True),
    (0.5, 0.97, False)])
def test_floor_rule_marks_ladder_rows_at_the_floor_or_ceiling(vit_acc, resnet_acc, floored):
    drops = {("vit", "fgsm"): [0.10, 0.12, 0.11], ("resnet", "fgsm"): [0.40, 0.41, 0.43],
             ("vit", "pgd"): [0.5, 0.6, 0.55], ("resnet", "pgd"): [0.52, 0.58, 0.56],
             ("vit", "autoattack"): [0.7, 0.8, 0.6], ("resnet", "autoattack"): [0.2, 0.3, 0.1]}
    rob = _robustness(drops)
    at = (rob["perturbation"] == "autoattack") & (rob["strength"] > 0)
    rob.loc[at & (rob["arch"] == "vit"), "accuracy"] = vit_acc
    rob.loc[at & (rob["arch"] == "resnet"), "accuracy"] = resnet_acc
    c = Claim("robust", "x", "t", "smaller_accuracy_drop", {},
              {"comparison": "vit vs resnet", "group": "fgsm"})
    v = evaluate([c], {"robustness": rob, "topolip_summary": _topolip_eps()}).set_index("group")
    r = v.loc["autoattack"]
    if floored:
        assert r["verdict"] == FLOOR_VERDICT and math.isnan(r["p_adjusted"])
        assert "floor/ceiling" in r["flag"] and "not informative" in r["detail"]
        # out of the Holm family: pgd's Holm p is its raw p (the only other secondary)
        assert v.loc["pgd", "p_adjusted"] == pytest.approx(v.loc["pgd", "pvalue"])
        found = claim_findings(v.reset_index())
        assert found["n_tests"] == 2          # fgsm and pgd; the floored row is no test
        assert "changes with attack strength" not in r["flag"]
    else:
        assert r["verdict"] in ("supported", "contradicted", "inconclusive")
        assert r["p_adjusted"] >= r["pvalue"]


@pytest.mark.parametrize("accs, floored", [
    ((0.0, 0.5, 0.6), True), ((0.5, 0.99, 0.6), True), ((0.03, 0.5, 0.97), False)])
def test_floor_rule_reads_each_model_not_the_mean(accs, floored):
    # one seed's ViT at 0 robust accuracy: its paired difference is censored, so the row is
    # not informative although the side's mean (0.37) is far from the floor
    drops = {(a, k): [0.3, 0.35, 0.32] for a in ("vit", "resnet")
             for k in ("fgsm", "pgd", "autoattack")}
    drops[("resnet", "autoattack")] = [0.1, 0.12, 0.11]
    rob = _robustness(drops)
    at = (rob["perturbation"] == "autoattack") & (rob["strength"] > 0)
    for s, a in zip(sorted(rob["seed"].unique()), accs, strict=True):
        rob.loc[at & (rob["arch"] == "vit") & (rob["seed"] == s), "accuracy"] = a
    rob.loc[at & (rob["arch"] == "resnet"), "accuracy"] = 0.6
    c = Claim("robust", "x", "t", "smaller_accuracy_drop", {},
              {"comparison": "vit vs resnet", "group": "fgsm"})
    r = evaluate([c], {"robustness": rob, "topolip_summary": _topolip_eps()}).set_index(
        "group").loc["autoattack"]
    if floored:
        assert r["verdict"] == FLOOR_VERDICT and math.isnan(r["p_adjusted"])
        bound = "floor (≤ 0.02)" if min(accs) <= 0.02 else "ceiling (≥ 0.98)"
        assert f"the ViT's robust accuracy under APGD-CE + APGD-T is at the {bound} for 1 " \
               f"of its 3 seeds (mean {np.mean(accs):.3g})" in r["flag"]
    else:
        assert r["verdict"] != FLOOR_VERDICT and "floor/ceiling" not in r["flag"]


def test_floor_rule_covers_the_corruption_rows():
    drops = {(a, k): [0.3, 0.35, 0.32] for a in ("vit", "resnet")
             for k in ("fgsm", "pgd", "autoattack")}
    summ = pd.DataFrame([{"arch": a, "seed": s, "perturbation": k, "strength": 3,
                          "accuracy_drop": d, "accuracy_perturbed": acc,
                          "n_images": 200}
                         for k, accs in (("elastic", {"vit": 0.985, "resnet": 0.9}),
                                         ("rotation", {"vit": 0.6, "resnet": 0.7}))
                         for a, acc in accs.items()
                         for s, d in enumerate((0.01, 0.02, 0.015) if a == "vit"
                                               else (0.1, 0.12, 0.11))])
    summ = pd.concat([summ, _topolip_eps()], ignore_index=True)
    c = Claim("robust", "x", "t", "smaller_accuracy_drop", {},
              {"comparison": "vit vs resnet", "group": "fgsm"})
    v = evaluate([c], {"robustness": _robustness(drops), "topolip_summary": summ})
    v = v.set_index("group")
    assert v.loc["elastic", "verdict"] == FLOOR_VERDICT        # the ViT keeps 0.985: ceiling
    assert "ceiling" in v.loc["elastic", "flag"]
    assert v.loc["rotation", "verdict"] == "supported"         # both sides off the floor


def test_corruption_rows_use_the_ladder_images_where_robustness_has_them():
    # one image set per family: elastic at its TopoLip severity (3) is read from 04's curves
    # (the ladder's 100 images), not from the TopoLip batch (500 images, other drops); a
    # corruption the robustness table lacks (rotation) still comes from topolip_summary
    drops = {(a, k): [0.3, 0.35, 0.32] for a in ("vit", "resnet")
             for k in ("fgsm", "pgd", "autoattack")}
    ladder_drop = {"vit": (0.20, 0.25, 0.22), "resnet": (0.10, 0.11, 0.12)}
    rob = pd.concat([_robustness(drops), pd.DataFrame([
        {"arch": a, "seed": s, "perturbation": "elastic", "strength": sev, "unit": "severity",
         "n": 100, "accuracy": 0.9 - (d if sev == 3 else 0.5), "accuracy_clean": 0.9,
         "accuracy_drop": d if sev == 3 else 0.5}
        for a, ds in ladder_drop.items() for s, d in enumerate(ds) for sev in (1, 3, 5)])],
        ignore_index=True)
    summ = pd.DataFrame([{"arch": a, "seed": s, "perturbation": k, "strength": 3,
                          "accuracy_drop": d, "accuracy_perturbed": 0.9 - d, "n_images": 500}
                         for k in ("elastic", "rotation") for a in ("vit", "resnet")
                         for s, d in enumerate((0.01, 0.02, 0.015) if a == "vit"
                                               else (0.1, 0.12, 0.11))])
    summ = pd.concat([summ, _topolip_eps()], ignore_index=True)
    c = Claim("robust", "x", "t", "smaller_accuracy_drop", {},
              {"comparison": "vit vs resnet", "group": "fgsm"})
    v = evaluate([c], {"robustness": rob, "topolip_summary": summ}).set_index("group")
    d = np.subtract(ladder_drop["vit"], ladder_drop["resnet"])
    assert v.loc["elastic", "effect"] == pytest.approx(d.mean())
    assert v.loc["elastic", "pvalue"] == pytest.approx(st.ttest_1samp(d, 0).pvalue)
    assert v.loc["elastic", "n_images"] == 100
    assert v.loc["elastic", "verdict"] == "contradicted"     # the ViT drops more here
    assert v.loc["rotation", "n_images"] == 500
    assert v.loc["rotation", "effect"] == pytest.approx(np.mean(np.subtract(
        (0.01, 0.02, 0.015), (0.1, 0.12, 0.11))))


def test_floor_sentence_says_not_informative():
    drops = {(a, k): [0.3, 0.35, 0.32] for a in ("vit", "resnet")
             for k in ("fgsm", "pgd", "autoattack")}
    rob = _robustness(drops)
    rob.loc[(rob["arch"] == "vit") & (rob["strength"] > 0), "accuracy"] = 0.0
    c = Claim("robust", "x", "t", "smaller_accuracy_drop", {},
              {"comparison": "vit vs resnet", "group": "autoattack"})
    found = claim_findings(evaluate([c], {"robustness": rob, "topolip_summary": _topolip_eps()}))
    assert found["primary"]["robust"].startswith("Not informative (floor/ceiling) under "
                                                 "APGD-CE + APGD-T: the ViT's robust accuracy")


def test_rival_claim_on_the_radii_compares_log_advantages():
    radii = {("vit", "fgsm"): [0.05, 0.06, 0.055, 0.05],
             ("resnet", "fgsm"): [0.04, 0.05, 0.045, 0.04],
             ("vit", "autoattack"): [0.01, 0.012, 0.011, 0.01],
             ("resnet", "autoattack"): [0.03, 0.035, 0.033, 0.03]}
    drops = {(a, k): [0.3] * 4 for a in ("vit", "resnet") for k in ("fgsm", "pgd", "autoattack")}
    c = Claim("weak", "x", "t", "helps_only_weak", {},
              {"comparison": "vit vs resnet", "group": "fgsm_radius vs autoattack_radius"})
    v = evaluate([c], {"robustness": _robustness(drops), "topolip_summary": _topolip_eps(),
                       "radius_summary": _radius_summary(radii)}).set_index("group")
    r = v.loc["fgsm_radius vs autoattack_radius"]
    adv_w = np.log(radii[("vit", "fgsm")]) - np.log(radii[("resnet", "fgsm")])
    adv_s = np.log(radii[("vit", "autoattack")]) - np.log(radii[("resnet", "autoattack")])
    assert r["role"] == "primary" and r["effect"] == pytest.approx((adv_w - adv_s).mean())
    assert r["ratio"] == pytest.approx(math.exp((adv_w - adv_s).mean()))
    assert r["pvalue"] == pytest.approx(st.ttest_rel(adv_w, adv_s).pvalue)
    assert r["verdict"] == "supported"          # the ViT's advantage only under FGSM
    assert v.loc["fgsm vs autoattack", "role"] == "secondary"
    assert "fgsm_radius vs pgd_radius" not in v.index   # no PGD radii, no PGD radius row


def test_rival_claim_on_the_pgd_radii_is_a_secondary_of_its_own():
    """With PGD's radii too, the (FGSM, PGD) contrast is also read on the radii: a secondary
    row, its ratio of radius ratios by hand; the primary (FGSM against APGD-CE + APGD-T) is as
    without it."""
    radii = {("vit", "fgsm"): [0.05, 0.06, 0.055, 0.05],
             ("resnet", "fgsm"): [0.04, 0.05, 0.045, 0.04],
             ("vit", "pgd"): [0.02, 0.018, 0.025, 0.021],
             ("resnet", "pgd"): [0.03, 0.04, 0.033, 0.035],
             ("vit", "autoattack"): [0.01, 0.012, 0.011, 0.01],
             ("resnet", "autoattack"): [0.03, 0.035, 0.033, 0.03]}
    drops = {(a, k): [0.3] * 4 for a in ("vit", "resnet") for k in ("fgsm", "pgd", "autoattack")}
    c = Claim("weak", "x", "t", "helps_only_weak", {},
              {"comparison": "vit vs resnet", "group": "fgsm_radius vs autoattack_radius"})
    tables = {"robustness": _robustness(drops), "topolip_summary": _topolip_eps()}
    v = evaluate([c], {**tables, "radius_summary": _radius_summary(radii)}).set_index("group")
    r = v.loc["fgsm_radius vs pgd_radius"]
    adv_w = np.log(radii[("vit", "fgsm")]) - np.log(radii[("resnet", "fgsm")])
    adv_s = np.log(radii[("vit", "pgd")]) - np.log(radii[("resnet", "pgd")])
    assert r["role"] == "secondary" and r["scale"] == "log"
    assert r["ratio"] == pytest.approx(math.exp((adv_w - adv_s).mean()))
    assert r["pvalue"] == pytest.approx(st.ttest_rel(adv_w, adv_s).pvalue)
    assert "from PGD to FGSM" in r["detail"]
    without = {k: x for k, x in radii.items() if k[1] != "pgd"}
    alone = evaluate([c], {**tables, "radius_summary": _radius_summary(without)})
    p = v.loc["fgsm_radius vs autoattack_radius"]
    q = alone.set_index("group").loc["fgsm_radius vs autoattack_radius"]
    assert p["role"] == q["role"] == "primary" and p["pvalue"] == pytest.approx(q["pvalue"])
    # the words name each row's own pair of attacks and say "relative to", not "advantage"
    # (the ViT is behind the ResNet under APGD-CE + APGD-T and PGD: 0.33-0.76x)
    found = claim_findings(v.reset_index())
    assert found["primary"]["weak"].startswith(
        "Relative to the ResNet, the ViT fares better against the weak attack than against "
        "the strong one, as the rival claim predicts: the ViT's median-radius ratio to the "
        "ResNet under FGSM is ")
    assert "× its ratio under APGD-CE + APGD-T (95% interval" in found["primary"]["weak"]
    assert r["verdict"] == "supported"
    pgd_row = [s for s in found["decisive"] if "its ratio under PGD" in s]
    assert len(pgd_row) == 1 and "under FGSM is" in pgd_row[0] and "advantage" not in pgd_row[0]
    assert len(v) == len(alone) + 1


def test_ood_auroc_adds_the_image_level_of_one_shared_image_set():
    ood = pd.DataFrame({"arch": ["vit"] * 3 + ["resnet"] * 3 + ["vit"],
                        "seed": [0, 1, 2] * 2 + [0],
                        "dataset": ["digits"] * 6 + ["in_distribution"], "n": 1000,
                        "auroc": [0.9, 0.92, 0.91, 0.6, 0.64, 0.61, float("nan")]})
    rng = np.random.default_rng(0)
    res = pd.DataFrame([{"arch": a, "seed": s, "group": "digits", "measure": "auroc",
                         "resample": b, "value": rng.normal(0.8, 0.05)}
                        for a in ("vit", "resnet") for s in range(3) for b in range(10)])
    c = Claim("ood", "x", "t", "higher_ood_auroc", {},
              {"comparison": "vit vs resnet", "group": "digits"})
    r = evaluate([c], {"ood_behaviour": ood, "ood_resamples": res}).iloc[0]
    d = np.array([0.3, 0.28, 0.3])
    w = res.pivot_table(index=["seed", "resample"], columns="arch", values="value")
    image_se = (w["vit"] - w["resnet"]).groupby(level="seed").std(ddof=1).mean()
    assert r["se"] == pytest.approx(math.sqrt(d.var(ddof=1) / 3 + image_se**2))
    assert r["verdict"] == "supported" and "image level" in r["detail"]
    seeds_only = evaluate([Claim("o", "x", "t", "higher_ood_auroc", {"resamples": "none"},
                                 c.primary)], {"ood_behaviour": ood}).iloc[0]
    assert seeds_only["se"] == pytest.approx(d.std(ddof=1) / math.sqrt(3))


def test_ood_auroc_compares_the_logit_based_detectors_at_the_primary_only():
    """``extra_measures`` add one secondary row per score at the primary comparison and set, each
    with its own resampling se; the primary stays the max-softmax AUROC, tested alone, and the
    two secondaries share one Holm family with the other sets' max-softmax rows."""
    rng = np.random.default_rng(1)
    rows = []
    for a, base in (("vit", 0.8), ("resnet", 0.7)):
        for s in range(4):
            rows.append({"arch": a, "seed": s, "dataset": "in_distribution", "n": 500,
                         "auroc": np.nan, "auroc_max_logit": np.nan, "auroc_energy": np.nan})
            for d in ("digits", "photo_patches"):
                rows.append({"arch": a, "seed": s, "dataset": d, "n": 500,
                             "auroc": base + rng.normal(0, 0.02),
                             "auroc_max_logit": base - 0.1 + rng.normal(0, 0.02),
                             "auroc_energy": 0.6 + rng.normal(0, 0.02)})
    ood = pd.DataFrame(rows)
    res = pd.DataFrame([{"arch": a, "seed": s, "group": d, "measure": m, "resample": b,
                         "value": rng.normal(0.7, 0.01 if m == "auroc_energy" else 0.03)}
                        for a in ("vit", "resnet") for s in range(4)
                        for d in ("digits", "photo_patches")
                        for m in ("auroc", "auroc_max_logit", "auroc_energy")
                        for b in range(8)])
    c = Claim("ood", "x", "t", "higher_ood_auroc",
              {"extra_measures": ["auroc_max_logit", "auroc_energy", "auroc_absent"]},
              {"comparison": "vit vs resnet", "group": "photo_patches"})
    v = evaluate([c], {"ood_behaviour": ood, "ood_resamples": res})
    assert v[["measure", "group", "role"]].values.tolist() == [
        ["auroc", "digits", "secondary"], ["auroc", "photo_patches", "primary"],
        ["auroc_max_logit", "photo_patches", "secondary"],
        ["auroc_energy", "photo_patches", "secondary"]]
    by = v.set_index("measure")
    p = ood[ood["dataset"] == "photo_patches"].pivot(index="seed", columns="arch")
    for m in ("auroc_max_logit", "auroc_energy"):
        d = (p[(m, "vit")] - p[(m, "resnet")]).to_numpy()
        r = res[(res["group"] == "photo_patches") & (res["measure"] == m)].pivot_table(
            index=["seed", "resample"], columns="arch", values="value")
        image_se = (r["vit"] - r["resnet"]).groupby(level="seed").std(ddof=1).mean()
        assert by.loc[m, "effect"] == pytest.approx(d.mean())
        assert by.loc[m, "se"] == pytest.approx(math.sqrt(d.var(ddof=1) / 4 + image_se**2))
        assert "secondary: Holm over the claim's 3 secondary comparisons" in by.loc[m, "detail"]
    assert by.loc["auroc_energy", "effect"] == pytest.approx(0.0, abs=0.05)
    # a table without the columns (an earlier run's): the claim as before
    old = evaluate([c], {"ood_behaviour": ood.drop(columns=["auroc_max_logit", "auroc_energy"]),
                         "ood_resamples": res[res["measure"] == "auroc"]})
    assert old["measure"].tolist() == ["auroc", "auroc"]


def _models(n_seeds=3, kinds=("fgsm", "blur"), slope=None, seed=0):
    rng = np.random.default_rng(seed)
    rows = []
    for k, kind in enumerate(kinds):
        for a, arch in enumerate(("vit", "resnet", "attention_stack", "conv_stack")):
            for s in range(n_seeds):
                t = rng.random() + a
                drop = (slope[k] * t if slope else rng.random()) + 0.3 * a
                rows.append({"arch": arch, "seed": s, "perturbation": kind,
                             "end_to_end_scale_free": t, "accuracy_drop": drop,
                             "relative_drop": drop, "end_to_end_flag": ""})
    return pd.DataFrame(rows)


def test_smoothness_is_tested_within_architectures_with_a_shared_permutation():
    summ = _models(n_seeds=5, slope=(1.0, -1.0))
    table = smoothness_table(summ).set_index(["level", "group", "response"])
    within = table.loc["within architecture"]
    assert within.loc[("fgsm", "accuracy_drop"), "tau"] == pytest.approx(1.0)
    assert within.loc[("blur", "accuracy_drop"), "tau"] == pytest.approx(-1.0)
    # opposite kinds cancel in the pooled within-architecture statistic
    assert within.loc[("pooled", "accuracy_drop"), "tau"] == pytest.approx(0.0)
    # 5 seeds: one relabelling of the seeds shared by the 4 architectures (the architectures
    # of a seed share their images), 5! = 120 permutations, exact; perfectly concordant within
    # every architecture, in orders of the seeds that differ between architectures: only the
    # identity reaches |tau| = 1 (no one relabelling reverses every architecture's order)
    fg = within.loc[("fgsm", "accuracy_drop")]
    assert fg["exact"] and fg["n_permutations"] == 120
    assert fg["pvalue"] == pytest.approx(1 / 120)
    assert within.loc[("pooled", "accuracy_drop"), "role"] == "primary"
    sec = table[table["role"] == "secondary"]
    np.testing.assert_allclose(sec["p_adjusted"], np.minimum(1, _holm(sec["pvalue"])))
    arch = table.loc[("architecture means", "pooled", "accuracy_drop")]
    assert arch["role"] == "context" and arch["n"] == 4
    assert arch["min_pvalue"] == pytest.approx(1 / 12) and arch["n_permutations"] == 24
    claim = Claim("s", "x", "t", "smoothness_predicts_robustness", {},
                  {"comparison": "Kendall τ within architecture, accuracy_drop",
                   "group": "pooled"})
    v = evaluate([claim], {"smoothness": smoothness_table(summ)}).set_index(
        ["comparison", "group"])
    assert v.loc[("Kendall τ within architecture, accuracy_drop", "fgsm"), "verdict"] == \
        "supported"
    assert v.loc[("Kendall τ within architecture, accuracy_drop", "blur"), "verdict"] == \
        "contradicted"
    assert v.loc[("Kendall τ within architecture, accuracy_drop", "pooled"), "verdict"] == \
        "inconclusive"
    ctx = v.loc[("Kendall τ architecture means, accuracy_drop", "pooled")]
    assert ctx["family"] == "" and "can never decide" in ctx["detail"]
    two = _models(n_seeds=2, slope=(1.0, 1.0))
    v2 = evaluate([claim], {"smoothness": smoothness_table(two)})
    assert set(v2.loc[v2["role"] != "context", "verdict"]) == {"not enough seeds"}


def _holm(p):
    p = np.asarray(p, float)
    order = np.argsort(p)
    adj = np.maximum.accumulate((len(p) - np.arange(len(p))) * p[order])
    out = np.empty_like(adj)
    out[order] = adj
    return out


def test_architecture_level_association_alone_does_not_decide():
    # architectures differ in both measure and drop, nothing within: the pooled-over-models τ
    # is large, the within-architecture test is not decisive
    summ = _models(n_seeds=3, kinds=("fgsm", "pgd", "blur"), seed=2)
    t = smoothness_table(summ).set_index(["level", "group", "response"])
    assert st.kendalltau(summ["end_to_end_scale_free"], summ["accuracy_drop"]).statistic > 0.5
    assert t.loc[("within architecture", "pooled", "accuracy_drop"), "pvalue"] > 0.05
    assert t.loc[("architecture means", "pooled", "accuracy_drop"), "tau"] == pytest.approx(1.0)
    assert t.loc[("architecture means", "pooled", "accuracy_drop"), "pvalue"] == \
        pytest.approx(1 / 12)


def test_registry_loads_and_rejects_bad_entries(tmp_path):
    claims = load_claims(ROOT / "data/claims.yml")
    assert {c.check for c in claims} <= set(CHECKS)
    ids = {c.id for c in claims}
    assert {"envelope", "attention-helps-only-weak"} <= ids and "attention-smoother-raw" not in ids
    by_id = {c.id: c for c in claims}
    assert by_id["attention-more-robust"].primary == {"comparison": "vit vs resnet",
                                                      "group": "autoattack_radius"}
    assert by_id["attention-helps-only-weak"].primary["group"] == \
        "fgsm_radius vs autoattack_radius"
    assert all(c.primary for c in claims if c.check != "envelope_holds")
    bad = tmp_path / "c.yml"
    bad.write_text("- {id: a, statement: s, source: x, check: nope}\n")
    with pytest.raises(ValueError, match="unknown check 'nope'"):
        load_claims(bad)
    bad.write_text("- {id: a, statement: s}\n")
    with pytest.raises(ValueError, match=r"lacks \['source', 'check'\]"):
        load_claims(bad)
    bad.write_text("- {id: a, statement: s, source: x, check: lower_topolip}\n")
    with pytest.raises(ValueError, match="needs a primary"):
        load_claims(bad)
    # a primary without the rule that chose it, or with an unknown "chosen", is refused
    head = ("- {id: a, statement: s, source: x, check: lower_topolip, "
            "primary: {comparison: vit vs resnet, group: pgd}")
    bad.write_text(head + "}\n")
    with pytest.raises(ValueError, match="needs a primary_rule"):
        load_claims(bad)
    bad.write_text(head + ", primary_rule: {rule: r, chosen: later}}\n")
    with pytest.raises(ValueError, match="needs a primary_rule"):
        load_claims(bad)
    bad.write_text(head + ", primary_rule: {rule: the kind off the floor, "
                   "chosen: before its first run}}\n")
    assert load_claims(bad)[0].primary_rule == {"rule": "the kind off the floor",
                                                "chosen": "before its first run"}


def test_the_book_says_which_primary_was_chosen_after_a_run():
    from topolip.report.findings import primary_choices
    table, words = primary_choices(load_claims(ROOT / "data/claims.yml"))
    assert len(table) == 6 and "envelope" not in set(table["claim"])
    assert table.set_index("claim").loc["attention-smoother", "chosen"] == \
        "after a run that showed its outcome"
    assert words["vd-primaries-after"] == (
        "5 of the 6 primaries were fixed before their first run; that of \u201cAttention is "
        "smoother (end-to-end TopoLip)\u201d was chosen after a run that showed its outcome, so "
        "its verdict is weaker evidence than a pre-registered one")


def test_registry_options_reach_the_check():
    t = summary([2.0, 2.1, 2.2], [1.0, 1.1, 1.2], "digits", "ood_set")["topolip_summary"]
    c = Claim("o", "smoother on OOD", "test", "lower_topolip",
              {"table": "ood_topolip_summary", "group_column": "ood_set"},
              {"comparison": "vit vs resnet", "group": "digits"})
    v = evaluate([c], {"ood_topolip_summary": t})
    assert v[["comparison", "group", "measure", "verdict"]].values.tolist() == [
        ["vit vs resnet", "digits", "end_to_end_scale_free", "contradicted"]]


def test_envelope_check():
    env = Claim("env", "envelope", "test", "envelope_holds")
    topo = pd.DataFrame({"bottleneck": [0.5, 0.2], "envelope": [1.0, 1.0]})
    v = evaluate([env], {"topolip": topo})
    assert v[["verdict", "role", "family"]].values.tolist() == [["supported", "check", ""]]
    topo.loc[1, "bottleneck"] = 1.1
    assert evaluate([env], {"topolip": topo})["verdict"].tolist() == ["contradicted"]


def _verdict(**kw):
    base = dict(claim="a", comparison="vit vs resnet", group="pgd",
                measure="end_to_end_scale_free", role="secondary", family="a: secondary",
                scale="log", verdict="inconclusive", effect=-0.1, low=-0.3, high=0.1,
                coverage=0.95, ratio=math.exp(-0.1), ratio_low=math.exp(-0.3),
                ratio_high=math.exp(0.1), pvalue=0.3, p_adjusted=0.6, flag="")
    return {**base, **kw}


def test_findings_count_families_and_say_only_what_is_decisive():
    v = pd.DataFrame([
        _verdict(role="primary", family="a: primary", verdict="supported", effect=-0.4,
                 ratio=0.67, ratio_low=0.55, ratio_high=0.82, pvalue=0.004, p_adjusted=0.004),
        _verdict(group="fgsm", pvalue=0.03, p_adjusted=0.06),
        _verdict(claim="b", comparison="vit vs resnet", group="autoattack",
                 measure="accuracy_drop", scale="raw", role="primary", family="b: primary",
                 verdict="contradicted", effect=0.12, low=0.05, high=0.19, ratio=np.nan,
                 pvalue=0.012, p_adjusted=0.012,
                 flag="verdict changes with attack strength: fgsm supported, pgd inconclusive,"
                      " autoattack contradicted"),
        _verdict(claim="b", family="b: secondary", group="fgsm", verdict="not enough seeds",
                 pvalue=np.nan, p_adjusted=np.nan),
        _verdict(claim="env", comparison="4 layer rows", role="check", family="",
                 verdict="supported"),
    ])
    power = pd.DataFrame([{"claim": "a", "comparison": "vit vs resnet", "group": "pgd",
                           "measure": "end_to_end_scale_free",
                           "text": "a ratio ≤ 0.7 or ≥ 1.43"}])
    # a decisive secondary at the primary's comparison and group, on another measure: the
    # primary's detectable effect is not its own, so its sentence gives none
    two = claim_findings(pd.DataFrame([v.loc[0].to_dict(), _verdict(
        measure="end_to_end", verdict="supported", effect=-0.5, pvalue=0.001,
        p_adjusted=0.002)]), power)["decisive"]
    assert "the design detects a ratio" in two[0] and "raw TopoLip" in two[1]
    assert "the design detects" not in two[1]
    f = claim_findings(v, power)
    assert f["n_families"] == 3 and f["error_bound"] == pytest.approx(0.15)
    # the "not enough seeds" row could not decide: it is no test
    assert (f["n_tests"], f["n_decisive"], f["n_supported"], f["n_contradicted"]) == (3, 2, 1, 1)
    assert f["counts"] == {"a": "1 inconclusive, 1 supported",
                           "b": "1 contradicted, 1 not enough seeds", "env": "no test"}
    assert f["primary"]["a"] == (
        "The ViT is smoother: under PGD the ViT's scale-free TopoLip is 0.67× the ResNet's "
        "(95% interval 0.55–0.82, p = 0.004; the design detects a ratio ≤ 0.7 or ≥ 1.43 with "
        "80% power).")
    assert f["primary"]["b"].startswith(
        f"The ResNet is more robust: under {roster.label('autoattack')} the ViT's accuracy drop "
        "minus the ResNet's is")
    assert "+0.120 (95% interval +0.050 to +0.190" in f["primary"]["b"]
    assert len(f["decisive"]) == 2 and f["decisive"][0].startswith("*A* (primary)")
    # 0.06 and 0.012 are within [0.2, 3) × alpha; 0.004 is not
    assert f["n_near"] == 2 and "p = 0.06 (inconclusive)" in f["near"][0]
    # each near row names its measure: two rows of one comparison and group stay apart
    assert f["near"][0].startswith(f"{roster.pair_label(v.loc[1, 'comparison'])}, "
                                   f"{roster.label(v.loc[1, 'group'])}, ")
    assert all(("TopoLip" in x) or ("accuracy drop" in x) for x in f["near"])
    assert f["ladder"] == [v.loc[2, "flag"]]
    # the book-wide bound is 08's "Families" section's, said once; the paragraph starts
    # from the primaries' joint error
    assert "at most 0.15" not in f["shows"] and "2 are decisive" in f["shows"]
    assert f["shows"].startswith("The 2 primaries are each tested alone at α = 0.05: the "
                                 "chance that at least one of them is falsely decisive is at "
                                 "most 0.1.")
    assert families(v)["family"].tolist() == ["a: primary", "a: secondary", "b: primary"]
    assert "By pair of architectures: ViT vs ResNet 1 supports, 1 contradicts." in f["shows"]


def test_findings_count_the_decisive_rows_per_pair():
    # a tally over both pairs would read "2 support / 2 contradict"; per pair it says that
    # the ViT/ResNet rows all contradict and the stacks' rows all support
    rows = [_verdict(role="primary", family="a: primary", verdict="contradicted", effect=0.4,
                     pvalue=0.001, p_adjusted=0.001),
            _verdict(group="fgsm", verdict="contradicted", effect=0.3, pvalue=0.01,
                     p_adjusted=0.02),
            _verdict(comparison="attention_stack vs conv_stack", verdict="supported",
                     effect=-0.3, pvalue=0.01, p_adjusted=0.02),
            _verdict(comparison="attention_stack vs conv_stack", group="fgsm",
                     verdict="supported", effect=-0.3, pvalue=0.01, p_adjusted=0.03),
            _verdict(comparison="attention_stack vs conv_stack", group="gaussian_noise")]
    f = claim_findings(pd.DataFrame(rows))
    assert ("By pair of architectures: ViT vs ResNet 0 support, 2 contradict; attention "
            "stack vs convolution stack 2 support, 0 contradict.") in f["shows"]


def test_with_options_adds_alpha_without_touching_the_originals():
    claims = load_claims(ROOT / "data" / "claims.yml")
    strict = with_options(claims, alpha=0.01)
    assert [c.id for c in strict] == [c.id for c in claims]
    assert all(c.options["alpha"] == 0.01 for c in strict)
    assert all(s.primary == c.primary for s, c in zip(strict, claims, strict=True))
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
    with pytest.raises(ValueError, match=r"verdicts lacks column\(s\) \['verdict'\]"):
        verdict_counts(v.drop(columns="verdict"), "a")


def test_most_robust_vs_smoothest_per_kind():
    s = pd.DataFrame({"arch": ["vit", "resnet", "attention_stack", "conv_stack"] * 2,
                      "seed": 0, "perturbation": ["fgsm"] * 4 + ["blur"] * 4,
                      "accuracy_drop": [0.5, 0.1, 0.3, 0.2, 0.1, 0.2, 0.3, 0.4],
                      "end_to_end_scale_free": [0.2, 0.9, 0.5, 0.6, 0.1, 0.2, 0.3, 0.4]})
    t = most_robust_vs_smoothest(s).set_index("perturbation")
    assert t.loc["fgsm", ["most_robust", "smoothest", "agree"]].tolist() == ["resnet", "vit", False]
    assert t.loc["blur", "agree"] and t.loc["blur", "vit_smaller_drop"]


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
    assert counts[("vit", "resnet")] == "2 of 3"
    assert counts[("attention_stack", "conv_stack")] == "none"


# --------------------------------------------------------------------------- issue 26


def test_pairs_dropped_for_the_noise_floor_say_floor_not_seeds():
    # 4 seed pairs, 2 dropped for the floor: more seeds would not have been the remedy
    v = evaluate([SMOOTH], summary([1.0, 1.1, 0.9, 1.0], [2.0, 2.1, 1.9, 2.0],
                                   flags=[("vit", 0), ("resnet", 1)])).iloc[0]
    assert v["verdict"] == "noise floor" and v["n_pairs"] == 2 and v["n_excluded"] == 2
    # 2 seeds and no floor: the design's limit
    assert evaluate([SMOOTH], summary([1.0, 1.1], [2.0, 2.1]))["verdict"].tolist() == [
        "not enough seeds"]


def test_a_family_that_cannot_decide_is_description_with_the_seeds_it_needs():
    # 7 kinds and 2 responses: 8 secondaries; at 5 seeds the exact p is >= 1/120, so Holm's
    # first step is >= 8/120 > 0.05: the family describes, and would need 6 seeds (8/720)
    kinds = ("fgsm", "pgd", "noise", "blur", "contrast", "rotation", "elastic")
    summ = _models(n_seeds=5, kinds=kinds, slope=(1.0,) * 7)
    t = smoothness_table(summ)
    sec = t[t["role"] == "secondary"]
    assert len(sec) == 8
    assert sec["family_floor"].to_numpy() == pytest.approx(8 / 120)
    assert (sec["seeds_needed"] == 6).all()
    prim = t[t["role"] == "primary"].iloc[0]
    assert prim["family_floor"] == pytest.approx(1 / 120) and prim["seeds_needed"] == 4
    claim = Claim("s", "x", "t", "smoothness_predicts_robustness", {},
                  {"comparison": "Kendall τ within architecture, accuracy_drop",
                   "group": "pooled"})
    v = evaluate([claim], {"smoothness": t})
    # every kind perfectly concordant (raw p 1/120 each), yet no secondary decides
    assert set(v.loc[v["role"] == "secondary", "verdict"]) == {"description"}
    assert "would need 6 seeds" in v.loc[v["role"] == "secondary", "detail"].iloc[0]
    assert v.loc[v["role"] == "primary", "verdict"].item() == "supported"
    fam = families(v).set_index("role")
    assert fam.loc["secondary", "n_decisive"] == 0
    f = claim_findings(v)
    assert f["n_described"] == 8 and f["n_tests"] == 1      # the primary alone could decide
    # ...so the book-wide bound counts one family, not the describing secondaries' too
    assert len(fam) == 2 and f["n_families"] == 1 and f["error_bound"] == pytest.approx(0.05)
    assert "The 8 rows of *S, secondary* describe and decide nothing" in f["shows"]
    assert "(it would need 6 seeds)" in f["shows"]
    # at 6 seeds the same family can decide
    t6 = smoothness_table(_models(n_seeds=6, kinds=kinds, slope=(1.0,) * 7), exact_seeds=6)
    assert (t6.loc[t6["role"] == "secondary", "family_floor"] < 0.05).all()


def test_smoothness_rows_left_with_too_few_models_by_the_floor_say_floor():
    summ = _models(n_seeds=3, kinds=("fgsm", "blur"), slope=(1.0, 1.0))
    vit = summ["arch"] == "vit"
    summ.loc[vit & ((summ["seed"] == 0) | ((summ["seed"] == 1)
                                           & (summ["perturbation"] == "fgsm"))),
             "end_to_end_flag"] = "floor"
    t = smoothness_table(summ, responses=("accuracy_drop",))
    assert t["min_seeds"].iloc[0] == 2 and t["seeds_present"].iloc[0] == 3
    # each row counts its own models left out: the pooled row 3, fgsm 2, blur 1
    within = t[t["level"] == "within architecture"].set_index("group")["n_excluded"]
    assert within.to_dict() == {"pooled": 3, "fgsm": 2, "blur": 1}
    claim = Claim("s", "x", "t", "smoothness_predicts_robustness", {},
                  {"comparison": "Kendall τ within architecture, accuracy_drop",
                   "group": "pooled"})
    v = evaluate([claim], {"smoothness": t})
    assert set(v.loc[v["role"] != "context", "verdict"]) == {"noise floor"}


def test_effective_radius_holds_clean_accuracy_fixed():
    # radii that follow clean accuracy exactly: no effective difference although the ViT's
    # raw radius is smaller at every seed
    rng = np.random.default_rng(0)
    rows = []
    for s in range(5):
        for arch, acc in (("vit", 0.95), ("resnet", 0.985), ("attention_stack", 0.93),
                          ("conv_stack", 0.96)):
            a = acc + rng.normal(0, 0.003)
            rows.append({"arch": arch, "seed": s, "method": "autoattack",
                         "group": "autoattack_radius", "n_images": 200, "clean_accuracy": a,
                         "median_radius": math.exp(-5 + 0.8 * math.log(a / (1 - a))
                                                   + rng.normal(0, 0.05))})
    rs = pd.DataFrame(rows)
    exact = effective_radius(rs.assign(median_radius=np.exp(
        -5 + 0.8 * np.log(rs["clean_accuracy"] / (1 - rs["clean_accuracy"])))))
    assert exact["n_fit"].iloc[0] == 20 and exact["slope"].iloc[0] == pytest.approx(0.8)
    np.testing.assert_allclose(exact["effective_radius"], 1.0, rtol=1e-9)
    e = effective_radius(rs)
    logit = np.log(rs["clean_accuracy"] / (1 - rs["clean_accuracy"]))
    slope, icpt = np.polyfit(logit, np.log(rs["median_radius"]), 1)
    np.testing.assert_allclose(np.log(e["effective_radius"]),
                               np.log(rs["median_radius"]) - icpt - slope * logit, atol=1e-9)
    drops = {(a, k): [0.3] * 5 for a in ("vit", "resnet") for k in ("fgsm", "pgd", "autoattack")}
    c = Claim("robust", "x", "t", "smaller_accuracy_drop", {},
              {"comparison": "vit vs resnet", "group": "autoattack_radius"})
    v = evaluate([c], {"robustness": _robustness(drops), "topolip_summary": _topolip_eps(),
                       "radius_summary": rs}).set_index(["comparison", "group"])
    assert v.loc[("vit vs resnet", "autoattack_radius"), "ratio"] < 0.6     # raw: smaller
    eff = v.loc[("vit vs resnet", "effective_radius")]
    assert eff["role"] == "secondary" and abs(math.log(eff["ratio"])) < 0.1
    # too few models for a fit: no row, never a made-up one
    assert effective_radius(rs.head(2)).empty


def test_the_primaries_joint_error_is_stated_with_holm_over_them():
    def row(claim, p, verdict):
        return dict(claim=claim, comparison="vit vs resnet", group="pgd",
                    measure="end_to_end_scale_free", role="primary", family=f"{claim}: primary",
                    scale="log", verdict=verdict, effect=-0.4, low=-0.6, high=-0.2,
                    coverage=0.95, ratio=0.67, ratio_low=0.55, ratio_high=0.82, pvalue=p,
                    p_adjusted=p, flag="")
    v = pd.DataFrame([row("a", 0.001, "supported"), row("b", 0.03, "contradicted"),
                      row("c", 0.4, "inconclusive")])
    shows = claim_findings(v)["shows"]
    # Holm over 3: 0.003 < 0.05 keeps a; b's 0.03 * 2 = 0.06 does not
    assert "at most 0.15" in shows
    assert "1 of the 2 decisive primaries stay decisive (*A*) and *B* would not." in shows
