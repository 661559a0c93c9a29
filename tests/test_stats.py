"""Statistics of the verdicts against hand-computed values: the paired t (raw and log, with an
image level), Holm and the Holm-consistent interval, power and minimum detectable effects, the
within-cluster permutation test of Kendall τ (exact against brute force, Monte Carlo against
exact), and the rank-agreement helpers of the measure study."""

import itertools
import math

import numpy as np
import pandas as pd
import pytest
from scipy import stats as st

from topolip.evidence.stats import (
    adjusted_coverage,
    decide,
    granulated_tau,
    holm,
    kendall_with_interval,
    minimum_detectable_effect,
    paired_power,
    paired_t,
    partial_kendall,
    permutation_kendall,
    t_interval,
    within_permutation_kendall,
)


def test_paired_t_is_students_on_the_differences():
    a, b = np.array([2.0, 2.5, 3.0, 2.2]), np.array([1.0, 1.4, 2.1, 1.0])
    d = a - b                                     # 1.0, 1.1, 0.9, 1.2
    r = paired_t(a, b)
    se = d.std(ddof=1) / 2.0
    assert r.effect == pytest.approx(1.05) and r.df == 3 and r.n_pairs == 4
    assert r.se == pytest.approx(se) and r.sd == pytest.approx(d.std(ddof=1))
    assert r.pvalue == pytest.approx(st.ttest_rel(a, b).pvalue, rel=1e-12)
    half = st.t.ppf(0.975, 3) * se
    assert (r.low, r.high) == pytest.approx((1.05 - half, 1.05 + half))
    assert math.isnan(r.ratio)                   # raw scale: no ratio


def test_paired_t_on_logs_reports_a_ratio():
    a, b = np.array([1.0, 2.0, 3.0]), np.array([2.0, 3.0, 7.0])
    r = paired_t(a, b, log=True)
    d = np.log(a) - np.log(b)
    assert r.scale == "log" and r.effect == pytest.approx(d.mean())
    assert r.ratio == pytest.approx(math.exp(d.mean()))
    assert (r.ratio_low, r.ratio_high) == pytest.approx((math.exp(r.low), math.exp(r.high)))
    assert r.pvalue == pytest.approx(st.ttest_rel(np.log(a), np.log(b)).pvalue, rel=1e-12)
    with pytest.raises(ValueError, match="positive values"):
        paired_t([1.0, 0.0], [1.0, 1.0], log=True)


def test_paired_t_image_level_and_edge_cases():
    a, b = [3.0, 4.0, 6.0], [2.0, 2.0, 3.0]      # differences 1, 2, 3: sd 1, se 1/sqrt(3)
    r = paired_t(a, b, image_se=0.5)
    assert r.se == pytest.approx(math.sqrt(1 / 3 + 0.25))
    assert r.pvalue == pytest.approx(2 * st.t.sf(2 / math.sqrt(1 / 3 + 0.25), 2))
    one = paired_t([1.0], [0.0])
    assert one.effect == 1.0 and math.isnan(one.pvalue) and math.isnan(one.low)
    assert paired_t([1.0, 2.0], [0.0, 1.0]).pvalue == 0.0   # no spread, non-zero mean
    with pytest.raises(ValueError, match="one value per seed pair"):
        paired_t([1.0, 2.0], [1.0])
    with pytest.raises(ValueError, match="finite"):
        paired_t([1.0, np.nan], [1.0, 2.0])


def test_holm_adjusted_coverage_and_decide():
    np.testing.assert_allclose(holm([0.01, 0.02, 0.03]), [0.03, 0.04, 0.04])
    np.testing.assert_allclose(holm([0.04, 0.01, 0.5]), [0.08, 0.03, 0.5])
    assert holm([0.5, 0.9]).tolist() == [1.0, 1.0]
    # the interval at coverage 1 - alpha p / p_holm excludes 0 exactly when p_holm < alpha
    d = np.array([0.9, 1.4, 0.2, 1.1])
    r = paired_t(d, np.zeros(4))
    assert r.pvalue < 0.9 * 0.05
    for p_holm in (0.9 * 0.05, 1.1 * 0.05):
        cov = adjusted_coverage(r.pvalue, p_holm)
        lo, _ = t_interval(r.effect, r.se, r.df, cov)
        assert (lo > 0) == (p_holm < 0.05)
    assert adjusted_coverage(0.01, 0.03) == pytest.approx(1 - 0.05 / 3)
    assert decide(-1.0, 0.01, 3) == "supported"
    assert decide(1.0, 0.01, 3, 3) == "contradicted"
    assert decide(1.0, 0.01, 3, claimed_sign=1) == "supported"
    assert decide(-1.0, 0.06, 3) == "inconclusive"
    assert decide(-1.0, 0.0, 2) == "not enough seeds"


def test_power_and_minimum_detectable_effect():
    # null: the power is the level; the MDE is where the power is 0.8
    assert paired_power(0.0, 1.0, 7) == pytest.approx(0.05, abs=1e-9)
    mde = minimum_detectable_effect(0.3, 6)
    assert paired_power(mde, 0.3, 6) == pytest.approx(0.8, abs=1e-6)
    # large n: the normal-approximation MDE (z_.975 + z_.8) sd / sqrt(n)
    approx = (st.norm.ppf(0.975) + st.norm.ppf(0.8)) / math.sqrt(400)
    assert minimum_detectable_effect(1.0, 400) == pytest.approx(approx, rel=0.01)
    # the paired t's power against simulation (5 pairs, effect 1.2 sd)
    rng = np.random.default_rng(0)
    d = rng.normal(1.2, 1.0, size=(4000, 5))
    sim = (st.ttest_1samp(d, 0, axis=1).pvalue < 0.05).mean()
    assert paired_power(1.2, 1.0, 5) == pytest.approx(sim, abs=0.025)
    assert math.isnan(minimum_detectable_effect(1.0, 1))


def _brute_force(x, y, clusters):
    """Exact p of the pooled within-cluster τ, enumerating the shared permutations."""
    x, y, clusters = np.atleast_2d(x), np.atleast_2d(y), np.asarray(clusters)
    groups = [np.flatnonzero(clusters == c) for c in dict.fromkeys(clusters)]

    def stat(yy):
        return np.mean([st.kendalltau(x[k, g], yy[k, g]).statistic
                        for k in range(x.shape[0]) for g in groups])

    obs, hits, n = stat(y), 0, 0
    for perms in itertools.product(*[itertools.permutations(g) for g in groups]):
        yy = y.copy()
        for g, p in zip(groups, perms, strict=True):
            yy[:, g] = y[:, list(p)]
        hits += abs(stat(yy)) >= abs(obs) - 1e-12
        n += 1
    return obs, hits / n, n


def test_within_permutation_is_exact_and_shares_the_permutation_across_strata():
    x = np.array([[1.0, 2, 3, 1, 2, 3], [3.0, 1, 2, 2, 3, 1]])
    y = np.array([[0.1, 0.3, 0.2, 0.5, 0.4, 0.6], [0.2, 0.1, 0.3, 0.3, 0.2, 0.1]])
    clusters = ["a", "a", "a", "b", "b", "b"]
    r = within_permutation_kendall(x, y, clusters)
    tau, p, n = _brute_force(x, y, clusters)
    assert r.exact and r.n_permutations == n == 36
    assert r.tau == pytest.approx(tau) and r.pvalue == pytest.approx(p)
    # per stratum, from the same permutations
    t0, p0, _ = _brute_force(x[:1], y[:1], clusters)
    assert r.tau_strata[0] == pytest.approx(t0) and r.pvalue_strata[0] == pytest.approx(p0)
    # four units in one cluster, concordant: the smallest two-sided p, 2/4! = 1/12
    small = within_permutation_kendall([1, 2, 3, 4], [1, 2, 3, 4], [0, 0, 0, 0])
    assert small.pvalue == pytest.approx(1 / 12)


def test_within_permutation_monte_carlo_agrees_with_exact_and_reports_its_error():
    rng = np.random.default_rng(1)
    x, y = rng.normal(size=(3, 12)), rng.normal(size=(3, 12))
    y[:, :6] += 0.8 * x[:, :6]
    clusters = np.repeat(["a", "b", "c", "d"], 3)            # 6^4 = 1296 permutations
    exact = within_permutation_kendall(x, y, clusters)
    mc = within_permutation_kendall(x, y, clusters, max_exact=10, n_resamples=4999)
    assert exact.exact and not mc.exact
    assert mc.mc_se == pytest.approx(math.sqrt(mc.pvalue * (1 - mc.pvalue) / mc.n_permutations))
    assert abs(mc.pvalue - exact.pvalue) < 4 * mc.mc_se + 1e-3
    # near a threshold the Monte-Carlo count grows
    near = within_permutation_kendall(x, y, clusters, max_exact=10, n_resamples=99,
                                      thresholds=(exact.pvalue,), max_resamples=3199)
    assert near.n_permutations > 99
    # missing values are left out of their cell
    x2 = x.copy()
    x2[0, 0] = np.nan
    assert math.isfinite(within_permutation_kendall(x2, y, clusters).tau)
    with pytest.raises(ValueError, match="n_strata, n_units"):
        within_permutation_kendall(x, y[:, :5], clusters)


def test_kendall_permutation_partial_and_granulated():
    x = np.arange(10.0)
    tau, p = permutation_kendall(x, x[::-1], n_resamples=999)
    assert tau == pytest.approx(-1.0) and p < 0.01
    rng = np.random.default_rng(0)
    z = rng.random(40)
    xx, yy = z + 0.2 * rng.normal(size=40), z + 0.2 * rng.normal(size=40)
    assert permutation_kendall(xx, yy, n_resamples=199)[0] > 0.4
    tau, p = partial_kendall(xx, yy, z, n_resamples=199)
    assert abs(tau) < 0.2 and p > 0.05
    t = pd.DataFrame({"arch": "vit", "parameter": ["w"] * 3 + ["d"] * 3 + ["h"] * 2,
                      "m": [1, 2, 3, 1, 2, 3, 1, 2], "r": [1, 2, 3, 1, 3, 2, 5, 6]})
    g, n_axes = granulated_tau(t, "m", "r")
    assert n_axes == 2 and g == pytest.approx((1.0 + 1 / 3) / 2)   # axis "h" has 2 points only
    k = kendall_with_interval(pd.DataFrame({"a": x, "b": x ** 3, "c": -x}), "a", "b",
                              reference="c", n_boot=300)
    assert k["tau"] == pytest.approx(1.0) and k["diff"] == pytest.approx(2.0)


def test_kendall_interval_vectorised_equals_scipy_kendalltau_resample_by_resample():
    """The batched τ-b gives scipy.stats.kendalltau's interval (ties included) to 1e-12."""
    rng = np.random.default_rng(3)
    t = pd.DataFrame({"m": np.round(rng.normal(size=25), 1), "r": rng.normal(size=25),
                      "b": rng.integers(0, 4, size=25).astype(float)})
    t["m"] += t["r"]
    got = kendall_with_interval(t, "m", "r", reference="b", n_boot=300, seed=7)
    cols = [t[c].to_numpy() for c in ("m", "r", "b")]
    tau = st.bootstrap(cols[:2], lambda a, b: st.kendalltau(a, b).statistic, paired=True,
                       vectorized=False, n_resamples=300, method="percentile", random_state=7)
    diff = st.bootstrap(cols, lambda a, b, c: st.kendalltau(a, b).statistic
                        - st.kendalltau(c, b).statistic, paired=True, vectorized=False,
                        n_resamples=300, method="percentile", random_state=7)
    np.testing.assert_allclose([got["tau_low"], got["tau_high"]], tau.confidence_interval,
                               rtol=1e-12)
    np.testing.assert_allclose([got["diff_low"], got["diff_high"]], diff.confidence_interval,
                               rtol=1e-12)
    assert got["tau"] == pytest.approx(st.kendalltau(t["m"], t["r"]).statistic, rel=1e-12)


def test_pairs_equal_up_to_float_rounding_decide_nothing():
    # 0.1 + 0.2 != 0.3 in floating point: four pairs differ by 5.6e-17, one by 0. Without the
    # rounding guard the paired t gives t = 4, p = 0.016: a decision on noise.
    a = [0.3] * 5
    b = [0.1 + 0.2] * 4 + [0.3]
    r = paired_t(a, b)
    assert r.effect == 0.0 and r.pvalue == 1.0
    assert decide(r.effect, r.pvalue, r.n_pairs) == "inconclusive"
    lr = paired_t([0.3] * 5, b, log=True)
    assert lr.effect == 0.0 and lr.pvalue == 1.0
    # a real difference of 1e-9 of the values is kept
    real = paired_t([1.0 + 1e-9 * k for k in (1, 2, 3, 4, 5)], [1.0] * 5)
    assert real.effect > 0 and real.pvalue < 0.05


def test_tau_b_is_scipys_tau_b_with_ties_and_drops_pairs_with_a_missing_value():
    from scipy.stats import kendalltau

    from topolip.evidence.stats import pair_signs, tau_b

    rng = np.random.default_rng(3)
    x = rng.integers(0, 4, size=(5, 12)).astype(float)  # ties in both
    y = rng.integers(0, 3, size=(5, 12)).astype(float)
    ours = tau_b(*pair_signs(x), *pair_signs(y))
    scipys = [kendalltau(a, b).statistic for a, b in zip(x, y, strict=True)]
    np.testing.assert_allclose(ours, scipys, rtol=0, atol=1e-12)
    x[0, [2, 7]], y[0, 5] = np.nan, np.inf
    keep = np.ones(12, bool)
    keep[[2, 5, 7]] = False
    got = float(tau_b(*pair_signs(x[0]), *pair_signs(y[0])))
    assert got == pytest.approx(kendalltau(x[0, keep], y[0, keep]).statistic, abs=1e-12)
    # along another axis, and pooled over blocks: the pairs of both columns summed
    grid_x, grid_y = x[:, :2], y[:, :2]                 # (5 units, 2 blocks)
    pooled = float(tau_b(*pair_signs(grid_x, 0), *pair_signs(grid_y, 0), axis=(0, 1)))
    sx = np.concatenate([pair_signs(grid_x[:, j])[0] for j in range(2)])
    sy = np.concatenate([pair_signs(grid_y[:, j])[0] for j in range(2)])
    assert pooled == pytest.approx((sx * sy).sum() / np.sqrt(np.count_nonzero(sx)
                                                             * np.count_nonzero(sy)))
