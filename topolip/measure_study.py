r"""The measure study: does TopoLip predict robustness better than simpler measures?

On the population of trained models (every architecture × seed of the chain, and every point of
the one-parameter-at-a-time sweeps), each measure of :data:`MEASURES` is ranked against the
accuracy a perturbation costs, within each perturbation kind:

- Kendall's τ between the (oriented) measure and the accuracy drop, with a bootstrap interval
  over models (:func:`topolip.stats.kendall_with_interval`);
- the difference of τ between TopoLip and each baseline on the same resampled models, with its
  interval (TopoLip *beats* a baseline when that interval lies above 0, *loses* when below);
- the granulated τ of Jiang et al. (2020) over the sweeps' axes
  (:func:`topolip.stats.granulated_tau`).

Every measure is oriented a priori (the sign in :data:`MEASURES`) so that a positive τ means
"a larger value goes with a larger accuracy drop, as the measure's rationale predicts".
Torch-free.

References
----------
.. [1] Y. Jiang, B. Neyshabur, H. Mobahi, D. Krishnan, S. Bengio, "Fantastic Generalization
   Measures and Where to Find Them", ICLR 2020, arXiv:1912.02178.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np
import pandas as pd

from . import stats

__all__ = ["MEASURES", "Measure", "best_measures", "mean_tau", "measure_population",
           "measure_study"]


@dataclass(frozen=True)
class Measure:
    """A column of the population table: its ``label``, ``orientation`` (+1: larger predicts a
    larger drop; -1: larger predicts a smaller drop), ``kind`` (``"topological"``,
    ``"geometric"``, ``"Lipschitz"``, ``"model"``) and whether it uses the perturbation."""

    column: str
    label: str
    orientation: int
    kind: str
    per_perturbation: bool


#: TopoLip first (the reference), then the baselines of the study.
MEASURES: tuple[Measure, ...] = (
    Measure("end_to_end_scale_free", "TopoLip Δ_L/Δ_0 (scale-free)", 1, "topological", True),
    Measure("end_to_end", "TopoLip Δ_L/Δ_0 (raw)", 1, "topological", True),
    Measure("geometric_mean_scale_free", "TopoLip per-layer geometric mean", 1, "topological",
            True),
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
    Measure("accuracy_clean", "clean accuracy", -1, "model", False),
    Measure("parameters", "parameter count", -1, "model", False),
)


def measure_population(summary: pd.DataFrame, sweeps: pd.DataFrame | None = None) -> pd.DataFrame:
    """One row per model and perturbation kind, from the chain's models and the sweeps.

    Parameters
    ----------
    summary : pandas.DataFrame
        The per-model summary of the chain (``topolip_summary``: ``arch``, ``seed``,
        ``perturbation``, the measure columns and ``accuracy_drop``).
    sweeps : pandas.DataFrame, optional
        Rows of :func:`topolip.sweeps.run_sweep` (one per sweep point, seed and kind; the same
        columns plus ``parameter``, ``value``, ``checkpoint``).

    Returns
    -------
    pandas.DataFrame
        Columns ``source`` (``"chain"`` or ``"sweep"``), ``model`` (a unique id), ``arch``,
        ``seed``, ``parameter``/``value`` (sweeps; empty for the chain), ``perturbation``,
        ``accuracy_drop`` and every measure column present. A sweep's base model, which
        appears once per swept parameter, is kept once per kind; a sweep row of a kind the
        chain measured at another strength is left out (a population ranks models under one
        perturbation).
    """
    cols = [m.column for m in MEASURES]
    chain = summary.copy()
    chain["source"] = "chain"
    chain["model"] = chain["arch"] + "/seed" + chain["seed"].astype(str)
    chain["parameter"] = ""
    chain["value"] = ""
    parts = [chain]
    if sweeps is not None and len(sweeps):
        sw = sweeps.copy()
        sw["source"] = "sweep"
        sw["model"] = sw["checkpoint"].astype(str)
        if "accuracy_clean" not in sw.columns and "test_accuracy" in sw.columns:
            sw["accuracy_clean"] = sw["test_accuracy"]
        sw = sw.drop_duplicates(subset=["model", "perturbation"])
        if "strength" in sw.columns and "strength" in chain.columns:
            chain_strength = chain.groupby("perturbation")["strength"].first()
            ref = sw["perturbation"].map(chain_strength)
            same = ref.isna() | np.isclose(sw["strength"].astype(float), ref.astype(float))
            sw = sw[same.to_numpy()]
        parts.append(sw)
    keep = ["source", "model", "arch", "seed", "parameter", "value", "perturbation",
            "accuracy_drop"] + [c for c in cols if c in summary.columns]
    return pd.concat([p.reindex(columns=keep) for p in parts], ignore_index=True)


def measure_study(population: pd.DataFrame, sweeps: pd.DataFrame | None = None, *,
                  reference: str = "end_to_end_scale_free", response: str = "accuracy_drop",
                  alpha: float = 0.05, n_boot: int = 2000, seed: int = 0) -> pd.DataFrame:
    """Kendall τ of every measure with the accuracy drop, per perturbation kind.

    Parameters
    ----------
    population : pandas.DataFrame
        From :func:`measure_population`.
    sweeps : pandas.DataFrame, optional
        The sweep rows (for the granulated τ, on the axes ``arch`` × ``parameter``).
    reference : str, default="end_to_end_scale_free"
        The measure every other is compared with.
    response : str, default="accuracy_drop"
        The robustness column every measure is correlated with.
    alpha : float, default=0.05
        ``1 − alpha`` intervals.
    n_boot : int, default=2000
        Bootstrap resamples over models.
    seed : int, default=0
        Seed of the bootstrap.

    Returns
    -------
    pandas.DataFrame
        One row per kind and measure: ``perturbation``, ``measure``, ``label``, ``kind``,
        ``n`` (models), ``tau``, ``tau_low``, ``tau_high`` (oriented), ``diff``,
        ``diff_low``, ``diff_high`` (reference τ minus this measure's τ; NaN for the reference),
        ``comparison`` (``"TopoLip better"``, ``"TopoLip worse"``, ``"no difference shown"``),
        ``granulated_tau`` and ``n_axes`` (sweeps of that kind; NaN without them).

    Examples
    --------
    >>> rng = np.random.default_rng(0); n = 30; drop = rng.random(n)
    >>> pop = pd.DataFrame({"perturbation": "fgsm", "accuracy_drop": drop,
    ...                     "end_to_end_scale_free": drop + 0.01 * rng.random(n),
    ...                     "parameters": rng.random(n)})
    >>> t = measure_study(pop, n_boot=200).set_index("measure")
    >>> bool(t.loc["end_to_end_scale_free", "tau"] > 0.9), t.loc["parameters", "comparison"]
    (True, 'TopoLip better')
    """
    present = [m for m in MEASURES if m.column in population.columns
               and population[m.column].notna().any()]
    if reference not in [m.column for m in present]:
        raise ValueError(f"the population lacks the reference measure {reference!r}")
    rows = []
    for kind, g in population.groupby("perturbation", sort=False):
        g = g.copy()
        for m in present:
            g[f"_o_{m.column}"] = m.orientation * g[m.column].astype(float)
        ref = f"_o_{reference}"
        sw = None
        if sweeps is not None and len(sweeps):
            sw = sweeps[sweeps["perturbation"] == kind].copy()
            if "accuracy_clean" not in sw.columns and "test_accuracy" in sw.columns:
                sw["accuracy_clean"] = sw["test_accuracy"]
        for m in present:
            col = f"_o_{m.column}"
            r = stats.kendall_with_interval(g, col, response,
                                            reference=None if m.column == reference else ref,
                                            alpha=alpha, n_boot=n_boot, seed=seed)
            diff = -r.get("diff", math.nan)  # reference minus measure
            lo, hi = -r.get("diff_high", math.nan), -r.get("diff_low", math.nan)
            if m.column == reference or not (math.isfinite(lo) and math.isfinite(hi)):
                comparison = ""
            elif lo > 0:
                comparison = "TopoLip better"
            elif hi < 0:
                comparison = "TopoLip worse"
            else:
                comparison = "no difference shown"
            gt, n_axes = math.nan, 0
            if sw is not None and m.column in sw.columns and len(sw):
                sw[col] = m.orientation * sw[m.column].astype(float)
                gt, n_axes = stats.granulated_tau(sw, col, response)
            rows.append({"perturbation": kind, "measure": m.column, "label": m.label,
                         "kind": m.kind, "n": r["n"], "tau": r["tau"], "tau_low": r["tau_low"],
                         "tau_high": r["tau_high"],
                         "diff": math.nan if m.column == reference else diff,
                         "diff_low": math.nan if m.column == reference else lo,
                         "diff_high": math.nan if m.column == reference else hi,
                         "comparison": comparison, "granulated_tau": gt, "n_axes": n_axes})
    return pd.DataFrame(rows)


def best_measures(study: pd.DataFrame) -> pd.DataFrame:
    """Per perturbation kind, the measure with the largest Kendall τ with the response.

    Parameters
    ----------
    study : pandas.DataFrame
        :func:`measure_study`'s table (``perturbation``, ``label``, ``tau``).

    Returns
    -------
    pandas.DataFrame
        The rows of ``study`` with the largest defined ``tau`` of each ``perturbation``
        (the first such row on a tie), by perturbation; empty when no τ is defined.

    Raises
    ------
    ValueError
        If a column is missing.

    Examples
    --------
    >>> s = pd.DataFrame({"perturbation": ["a", "a", "b"], "label": ["x", "y", "x"],
    ...                   "tau": [0.2, 0.5, float("nan")]})
    >>> best_measures(s)[["perturbation", "label"]].values.tolist()
    [['a', 'y']]
    """
    stats.require_columns(study, ["perturbation", "label", "tau"], "study")
    defined = study.dropna(subset=["tau"])
    return defined.loc[defined.groupby("perturbation")["tau"].idxmax()]


def mean_tau(study: pd.DataFrame) -> pd.Series:
    """Each measure's Kendall τ averaged over perturbation kinds, largest first.

    Parameters
    ----------
    study : pandas.DataFrame
        :func:`measure_study`'s table (``perturbation``, ``label``, ``tau``).

    Returns
    -------
    pandas.Series
        Indexed by ``label``; undefined τ are left out (a measure with none is absent).

    Raises
    ------
    ValueError
        If a column is missing.

    Examples
    --------
    >>> s = pd.DataFrame({"perturbation": ["a", "b", "a"], "label": ["x", "x", "y"],
    ...                   "tau": [0.2, 0.4, 0.5]})
    >>> mean_tau(s).round(2).to_dict()
    {'y': 0.5, 'x': 0.3}
    """
    stats.require_columns(study, ["perturbation", "label", "tau"], "study")
    defined = study.dropna(subset=["tau"])
    return defined.groupby("label", sort=False)["tau"].mean().sort_values(ascending=False)
