"""Out-of-distribution measurement of a trained classifier.

:func:`ood_scores`, :func:`ood_behaviour` and :func:`ood_auroc_resamples`: what the classifier does
on the sets of :mod:`topolip.perturbations.ood_sets` (max-softmax confidence, accuracy, and the
AUROC of in- against out-of-distribution for each detection score of
:data:`topolip.roster.OOD_DETECTORS`);
:func:`measure_ood`: its per-layer and end-to-end TopoLip between a clean batch and each set
(unpaired clouds).
"""

from __future__ import annotations

import math
from collections.abc import Mapping

import numpy as np
import pandas as pd
import torch
from torch import nn

from topolip import roster
from topolip.experiments.model_measurement import model_images
from topolip.experiments.robustness import model_logits
from topolip.nets.data.split import ImageSplit
from topolip.nets.models.probes import collect_activations
from topolip.topology.metric import layer_diagrams, topolip_table
from topolip.topology.spec import TopoLipSpec

__all__ = ["detection_scores", "measure_ood",
           "measure_ood_trained", "ood_auroc_resamples", "ood_behaviour", "ood_scores"]


def detection_scores(logits: torch.Tensor) -> dict[str, np.ndarray]:
    """The OOD detection scores of :data:`topolip.roster.OOD_DETECTORS` from a classifier's
    logits.

    Max-softmax is bounded in [1/K, 1] and unchanged when a constant is added to every logit;
    the max-logit and the energy score read the logits before the softmax normalises them
    (Liu et al. 2020, "Energy-based out-of-distribution detection", eq. 3 with ``T = 1``;
    Hendrycks et al. 2022, "Scaling out-of-distribution detection for real-world settings",
    the MaxLogit score).

    Parameters
    ----------
    logits : torch.Tensor of shape (N, K)
        Logits, as from :func:`topolip.experiments.robustness.model_logits`.

    Returns
    -------
    dict of str to ndarray of shape (N,)
        ``{"max_softmax", "max_logit", "energy"}`` in float64, higher = more in-distribution
        (the max-softmax computed in the logits' float32, as the models' confidence is
        everywhere in the chain).

    Raises
    ------
    ValueError
        If ``logits`` is not a finite (N, K) tensor with N ≥ 1 and K ≥ 2.

    Examples
    --------
    >>> s = detection_scores(torch.tensor([[0.0, math.log(3.0)]]))
    >>> {k: round(float(v[0]), 6) for k, v in s.items()}
    {'max_softmax': 0.75, 'max_logit': 1.098612, 'energy': 1.386294}
    """
    if not (isinstance(logits, torch.Tensor) and logits.ndim == 2 and len(logits)
            and logits.shape[1] >= 2):
        got = tuple(logits.shape) if isinstance(logits, torch.Tensor) else type(logits).__name__
        raise ValueError(f"logits must be a tensor of shape (N, K) with N >= 1 and K >= 2, "
                         f"got {got}")
    if not bool(torch.isfinite(logits).all()):
        raise ValueError("logits hold NaN or inf: the model's output is not finite")
    return {"max_softmax": torch.softmax(logits, dim=1).amax(1).to(torch.float64).numpy(),
            "max_logit": logits.amax(1).to(torch.float64).numpy(),
            "energy": torch.logsumexp(logits.to(torch.float64), dim=1).numpy()}


def ood_scores(model: nn.Module, x: torch.Tensor, y: torch.Tensor | None,
               ood: Mapping[str, tuple[torch.Tensor, torch.Tensor]]) -> dict[str, tuple]:
    """Detection scores, prediction and label of every image of the in-distribution test set and
    of each OOD set: one forward pass per set, which :func:`ood_behaviour` and
    :func:`ood_auroc_resamples` share.

    Parameters
    ----------
    model : torch.nn.Module
        A trained classifier from images in [0, 1] to logits ``(N, K)``.
    x : torch.Tensor of shape (N, C, H, W)
        In-distribution test images, pixels in [0, 1].
    y : torch.Tensor of shape (N,), optional
        Their labels (``None``: unlabelled, -1).
    ood : mapping of str to (images, labels)
        Out-of-distribution batches as from :func:`load_ood_batches`; label -1 means "no class
        of the model" and such images count in no accuracy.

    Returns
    -------
    dict
        ``{set: (scores, prediction, labels)}``, ``"in_distribution"`` first, then the OOD sets
        in order: ``scores`` is :func:`detection_scores` of the set's logits (a dict of arrays of
        shape ``(n,)``, ``"max_softmax"`` the confidence), ``prediction`` the argmax class and
        ``labels`` the labels (arrays of shape ``(n,)``).

    Raises
    ------
    ValueError
        If ``ood`` is empty or a batch's images and labels differ in length.

    Examples
    --------
    >>> model = nn.Sequential(nn.Flatten(), nn.Linear(4, 3))
    >>> x = torch.rand(6, 1, 2, 2)
    >>> list(ood_scores(model, x, None, {"same": (x, torch.arange(6) % 3)}))
    ['in_distribution', 'same']
    """
    if y is None:
        y = torch.full((len(x),), -1)
    if not ood:
        raise ValueError("ood must hold at least one out-of-distribution batch")
    for name, (x_o, y_o) in ood.items():
        if len(x_o) != len(y_o):
            raise ValueError(f"OOD set {name!r}: {len(x_o)} images but {len(y_o)} labels")
    out = {}
    for name, (xb, yb) in {"in_distribution": (x, y), **ood}.items():
        logits = model_logits(model, xb)
        out[name] = (detection_scores(logits), logits.argmax(1).numpy(), np.asarray(yb))
    return out


def ood_behaviour(scores: Mapping[str, tuple]) -> pd.DataFrame:
    """What the model does on out-of-distribution data: confidence, accuracy, separability.

    Parameters
    ----------
    scores : mapping
        :func:`ood_scores` of the model on its test set and the OOD sets.

    Returns
    -------
    pandas.DataFrame
        One row for ``"in_distribution"``, then one per set: ``dataset``, ``n``,
        ``mean_confidence`` and ``median_confidence`` (max-softmax, Hendrycks and Gimpel 2017),
        ``accuracy`` (over images with a label >= 0; NaN when none has one), and one AUROC per
        score of :data:`topolip.roster.OOD_DETECTORS` (``auroc`` of max-softmax,
        ``auroc_max_logit``, ``auroc_energy``): the area under the ROC curve of the score
        separating in-distribution (positive) from this set's images, i.e. the probability that
        a random in-distribution image scores higher than a random OOD one, ties counting one
        half (0.5: no separation; below 0.5: the set scores higher than the test images; NaN for
        the first row).

    Raises
    ------
    ValueError
        If ``scores`` lacks the ``"in_distribution"`` set or any OOD set.

    Examples
    --------
    >>> _ = torch.manual_seed(0)
    >>> model = nn.Sequential(nn.Flatten(), nn.Linear(4, 3))
    >>> x, y = torch.rand(6, 1, 2, 2), torch.arange(6) % 3
    >>> scores = ood_scores(model, x, y, {"same": (x, y), "unlabelled": (x, torch.full((6,), -1))})
    >>> t = ood_behaviour(scores)
    >>> t["auroc"].tolist()[1:], t["auroc_energy"].tolist()[1:]
    ([0.5, 0.5], [0.5, 0.5])
    >>> bool(t["accuracy"].isna().tolist() == [False, False, True])
    True
    """
    _check_scores(scores)
    score_in = scores["in_distribution"][0]
    rows = []
    for name, (score, pred, y) in scores.items():
        labelled = y >= 0
        acc = float((pred[labelled] == y[labelled]).mean()) if labelled.any() else math.nan
        conf = score["max_softmax"]
        row = {"dataset": name, "n": len(conf), "mean_confidence": conf.mean(),
               "median_confidence": float(np.median(conf)), "accuracy": acc}
        for kind, column in roster.OOD_DETECTORS.items():
            row[column] = (math.nan if name == "in_distribution"
                           else _auroc(score_in[kind], score[kind]))
        rows.append(row)
    return pd.DataFrame(rows)


def _auroc(positive: np.ndarray, negative: np.ndarray) -> float:
    """AUROC of ``positive`` (in-distribution) against ``negative`` scores (scikit-learn)."""
    from sklearn.metrics import roc_auc_score

    truth = np.r_[np.ones(len(positive)), np.zeros(len(negative))]
    return float(roc_auc_score(truth, np.r_[positive, negative]))


def ood_auroc_resamples(scores: Mapping[str, tuple], *, n_resamples: int = 20,
                        seed: int = 0) -> pd.DataFrame:
    """AUROC of :func:`ood_behaviour` on bootstrap resamples of the images of both sets.

    Parameters
    ----------
    scores : mapping
        :func:`ood_scores` of the model on its test set and the OOD sets.
    n_resamples : int, default=20
        Bootstrap resamples ``B``.
    seed : int, default=0
        Seed of the resampled indices (the same seed draws the same images for every model:
        paired comparisons).

    Returns
    -------
    pandas.DataFrame
        One row per OOD set, score and resample: ``dataset``, ``measure`` (the score's AUROC
        column of :data:`topolip.roster.OOD_DETECTORS`), ``resample``, ``value``; every score
        of a resample is taken on the same resampled images (a paired design across scores
        and models).

    Raises
    ------
    ValueError
        If ``scores`` lacks a set or ``n_resamples`` is not a positive int.

    Examples
    --------
    >>> _ = torch.manual_seed(0)
    >>> model = nn.Sequential(nn.Flatten(), nn.Linear(4, 3))
    >>> x = torch.rand(6, 1, 2, 2)
    >>> scores = ood_scores(model, x, None, {"same": (x, torch.arange(6))})
    >>> ood_auroc_resamples(scores, n_resamples=2)[["measure", "resample"]].values.tolist()
    ... # doctest: +NORMALIZE_WHITESPACE
    [['auroc', 0], ['auroc_max_logit', 0], ['auroc_energy', 0], ['auroc', 1],
     ['auroc_max_logit', 1], ['auroc_energy', 1]]
    """
    if not (isinstance(n_resamples, int) and not isinstance(n_resamples, bool)
            and n_resamples >= 1):
        raise ValueError(f"n_resamples must be a positive int, got {n_resamples!r}")
    _check_scores(scores)
    score_in = scores["in_distribution"][0]
    n_in = len(score_in["max_softmax"])
    rng = np.random.default_rng(seed)
    rows = []
    for name, (score, _, _) in scores.items():
        if name == "in_distribution":
            continue
        n_out = len(score["max_softmax"])
        for b in range(n_resamples):
            i_in, i_out = rng.integers(0, n_in, n_in), rng.integers(0, n_out, n_out)
            rows += [{"dataset": name, "measure": column, "resample": b,
                      "value": _auroc(score_in[kind][i_in], score[kind][i_out])}
                     for kind, column in roster.OOD_DETECTORS.items()]
    return pd.DataFrame(rows)


def _check_scores(scores: Mapping) -> None:
    if "in_distribution" not in scores or len(scores) < 2:
        raise ValueError("scores must hold the 'in_distribution' set and at least one OOD set "
                         f"(from ood_scores), got {list(scores)}")


def measure_ood(
    model: nn.Module,
    x: torch.Tensor,
    ood: Mapping[str, torch.Tensor],
    spec: TopoLipSpec = TopoLipSpec(),
) -> pd.DataFrame:
    """Per-layer TopoLip of ``model`` under distribution shift: clean batch against each OOD set.

    The "perturbed" cloud of layer ``ℓ`` is ``H_ℓ`` of another data set (book/method.md),
    so the samples are not paired: ``topolip_table(..., paired=False)``, and ``eps``,
    ``bottleneck`` and ``envelope`` are NaN (no certified envelope exists without pairing).

    Parameters
    ----------
    model : torch.nn.Module
        A trained model built by :func:`topolip.nets.models.build_model` (it has probe points).
    x : torch.Tensor of shape (m, C, H, W)
        Clean in-distribution images, pixels in [0, 1].
    ood : mapping of str to torch.Tensor of shape (m', C, H, W)
        ``{set name: images}`` with pixels in [0, 1] and ``x``'s image shape (e.g. the images
        of :func:`load_ood_batches`); ``m'`` may differ from ``m``.
    spec : TopoLipSpec
        Degrees, Wasserstein order ``p``, ground metric ``q``, backend and greedy subsample
        ``n_perm`` of the diagrams.

    Returns
    -------
    pandas.DataFrame
        The rows of :func:`topolip.topology.metric.topolip_table` for each set, with columns
        ``ood_set``, ``n_clean`` and ``n_ood`` first. Summarize with
        ``model_summaries(table, by=("arch", "seed", "ood_set"))``.

    Raises
    ------
    ValueError
        If ``ood`` is empty, an OOD batch's image shape differs from ``x``'s, or a cloud is
        invalid (see :func:`topolip.topology.metric.topolip_table`).

    Examples
    --------
    >>> from topolip.nets.models import build_model
    >>> _ = torch.manual_seed(0)
    >>> model = build_model("conv_stack", num_layers=1, channels=2)
    >>> t = measure_ood(model, torch.rand(12, 1, 28, 28), {"dark": torch.rand(10, 1, 28, 28) / 4})
    >>> t[["ood_set", "layer", "n_ood"]].values.tolist()[:2], bool(t["eps"].isna().all())
    ([['dark', 'input', 10], ['dark', 'layer1', 10]], True)
    """
    if not ood:
        raise ValueError("ood must hold at least one out-of-distribution batch")
    for name, x_o in ood.items():
        if not isinstance(x_o, torch.Tensor) or tuple(x_o.shape[1:]) != tuple(x.shape[1:]):
            got = tuple(x_o.shape) if isinstance(x_o, torch.Tensor) else type(x_o).__name__
            raise ValueError(f"OOD set {name!r} must be images of shape (m', "
                             f"{', '.join(map(str, x.shape[1:]))}) like x, got {got}")
    clean = collect_activations(model, x)
    clean_dgms = layer_diagrams(clean, spec)
    tables = []
    for name, x_o in ood.items():
        table = topolip_table(clean, collect_activations(model, x_o), spec, paired=False,
                              clean_diagrams=clean_dgms)
        table.insert(0, "ood_set", name)
        table.insert(1, "n_clean", len(x))
        table.insert(2, "n_ood", len(x_o))
        tables.append(table)
    return pd.concat(tables, ignore_index=True)


def measure_ood_trained(model: nn.Module, row: Mapping, *, data: ImageSplit,
                        ood: Mapping[str, tuple[torch.Tensor, torch.Tensor]],
                        spec: TopoLipSpec = TopoLipSpec(), n_points: int,
                        n_resamples: int = 20
                        ) -> tuple[pd.DataFrame, pd.DataFrame, pd.DataFrame]:
    """Everything ``06_ood`` measures on one trained model of ``models.csv``.

    The per-model task of ``06_ood`` (:func:`topolip.experiments.per_model.map_models` calls it):
    TopoLip between the seed's first ``n_points`` test images and ``n_points`` images of each OOD
    set (:func:`measure_ood`; the seed's own images, so its value holds their variance), and the
    confidence behaviour on the whole test set and OOD batches (:func:`ood_scores`, one forward pass
    per set, read by :func:`ood_behaviour`), with bootstrap resamples of those images for the AUROC
    (:func:`ood_auroc_resamples`: every seed sees the same images there, so the seeds' spread does
    not hold their variance; no diagram is computed on a resample).

    Parameters
    ----------
    model : torch.nn.Module
        The trained model.
    row : mapping
        Its row of ``models.csv`` (``seed`` is read).
    data : topolip.nets.data.split.ImageSplit
        The in-distribution data set (its test images and labels).
    ood : mapping of str to (images, labels)
        OOD batches as from :func:`load_ood_batches`.
    spec : TopoLipSpec
        Degrees, ``p``, ``q``, backend and ``n_perm``.
    n_points : int
        Images per point cloud, from the test set and from each OOD set (each by
        :func:`topolip.experiments.model_measurement.model_images`).
    n_resamples : int, default=20
        Image bootstrap resamples of the AUROC.

    Returns
    -------
    (pandas.DataFrame, pandas.DataFrame, pandas.DataFrame)
        :func:`measure_ood`'s table, :func:`ood_behaviour`'s table, and the AUROC resamples
        (``group``: the OOD set, ``measure``: the AUROC column of each score, ``resample``,
        ``value``).

    Raises
    ------
    ValueError
        As the functions it calls.
    """
    seed = int(row["seed"])
    x = model_images(data.x_test, data.y_test, seed, n_points=n_points).cloud
    ood_x = {name: model_images(xo, yo, seed, n_points=n_points).cloud
             for name, (xo, yo) in ood.items()}
    table = measure_ood(model, x, ood_x, spec)
    scores = ood_scores(model, data.x_test, data.y_test, ood)  # one forward pass per set
    behaviour = ood_behaviour(scores)
    auroc = ood_auroc_resamples(scores, n_resamples=n_resamples, seed=seed)
    return table, behaviour, auroc.rename(columns={"dataset": "group"})
