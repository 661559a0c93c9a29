"""The paper's claims, checked against our tables.

``data/claims.yml`` lists each claim in our own words, where it comes from, and the name of a
check in :data:`CHECKS`. A check reads the tidy tables of a run and returns a :class:`Verdict`:
``supported``, ``contradicted`` or ``inconclusive`` (the two sides' seed means are within one
pooled standard deviation of each other, or a side is missing), with the numbers it used. The
verdicts are computed, never written by hand, so the book says what the run shows.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd
import yaml

__all__ = ["CHECKS", "FAMILY_PAIRS", "Claim", "Verdict", "evaluate", "load_claims"]

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
    """The outcome of one check on one comparison (a pair of architectures, a perturbation).

    ``attention`` and ``convolution`` are the seed means of the compared quantity, ``spread``
    their pooled standard deviation."""

    claim: str
    comparison: str
    verdict: str
    attention: float = math.nan
    convolution: float = math.nan
    spread: float = math.nan
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


def _compare(claim: str, comparison: str, att: pd.Series, conv: pd.Series,
             lower_is_claimed: bool = True) -> Verdict:
    """Verdict on "attention < convolution" from per-seed values of both sides."""
    att, conv = att.dropna(), conv.dropna()
    if att.empty or conv.empty:
        return Verdict(claim, comparison, "inconclusive", detail="a side has no finite value")
    a, c = float(att.mean()), float(conv.mean())
    sd = float(np.sqrt((att.var(ddof=1) if len(att) > 1 else 0.0)
                       + (conv.var(ddof=1) if len(conv) > 1 else 0.0)))
    if abs(a - c) <= sd:
        verdict = "inconclusive"
    else:
        verdict = "supported" if (a < c) == lower_is_claimed else "contradicted"
    return Verdict(claim, comparison, verdict, a, c, sd,
                   f"{len(att)} and {len(conv)} seeds; inconclusive when |difference| <= "
                   "pooled sd")


def _pairwise(claim: Claim, table: pd.DataFrame, column: str, group: str,
              lower_is_claimed: bool) -> list[Verdict]:
    out = []
    for att, conv in FAMILY_PAIRS:
        for key, part in table.groupby(group, sort=False):
            if att not in set(part["arch"]) or conv not in set(part["arch"]):
                continue
            out.append(_compare(claim.id, f"{att} vs {conv}, {key}: {column}",
                                part.loc[part["arch"] == att, column],
                                part.loc[part["arch"] == conv, column], lower_is_claimed))
    return out


def lower_topolip(claim: Claim, tables: Mapping[str, pd.DataFrame]) -> list[Verdict]:
    """Attention's model TopoLip is lower than convolution's, per family pair and group.

    Options: ``table`` (default ``topolip_summary``; any model-summary table with ``arch`` and
    one row per seed), ``measure`` (default ``geometric_mean_scale_free``) and ``group`` (the
    column naming the perturbation or data set, default ``perturbation``).
    """
    o = claim.options
    return _pairwise(claim, tables[o.get("table", "topolip_summary")],
                     o.get("measure", "geometric_mean_scale_free"),
                     o.get("group", "perturbation"), lower_is_claimed=True)


def smaller_accuracy_drop(claim: Claim, tables: Mapping[str, pd.DataFrame]) -> list[Verdict]:
    """Attention loses less accuracy to a perturbation, per family pair and perturbation.

    Option ``table``: a table with ``accuracy_drop`` per arch, seed and perturbation (default:
    derived from ``topolip``'s ``accuracy_clean - accuracy_perturbed``).
    """
    name = claim.options.get("table")
    if name is None:
        t = tables["topolip"]
        t = (t.groupby(["arch", "seed", "perturbation"], sort=False)
             [["accuracy_clean", "accuracy_perturbed"]].first().reset_index())
        t["accuracy_drop"] = t["accuracy_clean"] - t["accuracy_perturbed"]
    else:
        t = tables[name]
    return _pairwise(claim, t, "accuracy_drop", "perturbation", lower_is_claimed=True)


def higher_ood_auroc(claim: Claim, tables: Mapping[str, pd.DataFrame]) -> list[Verdict]:
    """Attention separates out-of-distribution inputs from test inputs better: a higher AUROC of
    the max-softmax confidence (``ood_behaviour``), per family pair and OOD set."""
    t = tables["ood_behaviour"].dropna(subset=["auroc"])
    return _pairwise(claim, t, "auroc", "dataset", lower_is_claimed=False)


def smoothness_predicts_robustness(claim: Claim,
                                   tables: Mapping[str, pd.DataFrame]) -> list[Verdict]:
    """Lower model TopoLip goes with a smaller accuracy drop: Spearman's ρ over all models and
    perturbations (``topolip_accuracy_correlations``, group ``all``) is positive at p < 0.05
    (supported), negative at p < 0.05 (contradicted), else inconclusive."""
    t = tables["topolip_accuracy_correlations"]
    out = []
    for row in t[t["group"] == "all"].itertuples():
        if row.pvalue < 0.05:
            verdict = "supported" if row.rho > 0 else "contradicted"
        else:
            verdict = "inconclusive"
        out.append(Verdict(claim.id, f"all perturbations: {row.measure}", verdict,
                           detail=f"Spearman rho = {row.rho:.3f}, p = {row.pvalue:.2g}, "
                                  f"n = {row.n}"))
    return out


def envelope_holds(claim: Claim, tables: Mapping[str, pd.DataFrame]) -> list[Verdict]:
    """Every paired row of ``topolip`` has ``bottleneck <= envelope`` (float32 slack 1e-5)."""
    t = tables["topolip"].dropna(subset=["envelope"])
    slack = 1e-5 * np.maximum(1.0, t["envelope"].abs())
    bad = t[t["bottleneck"] > t["envelope"] + slack]
    ratio = float((t["bottleneck"] / t["envelope"].where(t["envelope"] > 0)).max())
    return [Verdict(claim.id, f"{len(t)} layer rows", "contradicted" if len(bad) else "supported",
                    detail=f"largest bottleneck/envelope ratio {ratio:.3f}; violations: {len(bad)}")]


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
    >>> s = pd.DataFrame({"arch": ["vit", "vit", "resnet", "resnet"], "seed": [0, 1, 0, 1],
    ...                   "perturbation": "fgsm", "geometric_mean_scale_free": [1.0, 1.1, 2.0, 2.1]})
    >>> c = Claim("c", "attention is smoother", "test", "lower_topolip")
    >>> evaluate([c], {"topolip_summary": s})[["comparison", "verdict"]].values.tolist()
    [['vit vs resnet, fgsm: geometric_mean_scale_free', 'supported']]
    """
    rows = []
    for claim in claims:
        rows += [vars(v) for v in CHECKS[claim.check](claim, tables)]
    return pd.DataFrame(rows, columns=list(Verdict.__dataclass_fields__))
