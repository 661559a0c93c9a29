r"""Robustness measures: accuracy under the attack ladder and against perturbation strength,
max-softmax confidence, and the join of TopoLip with the accuracy a perturbation costs.

:func:`attack_ladder` attacks one batch with FGSM, PGD (random restarts) and autoattack
(APGD-CE then APGD-T) at each budget, and with the black-box Square at one;
:func:`robustness_trained` is 04's per-model task (ladder, corruption curves and the two
short-PGD runs of the gradient-masking checks, which :func:`topolip.evidence.masking.masking_checks`
evaluates without torch).

Units: images are ``(N, C, H, W)`` tensors with pixels in [0, 1]; an attack's strength is its
L∞ budget ``eps`` in the same pixel units, a corruption's strength its severity 0..5
(:data:`topolip.perturbations.corruptions.SEVERITIES`). Accuracies are fractions in [0, 1].

These are the loops of the robustness notebook; the TopoLip measurements themselves are in
:mod:`topolip.experiments.model_measurement`, and out-of-distribution measurement in
:mod:`topolip.experiments.ood`.

References
----------
.. [1] B. Chen, "Is Smoothness the Key to Robustness? A Comparison of Attention and Convolution
   Models Using a Novel Metric", arXiv:2410.17628.
.. [2] D. Hendrycks, K. Gimpel, "A Baseline for Detecting Misclassified and Out-of-Distribution
   Examples in Neural Networks", ICLR 2017, arXiv:1610.02136 (max-softmax confidence).
"""

from __future__ import annotations

import math
import numbers
from collections.abc import Mapping, Sequence

import numpy as np
import pandas as pd
import torch
from torch import nn

from topolip.experiments.model_measurement import model_images
from topolip.nets.train import accuracy
from topolip.perturbations.attacks import PERTURBATIONS, check_strength, perturb, perturb_at
from topolip.perturbations.corruptions import CORRUPTIONS
from topolip.tensors import check_images, eval_mode

__all__ = [
    "attack_ladder", "model_logits", "robustness_curves", "robustness_trained",
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
        ``{kind: [strength, ...]}`` with ``kind`` from
        :data:`topolip.perturbations.attacks.PERTURBATIONS`:
        L∞ budgets ``eps`` in pixel units for ``fgsm``, ``pgd`` and ``random_sign``, integer
        severities 0..5 for the corruptions. Strength 0 is the clean input.
    seed : int, default=0
        Seed of the random perturbations (PGD start, noise, corruptions).
    pgd_steps : int, default=10
        Steps of PGD (step size ``2.5 eps / steps``, see :func:`topolip.perturbations.attacks.pgd`).
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
        :func:`topolip.perturbations.attacks.perturb`).

    See Also
    --------
    topolip.experiments.model_measurement.measure_model
        TopoLip per layer for the same perturbations.

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


def attack_ladder(
    model: nn.Module,
    x: torch.Tensor,
    y: torch.Tensor,
    eps: Sequence[float],
    *,
    pgd_steps: int = 20,
    pgd_restarts: int = 2,
    apgd_steps: int = 100,
    n_target_classes: int = 9,
    square_eps: float | None = None,
    square_queries: int = 5000,
    seed: int = 0,
    batch_size: int = 256,
) -> pd.DataFrame:
    r"""Accuracy under the attack ladder FGSM → PGD → AutoAttack at each ε, and Square at one.

    At each budget of ``eps`` the same images are attacked by three white-box attacks of
    increasing strength (:data:`topolip.roster.LADDER`), each torchattacks' own:

    - ``fgsm``: one gradient-sign step of size ε (:func:`topolip.perturbations.attacks.fgsm`);
    - ``pgd``: ``pgd_steps`` steps of size ``2.5 ε / pgd_steps`` from ``pgd_restarts``
      random starts, an image counting as robust only if every restart fails
      (:func:`topolip.perturbations.attacks.pgd`);
    - ``autoattack``: APGD-CE then APGD-T, ``apgd_steps`` iterations each, APGD-T against the
      ``n_target_classes`` most likely wrong classes of the clean image; per image the first
      that fools the model (:func:`topolip.perturbations.attacks.autoattack`);

    and, at ``square_eps``, the black-box ``square`` attack with ``square_queries`` queries
    per image (:func:`topolip.perturbations.attacks.square`), the check that the white-box attacks
    are not
    blinded by masked gradients (:func:`topolip.evidence.masking.masking_checks`).

    Parameters
    ----------
    model : torch.nn.Module
        A classifier from images in [0, 1] to logits ``(N, K)``, ``K >= 4``; evaluated in eval
        mode on its device (its train/eval mode is restored afterwards).
    x : torch.Tensor of shape (N, C, H, W)
        Clean images, pixels in [0, 1].
    y : torch.Tensor of shape (N,)
        True labels.
    eps : sequence of float
        L∞ budgets in pixel units of [0, 1], distinct; 0 gives the clean accuracy (no attack
        runs).
    pgd_steps, pgd_restarts : int, default=20, 2
        PGD's steps per run and random restarts.
    apgd_steps : int, default=100
        Iterations of each APGD run (AutoAttack's standard 100).
    n_target_classes : int, default=9
        Target classes of APGD-T (AutoAttack's standard: every wrong class of 10).
    square_eps : float, optional
        Budget of the Square attack (with a clean row at 0); None runs none.
    square_queries : int, default=5000
        Square's queries per image (AutoAttack's standard 5000).
    seed : int, default=0
        Seed of the random starts and of the random search.
    batch_size : int, default=256
        Samples per attack pass (memory only).

    Returns
    -------
    pandas.DataFrame
        One row per attack and budget, attacks in ladder order then ``square``, budgets in the
        given order: ``perturbation``, ``strength`` (ε), ``unit`` (``"eps"``), ``n`` (images),
        ``accuracy`` (on the attacked images), ``accuracy_clean``, ``accuracy_drop`` (clean
        minus attacked), ``steps`` (gradient steps per run: 1 for FGSM; APGD iterations for
        ``autoattack``; queries for ``square``) and ``restarts`` (runs from random starts per
        image: PGD's restarts; 1 per APGD run and target for ``autoattack``; 1 for Square).

    Raises
    ------
    ValueError
        If ``eps`` is empty, has a repeated or an invalid budget, or an attack raises (bad
        images, labels, model with fewer than 4 logits, bad option; the argument is named).

    Notes
    -----
    Gradient steps per image at one ε: 1 (FGSM), ``pgd_steps`` times up to ``pgd_restarts``
    (the later restarts only on the images still robust), ``apgd_steps`` for APGD-CE plus
    ``apgd_steps`` per target class on the images still robust; Square's queries are forward
    passes, on the images not yet fooled. The accuracy of each attack is measured on the
    images it returns (:func:`topolip.nets.train.accuracy`).

    References
    ----------
    .. [1] I. J. Goodfellow et al., arXiv:1412.6572 (FGSM); A. Madry et al., arXiv:1706.06083
       (PGD); F. Croce, M. Hein, arXiv:2003.01690 (APGD-CE, APGD-T);
       M. Andriushchenko et al., arXiv:1912.00049 (Square).
    .. [2] N. Carlini et al., "On Evaluating Adversarial Robustness", arXiv:1902.06705.

    Examples
    --------
    >>> _ = torch.manual_seed(0)
    >>> model = nn.Sequential(nn.Flatten(), nn.Linear(4, 5))
    >>> x, y = torch.rand(10, 1, 2, 2), torch.arange(10) % 5
    >>> t = attack_ladder(model, x, y, [0.0, 0.2], pgd_steps=5, apgd_steps=5,
    ...                   n_target_classes=2, square_eps=0.2, square_queries=10)
    >>> t[["perturbation", "strength", "steps", "restarts"]].values.tolist()
    [['fgsm', 0.0, 1, 1], ['fgsm', 0.2, 1, 1], ['pgd', 0.0, 5, 2], ['pgd', 0.2, 5, 2],
     ['autoattack', 0.0, 5, 1], ['autoattack', 0.2, 5, 1], ['square', 0.0, 10, 1],
     ['square', 0.2, 10, 1]]
    >>> bool((t["accuracy"] <= t["accuracy_clean"]).all())
    True
    """
    if isinstance(eps, str | bytes) or not isinstance(eps, Sequence) or not eps:
        raise ValueError(f"eps must be a non-empty list of L-inf budgets, got {eps!r}")
    budgets = [_budget(e, "eps") for e in eps]
    if len({round(e, 12) for e in budgets}) < len(budgets):
        raise ValueError(f"eps has a repeated budget: {list(eps)}")
    runs = [("fgsm", budgets, {}, 1, 1),
            ("pgd", budgets, {"steps": pgd_steps, "restarts": pgd_restarts}, pgd_steps,
             pgd_restarts),
            ("autoattack", budgets, {"steps": apgd_steps, "n_target_classes": n_target_classes},
             apgd_steps, 1)]
    if square_eps is not None:
        runs.append(("square", [0.0, _budget(square_eps, "square_eps")],
                     {"n_queries": square_queries},
                     square_queries, 1))
    acc_clean = accuracy(model, x, y)
    rows = []
    for kind, values, options, steps, restarts in runs:
        for value in values:
            if value == 0:
                acc = acc_clean
            else:
                adv = perturb(kind, model, x, y, eps=value, seed=seed, batch_size=batch_size,
                              **options)
                acc = accuracy(model, adv, y)
            rows.append({"perturbation": kind, "strength": value, "unit": "eps", "n": len(y),
                         "accuracy": acc, "accuracy_clean": acc_clean,
                         "accuracy_drop": acc_clean - acc, "steps": steps,
                         "restarts": restarts})
    return pd.DataFrame(rows)


def _budget(value, name: str) -> float:
    """An L∞ budget in pixel units, checked before any attack runs."""
    if isinstance(value, bool) or not isinstance(value, numbers.Real) \
            or not math.isfinite(value) or not 0 <= value <= 1:
        raise ValueError(f"{name} must be a finite number in [0, 1] (an L-inf budget in pixel "
                         f"units of [0, 1] images), got {value!r}")
    return float(value)


def robustness_trained(model: nn.Module, row: Mapping, *, data, attack_eps: Sequence[float],
                       severities: Sequence[int], n_images: int, topolip_eps: float,
                       large_eps: float, pgd_steps: int = 20, pgd_restarts: int = 2,
                       apgd_steps: int = 100, n_target_classes: int = 9,
                       square_queries: int = 5000, probe_steps: int = 5
                       ) -> tuple[pd.DataFrame, pd.DataFrame]:
    """The per-model task of ``04_robustness``: attack ladder, corruption curves, masking runs.

    :func:`topolip.experiments.per_model.map_models` calls it on every trained model. The images are
    the first ``n_images`` of the seed's permutation of the test set
    (:func:`topolip.experiments.model_measurement.model_images`: the architectures of a seed share
    them), attacked and corrupted with the model's seed.

    Parameters
    ----------
    model : torch.nn.Module
        The trained model (``K >= 4`` classes).
    row : mapping
        Its row of ``models.csv`` (``seed`` is read).
    data : topolip.nets.data.split.ImageSplit
        The data set (its test images, pixels in [0, 1]).
    attack_eps : sequence of float
        The ladder's L∞ budgets (pixel units), ``topolip_eps`` among them.
    severities : sequence of int
        Severities 0..5 of every corruption of
        :data:`topolip.perturbations.corruptions.CORRUPTIONS`.
    n_images : int
        Images per model.
    topolip_eps : float
        The TopoLip ε: the budget of Square and of the steps check.
    large_eps : float
        The budget at which PGD must take the accuracy to about 0 (a masking check).
    pgd_steps, pgd_restarts, apgd_steps, n_target_classes, square_queries : int
        The ladder's budgets, as :func:`attack_ladder`.
    probe_steps : int, default=5
        Steps of the single-run PGD of the masking checks, at ``topolip_eps`` (against the
        ladder's PGD: more steps must not raise the accuracy) and at ``large_eps``. Fewer than
        ``pgd_steps``.

    Returns
    -------
    (pandas.DataFrame, pandas.DataFrame)
        The rows of ``robustness.csv`` (:func:`attack_ladder` then :func:`robustness_curves`
        of the corruptions, whose ``steps`` and ``restarts`` are NaN), and the two masking PGD
        runs in the same columns (``steps`` = ``probe_steps``, ``restarts`` 1), for
        :func:`topolip.evidence.masking.masking_checks`.

    Raises
    ------
    ValueError
        As :func:`attack_ladder`, :func:`robustness_curves` and
        :func:`topolip.experiments.model_measurement.model_images`; and if ``topolip_eps`` is not on
        ``attack_eps`` or ``probe_steps`` is not below ``pgd_steps``.
    """
    if not any(math.isclose(float(topolip_eps), float(e), rel_tol=1e-9, abs_tol=1e-12)
               for e in attack_eps):
        raise ValueError(f"topolip_eps {topolip_eps} must be one of attack_eps {list(attack_eps)}")
    if probe_steps >= pgd_steps:
        raise ValueError(f"probe_steps ({probe_steps}) must be below pgd_steps ({pgd_steps}): "
                         "the steps check compares a short PGD with the ladder's")
    seed = int(row["seed"])
    images = model_images(data.x_test, data.y_test, seed, n_robust=n_images)
    x, y = images.x, images.y
    ladder = attack_ladder(model, x, y, attack_eps, pgd_steps=pgd_steps,
                           pgd_restarts=pgd_restarts, apgd_steps=apgd_steps,
                           n_target_classes=n_target_classes, square_eps=topolip_eps,
                           square_queries=square_queries, seed=seed)
    curves = robustness_curves(model, x, y, {kind: list(severities) for kind in CORRUPTIONS},
                               seed=seed).assign(steps=np.nan, restarts=np.nan)
    probes = robustness_curves(model, x, y, {"pgd": [float(topolip_eps), float(large_eps)]},
                               seed=seed, pgd_steps=probe_steps).assign(steps=probe_steps,
                                                                         restarts=1)
    return pd.concat([ladder, curves], ignore_index=True), probes


@torch.no_grad()
def model_logits(model: nn.Module, x: torch.Tensor, *, batch_size: int = 512) -> torch.Tensor:
    """The logits of every image, from one forward pass in batches.

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
    torch.Tensor of shape (N, K)
        ``f(x)`` in float32 on the CPU.

    Raises
    ------
    ValueError
        If ``x`` is not a non-empty (N, C, H, W) tensor or holds NaN/inf.

    Examples
    --------
    >>> model = nn.Sequential(nn.Flatten(), nn.Linear(4, 2))
    >>> model_logits(model, torch.rand(3, 1, 2, 2), batch_size=2).shape
    torch.Size([3, 2])
    """
    check_images(x)
    device = next(model.parameters()).device
    with eval_mode(model):
        return torch.cat([model(x[s:s + batch_size].to(device)).float().cpu()
                          for s in range(0, len(x), batch_size)])


