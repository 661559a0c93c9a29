"""The display tables of ``09_measures``: ``tables/measure_study.csv`` and
``tables/measure_granulated.csv`` (what :func:`topolip.evidence.measures.measure_study`
computes) put into the columns and words a reader sees.

Each function returns a plain :class:`pandas.DataFrame` whose column names are the labels
:func:`topolip.report.format.show_table` prints, so the notebook only adds the caption.
Torch-free.
"""

from __future__ import annotations

import pandas as pd

from topolip.report.format import format_interval
from topolip.roster import label
from topolip.schema import require_columns

__all__ = ["granulated_table", "kind_table", "primary_table"]


def primary_table(study: pd.DataFrame) -> pd.DataFrame:
    """The primary rows of the measure study: each measure's τ, averaged over kinds.

    Parameters
    ----------
    study : pandas.DataFrame
        ``tables/measure_study.csv``; its rows with ``role == "primary"`` are shown.

    Returns
    -------
    pandas.DataFrame
        One row per measure: ``measure`` (its human name), ``τ within arch.``,
        ``p (permutation)``, ``p (Holm)``, ``τ pooled (confounded)``, ``τ(TopoLip) −
        τ(measure)`` (the difference with its Holm interval, signed, two decimals; missing
        for TopoLip itself), ``p of Δτ (Holm)``, ``verdict``.

    Raises
    ------
    ValueError
        If ``study`` lacks a column it needs.

    Examples
    --------
    >>> study = pd.DataFrame({"role": ["primary", "primary", "secondary"],
    ...     "label": ["TopoLip", "weight norm", "TopoLip"], "tau_within": [0.5, 0.2, 0.4],
    ...     "p_within": [0.01, 0.2, 0.02], "p_within_holm": [0.01, 0.4, 0.02],
    ...     "tau_pooled": [0.6, 0.1, 0.5], "diff": [float("nan"), 0.3, float("nan")],
    ...     "diff_low": [float("nan"), 0.05, float("nan")],
    ...     "diff_high": [float("nan"), 0.55, float("nan")],
    ...     "p_diff_holm": [float("nan"), 0.03, float("nan")],
    ...     "comparison": ["", "TopoLip better", ""]})
    >>> primary_table(study)["τ(TopoLip) − τ(measure)"].tolist()
    ['—', '+0.30 [+0.05, +0.55]']
    """
    columns = {"label": "measure", "tau_within": "τ within arch.", "p_within": "p (permutation)",
               "p_within_holm": "p (Holm)", "tau_pooled": "τ pooled (confounded)",
               "diff": "τ(TopoLip) − τ(measure)", "p_diff_holm": "p of Δτ (Holm)",
               "comparison": "verdict"}
    require_columns(study, ["role", *columns, "diff_low", "diff_high"], "the measure study")
    rows = study[study["role"] == "primary"].reset_index(drop=True)
    rows["diff"] = [format_interval(d, lo, hi, "{:+.2f}")
                    for d, lo, hi in zip(rows["diff"], rows["diff_low"], rows["diff_high"],
                                         strict=True)]
    return rows[list(columns)].rename(columns=columns)


def kind_table(study: pd.DataFrame) -> pd.DataFrame:
    """Within-architecture τ per measure (rows) and perturbation kind (columns).

    Parameters
    ----------
    study : pandas.DataFrame
        ``tables/measure_study.csv``; its ``role == "secondary"`` rows (one per measure and
        kind) are shown.

    Returns
    -------
    pandas.DataFrame
        ``measure`` (human name, in the study's order), then one column per perturbation kind
        (its human name, in the study's order) holding ``tau_within``.

    Raises
    ------
    ValueError
        If ``study`` lacks a column it needs.

    Examples
    --------
    >>> study = pd.DataFrame({"role": ["secondary"] * 2, "label": ["TopoLip"] * 2,
    ...                       "perturbation": ["gaussian_noise", "fgsm"],
    ...                       "tau_within": [0.4, 0.1]})
    >>> kind_table(study).columns.tolist()
    ['measure', 'Gaussian noise', 'FGSM']
    """
    require_columns(study, ["role", "label", "perturbation", "tau_within"], "the measure study")
    wide = study[study["role"] == "secondary"].pivot_table(
        index="label", columns="perturbation", values="tau_within", sort=False)
    wide.columns = [label(c) for c in wide.columns]
    return wide.reset_index(names="measure")


def granulated_table(granulated: pd.DataFrame, study: pd.DataFrame) -> pd.DataFrame:
    """Granulated Kendall τ (Jiang et al. 2020) per measure and architecture family.

    Parameters
    ----------
    granulated : pandas.DataFrame
        ``tables/measure_granulated.csv``: ``measure``, ``arch``, ``perturbation``, ``tau``
        (one row per swept axis; a missing ``tau`` is an axis with too few models).
    study : pandas.DataFrame
        ``tables/measure_study.csv``, for the measures' human names (``measure``, ``label``).

    Returns
    -------
    pandas.DataFrame
        ``measure`` (human name), then one column per architecture family (its human name):
        the mean over the family's axes of τ, averaged over the perturbation kinds. Empty (no
        rows) when the run swept nothing.

    Raises
    ------
    ValueError
        If either table lacks a column it needs.

    Examples
    --------
    >>> gran = pd.DataFrame({"measure": ["e2e"] * 3, "arch": ["vit"] * 3,
    ...                      "perturbation": ["fgsm", "fgsm", "pgd"], "tau": [0.2, 0.4, 0.0]})
    >>> granulated_table(gran, pd.DataFrame({"measure": ["e2e"], "label": ["TopoLip"]}))
       measure   ViT
    0  TopoLip  0.15
    """
    require_columns(granulated, ["measure", "arch", "perturbation", "tau"],
                    "the granulated table")
    require_columns(study, ["measure", "label"], "the measure study")
    labels = dict(zip(study["measure"], study["label"], strict=True))
    fam = (granulated.dropna(subset=["tau"]).groupby(["measure", "arch", "perturbation"])["tau"]
           .mean().groupby(["measure", "arch"]).mean().unstack("arch"))
    fam.index = [labels.get(m, m) for m in fam.index]
    fam.columns = [label(a) for a in fam.columns]
    return fam.reset_index(names="measure")
