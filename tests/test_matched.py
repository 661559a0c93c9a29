"""The accuracy-matched pair (issue 25): which epoch is matched, what the claims make of it."""

from __future__ import annotations

import math

import numpy as np
import pandas as pd
import pytest
from scipy import stats as st

from topolip.evidence.claims import Claim, evaluate
from topolip.experiments.matched import accuracy_matched_epochs, matched_summary


def _models(vit_val, resnet_val):
    rows = []
    for arch, vals in (("vit", vit_val), ("resnet", resnet_val)):
        rows += [{"arch": arch, "seed": s, "val_accuracy": v, "best_epoch": 5,
                  "checkpoint": f"{arch}{s}.pt"} for s, v in enumerate(vals)]
    return pd.DataFrame(rows)


def _training(curves):
    return pd.DataFrame([{"arch": a, "seed": s, "epoch": e + 1, "val_accuracy": v}
                         for (a, s), vals in curves.items() for e, v in enumerate(vals)])


def test_the_more_accurate_model_is_matched_down_to_the_nearest_kept_epoch():
    models = _models([0.95, 0.99, 0.90, 0.97], [0.99, 0.96, 0.98, 0.97])
    training = _training({
        ("resnet", 0): [0.50, 0.93, 0.97, 0.98, 0.99],   # 0.93 and 0.97 tie at 0.02: earliest
        ("vit", 1): [0.40, 0.80, 0.96, 0.98, 0.99],      # the ViT is the more accurate here
        ("resnet", 2): [0.89, 0.91, 0.95, 0.97, 0.98],   # 0.89 (epoch 1) is not kept
        ("vit", 3): [0.5] * 5, ("resnet", 3): [0.5, 0.6, 0.7, 0.8, 0.97]})  # equal: chosen
    kept = {("resnet0.pt", e) for e in range(1, 6)} | {("vit1.pt", e) for e in range(1, 6)} \
        | {("resnet2.pt", e) for e in (2, 3)} | {("resnet3.pt", 5)}
    m = accuracy_matched_epochs(models, training, ("vit", "resnet"),
                                kept=lambda c, e: (c, e) in kept).set_index("seed")
    assert m[["arch", "epoch", "matched_to"]].values.tolist() == [
        ["resnet", 2, "vit"], ["vit", 3, "resnet"], ["resnet", 2, "vit"], ["resnet", 5, "vit"]]
    assert m["val_accuracy"].tolist() == [0.93, 0.96, 0.91, 0.97]
    assert m["target_val_accuracy"].tolist() == [0.95, 0.96, 0.90, 0.97]
    assert m["best_val_accuracy"].tolist() == [0.99, 0.99, 0.98, 0.97]
    # nothing kept for a seed: that seed is left out, not matched at a wrong epoch
    none = accuracy_matched_epochs(models, training, ("vit", "resnet"),
                                   kept=lambda c, e: c != "resnet0.pt" and (c, e) in kept)
    assert 0 not in set(none["seed"]) and len(none) == 3
    with pytest.raises(ValueError, match="no validation accuracy"):
        accuracy_matched_epochs(_models([None], [0.9]), training, ("vit", "resnet"),
                                kept=lambda *_: True)
    with pytest.raises(ValueError, match="two architectures"):
        accuracy_matched_epochs(models, training, ("vit", "vit"))


def test_matched_summary_carries_the_epochs_and_suffixes_the_group():
    radii = pd.DataFrame({"arch": "resnet", "seed": 0, "method": "autoattack",
                          "radius": [0.0, 0.01, 0.02, 0.04, np.inf], "image": range(5),
                          "censored": [False] * 4 + [True], "eps_max": 0.3,
                          "clean_correct": [False] + [True] * 4, "attacks": 12.0})
    matched = pd.DataFrame([{"arch": "resnet", "seed": 0, "epoch": 2, "val_accuracy": 0.93,
                             "best_epoch": 5, "best_val_accuracy": 0.99, "matched_to": "vit",
                             "target_val_accuracy": 0.95, "checkpoint": "r.pt"}])
    s = matched_summary(radii, matched).iloc[0]
    assert s["group"] == "autoattack_radius_accuracy_matched"
    assert s["median_radius"] == 0.02 and s["clean_accuracy"] == 0.8
    assert (s["epoch"], s["matched_to"], s["target_val_accuracy"]) == (2, "vit", 0.95)
    assert "checkpoint" not in s.index
    assert not len(matched_summary(None, matched))


def test_the_matched_row_compares_the_vit_with_its_resnet_at_equal_accuracy():
    vit, res, res_matched = [0.011, 0.013, 0.012, 0.010], [0.03, 0.03, 0.04, 0.03], \
        [0.012, 0.020, 0.011, 0.016]
    rs = pd.DataFrame([{"arch": a, "seed": s, "method": "autoattack",
                        "group": "autoattack_radius", "n_images": 200, "median_radius": r}
                       for a, vals in (("vit", vit), ("resnet", res)) for s, r in enumerate(vals)])
    matched = pd.DataFrame([{"arch": "resnet", "seed": s, "method": "autoattack",
                             "group": "autoattack_radius_accuracy_matched", "n_images": 200,
                             "median_radius": r, "epoch": 3 + s, "matched_to": "vit"}
                            for s, r in enumerate(res_matched)])
    c = Claim("robust", "x", "t", "smaller_accuracy_drop", {},
              {"comparison": "vit vs resnet", "group": "autoattack_radius"})
    rob = pd.DataFrame([{"arch": a, "seed": s, "perturbation": "autoattack", "strength": eps,
                         "unit": "linf", "n": 100, "accuracy": 0.5, "accuracy_clean": 0.9,
                         "accuracy_drop": 0.4 if eps else 0.0, "steps": 20, "restarts": 2}
                        for a in ("vit", "resnet") for s in range(4) for eps in (0.0, 0.05)])
    base = {"robustness": rob, "radius_summary": rs,
            "topolip_summary": pd.DataFrame({"arch": "vit", "seed": 0, "perturbation": ["pgd"],
                                             "strength": 0.05, "accuracy_drop": 0.1})}
    v = evaluate([c], {**base, "radius_matched": matched})
    r = v.set_index("group").loc["autoattack_radius_accuracy_matched"]
    d = np.log(vit) - np.log(res_matched)
    assert r["role"] == "secondary" and r["scale"] == "log" and r["comparison"] == "vit vs resnet"
    assert r["ratio"] == pytest.approx(math.exp(d.mean()))
    assert r["pvalue"] == pytest.approx(st.ttest_1samp(d, 0).pvalue)
    assert "resnet seed 0 epoch 3" in r["detail"] and "accuracy held fixed" in r["detail"]
    primary = v.set_index("group").loc["autoattack_radius"]
    assert primary["role"] == "primary"
    assert primary["ratio"] == pytest.approx(math.exp((np.log(vit) - np.log(res)).mean()))
    # without the table, no matched row
    v = evaluate([c], base)
    assert "autoattack_radius_accuracy_matched" not in set(v["group"])


def test_matched_findings_leave_out_a_seed_without_a_radius():
    from topolip.report.findings import matched_findings

    rs = pd.DataFrame({"arch": ["vit", "resnet", "vit", "resnet"], "seed": [0, 0, 1, 1],
                       "method": "autoattack", "median_radius": [0.01, 0.04, 0.0, 0.05]})
    m = pd.DataFrame({"arch": "resnet", "seed": [0, 1], "method": "autoattack",
                      "median_radius": [0.02, 0.03], "epoch": [3, 4], "val_accuracy": 0.9,
                      "matched_to": "vit", "target_val_accuracy": 0.91})
    f = matched_findings(rs, m)
    assert (f["rd-matched-n"], f["rd-matched-ratio"], f["rd-chosen-ratio"]) == ("2", "0.50",
                                                                                 "0.25")
    assert f["rd-matched-epochs"].count("epoch") == 2
    f = matched_findings(rs.iloc[2:], m.iloc[1:])   # the one seed has a ViT radius of 0
    assert f["rd-matched-ratio"] == f["rd-chosen-ratio"] == "not measured"
    empty = matched_findings(rs, m.iloc[:0])
    assert (empty["rd-matched-n"], empty["rd-matched-epochs"]) == ("0", "none")
