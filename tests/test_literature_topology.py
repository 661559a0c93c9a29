"""Rules and tables of the literature chapter's topology rows (issue 28, rows 3, 5, 6)."""
import numpy as np
import pandas as pd
import pytest
import torch

from topolip.evidence.literature_topology import TOPOLOGY_RULES
from topolip.experiments.literature_topology import (
    adv_share_rows,
    betti_at_scale,
    betti_table,
    knn_scale,
    ood_lifetime_rows,
    train_mlp,
)

VERDICTS = {"consistent", "inconsistent", "not comparable"}


def _betti(simplify_fast=True, last_simple=True, seeds=5):
    rows = []
    for seed in range(seeds):
        for arch, steep in (("relu", 3 if simplify_fast else 1), ("tanh", 2)):
            for layer in range(4):
                for label in (0, 1):
                    b0 = max(1, 1 + steep * (3 - layer) + (seed % 2))
                    if layer == 3:
                        b0 = 1 if last_simple else 3
                    rows.append(dict(arch=arch, seed=seed, layer=layer, label=label,
                                     betti0=b0, betti1=0 if layer == 3 else 1))
    return pd.DataFrame(rows)


def _check(r):
    assert r["verdict"] in VERDICTS and isinstance(r["reason"], str) and r["reason"]
    assert "not computed" not in r["reason"]


def test_betti_depth_consistent_and_planted():
    r = TOPOLOGY_RULES["betti_depth"](_betti(), {})
    _check(r)
    assert r["verdict"] == "consistent" and r["high"] < 0
    slow = _betti(simplify_fast=False)
    assert TOPOLOGY_RULES["betti_depth"](slow, {})["verdict"] == "inconsistent"
    assert TOPOLOGY_RULES["betti_depth"](_betti(last_simple=False), {})["verdict"] == "inconsistent"
    nc = TOPOLOGY_RULES["betti_depth"](_betti(seeds=1), {})
    _check(nc)
    assert nc["verdict"] == "not comparable"


def test_betti_depth_rival():
    r = TOPOLOGY_RULES["betti_depth_rival"](_betti(), {})
    _check(r)
    assert r["verdict"] == "inconsistent" and r["our_number"] == 0
    t = _betti()
    t.loc[t["layer"] == 2, "betti0"] = 50  # planted rise
    assert TOPOLOGY_RULES["betti_depth_rival"](t, {})["verdict"] == "consistent"


def _ood(p):
    return pd.DataFrame([dict(arch=a, seed=s, ood_set=o, p_value=p, auc=0.8)
                         for a in ("vit", "resnet") for s in range(3)
                         for o in ("noise", "fashion")])


def test_ood_h0_lifetimes():
    r = TOPOLOGY_RULES["ood_h0_lifetimes"](_ood(1e-6), {})
    _check(r)
    assert r["verdict"] == "consistent" and r["our_number"] == 1
    assert TOPOLOGY_RULES["ood_h0_lifetimes"](_ood(0.5), {})["verdict"] == "inconsistent"
    nc = TOPOLOGY_RULES["ood_h0_lifetimes"](_ood(1e-6).drop(columns="auc"), {})
    assert nc["verdict"] == "not comparable" and "auc" in nc["reason"]


def _adv(sign=1.0, flip=0):
    rng = np.random.default_rng(0)
    rows = []
    for i, s in enumerate(range(6)):
        sg = -sign if i < flip else sign
        for f in np.arange(11) / 10:
            rows.append(dict(arch="vit", seed=s, fraction=f,
                             total_persistence=10 + sg * 5 * f + rng.normal(0, 0.3)))
    return pd.DataFrame(rows)


def test_adv_share_persistence():
    r = TOPOLOGY_RULES["adv_share_persistence"](_adv(), {})
    _check(r)
    assert r["verdict"] == "consistent" and r["low"] > 0
    assert TOPOLOGY_RULES["adv_share_persistence"](_adv(-1.0), {})["our_number"] < 0
    assert TOPOLOGY_RULES["adv_share_persistence"](_adv(flip=3), {})["verdict"] == "inconsistent"


def test_betti_of_hand_made_clouds():
    t = np.linspace(0, 2 * np.pi, 100, endpoint=False)
    circle = np.c_[np.cos(t), np.sin(t)]
    assert betti_at_scale(circle, knn_scale(circle)) == (1, 1)
    rng = np.random.default_rng(0)
    two = np.r_[rng.normal(0, 0.1, (50, 2)), rng.normal(10, 0.1, (50, 2))]
    assert betti_at_scale(two, knn_scale(two))[0] == 2
    with pytest.raises(ValueError, match="more than k"):
        knn_scale(circle[:3])


def test_experiment_tables_on_a_tiny_model():
    g = torch.Generator().manual_seed(0)
    x = torch.rand(60, 8, generator=g)
    y = (x[:, 0] > 0.5).long()
    model = train_mlp(x, y, activation="tanh", seed=0, width=6, depth=2, epochs=5)
    bt = betti_table(model, x, y, arch="tanh", seed=0)
    assert set(bt["layer"]) == {0, 1, 2} and (bt["betti0"] >= 1).all()
    feats = model[:-1]
    ood = ood_lifetime_rows(feats, x[:30], {"far": x[30:] * 5}, arch="tanh", seed=0)
    assert ood.loc[0, "ood_set"] == "far" and 0 <= ood.loc[0, "p_value"] <= 1
    adv = adv_share_rows(feats, x[:20], x[20:40], arch="tanh", seed=0)
    assert len(adv) == 11 and adv["n_adv"].iloc[-1] == 20
    assert adv["total_persistence"].gt(0).all()


def test_betti_depth_is_not_comparable_when_the_input_is_already_simple():
    # Naitzat et al. simplify entangled classes; input classes already (1, 0) leave nothing to
    # simplify, whatever the later layers do
    t = _betti()
    t.loc[t["layer"] == 0, ["betti0", "betti1"]] = [1, 0]
    r = TOPOLOGY_RULES["betti_depth"](t, {})
    _check(r)
    assert r["verdict"] == "not comparable" and "no topology to simplify" in r["reason"]
    t.loc[(t["layer"] == 0) & (t["label"] == 1), "betti1"] = 1   # one class with a loop
    assert TOPOLOGY_RULES["betti_depth"](t, {})["verdict"] == "consistent"
