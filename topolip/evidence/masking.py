r"""Gradient-masking checks (Carlini et al. 2019) and the attack ladder at one budget; torch-free.

An attack evaluation is believable only if it passes the sanity checks of Carlini et al.
(2019, section 5): a model whose gradients are masked (obfuscated) looks robust to a gradient
attack without being robust. :func:`masking_checks` runs these checks on the accuracies of
``robustness.csv`` (:func:`topolip.experiments.robustness.attack_ladder`), per model:

============================  ===========================================================  =========
check                          value (accuracies in [0, 1] on the model's images)          passes if
============================  ===========================================================  =========
``monotone_eps_<attack>``      largest rise of accuracy from one ε to the next larger one  ≤ tol
                               (``fgsm``, ``pgd``, ``autoattack``)
``monotone_steps``             PGD with the most steps minus PGD with the fewest, at ε*    ≤ tol
``pgd_le_fgsm``                largest ``pgd − fgsm`` over the common ε > 0                 ≤ tol
``autoattack_le_pgd``          largest ``autoattack − pgd`` over the common ε > 0           ≤ tol
``large_eps_to_zero``          PGD accuracy at the large ε, minus ``zero``                  ≤ 0
``black_box_weaker``           ``autoattack − square`` at ε* (black-box must not win)       ≤ tol
``all``                        number of failed checks                                      = 0
============================  ===========================================================  =========

ε* is the TopoLip ε (``eps``); ``tol`` is the sampling ``tolerance`` and ``zero`` the
``zero_accuracy`` threshold. Every value is a *violation*: the amount by which the check's
inequality fails (negative or zero when it holds), so a reader sees how close a model came.

This module imports no torch: the checks are a function of a table, tested on hand-made ones.

References
----------
.. [1] N. Carlini, A. Athalye, N. Papernot, W. Brendel, J. Rauber, D. Tsipras, I. Goodfellow,
   A. Madry, A. Kurakin, "On Evaluating Adversarial Robustness", arXiv:1902.06705 (2019).
.. [2] A. Athalye, N. Carlini, D. Wagner, "Obfuscated Gradients Give a False Sense of
   Security", ICML 2018, arXiv:1802.00420.
"""

from __future__ import annotations

import math
import numbers
from collections.abc import Sequence

import numpy as np
import pandas as pd

from topolip import roster
from topolip.schema import require_columns

__all__ = ["MASKING_CHECKS", "ladder_table", "masking_checks", "masking_summary"]

#: The white-box attacks from weak to strong (:data:`topolip.roster.LADDER`).
_LADDER = roster.LADDER

#: The checks of :func:`masking_checks`, in the order of its rows (``all`` last).
MASKING_CHECKS: tuple[str, ...] = (
    *(f"monotone_eps_{a}" for a in _LADDER), "monotone_steps", "pgd_le_fgsm",
    "autoattack_le_pgd", "large_eps_to_zero", "black_box_weaker", "all",
)

_NEEDED = ("perturbation", "strength", "accuracy", "steps", "restarts")


def masking_checks(table: pd.DataFrame, *, eps: float, large_eps: float,
                   tolerance: float = 0.02, zero_accuracy: float = 0.05,
                   by: Sequence[str] = ("arch", "seed")) -> pd.DataFrame:
    r"""Carlini et al.'s gradient-masking checks of every model of an attack-accuracy table.

    Parameters
    ----------
    table : pandas.DataFrame
        Rows shaped as ``robustness.csv``: the ``by`` columns, ``perturbation``, ``strength``
        (ε, pixel units of [0, 1]), ``accuracy`` (in [0, 1]), ``steps`` and ``restarts``. Per
        model it must hold ``fgsm``, ``pgd`` and ``autoattack`` rows at two ε or more (ε = 0,
        the clean accuracy, counts), two PGD rows at ``eps`` with different ``steps`` (the
        steps check; the other is the ladder's), a PGD row at ``large_eps`` and a ``square``
        row at ``eps``. Other perturbations (corruptions) are ignored. Where a strength has
        several rows of one attack (more steps or restarts), the strongest run
        (``steps * restarts`` largest) is the one the other checks use.
    eps : float
        ε*, the TopoLip budget, where the steps and black-box checks are made.
    large_eps : float
        The large budget at which PGD must take the accuracy to about 0 (0.3 on MNIST, the
        budget of Madry et al.'s MNIST challenge, lets an attack grey out any stroke).
    tolerance : float, default=0.02
        Slack of every comparison of two accuracies, in accuracy units (0.02 is 4 of 200
        images). The attacks are random (random starts, final iterates), so a stronger attack
        can leave a few more images unfooled than a weaker one on the same images; masked
        gradients move accuracy by tens of points (Athalye et al. 2018).
    zero_accuracy : float, default=0.05
        The accuracy below which ``large_eps_to_zero`` passes: half the chance level of 10
        classes, so a model the large attack leaves guessing fails.
    by : sequence of str, default=("arch", "seed")
        The columns naming a model.

    Returns
    -------
    pandas.DataFrame
        One row per model and check of :data:`MASKING_CHECKS`, models in the table's order: the
        ``by``
        columns, ``check``, ``passed`` (bool), ``value`` (float: the violation, see the module
        docstring; for ``all`` the number of failed checks) and ``detail`` (the accuracies
        compared, in words; for ``all`` the failed checks or ``"all 8 checks pass"``).

    Raises
    ------
    ValueError
        If a column is missing, ``eps``, ``large_eps``, ``tolerance`` or ``zero_accuracy`` is
        not a finite number in [0, 1], or a model lacks the rows a check needs (the model and
        the missing rows are named).

    See Also
    --------
    masking_summary : the models that fail, one row each.
    topolip.experiments.robustness.robustness_trained : the per-model task that measures the rows.

    References
    ----------
    .. [1] N. Carlini et al., "On Evaluating Adversarial Robustness", arXiv:1902.06705,
       section 5 and appendix (checklist).

    Examples
    --------
    >>> rows = [("fgsm", 0.0, 0.9, 1, 1), ("fgsm", 0.1, 0.5, 1, 1),
    ...         ("pgd", 0.0, 0.9, 20, 2), ("pgd", 0.1, 0.3, 20, 2), ("pgd", 0.1, 0.35, 5, 1),
    ...         ("pgd", 0.3, 0.0, 5, 1), ("autoattack", 0.0, 0.9, 20, 1),
    ...         ("autoattack", 0.1, 0.25, 20, 1), ("square", 0.1, 0.6, 500, 1)]
    >>> t = pd.DataFrame(rows, columns=["perturbation", "strength", "accuracy", "steps",
    ...                                 "restarts"]).assign(arch="vit", seed=0)
    >>> m = masking_checks(t, eps=0.1, large_eps=0.3)
    >>> m[["check", "passed"]].values[[3, 4, 8]].tolist()
    [['monotone_steps', True], ['pgd_le_fgsm', True], ['all', True]]
    >>> t.loc[t["perturbation"] == "square", "accuracy"] = 0.1   # black box beats APGD
    >>> masking_checks(t, eps=0.1, large_eps=0.3)["detail"].iloc[-1]
    'fails: black_box_weaker'
    """
    by = list(by)
    require_columns(table, (*by, *_NEEDED), "table")
    eps = _check_fraction(eps, "eps")
    large_eps = _check_fraction(large_eps, "large_eps")
    tolerance = _check_fraction(tolerance, "tolerance")
    zero_accuracy = _check_fraction(zero_accuracy, "zero_accuracy")
    rows = []
    for key, model in table.groupby(by, sort=False):
        key = key if isinstance(key, tuple) else (key,)
        name = dict(zip(by, key, strict=True))
        model = model[model["perturbation"].isin([*_LADDER, "square"])]
        if model.empty:
            raise ValueError(f"model {name} has no attack rows (fgsm, pgd, autoattack, "
                             "square); the checks need the attack ladder")
        checks = _model_checks(model, name, eps, large_eps, tolerance, zero_accuracy)
        failed = [c for c, ok, _, _ in checks if not ok]
        checks.append(("all", not failed, float(len(failed)),
                       f"fails: {', '.join(failed)}" if failed
                       else f"all {len(checks)} checks pass"))
        rows += [{**name, "check": c, "passed": bool(ok), "value": float(v), "detail": d}
                 for c, ok, v, d in checks]
    out = pd.DataFrame(rows, columns=[*by, "check", "passed", "value", "detail"])
    out["passed"] = out["passed"].astype(bool)
    return out


def masking_summary(checks: pd.DataFrame, *, by: Sequence[str] = ("arch", "seed")
                    ) -> pd.DataFrame:
    """The models that fail a gradient-masking check, one row each.

    Parameters
    ----------
    checks : pandas.DataFrame
        :func:`masking_checks`' table (``masking.csv``), with the ``by`` columns, ``check``,
        ``passed`` and ``detail``.
    by : sequence of str, default=("arch", "seed")
        The columns naming a model.

    Returns
    -------
    pandas.DataFrame
        The ``by`` columns and ``failed`` (the failed checks, comma-separated), one row per
        flagged model, in the table's order; empty (same columns) when every model passes.

    Raises
    ------
    ValueError
        If a column is missing or a model has no ``all`` row.

    Examples
    --------
    >>> c = pd.DataFrame({"arch": ["vit"] * 2 + ["resnet"] * 2, "seed": [0] * 4,
    ...                   "check": ["pgd_le_fgsm", "all"] * 2,
    ...                   "passed": [False, False, True, True],
    ...                   "detail": ["", "fails: pgd_le_fgsm", "", "all 1 checks pass"]})
    >>> masking_summary(c).values.tolist()
    [['vit', 0, 'pgd_le_fgsm']]
    """
    by = list(by)
    require_columns(checks, (*by, "check", "passed"), "checks")
    out = []
    for key, model in checks.groupby(by, sort=False):
        key = key if isinstance(key, tuple) else (key,)
        if not (model["check"] == "all").any():
            raise ValueError(f"model {dict(zip(by, key, strict=True))} has no 'all' row")
        failed = model[(model["check"] != "all") & ~model["passed"].astype(bool)]["check"]
        if len(failed):
            out.append({**dict(zip(by, key, strict=True)), "failed": ", ".join(failed)})
    return pd.DataFrame(out, columns=[*by, "failed"])


def _check_fraction(value: float, name: str) -> float:
    if isinstance(value, bool) or not isinstance(value, numbers.Real) \
            or not math.isfinite(value) or not 0 <= value <= 1:
        raise ValueError(f"{name} must be a finite number in [0, 1], got {value!r}")
    return float(value)


def _strongest(rows: pd.DataFrame) -> pd.Series:
    """Accuracy per strength of one attack: the run with the most ``steps * restarts``."""
    rows = rows.assign(_work=rows["steps"].astype(float) * rows["restarts"].astype(float),
                       _eps=rows["strength"].astype(float).round(12))
    best = rows.sort_values("_work", kind="stable").groupby("_eps").tail(1)
    return best.set_index("_eps")["accuracy"].astype(float).sort_index()


def _at(series: pd.Series, eps: float) -> float | None:
    hit = [v for e, v in series.items() if math.isclose(e, eps, rel_tol=1e-9, abs_tol=1e-12)]
    return hit[0] if hit else None


def _model_checks(model: pd.DataFrame, name: dict, eps: float, large_eps: float,
                  tol: float, zero: float) -> list[tuple[str, bool, float, str]]:
    def need(what: str):
        raise ValueError(f"model {name}: {what}")

    curves = {a: _strongest(model[model["perturbation"] == a]) for a in (*_LADDER, "square")}
    out = []
    for attack in _LADDER:
        acc = curves[attack]
        if len(acc) < 2:
            need(f"{attack} needs rows at two strengths or more for monotone_eps_{attack}, "
                 f"got {len(acc)}")
        rises = np.diff(acc.to_numpy())
        i = int(np.argmax(rises))
        worst = float(rises[i])
        out.append((f"monotone_eps_{attack}", worst <= tol, worst,
                    f"largest rise {worst:+.3f}: eps {acc.index[i]:g} -> {acc.index[i + 1]:g}, "
                    f"accuracy {acc.iloc[i]:.3f} -> {acc.iloc[i + 1]:.3f}"))
    pgd = model[model["perturbation"] == "pgd"]
    at_eps = pgd[np.isclose(pgd["strength"].astype(float), eps, rtol=1e-9, atol=1e-12)]
    if at_eps["steps"].nunique() < 2:
        need(f"monotone_steps needs two PGD rows at eps {eps:g} with different steps, got "
             f"steps {sorted(at_eps['steps'].tolist())}")
    few = at_eps.loc[at_eps["steps"].astype(float).idxmin()]
    many = at_eps.loc[(at_eps["steps"].astype(float) * at_eps["restarts"].astype(float))
                      .idxmax()]
    gap = float(many["accuracy"]) - float(few["accuracy"])
    out.append(("monotone_steps", gap <= tol, gap,
                f"eps {eps:g}: PGD-{int(few['steps'])} x{int(few['restarts'])} "
                f"{float(few['accuracy']):.3f}, PGD-{int(many['steps'])} "
                f"x{int(many['restarts'])} {float(many['accuracy']):.3f}"))
    for weak, strong in (("fgsm", "pgd"), ("pgd", "autoattack")):
        common = [e for e in curves[strong].index if e > 0 and _at(curves[weak], e) is not None]
        if not common:
            need(f"{strong}_le_{weak} needs {weak} and {strong} at a common eps > 0")
        gaps = [(curves[strong][e] - _at(curves[weak], e), e) for e in common]
        gap, e = max(gaps)
        out.append((f"{strong}_le_{weak}", gap <= tol, float(gap),
                    f"largest {strong} - {weak} {gap:+.3f} at eps {e:g} ({strong} "
                    f"{curves[strong][e]:.3f}, {weak} {_at(curves[weak], e):.3f})"))
    big = _at(curves["pgd"], large_eps)
    if big is None:
        need(f"large_eps_to_zero needs a pgd row at large_eps {large_eps:g}")
    out.append(("large_eps_to_zero", big <= zero, float(big - zero),
                f"PGD accuracy {big:.3f} at eps {large_eps:g} (threshold {zero:g})"))
    sq, aa = _at(curves["square"], eps), _at(curves["autoattack"], eps)
    if sq is None or aa is None:
        need(f"black_box_weaker needs square and autoattack rows at eps {eps:g}")
    gap = aa - sq
    out.append(("black_box_weaker", gap <= tol, float(gap),
                f"eps {eps:g}: square {sq:.3f}, autoattack {aa:.3f}"))
    return out


def ladder_table(curves: pd.DataFrame, eps: float, *,
                 attacks: Sequence[str] = (*_LADDER, "square"),
                 masking: pd.DataFrame | None = None) -> pd.DataFrame:
    """The attack ladder at one budget: accuracy per architecture and attack over the seeds.

    Parameters
    ----------
    curves : pandas.DataFrame
        ``robustness.csv``: ``arch``, ``seed``, ``perturbation``, ``strength``, ``accuracy``,
        ``accuracy_drop``.
    eps : float
        The budget (the TopoLip ε), pixel units of [0, 1].
    attacks : sequence of str, default=("fgsm", "pgd", "autoattack", "square")
        The attacks, in the order of the rows (weak to strong, then the black box).
    masking : pandas.DataFrame, optional
        :func:`masking_checks`' table; when given, ``n_flagged`` counts the models of the row
        that fail a check.

    Returns
    -------
    pandas.DataFrame
        One row per architecture (in the table's order) and attack: ``arch``, ``perturbation``,
        ``n_models``, ``accuracy_mean``, ``accuracy_sd`` (over seeds; NaN for one seed),
        ``accuracy_drop_mean`` and ``n_flagged`` (0 without ``masking``).

    Raises
    ------
    ValueError
        If a column is missing, ``eps`` is not in [0, 1], or an attack has no row at ``eps``.

    Examples
    --------
    >>> c = pd.DataFrame({"arch": ["vit"] * 4, "seed": [0, 0, 1, 1],
    ...                   "perturbation": ["fgsm", "pgd"] * 2, "strength": [0.1] * 4,
    ...                   "accuracy": [0.5, 0.3, 0.7, 0.5], "accuracy_drop": [0.4, 0.6, 0.2, 0.4]})
    >>> ladder_table(c, 0.1, attacks=["fgsm", "pgd"])[["perturbation", "accuracy_mean"]
    ...                                                ].values.tolist()
    [['fgsm', 0.6], ['pgd', 0.4]]
    """
    require_columns(curves, ["arch", "seed", "perturbation", "strength", "accuracy",
                             "accuracy_drop"], "curves")
    eps = _check_fraction(eps, "eps")
    at = curves[np.isclose(curves["strength"].astype(float), eps, rtol=1e-9, atol=1e-12)]
    flagged: set = set()
    if masking is not None:
        summary = masking_summary(masking)
        flagged = set(zip(summary["arch"], summary["seed"], strict=True))
    rows = []
    for arch in dict.fromkeys(curves["arch"]):
        for attack in attacks:
            part = at[(at["arch"] == arch) & (at["perturbation"] == attack)]
            if part.empty:
                raise ValueError(f"no {attack} row of {arch} at eps {eps:g}; the attacks at "
                                 f"that eps: {sorted(set(at['perturbation']))}")
            acc = part["accuracy"].astype(float)
            rows.append({"arch": arch, "perturbation": attack, "n_models": len(part),
                         "accuracy_mean": float(acc.mean()),
                         "accuracy_sd": float(acc.std(ddof=1)) if len(part) > 1 else np.nan,
                         "accuracy_drop_mean": float(part["accuracy_drop"].astype(float).mean()),
                         "n_flagged": sum((arch, s) in flagged for s in part["seed"])})
    return pd.DataFrame(rows)
