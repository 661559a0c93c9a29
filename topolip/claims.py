"""The paper's claims, checked against our tables with intervals and a multiplicity correction.

``data/claims.yml`` lists each claim in our own words, where it comes from, and the name of a
check in :data:`CHECKS`. A check reads the tidy tables of a run and returns one
:class:`Verdict` per comparison (a pair of architectures under one perturbation, or one
perturbation kind of a rank correlation).

The rule, in two sentences (the book repeats it): a comparison is *supported* or
*contradicted* only when its 95% interval excludes no difference after Holm's correction over
all comparisons of the same claim (equivalently: its Holm-adjusted p-value is below ``alpha``),
with at least :data:`topolip.stats.MIN_SEEDS` seeds on each side; otherwise it is
*inconclusive*, or *not enough seeds*. Intervals of differences come from the hierarchical
bootstrap over seeds and images of :mod:`topolip.stats` (paired by seed: the architectures of
one seed see the same images), rank correlations from permutation tests over models.
The verdicts are computed, never written by hand, so the book says what the run shows.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd
import yaml

from . import stats

__all__ = [
    "CHECKS", "FAMILY_PAIRS", "Claim", "Verdict", "evaluate", "family_comparisons",
    "family_below_counts", "load_claims", "most_robust_vs_smoothest", "smoothness_table",
    "verdict_counts", "with_options",
]

#: (attention-based, convolution-based) architectures compared with each other.
FAMILY_PAIRS: tuple[tuple[str, str], ...] = (("vit", "resnet"), ("attention_stack", "conv_stack"))


@dataclass(frozen=True)
class Claim:
    """One claim: ``id``, ``statement`` (our paraphrase), ``source``, ``check`` (a key of
    :data:`CHECKS`) and the check's keyword ``options`` (e.g. ``measure``)."""

    id: str
    statement: str
    source: str
    check: str
    options: Mapping[str, Any] = field(default_factory=dict)


@dataclass(frozen=True)
class Verdict:
    """The outcome of one check on one comparison.

    ``attention`` and ``convolution`` are the seed means of the compared quantity (NaN for a
    rank correlation), ``effect`` their difference (or Kendall's τ), ``low``/``high`` its 95%
    interval, ``pvalue`` and ``p_adjusted`` (Holm, within the claim), ``n_seeds`` as
    ``"a/b"`` and ``n_images`` the images per seed."""

    claim: str
    comparison: str
    verdict: str
    group: str = ""
    measure: str = ""
    attention: float = math.nan
    convolution: float = math.nan
    effect: float = math.nan
    low: float = math.nan
    high: float = math.nan
    pvalue: float = math.nan
    p_adjusted: float = math.nan
    n_seeds: str = ""
    n_images: float = math.nan
    detail: str = ""


def load_claims(path: str | Path) -> list[Claim]:
    """Read the claims registry (a YAML list).

    Raises
    ------
    ValueError
        If an entry lacks ``id``, ``statement``, ``source`` or ``check``, an id repeats, or a
        check is not in :data:`CHECKS`.
    """
    entries = yaml.safe_load(Path(path).read_text())
    if not isinstance(entries, list):
        raise ValueError(f"{path}: the claims registry must be a YAML list")
    claims, seen = [], set()
    for i, entry in enumerate(entries):
        missing = [k for k in ("id", "statement", "source", "check") if k not in entry]
        if missing:
            raise ValueError(f"{path}: claim #{i + 1} lacks {missing}")
        if entry["id"] in seen:
            raise ValueError(f"{path}: claim id {entry['id']!r} repeats")
        if entry["check"] not in CHECKS:
            raise ValueError(f"{path}: claim {entry['id']!r} names unknown check "
                             f"{entry['check']!r}; known: {sorted(CHECKS)}")
        seen.add(entry["id"])
        options = {k: v for k, v in entry.items() if k not in ("id", "statement", "source",
                                                                 "check")}
        claims.append(Claim(entry["id"], " ".join(entry["statement"].split()), entry["source"],
                            entry["check"], options))
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
    _require(verdicts, ["claim", "comparison", "verdict"], "verdicts")
    rows = verdicts[verdicts["claim"] == claim]
    if comparison is not None:
        rows = rows[rows["comparison"] == comparison]
    counts = rows["verdict"].value_counts() if by_count else rows["verdict"].value_counts(
        sort=False).sort_index()
    return ", ".join(f"{n} {v}" for v, n in counts.items() if n) or "no comparison"


def _require(table: pd.DataFrame, columns: list[str], name: str) -> None:
    missing = [c for c in columns if c not in table.columns]
    if missing:
        raise ValueError(f"table {name!r} lacks column(s) {missing}; it has "
                         f"{list(table.columns)}")


def family_below_counts(summary: pd.DataFrame, measure: str = "end_to_end_scale_free", *,
                        group_col: str = "perturbation") -> dict[tuple[str, str], str]:
    """In how many groups each attention model's seed mean is below its convolution partner's.

    A descriptive count for the narrative (no interval, no test: :func:`family_comparisons`
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
    _require(summary, ["arch", group_col, measure], "summary")
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


def _side(points: pd.DataFrame, resamples: pd.DataFrame | None, arch: str, measure: str,
          group_col: str, group) -> tuple[np.ndarray, np.ndarray, list]:
    """Point values (n_seeds,), resample values (n_seeds, B) and seeds of one architecture."""
    p = points[(points["arch"] == arch) & (points[group_col] == group)].dropna(subset=[measure])
    p = p.sort_values("seed")
    seeds = p["seed"].tolist()
    point = p[measure].to_numpy(dtype=float)
    if resamples is None or resamples.empty:
        return point, point[:, None], seeds
    r = resamples[(resamples["arch"] == arch) & (resamples["group"] == group)
                  & (resamples["measure"] == measure)]
    wide = r.pivot_table(index="seed", columns="resample", values="value", aggfunc="first")
    wide = wide.reindex(seeds)
    if wide.isna().to_numpy().any() or wide.shape[1] == 0:
        # a resample with an undefined value (e.g. a zero input displacement): drop the seed's
        # resample level rather than invent a value
        keep = ~wide.isna().any(axis=1).to_numpy() if wide.shape[1] else np.zeros(len(seeds), bool)
        if not keep.any():
            return point, point[:, None], seeds
        wide = wide[keep]
        point, seeds = point[keep], [s for s, k in zip(seeds, keep, strict=True) if k]
    return point, wide.to_numpy(dtype=float), seeds


def family_comparisons(points: pd.DataFrame, measure: str, *, group_col: str = "perturbation",
                       resamples: pd.DataFrame | None = None, claimed_sign: int = -1,
                       alpha: float = 0.05, n_boot: int = 2000, claim: str = "",
                       n_images_col: str | None = "n_images") -> list[Verdict]:
    """Attention against convolution, per family pair and group, with Holm over all of them.

    Parameters
    ----------
    points : pandas.DataFrame
        One row per ``arch``, ``seed`` and group with the ``measure`` column (the value on the
        seed's full batch).
    measure : str
        The compared column.
    group_col : str, default="perturbation"
        The column naming the perturbation kind or data set.
    resamples : pandas.DataFrame, optional
        Image resamples: columns ``arch``, ``seed``, ``group``, ``measure``, ``resample``,
        ``value`` (see :func:`topolip.experiments.measure_model`). Without it, only seeds are
        resampled.
    claimed_sign : {-1, 1}
        -1 when the claim predicts a lower value for attention.
    alpha : float, default=0.05
        ``1 − alpha`` intervals; the Holm-adjusted tests at level ``alpha``.
    n_boot : int, default=2000
        Bootstrap resamples.
    claim : str
        The claim id written into each verdict.
    n_images_col : str, optional
        Column of ``points`` with the images per seed.

    Returns
    -------
    list of Verdict

    Examples
    --------
    >>> pts = pd.DataFrame({"arch": ["vit"] * 3 + ["resnet"] * 3, "seed": [0, 1, 2] * 2,
    ...                     "perturbation": "fgsm", "m": [1.0, 1.1, 0.9, 2.0, 2.1, 1.9]})
    >>> v = family_comparisons(pts, "m", n_images_col=None)[0]
    >>> v.verdict, round(v.effect, 3), v.n_seeds
    ('supported', -1.0, '3/3')
    """
    _require(points, ["arch", "seed", group_col, measure], "points")
    rows: list[dict] = []
    for att, conv in FAMILY_PAIRS:
        for group in pd.unique(points[group_col]):
            pa, va, sa = _side(points, resamples, att, measure, group_col, group)
            pc, vc, sc = _side(points, resamples, conv, measure, group_col, group)
            if len(pa) == 0 or len(pc) == 0:
                continue
            paired = sa == sc and va.shape == vc.shape
            cmp = stats.compare(pa, va, pc, vc, paired=paired, alpha=alpha, n_boot=n_boot)
            n_img = math.nan
            if n_images_col and n_images_col in points.columns:
                sel = points[(points["arch"].isin([att, conv])) & (points[group_col] == group)]
                n_img = float(sel[n_images_col].min())
            rows.append(dict(claim=claim, comparison=f"{att} vs {conv}", group=str(group),
                             measure=measure, attention=float(pa.mean()),
                             convolution=float(pc.mean()), effect=cmp.effect, low=cmp.low,
                             high=cmp.high, pvalue=cmp.pvalue, n_seeds=f"{len(pa)}/{len(pc)}",
                             n_images=n_img, _na=len(pa), _nc=len(pc),
                             detail=("paired by seed" if paired else "unpaired (Welch)")
                             + f", {va.shape[1]} image resamples per seed"))
    adjusted = stats.holm([r["pvalue"] for r in rows])
    out = []
    for r, p_adj in zip(rows, adjusted, strict=True):
        na, nc = r.pop("_na"), r.pop("_nc")
        r["p_adjusted"] = float(p_adj)
        r["verdict"] = stats.decide(r["effect"], p_adj, na, nc, alpha=alpha,
                                    claimed_sign=claimed_sign)
        out.append(Verdict(**r))
    return out


def _tables(tables: Mapping[str, pd.DataFrame], name: str) -> pd.DataFrame:
    if name not in tables:
        raise ValueError(f"the check needs table {name!r}; available: {sorted(tables)}")
    return tables[name]


def lower_topolip(claim: Claim, tables: Mapping[str, pd.DataFrame]) -> list[Verdict]:
    """Attention's model TopoLip is lower than convolution's, per family pair and group.

    Options: ``table`` (default ``topolip_summary``), ``measure`` (default
    ``end_to_end_scale_free``), ``group`` (default ``perturbation``), ``resamples`` (default
    ``resamples``; ``none`` for seeds only), ``alpha``.
    """
    o = claim.options
    res = o.get("resamples", "resamples")
    return family_comparisons(
        _tables(tables, o.get("table", "topolip_summary")),
        o.get("measure", "end_to_end_scale_free"), group_col=o.get("group", "perturbation"),
        resamples=None if res == "none" else _tables(tables, res), claimed_sign=-1,
        alpha=float(o.get("alpha", 0.05)), claim=claim.id)


def smaller_accuracy_drop(claim: Claim, tables: Mapping[str, pd.DataFrame]) -> list[Verdict]:
    """Attention loses less accuracy to a perturbation, per family pair and perturbation.

    Options: ``table`` (default ``topolip_summary``, column ``measure``, default
    ``accuracy_drop``), ``resamples`` (default ``resamples``), ``alpha``.
    """
    o = claim.options
    return family_comparisons(
        _tables(tables, o.get("table", "topolip_summary")), o.get("measure", "accuracy_drop"),
        resamples=_tables(tables, o.get("resamples", "resamples")), claimed_sign=-1,
        alpha=float(o.get("alpha", 0.05)), claim=claim.id)


def higher_ood_auroc(claim: Claim, tables: Mapping[str, pd.DataFrame]) -> list[Verdict]:
    """Attention separates out-of-distribution inputs from test inputs better: a higher AUROC of
    the max-softmax confidence (``ood_behaviour``), per family pair and OOD set, with the
    image resamples of ``ood_resamples`` (measure ``auroc``)."""
    o = claim.options
    t = _tables(tables, "ood_behaviour").dropna(subset=["auroc"])
    return family_comparisons(t, "auroc", group_col="dataset",
                              resamples=_tables(tables, o.get("resamples", "ood_resamples")),
                              claimed_sign=1, alpha=float(o.get("alpha", 0.05)), claim=claim.id,
                              n_images_col="n")


def smoothness_table(summary: pd.DataFrame, *, measure: str = "end_to_end_scale_free",
                     responses: tuple[str, ...] = ("accuracy_drop", "relative_drop"),
                     control: str = "accuracy_clean", n_resamples: int = 4999,
                     seed: int = 0) -> pd.DataFrame:
    """Does a lower model TopoLip go with a smaller accuracy drop? Kendall τ over models.

    Within each perturbation kind: Kendall τ between ``measure`` and each response over the
    models (architecture × seed), its permutation p-value, and the same with ``control``
    (clean accuracy) partialled out (:func:`topolip.stats.partial_kendall`). Across kinds:
    only stratified (:func:`topolip.stats.stratified_permutation_kendall`, pairings permuted
    within each kind), never pooled as if the kinds were independent.

    Parameters
    ----------
    summary : pandas.DataFrame
        One row per ``arch``, ``seed``, ``perturbation`` with ``measure``, the responses and
        ``control``.
    measure : str
        The TopoLip column.
    responses : tuple of str
        The robustness columns, each tested against ``measure``.
    control : str
        The column partialled out (clean accuracy).
    n_resamples : int
        Permutations per test.
    seed : int
        Seed of the permutations.

    Returns
    -------
    pandas.DataFrame
        Columns ``group`` (a kind, or ``"stratified"``), ``response``, ``partial`` (bool),
        ``n`` (models), ``tau``, ``pvalue``, ``p_adjusted`` (Holm over the kinds of one
        response and ``partial``; the stratified row is its own family).
    """
    _require(summary, ["perturbation", measure, *responses, control], "summary")
    rows = []
    for response in responses:
        for partial in (False, True):
            fam = []
            for kind, g in summary.groupby("perturbation", sort=False):
                if partial:
                    tau, p = stats.partial_kendall(g[measure], g[response], g[control],
                                                   n_resamples=n_resamples, seed=seed)
                else:
                    tau, p = stats.permutation_kendall(g[measure], g[response],
                                                       n_resamples=n_resamples, seed=seed)
                fam.append({"group": str(kind), "response": response, "partial": partial,
                            "n": int(g[[measure, response]].notna().all(axis=1).sum()),
                            "tau": tau, "pvalue": p})
            for r, adj in zip(fam, stats.holm([r["pvalue"] for r in fam]), strict=True):
                r["p_adjusted"] = float(adj)
            rows += fam
            if not partial:
                tau, p = stats.stratified_permutation_kendall(
                    summary[measure], summary[response], summary["perturbation"],
                    n_resamples=n_resamples, seed=seed)
                rows.append({"group": "stratified", "response": response, "partial": False,
                             "n": int(summary[[measure, response]].notna().all(axis=1).sum()),
                             "tau": tau, "pvalue": p, "p_adjusted": p})
    return pd.DataFrame(rows)


def smoothness_predicts_robustness(claim: Claim,
                                   tables: Mapping[str, pd.DataFrame]) -> list[Verdict]:
    """Lower model TopoLip goes with a smaller accuracy drop (``smoothness`` table of
    :func:`smoothness_table`): τ > 0 with Holm-adjusted p < ``alpha`` supports, τ < 0
    contradicts; every architecture needs at least :data:`topolip.stats.MIN_SEEDS` seeds.

    Holm's correction spans every row of the claim (kinds, responses, with and without the
    clean accuracy partialled out, the stratified tests), as for every other claim."""
    o = claim.options
    t = _tables(tables, o.get("table", "smoothness"))
    summary = _tables(tables, "topolip_summary")
    seeds = summary.groupby("arch")["seed"].nunique()
    enough = len(seeds) > 0 and int(seeds.min()) >= stats.MIN_SEEDS
    alpha = float(o.get("alpha", 0.05))
    out = []
    t = t.assign(p_adjusted=stats.holm(t["pvalue"].to_numpy(dtype=float)))
    for r in t.itertuples():
        if not enough:
            verdict = "not enough seeds"
        elif not (math.isfinite(r.p_adjusted) and r.p_adjusted < alpha):
            verdict = "inconclusive"
        else:
            verdict = "supported" if r.tau > 0 else "contradicted"
        what = f"{r.response}{' | clean accuracy' if r.partial else ''}"
        out.append(Verdict(claim.id, f"Kendall τ, {what}", verdict, group=r.group,
                           measure=o.get("measure", "end_to_end_scale_free"), effect=r.tau,
                           pvalue=r.pvalue, p_adjusted=r.p_adjusted,
                           n_seeds=f"{int(seeds.min()) if len(seeds) else 0} per arch",
                           detail=f"{r.n} models; permutation test"
                           + (", ranks residualised on clean accuracy" if r.partial else "")
                           + (", pairings permuted within kind" if r.group == "stratified"
                              else "") + "; Holm over the claim's rows"))
    return out


def envelope_holds(claim: Claim, tables: Mapping[str, pd.DataFrame]) -> list[Verdict]:
    """Every paired row of ``topolip`` has ``bottleneck <= envelope`` (float32 slack 1e-5)."""
    t = _tables(tables, "topolip").dropna(subset=["envelope"])
    slack = 1e-5 * np.maximum(1.0, t["envelope"].abs())
    bad = t[t["bottleneck"] > t["envelope"] + slack]
    ratio = float((t["bottleneck"] / t["envelope"].where(t["envelope"] > 0)).max())
    return [Verdict(claim.id, f"{len(t)} layer rows", "contradicted" if len(bad) else "supported",
                    effect=ratio,
                    detail=f"largest bottleneck/envelope ratio {ratio:.3f}; violations: {len(bad)}"
                    "; a theorem: any violation is a bug")]


CHECKS: dict[str, Callable[[Claim, Mapping[str, pd.DataFrame]], list[Verdict]]] = {
    "lower_topolip": lower_topolip,
    "smaller_accuracy_drop": smaller_accuracy_drop,
    "higher_ood_auroc": higher_ood_auroc,
    "smoothness_predicts_robustness": smoothness_predicts_robustness,
    "envelope_holds": envelope_holds,
}


def evaluate(claims: list[Claim], tables: Mapping[str, pd.DataFrame]) -> pd.DataFrame:
    """Run every claim's check; one row per verdict (columns of :class:`Verdict`).

    Examples
    --------
    >>> s = pd.DataFrame({"arch": ["vit"] * 3 + ["resnet"] * 3, "seed": [0, 1, 2] * 2,
    ...                   "perturbation": "fgsm", "n_images": 100,
    ...                   "end_to_end_scale_free": [1.0, 1.1, 0.9, 2.0, 2.1, 1.9]})
    >>> c = Claim("c", "attention is smoother", "test", "lower_topolip", {"resamples": "none"})
    >>> evaluate([c], {"topolip_summary": s})[["comparison", "group", "verdict"]].values.tolist()
    [['vit vs resnet', 'fgsm', 'supported']]
    """
    rows = []
    for claim in claims:
        rows += [vars(v) for v in CHECKS[claim.check](claim, tables)]
    return pd.DataFrame(rows, columns=list(Verdict.__dataclass_fields__))


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
    _require(summary, ["arch", "perturbation", "accuracy_drop", measure], "summary")
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
