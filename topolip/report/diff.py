"""What a change did to the conclusions: compare two results folders (``topolip diff A B``).

A results folder is ``results/<profile>/`` (or the ``data/<profile>/`` copy the published site
carries): ``tables/*.csv`` and ``glue.json`` (every number the book's prose glued, written by
the chain, :func:`topolip.pipeline.runner.write_glue`, and for the site by
:func:`topolip.pipeline.book.publish_results`). :func:`diff_results` reports

- the verdicts (``tables/verdicts.csv``) that changed, keyed on claim, comparison, group and
  measure (the measure only when both tables have the column, so an older table still compares):
  the decision (``verdict``), the interval (``low``, ``high``) and the p-values, over the
  columns both tables have (so a table with new columns, e.g. ``role`` or ``family``, still
  compares with an older one);
- the glued numbers that moved beyond a relative tolerance;
- the tables that differ: shape, columns, and how many numeric cells moved beyond the tolerance.

Torch-free (numpy and pandas only).
"""

from __future__ import annotations

import json
import math
import re
from dataclasses import dataclass, field
from pathlib import Path

import numpy as np
import pandas as pd

__all__ = ["ResultsDiff", "VerdictChange", "diff_results", "format_diff"]

#: The columns that identify one verdict row (``measure`` used only when both tables have it:
#: the secondaries of one claim at one pair and group differ by their measure alone).
VERDICT_KEY = ("claim", "comparison", "group", "measure")
#: The verdict's decision column; a change there is a changed conclusion.
DECISION = "verdict"
#: Numeric columns of a verdict reported when they move (those both tables have).
VERDICT_NUMBERS = ("effect", "low", "high", "pvalue", "p_adjusted", "ratio", "ratio_low",
                   "ratio_high", "n_excluded")
_NUMBER = re.compile(r"[-+]?(?:\d+\.?\d*|\.\d+)(?:[eE][-+]?\d+)?(?:×10[⁰¹²³⁴⁵⁶⁷⁸⁹⁻]+)?")
_SUPER = str.maketrans("⁰¹²³⁴⁵⁶⁷⁸⁹⁻", "0123456789-")


@dataclass(frozen=True)
class VerdictChange:
    """One verdict row of both folders (or of one: ``before``/``after`` is then ``None``).

    ``key`` is (claim, comparison, group, measure), the measure ``""`` when either table lacks
    the column; ``changed`` names the columns that moved (the decision first when it changed)."""

    key: tuple[str, str, str, str]
    before: dict | None
    after: dict | None
    changed: tuple[str, ...]

    @property
    def decision_changed(self) -> bool:
        """True when the row appeared, disappeared or its verdict changed."""
        return self.before is None or self.after is None or DECISION in self.changed


@dataclass(frozen=True)
class ResultsDiff:
    """What differs between results folders ``a`` and ``b`` (see :func:`diff_results`)."""

    a: str
    b: str
    rtol: float
    verdicts: list[VerdictChange] = field(default_factory=list)
    n_verdicts: int = 0
    glue: list[tuple[str, str, str]] = field(default_factory=list)
    tables: list[tuple[str, str]] = field(default_factory=list)
    n_tables_equal: int = 0
    #: The folders without a ``glue.json`` (the glued numbers are then not compared).
    no_glue: tuple[str, ...] = ()

    @property
    def verdict_changed(self) -> bool:
        """True when any verdict's decision changed, appeared or disappeared."""
        return any(v.decision_changed for v in self.verdicts)


def _tables_dir(folder: Path) -> Path:
    folder = Path(folder)
    if not folder.is_dir():
        raise FileNotFoundError(f"no results folder {folder}")
    return folder / "tables" if (folder / "tables").is_dir() else folder


def _same(x, y, rtol: float, atol: float) -> bool:
    if isinstance(x, float) and isinstance(y, float):
        if math.isnan(x) or math.isnan(y):
            return math.isnan(x) and math.isnan(y)
        return math.isclose(x, y, rel_tol=rtol, abs_tol=atol)
    return x == y


def _value(v):
    if isinstance(v, (int, float, np.integer, np.floating)) and not isinstance(v, bool):
        return float(v)
    return "" if v is None or (isinstance(v, float) and math.isnan(v)) else str(v)


def _read_verdicts(path: Path) -> pd.DataFrame:
    return pd.read_csv(path, keep_default_na=False, na_values=["", "nan", "NaN"])


def _verdict_rows(table: pd.DataFrame, by_measure: bool) -> dict[tuple, dict]:
    table = table.copy()
    for col in VERDICT_KEY:
        if col not in table:
            table[col] = ""
    rows: dict[tuple, dict] = {}
    for record in table.to_dict("records"):
        key = tuple("" if pd.isna(record[c]) or (c == "measure" and not by_measure)
                    else str(record[c]) for c in VERDICT_KEY)
        base, n = key, 1
        while key in rows:  # a repeated key keeps its order of appearance
            n += 1
            key = (*base[:2], f"{base[2]} #{n}", base[3])
        rows[key] = {k: _value(v) for k, v in record.items()}
    return rows


def _diff_verdicts(a: Path, b: Path, rtol: float, atol: float):
    pa, pb = a / "verdicts.csv", b / "verdicts.csv"
    if not (pa.exists() and pb.exists()):
        return [], 0
    ta, tb = _read_verdicts(pa), _read_verdicts(pb)
    by_measure = "measure" in ta and "measure" in tb
    ra, rb = _verdict_rows(ta, by_measure), _verdict_rows(tb, by_measure)
    changes = []
    for key in [*ra, *(k for k in rb if k not in ra)]:
        before, after = ra.get(key), rb.get(key)
        if before is None or after is None:
            changes.append(VerdictChange(key, before, after, ()))
            continue
        common = [c for c in before if c in after and c not in VERDICT_KEY]
        moved = [c for c in common if not _same(before[c], after[c], rtol, atol)]
        moved.sort(key=lambda c: c != DECISION)
        if moved:
            changes.append(VerdictChange(key, before, after, tuple(moved)))
    changes.sort(key=lambda c: not c.decision_changed)
    return changes, len(set(ra) | set(rb))


def _number(text: str) -> float | None:
    match = _NUMBER.search(str(text).replace("−", "-").replace(",", ""))
    if not match:
        return None
    token = match.group(0)
    if "×10" in token:
        mantissa, power = token.split("×10")
        return float(mantissa) * 10.0 ** int(power.translate(_SUPER))
    return float(token)


def _diff_glue(a: Path, b: Path, rtol: float, atol: float) -> list[tuple[str, str, str]]:
    ga, gb = a / "glue.json", b / "glue.json"
    if not (ga.exists() and gb.exists()):
        return []
    da, db = json.loads(ga.read_text()), json.loads(gb.read_text())
    moved = []
    for key in sorted(set(da) | set(db)):
        x, y = da.get(key), db.get(key)
        if x is None or y is None:
            moved.append((key, "-" if x is None else str(x), "-" if y is None else str(y)))
            continue
        nx, ny = _number(x), _number(y)
        if nx is None or ny is None:
            if str(x) != str(y):
                moved.append((key, str(x), str(y)))
        elif not _same(nx, ny, rtol, atol):
            moved.append((key, str(x), str(y)))
    return moved


def _texts(column: pd.Series) -> list[str]:
    return ["" if pd.isna(v) else str(v) for v in column]


def _diff_table(pa: Path, pb: Path, rtol: float, atol: float) -> str | None:
    ta, tb = pd.read_csv(pa), pd.read_csv(pb)
    notes = []
    if list(ta.columns) != list(tb.columns):
        gone = [c for c in ta.columns if c not in tb.columns]
        new = [c for c in tb.columns if c not in ta.columns]
        notes.append("columns" + (f" -{','.join(gone)}" if gone else "")
                     + (f" +{','.join(new)}" if new else "") + ("" if gone or new else
                                                              " reordered"))
    if len(ta) != len(tb):
        notes.append(f"rows {len(ta)} -> {len(tb)}")
    common = [c for c in ta.columns if c in tb.columns]
    n = min(len(ta), len(tb))
    xa, xb = ta[common].iloc[:n].reset_index(drop=True), tb[common].iloc[:n].reset_index(drop=True)
    numeric = [c for c in common if pd.api.types.is_numeric_dtype(xa[c])
               and pd.api.types.is_numeric_dtype(xb[c])]
    moved_cells, total, worst = 0, 0, None
    for c in numeric:
        va, vb = xa[c].to_numpy(float), xb[c].to_numpy(float)
        same = np.isclose(va, vb, rtol=rtol, atol=atol, equal_nan=True)
        total += len(va)
        moved_cells += int((~same).sum())
        if (~same).any():
            rel = np.abs(vb - va) / np.maximum(np.abs(va), atol)
            rel = np.where(same, -1.0, np.nan_to_num(rel, nan=np.inf))
            i = int(np.argmax(rel))
            if worst is None or rel[i] > worst[0]:
                worst = (rel[i], i, c, va[i], vb[i])
    if moved_cells:
        text = f"{moved_cells} of {total} numeric cells moved"
        if worst is not None:
            text += f" (most: row {worst[1]} {worst[2]} {worst[3]:.4g} -> {worst[4]:.4g})"
        notes.append(text)
    other = [c for c in common if c not in numeric]
    differ = sum(x != y for c in other
                 for x, y in zip(_texts(xa[c]), _texts(xb[c]), strict=True))
    if differ:
        notes.append(f"{differ} text cells differ")
    return "; ".join(notes) or None


def diff_results(a: str | Path, b: str | Path, *, rtol: float = 1e-3,
                 atol: float = 1e-12) -> ResultsDiff:
    """Compare results folders ``a`` (before) and ``b`` (after).

    Parameters
    ----------
    a, b : path
        A results folder (``results/<profile>``, holding ``tables/``) or a tables folder.
    rtol : float, default=1e-3
        Relative tolerance: a number moved when ``|b - a| > atol + rtol * |a|``.
    atol : float, default=1e-12
        Absolute tolerance (for numbers at zero).

    Returns
    -------
    ResultsDiff
        ``verdicts`` (changed decisions first, then rows whose numbers moved),
        ``glue`` as (key, before, after), ``tables`` as (file name, what differs).

    Raises
    ------
    FileNotFoundError
        If ``a`` or ``b`` is not a folder.
    ValueError
        If a tolerance is negative.

    Examples
    --------
    >>> import tempfile, pathlib
    >>> root = pathlib.Path(tempfile.mkdtemp())
    >>> for name, v in (("a", "supported"), ("b", "inconclusive")):
    ...     (root / name).mkdir()
    ...     _ = (root / name / "verdicts.csv").write_text(
    ...         f"claim,comparison,group,verdict,pvalue\\nsmooth,vit-resnet,fgsm,{v},0.01\\n")
    >>> d = diff_results(root / "a", root / "b")
    >>> d.verdict_changed, d.verdicts[0].changed
    (True, ('verdict',))
    """
    if rtol < 0 or atol < 0:
        raise ValueError(f"rtol and atol must be >= 0, got rtol={rtol}, atol={atol}")
    ta, tb = _tables_dir(Path(a)), _tables_dir(Path(b))
    verdicts, n_verdicts = _diff_verdicts(ta, tb, rtol, atol)
    glue = _diff_glue(Path(a), Path(b), rtol, atol)
    names_a = {p.name for p in ta.glob("*.csv")}
    names_b = {p.name for p in tb.glob("*.csv")}
    tables, equal = [], 0
    for name in sorted(names_a | names_b):
        if name not in names_b:
            tables.append((name, f"only in {a}"))
        elif name not in names_a:
            tables.append((name, f"only in {b}"))
        elif (note := _diff_table(ta / name, tb / name, rtol, atol)) is not None:
            tables.append((name, note))
        else:
            equal += 1
    no_glue = tuple(str(x) for x in (a, b) if not (Path(x) / "glue.json").exists())
    return ResultsDiff(str(a), str(b), rtol, verdicts, n_verdicts, glue, tables, equal,
                       no_glue)


def _fmt(v) -> str:
    if isinstance(v, float):
        return "nan" if math.isnan(v) else f"{v:.4g}"
    return str(v) if v != "" else "-"


def _describe(change: VerdictChange) -> str:
    claim, comparison, group, measure = change.key
    name = (f"{claim} / {comparison}" + (f" [{group}]" if group else "")
            + (f" ({measure})" if measure else ""))
    if change.before is None:
        return f"{name}: new, {change.after.get(DECISION, '?')}"
    if change.after is None:
        return f"{name}: removed (was {change.before.get(DECISION, '?')})"
    parts = []
    fields = list(change.changed)
    if DECISION in fields:
        parts.append(f"{change.before[DECISION]} -> {change.after[DECISION]}")
        fields.remove(DECISION)
    if "low" in change.before and "high" in change.before and (
            "low" in fields or "high" in fields):
        parts.append(f"interval [{_fmt(change.before['low'])}, {_fmt(change.before['high'])}]"
                     f" -> [{_fmt(change.after['low'])}, {_fmt(change.after['high'])}]")
        fields = [f for f in fields if f not in ("low", "high")]
    numbers = [f for f in fields if f in VERDICT_NUMBERS]
    for f in numbers:
        parts.append(f"{f} {_fmt(change.before[f])} -> {_fmt(change.after[f])}")
    rest = [f for f in fields if f not in numbers]
    if rest:
        parts.append("also " + ", ".join(rest))
    return f"{name}: " + "; ".join(parts)


def format_diff(diff: ResultsDiff) -> list[str]:
    """The report :func:`diff_results` gives, as lines of text (what ``topolip diff`` prints)."""
    lines = [f"topolip diff {diff.a} -> {diff.b} (relative tolerance {diff.rtol:g})"]
    decided = [v for v in diff.verdicts if v.decision_changed]
    moved = [v for v in diff.verdicts if not v.decision_changed]
    if diff.n_verdicts:
        lines.append(f"verdicts: {len(decided)} of {diff.n_verdicts} changed, {len(moved)} more "
                     "moved with the same decision")
        lines += [f"  {_describe(v)}" for v in decided]
        if moved:
            lines.append("  same decision, numbers moved:")
            lines += [f"    {_describe(v)}" for v in moved]
    else:
        lines.append("verdicts: verdicts.csv is missing from one folder or both")
    if diff.no_glue:
        lines.append("glued numbers: not compared (no glue.json in "
                     + " nor in ".join(diff.no_glue) + ")")
    elif diff.glue:
        lines.append(f"glued numbers: {len(diff.glue)} moved")
        lines += [f"  {k}: {x} -> {y}" for k, x, y in diff.glue]
    else:
        lines.append("glued numbers: none moved")
    lines.append(f"tables: {len(diff.tables)} differ, {diff.n_tables_equal} equal")
    lines += [f"  {name}: {note}" for name, note in diff.tables]
    return lines
