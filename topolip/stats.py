r"""Statistics of the comparisons: hierarchical bootstrap intervals, Holm correction, verdicts,
rank agreement of a measure with robustness (Kendall τ, permutation tests, granulated τ).

Torch-free (numpy, pandas, scipy): the claims, the figures and the measure study import it.

The design every comparison uses
--------------------------------
A compared quantity (a model's TopoLip, its accuracy drop, an AUROC) is measured once per
training seed ``s`` on that seed's batch of test images (the *point* value ``v_s``), and again on
``B`` bootstrap resamples of those images (``v_{s,b}``; the same image indices for every
architecture of the seed, so architectures are *paired* by seed). The hierarchical bootstrap
draws seeds with replacement, then one image resample within each drawn seed, and averages:
its spread is the standard error of the mean over seeds with both sources of variance
(seeds and images) [1]_.

With 3 seeds the percentile interval of that bootstrap is far too narrow (a resample of 3
values has 10 distinct means; :func:`null_decision_rate` measures it: about 20% decisive
verdicts with no true difference). We therefore report the interval

.. math:: \hat d \pm t_{\nu,\,1-\alpha/2}\ \widehat{\mathrm{se}}\,\sqrt{n/(n-1)},

with :math:`\widehat{\mathrm{se}}` the hierarchical-bootstrap standard error, the factor
``n/(n-1)`` undoing the bootstrap's downward bias for a mean of ``n`` seeds, and Student's
:math:`t` with ``ν = n - 1`` (paired) or Welch's ν (unpaired) degrees of freedom [2]_. For a
mean of normal seed values this is the exact Student interval; the image level only widens it.
A verdict is decisive only when the Holm-adjusted p-value [3]_ over the comparisons of one claim
is below ``alpha``, i.e. when the correspondingly widened interval excludes 0, and every side
has at least :data:`MIN_SEEDS` seeds.

References
----------
.. [1] A. C. Davison, D. V. Hinkley, *Bootstrap Methods and their Application*, CUP 1997,
   section 3.8 (hierarchical data).
.. [2] B. Efron, R. Tibshirani, *An Introduction to the Bootstrap*, Chapman & Hall 1993,
   chapter 12 (bootstrap standard errors with t quantiles).
.. [3] S. Holm, "A simple sequentially rejective multiple test procedure", Scand. J. Statist.
   6 (1979).
.. [4] Y. Jiang, B. Neyshabur, H. Mobahi, D. Krishnan, S. Bengio, "Fantastic Generalization
   Measures and Where to Find Them", ICLR 2020, arXiv:1912.02178 (granulated Kendall τ).
"""

from __future__ import annotations

import math
import warnings
from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np
import pandas as pd
from scipy import stats as _st

__all__ = [
    "MIN_SEEDS", "Comparison", "Interval", "compare", "decide", "granulated_tau", "holm",
    "hierarchical_replicates", "interval", "kendall_tau", "kendall_with_interval",
    "null_decision_rate", "partial_kendall", "permutation_kendall", "rank_correlations",
    "require_columns", "stratified_permutation_kendall",
]

#: Fewest seeds per side for a decisive verdict.
MIN_SEEDS = 3


def _check_values(values, name: str) -> np.ndarray:
    """Resample values as float64 of shape (n_seeds, B), finite, with n_seeds >= 1, B >= 1."""
    a = np.asarray(values, dtype=float)
    if a.ndim == 1:
        a = a[:, None]
    if a.ndim != 2 or a.shape[0] < 1 or a.shape[1] < 1:
        raise ValueError(f"{name}: expected an array of shape (n_seeds, n_resamples) with at "
                         f"least one of each, got shape {np.shape(values)}")
    if not np.isfinite(a).all():
        raise ValueError(f"{name}: resample values must be finite (a NaN TopoLip has a reason "
                         "in its table; drop or fix those rows first)")
    return a


def hierarchical_replicates(values, *, n_boot: int = 2000, seed: int = 0,
                            slots: np.ndarray | None = None,
                            images: np.ndarray | None = None) -> np.ndarray:
    """Replicates of the mean over seeds: seeds drawn with replacement, then one image resample
    within each drawn seed.

    Parameters
    ----------
    values : array_like of shape (n_seeds, B)
        ``values[s, b]``: the quantity on image resample ``b`` of seed ``s``.
    n_boot : int, default=2000
        Number of replicates.
    seed : int, default=0
        Seed of the draws (ignored when ``slots`` and ``images`` are given).
    slots, images : ndarray of int of shape (n_boot, n_seeds), optional
        The drawn seed indices and image-resample indices; pass the same arrays for both sides
        of a paired comparison.

    Returns
    -------
    ndarray of shape (n_boot,)

    Examples
    --------
    >>> v = np.array([[1.0, 1.0], [3.0, 3.0]])  # seed means 1 and 3, no image variation
    >>> r = hierarchical_replicates(v, n_boot=4000)
    >>> sorted(set(r.tolist())), round(float(r.mean()), 1)
    ([1.0, 2.0, 3.0], 2.0)
    """
    a = _check_values(values, "values")
    n, b = a.shape
    if slots is None or images is None:
        rng = np.random.default_rng(seed)
        slots = rng.integers(0, n, size=(n_boot, n))
        images = rng.integers(0, b, size=(n_boot, n))
    return a[slots, images].mean(axis=1)


@dataclass(frozen=True)
class Interval:
    """A quantity's estimate with its interval: ``estimate`` (mean over seeds of the point
    values), ``low``, ``high``, ``se`` (corrected bootstrap standard error), ``n_seeds``."""

    estimate: float
    low: float
    high: float
    se: float
    n_seeds: int


def _t_interval(est: float, se: float, df: float, alpha: float) -> tuple[float, float]:
    if not (df >= 1 and math.isfinite(se)):
        return math.nan, math.nan
    half = float(_st.t.ppf(1 - alpha / 2, df)) * se
    return est - half, est + half


def interval(point, values, *, alpha: float = 0.05, n_boot: int = 2000,
             seed: int = 0) -> Interval:
    """Interval of the mean over seeds of one quantity (see the module notes).

    Parameters
    ----------
    point : array_like of shape (n_seeds,)
        The quantity on each seed's full image batch.
    values : array_like of shape (n_seeds, B)
        The quantity on ``B`` image resamples of each seed's batch.
    alpha : float, default=0.05
        ``1 - alpha`` is the coverage.
    n_boot, seed
        As :func:`hierarchical_replicates`.

    Returns
    -------
    Interval
        NaN bounds with a single seed (no seed-level variance can be estimated).

    Raises
    ------
    ValueError
        If the shapes disagree or a value is not finite.

    Examples
    --------
    Three seeds, no image variation: the Student interval of the three values.

    >>> iv = interval([1.0, 2.0, 3.0], [[1.0], [2.0], [3.0]], n_boot=20000)
    >>> round(iv.estimate, 3), round(iv.se, 1), round(iv.high - iv.estimate, 1)
    (2.0, 0.6, 2.5)
    """
    p = np.asarray(point, dtype=float).ravel()
    a = _check_values(values, "values")
    if len(p) != a.shape[0] or not np.isfinite(p).all():
        raise ValueError(f"point: expected {a.shape[0]} finite values (one per seed), got {p}")
    n = len(p)
    est = float(p.mean())
    if n < 2:
        return Interval(est, math.nan, math.nan, math.nan, n)
    se = float(hierarchical_replicates(a, n_boot=n_boot, seed=seed).std(ddof=1)
               * math.sqrt(n / (n - 1)))
    low, high = _t_interval(est, se, n - 1, alpha)
    return Interval(est, low, high, se, n)


@dataclass(frozen=True)
class Comparison:
    """``mean(a) − mean(b)`` over seeds with its interval and two-sided p-value.

    ``effect`` is the difference of the seed means of the point values; ``low``/``high`` its
    ``1 − alpha`` interval; ``se`` the corrected bootstrap standard error; ``df`` the degrees of
    freedom of the t quantile; ``pvalue`` the two-sided p-value of "no difference" (not yet
    adjusted for multiplicity); ``paired`` whether seeds were matched; ``n_a``, ``n_b`` the seeds
    per side."""

    effect: float
    low: float
    high: float
    se: float
    df: float
    pvalue: float
    paired: bool
    n_a: int
    n_b: int


def compare(point_a, values_a, point_b, values_b, *, paired: bool = True, alpha: float = 0.05,
            n_boot: int = 2000, seed: int = 0) -> Comparison:
    """Compare two sides' means over seeds: hierarchical bootstrap standard error, t interval.

    Parameters
    ----------
    point_a, point_b : array_like of shape (n_a,), (n_b,)
        Each seed's value on its full image batch.
    values_a, values_b : array_like of shape (n_a, B), (n_b, B')
        Each seed's values on image resamples. When ``paired``, row ``s`` of both sides is the
        same seed with the same images and resample ``b`` the same image indices, so ``n_a ==
        n_b`` and ``B == B'``: each replicate draws seed slots and image resamples once, for
        both sides (paired resampling).
    paired : bool, default=True
        Paired by seed (``df = n − 1``) or independent sides (Welch–Satterthwaite ``df``).
    alpha : float, default=0.05
        ``1 − alpha`` coverage of the interval.
    n_boot, seed
        Bootstrap replicates and their seed.

    Returns
    -------
    Comparison
        NaN interval and p-value when a side has one seed.

    Raises
    ------
    ValueError
        On non-finite values, or paired sides of different shapes.

    Examples
    --------
    Paired seeds whose differences are 1, 1.1 and 0.9 (no image variation): the paired t
    interval, far from 0.

    >>> c = compare([2.0, 2.1, 1.9], [[2.0], [2.1], [1.9]], [1.0, 1.0, 1.0], [[1.0]] * 3)
    >>> round(c.effect, 3), c.df, c.pvalue < 0.01, c.low > 0
    (1.0, 2, True, True)
    """
    pa, pb = (np.asarray(p, dtype=float).ravel() for p in (point_a, point_b))
    a, b = _check_values(values_a, "values_a"), _check_values(values_b, "values_b")
    for name, p, v in (("point_a", pa, a), ("point_b", pb, b)):
        if len(p) != v.shape[0] or not np.isfinite(p).all():
            raise ValueError(f"{name}: expected {v.shape[0]} finite values (one per seed), got {p}")
    effect = float(pa.mean() - pb.mean())
    na, nb = len(pa), len(pb)
    rng = np.random.default_rng(seed)
    if paired:
        if a.shape != b.shape:
            raise ValueError(f"paired sides must have the same seeds and resamples, got shapes "
                             f"{a.shape} and {b.shape}; pass paired=False for independent sides")
        if na < 2:
            return Comparison(effect, math.nan, math.nan, math.nan, math.nan, math.nan, True,
                              na, nb)
        slots = rng.integers(0, na, size=(n_boot, na))
        images = rng.integers(0, a.shape[1], size=(n_boot, na))
        rep = (hierarchical_replicates(a, slots=slots, images=images)
               - hierarchical_replicates(b, slots=slots, images=images))
        se = float(rep.std(ddof=1) * math.sqrt(na / (na - 1)))
        df: float = na - 1
    else:
        if min(na, nb) < 2:
            return Comparison(effect, math.nan, math.nan, math.nan, math.nan, math.nan, False,
                              na, nb)
        sa = hierarchical_replicates(a, n_boot=n_boot, seed=int(rng.integers(2**31))).std(
            ddof=1) * math.sqrt(na / (na - 1))
        sb = hierarchical_replicates(b, n_boot=n_boot, seed=int(rng.integers(2**31))).std(
            ddof=1) * math.sqrt(nb / (nb - 1))
        se = float(math.hypot(sa, sb))
        va, vb = sa**2, sb**2
        df = ((va + vb) ** 2 / (va**2 / (na - 1) + vb**2 / (nb - 1))
              if va + vb > 0 else float(min(na, nb) - 1))
    low, high = _t_interval(effect, se, df, alpha)
    if se > 0:
        pvalue = float(2 * _st.t.sf(abs(effect) / se, df))
    else:
        pvalue = 1.0 if effect == 0 else 0.0
    return Comparison(effect, low, high, se, df, pvalue, paired, na, nb)


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


def decide(effect: float, p_adjusted: float, n_a: int, n_b: int, *, alpha: float = 0.05,
           claimed_sign: int = -1, min_seeds: int = MIN_SEEDS) -> str:
    """The verdict on one comparison.

    Parameters
    ----------
    effect : float
        ``a − b`` (attention minus convolution).
    p_adjusted : float
        Holm-adjusted p-value of the comparison within its claim.
    n_a, n_b : int
        Seeds per side.
    alpha : float, default=0.05
        Family-wise error level.
    claimed_sign : {-1, 1}, default=-1
        The sign of ``effect`` the claim predicts (-1: attention lower).
    min_seeds : int, default=3
        Fewer seeds on a side give ``"not enough seeds"``, never a decision.

    Returns
    -------
    str
        ``"supported"``, ``"contradicted"``, ``"inconclusive"`` or ``"not enough seeds"``.

    Examples
    --------
    >>> decide(-0.3, 0.01, 3, 3), decide(-0.3, 0.01, 2, 3), decide(0.3, 0.2, 3, 3)
    ('supported', 'not enough seeds', 'inconclusive')
    """
    if min(n_a, n_b) < min_seeds:
        return "not enough seeds"
    if not (math.isfinite(p_adjusted) and p_adjusted < alpha) or effect == 0:
        return "inconclusive"
    return "supported" if np.sign(effect) == claimed_sign else "contradicted"


def null_decision_rate(n_seeds: int = 3, *, n_sim: int = 1000, n_resamples: int = 20,
                       seed_sd: float = 1.0, image_sd: float = 0.5, effect: float = 0.0,
                       alpha: float = 0.05, n_boot: int = 1000, percentile: bool = False,
                       seed: int = 0) -> float:
    """Rate of decisive verdicts of :func:`compare` on simulated paired data.

    Each simulated seed has a normal seed effect (sd ``seed_sd``, independent between the two
    sides) and normal image resamples around it (sd ``image_sd``); side ``a`` is shifted by
    ``effect``. With ``effect = 0`` the rate is the type-I error of one comparison;
    ``percentile=True`` uses the plain percentile interval of the bootstrap instead (what
    this module does not do, for comparison).

    Returns
    -------
    float
        Fraction of the ``n_sim`` simulations where the interval excludes 0.

    Examples
    --------
    >>> null_decision_rate(3, n_sim=200, n_boot=500) <= 0.05
    True
    """
    rng = np.random.default_rng(seed)
    decisive = 0
    for i in range(n_sim):
        sa = rng.normal(effect, seed_sd, n_seeds)
        sb = rng.normal(0.0, seed_sd, n_seeds)
        va = sa[:, None] + rng.normal(0, image_sd, (n_seeds, n_resamples))
        vb = sb[:, None] + rng.normal(0, image_sd, (n_seeds, n_resamples))
        if percentile:
            r = np.random.default_rng(i)
            slots = r.integers(0, n_seeds, (n_boot, n_seeds))
            images = r.integers(0, n_resamples, (n_boot, n_seeds))
            rep = (hierarchical_replicates(va, slots=slots, images=images)
                   - hierarchical_replicates(vb, slots=slots, images=images))
            lo, hi = np.quantile(rep, [alpha / 2, 1 - alpha / 2])
            decisive += bool(lo > 0 or hi < 0)
        else:
            c = compare(sa, va, sb, vb, alpha=alpha, n_boot=n_boot, seed=i)
            decisive += bool(c.pvalue < alpha)
    return decisive / n_sim


# --------------------------------------------------------------------------- rank agreement


def require_columns(table: pd.DataFrame, columns: Sequence[str], name: str) -> None:
    """Raise unless ``table`` has every one of ``columns`` (the check of the table functions).

    Raises
    ------
    ValueError
        Naming ``name``, the missing columns and the ones it has.

    Examples
    --------
    >>> require_columns(pd.DataFrame({"a": [1]}), ["a", "b"], "t")
    Traceback (most recent call last):
    ...
    ValueError: t lacks the columns ['b']; it has ['a']
    """
    missing = [c for c in columns if c not in table]
    if missing:
        raise ValueError(f"{name} lacks the columns {missing}; it has {list(table.columns)}")


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


def _tau_matrix(x: np.ndarray, ys: np.ndarray) -> np.ndarray:
    """τ-b of ``x`` (n,) with each row of ``ys`` (r, n), vectorised."""
    sx = np.sign(x[:, None] - x[None, :])
    sy = np.sign(ys[:, :, None] - ys[:, None, :])
    iu = np.triu_indices(len(x), 1)
    sx, sy = sx[iu], sy[:, iu[0], iu[1]]
    num = (sy * sx).sum(axis=1)
    den = np.sqrt(np.count_nonzero(sx) * np.count_nonzero(sy, axis=1).astype(float))
    with np.errstate(invalid="ignore", divide="ignore"):
        return num / den


def _tau_b_batch(x: np.ndarray, y: np.ndarray, axis: int = -1) -> np.ndarray:
    """τ-b of ``x`` with ``y`` along ``axis``, vectorised over the other axes (NaN where one
    is constant): ``Σ sign(Δx) sign(Δy) / sqrt(#(Δx≠0) #(Δy≠0))`` over pairs, as
    ``scipy.stats.kendalltau``."""
    x, y = np.moveaxis(np.asarray(x, float), axis, -1), np.moveaxis(np.asarray(y, float), axis, -1)
    iu, ju = np.triu_indices(x.shape[-1], 1)
    sx = np.sign(x[..., iu] - x[..., ju])
    sy = np.sign(y[..., iu] - y[..., ju])
    den = np.sqrt(np.count_nonzero(sx, axis=-1) * np.count_nonzero(sy, axis=-1).astype(float))
    with np.errstate(invalid="ignore", divide="ignore"):
        return (sx * sy).sum(axis=-1) / den


def permutation_kendall(x, y, *, n_resamples: int = 9999, seed: int = 0) -> tuple[float, float]:
    """Kendall's τ-b and its two-sided permutation p-value (``scipy.stats.permutation_test``,
    pairings permuted: the null is that ``x`` and ``y`` are unrelated).

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


def stratified_permutation_kendall(x, y, strata, *, n_resamples: int = 4999,
                                   seed: int = 0) -> tuple[float, float]:
    """Mean within-stratum Kendall τ and its permutation p-value, permuting only within strata.

    Used to pool perturbation kinds without treating them as independent observations of one
    population: each kind keeps its own models and scale; only the pairing inside a kind is
    shuffled.

    Parameters
    ----------
    x, y : array_like of shape (n,)
        Measure and response.
    strata : array_like of shape (n,)
        Stratum label of each row (e.g. the perturbation kind).
    n_resamples : int, default=4999
        Random permutations.
    seed : int, default=0
        Seed of the permutations.

    Returns
    -------
    (float, float)
        Mean τ over strata with at least 3 finite pairs, and the two-sided p-value
        ``(1 + #{|τ*| >= |τ|}) / (1 + n_resamples)``.

    Examples
    --------
    >>> x = np.r_[np.arange(6.0), np.arange(6.0)]
    >>> tau, p = stratified_permutation_kendall(x, x, np.repeat(["a", "b"], 6), n_resamples=999)
    >>> tau, p < 0.01
    (1.0, True)
    """
    x, y = np.asarray(x, dtype=float), np.asarray(y, dtype=float)
    strata = np.asarray(strata)
    rng = np.random.default_rng(seed)
    observed, null = [], []
    for s in pd.unique(strata):
        m = (strata == s) & np.isfinite(x) & np.isfinite(y)
        xs, ys = x[m], y[m]
        if len(xs) < 3 or np.ptp(xs) == 0 or np.ptp(ys) == 0:
            continue
        observed.append(_tau_matrix(xs, ys[None, :])[0])
        perms = np.argsort(rng.random((n_resamples, len(ys))), axis=1)
        null.append(_tau_matrix(xs, ys[perms]))
    if not observed:
        return math.nan, math.nan
    tau = float(np.mean(observed))
    null_mean = np.mean(null, axis=0)
    p = (1 + np.count_nonzero(np.abs(null_mean) >= abs(tau) - 1e-12)) / (1 + n_resamples)
    return tau, float(p)


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
        return _tau_b_batch(v[0], v[1], axis)

    def diff_stat(*v, axis=-1):
        return _tau_b_batch(v[0], v[1], axis) - _tau_b_batch(v[2], v[1], axis)

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


def rank_correlations(table: pd.DataFrame, x: Sequence[str], y: str, *,
                      by: str | None = None) -> pd.DataFrame:
    """Spearman rank correlation of each column of ``x`` with ``y``: pooled, and per group.

    Descriptive only (rows are not independent across groups): verdicts use
    :func:`permutation_kendall` within a group and :func:`stratified_permutation_kendall`
    across groups.

    Parameters
    ----------
    table : pandas.DataFrame
        One row per observation (e.g. per model, seed and perturbation).
    x : sequence of str
        Columns to correlate with ``y`` (e.g. raw and scale-free TopoLip).
    y : str
        The response column (e.g. ``accuracy_drop``).
    by : str, optional
        Also correlate within each value of this column (e.g. ``perturbation``).

    Returns
    -------
    pandas.DataFrame
        Rows ``group`` (``"all"`` for the pooled one, then each value of ``by``), ``measure``
        (the ``x`` column), ``n`` (rows where both are finite), ``rho`` (Spearman's ρ in
        [-1, 1]) and ``pvalue`` (two-sided, ``scipy.stats.spearmanr``). ``rho`` is NaN when
        ``n < 3`` or either column is constant on the group.

    Raises
    ------
    ValueError
        If a column is missing.

    Examples
    --------
    >>> t = pd.DataFrame({"a": [1.0, 2, 3, 4], "b": [1.0, 3, 2, 4], "y": [10.0, 20, 30, 40]})
    >>> rank_correlations(t, ["a", "b"], "y").round(6)[["measure", "n", "rho"]].values.tolist()
    [['a', 4, 1.0], ['b', 4, 0.8]]
    """
    cols = [*x, y] + ([by] if by is not None else [])
    missing = [c for c in cols if c not in table.columns]
    if missing:
        raise ValueError(f"table lacks column(s) {missing}; it has {list(table.columns)}")
    groups = [("all", table)]
    if by is not None:
        groups += [(str(k), g) for k, g in table.groupby(by, sort=False)]
    rows = []
    for name, group in groups:
        for col in x:
            a = group[col].to_numpy(dtype=float)
            b = group[y].to_numpy(dtype=float)
            ok = np.isfinite(a) & np.isfinite(b)
            rho = pvalue = math.nan
            if ok.sum() >= 3 and np.ptp(a[ok]) > 0 and np.ptp(b[ok]) > 0:
                res = _st.spearmanr(a[ok], b[ok])
                rho, pvalue = float(res.statistic), float(res.pvalue)
            rows.append({"group": name, "measure": col, "n": int(ok.sum()), "rho": rho,
                         "pvalue": pvalue})
    return pd.DataFrame(rows)

