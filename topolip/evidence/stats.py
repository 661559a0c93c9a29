r"""Statistics of the verdicts: paired t on per-seed differences, Holm's correction, power and
minimum detectable effects, and rank agreement of a measure with robustness (Kendall τ with
permutation tests that respect how the models are clustered).

Torch-free (numpy, pandas, scipy): the claims, the figures and the measure study import it.

The design every comparison uses
--------------------------------
The trained model (one seed of one architecture) is the unit of replication. A compared
quantity (a model's TopoLip, its accuracy drop, an AUROC) is one number per model and group,
measured on that seed's images; the architectures of one seed see the same images, so two
architectures are compared **paired by seed**: the per-seed differences
:math:`d_s = f(a_s) - f(b_s)` (seeds present on both sides) are tested with Student's paired
t [1]_,

.. math:: t = \bar d / (s_d/\sqrt{n}), \qquad \nu = n - 1,

with the interval :math:`\bar d \pm t_{\nu, 1-\gamma/2}\, s_d/\sqrt{n}`. For a ratio measure
(TopoLip) :math:`f = \log`, and the effect is reported as the ratio
:math:`\exp(\bar d)` (a geometric-mean ratio) with the exponentiated interval; for accuracies,
drops and AUROCs :math:`f` is the identity. A seed's value already holds the variance of its
own images, so no image resampling is stacked on it. Where it does not (an AUROC over the whole
test set and OOD set, the same images for every seed), the image-resampling standard error of
the mean difference is added in quadrature (:func:`paired_t`'s ``image_se``). At least
:data:`MIN_SEEDS` pairs are needed for a decision.

Each claim has one primary comparison, tested at ``alpha`` alone; its other comparisons form a
second family corrected by Holm's step-down procedure [2]_. The interval shown for a comparison
is the one its decision uses: the t interval at coverage ``1 - alpha·p/p_Holm``, which excludes
0 exactly when the Holm-adjusted p-value is below ``alpha`` (:func:`adjusted_coverage`).

Association (does a lower TopoLip go with a smaller accuracy drop?) is tested *within
architectures*: Kendall's τ-b over the seeds of one architecture, averaged over architectures
and perturbation kinds, against the permutations of the response across the seeds of each
architecture, one permutation shared by every kind, since the same models appear in every kind
(:func:`within_permutation_kendall`). Exact over all permutations when they are few, else Monte
Carlo with enough draws that the Monte-Carlo standard error cannot move a verdict across a
threshold (reported with the p-value).

References
----------
.. [1] Student, "The probable error of a mean", Biometrika 6 (1908); any text, e.g.
   D. C. Montgomery, *Design and Analysis of Experiments*, 8th ed., Wiley 2013, section 2.5.
.. [2] S. Holm, "A simple sequentially rejective multiple test procedure", Scand. J. Statist.
   6 (1979).
.. [3] J. Cohen, *Statistical Power Analysis for the Behavioral Sciences*, 2nd ed., 1988
   (power of the t test through the noncentral t distribution).
.. [4] Y. Jiang, B. Neyshabur, H. Mobahi, D. Krishnan, S. Bengio, "Fantastic Generalization
   Measures and Where to Find Them", ICLR 2020, arXiv:1912.02178 (granulated Kendall τ).
.. [5] P. Good, *Permutation, Parametric and Bootstrap Tests of Hypotheses*, 3rd ed., Springer
   2005 (permutations restricted to exchangeable units; Monte-Carlo p-values).
"""

from __future__ import annotations

import itertools
import math
import warnings
from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np
import pandas as pd
from scipy import optimize as _opt
from scipy import stats as _st

__all__ = [
    "MIN_SEEDS", "PairedTest", "PermutationResult", "adjusted_coverage", "decide",
    "granulated_tau", "holm", "holm_floor", "kendall_tau", "kendall_with_interval",
    "minimum_detectable_effect", "pair_signs", "paired_power", "paired_t", "partial_kendall",
    "permutation_kendall", "seeds_to_decide", "t_interval", "tau_b",
    "within_permutation_kendall",
]

#: Fewest seed pairs for a decisive verdict.
MIN_SEEDS = 3


@dataclass(frozen=True)
class PairedTest:
    """A paired t test on per-seed differences.

    ``effect`` is the mean difference (of logs when ``scale == "log"``), ``low``/``high`` its
    interval at ``coverage``, ``se`` the standard error (seed spread, plus the image level when
    given), ``sd`` the standard deviation of the differences, ``df = n_pairs - 1``, ``pvalue``
    two-sided; ``ratio``, ``ratio_low``, ``ratio_high`` are ``exp`` of the effect and interval
    for the log scale (NaN for the raw one)."""

    effect: float
    low: float
    high: float
    se: float
    sd: float
    df: float
    pvalue: float
    n_pairs: int
    scale: str
    coverage: float
    ratio: float = math.nan
    ratio_low: float = math.nan
    ratio_high: float = math.nan


def t_interval(effect: float, se: float, df: float, coverage: float) -> tuple[float, float]:
    """``effect ± t_{df, (1+coverage)/2} · se``; NaN for ``df < 1`` or a non-finite ``se``.

    Examples
    --------
    >>> [round(v, 3) for v in t_interval(1.0, 0.5, 2, 0.95)]
    [-1.151, 3.151]
    """
    if not (df >= 1 and math.isfinite(se) and 0 < coverage < 1):
        return math.nan, math.nan
    half = float(_st.t.ppf(0.5 + coverage / 2, df)) * se
    return effect - half, effect + half


#: Relative size below which a paired difference is float rounding, not a difference
#: (:func:`paired_t`): 64 machine epsilons, about 1.4e-14.
ROUNDING = 64 * float(np.finfo(float).eps)


def paired_t(a, b, *, log: bool = False, coverage: float = 0.95,
             image_se: float = 0.0) -> PairedTest:
    """Paired t test of ``a - b`` over seeds (of ``log a - log b`` with ``log=True``).

    Parameters
    ----------
    a, b : array_like of shape (n,)
        The two sides' values, row ``s`` of both the same seed (attention, convolution).
    log : bool, default=False
        Compare logs (ratio measures such as TopoLip): the effect is a log ratio and
        ``ratio = exp(effect)``.
    coverage : float, default=0.95
        Coverage of the interval (``1 - alpha``, or the Holm-consistent
        :func:`adjusted_coverage`).
    image_se : float, default=0.0
        Standard error of the mean difference that the seed spread does not hold (the image
        sample shared by every seed, e.g. an AUROC over one fixed test set), added in
        quadrature: ``se = sqrt(s_d²/n + image_se²)``; the degrees of freedom stay ``n - 1``
        (conservative).

    Returns
    -------
    PairedTest
        NaN interval and p-value with fewer than 2 pairs. A difference within
        :data:`ROUNDING` of its pair's magnitude (of 1 on the log scale) counts as 0, so pairs
        equal up to float rounding decide nothing. With no spread at all (``se == 0``) the
        p-value is 0 for a non-zero mean and 1 for a zero one.

    Raises
    ------
    ValueError
        If the sides differ in length, a value is not finite, or ``log`` and a value is not
        positive.

    Notes
    -----
    The interval is Student's, :math:`\\bar d \\pm t_{n-1}\\, s_d/\\sqrt{n}`; see the module
    notes.

    Examples
    --------
    Differences 1, 2, 3: mean 2, sd 1, t = 2·sqrt(3), df 2 (scipy's ``ttest_rel`` agrees).

    >>> r = paired_t([3.0, 4.0, 6.0], [2.0, 2.0, 3.0])
    >>> r.effect, r.df, round(r.pvalue, 4), [round(v, 3) for v in (r.low, r.high)]
    (2.0, 2, 0.0742, [-0.484, 4.484])
    >>> r = paired_t([1.0, 2.0, 4.0], [2.0, 4.0, 8.0], log=True)   # every ratio is 1/2
    >>> round(r.ratio, 6), r.pvalue < 1e-10
    (0.5, True)
    """
    x, y = np.asarray(a, dtype=float).ravel(), np.asarray(b, dtype=float).ravel()
    if x.shape != y.shape:
        raise ValueError(f"a and b must hold one value per seed pair, got {x.size} and {y.size}")
    if not (np.isfinite(x).all() and np.isfinite(y).all()):
        raise ValueError("a and b must be finite (drop the seeds whose value is undefined)")
    if log:
        if (x <= 0).any() or (y <= 0).any():
            raise ValueError("log=True needs positive values (a ratio measure), got "
                             f"min(a)={x.min() if x.size else math.nan}, "
                             f"min(b)={y.min() if y.size else math.nan}")
        x, y = np.log(x), np.log(y)
    if not (image_se >= 0 and math.isfinite(image_se)):
        raise ValueError(f"image_se must be a finite non-negative number, got {image_se!r}")
    d = x - y
    # a difference within rounding of its values is no difference: without this, pairs equal
    # up to float noise (1e-17) have a tiny but positive spread and a "significant" t
    scale_of = np.maximum(np.maximum(np.abs(x), np.abs(y)), 1.0 if log else 0.0)
    d = np.where(np.abs(d) <= ROUNDING * scale_of, 0.0, d)
    n = len(d)
    scale = "log" if log else "raw"
    effect = float(d.mean()) if n else math.nan
    if n < 2:
        return _with_ratio(PairedTest(effect, math.nan, math.nan, math.nan, math.nan,
                                      math.nan, math.nan, n, scale, coverage))
    sd = float(d.std(ddof=1))
    se = math.sqrt(sd**2 / n + image_se**2)
    df = n - 1
    if se > 0:
        pvalue = float(2 * _st.t.sf(abs(effect) / se, df))
    else:
        pvalue = 0.0 if effect != 0 else 1.0
    low, high = t_interval(effect, se, df, coverage)
    return _with_ratio(PairedTest(effect, low, high, se, sd, df, pvalue, n, scale, coverage))


def _with_ratio(r: PairedTest) -> PairedTest:
    if r.scale != "log":
        return r
    from dataclasses import replace
    return replace(r, ratio=math.exp(r.effect) if math.isfinite(r.effect) else math.nan,
                   ratio_low=math.exp(r.low) if math.isfinite(r.low) else math.nan,
                   ratio_high=math.exp(r.high) if math.isfinite(r.high) else math.nan)


def holm(pvalues: Sequence[float]) -> np.ndarray:
    """Holm's step-down adjusted p-values (family-wise error control); NaN stays NaN.

    Examples
    --------
    >>> holm([0.01, 0.04, 0.03, float("nan")]).round(3).tolist()
    [0.03, 0.06, 0.06, nan]
    """
    p = np.asarray(pvalues, dtype=float)
    out = np.full(p.shape, np.nan)
    ok = np.flatnonzero(np.isfinite(p))
    if len(ok) == 0:
        return out
    order = ok[np.argsort(p[ok], kind="stable")]
    m = len(order)
    adjusted = np.maximum.accumulate((m - np.arange(m)) * p[order])
    out[order] = np.minimum(adjusted, 1.0)
    return out


def holm_floor(m: int, min_pvalue: float) -> float:
    """The smallest Holm-adjusted p-value a family of ``m`` tests can reach when no test's
    p-value can go below ``min_pvalue``: Holm's first step, ``min(1, m · min_pvalue)``
    (Holm 1979). A family whose floor is at least ``alpha`` can never reject: it describes.

    Raises
    ------
    ValueError
        If ``m < 1`` or ``min_pvalue`` is not in [0, 1].

    Examples
    --------
    The association's 8 secondaries at 5 seeds (exact p over 5! relabellings, >= 1/120):

    >>> round(holm_floor(8, 1 / 120), 4)
    0.0667
    """
    if not (isinstance(m, (int, np.integer)) and m >= 1):
        raise ValueError(f"m must be a positive int, got {m!r}")
    if not 0 <= min_pvalue <= 1:
        raise ValueError(f"min_pvalue must be in [0, 1], got {min_pvalue!r}")
    return min(1.0, m * float(min_pvalue))


def seeds_to_decide(m: int, *, alpha: float = 0.05, max_seeds: int = 20) -> int:
    """The fewest seeds at which a Holm family of ``m`` seed-relabelling tests can reject:
    the smallest ``n`` with ``m / n! < alpha`` (an exact test over the ``n!`` relabellings of
    whole seeds cannot give p below ``1/n!``; :func:`holm_floor`).

    Raises
    ------
    ValueError
        If ``m < 1``, ``alpha`` not in (0, 1), or no ``n <= max_seeds`` suffices.

    Examples
    --------
    >>> seeds_to_decide(8), seeds_to_decide(1), seeds_to_decide(95)
    (6, 4, 7)
    """
    if not (isinstance(m, (int, np.integer)) and m >= 1):
        raise ValueError(f"m must be a positive int, got {m!r}")
    if not 0 < alpha < 1:
        raise ValueError(f"alpha must be in (0, 1), got {alpha!r}")
    for n in range(1, max_seeds + 1):
        if m / math.factorial(n) < alpha:
            return n
    raise ValueError(f"no seed count up to {max_seeds} lets {m} tests reject at {alpha}")


def adjusted_coverage(pvalue: float, p_adjusted: float, *, alpha: float = 0.05) -> float:
    """Coverage of the interval consistent with a multiplicity-adjusted decision.

    The t interval at coverage ``1 - alpha · p / p_adjusted`` excludes 0 exactly when
    ``p_adjusted < alpha`` (it excludes 0 iff ``p < alpha · p / p_adjusted``): the interval a
    page shows is then the one its verdict uses. For an unadjusted test (``p_adjusted == p``)
    it is ``1 - alpha``.

    Parameters
    ----------
    pvalue, p_adjusted : float
        The raw and the (Holm-) adjusted p-value of one comparison.
    alpha : float, default=0.05
        The family-wise level.

    Returns
    -------
    float
        In ``[1 - alpha, 1)``; ``1 - alpha`` when a p-value is NaN or 0.

    Examples
    --------
    >>> adjusted_coverage(0.01, 0.01), round(adjusted_coverage(0.01, 0.04), 4)
    (0.95, 0.9875)
    """
    if not (math.isfinite(pvalue) and math.isfinite(p_adjusted)) or pvalue <= 0 \
            or p_adjusted <= 0:
        return 1 - alpha
    return 1 - alpha * min(pvalue / p_adjusted, 1.0)


def decide(effect: float, p_adjusted: float, n_a: int, n_b: int | None = None, *,
           alpha: float = 0.05, claimed_sign: int = -1, min_seeds: int = MIN_SEEDS) -> str:
    """The verdict on one comparison.

    Parameters
    ----------
    effect : float
        ``a − b`` (attention minus convolution; a log ratio for log-scale measures).
    p_adjusted : float
        The p-value the decision uses (the primary's own, a secondary's Holm-adjusted one).
    n_a, n_b : int
        Seed pairs (``n_b`` defaults to ``n_a``; the smaller counts).
    alpha : float, default=0.05
        Level.
    claimed_sign : {-1, 1}, default=-1
        The sign of ``effect`` the claim predicts (-1: attention lower).
    min_seeds : int, default=3
        Fewer pairs give ``"not enough seeds"``, never a decision.

    Returns
    -------
    str
        ``"supported"``, ``"contradicted"``, ``"inconclusive"`` or ``"not enough seeds"``.

    Examples
    --------
    >>> decide(-0.3, 0.01, 3), decide(-0.3, 0.01, 2), decide(0.3, 0.2, 3), decide(0.3, 0.01, 5)
    ('supported', 'not enough seeds', 'inconclusive', 'contradicted')
    """
    if min(n_a, n_a if n_b is None else n_b) < min_seeds:
        return "not enough seeds"
    if not (math.isfinite(p_adjusted) and p_adjusted < alpha) or effect == 0 \
            or not math.isfinite(effect):
        return "inconclusive"
    return "supported" if np.sign(effect) == claimed_sign else "contradicted"


def paired_power(effect: float, sd: float, n: int, *, alpha: float = 0.05) -> float:
    """Power of the two-sided paired t test at level ``alpha`` with ``n`` pairs, for a true
    mean difference ``effect`` and a standard deviation ``sd`` of the differences.

    Uses the noncentral t distribution with ``df = n - 1`` and noncentrality
    ``effect·sqrt(n)/sd`` [3]_.

    Returns
    -------
    float
        NaN for ``n < 2`` or a non-positive ``sd``.

    Examples
    --------
    >>> round(paired_power(1.0, 1.0, 10), 3), round(paired_power(0.0, 1.0, 10), 3)
    (0.803, 0.05)
    """
    if n < 2 or not (sd > 0):
        return math.nan
    df = n - 1
    crit = _st.t.ppf(1 - alpha / 2, df)
    nc = effect * math.sqrt(n) / sd
    with np.errstate(all="ignore"), warnings.catch_warnings():
        warnings.simplefilter("ignore")
        p = float(_st.nct.sf(crit, df, nc) + _st.nct.cdf(-crit, df, nc))
    if not math.isfinite(p):  # far beyond the noncentral t's numerical range
        p = float(_st.norm.cdf(abs(nc) - crit))
    return min(p, 1.0)


def minimum_detectable_effect(sd: float, n: int, *, alpha: float = 0.05,
                              power: float = 0.8) -> float:
    """The smallest true mean difference the two-sided paired t test detects with ``power``.

    Solves :func:`paired_power` ``(delta, sd, n) = power`` for ``delta > 0`` (Brent's method).

    Parameters
    ----------
    sd : float
        Standard deviation of the per-seed differences (log units for a ratio measure).
    n : int
        Seed pairs.
    alpha : float, default=0.05
        Level of the test (the primary comparisons': no multiplicity correction).
    power : float, default=0.8
        The power wanted.

    Returns
    -------
    float
        In the units of ``sd``; NaN for ``n < 2`` or a non-positive ``sd``. For a log-scale
        measure the detectable ratio is ``exp(-mde)`` (attention lower) or ``exp(mde)``.

    Examples
    --------
    Ten pairs with sd 1: about one standard deviation (power 0.803 at exactly 1).

    >>> round(minimum_detectable_effect(1.0, 10), 3)
    0.996
    """
    if n < 2 or not (sd > 0) or not (0 < power < 1):
        return math.nan
    hi = sd
    while paired_power(hi, sd, n, alpha=alpha) < power:
        hi *= 2
    return float(_opt.brentq(lambda e: paired_power(e, sd, n, alpha=alpha) - power, 0.0, hi,
                             xtol=1e-10 * sd))


# --------------------------------------------------------------------------- rank agreement


def pair_signs(values, axis: int = -1) -> tuple[np.ndarray, np.ndarray]:
    """Signs of the pairwise differences along ``axis``, and which pairs are finite: the
    kernel of every τ-b of the package (:func:`tau_b`).

    Parameters
    ----------
    values : array_like of shape (..., n, ...)
        The values; NaN or ±inf marks a missing one.
    axis : int, default=-1
        The axis of the ``n`` units (models) paired.

    Returns
    -------
    (numpy.ndarray, numpy.ndarray)
        ``signs`` and ``valid``, float64, with ``axis`` replaced by the ``n (n - 1) / 2`` pairs
        ``i < j`` (``numpy.triu_indices`` order): ``sign(v_i - v_j)``, 0 where either is
        missing, and 1.0 where both are finite (else 0.0).

    Examples
    --------
    >>> s, v = pair_signs([1.0, 3.0, np.nan])
    >>> s.tolist(), v.tolist()
    ([-1.0, 0.0, 0.0], [1.0, 0.0, 0.0])
    """
    v = np.moveaxis(np.asarray(values, dtype=float), axis, -1)
    iu, ju = np.triu_indices(v.shape[-1], 1)
    a, b = v[..., iu], v[..., ju]
    valid = np.isfinite(a) & np.isfinite(b)
    with np.errstate(invalid="ignore"):
        signs = np.where(valid, np.sign(a - b), 0.0)
    return np.moveaxis(signs, -1, axis), np.moveaxis(valid.astype(float), -1, axis)


def tau_b(sx: np.ndarray, vx: np.ndarray, sy: np.ndarray, vy: np.ndarray,
          axis: int | tuple[int, ...] = -1) -> np.ndarray:
    """Kendall's τ-b from the :func:`pair_signs` of two variables, over the pairs where both
    are finite, summed over ``axis`` (one axis of pairs, or pairs and blocks: a within-block τ
    pools the blocks' pairs).

    ``τ_b = Σ sx·sy / sqrt(#(sx ≠ 0) · #(sy ≠ 0))`` over the valid pairs (Kendall 1945; the
    statistic of ``scipy.stats.kendalltau``'s default ``variant="b"``); NaN where either
    variable is constant over them.

    Parameters
    ----------
    sx, vx, sy, vy : numpy.ndarray, broadcastable
        Signs and validity of ``x`` and of ``y`` (:func:`pair_signs`).
    axis : int or tuple of int, default=-1
        The axes summed.

    Returns
    -------
    numpy.ndarray
        τ-b in [-1, 1] (or NaN), with ``axis`` summed out.

    Examples
    --------
    >>> float(tau_b(*pair_signs([1, 2, 3, 4]), *pair_signs([1, 3, 2, 4])))
    0.6666666666666666
    >>> float(tau_b(*pair_signs([1, 1, 1]), *pair_signs([1, 2, 3])))
    nan
    """
    num = (sx * sy).sum(axis=axis)
    den = np.sqrt((np.abs(sx) * vy).sum(axis=axis) * (np.abs(sy) * vx).sum(axis=axis))
    with np.errstate(invalid="ignore", divide="ignore"):
        return np.where(den > 0, num / np.where(den > 0, den, 1.0), np.nan)


def _tau_b_along(x, y, axis: int = -1) -> np.ndarray:
    """τ-b of ``x`` with ``y`` along ``axis``, vectorised over the other axes."""
    return tau_b(*pair_signs(x, axis), *pair_signs(y, axis), axis=axis)


def kendall_tau(x, y) -> float:
    """Kendall's τ-b of two equally long vectors (NaN for fewer than 3 pairs or a constant one).

    Examples
    --------
    >>> kendall_tau([1, 2, 3, 4], [1, 3, 2, 4])
    0.6666666666666669
    """
    x, y = np.asarray(x, dtype=float), np.asarray(y, dtype=float)
    ok = np.isfinite(x) & np.isfinite(y)
    if ok.sum() < 3 or np.ptp(x[ok]) == 0 or np.ptp(y[ok]) == 0:
        return math.nan
    return float(_st.kendalltau(x[ok], y[ok]).statistic)


@dataclass(frozen=True)
class PermutationResult:
    """A within-cluster permutation test of Kendall's τ (:func:`within_permutation_kendall`).

    ``tau``: the pooled statistic (mean over strata and clusters of the within-cluster τ-b);
    ``pvalue`` its two-sided p-value; ``tau_strata``, ``pvalue_strata``: the same per stratum
    (mean over clusters), from the same permutations; ``n_permutations``: permutations used
    (all of them when ``exact``); ``mc_se``, ``mc_se_strata``: Monte-Carlo standard errors of
    the p-values (0 when exact); ``n_cells``: (stratum, cluster) cells where τ is defined."""

    tau: float
    pvalue: float
    tau_strata: np.ndarray
    pvalue_strata: np.ndarray
    n_permutations: int
    exact: bool
    mc_se: float
    mc_se_strata: np.ndarray
    n_cells: int


def _cluster_taus(xc: np.ndarray, yp: np.ndarray) -> np.ndarray:
    """τ-b per permutation and stratum of one cluster: ``xc`` (K, m), ``yp`` (N, K, m) (the
    permuted responses); NaN where fewer than 3 complete points or a constant side."""
    m = xc.shape[-1]
    iu, ju = np.triu_indices(m, 1)
    comp = np.isfinite(xc)[None] & np.isfinite(yp)
    with np.errstate(invalid="ignore"):
        dx = np.nan_to_num(np.sign(xc[:, iu] - xc[:, ju]))[None]
        dy = np.nan_to_num(np.sign(yp[..., iu] - yp[..., ju]))
    valid = comp[..., iu] & comp[..., ju]
    num = (dx * dy * valid).sum(-1)
    den = np.sqrt((np.abs(dx) * valid).sum(-1) * (np.abs(dy) * valid).sum(-1))
    with np.errstate(invalid="ignore", divide="ignore"):
        tau = num / den
    return np.where((comp.sum(-1) >= 3) & (den > 0), tau, np.nan)


def _pooled(x: np.ndarray, y: np.ndarray, members: list[np.ndarray],
            perms: list[np.ndarray]) -> tuple[np.ndarray, np.ndarray]:
    """Pooled (N,) and per-stratum (N, K) statistics for permutations ``perms[c]`` (N, m_c)."""
    taus = []
    for idx, p in zip(members, perms, strict=True):
        yc = y[:, idx]                                   # (K, m)
        yp = np.moveaxis(yc[:, p], 0, 1)                 # (N, K, m)
        taus.append(_cluster_taus(x[:, idx], yp))        # (N, K)
    t = np.stack(taus, axis=-1)                          # (N, K, C)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", RuntimeWarning)  # all-NaN slices: NaN
        return np.nanmean(t, axis=(1, 2)), np.nanmean(t, axis=2)


def _exceed(null: np.ndarray, observed: np.ndarray) -> np.ndarray:
    with np.errstate(invalid="ignore"):
        return np.abs(null) >= np.abs(observed) - 1e-12


def within_permutation_kendall(x, y, clusters, *, n_resamples: int = 9999,
                               max_resamples: int = 159_999, max_exact: int = 50_000,
                               thresholds: Sequence[float] = (0.05,),
                               seed: int = 0) -> PermutationResult:
    """Within-cluster Kendall τ of ``x`` with ``y``, pooled over clusters and strata, tested by
    permuting ``y`` across the units of each cluster with **one permutation shared by every
    stratum**.

    The units are models, the clusters architectures (a model's seeds are exchangeable only
    within its architecture) and the strata perturbation kinds (the same models in every kind,
    so a kind's permutation must be the others'). The statistic is the mean, over the
    (stratum, cluster) cells where it is defined, of Kendall's τ-b over the cluster's units;
    each stratum's own statistic is its mean over clusters, tested with the same permutations.

    Parameters
    ----------
    x, y : array_like of shape (n_strata, n_units) or (n_units,)
        Measure and response; column ``u`` of both is the same unit in every stratum. NaN
        marks a missing value (left out of its cell's τ).
    clusters : array_like of shape (n_units,)
        The cluster label of each unit.
    n_resamples : int, default=9999
        Monte-Carlo permutations at first (when there are more than ``max_exact``).
    max_resamples : int, default=159999
        The Monte-Carlo count is doubled (plus one) while a p-value lies within 3 Monte-Carlo
        standard errors of one of ``thresholds``, up to this many.
    max_exact : int, default=50000
        Enumerate every permutation (the product over clusters of ``m_c!``) when there are at
        most this many: the p-value is then exact.
    thresholds : sequence of float, default=(0.05,)
        The levels a p-value is compared with (``alpha`` and Holm's ``alpha/j``).
    seed : int, default=0
        Seed of the Monte-Carlo permutations.

    Returns
    -------
    PermutationResult
        Exact p-values are ``#{|τ*| >= |τ|} / #permutations`` (the identity included),
        Monte-Carlo ones ``(1 + #{|τ*| >= |τ|}) / (1 + N)`` with standard error
        ``sqrt(p(1-p)/N)``. NaN when no cell has τ defined.

    Raises
    ------
    ValueError
        If the shapes disagree.

    Examples
    --------
    One cluster of 4 units in one stratum, perfectly concordant: of the 24 permutations the
    identity and the reversal reach |τ| = 1, so the exact p-value is 2/24 = 1/12 (the smallest
    a two-sided test over 4 units can give).

    >>> r = within_permutation_kendall([1, 2, 3, 4], [1, 2, 3, 4], [0, 0, 0, 0])
    >>> r.tau, round(r.pvalue, 4), r.exact, r.n_permutations
    (1.0, 0.0833, True, 24)
    """
    x, y = np.atleast_2d(np.asarray(x, dtype=float)), np.atleast_2d(np.asarray(y, dtype=float))
    clusters = np.asarray(clusters)
    if x.shape != y.shape or x.shape[1] != len(clusters):
        raise ValueError(f"x and y must have shape (n_strata, n_units) with n_units = "
                         f"{len(clusters)} clusters labels, got {x.shape} and {y.shape}")
    members = [np.flatnonzero(clusters == c) for c in pd.unique(clusters)]
    members = [m for m in members if len(m) >= 2]
    k = x.shape[0]
    nan_k = np.full(k, np.nan)
    if not members:
        return PermutationResult(math.nan, math.nan, nan_k, nan_k, 0, False, math.nan, nan_k, 0)
    identity = [np.arange(len(m))[None] for m in members]
    obs, obs_k = _pooled(x, y, members, identity)
    obs, obs_k = obs[0], obs_k[0]
    cells = int(np.isfinite(_cells(x, y, members)).sum())
    if not math.isfinite(obs):
        return PermutationResult(math.nan, math.nan, obs_k, nan_k, 0, False, math.nan, nan_k,
                                 0)
    total = math.prod(math.factorial(len(m)) for m in members)
    if total <= max_exact:
        lists = [np.array(list(itertools.permutations(range(len(m))))) for m in members]
        hits = hits_k = 0
        n = 0
        grid = itertools.product(*[range(len(p)) for p in lists])
        while True:
            chunk = list(itertools.islice(grid, 20_000))
            if not chunk:
                break
            idx = np.array(chunk)
            null, null_k = _pooled(x, y, members, [p[idx[:, c]] for c, p in enumerate(lists)])
            hits += int(_exceed(null, obs).sum())
            hits_k = hits_k + _exceed(null_k, obs_k).sum(axis=0)
            n += len(idx)
        p_k = np.where(np.isfinite(obs_k), np.asarray(hits_k) / n, np.nan)
        return PermutationResult(float(obs), hits / n, obs_k, p_k, n, True, 0.0,
                                 np.zeros(k), cells)
    rng = np.random.default_rng(seed)
    hits, hits_k, n = 0, np.zeros(k), 0
    target = n_resamples
    while True:
        while n < target:
            size = min(20_000, target - n)
            perms = [np.argsort(rng.random((size, len(m))), axis=1) for m in members]
            null, null_k = _pooled(x, y, members, perms)
            hits += int(_exceed(null, obs).sum())
            hits_k = hits_k + _exceed(null_k, obs_k).sum(axis=0)
            n += size
        p = (1 + hits) / (1 + n)
        p_k = np.where(np.isfinite(obs_k), (1 + hits_k) / (1 + n), np.nan)
        se = math.sqrt(p * (1 - p) / n)
        se_k = np.sqrt(p_k * (1 - p_k) / n)
        near = any(abs(q - t) < 3 * s for t in thresholds
                   for q, s in [(p, se), *zip(p_k, se_k, strict=True)] if math.isfinite(q))
        if not near or n >= max_resamples:
            break
        target = min(2 * n + 1, max_resamples)
    return PermutationResult(float(obs), float(p), obs_k, p_k, n, False, se, se_k, cells)


def _cells(x: np.ndarray, y: np.ndarray, members: list[np.ndarray]) -> np.ndarray:
    """The observed τ of every (stratum, cluster) cell, shape (K, C)."""
    return np.stack([_cluster_taus(x[:, m], y[:, m][None])[0] for m in members], axis=-1)


def permutation_kendall(x, y, *, n_resamples: int = 9999, seed: int = 0) -> tuple[float, float]:
    """Kendall's τ-b and its two-sided permutation p-value (``scipy.stats.permutation_test``,
    pairings permuted: the null is that ``x`` and ``y`` are unrelated and the rows exchangeable;
    exact when there are at most ``n_resamples`` pairings).

    Returns
    -------
    (float, float)
        τ and p; both NaN for fewer than 3 finite pairs or a constant vector.

    Examples
    --------
    >>> tau, p = permutation_kendall(np.arange(8.0), np.arange(8.0))
    >>> round(tau, 9), p < 0.001
    (1.0, True)
    """
    x, y = np.asarray(x, dtype=float), np.asarray(y, dtype=float)
    ok = np.isfinite(x) & np.isfinite(y)
    x, y = x[ok], y[ok]
    tau = kendall_tau(x, y)
    if not math.isfinite(tau):
        return math.nan, math.nan
    res = _st.permutation_test(
        (x, y), lambda a, b: _st.kendalltau(a, b).statistic, permutation_type="pairings",
        n_resamples=n_resamples, alternative="two-sided", random_state=seed)
    return tau, float(res.pvalue)


def _rank_residuals(v: np.ndarray, z: np.ndarray) -> np.ndarray:
    rv, rz = _st.rankdata(v), _st.rankdata(z)
    design = np.c_[np.ones_like(rz), rz]
    coef, *_ = np.linalg.lstsq(design, rv, rcond=None)
    return rv - design @ coef


def partial_kendall(x, y, z, *, n_resamples: int = 9999, seed: int = 0) -> tuple[float, float]:
    """Kendall's τ of ``x`` and ``y`` with ``z`` partialled out, and a permutation p-value.

    The ranks of ``x`` and of ``y`` are each regressed on the ranks of ``z`` (ordinary least
    squares); τ is taken between the two residual vectors and tested by permuting their
    pairing (the residual-permutation scheme of Kennedy and Cade, 1996).

    Returns
    -------
    (float, float)
        NaN for fewer than 4 complete rows.

    Examples
    --------
    ``y`` follows ``z`` only; ``x`` follows ``z`` too: the raw τ is high, the partial one is not.

    >>> z = np.arange(10.0); x = z + np.r_[1, -1] .repeat(5); y = z.copy()
    >>> abs(partial_kendall(x, y, z, n_resamples=999)[0]) < 0.5
    True
    """
    x, y, z = (np.asarray(v, dtype=float) for v in (x, y, z))
    ok = np.isfinite(x) & np.isfinite(y) & np.isfinite(z)
    if ok.sum() < 4:
        return math.nan, math.nan
    return permutation_kendall(_rank_residuals(x[ok], z[ok]), _rank_residuals(y[ok], z[ok]),
                               n_resamples=n_resamples, seed=seed)


def kendall_with_interval(table: pd.DataFrame, x: str, y: str, *, reference: str | None = None,
                          alpha: float = 0.05, n_boot: int = 2000,
                          seed: int = 0) -> dict[str, float]:
    """Kendall τ of ``table[x]`` with ``table[y]``, a bootstrap interval over rows, and
    optionally the difference with a reference measure's τ on the same resampled rows.

    Rows are the units resampled (models): ``scipy.stats.bootstrap`` (percentile method, paired
    resampling of the columns).

    Returns
    -------
    dict
        ``tau``, ``tau_low``, ``tau_high``, ``n``; with ``reference``: ``diff`` (τ of ``x``
        minus τ of ``reference``), ``diff_low``, ``diff_high``.

    Examples
    --------
    >>> t = pd.DataFrame({"m": np.arange(20.0), "r": np.arange(20.0) ** 2})
    >>> kendall_with_interval(t, "m", "r", n_boot=200)["tau"]
    1.0
    """
    cols = [x, y] + ([reference] if reference else [])
    d = table[cols].astype(float).replace([np.inf, -np.inf], np.nan).dropna()
    out = {"tau": kendall_tau(d[x], d[y]), "n": len(d), "tau_low": math.nan,
           "tau_high": math.nan}
    if reference:
        out.update(diff=out["tau"] - kendall_tau(d[reference], d[y]), diff_low=math.nan,
                   diff_high=math.nan)
    if len(d) < 5 or not math.isfinite(out["tau"]):
        return out
    cols_arr = [d[c].to_numpy() for c in cols]

    def tau_stat(*v, axis=-1):
        return _tau_b_along(v[0], v[1], axis)

    def diff_stat(*v, axis=-1):
        return _tau_b_along(v[0], v[1], axis) - _tau_b_along(v[2], v[1], axis)

    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # degenerate resamples (constant columns) give NaN
        res = _st.bootstrap(cols_arr[:2], tau_stat, paired=True, vectorized=True,
                            n_resamples=n_boot, confidence_level=1 - alpha,
                            method="percentile", random_state=seed)
        out["tau_low"], out["tau_high"] = map(float, res.confidence_interval)
        if reference:
            res = _st.bootstrap(cols_arr, diff_stat, paired=True, vectorized=True,
                                n_resamples=n_boot, confidence_level=1 - alpha,
                                method="percentile", random_state=seed)
            out["diff_low"], out["diff_high"] = map(float, res.confidence_interval)
    return out


def granulated_tau(table: pd.DataFrame, measure: str, response: str, *,
                   axes: Sequence[str] = ("arch", "parameter")) -> tuple[float, int]:
    """Granulated Kendall τ of Jiang et al. (2020): the mean, over hyper-parameter axes, of τ
    computed where only that axis varies.

    Parameters
    ----------
    table : pandas.DataFrame
        One row per model of a one-parameter-at-a-time sweep, with the ``axes`` columns naming
        the varied axis of each row.
    measure, response : str
        Columns correlated.
    axes : sequence of str
        Columns that identify one axis (default: the swept architecture and parameter).

    Returns
    -------
    (float, int)
        Mean τ over axes where it is defined (at least 3 models and neither column constant),
        and the number of such axes; NaN and 0 when none is.

    Examples
    --------
    >>> t = pd.DataFrame({"arch": "a", "parameter": ["w"] * 3 + ["d"] * 3,
    ...                   "m": [1, 2, 3, 1, 2, 3], "r": [1, 2, 3, 3, 2, 1]})
    >>> granulated_tau(t, "m", "r")
    (0.0, 2)
    """
    taus = [kendall_tau(g[measure], g[response]) for _, g in table.groupby(list(axes))]
    taus = [t for t in taus if math.isfinite(t)]
    return (float(np.mean(taus)), len(taus)) if taus else (math.nan, 0)


