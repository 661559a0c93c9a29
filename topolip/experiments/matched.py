"""The accuracy-matched pair of ``04_robustness`` (issue 25, "accuracy held fixed").

A larger minimal radius may only say that a model learned its task better. So, per seed, the
more accurate model of a compared pair (by the validation accuracy of its chosen epoch) is also
measured at the epoch of its own training whose validation accuracy is nearest the other
model's: :func:`accuracy_matched_epochs` picks that epoch from ``training.csv``,
:func:`matched_radii_trained` measures its radii from the weights the run kept
(:func:`topolip.nets.checkpoints.save_epoch`), and :func:`matched_summary` gives the table the
claims read (``radius_matched.csv``).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

import pandas as pd

from topolip.roster import MATCHED_GROUP_SUFFIX
from topolip.schema import frame, require_columns

__all__ = ["accuracy_matched_epochs", "matched_radii_trained", "matched_summary"]


def accuracy_matched_epochs(models: pd.DataFrame, training: pd.DataFrame,
                            pair: Sequence[str], *, kept: Any = None) -> pd.DataFrame:
    """Per seed of ``pair``: the epoch of the more accurate model nearest the other in accuracy.

    For each seed where both architectures of ``pair`` were trained, the one whose chosen
    epoch has the higher validation accuracy is matched *down*: of its epochs (those ``kept``
    says have weights), the one whose validation accuracy is nearest the other model's chosen
    epoch (ties: the earliest). The other model stays at its chosen epoch.

    Parameters
    ----------
    models : pandas.DataFrame
        ``models.csv``: ``arch``, ``seed``, ``val_accuracy``, ``best_epoch``, ``checkpoint``.
    training : pandas.DataFrame
        ``training.csv``: ``arch``, ``seed``, ``epoch``, ``val_accuracy`` (one row per epoch).
    pair : (str, str)
        The architectures compared (attention-based, convolution-based).
    kept : callable, optional
        ``kept(checkpoint, epoch) -> bool``: whether that epoch's weights exist (default: the
        file :func:`topolip.nets.checkpoints.epoch_path` names exists).

    Returns
    -------
    pandas.DataFrame
        One row per matched seed: ``arch`` (the model matched down), ``seed``, ``epoch``,
        ``val_accuracy`` (of that epoch), ``best_epoch`` and ``best_val_accuracy`` (its chosen
        epoch), ``matched_to`` (the other architecture), ``target_val_accuracy`` (its chosen
        epoch's), ``checkpoint``. A seed with no kept epoch is left out (so the table may be
        empty); a seed with equal accuracies is matched at the chosen epoch.

    Raises
    ------
    ValueError
        If a column is missing, ``pair`` is not two architectures, or a model lacks a
        validation accuracy (trained without a validation split).

    Examples
    --------
    >>> models = pd.DataFrame({"arch": ["vit", "resnet"], "seed": [0, 0],
    ...                        "val_accuracy": [0.95, 0.99], "best_epoch": [9, 8],
    ...                        "checkpoint": ["v.pt", "r.pt"]})
    >>> training = pd.DataFrame({"arch": ["resnet"] * 4, "seed": [0] * 4,
    ...                          "epoch": [1, 2, 3, 8], "val_accuracy": [0.5, 0.94, 0.96, 0.99]})
    >>> m = accuracy_matched_epochs(models, training, ("vit", "resnet"), kept=lambda c, e: True)
    >>> m[["arch", "epoch", "val_accuracy", "matched_to", "target_val_accuracy"]].values.tolist()
    [['resnet', 2, 0.94, 'vit', 0.95]]
    """
    from topolip.nets.checkpoints import epoch_path

    require_columns(models, ["arch", "seed", "val_accuracy", "best_epoch", "checkpoint"],
                    "models (tables/models.csv)")
    require_columns(training, ["arch", "seed", "epoch", "val_accuracy"],
                    "training (tables/training.csv)")
    if len(pair) != 2 or pair[0] == pair[1]:
        raise ValueError(f"pair must name two architectures, got {pair!r}")
    kept = kept if kept is not None else (lambda c, e: epoch_path(c, e).exists())
    rows = []
    by = {(str(r.arch), int(r.seed)): r for r in models.itertuples(index=False)}
    for seed in sorted({s for a, s in by if a == pair[0]} & {s for a, s in by if a == pair[1]}):
        a, b = by[(pair[0], seed)], by[(pair[1], seed)]
        if any(pd.isna(m.val_accuracy) for m in (a, b)):
            raise ValueError(f"seed {seed}: a model of {pair} has no validation accuracy "
                             "(trained without a validation split); nothing to match on")
        hi, lo = (a, b) if float(a.val_accuracy) > float(b.val_accuracy) else (b, a)
        target = float(lo.val_accuracy)
        h = training[(training["arch"] == hi.arch) & (training["seed"] == seed)]
        h = h[[bool(kept(hi.checkpoint, int(e))) for e in h["epoch"]]]
        if float(a.val_accuracy) == float(b.val_accuracy):
            h = h[h["epoch"] == int(hi.best_epoch)]
        if not len(h):
            continue
        gap = (h["val_accuracy"].astype(float) - target).abs()
        best = h.loc[gap.sort_values(kind="stable").index[0]]  # ties: the earliest epoch
        rows.append({"arch": hi.arch, "seed": seed, "epoch": int(best["epoch"]),
                     "val_accuracy": float(best["val_accuracy"]),
                     "best_epoch": int(hi.best_epoch), "best_val_accuracy": float(hi.val_accuracy),
                     "matched_to": lo.arch, "target_val_accuracy": target,
                     "checkpoint": hi.checkpoint})
    cols = ["arch", "seed", "epoch", "val_accuracy", "best_epoch", "best_val_accuracy",
            "matched_to", "target_val_accuracy", "checkpoint"]
    return pd.DataFrame(rows, columns=cols)


def matched_radii_trained(model, row: Mapping, **radii_kwargs: Any) -> pd.DataFrame:
    """The per-model task of the matched pair: load the weights of ``row["epoch"]`` kept for
    ``row["checkpoint"]`` into ``model`` (eval mode) and measure its radii by
    :func:`topolip.experiments.radii.radii_trained` (``radii_kwargs``: ``data``, ``n_images``,
    ``eps_max``, ...), on the same images as the seed's other models.

    Raises
    ------
    FileNotFoundError, ValueError
        As :func:`topolip.nets.checkpoints.read_epoch` (no kept weights, a damaged file).
    """
    from topolip.experiments.radii import radii_trained
    from topolip.nets.checkpoints import epoch_path, load_weights, read_epoch

    state = read_epoch(row["checkpoint"], int(row["epoch"]))
    load_weights(epoch_path(row["checkpoint"], int(row["epoch"])), model, state["model"])
    model.eval()
    return radii_trained(model, row, **radii_kwargs)


def matched_summary(radii: pd.DataFrame | None, matched: pd.DataFrame) -> pd.DataFrame:
    """``radius_matched.csv``: :func:`topolip.experiments.radii.radius_summary` of the matched
    models' radii with their epoch and the accuracies matched (the columns of
    :func:`accuracy_matched_epochs`, less ``checkpoint``), ``group`` suffixed
    :data:`topolip.roster.MATCHED_GROUP_SUFFIX`, in the columns of its schema
    (``topolip.schema``); no row when ``radii`` is None or empty (nothing matched).

    Raises
    ------
    ValueError
        As :func:`radius_summary`, or if ``matched`` lacks a column.
    """
    from topolip.experiments.radii import radius_summary

    require_columns(matched, ["arch", "seed", "epoch", "val_accuracy", "matched_to",
                              "target_val_accuracy"], "matched epochs")
    if radii is None or not len(radii):
        return frame("radius_matched", [])
    s = radius_summary(radii)
    s["group"] = s["group"] + MATCHED_GROUP_SUFFIX
    extra = matched.drop(columns=["checkpoint"], errors="ignore")
    s = s.merge(extra, on=["arch", "seed"], how="left", validate="many_to_one")
    return frame("radius_matched", s.to_dict("records"))
