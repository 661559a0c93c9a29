r"""Robustness measures: accuracy against perturbation strength, max-softmax confidence, and the
rank correlation of TopoLip with the accuracy a perturbation costs.

Units: images are ``(N, C, H, W)`` tensors with pixels in [0, 1]; an attack's strength is its
L∞ budget ``eps`` in the same pixel units, a corruption's strength its severity 0..5
(:data:`topolip.corruptions.SEVERITIES`). Accuracies are fractions in [0, 1].

These are the loops of the robustness notebook; the TopoLip measurements themselves are in
:mod:`topolip.experiments`, and out-of-distribution data and measurement in :mod:`topolip.ood`.

References
----------
.. [1] B. Chen, "Is Smoothness the Key to Robustness? A Comparison of Attention and Convolution
   Models Using a Novel Metric", arXiv:2410.17628.
.. [2] D. Hendrycks, K. Gimpel, "A Baseline for Detecting Misclassified and Out-of-Distribution
   Examples in Neural Networks", ICLR 2017, arXiv:1610.02136 (max-softmax confidence).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence

import numpy as np
import pandas as pd
import torch
from torch import nn

from .attacks import PERTURBATIONS, check_strength, perturb_at
from .experiments import seed_batch
from .tensors import check_images, eval_mode
from .train import accuracy

__all__ = [
    "max_softmax", "robustness_curves", "robustness_curves_trained", "softmax_predictions",
    "topolip_vs_accuracy",
]


def robustness_curves(
    model: nn.Module,
    x: torch.Tensor,
    y: torch.Tensor,
    strengths: Mapping[str, Sequence[float]],
    *,
    seed: int = 0,
    pgd_steps: int = 10,
    batch_size: int = 256,
) -> pd.DataFrame:
    """Accuracy of ``model`` on ``x`` perturbed at each strength of each perturbation kind.

    Parameters
    ----------
    model : torch.nn.Module
        A classifier from images in [0, 1] to logits ``(N, K)``; evaluated in eval mode on its
        device (its train/eval mode is restored afterwards).
    x : torch.Tensor of shape (N, C, H, W)
        Clean images, pixels in [0, 1].
    y : torch.Tensor of shape (N,)
        True labels.
    strengths : mapping of str to sequence of float
        ``{kind: [strength, ...]}`` with ``kind`` from :data:`topolip.attacks.PERTURBATIONS`:
        L∞ budgets ``eps`` in pixel units for ``fgsm``, ``pgd`` and ``random_sign``, integer
        severities 0..5 for the corruptions. Strength 0 is the clean input.
    seed : int, default=0
        Seed of the random perturbations (PGD start, noise, corruptions).
    pgd_steps : int, default=10
        Steps of PGD (step size ``2.5 eps / steps``, see :func:`topolip.attacks.pgd`).
    batch_size : int, default=256
        Samples per attack pass (memory only).

    Returns
    -------
    pandas.DataFrame
        One row per kind and strength, in the given order: ``perturbation``, ``strength``
        (float; severities are whole numbers), ``unit`` (``"eps"`` or ``"severity"``), ``n``
        (images), ``accuracy`` (on the perturbed images), ``accuracy_clean`` and
        ``accuracy_drop`` (clean minus perturbed; negative when the perturbation helps).

    Raises
    ------
    ValueError
        If a kind is unknown (the known ones are listed), a kind has no strengths, a strength
        is out of range for its kind, or ``x``, ``y`` are invalid (see
        :func:`topolip.attacks.perturb`).

    See Also
    --------
    topolip.experiments.measure_topolip : TopoLip per layer for the same perturbations.

    Examples
    --------
    >>> _ = torch.manual_seed(0)
    >>> model = nn.Sequential(nn.Flatten(), nn.Linear(4, 3))
    >>> x, y = torch.rand(9, 1, 2, 2), torch.arange(9) % 3
    >>> t = robustness_curves(model, x, y, {"fgsm": [0.0, 0.5], "contrast": [0, 5]})
    >>> t[["perturbation", "strength", "unit"]].values.tolist()
    [['fgsm', 0.0, 'eps'], ['fgsm', 0.5, 'eps'], ['contrast', 0.0, 'severity'],
     ['contrast', 5.0, 'severity']]
    >>> clean = t[t["strength"] == 0]
    >>> bool((clean["accuracy"] == clean["accuracy_clean"]).all())
    True
    """
    unknown = sorted(set(strengths) - set(PERTURBATIONS))
    if unknown:
        raise ValueError(f"unknown perturbation(s) {unknown}; known: {list(PERTURBATIONS)}")
    checked = {}
    for kind, values in strengths.items():
        if isinstance(values, str | bytes) or not isinstance(values, Sequence) or not values:
            raise ValueError(f"strengths[{kind!r}] must be a non-empty list of strengths, "
                             f"got {values!r}")
        checked[kind] = [check_strength(kind, v) for v in values]
    acc_clean = accuracy(model, x, y)
    rows = []
    for kind, values in checked.items():
        unit = PERTURBATIONS[kind]
        for value in values:
            x_t = perturb_at(kind, model, x, y, value, seed=seed, pgd_steps=pgd_steps,
                             batch_size=batch_size)
            # Strength 0 gives back the clean images: their accuracy is not evaluated again.
            acc = acc_clean if torch.equal(x_t, x) else accuracy(model, x_t, y)
            rows.append({"perturbation": kind, "strength": value, "unit": unit, "n": len(y),
                         "accuracy": acc, "accuracy_clean": acc_clean,
                         "accuracy_drop": acc_clean - acc})
    return pd.DataFrame(rows)


def robustness_curves_trained(model: nn.Module, row: Mapping, *, data,
                              strengths: Mapping[str, Sequence[float]], n_robust: int,
                              pgd_steps: int = 10) -> pd.DataFrame:
    """:func:`robustness_curves` of one trained model of ``models.csv`` on its seed's images.

    The per-model task of ``04_robustness`` (:func:`topolip.tasks.map_models` calls it): the
    first ``n_robust`` images of the seed's permutation of the test set
    (:func:`topolip.experiments.seed_batch`), perturbed with the model's seed.

    Parameters
    ----------
    model : torch.nn.Module
        The trained model.
    row : mapping
        Its row of ``models.csv`` (``seed`` is read).
    data : topolip.data.ImageSplit
        The data set (its test images, pixels in [0, 1]).
    strengths : mapping of str to sequence of float
        ``{kind: [strength, ...]}`` as in :func:`robustness_curves`.
    n_robust : int
        Images per curve.
    pgd_steps : int, default=10
        Steps of PGD.

    Returns
    -------
    pandas.DataFrame
        As :func:`robustness_curves`.

    Raises
    ------
    ValueError
        As :func:`topolip.experiments.seed_batch` and :func:`robustness_curves`.
    """
    seed = int(row["seed"])
    x, y = seed_batch(data.x_test, data.y_test, n_robust, seed)
    return robustness_curves(model, x, y, strengths, seed=seed, pgd_steps=pgd_steps)


def max_softmax(model: nn.Module, x: torch.Tensor, *, batch_size: int = 512) -> np.ndarray:
    """Max-softmax confidence of ``model`` on each image of ``x`` (Hendrycks and Gimpel 2017).

    Parameters
    ----------
    model : torch.nn.Module
        A classifier from images in [0, 1] to logits ``(N, K)``; run in eval mode on its
        device, its previous mode restored.
    x : torch.Tensor of shape (N, C, H, W)
        Images, pixels in [0, 1].
    batch_size : int, default=512
        Samples per forward pass (memory only).

    Returns
    -------
    ndarray of shape (N,), float64
        ``max_k softmax(f(x))_k``, in [1/K, 1].

    Raises
    ------
    ValueError
        If ``x`` is not a non-empty (N, C, H, W) tensor or holds NaN/inf.

    Examples
    --------
    >>> import math
    >>> model = nn.Sequential(nn.Flatten(), nn.Linear(4, 2))
    >>> with torch.no_grad():
    ...     _ = model[1].weight.zero_(); _ = model[1].bias.copy_(torch.tensor([0.0, math.log(3)]))
    >>> max_softmax(model, torch.rand(3, 1, 2, 2)).round(6).tolist()
    [0.75, 0.75, 0.75]
    """
    return softmax_predictions(model, x, batch_size=batch_size)[0]


@torch.no_grad()
def softmax_predictions(model: nn.Module, x: torch.Tensor, *,
                        batch_size: int = 512) -> tuple[np.ndarray, np.ndarray]:
    """Max-softmax confidence and predicted class of each image, from one forward pass.

    Parameters
    ----------
    model : torch.nn.Module
        A classifier from images in [0, 1] to logits ``(N, K)``; run in eval mode on its
        device, its previous mode restored.
    x : torch.Tensor of shape (N, C, H, W)
        Images, pixels in [0, 1].
    batch_size : int, default=512
        Samples per forward pass (memory only).

    Returns
    -------
    (ndarray of shape (N,), ndarray of shape (N,))
        :func:`max_softmax` (float64) and ``argmax_k f(x)_k`` (int64), the class
        :func:`topolip.train.accuracy` counts.

    Raises
    ------
    ValueError
        If ``x`` is not a non-empty (N, C, H, W) tensor or holds NaN/inf.

    Examples
    --------
    >>> model = nn.Sequential(nn.Flatten(), nn.Linear(4, 2))
    >>> with torch.no_grad():
    ...     _ = model[1].weight.zero_(); _ = model[1].bias.copy_(torch.tensor([0.0, 1.0]))
    >>> softmax_predictions(model, torch.rand(3, 1, 2, 2))[1].tolist()
    [1, 1, 1]
    """
    check_images(x)
    device = next(model.parameters()).device
    conf, pred = [], []
    with eval_mode(model):
        for s in range(0, len(x), batch_size):
            logits = model(x[s:s + batch_size].to(device)).float()
            conf.append(torch.softmax(logits, dim=1).amax(1).cpu())
            pred.append(logits.argmax(1).cpu())
    return torch.cat(conf).to(torch.float64).numpy(), torch.cat(pred).numpy()


def topolip_vs_accuracy(summary: pd.DataFrame, curves: pd.DataFrame, *,
                        keys: Sequence[str] = ("arch", "seed", "perturbation", "strength"),
                        ) -> pd.DataFrame:
    """Join model TopoLip with the accuracy drop at the same perturbation and strength.

    Parameters
    ----------
    summary : pandas.DataFrame
        Model TopoLip per group (:func:`topolip.experiments.model_summaries`), with ``keys``.
    curves : pandas.DataFrame
        Accuracy rows (:func:`robustness_curves` with the ``keys`` columns added), with columns
        ``accuracy``, ``accuracy_clean`` and ``accuracy_drop``.
    keys : sequence of str
        Columns identifying a model and a perturbation; ``strength`` is matched to 10
        significant digits (as the tables are written).

    Returns
    -------
    pandas.DataFrame
        ``summary``'s rows and columns with ``accuracy``, ``accuracy_clean`` and
        ``accuracy_drop`` added.

    Raises
    ------
    ValueError
        If a key column is missing, or a summary row has no matching accuracy (the first few
        are listed: add the strength to the robustness grid).

    Examples
    --------
    >>> s = pd.DataFrame({"arch": ["a"], "seed": [0], "perturbation": ["fgsm"],
    ...                   "strength": [0.1], "geometric_mean": [1.5]})
    >>> c = pd.DataFrame({"arch": ["a", "a"], "seed": [0, 0], "perturbation": ["fgsm"] * 2,
    ...                   "strength": [0.0, 0.1], "accuracy": [0.9, 0.4],
    ...                   "accuracy_clean": [0.9, 0.9], "accuracy_drop": [0.0, 0.5]})
    >>> topolip_vs_accuracy(s, c)[["geometric_mean", "accuracy_drop"]].values.tolist()
    [[1.5, 0.5]]
    """
    keys = list(keys)
    values = ["accuracy", "accuracy_clean", "accuracy_drop"]
    for name, table, need in (("summary", summary, keys), ("curves", curves, keys + values)):
        missing = [k for k in need if k not in table.columns]
        if missing:
            raise ValueError(f"{name} lacks column(s) {missing}; it has {list(table.columns)}")

    def keyed(t: pd.DataFrame) -> pd.DataFrame:
        t = t.copy()
        if "strength" in keys:
            t["_strength"] = [float(f"{float(v):.10g}") for v in t["strength"]]
        return t

    on = [k if k != "strength" else "_strength" for k in keys]
    right = keyed(curves)[on + values]
    out = keyed(summary).merge(right, on=on, how="left", validate="one_to_one")
    lost = out[out["accuracy"].isna()]
    if len(lost):
        raise ValueError(f"{len(lost)} summary row(s) have no accuracy at the same strength, "
                         f"e.g. {lost[keys].head(3).to_dict('records')}; add these strengths "
                         "to the robustness grid")
    return out.drop(columns=["_strength"], errors="ignore")
