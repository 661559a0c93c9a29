"""The sentences of the verdicts: :func:`claim_findings` turns ``tables/verdicts.csv`` (the rows
:func:`topolip.evidence.claims.evaluate` decides) into the prose the book glues (headline counts,
each claim's primary sentence, the decisive and near rows).

The numbers are the evidence layer's; this module only words them (issue 29: numbers in
``evidence/``, words in ``report/``). Torch-free.
"""

from __future__ import annotations

import math
from collections.abc import Mapping
from typing import Any

import numpy as np
import pandas as pd

from topolip import roster
from topolip.evidence import stats
from topolip.evidence.claims import CANNOT_DECIDE, DECISIVE, FLOOR_VERDICT, families
from topolip.report.format import MISSING
from topolip.roster import label
from topolip.schema import require_columns

__all__ = ["claim_findings"]


_MEASURE_WORDS = {"end_to_end_scale_free": "scale-free TopoLip", "end_to_end": "raw TopoLip",
                  "accuracy_drop": "accuracy drop", "auroc": "OOD AUROC (max-softmax)",
                  "auroc_max_logit": "OOD AUROC (max-logit)",
                  "auroc_energy": "OOD AUROC (energy)",
                  "median_radius": "median minimal radius",
                  "effective_radius": "median radius at equal clean accuracy",
                  "log_median_radius": "median-radius ratio change",
                  "relative_drop": "relative accuracy drop"}


def _by_pair(decisive: pd.DataFrame) -> str:
    """The decisive rows counted per compared pair (``"ViT vs ResNet 0 support, 16
    contradict"``), in the table's order; rows that compare no pair (an association within
    architectures) as one group. A tally over all pairs can hide that they point apart."""
    parts = []
    keys = decisive["comparison"].astype(str).map(
        lambda c: roster.pair_label(c) if " vs " in c else "within architectures")
    for key, g in decisive.groupby(keys, sort=False):
        n_sup = int((g["verdict"] == "supported").sum())
        n_con = int((g["verdict"] == "contradicted").sum())
        parts.append(f"{key} {n_sup} support{'s' if n_sup == 1 else ''}, {n_con} "
                     f"contradict{'s' if n_con == 1 else ''}")
    return "; ".join(parts)


def _fmt(x: float, fmt: str = "{:.3g}") -> str:
    return fmt.format(x) if x is not None and math.isfinite(x) else MISSING


def _sentence(r: Mapping, mde: Mapping | None = None) -> str:
    """One row's finding in words, no stronger than its verdict."""
    pct = f"{100 * r['coverage']:.3g}%" if math.isfinite(r.get("coverage", math.nan)) else ""
    where = label(r["group"])
    under = "on" if r["group"] in _OOD_GROUPS else "under"
    att, conv = (label(a) for a in r["comparison"].split(" vs ")) \
        if " vs " in r["comparison"] else ("", "")
    decisive = r["verdict"] in DECISIVE
    p = f"p = {_fmt(r['p_adjusted'], '{:.2g}')}" + (" (Holm)" if r["role"] == "secondary"
                                                  else "")
    what = _MEASURE_WORDS.get(r["measure"], str(r["measure"]).replace("_", " "))
    extra = ""
    if mde:
        extra = f"; the design detects {mde['text']} with 80% power"
        need, target = mde.get("seeds_for_target", math.nan), mde.get("target", math.nan)
        if r["measure"] == "median_radius" and math.isfinite(need) and need > r["n_pairs"]:
            extra += (f"; a {math.exp(target):.2g}× radius ratio would need {int(need)} seeds "
                      "at this run's spread")
    if r["verdict"] == FLOOR_VERDICT:
        why = str(r.get("flag", "")).rpartition("floor/ceiling: ")[2] or "a side at the floor"
        return (f"Not informative (floor/ceiling) {under} {where}: {why}; the accuracy drop "
                "there measures clean accuracy, not robustness, so it is not tested.")
    if r["measure"] == "log_median_radius":
        weak, strong = (label(g.removesuffix("_radius"))
                        for g in str(r["group"]).partition(" vs ")[::2])
        body = (f"the {att}'s median-radius ratio to the {conv} under {weak} is "
                f"{_fmt(r['ratio'], '{:.2f}')}× its ratio under {strong} "
                f"({pct} interval {_fmt(r['ratio_low'], '{:.2f}')}–"
                f"{_fmt(r['ratio_high'], '{:.2f}')}, {p}{extra})")
        if decisive:  # "relative to": the attention side need not be ahead under either
            return ((f"Relative to the {conv}, the {att} fares better against the weak attack "
                     f"than against the strong one, as the rival claim predicts: ")
                    if r["effect"] > 0 else
                    (f"Relative to the {conv}, the {att} fares worse against the weak attack "
                     f"than against the strong one, the opposite of what the rival claim "
                     f"predicts: ")) + body + "."
        return f"No decisive change with attack strength: {body}, {r['verdict']}."
    if r["measure"] in ("median_radius", "effective_radius"):
        body = (f"the {att}'s {where} is {_fmt(r['ratio'], '{:.2f}')}× the {conv}'s ({pct} "
                f"interval {_fmt(r['ratio_low'], '{:.2f}')}–{_fmt(r['ratio_high'], '{:.2f}')}, "
                f"{p}{extra})")
        if decisive:
            return f"The {att if r['ratio'] > 1 else conv} is more robust: {body}."
        return f"No decisive difference: {body}, {r['verdict']}."
    if r["comparison"].startswith("Kendall"):
        level = "of the architecture means" if "architecture means" in r["comparison"] else \
            "within architectures"
        response = r["comparison"].rpartition(", ")[2]
        said = {"accuracy_drop": "accuracy drop", "relative_drop": "relative accuracy drop"}
        direction = ("A lower TopoLip goes with a smaller " if r["effect"] > 0
                     else "A lower TopoLip goes with a larger ") + said.get(
                         response, response.replace("_", " "))
        body = f"Kendall τ {level} ({where}) is {_fmt(r['effect'], '{:.2f}')}, {p}"
        return (f"{direction}: {body}." if decisive else
                f"No decisive association: {body} ({r['verdict']}).")
    if r["scale"] == "log":
        body = (f"{under} {where} the {att}'s {what} is {_fmt(r['ratio'], '{:.2f}')}× the "
                f"{conv}'s ({pct} interval {_fmt(r['ratio_low'], '{:.2f}')}–"
                f"{_fmt(r['ratio_high'], '{:.2f}')}, {p}{extra})")
        if decisive:
            who = att if r["ratio"] < 1 else conv
            return f"The {who} is smoother: {body}."
        return f"No decisive difference: {body}, {r['verdict']}."
    if " vs " in r["group"]:
        weak, strong = r["group"].split(" vs ")
        body = (f"the {att}'s accuracy-drop difference to the {conv} changes by "
                f"{_fmt(r['effect'], '{:+.3f}')} from {label(strong)} to "
                f"{label(weak)} ({pct} interval {_fmt(r['low'], '{:+.3f}')} to "
                f"{_fmt(r['high'], '{:+.3f}')}, {p}{extra})")
        if decisive:
            return ((f"The {att} stands better against the weak attack than against the "
                     "strong one, as the rival claim predicts: ") if r["effect"] < 0 else
                    (f"The {att} stands worse against the weak attack than against the strong "
                     "one, the opposite of what the rival claim predicts: ")) + body + "."
        return f"No decisive change with attack strength: {body}, {r['verdict']}."
    higher_better = r["measure"] in roster.OOD_DETECTORS.values()
    body = (f"{under} {where} the {att}'s {what} minus the {conv}'s is "
            f"{_fmt(r['effect'], '{:+.3f}')} ({pct} interval {_fmt(r['low'], '{:+.3f}')} to "
            f"{_fmt(r['high'], '{:+.3f}')}, {p}{extra})")
    if decisive:
        better = att if (r["effect"] > 0) == higher_better else conv
        word = "separates OOD data better" if higher_better else "is more robust"
        return f"The {better} {word}: {body}."
    return f"No decisive difference: {body}, {r['verdict']}."


def _primaries_joint(tested: pd.DataFrame, alpha: float) -> str:
    """The primaries' joint error in words: each is tested alone at ``alpha``, so at most
    ``k·alpha`` of a false decisive primary among ``k`` (Bonferroni); and which decisive
    primaries stay decisive under Holm's correction over the ``k`` (a reader who wants one
    error rate for the primaries)."""
    prim = tested[(tested["role"] == "primary") & ~tested["verdict"].isin(CANNOT_DECIDE)
                  & np.isfinite(tested["p_adjusted"].astype(float))]
    k = len(prim)
    if k < 2:
        return ""
    adj = stats.holm(prim["p_adjusted"].astype(float).tolist())
    dec = prim["verdict"].isin(DECISIVE).to_numpy()
    keep = [r["claim"] for r, a, d in zip(prim.to_dict("records"), adj, dec, strict=True)
            if d and a < alpha]
    lost = [r["claim"] for r, a, d in zip(prim.to_dict("records"), adj, dec, strict=True)
            if d and not a < alpha]
    text = (f"The {k} primaries are each tested alone at α = {alpha:g}: the chance that at "
            f"least one of them is falsely decisive is at most {min(1.0, k * alpha):.2g}. "
            f"Under Holm's correction over the {k} primaries, ")
    if not dec.any():
        return text + "there is no decisive primary to keep."
    keep, lost = ([f"*{roster.claim_title(c)}*" for c in cs] for cs in (keep, lost))
    text += (f"{len(keep)} of the {int(dec.sum())} decisive primaries stay decisive"
             + (f" ({', '.join(keep)})" if keep else ""))
    return text + (f" and {', '.join(lost)} would not." if lost else ".")


#: Groups that are out-of-distribution sets (a sentence says "on", not "under", them).
_OOD_GROUPS = frozenset(roster.ood_names())


def claim_findings(verdicts: pd.DataFrame, power: pd.DataFrame | None = None, *,
             alpha: float = 0.05, near: tuple[float, float] = (0.2, 3.0)) -> dict[str, Any]:
    """The numbers and sentences the verdicts chapter glues, from its verdicts table.

    Parameters
    ----------
    verdicts : pandas.DataFrame
        :func:`evaluate`'s table.
    power : pandas.DataFrame, optional
        :func:`topolip.evidence.calibration.power_table`'s table: each primary's minimum detectable
        effect is quoted beside it.
    alpha : float, default=0.05
        The level the verdicts used.
    near : (float, float), default=(0.2, 3.0)
        A tested row sits *near the threshold* when ``near[0]·alpha <= p_adjusted <
        near[1]·alpha``: a modest change of the data (a seed, a Monte-Carlo draw, a thread
        count) could move it across (rows with too few seed pairs cannot decide and are not
        listed).

    Returns
    -------
    dict
        ``n_families`` (families holding at least one row that could decide), ``n_tests``
        (rows that could decide: not those with too few seeds,
        emptied by the noise floor, of a family that cannot decide, or not measured),
        ``n_described`` (rows of families that cannot decide), ``n_primary``,
        ``error_bound`` (``min(1, n_families · alpha)``: the book-wide chance of at least one
        false decisive verdict, by Bonferroni over families), ``n_decisive``,
        ``n_supported``, ``n_contradicted``, ``counts``
        (``{claim: "k supported, ..."}``, tested rows only), ``primary`` (``{claim: sentence}``),
        ``primary_rows`` (``{claim: "comparison, group"}``), ``decisive`` (sentences, primaries
        first), ``near`` (``"comparison, group, measure (claim): p"`` strings), ``n_near``,
        ``by_pair`` (the decisive rows counted per compared pair, "" when none), ``ladder``
        (the flags of the robustness rows whose verdict changes with attack strength), and
        ``shows``: the paragraph "What this run shows" (markdown).

    Raises
    ------
    ValueError
        If a column is missing.

    Examples
    --------
    >>> v = pd.DataFrame([dict(claim="a", comparison="vit vs resnet", group="pgd",
    ...     measure="end_to_end_scale_free", role="primary", family="a: primary", scale="log",
    ...     verdict="supported", effect=-0.4, low=-0.6, high=-0.2, coverage=0.95,
    ...     ratio=0.67, ratio_low=0.55, ratio_high=0.82, pvalue=0.004, p_adjusted=0.004,
    ...     flag="")])
    >>> f = claim_findings(v)
    >>> f["n_families"], f["error_bound"], f["n_supported"]
    (1, 0.05, 1)
    >>> print(f["primary"]["a"])  # doctest: +NORMALIZE_WHITESPACE
    The ViT is smoother: under PGD the ViT's scale-free TopoLip is 0.67× the ResNet's
    (95% interval 0.55–0.82, p = 0.004).
    """
    require_columns(verdicts, ["claim", "comparison", "group", "measure", "role", "family",
                               "scale", "verdict", "effect", "low", "high", "coverage", "ratio",
                               "ratio_low", "ratio_high", "pvalue", "p_adjusted", "flag"],
                    "verdicts")
    fam = families(verdicts)
    tested = verdicts[verdicts["role"].isin(["primary", "secondary"])]
    decisive = tested[tested["verdict"].isin(DECISIVE)]
    mdes = {}
    if power is not None and len(power):
        require_columns(power, ["claim", "comparison", "group", "measure", "text"],
                        "the power table")
        mdes = {(r["claim"], r["comparison"], r["group"], r["measure"]): r
                for r in power.to_dict("records")}

    def mde(r: Mapping) -> Mapping | None:
        """The power row of the primary ``r`` itself: a secondary at the primary's comparison
        and group (another measure) has a design of its own, not the primary's."""
        if r["role"] != "primary":
            return None
        return mdes.get((r["claim"], r["comparison"], r["group"], r["measure"]))

    primary, primary_rows = {}, {}
    for r in tested[tested["role"] == "primary"].to_dict("records"):
        primary_rows[r["claim"]] = f"{roster.pair_label(r['comparison'])}, {label(r['group'])}"
        if r["verdict"] == "not measured":
            primary[r["claim"]] = (f"The registered primary ({primary_rows[r['claim']]}) "
                                   "was not measured in this run.")
        else:
            primary[r["claim"]] = _sentence(r, mde(r))
    ordered = pd.concat([decisive[decisive["role"] == "primary"],
                         decisive[decisive["role"] != "primary"]])
    sentences = [f"*{roster.claim_title(r['claim'])}* ({r['role']}): " + _sentence(r, mde(r))
                 for r in ordered.to_dict("records")]
    p = tested["p_adjusted"].astype(float)
    close = tested[(p >= near[0] * alpha) & (p < near[1] * alpha)
                   & ~tested["verdict"].isin(CANNOT_DECIDE)]
    near_list = [f"{roster.pair_label(r['comparison'])}, {label(r['group'])}, "
                 f"{_MEASURE_WORDS.get(r['measure'], str(r['measure']).replace('_', ' '))} "
                 f"({roster.claim_title(r['claim'])}): "
                 f"p = {r['p_adjusted']:.2g} ({r['verdict']})" for r in close.to_dict("records")]
    ladder = sorted({f for f in verdicts["flag"].fillna("").astype(str)
                     if "changes with attack strength" in f})
    counts = {}
    for c in dict.fromkeys(verdicts["claim"]):
        rows = tested[tested["claim"] == c]
        counts[c] = ", ".join(f"{n} {k}" for k, n in rows["verdict"].value_counts(
            sort=False).sort_index().items()) or "no test"
    # the book-wide bound over families is said once, in 08's "Families" section
    # (headline-error-bound); this paragraph starts from the primaries' joint error
    # a family counts towards the bound only if it holds a row that could decide (a family
    # that can only describe at this seed count cannot err)
    n_fam = int(fam["family"].isin(
        tested.loc[~tested["verdict"].isin(CANNOT_DECIDE), "family"]).sum())
    bound = min(1.0, round(n_fam * alpha, 10))
    shows = []
    joint = _primaries_joint(tested, alpha)
    if joint:
        shows.append(joint)
    n_sup = int((decisive["verdict"] == "supported").sum())
    n_con = int((decisive["verdict"] == "contradicted").sum())
    # a test is a row that could decide: not the rows with too few seeds, those the noise floor
    # emptied, nor the rows of a family that cannot decide at this seed count
    able = tested[~tested["verdict"].isin(CANNOT_DECIDE)]
    described = tested[tested["verdict"] == "description"]
    shows.append(f"Of the {len(able)} tests, {len(decisive)} "
                 f"{'is' if len(decisive) == 1 else 'are'} decisive: {n_sup} "
                 f"support{'s' if n_sup == 1 else ''} a claim and {n_con} "
                 f"contradict{'s' if n_con == 1 else ''} one.")
    by_pair = _by_pair(decisive)
    if by_pair:
        shows.append(f"By pair of architectures: {by_pair}.")
    for _, g in described.groupby("family", sort=False):
        need = g["detail"].astype(str).str.extract(r"would need (\d+) seeds")[0].dropna()
        fam_name = f"{roster.claim_title(g['claim'].iloc[0])}, {g['role'].iloc[0]}"
        shows.append(f"The {len(g)} rows of *{fam_name}* describe and decide nothing: at "
                     "this seed count no p-value of that family can fall below α after "
                     "Holm's correction" + (f" (it would need {need.iloc[0]} seeds)"
                                            if len(need) else "") + ".")
    if sentences:
        shows.append("Decisive findings (primaries first):\n\n"
                     + "\n".join(f"- {x}" for x in sentences))
    else:
        shows.append("No comparison is decisive: the run cannot tell the architectures apart "
                     "at the effects it can detect.")
    if near_list:
        shows.append(f"Near the threshold ({near[0]:g}·α to {near[1]:g}·α; a seed or a "
                     "Monte-Carlo draw could move these):\n\n"
                     + "\n".join(f"- {x}" for x in near_list))
    return {"n_families": n_fam, "n_tests": len(able), "n_described": len(described),
            "n_primary": int((tested["role"] == "primary").sum()), "error_bound": bound,
            "n_decisive": len(decisive),
            "n_supported": int((decisive["verdict"] == "supported").sum()),
            "n_contradicted": int((decisive["verdict"] == "contradicted").sum()),
            "counts": counts, "primary": primary, "primary_rows": primary_rows,
            "decisive": sentences, "near": near_list, "n_near": len(near_list),
            "by_pair": by_pair,
            "ladder": ladder, "shows": "\n\n".join(shows)}
