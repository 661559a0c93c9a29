"""Claims registry and checks: verdicts follow the numbers, in both directions."""

from pathlib import Path

import pandas as pd
import pytest

from topolip.claims import CHECKS, Claim, evaluate, load_claims

ROOT = Path(__file__).resolve().parents[1]
SMOOTH = Claim("smooth", "attention is smoother", "test", "lower_topolip",
               {"measure": "geometric_mean_scale_free"})


def summary(vit, resnet):
    rows = [{"arch": a, "seed": s, "perturbation": "fgsm", "geometric_mean_scale_free": v}
            for a, values in (("vit", vit), ("resnet", resnet)) for s, v in enumerate(values)]
    return {"topolip_summary": pd.DataFrame(rows)}


@pytest.mark.parametrize(("vit", "resnet", "expected"), [
    ([1.0, 1.2], [2.0, 2.2], "supported"),
    ([2.0, 2.2], [1.0, 1.2], "contradicted"),
    ([1.0, 2.0], [1.4, 1.6], "inconclusive"),   # |1.5 - 1.5| <= pooled sd
    ([1.0], [1.0], "inconclusive"),
])
def test_lower_topolip_verdicts(vit, resnet, expected):
    v = evaluate([SMOOTH], summary(vit, resnet))
    assert v["verdict"].tolist() == [expected]
    assert v.loc[0, "attention"] == pytest.approx(sum(vit) / len(vit))
    assert v.loc[0, "convolution"] == pytest.approx(sum(resnet) / len(resnet))


def test_missing_architecture_gives_no_verdict_and_nan_gives_inconclusive():
    tables = summary([1.0], [2.0])
    only_vit = {"topolip_summary": tables["topolip_summary"].query("arch == 'vit'")}
    assert evaluate([SMOOTH], only_vit).empty
    tables["topolip_summary"].loc[0, "geometric_mean_scale_free"] = float("nan")
    assert evaluate([SMOOTH], tables)["verdict"].tolist() == ["inconclusive"]


def test_accuracy_drop_and_envelope_checks():
    rows = []
    for arch, pert_acc in (("vit", 0.8), ("resnet", 0.5)):
        for seed in (0, 1):
            for depth in (0, 1):
                rows.append({"arch": arch, "seed": seed, "perturbation": "fgsm", "depth": depth,
                             "accuracy_clean": 0.9, "accuracy_perturbed": pert_acc + 0.01 * seed,
                             "bottleneck": 0.5, "envelope": 1.0})
    t = pd.DataFrame(rows)
    robust = Claim("robust", "attention is more robust", "test", "smaller_accuracy_drop")
    env = Claim("env", "envelope", "test", "envelope_holds")
    v = evaluate([robust, env], {"topolip": t})
    assert v["verdict"].tolist() == ["supported", "supported"]
    assert v.loc[0, "attention"] == pytest.approx(0.095)
    t.loc[3, "bottleneck"] = 1.1
    assert evaluate([env], {"topolip": t})["verdict"].tolist() == ["contradicted"]


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


def test_ood_auroc_higher_is_the_claim_and_correlation_sign_decides():
    ood = pd.DataFrame({"arch": ["vit", "vit", "resnet", "resnet", "vit"],
                        "seed": [0, 1, 0, 1, 0],
                        "dataset": ["digits"] * 4 + ["in_distribution"],
                        "auroc": [0.9, 0.92, 0.6, 0.62, float("nan")]})
    c = Claim("ood", "attention separates OOD better", "test", "higher_ood_auroc")
    v = evaluate([c], {"ood_behaviour": ood})
    assert v[["comparison", "verdict"]].values.tolist() == [
        ["vit vs resnet, digits: auroc", "supported"]]
    corr = pd.DataFrame({"group": ["all", "all", "all", "fgsm"],
                         "measure": ["a", "b", "c", "a"], "n": [50, 50, 50, 8],
                         "rho": [0.5, -0.6, 0.1, 0.9], "pvalue": [0.001, 0.001, 0.4, 0.01]})
    s = Claim("s", "smooth is robust", "test", "smoothness_predicts_robustness")
    assert evaluate([s], {"topolip_accuracy_correlations": corr})["verdict"].tolist() == [
        "supported", "contradicted", "inconclusive"]


def test_registry_options_reach_the_check():
    t = summary([2.0, 2.1], [1.0, 1.1])["topolip_summary"].rename(
        columns={"perturbation": "ood_set"})
    c = Claim("o", "smoother on OOD", "test", "lower_topolip",
              {"table": "ood_topolip_summary", "group": "ood_set"})
    v = evaluate([c], {"ood_topolip_summary": t})
    assert v["verdict"].tolist() == ["contradicted"]
    assert v["comparison"].tolist() == ["vit vs resnet, fgsm: geometric_mean_scale_free"]
