"""Minimal adversarial L-inf radii: bisection with APGD against the closed form of an affine
classifier, FAB's cross-check, censoring, robust accuracy from radii and the eps grid."""

from __future__ import annotations

import math
from types import SimpleNamespace

import numpy as np
import pytest
import torch
from torch import nn

from topolip.experiments.model_measurement import model_images
from topolip.experiments.radii import radii_trained, radius_check, radius_summary, robust_curve
from topolip.perturbations.radius import (
    eps_grid_from_radii,
    fab_radius,
    minimal_radius,
    radius_agreement,
    robust_accuracy_from_radii,
)

K, SIDE = 5, 4
STEPS = 5
BRACKET = 4.0
#: the final bisection bracket is at most BRACKET ** (2 ** -STEPS) wide in ratio
RATIO_TOL = BRACKET ** (2.0 ** -STEPS)


def _linear_radius(model: nn.Sequential, x: torch.Tensor, y: torch.Tensor) -> np.ndarray:
    """Closed form: for f(x) = W x + b, the minimal L-inf perturbation that makes class k beat
    y is (z_y - z_k) / ||w_y - w_k||_1 (Hoelder's inequality, attained at the ball's corner
    -sign(w_y - w_k)); the minimal radius is its minimum over k != y, 0 if misclassified."""
    w = model[1].weight.detach().double()
    z = model(x).detach().double()
    out = []
    for i in range(len(x)):
        yi = int(y[i])
        if int(z[i].argmax()) != yi:
            out.append(0.0)
            continue
        out.append(min(float((z[i, yi] - z[i, k]) / (w[yi] - w[k]).abs().sum())
                       for k in range(K) if k != yi))
    return np.array(out)


def _between(radii: np.ndarray) -> float:
    """A budget halfway (geometrically) between the two middle radii: no radius lies on it."""
    s = np.sort(radii)
    m = len(s) // 2
    return float(np.sqrt(s[m - 1] * s[m]))


@pytest.fixture(scope="module")
def linear():
    """An affine 5-class classifier on 4x4 images in [0.4, 0.6]: every minimal radius found
    below is far from the [0, 1] box (< 0.4), so the closed form holds."""
    torch.manual_seed(0)
    model = nn.Sequential(nn.Flatten(), nn.Linear(SIDE * SIDE, K)).eval()
    x = 0.4 + 0.2 * torch.rand(20, 1, SIDE, SIDE)
    with torch.no_grad():
        y = model(x).argmax(1)
    y[:3] = (y[:3] + 1) % K          # three clean-misclassified images
    exact = _linear_radius(model, x, y)
    assert (exact[3:] > 0).all() and exact.max() < 0.3
    return model, x, y, exact


@pytest.fixture(scope="module")
def bisected(linear):
    model, x, y, _ = linear
    return minimal_radius(model, x, y, eps_max=0.3, steps=STEPS, bracket=BRACKET,
                          apgd_steps=20, n_target_classes=K - 1)


def test_bisection_matches_the_closed_form_within_its_tolerance(linear, bisected):
    _, _, _, exact = linear
    r = bisected.radius
    assert bisected.n_censored == 0
    ratio = r[3:] / exact[3:]
    # an upper bound (never below the true minimum), within the bracket's width of it
    assert (ratio >= 1 - 1e-6).all()
    assert (ratio <= RATIO_TOL * (1 + 1e-6)).all()


def test_returned_images_are_adversarial_and_within_the_norm(linear, bisected):
    model, x, y, exact = linear
    adv = bisected.adv
    with torch.no_grad():
        pred = model(adv).argmax(1)
    assert (pred != y).all()
    norm = (adv - x).flatten(1).abs().amax(1).double().numpy()
    np.testing.assert_allclose(norm, bisected.norm, atol=1e-7)
    assert (bisected.norm <= bisected.radius + 1e-6).all()
    # the found perturbation's norm is itself at least the true minimal radius
    assert (bisected.norm[3:] >= exact[3:] * (1 - 1e-5)).all()
    assert float(adv.min()) >= 0 and float(adv.max()) <= 1


def test_clean_misclassified_images_have_radius_zero(linear, bisected):
    _, x, _, _ = linear
    assert bisected.radius[:3].tolist() == [0.0, 0.0, 0.0]
    assert not bisected.clean_correct[:3].any() and bisected.clean_correct[3:].all()
    assert torch.equal(bisected.adv[:3], x[:3])


def test_images_not_broken_at_eps_max_are_censored(linear):
    model, x, y, exact = linear
    eps_max = _between(exact[3:])
    r = minimal_radius(model, x, y, eps_max=eps_max, steps=2, apgd_steps=20,
                       n_target_classes=K - 1)
    above = exact > eps_max
    assert r.censored.tolist() == above.tolist()
    assert r.n_censored == int(above.sum()) > 0
    assert np.isinf(r.radius[above]).all()
    assert torch.equal(r.adv[above], x[above])
    assert np.isfinite(r.radius[~above]).all()


def test_two_rung_bracket_halves_the_grid(linear):
    """bracket=2 is the plain halving grid: the final bracket is 2 ** (2 ** -steps) wide."""
    model, x, y, exact = linear
    r = minimal_radius(model, x, y, eps_max=0.3, eps_min=0.3 / 256, steps=3, bracket=2.0,
                       apgd_steps=20,
                       n_target_classes=K - 1)
    ratio = r.radius[3:] / exact[3:]
    assert (ratio >= 1 - 1e-6).all() and (ratio <= 2 ** (2.0 ** -3) * (1 + 1e-6)).all()


def test_fgsm_radius_is_an_upper_bound_checked_per_image(linear):
    """FGSM's radius is never below the true minimum (each is a budget at which its image was
    found adversarial), and its images pass the same per-image check."""
    model, x, y, exact = linear
    r = minimal_radius(model, x, y, eps_max=0.3, steps=4, attack="fgsm")
    fin = np.isfinite(r.radius)
    assert fin[3:].sum() >= 10
    ratio = r.radius[3:][fin[3:]] / exact[3:][fin[3:]]
    assert (ratio >= 1 - 1e-6).all()
    # one gradient-sign step misses the best corner where the CE gradient mixes classes:
    # several radii well above APGD's bracket (ratios 1.5-1.6 here), which APGD never shows
    assert (ratio > 1.3).sum() >= 3
    with torch.no_grad():
        pred = model(r.adv).argmax(1)
    assert (pred[torch.as_tensor(fin)] != y[torch.as_tensor(fin)]).all()
    assert (r.norm <= r.radius + 1e-6).all()


def test_pgd_radius_is_an_upper_bound_between_apgd_and_fgsm(linear, bisected):
    """PGD's radius (the ladder's PGD, cross-entropy loss) is an upper bound checked per image.
    On an affine model the cross-entropy ascent heads for the corner FGSM's one step takes, so
    PGD misses the same images FGSM does (ratios 1.5-1.6 to the closed form) where APGD-T's
    targeted loss finds the nearest class: PGD lies between the two, image by image."""
    model, x, y, exact = linear
    r = minimal_radius(model, x, y, eps_max=0.3, steps=STEPS, bracket=BRACKET, attack="pgd",
                       pgd_steps=20, pgd_restarts=2)
    f = minimal_radius(model, x, y, eps_max=0.3, steps=STEPS, bracket=BRACKET, attack="fgsm")
    assert np.isfinite(r.radius).all() and (r.radius[:3] == 0).all()
    ratio = r.radius[3:] / exact[3:]
    assert (ratio >= 1 - 1e-6).all() and (ratio > 1.3).sum() >= 3
    assert (r.radius >= bisected.radius * (1 - 1e-9)).all()
    assert (r.radius <= f.radius * (1 + 1e-9)).all()
    with torch.no_grad():
        assert (model(r.adv[3:]).argmax(1) != y[3:]).all()
    assert (r.norm <= r.radius + 1e-6).all()


def test_eps_min_floors_the_bracket(linear):
    """With eps_min = eps_max the bracket is one rung: every broken image is bisected on
    (0, eps_max], so its radius is eps_max / 2 ** j for some j <= steps."""
    model, x, y, exact = linear
    r = minimal_radius(model, x, y, eps_max=0.3, eps_min=0.3, steps=3, apgd_steps=20,
                       n_target_classes=K - 1)
    fin = r.radius[3:]
    assert (fin >= exact[3:] * (1 - 1e-6)).all()
    assert (fin - exact[3:] <= 0.3 / 2 ** 3 + 1e-9).all()


@pytest.mark.parametrize("kwargs, match", [
    ({"eps_max": 0.0}, "eps_max must be a number in"),
    ({"eps_max": -0.1}, "eps_max must be a number in"),
    ({"eps_max": 2.0}, "eps_max must be a number in"),
    ({"eps_max": float("nan")}, "eps_max must be a number in"),
    ({"eps_max": 0.1, "steps": 0}, "steps must be a positive integer"),
    ({"eps_max": 0.1, "apgd_steps": 0}, "apgd_steps must be a positive integer"),
    ({"eps_max": 0.1, "eps_min": 0.2}, "eps_min .* must not exceed eps_max"),
    ({"eps_max": 0.1, "bracket": 1.0}, "bracket must be a number > 1"),
    ({"eps_max": 0.1, "bracket": float("inf")}, "bracket must be a number > 1"),
    ({"eps_max": 0.1, "attack": "cw"}, "attack must be one of"),
    ({"eps_max": 0.1, "attack": "pgd", "pgd_steps": 0}, "pgd_steps must be a positive integer"),
    ({"eps_max": 0.1, "attack": "pgd", "pgd_restarts": 0},
     "pgd_restarts must be a positive integer"),
])
def test_bad_parameters_raise(linear, kwargs, match):
    model, x, y, _ = linear
    with pytest.raises(ValueError, match=match):
        minimal_radius(model, x, y, **kwargs)


def test_bad_images_and_labels_raise(linear):
    model, x, y, _ = linear
    bad = x.clone()
    bad[0, 0, 0, 0] = float("nan")
    with pytest.raises(ValueError, match="NaN"):
        minimal_radius(model, bad, y, eps_max=0.1)
    with pytest.raises(ValueError, match=r"\(N, C, H, W\)|4-D|dimensions"):
        minimal_radius(model, x[:, 0], y, eps_max=0.1)
    with pytest.raises(ValueError, match="20 images but y has 19 labels"):
        minimal_radius(model, x, y[:-1], eps_max=0.1)
    with pytest.raises(ValueError, match="1-D integer tensor"):
        minimal_radius(model, x, y.float(), eps_max=0.1)


def test_a_failing_check_names_the_image(linear, bisected):
    """The per-image check, fed a result whose image is not adversarial or lies outside its
    reported norm, raises naming that image."""
    from dataclasses import replace

    from topolip.perturbations import radius as mod

    model, x, y, _ = linear
    i = 7
    adv = bisected.adv.clone()
    adv[i] = x[i]                       # the clean image: classified correctly
    with pytest.raises(ValueError, match=f"image {i} at radius .* is classified correctly"):
        mod._check_result(model, x, y, replace(bisected, adv=adv))
    radius = bisected.radius.copy()
    radius[i] /= 2                      # the image lies beyond the radius reported
    with pytest.raises(ValueError, match=f"image {i} lies at L-inf"):
        mod._check_result(model, x, y, replace(bisected, radius=radius))


def test_fab_agrees_with_the_closed_form_and_with_bisection(linear, bisected):
    model, x, y, exact = linear
    f = fab_radius(model, x, y, eps_max=0.3, steps=50)
    assert f[:3].tolist() == [0.0, 0.0, 0.0]
    # FAB on an affine model projects exactly on the boundary, then overshoots slightly
    np.testing.assert_allclose(f[3:], exact[3:], rtol=0.02)
    assert (f[3:] >= exact[3:] * (1 - 1e-5)).all()
    agree = radius_agreement(bisected.radius, f)
    assert agree["n"] == len(x) - 3 and agree["n_only_radius"] == agree["n_only_reference"] == 0
    assert agree["share_within"] == 1.0
    assert abs(agree["median_ratio"] - 1) < 0.03


def test_fab_not_found_within_eps_max_is_inf(linear):
    model, x, y, exact = linear
    eps_max = _between(exact[3:])
    f = fab_radius(model, x, y, eps_max=eps_max, steps=50)
    # FAB overshoots the boundary by under 2% (test above): decide away from the edge
    assert np.isinf(f[exact > eps_max]).all()
    assert np.isfinite(f[(exact > 0) & (exact < eps_max / 1.02)]).all()


def test_radius_agreement_by_hand():
    out = radius_agreement([0.1, 0.2, 0.30, 0.0, np.inf, 0.5],
                           [0.1, 0.1, 0.25, 0.0, 0.2, np.inf])
    # compared: 0.1/0.1 = 1, 0.2/0.1 = 2 (outside 1.25), 0.30/0.25 = 1.2
    assert out["n"] == 3 and out["n_only_radius"] == 1 and out["n_only_reference"] == 1
    assert out["median_ratio"] == pytest.approx(1.2)
    assert out["share_within"] == pytest.approx(2 / 3)
    none = radius_agreement([0.0, np.inf], [0.1, 0.0])
    assert none["n"] == 0 and math.isnan(none["median_ratio"]) and math.isnan(none["share_within"])


@pytest.mark.parametrize("a, b, match", [
    ([0.1], [0.1, 0.2], "1 images but reference has 2"),
    ([], [], "radius is empty"),
    ([np.nan], [0.1], "NaN"),
    ([-0.1], [0.1], "negative"),
])
def test_radius_agreement_bad_input(a, b, match):
    with pytest.raises(ValueError, match=match):
        radius_agreement(a, b)
    with pytest.raises(ValueError, match="factor must be a number > 1"):
        radius_agreement([0.1], [0.1], factor=1.0)


def test_robust_accuracy_from_hand_made_radii():
    radii = [0.0, 0.01, 0.02, 0.02, 0.05, np.inf]
    acc = robust_accuracy_from_radii(radii, [0.0, 0.005, 0.01, 0.02, 0.049, 0.05, 0.3])
    # robust at eps iff radius > eps: 0 never; inf always
    assert acc.tolist() == pytest.approx([5 / 6, 5 / 6, 4 / 6, 2 / 6, 2 / 6, 1 / 6, 1 / 6])
    with pytest.raises(ValueError, match="above eps_max 0.1"):
        robust_accuracy_from_radii(radii, [0.0, 0.3], eps_max=0.1)
    assert robust_accuracy_from_radii([0.0, 0.2], [0.3], eps_max=0.1).tolist() == [0.0]
    with pytest.raises(ValueError, match="eps_grid must be"):
        robust_accuracy_from_radii(radii, [-0.1])
    with pytest.raises(ValueError, match="eps_grid must be"):
        robust_accuracy_from_radii(radii, [])
    with pytest.raises(ValueError, match="NaN"):
        robust_accuracy_from_radii([np.nan], [0.1])


def test_eps_grid_reaches_both_ends_for_every_model():
    rng = np.random.default_rng(0)
    radii = {"vit": np.concatenate([[0.0] * 5, rng.lognormal(np.log(0.013), 0.4, 200)]),
             "resnet": np.concatenate([[0.0] * 2, rng.lognormal(np.log(0.06), 0.5, 200),
                                       [np.inf] * 3])}
    grid = eps_grid_from_radii(radii, n_points=10)
    assert grid[0] == 0 and len(grid) == 11 and (np.diff(grid) > 0).all()
    np.testing.assert_allclose(grid[2] / grid[1], grid[-1] / grid[-2])  # geometric
    for r in radii.values():
        acc = robust_accuracy_from_radii(r, grid)
        clean = acc[0]
        assert acc[1] >= 0.9 * clean and acc[-1] <= 0.1 * clean
    # the ends are tight: the ViT sets the bottom, the ResNet the top
    vit = np.sort(radii["vit"][radii["vit"] > 0])
    assert grid[1] == pytest.approx(vit[200 - 180], rel=1e-6)
    res = np.sort(radii["resnet"][radii["resnet"] > 0])
    assert grid[-1] == res[203 - 20 - 1]


def test_eps_grid_bad_input():
    with pytest.raises(ValueError, match="radii is empty"):
        eps_grid_from_radii({})
    with pytest.raises(ValueError, match="'m' classifies none"):
        eps_grid_from_radii({"m": [0.0, 0.0]})
    with pytest.raises(ValueError, match="'m': 5 of its 10 correct images are censored"):
        eps_grid_from_radii({"m": [0.1] * 5 + [np.inf] * 5})
    with pytest.raises(ValueError, match="0 < bottom < top < 1"):
        eps_grid_from_radii({"m": [0.1, 0.2]}, top=0.1, bottom=0.9)
    with pytest.raises(ValueError, match="n_points must be >= 2"):
        eps_grid_from_radii({"m": [0.1, 0.2]}, n_points=1)


# ------------------------------------------------------------------ the tables of 04_robustness

def _split(x, y):
    return SimpleNamespace(x_test=x, y_test=y)


@pytest.fixture(scope="module")
def radii_rows(linear):
    model, x, y, _ = linear
    rows = radii_trained(model, {"seed": 0}, data=_split(x, y), n_images=20, eps_max=0.3,
                         steps=3, apgd_steps=10, n_target_classes=K - 1, n_check=8,
                         fab_steps=30)
    return rows.assign(arch="vit", seed=0)


def test_radii_trained_gives_every_method_on_the_seeds_images(linear, radii_rows):
    model, x, y, exact = linear
    counts = radii_rows["method"].value_counts().to_dict()
    assert counts == {"autoattack": 20, "pgd": 20, "fgsm": 20, "fab": 8}
    perm = model_images(x, y, 0, n_robust=20)
    apgd = radii_rows[radii_rows["method"] == "autoattack"]
    assert apgd["label"].tolist() == perm.y.tolist()
    # the images are the seed's permutation: their closed-form radii, as upper bounds
    exact_perm = _linear_radius(model, perm.x, perm.y)
    r = apgd["radius"].to_numpy()
    assert (r >= exact_perm * (1 - 1e-6)).all()
    assert (r[exact_perm > 0] <= exact_perm[exact_perm > 0] * 4 ** (2 ** -3) * (1 + 1e-6)).all()
    with pytest.raises(ValueError, match="n_check"):
        radii_trained(model, {"seed": 0}, data=_split(x, y), n_images=5, eps_max=0.3,
                      n_check=6)
    for methods in ((), ("autoattack", "cw"), "pgd"):
        with pytest.raises(ValueError, match="methods must be a non-empty subset"):
            radii_trained(model, {"seed": 0}, data=_split(x, y), n_images=5, eps_max=0.3,
                          n_check=0, methods=methods)
    with pytest.raises(ValueError, match="FAB cross-check"):
        radii_trained(model, {"seed": 0}, data=_split(x, y), n_images=5, eps_max=0.3,
                      n_check=2, methods=("pgd",))
    only = radii_trained(model, {"seed": 0}, data=_split(x, y), n_images=5, eps_max=0.3,
                         n_check=0, methods=("autoattack",), apgd_steps=10,
                         n_target_classes=K - 1)
    assert set(only["method"]) == {"autoattack"} and len(only) == 5


def test_radius_summary_median_is_where_the_curve_crosses_one_half(radii_rows):
    s = radius_summary(radii_rows, eps=0.05).set_index("method")
    apgd = radii_rows[radii_rows["method"] == "autoattack"]["radius"].to_numpy()
    assert s.loc["autoattack", "median_radius"] == pytest.approx(np.median(apgd))
    assert s.loc["autoattack", "group"] == "autoattack_radius"
    assert s.loc["autoattack", "clean_accuracy"] == pytest.approx(17 / 20)
    assert s.loc["autoattack", "robust_accuracy_at_eps"] == pytest.approx((apgd > 0.05).mean())
    assert robust_accuracy_from_radii(apgd, [s.loc["autoattack", "median_radius"]])[0] <= 0.5
    # FGSM is the weaker attack: its median radius is not below APGD's
    assert s.loc["fgsm", "median_radius"] >= s.loc["autoattack", "median_radius"]
    assert "fab" not in s.index
    # most images censored: the median is +inf, most misclassified: 0 (never a made-up number)
    censored = radius_summary(radii_rows.assign(radius=np.inf, censored=True))
    assert np.isinf(censored["median_radius"]).all() and censored["log_median_radius"].isna().all()
    assert (radius_summary(radii_rows.assign(radius=0.0))["median_radius"] == 0).all()


def test_radius_check_and_robust_curve(radii_rows):
    c = radius_check(radii_rows).iloc[0]
    a = radii_rows.set_index(["method", "image"])["radius"]
    ref = radius_agreement(a.loc["autoattack"].iloc[:8].to_numpy(), a.loc["fab"].to_numpy())
    assert c["median_ratio"] == pytest.approx(ref["median_ratio"]) and c["n"] == ref["n"]
    curve = robust_curve(radii_rows)
    apgd = curve[curve["method"] == "autoattack"].sort_values("eps")
    clean = apgd["clean_accuracy"].iloc[0]
    assert apgd["robust_accuracy"].iloc[0] == pytest.approx(clean)          # eps = 0
    assert apgd["robust_accuracy"].iloc[1] >= 0.9 * clean
    assert apgd["robust_accuracy"].iloc[-1] <= 0.1 * clean
    assert np.all(np.diff(apgd["robust_accuracy"].to_numpy()) <= 0)
    assert set(curve["method"]) == {"autoattack", "pgd", "fgsm"}  # every bisected rung, no FAB
    with pytest.raises(ValueError, match="no model classifies"):
        robust_curve(radii_rows.assign(radius=0.0))
