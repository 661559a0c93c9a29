"""The sentences of the measure study: :func:`study_findings` words the table
:func:`topolip.evidence.measures.measure_study` computes (within-architecture τ of TopoLip and of
each baseline with the accuracy drop, and TopoLip against each baseline) for chapter
``09_measures``.

The numbers are the evidence layer's; this module only words them (issue 29: numbers in
``evidence/``, words in ``report/``). Torch-free.
"""

from __future__ import annotations

import math

import pandas as pd

from topolip.evidence.measures import REFERENCE
from topolip.schema import require_columns

__all__ = ["study_findings"]


def _fmt_p(p: float) -> str:
    if not math.isfinite(p):
        return "undefined"
    return "< 0.001" if p < 0.001 else f"{p:.3f}" if p < 0.01 else f"{p:.2f}"


def study_findings(study: pd.DataFrame, *, alpha: float = 0.05, reference: str = REFERENCE,
             kind_label=str) -> dict[str, object]:
    """The numbers and phrases the measure chapter glues into its prose.

    Parameters
    ----------
    study : pandas.DataFrame
        :func:`measure_study`'s first table (or ``measure_study.csv`` read back).
    alpha : float, default=0.05
        The level the Holm p-values are read at.
    reference : str, default="end_to_end_scale_free"
        TopoLip's measure.
    kind_label : callable, default=str
        Names a perturbation kind in the text (e.g. :func:`topolip.roster.label`).

    Returns
    -------
    dict
        ``n_models``, ``n_archs``, ``n_seeds`` (chain design); ``ref_tau``, ``ref_p``,
        ``ref_p_holm``, ``ref_significant`` (bool), ``ref_tau_pooled``, ``ref_rank``
        (``"k of m"``), ``top_measure``, ``top_tau`` (primary rows: the mean over kinds);
        ``n_comparisons``, ``n_better``, ``n_worse``, ``n_undecided``, ``n_untestable``,
        ``better``, ``worse`` (baseline labels, ``"none"`` if empty) for the primary family;
        ``n_secondary``, ``n_secondary_better``, ``n_secondary_worse``; ``ref_taus_by_kind``
        (text); ``n_significant_measures`` (primary τ with Holm p < α); ``granulated``
        (text); ``p_mc_se`` (largest Monte-Carlo error of a primary p-value); ``near``
        (primary comparisons or τ whose Holm p lies within 2 Monte-Carlo errors, or 0.01, of
        α); ``sentence`` (the chapter's one-sentence finding); ``n_kinds`` (perturbation
        kinds), ``n_excluded`` (model × kind rows left out: noise floor), ``n_permutations``
        and ``min_p`` (the smallest p-value the seed permutation can give; where the table has
        these columns), ``n_tau_family`` (the τ tests in the Holm family of the other
        measures) and ``family_note`` (whether ``min_p`` lets any of them survive Holm).

    Raises
    ------
    ValueError
        If a column is missing or there are no primary rows for ``reference``.

    Examples
    --------
    >>> s = pd.DataFrame({"perturbation": "all", "role": "primary",
    ...     "measure": ["end_to_end_scale_free", "cka_distance"],
    ...     "label": ["TopoLip", "CKA"], "baseline": [False, True], "n_models": 20,
    ...     "n_archs": 4, "n_seeds": 5, "tau_within": [0.2, 0.5], "p_within": [0.2, 0.001],
    ...     "p_within_holm": [0.2, 0.002], "p_mc_se": [0.009, 0.0007], "rank": [2.0, 1.0],
    ...     "n_ranked": 2, "tau_pooled": [0.5, 0.4], "p_diff_holm": [float("nan"), 0.3],
    ...     "comparison": ["", "no difference shown"], "granulated_tau": float("nan"),
    ...     "n_axes": 0})
    >>> f = study_findings(s)
    >>> f["ref_rank"], f["top_measure"], f["n_undecided"], f["better"]
    ('2 of 2', 'CKA', 1, 'none')
    """
    need = ["perturbation", "role", "measure", "label", "baseline", "n_models", "n_archs",
            "n_seeds", "tau_within", "p_within", "p_within_holm", "p_mc_se", "rank",
            "n_ranked", "tau_pooled", "p_diff_holm", "comparison", "granulated_tau", "n_axes"]
    require_columns(study, need, "study")
    s = study.copy()
    s["comparison"] = s["comparison"].astype(object).where(s["comparison"].notna(), "")
    s["baseline"] = s["baseline"].astype(str).str.lower().isin(["true", "1"])
    prim = s[s["role"] == "primary"]
    ref = prim[prim["measure"] == reference]
    if ref.empty:
        raise ValueError(f"study has no primary row for {reference!r}")
    r = ref.iloc[0]
    base = prim[prim["baseline"]]
    counts = base["comparison"].value_counts()
    sec = s[(s["role"] == "secondary") & s["baseline"]]["comparison"].value_counts()
    ranked = prim.dropna(subset=["tau_within"]).sort_values("tau_within", ascending=False)

    def names(verdict):
        lab = base.loc[base["comparison"] == verdict, "label"].tolist()
        return ", ".join(lab) if lab else "none"

    ref_sig = bool(math.isfinite(r["p_within_holm"]) and r["p_within_holm"] < alpha)
    rank = (f"{int(r['rank'])} of {int(r['n_ranked'])}" if math.isfinite(r["rank"])
            else "unranked (τ undefined within architectures)")
    by_kind = s[(s["role"] == "secondary") & (s["measure"] == reference)]
    ref_taus = "; ".join(f"{kind_label(k)} {t:+.2f}" for k, t in zip(by_kind["perturbation"],
                                                         by_kind["tau_within"], strict=True)
                         if math.isfinite(t)) or "undefined"
    g = r["granulated_tau"]
    fams = (f" of {int(r['n_families'])} architecture families" if "n_families" in r
            and math.isfinite(r["n_families"]) else "")
    gran = (f"{g:+.2f} over {int(r['n_axes'])} swept axes{fams}"
            if math.isfinite(g) else "undefined (no sweep axis has two comparable models)")
    mc = float(prim["p_mc_se"].max()) if prim["p_mc_se"].notna().any() else math.nan
    margin = max(2 * mc if math.isfinite(mc) else 0.0, 0.01)
    pvals = pd.concat([prim["p_within_holm"], base["p_diff_holm"]]).dropna()
    near = int(((pvals - alpha).abs() <= margin).sum())
    n_perm = int(r["n_permutations"]) if "n_permutations" in r else 0
    min_p = 1.0 / n_perm if n_perm > 0 else math.nan
    is_ref_primary = (s["role"] == "primary") & (s["measure"] == reference)
    n_family = int(s.loc[~is_ref_primary, "p_within"].notna().sum())
    family_note = ("so in a Holm family of that size no measure's τ can survive the "
                   "correction, whatever its size"
                   if math.isfinite(min_p) and n_family and min_p * n_family >= alpha else
                   "small enough for a large τ to survive the correction")
    n_b, n_w = int(counts.get("TopoLip better", 0)), int(counts.get("TopoLip worse", 0))
    n_cmp = int(base["comparison"].isin(["TopoLip better", "TopoLip worse",
                                          "no difference shown"]).sum())
    if n_b or n_w:
        verdict = " and ".join(
            part for part in (
                "is significantly better than " + names("TopoLip better") if n_b else "",
                "is significantly worse than " + names("TopoLip worse") if n_w else "")
            if part)
    else:
        verdict = "is neither significantly better nor significantly worse than any of them"
    sentence = (
        f"Within architectures, TopoLip ranks {rank} measures by Kendall τ with the accuracy "
        f"drop (τ = {r['tau_within']:+.2f}, seed-permutation p {_fmt_p(r['p_within'])}: "
        f"{'an association' if ref_sig else 'no association'} shown at α = {alpha:g}); "
        "against the "
        f"{n_cmp} testable baselines it {verdict} (Holm, α = {alpha:g}). Pooled over "
        f"architectures its τ is {r['tau_pooled']:+.2f}, a number that mixes the ranking of "
        "architectures with that of models.")
    if not math.isfinite(r["tau_within"]):
        sentence = (
            f"With {int(r['n_seeds'])} seed(s) per architecture, TopoLip ranks no two models of "
            "one architecture (after the noise-floor exclusions), so its within-architecture τ "
            "is undefined and no baseline is compared; pooled over architectures, a number "
            f"confounded by architecture, its τ is {r['tau_pooled']:+.2f}.")
    return {
        "n_models": int(r["n_models"]), "n_archs": int(r["n_archs"]),
        "n_seeds": int(r["n_seeds"]), "ref_tau": float(r["tau_within"]),
        "ref_p": float(r["p_within"]), "ref_p_holm": float(r["p_within_holm"]),
        "ref_significant": ref_sig, "ref_tau_pooled": float(r["tau_pooled"]),
        "ref_rank": rank, "top_measure": ranked["label"].iloc[0] if len(ranked) else "none",
        "top_tau": float(ranked["tau_within"].iloc[0]) if len(ranked) else math.nan,
        "n_comparisons": n_cmp, "n_better": n_b, "n_worse": n_w,
        "n_undecided": int(counts.get("no difference shown", 0)),
        "n_untestable": int(counts.get("not testable", 0)),
        "better": names("TopoLip better"), "worse": names("TopoLip worse"),
        "n_secondary": int(sec.drop("not testable", errors="ignore").sum()),
        "n_secondary_better": int(sec.get("TopoLip better", 0)),
        "n_secondary_worse": int(sec.get("TopoLip worse", 0)),
        "ref_taus_by_kind": ref_taus,
        "n_significant_measures": int((prim["p_within_holm"] < alpha).sum()),
        "granulated": gran, "p_mc_se": mc, "near": near, "sentence": sentence,
        "n_kinds": int(len(by_kind)),
        "n_excluded": int(r["n_excluded"]) if "n_excluded" in r else 0,
        "n_permutations": n_perm, "min_p": min_p, "n_tau_family": n_family,
        "family_note": family_note,
    }
