"""The paper's claims, checked against our tables: one primary comparison per claim, the rest
secondary under Holm's correction, paired by seed.

``data/claims.yml`` lists each claim in our own words, where it comes from, the name of a check
in :data:`CHECKS`, the check's options, and the claim's **primary** comparison
(``primary: {comparison: "vit vs resnet", group: pgd}``). A check reads the tidy tables of a
run and returns one :class:`Verdict` per comparison (a pair of architectures under one
perturbation or data set, a difference between two attack strengths, or a rank association).

The rule (the verdicts chapter repeats it): the primary comparison of a claim is tested alone
at ``alpha``; the claim's other comparisons are secondary, one Holm family per claim. A
comparison is *supported* or *contradicted* only when its p-value (the primary's own, a
secondary's Holm-adjusted one) is below ``alpha``, with at least
:data:`topolip.evidence.stats.MIN_SEEDS`
seed pairs; otherwise it is *inconclusive* (or *not enough seeds*; *noise floor* where the seed
pairs were there but the noise floor dropped them; *description* for a family that cannot
decide at the run's seed count; *floor/ceiling*, untested and out of its Holm family, for a
fixed-budget robustness row where a model of either side has a robust accuracy at most 0.02
or at least 0.98, :data:`ROBUST_FLOOR`). Architectures are compared
by a paired t on the per-seed differences (:func:`topolip.evidence.stats.paired_t`), on the log
scale
for TopoLip (the effect is then a ratio), raw for accuracy drops and AUROCs; a TopoLip pair is
dropped when either model's input displacement lies within the noise floor
(``end_to_end_flag``), and the row says how many were. The interval of a row is the one its
decision uses (:func:`topolip.evidence.stats.adjusted_coverage`). The verdicts are computed, never
written by hand, so the book says what the run shows;
:func:`topolip.report.verdict_sentences.claim_findings` turns them into the sentences of the
verdicts chapter.
"""

from __future__ import annotations

import math
import warnings
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd
import yaml

from topolip import roster
from topolip.evidence import stats
from topolip.roster import label
from topolip.schema import require_columns

__all__ = [
    "CANNOT_DECIDE", "CHECKS", "DECISIVE", "FAMILY_PAIRS", "FLOOR_VERDICT", "PRIMARY_CHOSEN",
    "ROBUST_FLOOR",
    "Claim", "Verdict",
    "effective_radius", "evaluate", "family_below_counts",
    "families", "load_claims", "most_robust_vs_smoothest",
    "smoothness_table", "verdict_counts", "with_options",
]

#: (attention-based, convolution-based) architectures compared with each other.
FAMILY_PAIRS: tuple[tuple[str, str], ...] = roster.family_pairs()

#: The noise-floor flag of ``topolip_summary.csv`` (empty when the ratio can be trusted).
FLAG_COLUMN = "end_to_end_flag"

#: The verdict of a comparison where either side's robust accuracy is at the floor or the
#: ceiling (:data:`ROBUST_FLOOR`): never decided, out of its Holm family.
FLOOR_VERDICT = "floor/ceiling"

#: A model whose robust accuracy is at most the first or at least the second (share of the
#: images at that ε) is at the floor or the ceiling: its accuracy drop there is its clean
#: accuracy (or nothing), so a comparison with such a model on either side says nothing about
#: robustness (:func:`_robust_floor`).
ROBUST_FLOOR: tuple[float, float] = (0.02, 0.98)

_KEYS = ("id", "statement", "source", "check")


@dataclass(frozen=True)
class Claim:
    """One claim: ``id``, ``statement`` (our paraphrase), ``source``, ``check`` (a key of
    :data:`CHECKS`), the check's keyword ``options``, the ``primary`` comparison
    (``{"comparison": "vit vs resnet", "group": "pgd"}``; empty for the envelope check) and
    ``primary_rule``: how the primary was chosen (``{"rule": words, "chosen": one of
    :data:`PRIMARY_CHOSEN`}``; empty for the envelope check)."""

    id: str
    statement: str
    source: str
    check: str
    options: Mapping[str, Any] = field(default_factory=dict)
    primary: Mapping[str, str] = field(default_factory=dict)
    primary_rule: Mapping[str, str] = field(default_factory=dict)


#: when a claim's primary was fixed: before any run of its design showed an outcome, or after
#: one did (the book says which)
PRIMARY_CHOSEN = ("before its first run", "after a run that showed its outcome")


@dataclass(frozen=True)
class Verdict:
    """The outcome of one check on one comparison.

    ``role`` is ``primary`` (tested alone at ``alpha``), ``secondary`` (Holm within
    ``family``), ``context`` (reported, in no family: the architecture-level association) or
    ``check`` (the envelope theorem). ``scale`` is ``log`` (TopoLip: ``effect``, ``low``,
    ``high`` are a mean log ratio and its interval, ``ratio*`` their exponentials) or ``raw``.
    ``attention``/``convolution`` are the two sides' means over the pairs used (geometric means
    on the log scale; NaN for an association). ``coverage`` is the interval's coverage (the one
    the decision uses), ``pvalue`` the raw and ``p_adjusted`` the deciding p-value, ``se`` and
    ``sd`` the standard error and the sd of the per-seed differences, ``df`` the degrees of
    freedom, ``n_pairs`` the seed pairs used, ``n_excluded`` those dropped for the noise floor,
    ``n_seeds`` as ``"a/b"`` (seeds per side), ``n_images`` the images per seed, ``mc_se`` the
    Monte-Carlo standard error of a permutation p-value, ``flag`` a warning (gradient masking,
    a verdict that changes with attack strength)."""

    claim: str
    comparison: str
    verdict: str
    group: str = ""
    measure: str = ""
    role: str = "secondary"
    family: str = ""
    scale: str = "raw"
    attention: float = math.nan
    convolution: float = math.nan
    effect: float = math.nan
    low: float = math.nan
    high: float = math.nan
    coverage: float = math.nan
    ratio: float = math.nan
    ratio_low: float = math.nan
    ratio_high: float = math.nan
    pvalue: float = math.nan
    p_adjusted: float = math.nan
    se: float = math.nan
    sd: float = math.nan
    df: float = math.nan
    n_pairs: int = 0
    n_excluded: int = 0
    n_seeds: str = ""
    n_images: float = math.nan
    mc_se: float = math.nan
    flag: str = ""
    detail: str = ""


def load_claims(path: str | Path) -> list[Claim]:
    """Read the claims registry (a YAML list).

    Each entry has ``id``, ``statement``, ``source``, ``check``, ``primary`` (a mapping with
    ``comparison`` and ``group``; not for ``envelope_holds``), ``primary_rule`` (a mapping
    with ``rule``, the words of the rule that picked the primary, and ``chosen``, one of
    :data:`PRIMARY_CHOSEN`; not for ``envelope_holds``) and the check's options.

    Raises
    ------
    ValueError
        If an entry lacks a key, an id repeats, a check is not in :data:`CHECKS`, or a
        comparison check names no primary or no valid primary rule.
    """
    entries = yaml.safe_load(Path(path).read_text())
    if not isinstance(entries, list):
        raise ValueError(f"{path}: the claims registry must be a YAML list")
    claims, seen = [], set()
    for i, entry in enumerate(entries):
        missing = [k for k in _KEYS if k not in entry]
        if missing:
            raise ValueError(f"{path}: claim #{i + 1} lacks {missing}")
        if entry["id"] in seen:
            raise ValueError(f"{path}: claim id {entry['id']!r} repeats")
        if entry["check"] not in CHECKS:
            raise ValueError(f"{path}: claim {entry['id']!r} names unknown check "
                             f"{entry['check']!r}; known: {sorted(CHECKS)}")
        primary = entry.get("primary") or {}
        if entry["check"] != "envelope_holds" and not (
                isinstance(primary, Mapping) and {"comparison", "group"} <= set(primary)):
            raise ValueError(f"{path}: claim {entry['id']!r} needs a primary: {{comparison: "
                             f"..., group: ...}}, got {primary!r}")
        rule = entry.get("primary_rule") or {}
        if entry["check"] != "envelope_holds" and not (
                isinstance(rule, Mapping) and isinstance(rule.get("rule"), str)
                and rule["rule"].strip() and rule.get("chosen") in PRIMARY_CHOSEN):
            raise ValueError(f"{path}: claim {entry['id']!r} needs a primary_rule: {{rule: "
                             f"<words>, chosen: one of {list(PRIMARY_CHOSEN)}}}, got {rule!r}")
        seen.add(entry["id"])
        options = {k: v for k, v in entry.items()
                   if k not in (*_KEYS, "primary", "primary_rule")}
        claims.append(Claim(entry["id"], " ".join(entry["statement"].split()), entry["source"],
                            entry["check"], options,
                            {k: str(v) for k, v in dict(primary).items()},
                            {k: " ".join(str(v).split()) for k, v in dict(rule).items()}))
    return claims


def with_options(claims: list[Claim], **options: Any) -> list[Claim]:
    """The claims with ``options`` added to (or replacing) each one's check options.

    Parameters
    ----------
    claims : list of Claim
        E.g. :func:`load_claims`'s.
    **options
        Keyword options of the checks (``alpha=0.01``).

    Returns
    -------
    list of Claim
        New claims; ``claims`` is left unchanged.

    Examples
    --------
    >>> c = Claim("a", "A is smaller.", "paper", "lower_topolip", {"measure": "m"})
    >>> with_options([c], alpha=0.01)[0].options
    {'measure': 'm', 'alpha': 0.01}
    """
    return [replace(c, options={**c.options, **options}) for c in claims]


def verdict_counts(verdicts: pd.DataFrame, claim: str, *, comparison: str | None = None,
                   by_count: bool = False) -> str:
    """How many comparisons of ``claim`` got each verdict, as text (``"2 supported, 1
    undecided"``).

    Parameters
    ----------
    verdicts : pandas.DataFrame
        :func:`evaluate`'s table (``claim``, ``comparison``, ``verdict``).
    claim : str
        A claim id.
    comparison : str, optional
        Only this comparison (``"vit vs resnet"``).
    by_count : bool, default=False
        Order the verdicts by decreasing count (else alphabetically).

    Returns
    -------
    str
        ``"n verdict"`` joined by commas, or ``"no comparison"`` when no row matches.

    Raises
    ------
    ValueError
        If a column is missing.

    Examples
    --------
    >>> v = pd.DataFrame({"claim": ["a", "a", "a"], "comparison": ["x", "x", "y"],
    ...                   "verdict": ["undecided", "supported", "supported"]})
    >>> verdict_counts(v, "a"), verdict_counts(v, "a", comparison="y"), verdict_counts(v, "b")
    ('2 supported, 1 undecided', '1 supported', 'no comparison')
    """
    require_columns(verdicts, ["claim", "comparison", "verdict"], "verdicts")
    rows = verdicts[verdicts["claim"] == claim]
    if comparison is not None:
        rows = rows[rows["comparison"] == comparison]
    counts = rows["verdict"].value_counts() if by_count else rows["verdict"].value_counts(
        sort=False).sort_index()
    return ", ".join(f"{n} {v}" for v, n in counts.items() if n) or "no comparison"


def family_below_counts(summary: pd.DataFrame, measure: str = "end_to_end_scale_free", *,
                        group_col: str = "perturbation") -> dict[tuple[str, str], str]:
    """In how many groups each attention model's seed mean is below its convolution partner's.

    A descriptive count for the narrative (no interval, no test: :func:`evaluate`
    decides); only the architectures measured in every group are compared.

    Parameters
    ----------
    summary : pandas.DataFrame
        One row per model and group (``arch``, ``group_col``, ``measure``), e.g.
        ``tables/topolip_summary.csv``.
    measure : str, default="end_to_end_scale_free"
        The column compared.
    group_col : str, default="perturbation"
        The column of the groups.

    Returns
    -------
    dict of (str, str) to str
        For each pair of :data:`FAMILY_PAIRS`: ``"k of n"`` (``k`` groups of ``n`` where the
        attention model is lower), or ``"none"`` when either model is missing from a group.

    Raises
    ------
    ValueError
        If a column is missing.

    Examples
    --------
    >>> t = pd.DataFrame({"arch": ["vit", "resnet"] * 2, "perturbation": ["a", "a", "b", "b"],
    ...                   "end_to_end_scale_free": [1.0, 2.0, 3.0, 2.0]})
    >>> family_below_counts(t)
    {('vit', 'resnet'): '1 of 2', ('attention_stack', 'conv_stack'): 'none'}
    """
    require_columns(summary, ["arch", group_col, measure], "summary")
    means = summary.groupby([group_col, "arch"])[measure].mean().unstack()
    both = means.dropna(axis=1)
    out = {}
    for attention, convolution in FAMILY_PAIRS:
        if {attention, convolution} <= set(both.columns):
            below = int((both[attention] < both[convolution]).sum())
            out[(attention, convolution)] = f"{below} of {len(both)}"
        else:
            out[(attention, convolution)] = "none"
    return out


def _tables(tables: Mapping[str, pd.DataFrame], name: str) -> pd.DataFrame:
    if name not in tables:
        raise ValueError(f"the check needs table {name!r}; available: {sorted(tables)}")
    return tables[name]


def _by_seed(points: pd.DataFrame, value: str, group_col: str) -> pd.DataFrame:
    """``points[value]`` as a (group, seed) × arch table (NaN where missing)."""
    return points.groupby([group_col, "seed", "arch"], sort=False)[value].first().unstack("arch")


def _mean(v: np.ndarray, scale: str) -> float:
    """Mean of a side (geometric on the log scale); NaN when empty."""
    if not len(v):
        return math.nan
    return float(np.exp(np.log(v).mean())) if scale == "log" else float(v.mean())


def _comparison_rows(points: pd.DataFrame, measure: str, *, group_col: str, scale: str,
                     flag_column: str | None = None, n_images_col: str | None = "n_images",
                     resamples: pd.DataFrame | None = None,
                     only: tuple[str, str] | None = None, main: bool = True) -> list[dict]:
    """One row per family pair and group (or only the ``(comparison, group)`` of ``only``):
    the paired test of attention against convolution over the seeds present on both sides."""
    require_columns(points, ["arch", "seed", group_col, measure], "points")
    p = points.assign(**{measure: points[measure].astype(float)})
    has_flag = bool(flag_column) and flag_column in p.columns
    p = p.assign(_flag=(p[flag_column].fillna("").astype(str) != "") if has_flag else False)
    values = _by_seed(p, measure, group_col)
    flags = _by_seed(p, "_flag", group_col).reindex_like(values).fillna(False).astype(bool)
    images = (_by_seed(p, n_images_col, group_col).reindex_like(values)
              if n_images_col and n_images_col in p else None)
    sd_res = None
    if resamples is not None and len(resamples):
        r = resamples[resamples["measure"] == measure]
        if len(r):
            w = r.groupby(["group", "seed", "resample", "arch"])["value"].first().unstack("arch")
            sd_res = (w, w.groupby(level=["group", "seed"]).size().max())
    groups = values.index.get_level_values(0)
    arch_col = {a: i for i, a in enumerate(values.columns)}
    vals, flg = values.to_numpy(dtype=float), flags.to_numpy(dtype=bool)
    seeds = values.index.get_level_values(1).to_numpy()
    rows = []
    for att, conv in FAMILY_PAIRS:
        if att not in arch_col or conv not in arch_col:
            continue
        ia, ic = arch_col[att], arch_col[conv]
        comparison = f"{att} vs {conv}"
        for group in pd.unique(p[group_col]):
            if only is not None and (comparison, str(group)) != only:
                continue
            sel = np.flatnonzero(groups == group)
            a, b = vals[sel, ia], vals[sel, ic]
            fa, fb = np.isfinite(a), np.isfinite(b)
            if not fa.any() or not fb.any():
                continue
            both = fa & fb
            flagged = both & (flg[sel, ia] | flg[sel, ic])
            use = both & ~flagged
            nonpos = use & ((a <= 0) | (b <= 0)) if scale == "log" else np.zeros_like(use)
            use &= ~nonpos
            image_se, res_note = 0.0, ""
            if sd_res is not None and {att, conv} <= set(sd_res[0].columns):
                w, n_res = sd_res
                d = (w[att] - w[conv])
                sds = d.groupby(level=["group", "seed"]).std(ddof=1)
                keys = [(group, s) for s in seeds[sel][use]]
                sds = sds.reindex(keys)
                if sds.notna().any():
                    image_se = float(sds.mean())
                    res_note = (f"; + image level (the same images for every seed): se "
                                f"{image_se:.3g} from {n_res} image resamples")
            test = stats.paired_t(a[use], b[use], log=scale == "log", image_se=image_se)
            n_img = math.nan
            if images is not None:
                n_img = float(np.nanmin(images.to_numpy(dtype=float)[sel][:, [ia, ic]]))
            notes = [f"paired t on {'log ' if scale == 'log' else ''}{measure}, "
                     f"{test.n_pairs} seed pairs (df {test.n_pairs - 1})" + res_note]
            if int(flagged.sum()):
                notes.append(f"{int(flagged.sum())} pairs dropped: input displacement within "
                             "the noise floor")
            if int(nonpos.sum()):
                notes.append(f"{int(nonpos.sum())} pairs dropped: a non-positive value")
            rows.append(dict(comparison=comparison, group=str(group), measure=measure,
                             scale=scale, test=test, attention=_mean(a[use], scale),
                             convolution=_mean(b[use], scale),
                             n_excluded=int(flagged.sum()),
                             n_seeds=f"{int(fa.sum())}/{int(fb.sum())}",
                             n_images=n_img, notes=notes, main=main, flag=""))
    return rows


def _exp(v: float) -> float:
    return math.exp(v) if math.isfinite(v) else math.nan


def _finish(rows: list[dict], claim: str, primary: Mapping[str, str], *, alpha: float,
            claimed_sign: int) -> list[Verdict]:
    """Roles, Holm over the secondaries, the decision intervals and verdicts."""
    key = (primary.get("comparison"), primary.get("group"))
    is_primary = [r["main"] and (r["comparison"], r["group"]) == key for r in rows]
    # a row on the robust-accuracy floor or ceiling is not a test: out of the Holm family
    secondary = [i for i, f in enumerate(is_primary) if not f and not rows[i].get("floor")]
    adjusted = dict(zip(secondary, stats.holm([rows[i]["test"].pvalue for i in secondary]),
                        strict=True))
    out = []
    for i, r in enumerate(rows):
        t: stats.PairedTest = r["test"]
        floor = r.get("floor", "")
        p_adj = math.nan if floor else t.pvalue if is_primary[i] else float(adjusted[i])
        coverage = stats.adjusted_coverage(t.pvalue, p_adj, alpha=alpha) if not floor \
            else math.nan
        low, high = (stats.t_interval(t.effect, t.se, t.df, coverage) if not floor
                     else (math.nan, math.nan))
        if t.se == 0 and t.n_pairs >= 2 and not floor:
            low = high = t.effect
        role = "primary" if is_primary[i] else "secondary"
        detail = "; ".join(r["notes"]) + (
            f"; not informative: {floor}" if floor else
            f"; primary: tested alone at α = {alpha:g}" if role == "primary"
            else f"; secondary: Holm over the claim's {len(secondary)} secondary comparisons")
        verdict = stats.decide(t.effect, p_adj, t.n_pairs, alpha=alpha,
                               claimed_sign=r.get("claimed_sign", claimed_sign))
        if floor:
            verdict = FLOOR_VERDICT
        elif verdict == "not enough seeds" and t.n_pairs + r["n_excluded"] >= stats.MIN_SEEDS:
            verdict = "noise floor"     # the pairs were there; the floor dropped them
        out.append(Verdict(
            claim, r["comparison"], verdict,
            group=r["group"], measure=r["measure"], role=role, family=f"{claim}: {role}",
            scale=r["scale"], attention=r["attention"], convolution=r["convolution"],
            effect=t.effect, low=low, high=high, coverage=coverage,
            ratio=_exp(t.effect) if r["scale"] == "log" else math.nan,
            ratio_low=_exp(low) if r["scale"] == "log" else math.nan,
            ratio_high=_exp(high) if r["scale"] == "log" else math.nan,
            pvalue=t.pvalue, p_adjusted=p_adj, se=t.se, sd=t.sd, df=t.df, n_pairs=t.n_pairs,
            n_excluded=r["n_excluded"], n_seeds=r["n_seeds"], n_images=r["n_images"],
            flag="; ".join(f for f in (r["flag"], floor and f"floor/ceiling: {floor}") if f),
            detail=detail))
    if key[0] is not None and not any(is_primary):
        out.insert(0, Verdict(claim, str(key[0]), "not measured", group=str(key[1]),
                              role="primary", family=f"{claim}: primary",
                              detail="the registered primary comparison is not in this run's "
                                     "tables"))
    return out


def _alpha(claim: Claim) -> float:
    return float(claim.options.get("alpha", 0.05))


def lower_topolip(claim: Claim, tables: Mapping[str, pd.DataFrame]) -> list[Verdict]:
    """Attention's model TopoLip is lower than convolution's, per family pair and group (paired
    t on logs; pairs with a noise-floor flag dropped).

    Options: ``table`` (default ``topolip_summary``), ``measure`` (default
    ``end_to_end_scale_free``), ``group_column`` (default ``perturbation``), ``scale``,
    ``extra_measures`` (measures compared at the primary comparison and group only, as
    secondaries; e.g. raw ``end_to_end``), ``alpha``.
    """
    o = claim.options
    t = _tables(tables, o.get("table", "topolip_summary"))
    measure = o.get("measure", "end_to_end_scale_free")
    group_col = o.get("group_column", "perturbation")
    scale = o.get("scale") or ("log" if measure.startswith("end_to_end") else "raw")
    rows = _comparison_rows(t, measure, group_col=group_col, scale=scale,
                            flag_column=FLAG_COLUMN)
    key = (claim.primary.get("comparison", ""), claim.primary.get("group", ""))
    for extra in o.get("extra_measures", []) or []:
        if extra in t.columns:
            rows += _comparison_rows(t, extra, group_col=group_col, scale="log"
                                     if extra.startswith("end_to_end") else "raw",
                                     flag_column=FLAG_COLUMN, only=key, main=False)
    return _finish(rows, claim.id, claim.primary, alpha=_alpha(claim), claimed_sign=-1)


def _attack_strength(claim: Claim, tables: Mapping[str, pd.DataFrame]):
    """``kind -> strength`` of the robustness rows a check uses: the claim's ``strength`` (a
    number), or ``topolip`` (default): each kind's strength in ``topolip_summary``, and the
    PGD one (the TopoLip ε) for attacks it does not measure (``autoattack``)."""
    s = claim.options.get("strength", "topolip")
    if s != "topolip":
        return lambda _kind: float(s)
    summary = _tables(tables, "topolip_summary")
    require_columns(summary, ["perturbation", "strength"], "topolip_summary")
    eps = summary.groupby("perturbation")["strength"].first().astype(float).to_dict()
    default = eps.get("pgd", eps.get("fgsm", math.nan))
    return lambda kind: float(eps.get(kind, default))


def _at_strength(robust: pd.DataFrame, kinds: Sequence[str], strength) -> pd.DataFrame:
    require_columns(robust, ["arch", "seed", "perturbation", "strength", "accuracy_drop"],
                    "robustness")
    r = robust[robust["perturbation"].isin(kinds)]
    keep = np.array([math.isclose(float(s), strength(k), rel_tol=1e-6, abs_tol=1e-9)
                     for s, k in zip(r["strength"], r["perturbation"], strict=True)], bool)
    r = r[keep]
    # several rows of one model and attack at this budget (other step counts or restarts, as
    # a masking check runs them): the strongest, i.e. the largest drop
    order = r["accuracy_drop"].astype(float).sort_values(ascending=False, kind="stable").index
    return r.loc[order].drop_duplicates(["arch", "seed", "perturbation"]).sort_index()


def _masking_flags(rows: list[dict], tables: Mapping[str, pd.DataFrame],
                   points: pd.DataFrame) -> None:
    """Flag robustness rows whose models failed a gradient-masking check (``masking.csv``)."""
    m = tables.get("masking")
    if m is None or not len(m) or not {"arch", "seed", "check", "passed"} <= set(m.columns):
        return
    passed = m["passed"].map(lambda v: str(v).strip().lower() in ("true", "1", "1.0"))
    failed = m[(m["check"] == "all") & ~passed]
    bad = set(zip(failed["arch"], failed["seed"], strict=True))
    if not bad:
        return
    for r in rows:
        att, conv = r["comparison"].split(" vs ")
        seeds = points[points["perturbation"] == r["group"]]["seed"].unique()
        k = sum(((att, s) in bad) or ((conv, s) in bad) for s in seeds)
        if k:
            r["flag"] = f"gradient-masking check failed in {k} seed pairs"


def _robust_floor(robust: pd.DataFrame, archs: Sequence[str], kinds: Sequence[str]) -> str:
    """Why a comparison of ``archs`` under ``kinds`` is not informative: the sides with a model
    (one seed) whose robust accuracy is at the floor or ceiling (:data:`ROBUST_FLOOR`); ""
    when none is.

    The model is the unit: one seed's model at 0 robust accuracy makes its paired difference a
    censored number (its drop is its clean accuracy, whatever more the attack could take), so a
    side is at the floor when any of its models is, not only when their mean is. Dropping such
    pairs instead would select the pairs by the outcome; the row is left untested.
    """
    lo, hi = ROBUST_FLOOR
    out = []
    for kind in kinds:
        for arch in archs:
            acc = robust.loc[(robust["perturbation"] == kind) & (robust["arch"] == arch),
                             "accuracy"].astype(float)
            low, high = int((acc <= lo).sum()), int((acc >= hi).sum())
            if not len(acc) or not (low or high):
                continue
            mean = acc.mean()
            if mean <= lo or mean >= hi:
                out.append(f"the {label(arch)}'s robust accuracy under {label(kind)} is "
                           f"{mean:.3g} ({'floor' if mean <= lo else 'ceiling'})")
                continue
            which = [f"at the floor (≤ {lo:g}) for {low}" if low else "",
                     f"at the ceiling (≥ {hi:g}) for {high}" if high else ""]
            out.append(f"the {label(arch)}'s robust accuracy under {label(kind)} is "
                       + " and ".join(w for w in which if w)
                       + f" of its {len(acc)} seeds (mean {mean:.3g})")
    return "; ".join(out)


def _radius_rows(claim: Claim, tables: Mapping[str, pd.DataFrame]) -> list[dict]:
    """Attention against convolution on the median minimal radius (log scale, attention
    claimed larger), one group per bisected attack of ``radius_summary`` (when present)."""
    rs = tables.get(claim.options.get("radius_table", "radius_summary"))
    if rs is None or not len(rs):
        return []
    require_columns(rs, ["arch", "seed", "group", "median_radius", "n_images"],
                    "radius_summary")
    rows = _comparison_rows(rs, "median_radius", group_col="group", scale="log",
                            flag_column=None, n_images_col="n_images")
    for r in rows:
        r["claimed_sign"] = 1
        r["notes"].append("median minimal L∞ radius per model (robust accuracy crosses one "
                          "half there; 0 for a model that classifies fewer than half its "
                          "images, which drops its pair): attention claimed larger")
    eff = effective_radius(rs) if "clean_accuracy" in rs else pd.DataFrame()
    if len(eff):
        extra = _comparison_rows(eff, "effective_radius", group_col="group", scale="log",
                                 flag_column=None, n_images_col="n_images", main=True)
        for r in extra:
            r["claimed_sign"] = 1
            r["notes"].append("effective robustness (Taori et al. 2020): the median radius "
                              "divided by the fit over every model of log median radius on "
                              "logit clean accuracy, so the ratio compares the architectures "
                              "at equal clean accuracy; the fit uses all models (main models "
                              "only: no sweep points or checkpoints)")
        rows += extra
    rows += _matched_rows(rs, tables.get("radius_matched"))
    return rows


def _matched_rows(rs: pd.DataFrame, matched: pd.DataFrame | None) -> list[dict]:
    """The accuracy-matched sensitivity rows (issue 25): per seed, the model of each matched
    row (``radius_matched``, :mod:`topolip.experiments.matched`: the more accurate side at the
    epoch nearest the other in validation accuracy) against the other side at its chosen epoch
    (``radius_summary``), on the APGD-CE + APGD-T median radius, log scale."""
    if matched is None or not len(matched):
        return []
    require_columns(matched, ["arch", "seed", "group", "median_radius", "n_images",
                              "matched_to", "epoch"], "radius_matched")
    m = matched[matched["group"] == "autoattack_radius" + roster.MATCHED_GROUP_SUFFIX]
    other = rs[rs["group"] == "autoattack_radius"].set_index(["arch", "seed"])
    points = [m[["arch", "seed", "group", "median_radius", "n_images"]]]
    for r in m.itertuples(index=False):
        key = (r.matched_to, int(r.seed))
        if key in other.index:
            o = other.loc[key]
            points.append(pd.DataFrame([{"arch": r.matched_to, "seed": int(r.seed),
                                         "group": r.group, "median_radius": o["median_radius"],
                                         "n_images": o["n_images"]}]))
    p = pd.concat(points, ignore_index=True)
    rows = _comparison_rows(p, "median_radius", group_col="group", scale="log",
                            flag_column=None, n_images_col="n_images")
    epochs = ", ".join(f"{a} seed {int(s)} epoch {int(e)}" for a, s, e in
                       zip(m["arch"], m["seed"], m["epoch"], strict=True))
    for r in rows:
        r["claimed_sign"] = 1
        r["notes"].append("accuracy held fixed: the more accurate model of each seed at the "
                          "epoch of its training whose validation accuracy is nearest the "
                          f"other's chosen epoch ({epochs}), on the APGD-CE + APGD-T median "
                          "radius; a sensitivity row")
    return rows


def effective_radius(radius_summary: pd.DataFrame, *, method: str = "autoattack"
                     ) -> pd.DataFrame:
    r"""Effective robustness on the radii (Taori et al. 2020, "Measuring robustness to natural
    distribution shifts"): each model's median radius relative to what its clean accuracy
    predicts.

    Over every model with a finite positive median radius (under ``method``) and a clean
    accuracy strictly between 0 and 1, ordinary least squares of
    :math:`\log r_{\mathrm{med}}` on :math:`\mathrm{logit}(\text{clean accuracy})`; a
    model's effective radius is :math:`\exp` of its residual (1: as robust as its accuracy
    predicts). Compared between architectures (paired by seed, log scale) it holds clean
    accuracy fixed to first order.

    Parameters
    ----------
    radius_summary : pandas.DataFrame
        ``radius_summary.csv``: ``arch``, ``seed``, ``method``, ``median_radius``,
        ``clean_accuracy``, ``n_images``.
    method : str, default="autoattack"
        The bisected attack whose radii are used.

    Returns
    -------
    pandas.DataFrame
        ``arch``, ``seed``, ``group`` (``"effective_radius"``), ``n_images``,
        ``effective_radius``, ``slope`` (of the fit, log radius per logit), ``intercept`` (log
        radius at logit 0), ``n_fit``; empty
        when fewer than three models qualify (no fit).

    Examples
    --------
    >>> rs = pd.DataFrame({"arch": ["a", "b", "c", "d"], "seed": 0, "method": "autoattack",
    ...                    "median_radius": [0.01, 0.02, 0.04, 0.08], "n_images": 200,
    ...                    "clean_accuracy": [0.90, 0.95, 0.97, 0.99]})
    >>> e = effective_radius(rs)
    >>> int(e["n_fit"].iloc[0]), bool(np.isclose(np.log(e["effective_radius"]).sum(), 0))
    (4, True)
    """
    require_columns(radius_summary, ["arch", "seed", "method", "median_radius",
                                     "clean_accuracy", "n_images"], "radius_summary")
    t = radius_summary[radius_summary["method"] == method]
    r = t["median_radius"].astype(float).to_numpy()
    acc = t["clean_accuracy"].astype(float).to_numpy()
    ok = np.isfinite(r) & (r > 0) & (acc > 0) & (acc < 1)
    cols = ["arch", "seed", "group", "n_images", "effective_radius", "slope", "intercept",
            "n_fit"]
    if ok.sum() < 3:
        return pd.DataFrame(columns=cols)
    x, y = np.log(acc[ok] / (1 - acc[ok])), np.log(r[ok])
    slope, intercept = np.polyfit(x, y, 1) if np.ptp(x) > 0 else (0.0, y.mean())
    out = t[ok][["arch", "seed", "n_images"]].copy()
    out["group"] = "effective_radius"
    out["effective_radius"] = np.exp(y - (intercept + slope * x))
    out["slope"] = float(slope)
    out["intercept"] = float(intercept)
    out["n_fit"] = int(ok.sum())
    return out[cols].reset_index(drop=True)


def smaller_accuracy_drop(claim: Claim, tables: Mapping[str, pd.DataFrame]) -> list[Verdict]:
    """Attention is more robust, per family pair: a larger median minimal radius
    (``radius_summary``, log-scale paired t, when given) and a larger effective radius (at
    equal clean accuracy, :func:`effective_radius`), and a smaller accuracy drop under the
    attack ladder of ``robustness`` at the TopoLip ε and the corruptions at their TopoLip
    severity (raw paired t), on the ladder's images too (``robustness``; a corruption that
    table lacks is read from ``topolip_summary``'s batch). A ladder or corruption row where
    a model of either side (one seed) has a robust (or corrupted) accuracy at the floor or
    ceiling (:data:`ROBUST_FLOOR`) is :data:`FLOOR_VERDICT`, out of its Holm family. Ladder
    rows whose verdict changes with attack strength, or whose models failed a gradient-masking check
    (``masking``, when given), are flagged.

    Options: ``ladder`` (default :data:`topolip.roster.LADDER`), ``strength`` (default
    ``topolip``), ``corruptions`` (default: every kind of ``topolip_summary`` but FGSM and PGD),
    ``radius_table`` (default ``radius_summary``), ``alpha``.
    """
    o = claim.options
    ladder = list(o.get("ladder", roster.LADDER))
    robust = _at_strength(_tables(tables, o.get("table", "robustness")), ladder,
                          _attack_strength(claim, tables))
    rows = _comparison_rows(robust, "accuracy_drop", group_col="perturbation", scale="raw",
                            n_images_col="n" if "n" in robust else None)
    _masking_flags(rows, tables, robust)
    if "accuracy" in robust:
        for r in rows:
            r["floor"] = _robust_floor(robust, r["comparison"].split(" vs "), [r["group"]])
    rows = _radius_rows(claim, tables) + rows
    summary = _tables(tables, "topolip_summary")
    kinds = o.get("corruptions") or [k for k in pd.unique(summary["perturbation"])
                                     if k not in ("fgsm", "pgd", *ladder)]
    # one image set for the family: a corruption at its TopoLip severity on the ladder's
    # images (04's curves in ``robustness``) where that table holds it, else on the TopoLip
    # batch of ``topolip_summary``
    on_ladder = _at_strength(_tables(tables, o.get("table", "robustness")), kinds,
                             _attack_strength(claim, tables))
    rest = [k for k in kinds if k not in set(on_ladder["perturbation"])]
    corr = summary[summary["perturbation"].isin(rest)]
    for part, n_col, acc_col in ((on_ladder, "n", "accuracy"),
                                 (corr, "n_images", "accuracy_perturbed")):
        if not len(part):
            continue
        corr_rows = _comparison_rows(part, "accuracy_drop", group_col="perturbation",
                                     scale="raw", n_images_col=n_col if n_col in part else None)
        if acc_col in part:
            # the same floor rule: a corruption that leaves a side no accuracy, or all of it
            acc = part.assign(accuracy=part[acc_col])
            for r in corr_rows:
                r["floor"] = _robust_floor(acc, r["comparison"].split(" vs "), [r["group"]])
        rows += corr_rows
    out = _finish(rows, claim.id, claim.primary, alpha=_alpha(claim), claimed_sign=-1)
    for att, conv in FAMILY_PAIRS:
        rungs = [v for v in out if v.comparison == f"{att} vs {conv}" and v.group in ladder
                 and v.verdict != FLOOR_VERDICT]
        if len({v.verdict for v in rungs}) > 1:
            text = "verdict changes with attack strength: " + ", ".join(
                f"{label(v.group)} {v.verdict}" for v in sorted(rungs, key=lambda v:
                                                          ladder.index(v.group)))
            out = [replace(v, flag="; ".join(f for f in (v.flag, text) if f)) if v in rungs
                   else v for v in out]
    return out


def helps_only_weak(claim: Claim, tables: Mapping[str, pd.DataFrame]) -> list[Verdict]:
    """The rival claim: attention's robustness advantage holds against weak attacks only.

    Per family pair and (weak, strong) pair of ``contrasts``, on the radii
    (``radius_summary``, when given and holding both attacks' radii; group
    ``"<weak>_radius vs <strong>_radius"``, e.g. ``"fgsm_radius vs autoattack_radius"``): the
    per-seed change of attention's log radius advantage ``log r_att − log r_conv`` from the
    strong attack to the weak one (paired t; positive: the advantage is larger under the weak
    attack, the rival claim's direction; its ratio is a ratio of radius ratios). Off the floor
    by construction: a radius is defined wherever the model classifies half its images.

    Per family pair and (weak, strong) pair of rungs of ``robustness`` at the TopoLip ε: the
    per-seed difference ``(drop_att − drop_conv)_weak − (drop_att − drop_conv)_strong`` (raw
    paired t over the seeds with all four values). Negative: attention's advantage is larger
    under the weak attack (the rival claim's direction). A contrast where any of its four
    sides is at the robust-accuracy floor or ceiling is :data:`FLOOR_VERDICT`.

    Options: ``contrasts`` (default ``[[fgsm, autoattack], [fgsm, pgd]]``), ``strength``
    (default ``topolip``), ``radius_table`` (default ``radius_summary``), ``alpha``.
    """
    o = claim.options
    contrasts = [tuple(c) for c in o.get("contrasts", [["fgsm", "autoattack"], ["fgsm", "pgd"]])]
    kinds = sorted({k for c in contrasts for k in c})
    robust = _at_strength(_tables(tables, o.get("table", "robustness")), kinds,
                          _attack_strength(claim, tables))
    values = _by_seed(robust.assign(accuracy_drop=robust["accuracy_drop"].astype(float)),
                      "accuracy_drop", "perturbation")
    rows = []
    rs = tables.get(o.get("radius_table", "radius_summary"))
    radii = None
    if rs is not None and len(rs):
        require_columns(rs, ["arch", "seed", "group", "median_radius"], "radius_summary")
        med = rs["median_radius"].astype(float)
        # a median of 0 (fewer than half the images classified) or +inf (censored): no log
        log_r = np.log(med.where((med > 0) & np.isfinite(med)))
        radii = _by_seed(rs.assign(log_r=log_r), "log_r", "group")
    for att, conv in FAMILY_PAIRS:
        for weak, strong in contrasts:
            gw, gs = f"{weak}_radius", f"{strong}_radius"
            if radii is None or not {att, conv} <= set(radii.columns) \
                    or not {gw, gs} <= set(radii.index.get_level_values(0)):
                continue
            adv_w = radii.xs(gw, level=0)[att] - radii.xs(gw, level=0)[conv]
            adv_s = radii.xs(gs, level=0)[att] - radii.xs(gs, level=0)[conv]
            both = pd.concat([adv_w, adv_s], axis=1, keys=["w", "s"]).dropna()
            test = stats.paired_t(both["w"].to_numpy(), both["s"].to_numpy())
            rows.append(dict(
                comparison=f"{att} vs {conv}", group=f"{gw} vs {gs}",
                measure="log_median_radius", scale="log", test=test, attention=math.nan,
                convolution=math.nan, n_excluded=0, n_seeds=f"{len(both)}/{len(both)}",
                n_images=math.nan, main=True, flag="", claimed_sign=1,
                notes=[f"paired t over {test.n_pairs} seeds of the change in attention's log "
                       f"median-radius advantage from {label(strong)} to {label(weak)}: radius "
                       f"ratio {_exp(float(both['w'].mean())) if len(both) else math.nan:.3g} "
                       f"under {label(weak)}, "
                       f"{_exp(float(both['s'].mean())) if len(both) else math.nan:.3g} under "
                       f"{label(strong)} (geometric means)"]))
        for weak, strong in contrasts:
            if not {att, conv} <= set(values.columns) or not {weak, strong} <= set(
                    values.index.get_level_values(0)):
                continue
            adv_w = values.xs(weak, level=0)[att] - values.xs(weak, level=0)[conv]
            adv_s = values.xs(strong, level=0)[att] - values.xs(strong, level=0)[conv]
            both = pd.concat([adv_w, adv_s], axis=1, keys=["w", "s"]).dropna()
            test = stats.paired_t(both["w"].to_numpy(), both["s"].to_numpy())
            rows.append(dict(
                comparison=f"{att} vs {conv}", group=f"{weak} vs {strong}",
                measure="accuracy_drop", scale="raw", test=test, attention=math.nan,
                convolution=math.nan, n_excluded=0,
                n_seeds=f"{len(both)}/{len(both)}", n_images=math.nan, main=True, flag="",
                floor=_robust_floor(robust, (att, conv), (weak, strong))
                if "accuracy" in robust else "",
                notes=[f"paired t over {test.n_pairs} seeds of the change in (attention − "
                       f"convolution) accuracy drop from {strong} to {weak}: mean advantage "
                       f"difference {float(both['w'].mean()) if len(both) else math.nan:+.3g} "
                       f"under {weak}, {float(both['s'].mean()) if len(both) else math.nan:+.3g}"
                       f" under {strong}"]))
    return _finish(rows, claim.id, claim.primary, alpha=_alpha(claim), claimed_sign=-1)


def higher_ood_auroc(claim: Claim, tables: Mapping[str, pd.DataFrame]) -> list[Verdict]:
    """Attention separates out-of-distribution inputs from test inputs better: a higher AUROC of
    the max-softmax confidence (``ood_behaviour``), per family pair and OOD set.

    Every seed's AUROC is over the same test and OOD images, so the seed spread does not hold
    the image variance: the image-resampling standard error of the paired difference
    (``ood_resamples``, the row's measure; the mean over seeds of the per-seed bootstrap sd,
    an upper bound for the mean of correlated errors) is added in quadrature to the seed one
    (:func:`topolip.evidence.stats.paired_t`). Options: ``resamples`` (default ``ood_resamples``;
    ``none`` for the seed level only), ``extra_measures`` (other scores' AUROC columns, e.g.
    ``auroc_energy``, compared at the primary comparison and OOD set only, as secondaries;
    skipped where the table lacks them), ``alpha``.
    """
    o = claim.options
    behaviour = _tables(tables, "ood_behaviour")
    res = o.get("resamples", "ood_resamples")
    resamples = None if res == "none" else _tables(tables, res)
    rows = _comparison_rows(behaviour.dropna(subset=["auroc"]), "auroc", group_col="dataset",
                            scale="raw", n_images_col="n", resamples=resamples)
    key = (claim.primary.get("comparison", ""), claim.primary.get("group", ""))
    for extra in o.get("extra_measures", []) or []:
        if extra in behaviour.columns:
            rows += _comparison_rows(behaviour.dropna(subset=[extra]), extra,
                                     group_col="dataset", scale="raw", n_images_col="n",
                                     resamples=resamples, only=key, main=False)
    return _finish(rows, claim.id, claim.primary, alpha=_alpha(claim), claimed_sign=1)


def _within_architecture(summary: pd.DataFrame, measure: str, response: str, *,
                         n_resamples: int, seed: int, exact_seeds: int,
                         excluded: np.ndarray, centre: bool = True,
                         weights: str = "pairs") -> pd.DataFrame:
    """The measure study's within-architecture τ of ``measure`` with ``response`` per kind and
    over kinds (``perturbation == "all"``), its seed-relabelling p-value (exact up to
    :data:`topolip.evidence.measures.EXACT_SEEDS` seeds) on seed-centred values, kinds
    weighted by their pairs; NaN measures and ``excluded`` rows (the noise floor) are left
    out (after the centring, so a seed's measure and response are centred alike)."""
    from topolip.evidence import measures

    pop = pd.DataFrame({"source": "chain", "arch": summary["arch"].astype(str),
                        "seed": summary["seed"], "perturbation": summary["perturbation"],
                        "excluded": summary[measure].isna().to_numpy() | excluded,
                        measure: summary[measure], response: summary[response]})
    study, _ = measures.measure_study(pop, reference=measure, response=response,
                                      n_resamples=n_resamples, seed=seed,
                                      exact_seeds=exact_seeds, centre=centre,
                                      weights=weights)
    study = study[study["measure"] == measure]
    return study.assign(exact=study["p_mc_se"].eq(0.0))


def smoothness_table(summary: pd.DataFrame, *, measure: str = "end_to_end_scale_free",
                     responses: tuple[str, ...] = ("accuracy_drop", "relative_drop"),
                     flag_column: str | None = FLAG_COLUMN, n_resamples: int = 9999,
                     seed: int = 0, exact_seeds: int = 8, centre: bool = True,
                     weights: str = "pairs") -> pd.DataFrame:
    """Does a lower model TopoLip go with a smaller accuracy drop? Kendall τ within
    architectures, one permutation shared by every kind; the architecture-level τ beside it.

    The models of one architecture are its seeds; across architectures they are not
    exchangeable (four clusters that differ in every measure), and the same models appear in
    every perturbation kind. So the statistic is the within-architecture τ-b of ``measure``
    with a response (Kendall's τ-b over the pairs of models of the same architecture, so a
    cell left with few models after the noise floor counts by its pairs) on **seed-centred
    values** (:func:`topolip.evidence.measures.seed_centred`: each architecture standardised
    over its seeds, each seed less its mean over the architectures, per kind, so a hard test
    batch that raises TopoLip and the drop of every architecture of a seed is not read as an
    association between models), averaged over kinds **weighted by their pairs** for the
    pooled row (a kind the noise floor left with one pair weighs like one pair), tested by
    permuting the response across the seeds with **one relabelling of the seeds shared by
    every architecture and every kind** (centring commutes with it, so the test stays exact):
    the measure study's statistic and test (:func:`topolip.evidence.measures.measure_study`,
    exact up to :data:`topolip.evidence.measures.EXACT_SEEDS` seeds, else Monte Carlo with its
    standard error ``mc_se``), so chapters 04, 08 and 09 give one number for one test. The
    seed is the unit: the architectures of one seed share their test images, so their values are not
    independent across architectures, and only a relabelling that moves whole seeds keeps that
    dependence under the null (permuting each architecture on its own would not). A model
    whose input displacement lies within the noise floor (``flag_column``) is left out of that
    kind.

    Roles: the pooled within-architecture row of the first response is the **primary** (tested
    alone at ``alpha``); the per-kind rows of the first response and the pooled rows of the
    other responses are **secondary** (Holm over them, in ``p_adjusted``); the τ over the
    architecture means (``level = "architecture means"``, exact p over every relabelling of
    the architectures) is **context**: with ``n`` architectures its smallest two-sided p is
    ``2/n!`` (1/12 for 4), so it can never decide at 0.05 with 4.

    Parameters
    ----------
    summary : pandas.DataFrame
        One row per ``arch``, ``seed``, ``perturbation`` with ``measure`` and the responses
        (``tables/topolip_summary.csv``).
    measure : str
        The TopoLip column.
    responses : tuple of str
        Robustness columns; the first is the primary's.
    flag_column : str, optional
        The noise-floor flag (ignored when absent).
    n_resamples : int, default=9999
        Monte-Carlo relabellings of the seeds beyond
        :data:`topolip.evidence.measures.EXACT_SEEDS` seeds (fewer: all of them, exact); the
        Monte-Carlo standard error of each p-value is ``mc_se``.
    seed : int, default=0
        Seed of the permutations.
    exact_seeds : int, default=8
        Up to this many seeds every relabelling is enumerated
        (:data:`topolip.evidence.measures.EXACT_SEEDS`); a simulation may lower it.
    centre : bool, default=True
        Seed-centre before τ (False: raw values, the rule before issue 26, kept for the
        mutation checks of ``tests/test_calibration.py``).
    weights : {"pairs", "equal"}, default="pairs"
        How the pooled row averages the kinds (:func:`topolip.evidence.measures.measure_study`).

    Returns
    -------
    pandas.DataFrame
        Columns ``group`` (a kind, or ``"pooled"``), ``response``, ``level``
        (``within architecture`` | ``architecture means``), ``role``, ``partial`` (False; kept
        for the readers of the older table), ``n`` (model × kind observations used),
        ``n_arch``, ``min_seeds`` (fewest models of an architecture), ``n_excluded`` (flagged
        observations left out), ``tau``, ``pvalue``, ``p_adjusted``, ``mc_se``,
        ``n_permutations``, ``exact``, ``min_pvalue`` (the smallest p the test can give),
        ``seeds_present`` (fewest models of an architecture before the noise floor),
        ``family_floor`` (the smallest p its family can reach: the row's own ``min_pvalue``
        for the primary and the context, Holm's first step ``m · min_pvalue`` over the ``m``
        secondaries, :func:`topolip.evidence.stats.holm_floor`; at or above ``alpha`` the
        family can never decide) and ``seeds_needed`` (the fewest seeds at which it could,
        :func:`topolip.evidence.stats.seeds_to_decide`; 0 for the context).

    Raises
    ------
    ValueError
        If a column is missing.

    Examples
    --------
    Two architectures of three seeds, one kind; within each, the drop follows TopoLip exactly,
    and the seeds' orders differ between them (were they the same, centring would leave
    nothing: a seed effect, not a model one).

    >>> s = pd.DataFrame({"arch": ["vit"] * 3 + ["resnet"] * 3, "seed": [0, 1, 2] * 2,
    ...                   "perturbation": "pgd", "end_to_end_scale_free": [1, 2, 3, 6, 5, 4.],
    ...                   "accuracy_drop": [.1, .2, .3, .3, .2, .1]})
    >>> t = smoothness_table(s, responses=("accuracy_drop",))
    >>> t[["group", "level", "role", "tau"]].values.tolist()[0]
    ['pooled', 'within architecture', 'primary', 1.0]
    >>> round(float(t["pvalue"].iloc[0]), 4), int(t["n_permutations"].iloc[0])   # 2 of 3!
    (0.3333, 6)
    """
    require_columns(summary, ["arch", "seed", "perturbation", measure, *responses], "summary")
    s = summary.copy()
    flagged = np.zeros(len(s), dtype=bool)
    if flag_column and flag_column in s.columns:
        flagged = (s[flag_column].fillna("").astype(str) != "").to_numpy()
    n_excluded = int((flagged & s[measure].notna()).sum())
    s_within = s.copy()
    s.loc[flagged, measure] = np.nan
    kinds = list(pd.unique(s["perturbation"]))
    wide = s.pivot_table(index="perturbation", columns=["arch", "seed"],
                         values=[measure, *responses], aggfunc="first", dropna=False)
    units = sorted({(a, sd) for _, a, sd in wide.columns})
    clusters = np.array([a for a, _ in units])

    def grid(col):
        return wide[col].reindex(index=kinds, columns=pd.MultiIndex.from_tuples(units)).to_numpy(
            dtype=float)

    x = grid(measure)
    archs = list(pd.unique(clusters))
    seeds_per_arch = s.dropna(subset=[measure]).groupby("arch")["seed"].nunique()
    min_seeds = int(seeds_per_arch.min()) if len(seeds_per_arch) else 0
    # before the noise floor: fewer seeds there is a design's limit, fewer only after it the
    # floor's (more seeds would not help)
    present = s_within.dropna(subset=[measure]).groupby("arch")["seed"].nunique()
    seeds_present = int(present.min()) if len(present) else 0
    rows = []
    for i, response in enumerate(responses):
        y = grid(response)
        obs = np.isfinite(x) & np.isfinite(y)
        # the within-architecture statistic and its seed-relabelling test are the measure
        # study's own (one test, one number in chapters 04, 08 and 09)
        within = _within_architecture(s_within, measure, response, n_resamples=n_resamples,
                                      seed=seed, exact_seeds=exact_seeds, excluded=flagged,
                                      centre=centre, weights=weights
                                      ).set_index("perturbation")
        exact = bool(within["exact"].iloc[0])
        n_perm = int(within["n_permutations"].iloc[0])
        common = dict(response=response, partial=False, n_arch=len(archs),
                      min_seeds=min_seeds, seeds_present=seeds_present, n_excluded=n_excluded,
                      n_permutations=n_perm, exact=exact)
        min_p = 1 / n_perm if exact and n_perm else 1 / (1 + n_perm) if n_perm else math.nan
        w = within.loc["all"]
        rows.append(dict(group="pooled", level="within architecture",
                         role="primary" if i == 0 else "secondary", n=int(obs.sum()),
                         tau=float(w["tau_within"]), pvalue=float(w["p_within"]),
                         mc_se=float(w["p_mc_se"]), min_pvalue=min_p, **common))
        if i == 0:
            for k, kind in enumerate(kinds):
                wk = within.loc[kind]
                # each kind's own count of models left out for the noise floor
                rows.append(dict(group=str(kind), level="within architecture",
                                 role="secondary", n=int(obs[k].sum()),
                                 tau=float(wk["tau_within"]), pvalue=float(wk["p_within"]),
                                 mc_se=float(wk["p_mc_se"]), min_pvalue=min_p,
                                 **{**common, "n_excluded": int((
                                     flagged & s_within[measure].notna().to_numpy()
                                     & (s_within["perturbation"] == kind).to_numpy()).sum())}))
        # architecture level: τ over the architecture means, every relabelling
        with warnings.catch_warnings():
            warnings.simplefilter("ignore", RuntimeWarning)  # a kind with no value: NaN
            xm = np.stack([np.nanmean(np.where(clusters == a, x, np.nan), axis=1)
                           for a in archs], axis=1) if archs else np.empty((len(kinds), 0))
            ym = np.stack([np.nanmean(np.where(clusters == a, y, np.nan), axis=1)
                           for a in archs], axis=1) if archs else np.empty((len(kinds), 0))
        m = stats.within_permutation_kendall(xm, ym, np.zeros(len(archs)),
                                             max_exact=math.factorial(8))
        rows.append(dict(group="pooled", level="architecture means", role="context",
                         n=len(archs), tau=m.tau, pvalue=m.pvalue, mc_se=m.mc_se,
                         min_pvalue=2 / math.factorial(len(archs)) if len(archs) >= 2
                         else math.nan, **{**common, "n_permutations": m.n_permutations,
                                           "exact": m.exact}))
    t = pd.DataFrame(rows)
    t["p_adjusted"] = t["pvalue"]
    sec = (t["role"] == "secondary").to_numpy()
    t.loc[sec, "p_adjusted"] = stats.holm(t.loc[sec, "pvalue"].to_numpy(dtype=float))
    # can the family decide at all? Holm's first step at the smallest p the test can give
    n_sec = int(sec.sum())
    size = np.where(sec, max(n_sec, 1), 1)
    t["family_floor"] = [stats.holm_floor(int(m), float(q)) if math.isfinite(q) else math.nan
                         for m, q in zip(size, t["min_pvalue"], strict=True)]
    t["seeds_needed"] = [stats.seeds_to_decide(int(m)) if r != "context" else 0
                         for m, r in zip(size, t["role"], strict=True)]
    cols = ["group", "response", "level", "role", "partial", "n", "n_arch", "min_seeds",
            "seeds_present", "n_excluded", "tau", "pvalue", "p_adjusted", "mc_se",
            "n_permutations", "exact", "min_pvalue", "family_floor", "seeds_needed"]
    return t[cols]


def smoothness_predicts_robustness(claim: Claim,
                                   tables: Mapping[str, pd.DataFrame]) -> list[Verdict]:
    """Lower model TopoLip goes with a smaller accuracy drop, within architectures (the
    ``smoothness`` table of :func:`smoothness_table`, whose roles and Holm-adjusted p-values
    are used as they are: one correction family in chapter 04 and here).

    τ > 0 with a deciding p below ``alpha`` supports, τ < 0 contradicts; every architecture
    needs at least :data:`topolip.evidence.stats.MIN_SEEDS` seeds (*noise floor* where the
    seeds are there but their models were left out for the noise floor, *not enough seeds*
    where they are not). A family whose smallest attainable p (``family_floor``) is at least
    ``alpha`` cannot decide at the run's seed count: its rows are *description*, with the seeds
    it would need in ``detail``. The primary is the table's primary row (``claim.primary``
    names it: ``comparison: within architecture``, ``group: pooled``).
    """
    o = claim.options
    t = _tables(tables, o.get("table", "smoothness"))
    require_columns(t, ["group", "response", "level", "role", "tau", "pvalue", "p_adjusted"],
                    "smoothness")
    alpha = _alpha(claim)
    n_sec = int((t["role"] == "secondary").sum())
    out = []
    for r in t.to_dict("records"):
        enough = int(r.get("min_seeds", 0)) >= stats.MIN_SEEDS
        floor = float(r.get("family_floor", 0.0))
        if not enough:
            # too few models left only after the noise floor: more seeds would not help
            decision = ("noise floor" if int(r.get("seeds_present", 0)) >= stats.MIN_SEEDS
                        else "not enough seeds")
        elif r["role"] != "context" and math.isfinite(floor) and floor >= alpha:
            decision = "description"
        elif r["role"] == "context":
            decision = "inconclusive"
        elif not (math.isfinite(r["p_adjusted"]) and r["p_adjusted"] < alpha) or r["tau"] == 0:
            decision = "inconclusive"
        else:
            decision = "supported" if r["tau"] > 0 else "contradicted"
        if r["level"] == "architecture means":
            what = (f"τ over the {r['n']} architecture means, mean over kinds; exact p over all "
                    f"{int(r['n_permutations'])} relabellings; with n = {r['n']} the smallest "
                    f"two-sided p is {r['min_pvalue']:.3g}, so it "
                    + (f"can never decide at α = {alpha:g}" if r["min_pvalue"] >= alpha else
                       "can decide") + "; reported, in no family")
        else:
            what = ("within-architecture τ-b over seeds, "
                    + ("on seed-centred values, over the pairs of every architecture, "
                       "kinds weighted by their pairs" if r["group"] == "pooled"
                       else "on seed-centred values, over the pairs of every architecture")
                    + f", {r['n']} observations; response permuted across the seeds of each "
                    "architecture, one permutation for every kind; "
                    + (f"exact over {int(r['n_permutations'])} permutations" if r["exact"]
                       else f"{int(r['n_permutations'])} Monte-Carlo permutations "
                            f"(MC se {r['mc_se']:.2g})")
                    + (f"; primary: tested alone at α = {alpha:g}" if r["role"] == "primary"
                       else f"; secondary: Holm over {n_sec}"))
        if decision == "description":
            what += (f"; this family cannot decide at {int(r.get('min_seeds', 0))} seeds (its "
                     f"smallest attainable p is {floor:.3g} ≥ α = {alpha:g}): it "
                     f"describes; it would need {int(r['seeds_needed'])} seeds")
        if int(r.get("n_excluded", 0)):
            what += f"; {int(r['n_excluded'])} flagged observations (noise floor) left out"
        role = r["role"]
        out.append(Verdict(claim.id, f"Kendall τ {r['level']}, {r['response']}", decision,
                           group=str(r["group"]), measure=o.get("measure",
                                                                "end_to_end_scale_free"),
                           role=role, family=f"{claim.id}: {role}" if role != "context" else "",
                           effect=float(r["tau"]), pvalue=float(r["pvalue"]),
                           p_adjusted=float(r["p_adjusted"]), mc_se=float(r.get("mc_se",
                                                                                math.nan)),
                           n_pairs=int(r["n"]), n_excluded=int(r.get("n_excluded", 0)),
                           n_seeds=f"{int(r.get('min_seeds', 0))} per arch", detail=what))
    return out


def envelope_holds(claim: Claim, tables: Mapping[str, pd.DataFrame]) -> list[Verdict]:
    """Every paired row of ``topolip`` has ``bottleneck <= envelope`` (float32 slack 1e-5)."""
    t = _tables(tables, "topolip").dropna(subset=["envelope"])
    slack = 1e-5 * np.maximum(1.0, t["envelope"].abs())
    bad = t[t["bottleneck"] > t["envelope"] + slack]
    ratio = float((t["bottleneck"] / t["envelope"].where(t["envelope"] > 0)).max())
    return [Verdict(claim.id, f"{len(t)} layer rows", "contradicted" if len(bad) else "supported",
                    role="check", effect=ratio, n_excluded=0,
                    detail=f"largest bottleneck/envelope ratio {ratio:.3f}; violations: {len(bad)}"
                    "; a theorem: any violation is a bug")]


CHECKS: dict[str, Callable[[Claim, Mapping[str, pd.DataFrame]], list[Verdict]]] = {
    "lower_topolip": lower_topolip,
    "smaller_accuracy_drop": smaller_accuracy_drop,
    "helps_only_weak": helps_only_weak,
    "higher_ood_auroc": higher_ood_auroc,
    "smoothness_predicts_robustness": smoothness_predicts_robustness,
    "envelope_holds": envelope_holds,
}


def evaluate(claims: list[Claim], tables: Mapping[str, pd.DataFrame]) -> pd.DataFrame:
    """Run every claim's check; one row per verdict (columns of :class:`Verdict`).

    Examples
    --------
    >>> s = pd.DataFrame({"arch": ["vit"] * 3 + ["resnet"] * 3, "seed": [0, 1, 2] * 2,
    ...                   "perturbation": "pgd", "n_images": 100, "end_to_end_flag": "",
    ...                   "end_to_end_scale_free": [1.0, 1.1, 0.9, 2.0, 2.1, 1.9]})
    >>> c = Claim("c", "attention is smoother", "test", "lower_topolip",
    ...           primary={"comparison": "vit vs resnet", "group": "pgd"})
    >>> evaluate([c], {"topolip_summary": s})[["role", "group", "verdict"]].values.tolist()
    [['primary', 'pgd', 'supported']]
    """
    rows = []
    for claim in claims:
        rows += [vars(v) for v in CHECKS[claim.check](claim, tables)]
    return pd.DataFrame(rows, columns=list(Verdict.__dataclass_fields__))


#: The verdicts that decide a row.
DECISIVE = ("supported", "contradicted")
#: Verdicts of rows that could not decide whatever the data: too few seeds, pairs the noise
#: floor dropped, a family whose smallest attainable p is above alpha, a primary not measured.
CANNOT_DECIDE = ("not enough seeds", "noise floor", "description", "not measured",
                 FLOOR_VERDICT)


def families(verdicts: pd.DataFrame) -> pd.DataFrame:
    """The test families of a verdicts table: one row per ``family`` with at least one tested
    row (a finite deciding p-value), its claim, role and number of tests.

    Returns
    -------
    pandas.DataFrame
        Columns ``family``, ``claim``, ``role``, ``n_tests``, ``n_decisive``.

    Examples
    --------
    >>> v = pd.DataFrame({"claim": ["a", "a", "a"], "role": ["primary", "secondary",
    ...                   "secondary"], "family": ["a: primary", "a: secondary", "a: secondary"],
    ...                   "p_adjusted": [0.01, 0.2, float("nan")],
    ...                   "verdict": ["supported", "inconclusive", "not enough seeds"]})
    >>> families(v)[["family", "n_tests", "n_decisive"]].values.tolist()
    [['a: primary', 1, 1], ['a: secondary', 1, 0]]
    """
    require_columns(verdicts, ["claim", "role", "family", "p_adjusted", "verdict"], "verdicts")
    v = verdicts[verdicts["family"].fillna("").astype(str).ne("")
                 & np.isfinite(verdicts["p_adjusted"].astype(float))]
    g = v.groupby("family", sort=False)
    return pd.DataFrame({"family": list(g.groups), "claim": g["claim"].first().to_list(),
                         "role": g["role"].first().to_list(), "n_tests": g.size().to_list(),
                         "n_decisive": g["verdict"].agg(
                             lambda s: int(s.isin(DECISIVE).sum())).to_list()})


def most_robust_vs_smoothest(summary: pd.DataFrame, *,
                             measure: str = "end_to_end_scale_free") -> pd.DataFrame:
    """Per perturbation kind: the architecture with the smallest mean accuracy drop and the one
    with the lowest mean ``measure`` (means over seeds), and whether they agree; with, per
    family pair, whether attention has the smaller drop and the lower measure.

    Descriptive: the verdicts with intervals are :func:`evaluate`'s.

    Returns
    -------
    pandas.DataFrame
        One row per kind: ``perturbation``, ``most_robust``, ``drop``, ``smoothest``,
        ``value``, ``agree``, and per family pair ``{att}_smaller_drop`` and
        ``{att}_lower_measure`` (bool).

    Examples
    --------
    >>> s = pd.DataFrame({"arch": ["vit", "resnet"], "seed": 0, "perturbation": "fgsm",
    ...                   "accuracy_drop": [0.5, 0.1], "end_to_end_scale_free": [0.2, 0.9]})
    >>> most_robust_vs_smoothest(s)[["most_robust", "smoothest", "agree"]].values.tolist()
    [['resnet', 'vit', False]]
    """
    require_columns(summary, ["arch", "perturbation", "accuracy_drop", measure], "summary")
    drop = summary.groupby(["perturbation", "arch"], sort=False)["accuracy_drop"].mean().unstack()
    val = summary.groupby(["perturbation", "arch"], sort=False)[measure].mean().unstack()
    rows = []
    for kind in drop.index:
        robust, smooth = drop.loc[kind].idxmin(), val.loc[kind].idxmin()
        row = {"perturbation": kind, "most_robust": robust, "drop": drop.loc[kind, robust],
               "smoothest": smooth, "value": val.loc[kind, smooth], "agree": robust == smooth}
        for att, conv in FAMILY_PAIRS:
            if att in drop.columns and conv in drop.columns:
                row[f"{att}_smaller_drop"] = bool(drop.loc[kind, att] < drop.loc[kind, conv])
                row[f"{att}_lower_measure"] = bool(val.loc[kind, att] < val.loc[kind, conv])
        rows.append(row)
    return pd.DataFrame(rows)
