"""Registered external claims: the companion's machinery against results others published.

Each row of ``data/literature.yml`` names a published claim (authors, year, arXiv id, theorem or
figure), our setting beside theirs, and a consistency rule fixed before the run. A rule is a
function of one saved table (``results/<profile>/tables/<table>.csv``) and the row's ``params``;
it returns our number with its interval and one of :data:`VERDICTS`. Torch-free (evidence layer).

See Also
--------
The chapter ``10_literature`` ("Against the literature") evaluates every row.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Mapping, Sequence
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd
import yaml

from topolip import roster
from topolip.evidence.claims import FAMILY_PAIRS
from topolip.evidence.literature_topology import TOPOLOGY_RULES

__all__ = [
    "ROW_KINDS", "RULES", "VERDICTS", "evaluate_literature", "load_literature",
]

#: the three verdicts a row can have
VERDICTS = ("consistent", "inconsistent", "not comparable")
#: what a row tests: the companion's own machinery (bounds, attacks, confidence: a failure
#: puts the TopoLip verdicts that rest on it in doubt) or a published finding re-tested in our
#: setting (a failure is a result about these models, not about the tools)
ROW_KINDS = ("machinery", "finding")

_REQUIRED = ("id", "title", "source", "statement", "setting_theirs", "setting_ours", "rule",
             "rule_fn", "params", "table", "chapter", "kind")
_SOURCE_KEYS = ("authors", "year", "arxiv", "where")
#: a floor/ceiling of robust accuracy, as :data:`topolip.evidence.claims.ROBUST_FLOOR`
_FLOOR = 0.02


def load_literature(path: str | Path) -> list[dict]:
    """Read and validate the registry of external claims.

    Parameters
    ----------
    path : str or Path
        A YAML file with a top-level ``rows:`` list; each row has the keys ``id``, ``title``,
        ``source`` (mapping ``authors``, ``year``, ``arxiv``, ``where``), ``statement``,
        ``setting_theirs``, ``setting_ours``, ``rule``, ``rule_fn`` (a key of :data:`RULES`),
        ``params`` (mapping), ``table``, ``chapter``, ``kind`` (one of :data:`ROW_KINDS`) and
        optionally ``rival_of`` (an id).

    Returns
    -------
    list of dict
        The rows, in file order.

    Raises
    ------
    ValueError
        Naming the row and the key, on a missing or mistyped key, a duplicate id, an unknown
        ``rule_fn`` or a ``rival_of`` that names no row.
    """
    raw = yaml.safe_load(Path(path).read_text())
    if not isinstance(raw, dict) or not isinstance(raw.get("rows"), list):
        raise ValueError(f"{path}: expected a top-level 'rows:' list")
    rows, seen = [], set()
    for i, row in enumerate(raw["rows"]):
        if not isinstance(row, dict):
            raise ValueError(f"{path}: row {i} is not a mapping")
        name = row.get("id", f"#{i}")
        for key in _REQUIRED:
            if key not in row:
                raise ValueError(f"literature row {name!r}: missing key {key!r}")
        for key in ("id", "title", "statement", "setting_theirs", "setting_ours", "rule",
                    "table", "chapter"):
            if not isinstance(row[key], str) or not row[key].strip():
                raise ValueError(f"literature row {name!r}: key {key!r} must be a non-empty "
                                 f"string, got {row[key]!r}")
        if not isinstance(row["source"], dict):
            raise ValueError(f"literature row {name!r}: key 'source' must be a mapping")
        for key in _SOURCE_KEYS:
            if key not in row["source"]:
                raise ValueError(f"literature row {name!r}: key 'source.{key}' missing")
        if not isinstance(row["params"], dict):
            raise ValueError(f"literature row {name!r}: key 'params' must be a mapping")
        if row["kind"] not in ROW_KINDS:
            raise ValueError(f"literature row {name!r}: key 'kind' must be one of {ROW_KINDS}, "
                             f"got {row['kind']!r}")
        if row["rule_fn"] not in RULES:
            raise ValueError(f"literature row {name!r}: key 'rule_fn' names an unknown rule "
                             f"{row['rule_fn']!r}; known: {sorted(RULES)}")
        if name in seen:
            raise ValueError(f"literature row {name!r}: key 'id' duplicated")
        seen.add(name)
        rows.append(row)
    for row in rows:
        if "rival_of" in row and row["rival_of"] not in seen:
            raise ValueError(f"literature row {row['id']!r}: key 'rival_of' names no row "
                             f"({row['rival_of']!r})")
    return rows


def _result(our: float, low: float, high: float, verdict: str, reason: str) -> dict:
    if verdict not in VERDICTS or not reason:
        raise ValueError(f"bad rule result: verdict {verdict!r}, reason {reason!r}")
    return {"our_number": float(our), "low": float(low), "high": float(high),
            "verdict": verdict, "reason": reason}


def _t_interval(values: Sequence[float], level: float = 0.95) -> tuple[float, float, float]:
    """Mean of ``values`` with a Student-t interval (NaN bounds below 2 values)."""
    from scipy import stats

    v = np.asarray(values, dtype=float)
    v = v[np.isfinite(v)]
    if len(v) == 0:
        return math.nan, math.nan, math.nan
    m = float(v.mean())
    if len(v) < 2:
        return m, math.nan, math.nan
    half = float(stats.t.ppf(0.5 + level / 2, len(v) - 1) * v.std(ddof=1) / math.sqrt(len(v)))
    return m, m - half, m + half


def _slope(x: np.ndarray, y: np.ndarray) -> float:
    """Least-squares slope of log y on log x."""
    return float(np.polyfit(np.log(x), np.log(y), 1)[0])


def _model_slopes(t: pd.DataFrame, x: str, keys: list[str]) -> list[float]:
    out = []
    for _, g in t.groupby(keys):
        g = g[(g[x] > 0) & (g["measured"] > 0)]
        if g[x].nunique() >= 2:
            out.append(_slope(g[x].to_numpy(float), g["measured"].to_numpy(float)))
    return out


def _per_model_slopes(t: pd.DataFrame, x: str, within: list[str]) -> tuple[list[float], int]:
    """Each trained model's (``arch``, ``seed``) mean log-log slope of ``measured`` on ``x``
    over its units ``within`` (blocks or heads: they share the model's training, so the model
    is the unit of the interval), and the number of units fitted."""
    per_model, units = [], 0
    for _, g in t.groupby(["arch", "seed"]):
        slopes = _model_slopes(g, x, within)
        if slopes:
            per_model.append(float(np.mean(slopes)))
            units += len(slopes)
    return per_model, units


def _over_models(lo: float, hi: float, n_models: int, units: int, unit: str) -> str:
    """``"95% interval lo to hi over N models, U heads"`` (no interval from one model)."""
    span = (f"95% interval {lo:.3g} to {hi:.3g}" if math.isfinite(lo) and math.isfinite(hi)
            else "no interval")
    return (f"{span} over {n_models} model{'s' if n_models != 1 else ''}, {units} "
            f"{unit}{'s' if units != 1 else ''}")


def _violations(t: pd.DataFrame, bound_cols: Sequence[str], rtol: float) -> pd.DataFrame:
    bound = t[list(bound_cols)].min(axis=1)
    return t[t["measured"] > bound * (1 + rtol)]


def rule_attention_growth(t: pd.DataFrame, params: Mapping) -> dict:
    """Kim et al. (2021) Thm 3.1: the local constant grows with the input scale R, bound above.

    Parameters
    ----------
    t : DataFrame
        Columns ``arch seed block R measured bound``: one row per (model, attention block,
        scale R); ``measured`` the local Lipschitz estimate (a lower bound), ``bound`` ours.
    params : mapping
        ``rtol`` (default 1e-6): relative tolerance of the bound check.

    Returns
    -------
    dict
        ``our_number`` the mean over trained models of their blocks' mean log-log slope of
        measured on R (the model is the unit: its blocks share its training), with its 95%
        t-interval over the models; *consistent* when the interval's low end is > 0 (the mean
        itself with one model) and no bound is below its measured constant; *inconsistent*
        otherwise.
    """
    rtol = float(params.get("rtol", 1e-6))
    slopes, blocks = _per_model_slopes(t, "R", ["block"])
    m, lo, hi = _t_interval(slopes)
    bad = _violations(t, ["bound"], rtol)
    if len(bad):
        r = bad.iloc[0]
        return _result(m, lo, hi, "inconsistent",
                       f"{len(bad)} bound violation(s), e.g. {roster.label(r['arch'])} seed "
                       f"{r['seed']} block "
                       f"{r['block']} at R={r['R']:g}: measured {r['measured']:.4g} > bound "
                       f"{r['bound']:.4g}: our derivation is refuted")
    if not len(slopes):
        return _result(m, lo, hi, "not comparable", "no block has two scales R to fit a slope")
    grows = (lo if math.isfinite(lo) else m) > 0
    return _result(m, lo, hi, "consistent" if grows else "inconsistent",
                   f"slope {m:.3g} ({_over_models(lo, hi, len(slopes), blocks, 'block')}) "
                   f"{'grows' if grows else 'does not grow'} with R; every bound ≥ measured "
                   f"({len(t)} points)")


def rule_castin_real_tokens(t: pd.DataFrame, params: Mapping) -> dict:
    """Castin et al. (2024), real data: the local constant grows more slowly in n than the
    worst case's √n.

    Parameters
    ----------
    t : DataFrame
        Columns ``arch seed block head n measured``: one row per head and token count n;
        ``measured`` the median local constant over observed token sets, n tokens drawn from
        each (:func:`topolip.experiments.literature.castin_real_table`).
    params : mapping
        ``max_slope`` (default 0.5): the worst case's exponent in n; ``reported`` (default
        0.25): the exponent the source reports on real data, printed beside ours.

    Returns
    -------
    dict
        ``our_number`` the mean over trained models of their heads' mean log-log slope in n
        (the model is the unit: its heads share its training), with its 95% t-interval over
        the models; *consistent* when the interval's high end is below ``max_slope`` (real
        tokens grow more slowly than the worst case); *inconsistent* otherwise, or with one
        model (no interval); *not comparable* when no head has two token counts.
    """
    max_slope = float(params.get("max_slope", 0.5))
    reported = float(params.get("reported", 0.25))
    per_model, heads = _per_model_slopes(t, "n", ["block", "head"])
    m, lo, hi = _t_interval(per_model)
    if not per_model:
        return _result(m, lo, hi, "not comparable", "no head has two token counts n")
    ok = math.isfinite(hi) and hi < max_slope
    return _result(m, lo, hi, "consistent" if ok else "inconsistent",
                   f"log-log slope in n {m:.3g} "
                   f"({_over_models(lo, hi, len(per_model), heads, 'head')}) at their own "
                   "tokens, n ≤ "
                   f"{int(t['n'].max())}: {'below' if ok else 'not below'} the worst case's "
                   f"{max_slope:g}; the source reports about {reported:g} on real data")


def rule_castin_worst_case(t: pd.DataFrame, params: Mapping) -> dict:
    """Castin et al. (2024): at their worst-case input, measured <= min(our, their) bound.

    Parameters
    ----------
    t : DataFrame
        Columns ``arch seed block head n measured bound_ours bound_theirs``: one row per head
        and token count n; ``measured`` the local Lipschitz estimate at X0 = R u, Xi = R u / 2.
    params : mapping
        ``max_slope`` (default 0.5): their growth exponent in n (sqrt n); ``rtol`` (1e-6): the
        relative tolerance of the bound check and of the slope's comparison with
        ``max_slope`` (a fit of exact sqrt-n growth can land one ulp above 0.5).

    Returns
    -------
    dict
        ``our_number`` the mean over trained models of their heads' mean slope of log
        measured on log n (the model is the unit), with its 95% t-interval over the models;
        *inconsistent* on any bound violation or when the slope's low end (the mean itself
        with one model) exceeds ``max_slope``; else *consistent*.
    """
    rtol = float(params.get("rtol", 1e-6))
    max_slope = float(params.get("max_slope", 0.5))
    slopes, heads = _per_model_slopes(t, "n", ["block", "head"])
    m, lo, hi = _t_interval(slopes)
    bad = _violations(t, ["bound_ours", "bound_theirs"], rtol)
    if len(bad):
        r = bad.iloc[0]
        which = "ours" if r["measured"] > r["bound_ours"] * (1 + rtol) else "theirs"
        return _result(m, lo, hi, "inconsistent",
                       f"{len(bad)} violation(s) of "
                       + ("min(our, their) bound" if t["bound_theirs"].notna().any()
                          else "our bound (theirs not computed)") + ", e.g. "
                       f"{roster.label(r['arch'])} "
                       f"seed {r['seed']} head {r['head']} n={r['n']}: measured "
                       f"{r['measured']:.4g} above {which}")
    if not len(slopes):
        return _result(m, lo, hi, "not comparable", "no head has two token counts n")
    low = lo if math.isfinite(lo) else m
    ok = low <= max_slope * (1 + rtol)
    return _result(m, lo, hi, "consistent" if ok else "inconsistent",
                   f"no violation over {len(t)} (head, n) points; log-log slope in n {m:.3g} "
                   f"({_over_models(lo, hi, len(slopes), heads, 'head')}), "
                   f"{'within' if ok else 'above'} their exponent {max_slope:g}")


def rule_confidence_limit(t: pd.DataFrame, params: Mapping) -> dict:
    """Hein et al. (2019) Thm 3.1: ReLU nets' max-softmax confidence -> 1 as alpha -> inf.

    Parameters
    ----------
    t : DataFrame
        Columns ``arch seed alpha relu confidence``: mean max-softmax confidence of a model on
        test images scaled by ``alpha``; ``relu`` whether the model is piecewise affine.
    params : mapping
        ``threshold`` (default 0.99): the confidence the largest alpha must reach.

    Returns
    -------
    dict
        ``our_number`` the smallest confidence at the largest alpha over ReLU models;
        *consistent* when it is >= threshold; *not comparable* when no model is ReLU.
    """
    thr = float(params.get("threshold", 0.99))
    relu = t[t["relu"].astype(bool)]
    if not len(relu):
        return _result(math.nan, math.nan, math.nan, "not comparable",
                       "no piecewise-affine (ReLU) model: the theorem does not apply")
    top = relu[relu["alpha"] == relu["alpha"].max()]
    worst = top.loc[top["confidence"].idxmin()]
    c = float(worst["confidence"])
    ok = c >= thr
    return _result(c, c, float(top["confidence"].max()), "consistent" if ok else "inconsistent",
                   f"smallest confidence at α = {worst['alpha']:g} over "
                   f"{len(top)} ReLU models ({_labels(relu['arch'])}) is {c:.4f} "
                   f"{'≥' if ok else '<'} {thr:g}"
                   + ("" if ok else f" ({roster.label(worst['arch'])} seed {worst['seed']})"))


def robust_accuracy_from_radii(radii: pd.DataFrame, eps: float, method: str) -> pd.DataFrame:
    """Robust accuracy at ``eps`` per model from per-image minimal radii.

    An image counts as robust when it is classified correctly and no adversarial example was
    found within ``eps``: its radius (an upper bound on the minimal one) is > eps, or the
    search was censored at ``eps_max`` (no adversarial found, ``censored`` True).

    Returns
    -------
    DataFrame
        Columns ``arch seed n robust_accuracy eps_max``.
    """
    r = radii[radii["method"] == method]
    if not len(r):
        raise ValueError(f"radii: no rows of method {method!r}; have "
                         f"{sorted(radii['method'].unique())}")
    rob = r["clean_correct"].astype(bool) & (r["censored"].astype(bool) | (r["radius"] > eps))
    return (r.assign(robust=rob).groupby(["arch", "seed"], as_index=False)
            .agg(n=("robust", "size"), robust_accuracy=("robust", "mean"),
                 eps_max=("eps_max", "min")))


def rule_robust_at_eps(t: pd.DataFrame, params: Mapping) -> dict:
    """Croce & Hein (2020) / RobustBench: standard training, robust accuracy ~0 at eps.

    Parameters
    ----------
    t : DataFrame
        The ``radii`` table (``arch seed method radius censored clean_correct eps_max``).
    params : mapping
        ``eps`` (0.3, pixels in [0, 1]), ``max_accuracy`` (0.01), ``method`` ("autoattack",
        our APGD-CE + APGD-T, AutoAttack without FAB-T).

    Returns
    -------
    dict
        ``our_number`` the largest robust accuracy over models; *not comparable* when the
        radius search stopped below ``eps`` (``eps_max < eps``).
    """
    eps = float(params.get("eps", 0.3))
    cap = float(params.get("max_accuracy", 0.01))
    method = str(params.get("method", "autoattack"))
    acc = robust_accuracy_from_radii(t, eps, method)
    if (acc["eps_max"] < eps - 1e-12).any():
        return _result(math.nan, math.nan, math.nan, "not comparable",
                       f"radius search stops at ε = {acc['eps_max'].min():g} < ε = {eps:g}")
    worst = acc.loc[acc["robust_accuracy"].idxmax()]
    a = float(worst["robust_accuracy"])
    ok = a <= cap
    return _result(a, float(acc["robust_accuracy"].min()), a,
                   "consistent" if ok else "inconsistent",
                   f"largest robust accuracy (APGD-CE + APGD-T, AutoAttack without FAB-T) at "
                   f"ε = {eps:g} over {len(acc)} models is {a:.3f} "
                   f"({roster.label(worst['arch'])} seed "
                   f"{worst['seed']}) {'≤' if ok else '>'} {cap:g}")


def _smallest_free_eps(t: pd.DataFrame, a: str, b: str, floor: float) -> tuple[float, pd.DataFrame]:
    w = t.pivot_table(index=["seed", "eps"], columns="arch", values="robust_accuracy")
    w = w[[a, b]].dropna().reset_index()
    free = w[(w[a] > floor) & (w[a] < 1 - floor) & (w[b] > floor) & (w[b] < 1 - floor)]
    ok = free.groupby("eps")["seed"].nunique()
    ok = ok[(ok == w["seed"].nunique()) & (ok.index > 0)]
    if not len(ok):
        return math.nan, free.iloc[:0]
    eps = float(ok.index.min())
    return eps, free[free["eps"] == eps]


def rule_sign_at_smallest_eps(t: pd.DataFrame, params: Mapping) -> dict:
    """Bai et al. (2021) / Shao et al. (2022): sign of ViT - ResNet robust accuracy.

    Parameters
    ----------
    t : DataFrame
        The ``robust_curve`` table (``arch seed method eps robust_accuracy``).
    params : mapping
        ``a`` ("vit"), ``b`` ("resnet"), ``method`` ("autoattack"), ``floor`` (0.02, as
        ``ROBUST_FLOOR``), ``expect``: "parity" (consistent when the 95% t-interval over seeds
        of the paired difference holds 0) or "positive" (consistent when its low end is > 0).

    Returns
    -------
    dict
        ``our_number`` the mean paired difference a - b at the smallest eps > 0 where no seed
        of either is at a floor or ceiling; *not comparable* when no such eps exists.
    """
    a, b = (str(params.get(k, d)) for k, d in zip("ab", FAMILY_PAIRS[0], strict=True))
    floor = float(params.get("floor", _FLOOR))
    expect = str(params.get("expect", "parity"))
    if expect not in ("parity", "positive"):
        raise ValueError(f"sign_at_smallest_eps: expect must be 'parity' or 'positive', "
                         f"got {expect!r}")
    c = t[t["method"] == str(params.get("method", "autoattack"))]
    eps, free = _smallest_free_eps(c, a, b, floor)
    if not len(free):
        return _result(math.nan, math.nan, math.nan, "not comparable",
                       f"no eps > 0 where every seed of {roster.label(a)} and "
                       f"{roster.label(b)} is off the floor {floor:g}")
    d = (free[a] - free[b]).to_numpy(float)
    m, lo, hi = _t_interval(d)
    if not math.isfinite(lo):
        return _result(m, lo, hi, "not comparable", f"one seed at ε = {eps:g}: no interval")
    if expect == "parity":
        ok = lo <= 0 <= hi
        why = "holds 0 (parity)" if ok else "excludes 0 (no parity)"
    else:
        ok = lo > 0
        more = "more" if ok else "not more"
        why = f"{'above' if ok else 'not above'} 0 ({roster.label(a)} {more} robust)"
    return _result(m, lo, hi, "consistent" if ok else "inconsistent",
                   f"{roster.label(a)} − {roster.label(b)} at ε = {eps:.4g} over {len(d)} "
                   f"seeds: {m:+.3f} "
                   f"[{lo:+.3f}, {hi:+.3f}] {why}")


#: rule_fn name -> rule(table, params) -> dict(our_number, low, high, verdict, reason)
RULES: dict[str, Callable[[pd.DataFrame, Mapping], dict]] = {
    "attention_growth": rule_attention_growth,
    "castin_worst_case": rule_castin_worst_case,
    "castin_real_tokens": rule_castin_real_tokens,
    "confidence_limit": rule_confidence_limit,
    "robust_at_eps": rule_robust_at_eps,
    "sign_at_smallest_eps": rule_sign_at_smallest_eps,
    **TOPOLOGY_RULES,     # rows 3, 5, 6 (topolip.evidence.literature_topology)
}


def _labels(archs) -> str:
    """The architectures' names for a reason, in words (``ResNet, convolution stack``)."""
    return ", ".join(roster.label(a) for a in sorted(pd.unique(archs)))


def _source(s: Mapping[str, Any]) -> str:
    arxiv = f"arXiv:{s['arxiv']}" if str(s["arxiv"])[:1].isdigit() else "source not found"
    return f"{s['authors']} {s['year']}, {arxiv}, {s['where']}"


def evaluate_literature(tables: Mapping[str, pd.DataFrame],
                        rows: Sequence[Mapping]) -> pd.DataFrame:
    """Evaluate every registered external claim on the saved tables.

    Parameters
    ----------
    tables : mapping of str to DataFrame
        Saved tables by name (``results/<profile>/tables/<name>.csv``).
    rows : sequence of mapping
        Rows as :func:`load_literature` returns them.

    Returns
    -------
    DataFrame
        Columns ``id kind title source rule our_number low high verdict reason chapter
        rival_of`` (the id of the row this one is the registered rival of; empty if none).

    Raises
    ------
    KeyError
        On an unknown ``rule_fn`` or a table not in ``tables``, naming the row.
    """
    out = []
    for row in rows:
        if row["rule_fn"] not in RULES:
            raise KeyError(f"literature row {row['id']!r}: unknown rule_fn {row['rule_fn']!r}")
        if row["table"] not in tables:
            raise KeyError(f"literature row {row['id']!r}: table {row['table']!r} missing; "
                           f"have {sorted(tables)}")
        res = RULES[row["rule_fn"]](tables[row["table"]], row["params"])
        if res["verdict"] not in VERDICTS or not res.get("reason"):
            raise ValueError(f"literature row {row['id']!r}: rule gave {res!r}")
        out.append({"id": row["id"], "kind": row["kind"], "title": row["title"],
                    "source": _source(row["source"]),
                    "rule": row["rule"], **res, "chapter": row["chapter"],
                    "rival_of": row.get("rival_of", "")})
    return pd.DataFrame(out, columns=["id", "kind", "title", "source", "rule", "our_number",
                                      "low", "high", "verdict", "reason", "chapter",
                                      "rival_of"])
