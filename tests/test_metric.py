"""TopoLip metric: ratios, scale-free invariance, undefined ratios, envelope, bad input."""

import math

import numpy as np
import pytest

from topolip.topology.metric import (
    EnvelopeViolation,
    layer_diagrams,
    median_pairwise_distance,
    summarize,
    topolip_table,
    topological_displacement,
)
from topolip.topology.spec import TopoLipSpec


@pytest.fixture
def clouds():
    rng = np.random.default_rng(0)
    x = rng.normal(size=(40, 6))
    y = x + 0.05 * rng.normal(size=x.shape)
    w = rng.normal(size=(6, 9))
    clean = {"input": x, "linear": x @ w, "scaled": 10 * np.tanh(x @ w)}
    pert = {"input": y, "linear": y @ w, "scaled": 10 * np.tanh(y @ w)}
    return clean, pert


def test_ratios_telescope_and_scale_free_ignores_rescaling(clouds):
    clean, pert = clouds
    t = topolip_table(clean, pert)
    s = summarize(t)
    assert np.prod(t["topolip"].iloc[1:]) == pytest.approx(s["end_to_end"], rel=1e-12)
    assert s["end_to_end"] == pytest.approx(t["delta"].iloc[-1] / t["delta"].iloc[0])
    assert s["geometric_mean"] == pytest.approx(s["end_to_end"] ** 0.5)
    # multiply one layer's both clouds by 7: raw TopoLip into it x7, scale-free unchanged
    t7 = topolip_table({**clean, "linear": 7 * clean["linear"]},
                       {**pert, "linear": 7 * pert["linear"]})
    assert t7.loc[1, "topolip"] == pytest.approx(7 * t.loc[1, "topolip"], rel=1e-9)
    assert t7.loc[2, "topolip"] == pytest.approx(t.loc[2, "topolip"] / 7, rel=1e-9)
    assert t7["topolip_scale_free"].iloc[1:].to_numpy() == pytest.approx(
        t["topolip_scale_free"].iloc[1:].to_numpy(), rel=1e-9)
    assert t7.loc[1, "scale"] == pytest.approx(7 * t.loc[1, "scale"])


def test_scale_free_delta_equals_delta_of_rescaled_clouds(clouds):
    clean, pert = clouds
    t = topolip_table(clean, pert)
    s = median_pairwise_distance(clean["linear"])
    direct = topological_displacement(clean["linear"] / s, pert["linear"] / s)
    assert t.loc[1, "delta_scale_free"] == pytest.approx(direct, rel=1e-9)


def test_undefined_ratio_is_nan_with_a_reason(clouds):
    clean, _ = clouds
    same = {k: v.copy() for k, v in clean.items()}
    t = topolip_table(clean, same)
    assert (t["delta"] == 0).all()
    assert t["topolip"].isna().all() and t["topolip_scale_free"].isna().all()
    assert t.loc[0, "topolip_reason"].startswith("first probe point")
    assert "below tolerance" in t.loc[1, "topolip_reason"]


def test_envelope_holds_and_is_reported(clouds):
    clean, pert = clouds
    t = topolip_table(clean, pert)
    assert (t["bottleneck"] <= t["envelope"]).all()
    eps0 = np.linalg.norm(clean["input"] - pert["input"], axis=1).max()
    assert t.loc[0, "eps"] == pytest.approx(eps0)
    assert t.loc[0, "envelope"] == pytest.approx(2 * eps0)


def test_wrong_diagrams_break_the_envelope(clouds):
    clean, pert = clouds
    wrong = layer_diagrams({k: 3 * v for k, v in clean.items()})  # a bug: diagrams of another cloud
    with pytest.raises(EnvelopeViolation, match="layer 'input': bottleneck displacement"):
        topolip_table(clean, pert, clean_diagrams=wrong)


def test_unpaired_clouds_of_other_sizes(clouds):
    clean, pert = clouds
    other = {k: v[:25] for k, v in pert.items()}
    with pytest.raises(ValueError, match="paired clouds at 'input' differ in shape"):
        topolip_table(clean, other)
    t = topolip_table(clean, other, paired=False)
    assert t["eps"].isna().all() and t["envelope"].isna().all()
    assert np.isfinite(t["delta"]).all() and (t["delta"] > 0).all()


def test_bad_input_names_the_layer(clouds):
    clean, pert = clouds
    broken = {**pert, "linear": pert["linear"].copy()}
    broken["linear"][3, 2] = np.nan
    with pytest.raises(ValueError, match="perturbed activations at 'linear': expected finite"):
        topolip_table(clean, broken)
    with pytest.raises(ValueError, match="probe labels differ"):
        topolip_table(clean, {"input": pert["input"]})
    with pytest.raises(ValueError, match="at least 2 points"):
        topological_displacement(np.zeros((1, 3)), np.zeros((4, 3)))
    with pytest.raises(ValueError, match="all points coincide"):
        median_pairwise_distance(np.ones((5, 2)))
    with pytest.raises(ValueError, match="q: expected the ground metric l_q"):
        TopoLipSpec(q=3)
    with pytest.raises(ValueError, match="p: expected the order p >= 1"):
        TopoLipSpec(p=0.5)


def test_known_displacement_by_hand():
    square = np.array([[0.0, 0], [1, 0], [1, 1], [0, 1]])
    # H0: three bars (0,1) -> (0,2), each moved by 1 in l_inf; H1: (1, sqrt2) vs (2, 2 sqrt2)
    # is cheaper through the diagonal: (sqrt2 - 1)/2 + (sqrt2 - 1)
    h1 = 1.5 * (math.sqrt(2) - 1)
    assert topological_displacement(square, 2 * square) == pytest.approx(3 + h1, rel=1e-12)
    # p = 2: degrees combine as sqrt(W0^2 + W1^2), W0^2 = 3, W1^2 = ((sqrt2-1)/2)^2 + (sqrt2-1)^2
    w1_sq = (math.sqrt(2) - 1) ** 2 / 4 + (math.sqrt(2) - 1) ** 2
    assert topological_displacement(square, 2 * square, TopoLipSpec(p=2)) == pytest.approx(
        math.sqrt(3 + w1_sq), rel=1e-12)
