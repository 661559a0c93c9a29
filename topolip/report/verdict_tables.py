"""The display tables of ``08_verdict``: the rows of ``tables/verdicts.csv`` (what
:func:`topolip.evidence.claims.evaluate` decides) put into the columns and words a reader sees.

Each function returns a plain :class:`pandas.DataFrame` whose column names are the labels
:func:`topolip.report.format.show_table` prints (it replaces nothing in them: they hold no
underscore), so the notebook only adds the caption. Numbers stay numbers; only the effect and
its interval become text, in one place (:func:`effect_cells`). Torch-free.
"""

from __future__ import annotations

import pandas as pd

from topolip.report.format import comparison_label, format_interval
from topolip.roster import claim_title, measure_label
from topolip.schema import require_columns

__all__ = ["effect_cells", "every_row_table", "ladder_table", "primary_table"]

#: the rows of the ladder table: the robustness claim's rungs and radii, and the rival claim's
#: changes from the strong to the weak attack
LADDER_GROUPS = ("fgsm", "pgd", "autoattack", "fgsm vs autoattack", "fgsm vs pgd",
                 "autoattack_radius", "pgd_radius", "fgsm_radius",
                 "fgsm_radius vs autoattack_radius", "fgsm_radius vs pgd_radius")
_LADDER_CLAIMS = ("attention-more-robust", "attention-helps-only-weak")

_EFFECT = ("scale", "ratio", "ratio_low", "ratio_high", "effect", "low", "high")
_NAMED = ("claim", "comparison", "group")


def effect_cells(rows: pd.DataFrame, difference_format: str = "{:.3g}") -> list[str]:
    """Each row's effect with the interval its verdict uses, as text.

    Parameters
    ----------
    rows : pandas.DataFrame
        Rows of ``verdicts.csv``: ``scale`` (``"log"`` for a ratio), ``ratio``,
        ``ratio_low``, ``ratio_high``, ``effect``, ``low``, ``high``.
    difference_format : str, default="{:.3g}"
        The format of a difference (a row off the log scale); a ratio is always ``{:.3g}``.

    Returns
    -------
    list of str
        One cell per row, ``"value [low, high]"``
        (:func:`topolip.report.format.format_interval`): the ratio attention / convolution
        for a log-scale row, the difference otherwise.

    Raises
    ------
    ValueError
        If ``rows`` lacks one of those columns.

    Examples
    --------
    >>> rows = pd.DataFrame({"scale": ["log", "difference"], "ratio": [1.5, float("nan")],
    ...                      "ratio_low": [1.2, float("nan")], "ratio_high": [1.9, float("nan")],
    ...                      "effect": [0.405, -0.12], "low": [0.18, -0.2], "high": [0.64, -0.04]})
    >>> effect_cells(rows)
    ['1.5 [1.2, 1.9]', '-0.12 [-0.2, -0.04]']
    >>> effect_cells(rows, "{:+.3f}")[1]
    '-0.120 [-0.200, -0.040]'
    >>> effect_cells(rows.assign(effect=[0.405, -3.47e-18], low=-0.02, high=0.02))[1]
    '0 [-0.02, 0.02]'
    """
    require_columns(rows, _EFFECT, "the verdict rows")
    return [format_interval(r, rl, rh) if s == "log"
            else format_interval(_rounding_zero(e), lo, hi, difference_format)
            for s, r, rl, rh, e, lo, hi in zip(*(rows[c] for c in _EFFECT), strict=True)]


def _rounding_zero(x: float) -> float:
    """0 for a difference that is zero but for floating-point rounding (a mean of paired
    accuracy differences such as ``-3.5e-18``), so the table does not print the artefact."""
    return 0.0 if abs(x) < 1e-12 else x


def _named(rows: pd.DataFrame) -> pd.DataFrame:
    """``rows`` with the claim's title and the comparison in words (``"ViT vs ResNet, FGSM"``)."""
    require_columns(rows, _NAMED, "the verdict rows")
    out = rows.copy()
    out["comparison"] = [comparison_label(c, g)
                         for c, g in zip(out["comparison"], out["group"], strict=True)]
    out["claim"] = out["claim"].map(claim_title)
    return out


def _shown(rows: pd.DataFrame, columns: dict[str, str]) -> pd.DataFrame:
    """``rows``' ``columns`` in their order, renamed to their labels."""
    require_columns(rows, list(columns), "the verdict rows")
    return rows[list(columns)].rename(columns=columns).reset_index(drop=True)


def primary_table(verdicts: pd.DataFrame, power: pd.DataFrame) -> pd.DataFrame:
    """The one primary comparison of each claim, with the power of its design.

    Parameters
    ----------
    verdicts : pandas.DataFrame
        ``tables/verdicts.csv``; its rows with ``role == "primary"`` are shown.
    power : pandas.DataFrame
        :func:`topolip.evidence.calibration.power_table` of the same verdicts: ``claim``,
        ``comparison``, ``group``, ``text`` (the minimum detectable effect in words) and
        ``power_at_target``.

    Returns
    -------
    pandas.DataFrame
        One row per primary: ``claim``, ``verdict`` (second, so a phone shows it without
        scrolling sideways), ``comparison``, ``effect (95% interval)``, ``p``, ``pairs``,
        ``dropped``, ``detectable (80% power)``, ``power at target``.

    Raises
    ------
    ValueError
        If either table lacks a column it needs.
    """
    require_columns(power, ["claim", "comparison", "group", "text", "power_at_target"],
                    "the power table")
    rows = verdicts[verdicts["role"] == "primary"].merge(
        power[["claim", "comparison", "group", "text", "power_at_target"]],
        on=["claim", "comparison", "group"], how="left")
    rows = _named(rows)
    rows["effect (95% interval)"] = effect_cells(rows)
    return _shown(rows, {"claim": "claim", "verdict": "verdict", "comparison": "comparison",
                         "effect (95% interval)": "effect (95% interval)", "p_adjusted": "p",
                         "n_pairs": "pairs", "n_excluded": "dropped",
                         "text": "detectable (80% power)",
                         "power_at_target": "power at target"})


def ladder_table(verdicts: pd.DataFrame) -> pd.DataFrame:
    """Robustness along the attack ladder and the rival claim's rows.

    Parameters
    ----------
    verdicts : pandas.DataFrame
        ``tables/verdicts.csv``; the rows of *attention is more robust* and *self-attention
        helps only against weak attacks* whose group is in :data:`LADDER_GROUPS` are shown.

    Returns
    -------
    pandas.DataFrame
        ``claim``, ``verdict``, ``role``, ``comparison``, ``effect (interval)`` (a difference
        signed, ``{:+.3f}``), ``coverage``, ``deciding p``, ``flag``.

    Raises
    ------
    ValueError
        If ``verdicts`` lacks a column it needs.
    """
    rows = verdicts[verdicts["claim"].isin(_LADDER_CLAIMS)
                    & verdicts["group"].isin(LADDER_GROUPS)]
    rows = _named(rows)
    rows["effect (interval)"] = effect_cells(rows, "{:+.3f}")
    return _shown(rows, {"claim": "claim", "verdict": "verdict", "role": "role",
                         "comparison": "comparison", "effect (interval)": "effect (interval)",
                         "coverage": "coverage", "p_adjusted": "deciding p", "flag": "flag"})


def every_row_table(verdicts: pd.DataFrame) -> pd.DataFrame:
    """Every decided row of every claim (the envelope's checks aside).

    Parameters
    ----------
    verdicts : pandas.DataFrame
        ``tables/verdicts.csv``; rows with ``role == "check"`` are left out.

    Returns
    -------
    pandas.DataFrame
        ``claim``, ``verdict``, ``role``, ``comparison``, ``measure`` (in words),
        ``effect (interval)``, ``coverage``, ``deciding p``, ``pairs / obs.``, ``dropped``.

    Raises
    ------
    ValueError
        If ``verdicts`` lacks a column it needs.
    """
    rows = _named(verdicts[verdicts["role"] != "check"])
    rows["measure"] = rows["measure"].map(measure_label)
    rows["effect (interval)"] = effect_cells(rows)
    return _shown(rows, {"claim": "claim", "verdict": "verdict", "role": "role",
                         "comparison": "comparison", "measure": "measure",
                         "effect (interval)": "effect (interval)", "coverage": "coverage",
                         "p_adjusted": "deciding p", "n_pairs": "pairs / obs.",
                         "n_excluded": "dropped"})
