"""The display tables of ``02_topolip`` and ``03_compare``: the per-layer TopoLip table's
noise-floor flags (``tables/topolip.csv``) and the model-level TopoLip per architecture
(``tables/topolip_summary.csv``), put into the columns and words a reader sees.

Each function returns a plain :class:`pandas.DataFrame` whose column names are the labels
:func:`topolip.report.format.show_table` prints and whose architectures and perturbation kinds
are already in words, so the notebook only adds the caption. The ratios' labels hold
underscores (``Δ_L / Δ_0``), which ``show_table`` turns into spaces unless given the columns
as they are. Torch-free.
"""

from __future__ import annotations

import numpy as np
import pandas as pd

from topolip.roster import label
from topolip.schema import require_columns

__all__ = ["architecture_means_table", "noise_floor_share_table"]

#: the model-level ratios averaged on the log scale (geometric means over seeds), with their
#: column labels
_RATIOS = {"end_to_end_scale_free": "Δˢᶠ_L / Δˢᶠ_0 (primary)", "end_to_end": "Δ_L / Δ_0 (raw)",
           "geometric_mean_scale_free": "scale-free geometric mean"}


def noise_floor_share_table(table: pd.DataFrame) -> pd.DataFrame:
    """Share of layer ratios whose denominator lies within the noise floor.

    Parameters
    ----------
    table : pandas.DataFrame
        ``tables/topolip.csv``: ``arch``, ``perturbation``, ``depth`` (0 is the input, which
        has no ratio), ``flag`` (empty for a ratio off the floor).

    Returns
    -------
    pandas.DataFrame
        ``architecture`` (in words, in the table's order), then one column per perturbation
        kind (in words): the share in [0, 1] of the layers ``depth > 0`` flagged, over all
        seeds.

    Raises
    ------
    ValueError
        If ``table`` lacks one of those columns.

    Examples
    --------
    >>> t = pd.DataFrame({"arch": ["vit"] * 3, "perturbation": ["fgsm"] * 3,
    ...                   "depth": [0, 1, 2], "flag": ["", "noise floor", ""]})
    >>> noise_floor_share_table(t)
      architecture  FGSM
    0          ViT   0.5
    """
    require_columns(table, ["arch", "perturbation", "depth", "flag"], "the TopoLip table")
    share = (table[table["depth"] > 0].assign(flagged=lambda t: t["flag"] != "")
             .groupby(["arch", "perturbation"], sort=False)["flagged"].mean().unstack())
    share.index = [label(a) for a in share.index]
    share.columns = [label(c) for c in share.columns]
    return share.reset_index(names="architecture")


def architecture_means_table(summary: pd.DataFrame, table: pd.DataFrame) -> pd.DataFrame:
    """Model-level TopoLip per perturbation kind and architecture: geometric means over seeds.

    Parameters
    ----------
    summary : pandas.DataFrame
        ``tables/topolip_summary.csv``: ``perturbation``, ``arch``, ``seed`` and the positive
        ratios ``end_to_end_scale_free``, ``end_to_end``, ``geometric_mean_scale_free``.
    table : pandas.DataFrame
        ``tables/topolip.csv`` (``arch``, ``depth``), for each architecture's number of
        probed layers ``L`` (its deepest probe; depth 0 is the input).

    Returns
    -------
    pandas.DataFrame
        ``perturbation``, ``architecture`` (both in words, in the table's order), the three
        ratios' geometric means over seeds (labelled ``Δˢᶠ_L / Δˢᶠ_0 (primary)``,
        ``Δ_L / Δ_0 (raw)``, ``scale-free geometric mean``), ``L`` and ``seeds``.

    Raises
    ------
    ValueError
        If either table lacks one of those columns.

    Examples
    --------
    >>> s = pd.DataFrame({"perturbation": ["fgsm"] * 2, "arch": ["vit"] * 2, "seed": [0, 1],
    ...                   "end_to_end_scale_free": [1.0, 4.0], "end_to_end": [2.0, 8.0],
    ...                   "geometric_mean_scale_free": [1.0, 1.0]})
    >>> t = pd.DataFrame({"arch": ["vit"] * 3, "depth": [0, 1, 4]})
    >>> means = architecture_means_table(s, t)
    >>> means.iloc[0, :2].tolist(), means.iloc[0, 2:5].astype(float).tolist()
    (['FGSM', 'ViT'], [2.0, 4.0, 1.0])
    >>> int(means["L"].iloc[0])
    4
    """
    ratios = list(_RATIOS)
    require_columns(summary, ["perturbation", "arch", "seed", *ratios], "the TopoLip summary")
    require_columns(table, ["arch", "depth"], "the TopoLip table")
    depth = table.groupby("arch")["depth"].max().rename("L")
    merged = summary.merge(depth, on="arch")
    logged = merged.assign(**{c: np.log(merged[c]) for c in ratios})
    means = (logged.groupby(["perturbation", "arch"], sort=False)
             .agg(**{c: (c, "mean") for c in ratios}, L=("L", "first"),
                  seeds=("seed", "nunique"))
             .reset_index())
    means[ratios] = np.exp(means[ratios])
    means["perturbation"] = means["perturbation"].map(label)
    means["arch"] = means["arch"].map(label)
    return means.rename(columns={"arch": "architecture", **_RATIOS})
