"""The attack ladder table, the per-model task of 04, and the gradient-masking checks."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import numpy as np
import pandas as pd
import pytest
import torch
from torch import nn

from topolip.evidence.masking import MASKING_CHECKS, ladder_table, masking_checks, masking_summary
from topolip.experiments.robustness import model_logits, robustness_curves
from topolip.nets.data.mnist import load_mnist
from topolip.nets.train import accuracy

ROOT = Path(__file__).resolve().parents[1]
COLUMNS = ["perturbation", "strength", "unit", "n", "accuracy", "accuracy_clean",
           "accuracy_drop", "steps", "restarts"]


# --------------------------------------------------------------------- masking checks (no torch)

def _table(arch="vit", seed=0, **changes) -> pd.DataFrame:
    """A model that passes every check; ``changes`` override accuracies by (attack, eps, steps)."""
    acc = {("fgsm", 0.0, 1): 0.95, ("fgsm", 0.05, 1): 0.60, ("fgsm", 0.1, 1): 0.30,
           ("pgd", 0.0, 20): 0.95, ("pgd", 0.05, 20): 0.40, ("pgd", 0.1, 20): 0.05,
           ("pgd", 0.05, 5): 0.45, ("pgd", 0.3, 5): 0.0,
           ("autoattack", 0.0, 20): 0.95, ("autoattack", 0.05, 20): 0.35,
           ("autoattack", 0.1, 20): 0.02, ("square", 0.0, 200): 0.95,
           ("square", 0.05, 200): 0.70}
    for key, value in changes.items():
        attack, eps, steps = key.split("@")
        acc[(attack, float(eps), int(steps))] = value
    restarts = {("pgd", 20): 2}
    rows = [{"arch": arch, "seed": seed, "perturbation": a, "strength": e, "accuracy": v,
             "steps": s, "restarts": restarts.get((a, s), 1)} for (a, e, s), v in acc.items()]
    rows.append({"arch": arch, "seed": seed, "perturbation": "contrast", "strength": 3,
                 "accuracy": 0.99, "steps": float("nan"), "restarts": float("nan")})
    return pd.DataFrame(rows)


def _checks(table, **kw):
    out = masking_checks(table, eps=0.05, large_eps=0.3, **kw)
    return out.set_index(["arch", "seed", "check"])


def test_a_sound_model_passes_every_check_with_the_violations_as_values():
    out = _checks(_table())
    assert list(out.index.get_level_values("check")) == list(MASKING_CHECKS)
    assert out["passed"].all()
    value = out["value"].xs(("vit", 0))
    assert value["monotone_eps_fgsm"] == pytest.approx(-0.30)   # largest rise: 0.60 -> 0.30
    assert value["monotone_steps"] == pytest.approx(0.40 - 0.45)
    assert value["pgd_le_fgsm"] == pytest.approx(0.40 - 0.60)   # at eps 0.05 (-0.25 at 0.1)
    assert value["autoattack_le_pgd"] == pytest.approx(0.02 - 0.05)
    assert value["large_eps_to_zero"] == pytest.approx(0.0 - 0.05)
    assert value["black_box_weaker"] == pytest.approx(0.35 - 0.70)
    assert value["all"] == 0
    assert out.loc[("vit", 0, "all"), "detail"] == "all 8 checks pass"
    assert "PGD-5 x1 0.450, PGD-20 x2 0.400" in out.loc[("vit", 0, "monotone_steps"), "detail"]


@pytest.mark.parametrize("change,check,violation", [
    ({"fgsm@0.1@1": 0.70}, "monotone_eps_fgsm", 0.10),          # FGSM gains accuracy with eps
    ({"autoattack@0.05@20": 0.01, "autoattack@0.1@20": 0.06}, "monotone_eps_autoattack", 0.05),
    ({"pgd@0.1@20": 0.12, "pgd@0.3@5": 0.10}, "large_eps_to_zero", 0.05),  # 10% left at 0.3
    ({"pgd@0.05@5": 0.30}, "monotone_steps", 0.10),              # more steps, higher accuracy
    ({"pgd@0.05@20": 0.65, "pgd@0.05@5": 0.66, "autoattack@0.05@20": 0.36}, "pgd_le_fgsm",
     0.05),
    ({"autoattack@0.05@20": 0.45}, "autoattack_le_pgd", 0.05),
    ({"square@0.05@200": 0.20}, "black_box_weaker", 0.15),        # the black box wins
])
def test_each_masking_symptom_fails_its_check_only(change, check, violation):
    out = _checks(_table(**change))
    failed = out[~out["passed"]].index.get_level_values("check").tolist()
    assert failed == [check, "all"]
    assert out.loc[("vit", 0, check), "value"] == pytest.approx(violation)
    assert out.loc[("vit", 0, "all"), "detail"] == f"fails: {check}"


def test_the_tolerance_absorbs_sampling_and_only_sampling():
    table = _table(**{"pgd@0.05@20": 0.61})   # PGD one point above FGSM (0.60) at eps 0.05
    table.loc[table["perturbation"] == "autoattack", "accuracy"] = 0.0
    assert _checks(table).loc[("vit", 0, "pgd_le_fgsm"), "passed"]          # 0.01 <= 0.02
    assert not _checks(table, tolerance=0.005).loc[("vit", 0, "pgd_le_fgsm"), "passed"]
    big = _table(**{"pgd@0.3@5": 0.04})
    assert _checks(big).loc[("vit", 0, "large_eps_to_zero"), "passed"]
    assert not _checks(big, zero_accuracy=0.03).loc[("vit", 0, "large_eps_to_zero"), "passed"]


def test_models_are_checked_apart_and_the_failures_summarised():
    table = pd.concat([_table("vit", 0), _table("vit", 1, **{"square@0.05@200": 0.1}),
                       _table("resnet", 0, **{"pgd@0.05@5": 0.2, "pgd@0.3@5": 0.5})])
    out = masking_checks(table, eps=0.05, large_eps=0.3)
    assert len(out) == 3 * len(MASKING_CHECKS)
    flags = out[out["check"] == "all"][["arch", "seed", "passed", "value"]].values.tolist()
    assert flags == [["vit", 0, True, 0.0], ["vit", 1, False, 1.0], ["resnet", 0, False, 3.0]]
    assert masking_summary(out).values.tolist() == [
        ["vit", 1, "black_box_weaker"],
        ["resnet", 0, "monotone_eps_pgd, monotone_steps, large_eps_to_zero"]]
    assert masking_summary(out[out["arch"] == "vit"].iloc[: len(MASKING_CHECKS)]).empty


def test_the_strongest_run_of_an_eps_is_the_one_compared():
    # the PGD-5 run at eps 0.05 (0.45) is not the ladder's: pgd_le_fgsm uses PGD-20's 0.40,
    # and the curve 0.95 -> 0.40 -> 0.05 -> 0.0 (large eps) does not rise
    out = _checks(_table(**{"fgsm@0.05@1": 0.42}))
    assert out.loc[("vit", 0, "pgd_le_fgsm"), "value"] == pytest.approx(-0.02)
    assert out.loc[("vit", 0, "monotone_eps_pgd"), "value"] == pytest.approx(-0.05)


@pytest.mark.parametrize("drop,match", [
    (("square", 0.05), r"model \{'arch': 'vit', 'seed': 0\}: black_box_weaker needs square"),
    (("pgd", 0.3), "large_eps_to_zero needs a pgd row at large_eps 0.3"),
    (("pgd", 0.05, 5), "monotone_steps needs two PGD rows at eps 0.05"),
])
def test_missing_rows_raise_naming_the_model_and_the_rows(drop, match):
    t = _table()
    hit = (t["perturbation"] == drop[0]) & (t["strength"] == drop[1])
    if len(drop) == 3:
        hit &= t["steps"] == drop[2]
    with pytest.raises(ValueError, match=match):
        masking_checks(t[~hit], eps=0.05, large_eps=0.3)


@pytest.mark.parametrize("kwargs,match", [
    (dict(eps=-0.1), "eps must be a finite number in"),
    (dict(large_eps=float("nan")), "large_eps must be a finite number"),
    (dict(tolerance=2.0), r"tolerance must be a finite number in \[0, 1\]"),
    (dict(zero_accuracy="0.05"), "zero_accuracy must be"),
])
def test_bad_arguments_raise_naming_them(kwargs, match):
    args = dict(eps=0.05, large_eps=0.3) | kwargs
    with pytest.raises(ValueError, match=match):
        masking_checks(_table(), **args)
    with pytest.raises(ValueError, match=r"lacks column\(s\) \['steps'\]"):
        masking_checks(_table().drop(columns="steps"), eps=0.05, large_eps=0.3)
    with pytest.raises(ValueError, match="has no attack rows"):
        masking_checks(_table().query("perturbation == 'contrast'"), eps=0.05, large_eps=0.3)


def test_ladder_table_means_over_seeds_and_counts_flags():
    curves = pd.concat([_table("vit", 0), _table("vit", 1, **{"autoattack@0.05@20": 0.25}),
                        _table("resnet", 0)]).assign(accuracy_drop=lambda t: 0.95 - t["accuracy"])
    checks = masking_checks(curves, eps=0.05, large_eps=0.3)
    t = ladder_table(curves[curves["steps"] != 5], 0.05, masking=checks)
    vit = t[t["arch"] == "vit"].set_index("perturbation")
    assert list(vit.index) == ["fgsm", "pgd", "autoattack", "square"]
    assert vit.loc["autoattack", "accuracy_mean"] == pytest.approx(0.30)
    assert vit.loc["autoattack", "accuracy_sd"] == pytest.approx(0.0707107, rel=1e-5)
    assert vit.loc["autoattack", "accuracy_drop_mean"] == pytest.approx(0.65)
    assert t["n_flagged"].sum() == 0 and t[t["arch"] == "resnet"]["accuracy_sd"].isna().all()
    with pytest.raises(ValueError, match="no square row of vit at eps 0.1"):
        ladder_table(curves, 0.1)


def test_the_masking_module_imports_no_torch():
    code = "import json, sys, topolip.evidence.masking; print(json.dumps(sorted(sys.modules)))"
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, cwd=ROOT,
                         timeout=300)
    assert out.returncode == 0, out.stderr
    loaded = json.loads(out.stdout.strip().splitlines()[-1])
    assert "topolip.evidence.masking" in loaded
    assert not [m for m in loaded if m.split(".")[0] in {"torch", "torchattacks"}]


# ------------------------------------------------------------ the ladder on a small trained model

@pytest.fixture(scope="module")
def trained():
    """A small MLP on 500 embedded MNIST digits and the data split it came from."""
    import torch.nn.functional as F


    d = load_mnist(n_train=500, n_test=300, seed=0)
    torch.manual_seed(0)
    model = nn.Sequential(nn.Flatten(), nn.Linear(784, 32), nn.ReLU(), nn.Linear(32, 10))
    opt = torch.optim.Adam(model.parameters(), lr=1e-2)
    for _ in range(60):
        opt.zero_grad()
        F.cross_entropy(model(d.x_train), d.y_train).backward()
        opt.step()
    return model.eval(), d


LADDER_KW = dict(pgd_steps=10, pgd_restarts=2, apgd_steps=10, n_target_classes=3,
                 square_queries=100)


def test_attack_ladder_rows_and_order(trained):
    from topolip.experiments.robustness import attack_ladder

    model, d = trained
    x, y = d.x_test[:120], d.y_test[:120]
    t = attack_ladder(model, x, y, [0.0, 0.05, 0.1], square_eps=0.05, seed=0, **LADDER_KW)
    assert list(t.columns) == COLUMNS
    assert t[["perturbation", "strength"]].values.tolist() == [
        [a, e] for a in ("fgsm", "pgd", "autoattack") for e in (0.0, 0.05, 0.1)] + [
        ["square", 0.0], ["square", 0.05]]
    assert t[["steps", "restarts"]].drop_duplicates().values.tolist() == [
        [1, 1], [10, 2], [10, 1], [100, 1]]
    acc = t.set_index(["perturbation", "strength"])["accuracy"]
    clean = float(t["accuracy_clean"].iloc[0])
    assert (t.loc[t["strength"] == 0, "accuracy"] == clean).all() and clean > 0.8
    for eps in (0.05, 0.1):
        assert acc["autoattack", eps] <= acc["pgd", eps] <= acc["fgsm", eps] < clean
    assert acc["autoattack", 0.05] <= acc["square", 0.05] < clean
    assert (t["n"] == 120).all()
    assert t["accuracy_drop"].tolist() == pytest.approx((clean - t["accuracy"]).tolist())
    again = attack_ladder(model, x, y, [0.0, 0.05, 0.1], square_eps=0.05, seed=0, **LADDER_KW)
    pd.testing.assert_frame_equal(t, again)


@pytest.mark.parametrize("kwargs,match", [
    (dict(eps=[]), "eps must be a non-empty list"),
    (dict(eps=0.1), "eps must be a non-empty list"),
    (dict(eps=[0.1, 0.1]), "repeated budget"),
    (dict(eps=[-0.1]), r"eps must be a finite number in \[0, 1\]"),
    (dict(eps=[0.1], square_eps=2.0), "square_eps must be a finite number"),
    (dict(eps=[0.1], n_target_classes=0), "n_target_classes must be a positive integer"),
])
def test_attack_ladder_bad_arguments_raise(trained, kwargs, match):
    from topolip.experiments.robustness import attack_ladder

    model, d = trained
    with pytest.raises(ValueError, match=match):
        attack_ladder(model, d.x_test[:8], d.y_test[:8], **kwargs)


def test_the_per_model_task_gives_the_contract_columns_and_passes_the_checks(trained):
    from topolip.experiments.robustness import robustness_trained
    from topolip.perturbations.corruptions import CORRUPTIONS

    model, d = trained
    kw = dict(data=d, attack_eps=[0.0, 0.05, 0.1], severities=[0, 3], n_images=100,
              topolip_eps=0.05, large_eps=0.3, probe_steps=3, **LADDER_KW)
    rows, probes = robustness_trained(model, {"seed": 2}, **kw)
    assert list(rows.columns) == list(probes.columns) == COLUMNS
    assert list(dict.fromkeys(rows["perturbation"])) == [
        "fgsm", "pgd", "autoattack", "square", *CORRUPTIONS]
    assert rows[rows["unit"] == "severity"][["steps", "restarts"]].isna().all().all()
    assert probes[["perturbation", "strength", "steps", "restarts"]].values.tolist() == [
        ["pgd", 0.05, 3, 1], ["pgd", 0.3, 3, 1]]
    table = pd.concat([rows, probes]).assign(arch="mlp", seed=2)
    checks = masking_checks(table, eps=0.05, large_eps=0.3)
    assert checks["passed"].all(), checks[~checks["passed"]].to_dict("records")
    with pytest.raises(ValueError, match=r"topolip_eps 0.07 must be one of attack_eps"):
        robustness_trained(model, {"seed": 2}, **(kw | {"topolip_eps": 0.07}))
    with pytest.raises(ValueError, match=r"probe_steps \(10\) must be below pgd_steps \(10\)"):
        robustness_trained(model, {"seed": 2}, **(kw | {"probe_steps": 10}))


# --- robustness curves -------------------------------------------------------------------------

def test_strength_zero_is_clean_accuracy_and_drop_is_consistent(tiny_resnet, mnist_600):
    x, y = mnist_600.x_test, mnist_600.y_test
    t = robustness_curves(tiny_resnet, x, y, {"fgsm": [0.0, 0.1], "pgd": [0.0],
                                          "gaussian_noise": [0, 3], "elastic": [0]}, seed=1)
    clean = accuracy(tiny_resnet, x, y)
    zero = t[t["strength"] == 0]
    assert len(zero) == 4 and (zero["accuracy"] == clean).all()
    assert (t["accuracy_clean"] == clean).all() and (t["n"] == len(y)).all()
    np.testing.assert_allclose(t["accuracy_drop"], clean - t["accuracy"], atol=0)
    assert t["unit"].tolist() == ["eps", "eps", "eps", "severity", "severity", "severity"]
    assert t.loc[t["perturbation"] == "fgsm", "accuracy"].iloc[1] < clean  # the attack bites
    assert not tiny_resnet.training


def test_pgd_accuracy_does_not_increase_with_eps(tiny_resnet, mnist_600):
    eps = [0.0, 0.02, 0.05, 0.1, 0.2, 0.3]
    t = robustness_curves(tiny_resnet, mnist_600.x_test, mnist_600.y_test, {"pgd": eps}, seed=0,
                          pgd_steps=10)
    acc = t["accuracy"].to_numpy()
    assert t["strength"].tolist() == eps
    assert (np.diff(acc) <= 0).all(), acc
    assert acc[-1] < 0.2 < acc[0]


def test_pgd_is_at_least_as_strong_as_fgsm(tiny_resnet, mnist_600):
    t = robustness_curves(tiny_resnet, mnist_600.x_test, mnist_600.y_test,
                          {"fgsm": [0.1], "pgd": [0.1]}, pgd_steps=10)
    fgsm_acc, pgd_acc = t["accuracy"]
    assert pgd_acc <= fgsm_acc


def test_robustness_curves_reject_bad_input(tiny_resnet, mnist_600):
    x, y = mnist_600.x_test[:10], mnist_600.y_test[:10]
    with pytest.raises(ValueError, match=r"unknown perturbation\(s\) \['fog'\]"):
        robustness_curves(tiny_resnet, x, y, {"fog": [1]})
    with pytest.raises(ValueError, match=r"severity of 'contrast' must be an integer"):
        robustness_curves(tiny_resnet, x, y, {"contrast": [2.5]})
    with pytest.raises(ValueError, match=r"strengths\['fgsm'\] must be a non-empty list"):
        robustness_curves(tiny_resnet, x, y, {"fgsm": []})
    with pytest.raises(ValueError, match=r"strengths\['fgsm'\] must be a non-empty list"):
        robustness_curves(tiny_resnet, x, y, {"fgsm": 0.1})
    with pytest.raises(ValueError, match="exceeds 1, the whole pixel range"):
        robustness_curves(tiny_resnet, x, y, {"fgsm": [8]})
    with pytest.raises(ValueError, match="severity must be an integer in 0..5"):
        robustness_curves(tiny_resnet, x, y, {"rotation": [6]})


def test_models_never_left_in_train_mode():
    model = nn.Sequential(nn.Flatten(), nn.Linear(4, 3), nn.Dropout(0.5))
    model.train()
    x, y = torch.rand(6, 1, 2, 2), torch.arange(6) % 3
    robustness_curves(model, x, y, {"fgsm": [0.1]})
    model_logits(model, x)
    assert model.training and model[2].training
