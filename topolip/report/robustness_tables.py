"""The display tables of ``04_robustness``: the attack ladder
(:func:`topolip.evidence.masking.ladder_table`), the gradient-masking checks
(``tables/masking.csv``) and the smoothness-robustness association
(``tables/smoothness.csv``), put into the columns and words a reader sees.

Each function returns a plain :class:`pandas.DataFrame` whose column names are the labels
:func:`topolip.report.format.show_table` prints and whose architectures are already in words,
so the notebook only adds the caption. Torch-free.
"""

from __future__ import annotations

import pandas as pd

from topolip.evidence.masking import MASKING_CHECKS
from topolip.report.format import masking_check_label
from topolip.roster import label
from topolip.schema import require_columns

__all__ = ["attack_ladder_table", "masking_table", "smoothness_tau_table"]


def _shown(rows: pd.DataFrame, columns: dict[str, str], what: str) -> pd.DataFrame:
    """``rows``' ``columns`` in their order, renamed to their labels, ``arch`` in words."""
    require_columns(rows, list(columns), what)
    out = rows[list(columns)].reset_index(drop=True)
    if "arch" in out:
        out["arch"] = out["arch"].map(label)
    return out.rename(columns=columns)


def attack_ladder_table(ladder: pd.DataFrame) -> pd.DataFrame:
    """Accuracy per architecture and rung of the attack ladder at the TopoLip budget.

    Parameters
    ----------
    ladder : pandas.DataFrame
        :func:`topolip.evidence.masking.ladder_table`: ``arch``, ``perturbation``,
        ``n_models``, ``accuracy_mean``, ``accuracy_sd``, ``accuracy_drop_mean``,
        ``n_flagged``; accuracies in [0, 1].

    Returns
    -------
    pandas.DataFrame
        ``model``, ``attack`` (in words), ``seeds``, ``accuracy (mean)``, ``s.d. over seeds``
        (NaN for one seed), ``accuracy drop (mean)``, ``seeds failing a masking check``.

    Raises
    ------
    ValueError
        If ``ladder`` lacks one of those columns.

    Examples
    --------
    >>> ladder = pd.DataFrame({"arch": ["vit"], "perturbation": ["fgsm"], "n_models": [1],
    ...     "accuracy_mean": [0.4], "accuracy_sd": [float("nan")],
    ...     "accuracy_drop_mean": [0.5], "n_flagged": [0]})
    >>> attack_ladder_table(ladder).iloc[0, :2].tolist()
    ['ViT', 'FGSM']
    """
    out = _shown(ladder, {"arch": "model", "perturbation": "attack", "n_models": "seeds",
                          "accuracy_mean": "accuracy (mean)",
                          "accuracy_sd": "s.d. over seeds",
                          "accuracy_drop_mean": "accuracy drop (mean)",
                          "n_flagged": "seeds failing a masking check"}, "the attack ladder")
    out["attack"] = out["attack"].map(label)
    return out


def masking_table(masking: pd.DataFrame) -> pd.DataFrame:
    """The gradient-masking checks (Carlini et al. 2019), one row per model.

    Parameters
    ----------
    masking : pandas.DataFrame
        ``tables/masking.csv`` (:func:`topolip.evidence.masking.masking_checks`): ``arch``,
        ``seed``, ``check`` (one of :data:`~topolip.evidence.masking.MASKING_CHECKS`),
        ``passed`` (bool), one row per model and check.

    Returns
    -------
    pandas.DataFrame
        ``model``, ``seed``, then one column per check present (its human name, in
        :data:`~topolip.evidence.masking.MASKING_CHECKS` order) holding ``pass`` or ``FAIL``.

    Raises
    ------
    ValueError
        If ``masking`` lacks one of those columns.

    Examples
    --------
    >>> masking = pd.DataFrame({"arch": ["vit", "vit"], "seed": [0, 0],
    ...     "check": ["monotone_eps_autoattack", "pgd_le_fgsm"], "passed": [True, False]})
    >>> masking_table(masking).values.tolist()  # the checks in MASKING_CHECKS order
    [['ViT', 0, 'pass', 'FAIL']]
    """
    require_columns(masking, ["arch", "seed", "check", "passed"], "the masking checks")
    order = [c for c in MASKING_CHECKS if c in set(masking["check"])]
    grid = (masking.assign(result=masking["passed"].map({True: "pass", False: "FAIL"}))
            .pivot(index=["arch", "seed"], columns="check", values="result")[order]
            .reset_index())
    return _shown(grid, {"arch": "model", "seed": "seed",
                         **{c: masking_check_label(c) for c in order}}, "the masking checks")


def smoothness_tau_table(smooth: pd.DataFrame) -> pd.DataFrame:
    """Kendall τ between end-to-end scale-free TopoLip and robustness, per level and kind.

    Parameters
    ----------
    smooth : pandas.DataFrame
        ``tables/smoothness.csv`` (:func:`topolip.evidence.claims.smoothness_table`):
        ``level``, ``group`` (a perturbation kind, or ``"pooled"``), ``response`` (e.g.
        ``accuracy_drop``), ``role``, ``n``, ``tau``, ``pvalue``, ``p_adjusted``.

    Returns
    -------
    pandas.DataFrame
        ``level``, ``perturbation`` (in words; ``all kinds`` for the pooled row),
        ``response`` (in words), ``role``, ``observations``, ``Kendall τ``,
        ``permutation p``, ``deciding p (Holm for secondaries)``.

    Raises
    ------
    ValueError
        If ``smooth`` lacks one of those columns.

    Examples
    --------
    >>> smooth = pd.DataFrame({"level": ["within"] * 2, "group": ["pooled", "fgsm"],
    ...     "response": ["accuracy_drop"] * 2, "role": ["primary", "secondary"], "n": [6, 6],
    ...     "tau": [0.2, 0.1], "pvalue": [0.3, 0.5], "p_adjusted": [0.3, 1.0]})
    >>> smoothness_tau_table(smooth)[["perturbation", "response"]].values.tolist()
    [['all kinds', 'accuracy drop'], ['FGSM', 'accuracy drop']]
    """
    out = _shown(smooth, {"level": "level", "group": "perturbation", "response": "response",
                          "role": "role", "n": "observations", "tau": "Kendall τ",
                          "pvalue": "permutation p",
                          "p_adjusted": "deciding p (Holm for secondaries)"},
                 "the smoothness table")
    out["response"] = out["response"].str.replace("_", " ")
    out["perturbation"] = out["perturbation"].map(
        lambda g: "all kinds" if g == "pooled" else label(g))
    return out
