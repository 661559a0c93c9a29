"""Consistency rules of the literature chapter's topology rows (issue 28, rows 3, 5, 6).

Each rule is ``rule(table, params) -> dict`` with ``our_number``, ``low``, ``high`` (floats,
NaN allowed), ``verdict`` in ("consistent", "inconsistent", "not comparable") and a non-empty
``reason``. The tables come from :mod:`topolip.experiments.literature_topology`. Torch-free.

References
----------
.. [1] G. Naitzat, A. Zhitnikov, L.-H. Lim, "Topology of deep neural networks", JMLR 21 (2020),
   arXiv:2004.06093.
.. [2] M. Wheeler, J. Bouza, P. Bubenik, "Activation landscapes as a topological summary of
   neural network performance", IEEE BigData 2021, arXiv:2110.10136 (abstract checked).
.. [3] E. Datta et al., "Topology of Out-of-Distribution Examples in Deep Neural Networks",
   arXiv:2501.12522 (2025): OOD average lifetimes statistically longer.
.. [4] Vu et al. 2025 (total persistence monotone in a batch's adversarial share): as issue 28
   states it.
"""
from __future__ import annotations

from collections.abc import Callable, Mapping

import numpy as np
import pandas as pd
from scipy import stats as sps

from topolip.evidence.stats import holm, paired_t

__all__ = ["ACTIVATION_LABELS", "TOPOLOGY_RULES", "activation_label", "adv_share_persistence",
           "betti_depth", "betti_depth_rival", "complexity_profiles", "ood_h0_lifetimes"]

NAN = float("nan")


def _out(our, low, high, verdict, reason) -> dict:
    return {"our_number": float(our), "low": float(low), "high": float(high),
            "verdict": verdict, "reason": reason}


def _missing(table: pd.DataFrame, cols) -> str | None:
    miss = [c for c in cols if c not in table.columns]
    return f"the table has no column(s) {miss}" if miss else None


def complexity_profiles(table: pd.DataFrame) -> pd.DataFrame:
    """Topological complexity ``sum over classes of (betti0 + betti1)`` per model and layer.

    Parameters
    ----------
    table : DataFrame
        One row per ``arch`` x ``seed`` x ``layer`` (int, 0 = input) x ``label`` with
        integer ``betti0``, ``betti1``.

    Returns
    -------
    DataFrame with columns ``arch, seed, layer, complexity`` sorted by layer.
    """
    t = table.assign(complexity=table["betti0"] + table["betti1"])
    return (t.groupby(["arch", "seed", "layer"], as_index=False)["complexity"].sum()
            .sort_values(["arch", "seed", "layer"]))


ACTIVATION_LABELS = {"relu": "ReLU", "tanh": "tanh", "gelu": "GELU"}


def activation_label(name: str) -> str:
    """Reader's name of an MLP activation family of the topology rows; others unchanged.

    >>> activation_label("relu"), activation_label("tanh"), activation_label("sine")
    ('ReLU', 'tanh', 'sine')
    """
    return ACTIVATION_LABELS.get(name, name)


def _slope(prof: pd.DataFrame) -> float:
    x, y = prof["layer"].to_numpy(float), prof["complexity"].to_numpy(float)
    return float(np.polyfit(x, y, 1)[0]) if len(x) >= 2 else NAN


def betti_depth(table: pd.DataFrame, params: Mapping) -> dict:
    """Naitzat et al. 2020 [1]_: per-class Betti numbers fall to (1, 0), faster with ReLU.

    Precondition: when every class of the input layer (the lowest ``layer``) is already
    beta0 = 1, beta1 = 0, the claim is *not comparable* (nothing to simplify). Rule (fixed
    before the run): (a) in each activation family (``params["fast"]``, default
    "relu", and ``params["slow"]``, default "tanh") a share > ``min_share`` (0.5) of models has
    beta0 = 1 and beta1 = 0 at the last layer for at least half of its classes; and (b) the
    least-squares slope of complexity (sum of beta0 + beta1 over classes) against the layer
    index is more negative for ``fast`` than ``slow``, paired by seed: the paired t interval
    (``coverage``, 0.95) of ``slope_fast - slope_slow`` lies below 0. Our number is that mean
    difference (complexity units per layer).

    Parameters
    ----------
    table : DataFrame
        See :func:`complexity_profiles`.
    params : Mapping
        Optional ``fast``, ``slow``, ``min_share``, ``coverage``.

    Returns
    -------
    dict, the rule result.
    """
    miss = _missing(table, ["arch", "seed", "layer", "label", "betti0", "betti1"])
    if miss:
        return _out(NAN, NAN, NAN, "not comparable", miss)
    fast, slow = params.get("fast", "relu"), params.get("slow", "tanh")
    min_share, coverage = float(params.get("min_share", 0.5)), float(params.get("coverage", 0.95))
    first = table[table["layer"] == table["layer"].min()]
    if len(first) and ((first["betti0"] == 1) & (first["betti1"] == 0)).all():
        return _out(NAN, NAN, NAN, "not comparable",
                    "every class of the input is already β₀ = 1, β₁ = 0 at the k-NN scale: "
                    "there is no topology to simplify (Naitzat et al. start from entangled, "
                    "topologically complex classes)")
    shares = {}
    for arch in (fast, slow):
        t = table[table["arch"] == arch]
        if t.empty:
            return _out(NAN, NAN, NAN, "not comparable", f"no {arch} models in the table")
        last = t[t["layer"] == t.groupby("seed")["layer"].transform("max")]
        simple = (last["betti0"] == 1) & (last["betti1"] == 0)
        per_model = simple.groupby(last["seed"]).mean() >= 0.5
        shares[arch] = float(per_model.mean())
    prof = complexity_profiles(table)
    slopes = prof.groupby(["arch", "seed"]).apply(_slope, include_groups=False).unstack("arch")
    paired = slopes[[fast, slow]].dropna()
    if len(paired) < 2:
        return _out(NAN, NAN, NAN, "not comparable",
                    f"{len(paired)} seed(s) with both {activation_label(fast)} and "
                    f"{activation_label(slow)}: need ≥ 2")
    diff = paired[fast].to_numpy() - paired[slow].to_numpy()
    if np.allclose(diff, diff[0]):
        lo = hi = float(diff[0])
    else:
        r = paired_t(paired[fast].to_numpy(), paired[slow].to_numpy(), coverage=coverage)
        lo, hi = r.low, r.high
    eff = float(diff.mean())
    simple_ok = all(s > min_share for s in shares.values())
    faster = hi < 0
    f_name, s_name = activation_label(fast), activation_label(slow)
    words = (f"last layer β₀ = 1, β₁ = 0 in {shares[fast]:.0%} of {f_name} and "
             f"{shares[slow]:.0%} of {s_name} models (need > {min_share:.0%}); complexity "
             f"slope {f_name} − {s_name} = {eff:.3g} per layer, {coverage:.0%} interval "
             f"[{lo:.3g}, {hi:.3g}] over {len(paired)} seeds (need < 0)")
    verdict = "consistent" if simple_ok and faster else "inconsistent"
    return _out(eff, lo, hi, verdict, words)


def betti_depth_rival(table: pd.DataFrame, params: Mapping) -> dict:
    """Rival of Wheeler, Bouza & Bubenik [2]_: complexity does not fall monotonically with depth.

    Rule (fixed before the run): a model's profile is non-monotone when its complexity rises
    by more than ``tol`` (default 0) at some layer step; the rival is consistent when a share
    >= ``min_share`` (default 0.5) of models is non-monotone. Our number is that share, with a
    Clopper--Pearson interval (``coverage``, 0.95).
    """
    miss = _missing(table, ["arch", "seed", "layer", "label", "betti0", "betti1"])
    if miss:
        return _out(NAN, NAN, NAN, "not comparable", miss)
    tol, min_share = float(params.get("tol", 0.0)), float(params.get("min_share", 0.5))
    coverage = float(params.get("coverage", 0.95))
    prof = complexity_profiles(table)
    rises = prof.groupby(["arch", "seed"])["complexity"].apply(
        lambda c: bool((np.diff(c.to_numpy(float)) > tol).any()))
    n, k = len(rises), int(rises.sum())
    if n == 0:
        return _out(NAN, NAN, NAN, "not comparable", "no model profiles")
    ci = sps.binomtest(k, n).proportion_ci(confidence_level=coverage)
    share = k / n
    verdict = "consistent" if share >= min_share else "inconsistent"
    return _out(share, ci.low, ci.high, verdict,
                f"{k} of {n} models' complexity rises at some layer step (need ≥ {min_share:.0%})")


def ood_h0_lifetimes(table: pd.DataFrame, params: Mapping) -> dict:
    """Datta et al. 2025 [3]_: OOD features have longer H0 lifetimes than test features.

    Table: one row per ``arch`` x ``seed`` x ``ood_set`` with ``p_value`` (one-sided
    Mann--Whitney, alternative: OOD lifetimes longer) and ``auc`` (U / (n_ood n_test), 0.5 =
    no shift). Rule (fixed before the run): Holm over every row (sets x architectures x
    seeds) at ``alpha`` (0.05); consistent when the share of rejections is >= ``min_share``
    (0.5). A one-sided test only rejects in the claimed direction; the reason also gives the
    share of rows with ``auc < 0.5`` (the opposite sign). Our number is the share of
    rejections, with a Clopper--Pearson interval.
    """
    miss = _missing(table, ["arch", "seed", "ood_set", "p_value", "auc"])
    if miss:
        return _out(NAN, NAN, NAN, "not comparable", miss)
    t = table.dropna(subset=["p_value"])
    if t.empty:
        return _out(NAN, NAN, NAN, "not comparable", "no p-values in the table")
    alpha, min_share = float(params.get("alpha", 0.05)), float(params.get("min_share", 0.5))
    adj = holm(t["p_value"].to_numpy(float))
    k, n = int((adj <= alpha).sum()), len(t)
    neg = float((t["auc"] < 0.5).mean())
    ci = sps.binomtest(k, n).proportion_ci(confidence_level=1 - alpha)
    verdict = "consistent" if k / n >= min_share else "inconsistent"
    return _out(k / n, ci.low, ci.high, verdict,
                f"{k} of {n} (set x model) tests reject after Holm at {alpha}; {neg:.0%} of rows "
                f"have OOD lifetimes shorter (AUC < 0.5); need ≥ {min_share:.0%} rejections")


def adv_share_persistence(table: pd.DataFrame, params: Mapping) -> dict:
    """Vu et al. 2025 [4]_: total persistence moves monotonically with the adversarial share.

    Table: one row per ``arch`` x ``seed`` x ``fraction`` (0..1) with ``total_persistence``.
    Rule (fixed before the run): Spearman rho of total persistence against fraction per model;
    consistent when the majority sign of rho is shared by >= ``min_sign_share`` (0.8) of models
    and a two-sided one-sample t test of Fisher's z = artanh(rho) (rho clipped to
    +-``clip``, 0.999) rejects at ``alpha`` (0.05). Our number is tanh(mean z) with the
    t interval back-transformed.
    """
    miss = _missing(table, ["arch", "seed", "fraction", "total_persistence"])
    if miss:
        return _out(NAN, NAN, NAN, "not comparable", miss)
    alpha = float(params.get("alpha", 0.05))
    min_sign = float(params.get("min_sign_share", 0.8))
    clip = float(params.get("clip", 0.999))
    rhos = []
    for _, g in table.groupby(["arch", "seed"]):
        if g["fraction"].nunique() < 3 or g["total_persistence"].nunique() < 2:
            continue
        rhos.append(sps.spearmanr(g["fraction"], g["total_persistence"]).statistic)
    rhos = np.asarray(rhos, float)
    if len(rhos) < 2:
        return _out(NAN, NAN, NAN, "not comparable",
                    f"{len(rhos)} model(s) with ≥ 3 fractions and varying persistence: need ≥ 2")
    z = np.arctanh(np.clip(rhos, -clip, clip))
    pos = float((rhos > 0).mean())
    sign_share = max(pos, float((rhos < 0).mean()))
    m, se = z.mean(), z.std(ddof=1) / np.sqrt(len(z))
    q = sps.t.ppf(1 - alpha / 2, len(z) - 1)
    if se == 0:
        p = 0.0 if m != 0 else 1.0
    else:
        p = float(2 * sps.t.sf(abs(m / se), len(z) - 1))
    ok = sign_share >= min_sign and p <= alpha
    return _out(np.tanh(m), np.tanh(m - q * se), np.tanh(m + q * se),
                "consistent" if ok else "inconsistent",
                f"ρ > 0 in {pos:.0%} of {len(rhos)} models (majority sign share "
                f"{sign_share:.0%}, "
                f"need ≥ {min_sign:.0%}); Fisher-z t test p = {p:.2g} (need ≤ {alpha})")


TOPOLOGY_RULES: dict[str, Callable[[pd.DataFrame, Mapping], dict]] = {
    "betti_depth": betti_depth,
    "betti_depth_rival": betti_depth_rival,
    "ood_h0_lifetimes": ood_h0_lifetimes,
    "adv_share_persistence": adv_share_persistence,
}
