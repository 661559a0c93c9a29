"""Presentation helpers for the book: glued numbers, readable tables, labels and colours.

Torch-free (numpy, pandas and IPython only; ``myst_nb`` is imported when a number is glued), so
that every notebook, figure and test can use the same labels, digits and palette.

The names, colours, markers and dash patterns are those of :mod:`topolip.roster`; the tables
here are read from it.
"""

from __future__ import annotations

import html
import math
import numbers
import re
from collections.abc import Mapping

import numpy as np
import pandas as pd

from topolip import roster

__all__ = [
    "ARCH_COLORS", "ARCH_DASHES", "ARCH_LABELS", "ARCH_MARKERS", "KIND_LABELS", "MISSING",
    "arch_label", "arch_ranking", "comparison_label", "format_interval", "format_value",
    "glue_all", "glue_number", "glue_text", "masking_check_label",
    "show_parameters", "show_table", "shown_kind",
]

#: Human names of the architectures (``arch`` values of every table), read from the roster.
ARCH_LABELS: dict[str, str] = {a.name: a.label for a in roster.ARCHS}

#: Human names of the perturbation kinds, out-of-distribution sets and labelled groups.
KIND_LABELS: dict[str, str] = {x.name: x.label
                               for x in (*roster.KINDS, *roster.OOD_SETS, *roster.GROUPS)}

#: Colour per architecture (:attr:`topolip.roster.Arch.color`).
ARCH_COLORS: dict[str, str] = {a.name: a.color for a in roster.ARCHS}

#: Line style per architecture (:attr:`topolip.roster.Arch.dashes`).
ARCH_DASHES: dict[str, tuple] = {a.name: a.dashes for a in roster.ARCHS}

#: Marker per architecture (:attr:`topolip.roster.Arch.marker`).
ARCH_MARKERS: dict[str, str] = {a.name: a.marker for a in roster.ARCHS}

#: The one spelling of a missing value in every table of the book.
MISSING = "—"



def arch_label(arch: str) -> str:
    """Human name of ``arch`` (``"vit"`` -> ``"ViT"``); :func:`topolip.roster.arch_label`.

    Raises
    ------
    KeyError
        Naming ``arch`` and the known architectures, if the roster lacks it.

    Examples
    --------
    >>> arch_label("conv_stack")
    'convolution stack'
    """
    return roster.arch_label(arch)


def arch_ranking(values: pd.Series, fmt: str = "{:.3g}", *, sep: str = " < ",
                 item: str = "{label} ({value})") -> str:
    """Architectures from the lowest value to the highest, as text.

    Parameters
    ----------
    values : pandas.Series
        Indexed by ``arch``; NaN values are left out.
    fmt : str, default="{:.3g}"
        Format of each value.
    sep : str, default=" < "
        Between two architectures.
    item : str, default="{label} ({value})"
        One architecture: ``label`` its human name, ``value`` its formatted value.

    Returns
    -------
    str
        ``"ViT (1.2) < ResNet (3.4)"``.

    Examples
    --------
    >>> arch_ranking(pd.Series({"resnet": 3.41, "vit": 1.2, "conv_stack": float("nan")}))
    'ViT (1.2) < ResNet (3.41)'
    >>> arch_ranking(pd.Series({"resnet": 0.9, "vit": 0.5}), "{:.2f}", sep=", ",
    ...              item="{label} {value}")
    'ViT 0.50, ResNet 0.90'
    """
    row = values.dropna().sort_values()
    return sep.join(item.format(label=arch_label(a), value=fmt.format(v))
                    for a, v in row.items())


def shown_kind(table: pd.DataFrame, kinds=None) -> str:
    """The perturbation kind a figure or sentence of a table with several kinds shows.

    Of ``kinds`` (default: the table's ``perturbation`` values, in order of appearance), the one
    with the smallest share of rows whose input displacement lies within the noise floor (a
    non-empty ``end_to_end_flag``), ties to the first: a kind whose rows are mostly within the
    floor reads ratios of sampling noise (07's sweeps under FGSM at the quick budget). Without
    an ``end_to_end_flag`` column, the first kind.

    Parameters
    ----------
    table : pandas.DataFrame
        Rows with a ``perturbation`` column (``sweeps.csv``, ``topolip_summary.csv``).
    kinds : sequence of str, optional
        The candidate kinds, in order of preference on ties.

    Returns
    -------
    str

    Raises
    ------
    ValueError
        If ``table`` has no ``perturbation`` column, or no row of any of ``kinds``.

    Examples
    --------
    >>> t = pd.DataFrame({"perturbation": ["fgsm", "fgsm", "gaussian_noise", "gaussian_noise"],
    ...                   "end_to_end_flag": ["input displacement within the noise floor", "",
    ...                                       None, ""]})
    >>> shown_kind(t), shown_kind(t.drop(columns="end_to_end_flag"))
    ('gaussian_noise', 'fgsm')
    """
    if "perturbation" not in table:
        raise ValueError("the table has no perturbation column")
    present = list(dict.fromkeys(table["perturbation"]))
    candidates = [k for k in (present if kinds is None else kinds) if k in present]
    if not candidates:
        raise ValueError(f"the table has no rows of the kinds {list(kinds or [])}; it has "
                         f"{present}")
    if "end_to_end_flag" not in table:
        return candidates[0]
    flagged = table["end_to_end_flag"].fillna("").astype(str).str.len() > 0
    share = flagged.groupby(table["perturbation"]).mean()
    return min(candidates, key=lambda k: (float(share[k]), candidates.index(k)))


def comparison_label(comparison: str, group: str) -> str:
    """Human name of a verdict's comparison within its group.

    Parameters
    ----------
    comparison : str
        ``"a vs b"`` of architecture names (``verdicts.csv``'s ``comparison``).
    group : str
        A perturbation kind or out-of-distribution set.

    Returns
    -------
    str
        The architectures' human names joined by ``" vs "``, a comma, the group's name.

    Examples
    --------
    >>> comparison_label("vit vs resnet", "gaussian_noise")
    'ViT vs ResNet, Gaussian noise'
    """
    # a comparison that is not of architectures (an association's) is shown as written
    return roster.pair_label(comparison) + ", " + roster.label(group)


def format_interval(value: float, low: float, high: float, fmt: str = "{:.3g}") -> str:
    """``"value [low, high]"``, each formatted with ``fmt``; the bare value when the interval
    is missing (NaN or None), and :data:`MISSING` when the value itself is.

    Parameters
    ----------
    value : float
        The point estimate.
    low, high : float
        The interval's ends.
    fmt : str, default="{:.3g}"
        A format string with one field.

    Returns
    -------
    str

    Examples
    --------
    >>> format_interval(0.1234, 0.05, 0.2)
    '0.123 [0.05, 0.2]'
    >>> format_interval(0.5, float("nan"), float("nan"), "{:+.2f}")
    '+0.50'
    >>> format_interval(float("nan"), 0.1, 0.2)
    '—'
    """
    if value is None or pd.isna(value):
        return MISSING
    if low is None or high is None or pd.isna(low) or pd.isna(high):
        return fmt.format(value)
    return f"{fmt.format(value)} [{fmt.format(low)}, {fmt.format(high)}]"


def format_value(value, digits: int = 3, *, grouping: bool = True) -> str:
    """Format one table cell for reading.

    Integers (and integral floats such as parameter counts read back as ``11114.0``) print as
    integers, with thousands separators from 10,000 (``79,690``; a four-digit number such as
    ``4000`` stays whole); other reals with ``digits`` significant digits in positional
    notation (``1240`` beside ``617``, never ``1.24e+03``), scientific only below 1e-4 or from
    1e7; NaN and None as :data:`MISSING`; booleans as yes / no; anything else with ``str``.

    Parameters
    ----------
    value : object
        The cell.
    digits : int, default=3
        Significant digits of non-integral reals (at least 1).
    grouping : bool, default=True
        Thousands separators from 10,000; ``False`` for a value a reader copies into a
        command (a parameter).

    Returns
    -------
    str

    Raises
    ------
    ValueError
        If ``digits`` is below 1.

    Examples
    --------
    >>> [format_value(v) for v in (11114.0, 617.43, 1243.7, 0.012345, float("nan"), True)]
    ['11,114', '617', '1240', '0.0123', '—', 'yes']
    >>> format_value(1329600), format_value(-54321.0), format_value(50000, grouping=False)
    ('1,329,600', '-54,321', '50000')
    >>> format_value(3.2e-6), format_value(-2.5, digits=2), format_value(float("inf"))
    ('3.20e-06', '-2.5', '∞')
    """
    if digits < 1:
        raise ValueError(f"digits must be at least 1, got {digits}")
    if value is None or value is pd.NA:
        return MISSING
    if isinstance(value, (bool, np.bool_)):
        return "yes" if value else "no"
    if isinstance(value, numbers.Integral):
        return _integer(int(value), grouping)
    if isinstance(value, numbers.Real):
        x = float(value)
        if math.isnan(x):
            return MISSING
        if math.isinf(x):
            return "∞" if x > 0 else "−∞"
        if x.is_integer() and abs(x) < 1e15:
            return _integer(int(x), grouping)
        if 1e-4 <= abs(x) < 1e7:
            text = np.format_float_positional(x, precision=digits, unique=False,
                                              fractional=False, trim="-")
            return _integer(int(text), grouping) if text.lstrip("-").isdigit() else text
        return f"{x:.{digits - 1}e}"
    if isinstance(value, (list, tuple)):
        return ", ".join(format_value(v, digits, grouping=grouping) for v in value)
    if isinstance(value, Mapping):
        return ", ".join(f"{k}={format_value(v, digits, grouping=grouping)}"
                         for k, v in value.items())
    return str(value)


def _integer(n: int, grouping: bool) -> str:
    return f"{n:,}" if grouping and abs(n) >= 10_000 else str(n)


_SUPERSCRIPT = str.maketrans("-0123456789", "⁻⁰¹²³⁴⁵⁶⁷⁸⁹")


def _no_e_notation(text: str) -> str:
    """``"1.44e+09"`` -> ``"1.44×10⁹"``; any other text unchanged."""
    try:
        float(text)
    except ValueError:
        return text
    if "e" not in text.lower():
        return text
    mantissa, exponent = text.lower().split("e")
    power = str(int(exponent)).translate(_SUPERSCRIPT)
    return f"10{power}" if mantissa in ("1", "+1") else f"{mantissa}×10{power}"


def glue_text(value, fmt: str = "{:.3g}") -> str:
    """The text :func:`glue_number` glues for ``value``: ``fmt`` applied, a NaN as
    :data:`MISSING`, scientific notation written with a power of ten.

    Parameters
    ----------
    value : object
        The number (or text).
    fmt : str, default="{:.3g}"
        A ``str.format`` pattern with one field.

    Returns
    -------
    str

    Examples
    --------
    >>> glue_text(0.98765, "{:.3f}"), glue_text(float("nan")), glue_text(1.44e9)
    ('0.988', '—', '1.44×10⁹')
    """
    if isinstance(value, numbers.Real) and not isinstance(value, bool) and math.isnan(value):
        return MISSING
    return _no_e_notation(fmt.format(value))


def glue_all(found: Mapping[str, str]) -> dict[str, str]:
    """Glue every text of ``found`` (glue key -> text, as a chapter's findings function of
    :mod:`topolip.report.findings` returns them) under its key, unchanged.

    Parameters
    ----------
    found : mapping of str to str
        Glue key -> the text to show (already formatted by :func:`glue_text`).

    Returns
    -------
    dict
        The glued texts by key (equal to ``found``).

    Raises
    ------
    ValueError
        If a key is empty or a value is not a string (format it with :func:`glue_text`).
    """
    out = {}
    for name, text in found.items():
        if not isinstance(text, str):
            raise ValueError(f"findings value {name!r} must be text (format it with glue_text); "
                             f"got {type(text).__name__}")
        out[name] = glue_number(name, text, "{}")
    return out


def glue_number(name: str, value, fmt: str = "{:.3g}") -> str:
    """Format ``value`` and glue the text under ``name`` for ``{glue:text}`` in the book.

    Parameters
    ----------
    name : str
        The glue key, e.g. ``"acc-vit"``; pages refer to it as ``{glue:text}`acc-vit``` (same
        notebook) or ``{glue:text}`notebooks/01_train.ipynb::acc-vit``` (another page).
    value : object
        The number (or text) to insert. A NaN prints as :data:`MISSING`.
    fmt : str, default="{:.3g}"
        A ``str.format`` pattern with one field.

    Returns
    -------
    str
        The glued text (so the same string can be asserted on or reused); scientific notation
        is written with a power of ten (``1.44×10⁹``).

    Raises
    ------
    ValueError
        If ``name`` is empty.

    Examples
    --------
    >>> glue_number("acc-example", 0.98765, "{:.3f}")  # doctest: +SKIP
    '0.988'
    >>> _no_e_notation("1.44e+09"), _no_e_notation("1e-05"), _no_e_notation("0.980")
    ('1.44×10⁹', '10⁻⁵', '0.980')
    """
    if not name:
        raise ValueError("name must be a non-empty glue key")
    text = glue_text(value, fmt)
    from myst_nb import glue  # only needed inside an executed notebook

    # glued as a str: its plain-text form is quoted, and myst-nb's {glue:text} strips the
    # quotes, so the text appears exactly as formatted here (trailing zeros kept)
    glue(name, text, display=False)
    return text


def _wrap(table_html: str, note: str | None = None) -> str:
    """Put a table in a box that scrolls sideways inside the page instead of clipping."""
    foot = f'<p class="topolip-note"><small>{html.escape(note)}</small></p>' if note else ""
    return ('<div class="topolip-table" style="overflow-x:auto;max-width:100%">'
            f"{table_html}{foot}</div>")


class _HTML:
    """Rich HTML output (what ``IPython.display.HTML`` gives, without importing IPython)."""

    def __init__(self, data: str):
        self.data = data

    def _repr_html_(self) -> str:
        return self.data

    def __repr__(self) -> str:
        return f"<table of {self.data.count('<tr')} rows>"


def show_table(df: pd.DataFrame, *, columns: Mapping[str, str] | None = None, digits: int = 3,
               caption: str | None = None, na_reason: str | None = None,
               value_labels: Mapping[str, Mapping] | None = None) -> _HTML:
    """A table for reading: human column labels, significant digits, no index, one NaN spelling.

    Parameters
    ----------
    df : pandas.DataFrame
        The table. A named or non-trivial index is turned into columns first.
    columns : mapping of str to str, optional
        Which columns to show, in this order, and their labels (``{"test_accuracy": "clean
        accuracy"}``). Default: every column, underscores replaced by spaces.
    digits : int, default=3
        Significant digits of non-integral reals (:func:`format_value`).
    caption : str, optional
        A caption above the table.
    na_reason : str, optional
        Why a value can be missing; printed as a footnote when the shown table has a missing
        value (spelled :data:`MISSING`).
    value_labels : mapping of column to mapping, optional
        Human names of cell values per column; by default the ``arch`` column is mapped
        through :data:`ARCH_LABELS`.

    Returns
    -------
    object
        Rich HTML output (``_repr_html_``) in a box that wraps long cells and scrolls sideways
        rather than clipping a wide table.

    Raises
    ------
    ValueError
        If ``columns`` names a column that ``df`` lacks, or ``digits`` is below 1.

    Examples
    --------
    >>> t = pd.DataFrame({"arch": ["vit", "resnet"], "parameters": [11114.0, 700.0],
    ...                   "test_accuracy": [0.98123, float("nan")]})
    >>> out = show_table(t, columns={"arch": "model", "parameters": "weights",
    ...                              "test_accuracy": "accuracy"}, na_reason="not trained")
    >>> "ViT" in out.data and "11,114" in out.data and "0.981" in out.data
    True
    >>> "—" in out.data and "not trained" in out.data and "11114.0" not in out.data
    True
    """
    if digits < 1:
        raise ValueError(f"digits must be at least 1, got {digits}")
    if df.index.name is not None or isinstance(df.index, pd.MultiIndex):
        df = df.reset_index()
    if columns is None:
        columns = {c: str(c).replace("_", " ") for c in df.columns}
    missing = [c for c in columns if c not in df.columns]
    if missing:
        raise ValueError(f"columns names {missing}, not in the table; it has {list(df.columns)}")
    labels = {"arch": ARCH_LABELS} if value_labels is None else dict(value_labels)
    shown = df[list(columns)].copy()
    for col, mapping in labels.items():
        if col in shown:
            shown[col] = shown[col].map(lambda v, m=mapping: m.get(v, v))
    text = shown.apply(lambda s: s.map(lambda v: format_value(v, digits))).astype(str)
    has_missing = (text == MISSING).to_numpy().any()
    text.columns = [columns[c] for c in shown.columns]
    numeric = [columns[c] for c in shown.columns if pd.api.types.is_numeric_dtype(shown[c])]
    styler = (text.style.hide(axis="index")
              .set_table_styles([
                  {"selector": "", "props": "border-collapse:collapse;font-size:0.9em"},
                  {"selector": "th", "props": "text-align:left;padding:2px 8px;"
                                              "border-bottom:1px solid #888"},
                  # words wrap between words, never inside one ("anywhere" let the
                  # browser squeeze a column to a letter's width on a phone); a table too
                  # wide for the page scrolls sideways in its box instead
                  {"selector": "td", "props": "padding:2px 8px;overflow-wrap:normal;"
                                              "word-break:normal;max-width:28em;"
                                              "vertical-align:top"},
              ]))
    if numeric:
        styler = styler.set_properties(subset=numeric, **{"text-align": "right",
                                                           "white-space": "nowrap"})
    if caption:
        styler = styler.set_caption(html.escape(caption))
    note = f"{MISSING}: {na_reason}" if (na_reason and has_missing) else None
    return _HTML(_wrap(_label_cells(styler.to_html(), list(text.columns)), note))


_DATA_CELL = re.compile(r'<td (id="[^"]*" )?(class="data row\d+ col(\d+)")')


def _label_cells(table_html: str, labels: list[str]) -> str:
    """Give every data cell its column's label (``data-label``), which the site's stacked
    layout shows beside the value when a table is too wide for its column
    (``topolip.pipeline.book.FIT_TABLES_JS``).

    >>> _label_cells('<td id="T_row0_col1" class="data row0 col1" >3</td>', ["a", "b & c"])
    '<td data-label="b &amp; c" id="T_row0_col1" class="data row0 col1" >3</td>'
    """
    def add(m: re.Match) -> str:
        label = html.escape(str(labels[int(m.group(3))]), quote=True)
        return f'<td data-label="{label}" {m.group(1) or ""}{m.group(2)}'

    return _DATA_CELL.sub(add, table_html)


def show_parameters(params: Mapping, *, caption: str = "Parameters of this run") -> _HTML:
    """A compact two-column table of the parameter values a page was computed with.

    Parameters
    ----------
    params : mapping
        Parameter name to value; lists and mappings are written on one line.
    caption : str, default="Parameters of this run"
        The caption above the table.

    Returns
    -------
    object
        Rich HTML output, as :func:`show_table`.

    Examples
    --------
    >>> out = show_parameters({"epochs": 8, "seeds": [0, 1], "vit": {"num_layers": 4}})
    >>> "num_layers=4" in out.data and "0, 1" in out.data
    True
    """
    rows = pd.DataFrame({"parameter": list(params),
                         "value": [format_value(v, digits=6, grouping=False)
                                   for v in params.values()]})
    return show_table(rows, columns={"parameter": "parameter", "value": "value"},
                      caption=caption, value_labels={})


def masking_check_label(check: str) -> str:
    """Human name of a gradient-masking check of :data:`topolip.evidence.masking.MASKING_CHECKS`.

    >>> masking_check_label("pgd_le_fgsm"), masking_check_label("monotone_eps_autoattack")
    ('PGD ≤ FGSM', 'APGD-CE + APGD-T: accuracy falls with ε')
    """
    from topolip import roster

    if check.startswith("monotone_eps_"):
        return f"{roster.label(check.removeprefix('monotone_eps_'))}: accuracy falls with ε"
    if "_le_" in check:
        a, b = check.split("_le_")
        return f"{roster.label(a)} ≤ {roster.label(b)}"
    return {"monotone_steps": "more PGD steps no weaker", "large_eps_to_zero": "large ε → 0",
            "black_box_weaker": "black box weaker", "all": "all checks"}.get(
                check, check.replace("_", " "))

