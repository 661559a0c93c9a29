"""Statistics of the verdicts: intervals against hand-checkable cases, the null simulation,
Holm, permutation and granulated Kendall τ."""

import math

import numpy as np
import pandas as pd
import pytest
from scipy import stats as st

from topolip.stats import (
    compare,
    decide,
    granulated_tau,
    hierarchical_replicates,
    holm,
    interval,
    kendall_with_interval,
    null_decision_rate,
    partial_kendall,
    permutation_kendall,
    stratified_permutation_kendall,
)


def test_bootstrap_of_two_seeds_without_image_noise_is_enumerable():
    # seeds 0 and 4: the resampled means are 0, 2, 4 with probabilities 1/4, 1/2, 1/4
    r = hierarchical_replicates([[0.0], [4.0]], n_boot=40000, seed=1)
    values, counts = np.unique(r, return_counts=True)
    assert values.tolist() == [0.0, 2.0, 4.0]
    np.testing.assert_allclose(counts / len(r), [0.25, 0.5, 0.25], atol=0.01)
    # bootstrap variance of a mean of n values: (n-1)/n * s^2 / n = 1/2 * 8 / 2 = 2
    assert r.var() == pytest.approx(2.0, rel=0.03)


def test_interval_matches_student_with_no_image_level():
    x = np.array([1.0, 2.0, 4.0, 7.0])
    iv = interval(x, x[:, None], n_boot=40000, seed=0)
    lo, hi = st.t.interval(0.95, len(x) - 1, loc=x.mean(), scale=st.sem(x))
    assert iv.estimate == pytest.approx(3.5)
    assert iv.high - iv.low == pytest.approx(hi - lo, rel=0.02)   # bootstrap Monte Carlo error
    assert (iv.low + iv.high) / 2 == pytest.approx(x.mean())
    assert math.isnan(interval([1.0], [[1.0, 2.0]]).low)


def test_image_level_adds_its_variance():
    rng = np.random.default_rng(0)
    point = np.array([1.0, 1.0, 1.0])
    noisy = 1.0 + rng.normal(0, 1.0, size=(3, 200))
    iv = interval(point, noisy, n_boot=20000)
    # no seed spread, image sd 1: se ≈ sqrt(1/3) * sqrt(3/2)
    assert iv.se == pytest.approx(math.sqrt(1 / 3) * math.sqrt(1.5), rel=0.1)


def test_null_simulation_keeps_decisive_verdicts_at_or_below_alpha():
    # no true difference, 3 seeds a side, seeds and images both noisy
    rate = null_decision_rate(3, n_sim=600, n_boot=600, seed=3)
    assert rate <= 0.05
    # without an image level the interval is Student's, exact at 5% (Monte Carlo error allowed)
    assert null_decision_rate(3, n_sim=600, n_boot=600, image_sd=0.0, seed=4) <= 0.05 + 0.027
    # the plain percentile interval, for comparison, decides far too often
    assert null_decision_rate(3, n_sim=300, n_boot=600, percentile=True, seed=5) > 0.08


def test_a_real_difference_is_detected():
    assert null_decision_rate(3, n_sim=200, n_boot=600, effect=8.0, image_sd=0.2) > 0.8
    assert null_decision_rate(5, n_sim=200, n_boot=600, effect=3.0, image_sd=0.2) > 0.8


def test_compare_paired_and_unpaired_and_bad_input():
    a, b = [2.0, 2.5, 3.0], [1.0, 1.4, 2.1]
    paired = compare(a, np.array(a)[:, None], b, np.array(b)[:, None], n_boot=20000)
    d = np.subtract(a, b)
    assert paired.df == 2 and paired.paired
    assert paired.pvalue == pytest.approx(st.ttest_1samp(d, 0).pvalue, rel=0.15)
    unpaired = compare(a, np.array(a)[:, None], b, np.array(b)[:, None], paired=False,
                       n_boot=20000)
    welch = st.ttest_ind(a, b, equal_var=False)
    assert unpaired.pvalue == pytest.approx(welch.pvalue, rel=0.2)
    with pytest.raises(ValueError, match="paired sides must have the same seeds"):
        compare(a, np.array(a)[:, None], b[:2], np.array(b[:2])[:, None])
    with pytest.raises(ValueError, match="must be finite"):
        compare(a, [[1.0], [np.nan], [1.0]], b, np.array(b)[:, None])


def test_holm_and_decide():
    np.testing.assert_allclose(holm([0.01, 0.02, 0.03]), [0.03, 0.04, 0.04])
    assert holm([0.5, 0.9]).tolist() == [1.0, 1.0]
    assert decide(-1.0, 0.01, 3, 3) == "supported"
    assert decide(1.0, 0.01, 3, 3) == "contradicted"
    assert decide(1.0, 0.01, 3, 3, claimed_sign=1) == "supported"
    assert decide(-1.0, 0.06, 3, 3) == "inconclusive"
    assert decide(-1.0, 0.0, 3, 2) == "not enough seeds"


def test_kendall_permutation_stratified_partial_and_granulated():
    x = np.arange(10.0)
    tau, p = permutation_kendall(x, x[::-1], n_resamples=999)
    assert tau == pytest.approx(-1.0) and p < 0.01
    tau, p = permutation_kendall(x, np.r_[x[:5], x[:5]], n_resamples=999)
    assert p > 0.05 or abs(tau) < 0.6
    # stratified: within-kind signs that agree reinforce; a constant stratum is skipped
    tau, p = stratified_permutation_kendall(np.r_[x, x, x], np.r_[x, x, np.ones(10)],
                                            np.repeat(["a", "b", "c"], 10), n_resamples=999)
    assert tau == pytest.approx(1.0) and p < 0.01
    # partial τ removes a confounder: x and y both follow z only
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
    import scipy.stats as st

    from topolip.stats import kendall_with_interval

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
