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
    """The outcome of one check on one comparison (a pair of architectures, a perturbation)."""

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


def lower_topolip(claim: Claim, tables: Mapping[str, pd.DataFrame]) -> list[Verdict]:
    """Attention's model TopoLip (option ``measure``, a column of ``topolip_summary``) is lower
    than convolution's, per family pair and perturbation."""
    summary = tables["topolip_summary"]
    measure = claim.options.get("measure", "geometric_mean_scale_free")
    out = []
    for att, conv in FAMILY_PAIRS:
        for kind, part in summary.groupby("perturbation", sort=False):
            if att not in set(part["arch"]) or conv not in set(part["arch"]):
                continue
            out.append(_compare(claim.id, f"{att} vs {conv}, {kind}: {measure}",
                                part.loc[part["arch"] == att, measure],
                                part.loc[part["arch"] == conv, measure]))
    return out


def smaller_accuracy_drop(claim: Claim, tables: Mapping[str, pd.DataFrame]) -> list[Verdict]:
    """Attention's accuracy drop (clean minus perturbed, on the TopoLip batch) is smaller."""
    t = tables["topolip"]
    per_model = (t.groupby(["arch", "seed", "perturbation"], sort=False)
                 [["accuracy_clean", "accuracy_perturbed"]].first().reset_index())
    per_model["drop"] = per_model["accuracy_clean"] - per_model["accuracy_perturbed"]
    out = []
    for att, conv in FAMILY_PAIRS:
        for kind, part in per_model.groupby("perturbation", sort=False):
            if att not in set(part["arch"]) or conv not in set(part["arch"]):
                continue
            out.append(_compare(claim.id, f"{att} vs {conv}, {kind}: accuracy drop",
                                part.loc[part["arch"] == att, "drop"],
                                part.loc[part["arch"] == conv, "drop"]))
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
