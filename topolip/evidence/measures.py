r"""The measure study: does TopoLip rank models by robustness better than simpler measures?

Each measure of :data:`MEASURES` is oriented a priori (the sign in :data:`MEASURES`: a positive
τ means "a larger value goes with a larger accuracy drop, as the measure's rationale predicts")
and ranked against the accuracy a perturbation costs, within each perturbation kind.

**Within architectures (the primary statistic).** The models of the chain are architectures ×
seeds. A measure that only tells the architectures apart (a ViT has a larger ratio *and* a
larger drop than a ResNet) earns a large τ over all models without ranking any two models of one
design. The study's τ is therefore Kendall's τ-b over the pairs of models *of the same
architecture* (:func:`within_tau`):

.. math::

    \tau_w = \frac{\sum_a \sum_{i<j \in a} \operatorname{sgn}(x_i - x_j)
    \operatorname{sgn}(y_i - y_j)}{\sqrt{n_x\, n_y}},

:math:`n_x, n_y` the within-architecture pairs untied in the measure and in the response (with
no ties, the pair-count-weighted mean of the per-architecture τ). The τ over all models
together (``tau_pooled``) is shown beside it, confounded by architecture.

**Its p-value** is a permutation test that permutes the *seeds*: the responses of seed
:math:`\pi(s)` are given to seed :math:`s`, the same permutation in every architecture and every
perturbation kind. The seed is the unit of the design (the architectures of one seed share their
images), so under the null that the measures of a seed are unrelated to its responses this
permutation is exact, and it keeps the dependence between architectures that share a seed
(permuting each architecture on its own would not). Up to :data:`EXACT_SEEDS` seeds every
permutation is enumerated: with 5 seeds there are 120, so no p-value is below 1/120. TopoLip's
τ averaged over the kinds is the one primary association test; the τ of the other measures and
of single kinds form one Holm family.

**TopoLip against a baseline** (:func:`compare_within`): the difference
:math:`d = \tau_w(\text{TopoLip}) - \tau_w(\text{baseline})` on the pairs where both are defined,
tested with a delete-one-seed jackknife: :math:`d_{(s)}` without seed :math:`s` (all its models,
in every architecture and kind), :math:`\widehat{se}^2 = \frac{n-1}{n}\sum_s (d_{(s)} -
\bar d)^2`, and :math:`t = d / \widehat{se}` against Student's t with :math:`n - 1` degrees of
freedom (:math:`n` seeds). It respects the clustering (architectures are strata, the seed is the
resampled unit, shared by the architectures and kinds) and needs no exchangeability of the two
measures; by the Efron–Stein inequality the jackknife variance of a symmetric statistic of
i.i.d. units is biased *upwards*, so the test errs on the conservative side (measured in
``tests/test_measures.py``: about 2% false calls at α = 0.05 with 4 architectures × 5
seeds). The comparisons are Holm-corrected (:func:`topolip.evidence.stats.holm`) in two families:
the
primary one (each baseline, τ averaged over the perturbation kinds: ``perturbation == "all"``)
and the secondary one (each baseline and kind). "Better"/"worse" is said only where the Holm
p-value is below α; the interval shown is the one that test uses (level :math:`1 - \alpha /
c`, :math:`c` the Holm factor of the row, so it excludes 0 exactly when the row is decided).

**Granulated τ** (:func:`granulated_taus`, Jiang et al. 2020): on the sweeps (one parameter
varied at a time around a base model), for each architecture family and swept axis, τ over the
models that differ only in that axis (same seed, the other axes at the base), averaged over the
settings of the rest (the seeds); the family's value is the mean over its axes.

Models whose TopoLip input displacement lies within the noise floor (``end_to_end_flag``) are
left out of their kind's ranking for every measure (so TopoLip and the baselines rank the same
models); their responses stay in the permutation.

Torch-free.

See Also
--------
topolip.evidence.stats.holm : the multiplicity correction.
notebooks/09_measures : the chapter that reports the study
    (:func:`topolip.report.measure_sentences.study_findings`).

References
----------
.. [1] Y. Jiang, B. Neyshabur, H. Mobahi, D. Krishnan, S. Bengio, "Fantastic Generalization
   Measures and Where to Find Them", ICLR 2020, arXiv:1912.02178.
.. [2] B. Efron, C. Stein, "The jackknife estimate of variance", Ann. Statist. 9 (1981) 586-596.
"""

from __future__ import annotations

import itertools
import math
import warnings
from dataclasses import dataclass

import numpy as np
import pandas as pd
from scipy import stats as _st

from topolip.evidence import stats
from topolip.schema import require_columns

__all__ = ["EXACT_SEEDS", "MEASURES", "MIN_JACKKNIFE_SEEDS", "REFERENCE", "Measure",
           "compare_within", "granulated_taus", "measure_population", "measure_study",
           "seed_centred", "within_tau"]

#: The measure every baseline is compared with: end-to-end scale-free TopoLip.
REFERENCE = "end_to_end_scale_free"

#: Fewest seeds for the jackknife comparison (each replicate keeps n - 1 >= 3 seeds).
MIN_JACKKNIFE_SEEDS = 4

#: Largest number of seeds whose permutations are all enumerated (8! = 40,320): an exact test.
EXACT_SEEDS = 8


@dataclass(frozen=True)
class Measure:
    """A column of the population table.

    ``label`` is its human name; ``orientation`` +1 when a larger value predicts a larger drop,
    -1 when it predicts a smaller one; ``kind`` is ``"topological"``, ``"geometric"``,
    ``"Lipschitz"`` or ``"model"``; ``per_perturbation`` whether it uses the perturbation;
    ``baseline`` whether TopoLip is compared with it; ``noise_floor`` whether it is a TopoLip
    ratio over the input displacement (undefined when that lies within the noise floor).
    """

    column: str
    label: str
    orientation: int
    kind: str
    per_perturbation: bool
    baseline: bool = True
    noise_floor: bool = False


#: TopoLip first (the reference), then its per-layer variant, then the baselines.
MEASURES: tuple[Measure, ...] = (
    Measure("end_to_end_scale_free", "TopoLip Δ_L/Δ_0 (scale-free)", 1, "topological", True,
            baseline=False, noise_floor=True),
    Measure("geometric_mean_scale_free", "TopoLip per-layer geometric mean", 1, "topological",
            True, baseline=False, noise_floor=True),
    Measure("end_to_end", "TopoLip Δ_L/Δ_0 (raw)", 1, "topological", True, noise_floor=True),
    Measure("rtd_lite_ratio", "paired H0 cross-barcode ratio (RTD-Lite style)", 1,
            "topological", True),
    Measure("displacement_ratio_max", "Euclidean displacement ratio (max)", 1, "geometric",
            True),
    Measure("displacement_ratio_mean", "Euclidean displacement ratio (mean)", 1, "geometric",
            True),
    Measure("cka_distance", "1 − linear CKA at the last probe", 1, "geometric", True),
    Measure("log10_lipschitz_estimate_product", "product of per-layer Lipschitz estimates", 1,
            "Lipschitz", False),
    Measure("log10_spectral_norm_product", "product of weight spectral norms", 1, "Lipschitz",
            False),
    Measure("logit_margin", "mean logit margin (clean)", -1, "model", False),
    Measure("parameters", "parameter count", -1, "model", False),
    Measure("accuracy_clean", "clean accuracy", -1, "model", False, baseline=False),
)

_BY_COLUMN = {m.column: m for m in MEASURES}


# --------------------------------------------------------------------------- population


def _flagged(table: pd.DataFrame, flag_column: str) -> np.ndarray:
    if flag_column not in table:
        return np.zeros(len(table), dtype=bool)
    flag = table[flag_column]
    return (flag.notna() & flag.astype(str).str.strip().ne("")).to_numpy()


def measure_population(summary: pd.DataFrame, sweeps: pd.DataFrame | None = None, *,
                       flag_column: str = "end_to_end_flag",
                       min_accuracy: float = 0.0) -> pd.DataFrame:
    """One row per model and perturbation kind: the chain's models, then the sweep points.

    Parameters
    ----------
    summary : pandas.DataFrame
        The chain's per-model summary (``topolip_summary``: ``arch``, ``seed``,
        ``perturbation``, ``accuracy_drop``, the measure columns, ``end_to_end_flag``).
    sweeps : pandas.DataFrame, optional
        Rows of :func:`topolip.experiments.sweeps.run_sweeps` (``sweeps.csv``: one per sweep point,
        seed
        and kind, with ``arch``, ``parameter``, ``value``, ``is_base``, ``seed``,
        ``checkpoint`` and the same measure columns).
    flag_column : str, default="end_to_end_flag"
        Non-empty where the TopoLip input displacement lies within the noise floor.
    min_accuracy : float, default=0.0
        Clean accuracy (``accuracy_clean``, in [0, 1]) below which a model did not learn its
        task: it is marked ``did_not_learn`` and ``excluded`` (its accuracy drop is bounded by
        an accuracy near chance, so it would rank measures on noise). A model without a clean
        accuracy is kept.

    Returns
    -------
    pandas.DataFrame
        Columns ``source`` (``"chain"`` or ``"sweep"``), ``model`` (an id: ``arch/seedN`` or
        the sweep checkpoint), ``arch``, ``seed``, ``axis`` (the swept parameter; ``""`` for
        the chain), ``value`` (its JSON value), ``is_base``, ``perturbation``, ``strength``,
        ``excluded`` (bool: within the noise floor or did not learn, left out of the
        rankings), ``did_not_learn`` (bool: clean accuracy below ``min_accuracy``),
        ``accuracy_drop`` and every measure column present. A sweep's base model appears once
        per axis it belongs to (the granulated τ of each axis needs it).

    Raises
    ------
    ValueError
        If ``summary`` (or ``sweeps``) lacks an identifying column, or ``min_accuracy`` is not
        in [0, 1].

    Examples
    --------
    >>> s = pd.DataFrame({"arch": ["vit", "vit"], "seed": [0, 1], "perturbation": "fgsm",
    ...                   "accuracy_drop": [0.2, 0.3], "end_to_end_scale_free": [1.0, 2.0],
    ...                   "end_to_end_flag": ["", "input displacement within the noise floor"]})
    >>> measure_population(s)[["model", "excluded"]].values.tolist()
    [['vit/seed0', False], ['vit/seed1', True]]
    """
    require_columns(summary, ["arch", "seed", "perturbation", "accuracy_drop"], "summary")
    if not (isinstance(min_accuracy, (int, float)) and 0.0 <= float(min_accuracy) <= 1.0):
        raise ValueError(f"min_accuracy must be a number in [0, 1], got {min_accuracy!r}")
    cols = [m.column for m in MEASURES]
    chain = summary.copy()
    chain["source"] = "chain"
    chain["model"] = chain["arch"].astype(str) + "/seed" + chain["seed"].astype(str)
    chain["axis"] = ""
    chain["value"] = ""
    chain["is_base"] = False
    chain["excluded"] = _flagged(chain, flag_column)
    parts = [chain]
    present = [c for c in cols if c in summary.columns]
    if sweeps is not None and len(sweeps):
        require_columns(sweeps, ["arch", "parameter", "value", "seed", "perturbation",
                                 "accuracy_drop"], "sweeps")
        sw = sweeps.copy()
        sw["source"] = "sweep"
        sw["axis"] = sw["parameter"].astype(str)
        sw["value"] = sw["value"].astype(str)
        if "checkpoint" in sw:
            sw["model"] = sw["checkpoint"].astype(str)
        else:
            sw["model"] = (sw["arch"].astype(str) + "/" + sw["axis"] + "=" + sw["value"]
                           + "/seed" + sw["seed"].astype(str))
        if "is_base" not in sw:
            sw["is_base"] = False
        if "accuracy_clean" not in sw and "test_accuracy" in sw:
            sw["accuracy_clean"] = sw["test_accuracy"]
        sw["excluded"] = _flagged(sw, flag_column)
        parts.append(sw)
        present += [c for c in cols if c in sw.columns and c not in present]
    keep = ["source", "model", "arch", "seed", "axis", "value", "is_base", "perturbation",
            "strength", "excluded", "did_not_learn", "accuracy_drop"] + [
        c for c in cols if c in present]
    for p in parts:
        acc = (pd.to_numeric(p["accuracy_clean"], errors="coerce") if "accuracy_clean" in p
               else pd.Series(np.nan, index=p.index))
        p["did_not_learn"] = (acc < float(min_accuracy)).to_numpy()
    out = pd.concat([p.reindex(columns=keep) for p in parts], ignore_index=True)
    out["is_base"] = out["is_base"].fillna(False).astype(bool)
    out["did_not_learn"] = out["did_not_learn"].fillna(False).astype(bool)
    out["excluded"] = out["excluded"].astype(bool) | out["did_not_learn"]
    return out


# --------------------------------------------------------------------------- within-arch τ


def _signs(values: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """:func:`topolip.evidence.stats.pair_signs` of a ``(..., seeds, archs)`` grid: seed pairs
    on axis -2."""
    return stats.pair_signs(values, axis=-2)


def _tau(sx, vx, sy, vy) -> np.ndarray:
    """:func:`topolip.evidence.stats.tau_b` within architectures: the seed pairs of every
    architecture pooled (axes -1 and -2)."""
    return stats.tau_b(sx, vx, sy, vy, axis=(-1, -2))


def _grid(table: pd.DataFrame, column: str, seeds, archs, *, cluster: str,
          unit: str) -> np.ndarray:
    """``table[column]`` as a (seeds, archs) matrix, NaN where a model is missing."""
    out = np.full((len(seeds), len(archs)), np.nan)
    i = pd.Index(seeds).get_indexer(table[unit])
    j = pd.Index(archs).get_indexer(table[cluster])
    ok = (i >= 0) & (j >= 0)
    out[i[ok], j[ok]] = pd.to_numeric(table[column], errors="coerce").to_numpy(float)[ok]
    return out


def _centre_grid(values: np.ndarray) -> np.ndarray:
    """Seed-centre a (..., seeds, archs) grid: each architecture's column standardised over its
    seeds, then each seed's row less its mean over the architectures whose column varies.

    A column constant over its seeds (a measure that cannot rank the seeds of that
    architecture) stays constant (0), so it still gives no pair, and it is left out of the
    seed means. NaN stays NaN and is left out of every mean."""
    v = np.asarray(values, dtype=float)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", RuntimeWarning)     # an all-NaN column: NaN
        mu = np.nanmean(v, axis=-2, keepdims=True)
        sd = np.nanstd(v, axis=-2, keepdims=True)
        varies = np.isfinite(sd) & (sd > 0)
        z = np.where(varies, (v - mu) / np.where(varies, sd, 1.0), np.where(np.isfinite(v),
                                                                             0.0, np.nan))
        use = np.isfinite(z) & varies
        row = np.where(use.any(-1, keepdims=True),
                       np.where(use, z, 0.0).sum(-1, keepdims=True)
                       / np.maximum(use.sum(-1, keepdims=True), 1), 0.0)
    return np.where(varies, z - row, z)


def seed_centred(table: pd.DataFrame, columns, *, cluster: str = "arch", unit: str = "seed",
                 strata: str | None = None) -> pd.DataFrame:
    """The table with ``columns`` centred per (seed, stratum) over the architectures.

    The architectures of one seed share their test images (DESIGN.md, section 3): a hard
    batch raises the measure *and* the drop of every architecture of that seed, and a
    within-architecture τ then reads the batch as an association between models. Centring
    removes it: each architecture's values are first standardised over its seeds (the
    architectures differ by orders of magnitude in raw TopoLip, so a plain difference would let
    the largest one dominate), then each seed's value is taken relative to the mean of that
    seed over the architectures (within each stratum, the perturbation kind). Both steps
    commute with relabelling whole seeds (the same relabelling in every architecture), so the
    seed-relabelling test on centred values stays exact.

    Parameters
    ----------
    table : pandas.DataFrame
        One row per model (and stratum) with ``cluster``, ``unit`` and ``columns``; at most one
        row per (cluster, unit, stratum).
    columns : sequence of str
        The columns centred (NaN stays NaN and is left out of every mean; a column constant
        over the seeds of an architecture stays constant there, 0, and is left out of the
        seed means, so a measure that cannot rank that architecture's models still cannot).
    cluster, unit : str
        The architecture and seed columns.
    strata : str, optional
        Centre each value of this column (the perturbation kind) on its own.

    Returns
    -------
    pandas.DataFrame
        A copy of ``table``, ``columns`` replaced by their seed-centred values (unitless).

    Raises
    ------
    ValueError
        If a column is missing or a (cluster, unit, stratum) repeats.

    Examples
    --------
Seed 1's batch adds 10 to both architectures, and nothing else tells their seeds apart:
    after centring nothing is left to rank.

    >>> t = pd.DataFrame({"arch": ["a", "b"] * 3, "seed": [0, 0, 1, 1, 2, 2],
    ...                   "m": [1.0, 2.0, 11.0, 12.0, 3.0, 4.0]})
    >>> bool(seed_centred(t, ["m"])["m"].abs().max() < 1e-12)
    True
    """
    columns = list(columns)
    keys = [cluster, unit] + ([strata] if strata else [])
    require_columns(table, keys + columns, "table")
    if table.duplicated(keys).any():
        raise ValueError(f"table has repeated {tuple(keys)} rows; give one row per model")
    out = table.copy()
    t = table.assign(**{cluster: table[cluster].astype(str)})
    groups = t.groupby(strata, sort=False).groups.items() if strata else [(None, t.index)]
    for _, idx in groups:
        g = t.loc[idx]
        seeds = sorted(g[unit].unique())
        archs = sorted(g[cluster].unique())
        i = pd.Index(seeds).get_indexer(g[unit])
        j = pd.Index(archs).get_indexer(g[cluster])
        for c in columns:
            grid = _centre_grid(_grid(g, c, seeds, archs, cluster=cluster, unit=unit))
            out.loc[idx, c] = grid[i, j]
    return out


def within_tau(table: pd.DataFrame, measure: str, response: str = "accuracy_drop", *,
               cluster: str = "arch", unit: str = "seed") -> tuple[float, int]:
    """Kendall's τ-b over the pairs of models within the same ``cluster`` (architecture).

    Parameters
    ----------
    table : pandas.DataFrame
        One row per model: ``cluster``, ``unit`` (at most one row per cluster and unit),
        ``measure`` and ``response``.
    measure, response : str
        The columns ranked against each other (orient the measure first).
    cluster : str, default="arch"
        Pairs are formed only inside a value of this column.
    unit : str, default="seed"
        The model's replicate label inside its cluster.

    Returns
    -------
    (float, int)
        τ-b over the within-cluster pairs where both columns are finite (NaN when no such pair
        is untied in either column, e.g. a measure constant within every architecture), and the
        number of those pairs.

    Raises
    ------
    ValueError
        If a column is missing or a (cluster, unit) repeats.

    Notes
    -----
    :math:`\\tau_w = \\sum_{i<j,\\ a_i = a_j} \\operatorname{sgn}(\\Delta x)
    \\operatorname{sgn}(\\Delta y) / \\sqrt{n_x n_y}`; with no ties, the mean of the
    per-cluster τ weighted by their pair counts.

    Examples
    --------
    Within each architecture the measure orders the two seeds as the drop does; across them it
    does not:

    >>> t = pd.DataFrame({"arch": ["a", "a", "b", "b"], "seed": [0, 1, 0, 1],
    ...                   "m": [1.0, 2.0, -5.0, -4.0], "r": [0.1, 0.2, 0.8, 0.9]})
    >>> within_tau(t, "m", "r")
    (1.0, 2)
    """
    require_columns(table, [cluster, unit, measure, response], "table")
    if table.duplicated([cluster, unit]).any():
        raise ValueError(f"table has repeated ({cluster}, {unit}) rows; give one row per model")
    seeds = sorted(table[unit].unique())
    archs = sorted(table[cluster].astype(str).unique())
    t = table.assign(**{cluster: table[cluster].astype(str)})
    sx, vx = _signs(_grid(t, measure, seeds, archs, cluster=cluster, unit=unit))
    sy, vy = _signs(_grid(t, response, seeds, archs, cluster=cluster, unit=unit))
    return float(_tau(sx, vx, sy, vy)), int((vx * vy).sum())


def _holm_level(p: np.ndarray, p_holm: np.ndarray, alpha: float, m: int) -> np.ndarray:
    """Per-row interval level α / c with c = p_holm / p (Bonferroni's m where p = 0): the
    interval excludes the null exactly when the Holm-adjusted p-value is below α."""
    with np.errstate(invalid="ignore", divide="ignore"):
        c = np.where(p > 0, p_holm / np.where(p > 0, p, 1.0), float(max(m, 1)))
    return alpha / np.maximum(c, 1.0)


def _jackknife(d: float, reps: np.ndarray) -> tuple[float, float, float]:
    """(se, t, two-sided p) of the delete-one-unit jackknife, t with n - 1 df; all NaN with
    fewer than :data:`MIN_JACKKNIFE_SEEDS` units or when the replicates do not vary (zero
    variance: not testable)."""
    n = len(reps)
    if not math.isfinite(d) or n < MIN_JACKKNIFE_SEEDS or not np.isfinite(reps).all():
        return math.nan, math.nan, math.nan
    se = math.sqrt((n - 1) / n * float(((reps - reps.mean()) ** 2).sum()))
    if not se > 1e-12 * max(1.0, abs(d)):
        # every replicate the same: no spread to test against (a t of ±inf, p = 0, would
        # call a difference no seed moves "significant"): not testable
        return math.nan, math.nan, math.nan
    t = d / se
    return se, t, float(2 * _st.t.sf(abs(t), n - 1))


def compare_within(table: pd.DataFrame, a: str, b: str, response: str = "accuracy_drop", *,
                   cluster: str = "arch", unit: str = "seed",
                   strata: str | None = None, weights: str = "pairs") -> dict[str, float]:
    """Within-cluster τ of measure ``a`` minus that of ``b``, with its delete-one-unit jackknife.

    Parameters
    ----------
    table : pandas.DataFrame
        One row per model (and stratum): ``cluster``, ``unit``, ``a``, ``b``, ``response``
        (and ``strata``).
    a, b : str
        The measures compared (oriented), e.g. TopoLip and a baseline.
    response : str, default="accuracy_drop"
        What both are ranked against.
    cluster, unit : str
        Pairs are formed within ``cluster``; ``unit`` is the resampled replicate (the seed,
        shared by the clusters: deleting a seed deletes its model in every cluster).
    strata : str, optional
        A column (the perturbation kind) whose values are analysed apart and averaged: ``d``
        is the mean over strata of the per-stratum difference (strata where it is defined),
        weighted as ``weights`` says; deleting a unit deletes it from every stratum.
    weights : {"pairs", "equal"}, default="pairs"
        ``"pairs"``: each stratum weighs by its within-cluster pairs where both measures and
        the response are defined (in each replicate, its own pairs), so a kind the noise
        floor left with one pair weighs like one pair; ``"equal"``: every stratum alike.

    Returns
    -------
    dict
        ``diff`` (τ_w(a) − τ_w(b) on the pairs where both are defined), ``se`` (jackknife),
        ``t``, ``df`` (units − 1), ``p`` (two-sided, Student's t), ``n_units``. A stratum
        enters only where the difference is defined in every delete-one-unit replicate;
        ``se``, ``t`` and ``p`` are NaN with fewer than :data:`MIN_JACKKNIFE_SEEDS` units, when no
        stratum is, or when the replicates do not vary (zero jackknife variance: not
        testable).

    Raises
    ------
    ValueError
        If a column is missing or ``weights`` is unknown.

    Examples
    --------
    ``a`` follows the response within both architectures, ``b`` is reversed in one of them:

    >>> r = np.array([1, 2, 3, 4, 5, 1, 2, 3, 4, 5.0])
    >>> t = pd.DataFrame({"arch": np.repeat(["x", "y"], 5), "seed": np.tile(range(5), 2),
    ...                   "a": r, "b": np.r_[r[:5], -r[5:]], "r": r})
    >>> out = compare_within(t, "a", "b", "r")
    >>> round(out["diff"], 3), out["n_units"], out["df"]
    (1.0, 5, 4)
    """
    cols = [cluster, unit, a, b, response] + ([strata] if strata else [])
    require_columns(table, cols, "table")
    if weights not in ("pairs", "equal"):
        raise ValueError(f"weights must be 'pairs' or 'equal', got {weights!r}")
    seeds = sorted(table[unit].unique())
    archs = sorted(table[cluster].astype(str).unique())
    t = table.assign(**{cluster: table[cluster].astype(str)})
    groups = [g for _, g in t.groupby(strata, sort=False)] if strata else [t]
    n = len(seeds)
    iu, ju = np.triu_indices(n, 1)
    keep = np.stack([(iu != s) & (ju != s) for s in range(n)]).astype(float)  # (n, P)
    diffs, reps, w, w_reps = [], [], [], []
    for g in groups:
        sa, va = _signs(_grid(g, a, seeds, archs, cluster=cluster, unit=unit))
        sb, vb = _signs(_grid(g, b, seeds, archs, cluster=cluster, unit=unit))
        sy, vy = _signs(_grid(g, response, seeds, archs, cluster=cluster, unit=unit))
        both = va * vb
        sa, sb = sa * both, sb * both
        d = float(_tau(sa, both, sy, vy) - _tau(sb, both, sy, vy))
        k = keep[:, :, None]
        rep = (_tau(sa * k, both * k, sy * k, vy * k)
               - _tau(sb * k, both * k, sy * k, vy * k))
        # a stratum enters only where the difference is defined with every seed left out too
        # (a kind left with few models by the noise floor may lose its last pair), so every
        # jackknife replicate averages the same strata
        if not (math.isfinite(d) and np.isfinite(rep).all()):
            continue
        diffs.append(d)
        reps.append(rep)
        used = both * vy
        w.append(float(used.sum()) if weights == "pairs" else 1.0)
        w_reps.append((used[None] * k).sum(axis=(1, 2)) if weights == "pairs"
                      else np.ones(n))
    if not diffs:
        return {"diff": math.nan, "se": math.nan, "t": math.nan, "df": n - 1, "p": math.nan,
                "n_units": n}
    d = float(np.average(diffs, weights=w))
    wr = np.array(w_reps)
    rep_d = (np.array(reps) * wr).sum(0) / np.where(wr.sum(0) > 0, wr.sum(0), 1.0)
    se, tt, p = _jackknife(d, rep_d if n else np.array([]))
    return {"diff": d, "se": se, "t": tt, "df": n - 1, "p": p, "n_units": n}


# --------------------------------------------------------------------------- granulated τ


def granulated_taus(sweep: pd.DataFrame, measure: str, response: str = "accuracy_drop", *,
                    family: str = "arch", axis: str = "axis",
                    setting: str = "seed") -> pd.DataFrame:
    """Per-axis granulated Kendall τ of Jiang et al. (2020), within each architecture family.

    Parameters
    ----------
    sweep : pandas.DataFrame
        One row per sweep model and axis it belongs to (the ``source == "sweep"`` rows of
        :func:`measure_population`, one perturbation kind): ``family``, ``axis``,
        ``setting``, ``measure``, ``response``.
    measure, response : str
        The columns ranked (orient the measure first).
    family : str, default="arch"
        The architecture family: axes are never mixed across families.
    axis : str, default="axis"
        The swept hyper-parameter of the row.
    setting : str, default="seed"
        What else identifies a model of the axis: the models of one (family, axis, setting)
        differ only in that axis (a one-at-a-time sweep holds the other axes at the base).

    Returns
    -------
    pandas.DataFrame
        One row per family and axis: ``arch`` (the family), ``axis``, ``tau`` (the mean over
        settings of τ over the axis's models; NaN when none is defined), ``n_settings``
        (settings with a defined τ), ``n_models`` (rows).

    Raises
    ------
    ValueError
        If a column is missing.

    Notes
    -----
    Jiang et al.'s :math:`\\psi_i = m_i^{-1} \\sum_{\\theta_{-i}} \\tau(\\{(\\mu(\\theta),
    g(\\theta)) : \\theta_i \\in \\Theta_i\\})`, the granulated coefficient
    :math:`\\Psi = n^{-1} \\sum_i \\psi_i` (the mean of ``tau`` over a family's axes). τ over
    two models is their concordance (±1).

    Examples
    --------
    Width orders models as the drop does; depth reverses them:

    >>> t = pd.DataFrame({"arch": "vit", "seed": 0, "axis": ["w"] * 3 + ["d"] * 2,
    ...                   "m": [1, 2, 3, 1, 2], "r": [1, 2, 3, 2, 1]})
    >>> granulated_taus(t, "m", "r")[["axis", "tau"]].values.tolist()
    [['d', -1.0], ['w', 1.0]]
    """
    require_columns(sweep, [family, axis, setting, measure, response], "sweep")
    rows = []
    for (fam, ax), g in sweep.groupby([family, axis], sort=True):
        taus = [float(stats.tau_b(*stats.pair_signs(s[measure].to_numpy(float)),
                                   *stats.pair_signs(s[response].to_numpy(float))))
                for _, s in g.groupby(setting)]
        taus = [t for t in taus if math.isfinite(t)]
        rows.append({"arch": fam, "axis": ax, "tau": float(np.mean(taus)) if taus else math.nan,
                     "n_settings": len(taus), "n_models": len(g)})
    return pd.DataFrame(rows, columns=["arch", "axis", "tau", "n_settings", "n_models"])


# --------------------------------------------------------------------------- the study


def _seed_permutations(n: int, n_resamples: int, seed: int,
                       exact_seeds: int = EXACT_SEEDS) -> tuple[np.ndarray, bool]:
    """Every permutation of ``n`` seeds when ``n <= exact_seeds`` (exact test), else
    ``n_resamples`` random ones; and whether the set is exact."""
    if n <= exact_seeds:
        return np.array(list(itertools.permutations(range(n))), dtype=int).reshape(-1, n), True
    rng = np.random.default_rng(seed)
    return np.argsort(rng.random((n_resamples, n)), axis=1), False


def _oriented(table: pd.DataFrame, measures, *, mask: bool = True) -> pd.DataFrame:
    """The measures times their orientation; the excluded rows' measures NaN when ``mask``."""
    t = table.copy()
    out = t.copy()
    excluded = (t["excluded"].to_numpy(bool) if "excluded" in t and mask
                else np.zeros(len(t), bool))
    for m in measures:
        v = m.orientation * pd.to_numeric(t[m.column], errors="coerce").astype(float)
        out[m.column] = v.where(~excluded)
    return out


def measure_study(population: pd.DataFrame, *, reference: str = REFERENCE,
                  response: str = "accuracy_drop", alpha: float = 0.05,
                  n_resamples: int = 2000, seed: int = 0,
                  exact_seeds: int = EXACT_SEEDS, centre: bool = True,
                  weights: str = "pairs") -> tuple[pd.DataFrame, pd.DataFrame]:
    """Within-architecture Kendall τ of every measure with the drop, and TopoLip against each.

    Parameters
    ----------
    population : pandas.DataFrame
        From :func:`measure_population`: the ``source == "chain"`` rows give the
        within-architecture and pooled τ and the comparisons, the ``"sweep"`` rows the
        granulated τ.
    reference : str, default="end_to_end_scale_free"
        The measure compared with every baseline of :data:`MEASURES`.
    response : str, default="accuracy_drop"
        The robustness column.
    alpha : float, default=0.05
        Family-wise error rate of each Holm family.
    n_resamples : int, default=2000
        Random seed permutations of the within-architecture p-values when there are more than
        :data:`EXACT_SEEDS` seeds (fewer: every permutation, exact); the Monte-Carlo error of a
        p-value, ``sqrt(p(1-p)/n_resamples)``, is reported as ``p_mc_se``.
    seed : int, default=0
        Seed of the permutations (one set, shared by every measure and kind).
    exact_seeds : int, default=EXACT_SEEDS
        Up to this many seeds every permutation is enumerated (a simulation may lower it to
        use ``n_resamples`` random ones instead).
    centre : bool, default=True
        Rank seed-centred values (:func:`seed_centred`, per kind, every measure and the
        response): a seed's shared test batch then cannot pass for an association between
        models. False ranks the raw values (the rule before issue 26; kept to show the
        difference and for the mutation checks of ``tests/test_calibration.py``).
    weights : {"pairs", "equal"}, default="pairs"
        How the ``"all"`` rows average the kinds: by each kind's within-architecture pairs
        (a kind the noise floor left with one pair weighs like one pair), or equally (the rule
        before issue 26).

    Returns
    -------
    study : pandas.DataFrame
        One row per perturbation (each kind, then ``"all"``: the mean over kinds, the primary
        rows) and measure: ``perturbation``, ``role`` (``primary``/``secondary``),
        ``measure``, ``label``, ``kind``, ``baseline`` (bool), ``n_models`` (ranked),
        ``n_excluded`` (noise floor), ``n_archs``, ``n_seeds``, ``n_pairs`` (within-arch
        pairs), ``tau_within``, ``p_within`` (seed permutation, two-sided),
        ``n_permutations`` (all of them, an exact test, up to :data:`EXACT_SEEDS` seeds),
        ``p_mc_se`` (0 when exact), ``p_within_holm`` (TopoLip's primary τ is one test, left
        as it is; every other τ is one Holm family), ``rank`` (1 = largest
        ``tau_within`` of the perturbation), ``n_ranked``, ``tau_pooled`` (all models
        together, confounded by architecture), ``diff`` (τ_w of TopoLip minus this measure),
        ``diff_se``, ``diff_df``, ``p_diff`` (jackknife t), ``p_diff_holm`` (Holm within the
        role's family of comparisons), ``diff_low``, ``diff_high`` (the Holm-consistent
        interval), ``comparison`` (``"TopoLip better"``, ``"TopoLip worse"``, ``"no difference
        shown"``, ``"not testable"``; ``""`` for non-baselines), ``granulated_tau`` (mean over
        families of the mean over axes; for ``"all"`` also over the sweeps' kinds), ``n_axes``
        (distinct family × axis with a defined τ), ``n_families``.
    granulated : pandas.DataFrame
        One row per perturbation, measure, family and axis (:func:`granulated_taus`), plus
        ``perturbation`` and ``measure``.

    Raises
    ------
    ValueError
        If a column is missing or the population lacks the reference measure or chain rows.

    Examples
    --------
    >>> rng = np.random.default_rng(0); n = 6
    >>> drop = rng.random(2 * n)
    >>> pop = pd.DataFrame({"source": "chain", "arch": np.repeat(["a", "b"], n),
    ...     "seed": np.tile(range(n), 2), "perturbation": "fgsm", "excluded": False,
    ...     "accuracy_drop": drop, "end_to_end_scale_free": drop,
    ...     "displacement_ratio_max": rng.random(2 * n)})
    >>> study, _ = measure_study(pop, n_resamples=199)
    >>> s = study.set_index(["perturbation", "measure"])
    >>> s.loc[("all", "end_to_end_scale_free"), ["tau_within", "rank"]].tolist()
    [1.0, 1.0]
    """
    require_columns(population, ["source", "arch", "seed", "perturbation", response],
                    "population")
    if not 0 < alpha < 1:
        raise ValueError(f"alpha must be in (0, 1), got {alpha!r}")
    if n_resamples < 1:
        raise ValueError(f"n_resamples must be >= 1, got {n_resamples!r}")
    if weights not in ("pairs", "equal"):
        raise ValueError(f"weights must be 'pairs' or 'equal', got {weights!r}")
    present = [m for m in MEASURES if m.column in population.columns
               and pd.to_numeric(population[m.column], errors="coerce").notna().any()]
    if reference not in [m.column for m in present]:
        raise ValueError(f"the population lacks the reference measure {reference!r}")
    chain = population[population["source"] == "chain"]
    if chain.empty:
        raise ValueError("the population has no chain rows (source == 'chain')")
    if chain.duplicated(["arch", "seed", "perturbation"]).any():
        raise ValueError("the population repeats an (arch, seed, perturbation) chain row")
    chain = chain.assign(arch=chain["arch"].astype(str))
    raw = _oriented(chain, present)  # the τ over all models (context) ranks the raw values
    if centre:
        # centred before the noise floor's models are left out, so a seed's measures and its
        # response are centred over the same architectures (and the centring of a response
        # commutes with relabelling the seeds); the left-out models' measures then go
        chain = seed_centred(_oriented(chain, present, mask=False),
                             [m.column for m in present] + [response], strata="perturbation")
        if "excluded" in chain:
            chain.loc[chain["excluded"].to_numpy(bool), [m.column for m in present]] = np.nan
    else:
        chain = raw
    kinds = list(dict.fromkeys(chain["perturbation"]))
    seeds = sorted(chain["seed"].unique())
    archs = sorted(chain["arch"].unique())
    perms, exact = _seed_permutations(len(seeds), n_resamples, seed, exact_seeds)
    n_perm = len(perms)
    cols = [m.column for m in present]

    per_kind, null = {}, {}
    for kind in kinds:
        g = chain[chain["perturbation"] == kind]
        y = _grid(g, response, seeds, archs, cluster="arch", unit="seed")
        x = np.stack([_grid(g, c, seeds, archs, cluster="arch", unit="seed") for c in cols])
        sx, vx = _signs(x)                        # (M, P, A)
        sy, vy = _signs(y)                        # (P, A)
        syp, vyp = _signs(y[perms])               # (B, P, A)
        tau = _tau(sx, vx, sy[None], vy[None])       # (M,)
        # stats.tau_b for every measure m and permutation b at once
        num = np.einsum("mpa,bpa->bm", sx, syp)
        den = np.sqrt(np.einsum("mpa,bpa->bm", np.abs(sx), vyp)
                      * np.einsum("bpa,mpa->bm", np.abs(syp), vx))
        with np.errstate(invalid="ignore", divide="ignore"):
            null[kind] = np.where(den > 0, num / np.where(den > 0, den, 1.0), np.nan)
        graw = raw[raw["perturbation"] == kind]
        pooled = [stats.kendall_tau(graw[c].to_numpy(float), graw[response].to_numpy(float))
                  for c in cols]
        n_ex = int(g["excluded"].sum()) if "excluded" in g else 0
        per_kind[kind] = {"tau": tau, "pooled": np.array(pooled), "n_pairs": (vx * vy).sum((1, 2)),
                          "n_pairs_null": np.einsum("mpa,bpa->bm", vx, vyp),
                          "finite": np.isfinite(x) & np.isfinite(y)[None],
                          "n_excluded": n_ex}

    rows = []
    for kind in [*kinds, "all"]:
        if kind == "all":
            taus = np.array([per_kind[k]["tau"] for k in kinds])          # (K, M)
            defined = np.isfinite(taus)
            # each kind weighs by its pairs (or alike); under a relabelling, by its own pairs
            wk = (np.array([per_kind[k]["n_pairs"] for k in kinds], float)
                  if weights == "pairs" else np.ones(taus.shape))
            wk = np.where(defined, wk, 0.0)
            nulls = np.stack([null[k] for k in kinds])                    # (K, B, M)
            wn = (np.stack([per_kind[k]["n_pairs_null"] for k in kinds]).astype(float)
                  if weights == "pairs" else np.ones(nulls.shape))
            wn = np.where(np.isfinite(nulls), wn, 0.0)
            with np.errstate(invalid="ignore", divide="ignore"):
                tau = np.where(wk.sum(0) > 0, (np.where(defined, taus, 0.0) * wk).sum(0)
                               / np.where(wk.sum(0) > 0, wk.sum(0), 1.0), np.nan)
                tnull = ((np.where(np.isfinite(nulls), nulls, 0.0) * wn).sum(0)
                         / np.maximum(wn.sum(0), 1e-300))
                tnull = np.where(wn.sum(0) > 0, tnull, np.nan)
            pk = np.array([per_kind[k]["pooled"] for k in kinds])
            pooled = np.where(np.isfinite(pk).any(0), np.nansum(pk, 0)
                              / np.maximum(np.isfinite(pk).sum(0), 1), np.nan)
            info = {"n_pairs": sum(per_kind[k]["n_pairs"] for k in kinds),
                    "finite": np.any([per_kind[k]["finite"] for k in kinds], axis=0),
                    "n_excluded": sum(per_kind[k]["n_excluded"] for k in kinds)}
        else:
            tau, tnull, pooled = per_kind[kind]["tau"], null[kind], per_kind[kind]["pooled"]
            info = per_kind[kind]
        with np.errstate(invalid="ignore"):
            exceed = (np.abs(tnull) >= np.abs(tau)[None, :] - 1e-12).sum(0)
        # exact: the identity is one of the permutations; Monte Carlo: (1 + #) / (1 + B)
        p = np.where(np.isfinite(tau), exceed / n_perm if exact
                     else (1 + exceed) / (1 + n_perm), np.nan)
        n_models = info["finite"].sum(axis=(1, 2))
        order = pd.Series(tau).rank(ascending=False, method="min")
        sub = chain if kind == "all" else chain[chain["perturbation"] == kind]
        for i, m in enumerate(present):
            cmp = {"diff": math.nan, "se": math.nan, "df": math.nan, "p": math.nan}
            if m.baseline and m.column != reference:
                cmp = compare_within(sub, reference, m.column, response,
                                     strata="perturbation" if kind == "all" else None,
                                     weights=weights)
            rows.append({
                "perturbation": kind, "role": "primary" if kind == "all" else "secondary",
                "measure": m.column, "label": m.label, "kind": m.kind,
                "baseline": bool(m.baseline and m.column != reference),
                "n_models": int(n_models[i]), "n_excluded": int(info["n_excluded"]),
                "n_archs": len(archs), "n_seeds": len(seeds),
                "n_pairs": int(info["n_pairs"][i]), "tau_within": float(tau[i]),
                "p_within": float(p[i]), "n_permutations": n_perm,
                "p_mc_se": 0.0 if exact else float(math.sqrt(p[i] * (1 - p[i]) / n_perm))
                if math.isfinite(p[i]) else math.nan,
                "rank": float(order.iloc[i]), "n_ranked": int(np.isfinite(tau).sum()),
                "tau_pooled": float(pooled[i]), "diff": cmp["diff"], "diff_se": cmp["se"],
                "diff_df": cmp["df"], "p_diff": cmp["p"]})
    study = pd.DataFrame(rows)
    study["p_within_holm"] = np.nan
    study["p_diff_holm"] = np.nan
    study["diff_low"] = np.nan
    study["diff_high"] = np.nan
    study["comparison"] = ""
    # association: TopoLip's mean-over-kinds τ is one test; every other τ is one Holm family
    primary_tau = (study["role"] == "primary") & (study["measure"] == reference)
    study.loc[primary_tau, "p_within_holm"] = study.loc[primary_tau, "p_within"]
    study.loc[~primary_tau, "p_within_holm"] = stats.holm(
        study.loc[~primary_tau, "p_within"].to_numpy(float))
    for _role, idx in study.groupby("role").groups.items():
        part = study.loc[idx]
        base = part[part["baseline"]]
        ph = stats.holm(base["p_diff"].to_numpy(float))
        pv = base["p_diff"].to_numpy(float)
        level = _holm_level(pv, ph, alpha, int(np.isfinite(pv).sum()))
        q = _st.t.ppf(1 - level / 2, base["diff_df"].to_numpy(float))
        se, d = base["diff_se"].to_numpy(float), base["diff"].to_numpy(float)
        with np.errstate(invalid="ignore"):
            study.loc[base.index, "p_diff_holm"] = ph
            study.loc[base.index, "diff_low"] = d - q * se
            study.loc[base.index, "diff_high"] = d + q * se
        verdict = np.where(~np.isfinite(ph), "not testable",
                           np.where(ph < alpha, np.where(d > 0, "TopoLip better",
                                                         "TopoLip worse"),
                                    "no difference shown"))
        study.loc[base.index, "comparison"] = verdict

    granulated = _granulated(population, present, response)
    g_rows = []
    for _, r in study.iterrows():
        sel = granulated[granulated["measure"] == r["measure"]]
        if r["perturbation"] != "all":
            sel = sel[sel["perturbation"] == r["perturbation"]]
        sel = sel.dropna(subset=["tau"])
        if sel.empty:
            g_rows.append((math.nan, 0, 0))
            continue
        fam = sel.groupby(["perturbation", "arch"])["tau"].mean()
        per_kind_mean = fam.groupby(level="perturbation").mean()
        g_rows.append((float(per_kind_mean.mean()),
                       int(len(sel.drop_duplicates(["arch", "axis"]))), int(sel["arch"].nunique())))
    study["granulated_tau"] = [g for g, _, _ in g_rows]
    study["n_axes"] = [n for _, n, _ in g_rows]
    study["n_families"] = [n for _, _, n in g_rows]
    return study, granulated


def _granulated(population, present, response) -> pd.DataFrame:
    sw = population[population["source"] == "sweep"] if "source" in population else None
    cols = ["perturbation", "measure", "arch", "axis", "tau", "n_settings", "n_models"]
    if sw is None or sw.empty or "axis" not in sw:
        return pd.DataFrame(columns=cols)
    sw = _oriented(sw, present)
    parts = []
    for kind, g in sw.groupby("perturbation", sort=False):
        for m in present:
            if g[m.column].notna().any():
                parts.append(granulated_taus(g, m.column, response)
                             .assign(perturbation=kind, measure=m.column))
    return pd.concat(parts, ignore_index=True)[cols] if parts else pd.DataFrame(columns=cols)


# --------------------------------------------------------------------------- findings
