r"""Minimal adversarial L∞ radii per image, and the robust-accuracy curve they give.

The **minimal adversarial L∞ radius** of a correctly classified image :math:`x` with label
:math:`y` is

.. math::
    r^*(x) = \min \{\, \lVert \delta \rVert_\infty : f(x + \delta) \ne y,\ x + \delta \in
    [0, 1]^d \,\},

and 0 for an image the model already misclassifies. No attack computes :math:`r^*` on a deep
network; :func:`minimal_radius` finds an **upper bound** by a per-image bisection over the
budget ε with the strongest white-box attack of the ladder, APGD-CE followed by APGD-T
(Croce and Hein 2020; :func:`topolip.perturbations.attacks.autoattack`): the reported radius is
a budget at which that attack found an adversarial image, and that image is returned with it
and checked (misclassified, within the reported L∞ norm and in [0, 1]). The ladder's weaker
white-box rungs, PGD and FGSM, can be bisected the same way, so each rung has its own radii
and robust-accuracy curve.

Why bisection with APGD rather than a minimum-norm attack: APGD is the attack the ladder's
fixed-ε rows use, so the radius and those rows measure the same attacker, and its
step-size schedule needs no tuning per budget; FAB (Croce and Hein 2020, torchattacks' ``FAB``),
a minimum-norm attack, is the independent cross-check on a subset (:func:`fab_radius`,
:func:`radius_agreement`).

The robust accuracy at ε is the share of images whose radius exceeds ε
(:func:`robust_accuracy_from_radii`), so one set of radii gives the whole curve; an image not
broken at the largest budget tried is right-censored (radius +inf), which bounds the curve
only up to that budget.

Units: images ``(N, C, H, W)`` with pixels in [0, 1]; every radius and ε in the same pixel
units.

References
----------
.. [1] F. Croce, M. Hein, "Reliable evaluation of adversarial robustness with an ensemble of
   diverse parameter-free attacks", ICML 2020, arXiv:2003.01690 (APGD-CE, APGD-T).
.. [2] F. Croce, M. Hein, "Minimally distorted Adversarial Examples with a Fast Adaptive
   Boundary Attack", ICML 2020, arXiv:1907.02044 (FAB).
.. [3] N. Carlini et al., "On Evaluating Adversarial Robustness", arXiv:1902.06705 (report
   the robust accuracy as a curve over ε).
"""

from __future__ import annotations

import math
import numbers
from collections.abc import Mapping
from dataclasses import dataclass

import numpy as np
import torch
import torchattacks
from torch import nn

from topolip.perturbations.attacks import autoattack, fgsm, pgd
from topolip.tensors import Logits, check_classifier_inputs, check_count, eval_mode, model_device

__all__ = ["RADIUS_ATTACKS", "RadiusResult", "eps_grid_from_radii", "fab_radius",
           "minimal_radius", "radius_agreement", "robust_accuracy_from_radii"]

#: The attacks :func:`minimal_radius` bisects with, strongest first: the attack ladder's three
#: white-box rungs, APGD-CE + APGD-T, PGD and FGSM (the rival claim's weak-against-strong
#: contrasts read FGSM against each of the other two).
RADIUS_ATTACKS = ("autoattack", "pgd", "fgsm")

#: Slack of the per-image norm check: float32 rounding of ``x + delta`` (pixel units).
NORM_SLACK = 1e-6


@dataclass(frozen=True)
class RadiusResult:
    """Per-image minimal adversarial L∞ radii (upper bounds) and the images that attain them.

    Attributes
    ----------
    radius : ndarray of shape (N,), float64
        The budget (pixel units) at which the attack found an adversarial image; 0 for a
        clean-misclassified image; ``+inf`` for an image not broken at ``eps_max``.
    norm : ndarray of shape (N,), float64
        ``||adv - x||_inf`` of the returned image (<= ``radius``; 0 where the radius is 0 or
        inf).
    adv : torch.Tensor of shape (N, C, H, W)
        The adversarial image at the reported radius (the clean image where the radius is 0
        or inf), pixels in [0, 1], on the input's device and dtype.
    censored : ndarray of shape (N,), bool
        True where the image was not broken at ``eps_max`` (right-censored).
    clean_correct : ndarray of shape (N,), bool
        True where the model classifies the clean image correctly.
    eps_max : float
        The largest budget tried.
    attacks : int
        Attack calls made (one per group of images sharing a budget), for the cost.
    """

    radius: np.ndarray
    norm: np.ndarray
    adv: torch.Tensor
    censored: np.ndarray
    clean_correct: np.ndarray
    eps_max: float
    attacks: int

    @property
    def n_censored(self) -> int:
        """Images not broken at ``eps_max``."""
        return int(self.censored.sum())


def minimal_radius(model: nn.Module, x: torch.Tensor, y: torch.Tensor, *, eps_max: float,
                   steps: int = 4, eps_min: float | None = None, bracket: float = 4.0,
                   attack: str = "autoattack", apgd_steps: int = 20, n_target_classes: int = 3,
                   pgd_steps: int = 20, pgd_restarts: int = 2, seed: int = 0,
                   batch_size: int = 256) -> RadiusResult:
    r"""Minimal adversarial L∞ radius per image: bracket on a geometric grid, then bisect.

    1. Clean-misclassified images get radius 0 (their clean image is their adversarial one).
    2. **Bracket**: every other image is attacked at ``eps_max``; those not broken are
       censored (+inf). The broken ones are attacked again at ``eps_max / bracket``, those
       broken there at ``eps_max / bracket**2``, and so on down to ``eps_min``: each image's
       bracket is ``(lo, hi]`` with ``hi`` the smallest budget that broke it (its adversarial
       image kept) and ``lo = hi / bracket`` the next one down that did not (``lo = 0`` below
       ``eps_min``). Attacks above an image's radius are the cheap ones (APGD-T runs only on
       what APGD-CE left), so a wide bracket (few rungs) and a few bisection steps cost less
       than a fine grid.
    3. **Bisection**: ``steps`` times, each image is attacked at the geometric midpoint
       :math:`\sqrt{lo\,hi}` of its bracket (the arithmetic midpoint when ``lo = 0``); ``hi``
       moves down with its new adversarial image when the attack succeeds, ``lo`` up when it
       fails. Images sharing a bracket share a budget and are attacked together (one
       torchattacks call per group), so the work is vectorised over the batch.

    The attack at every budget is, for ``attack="autoattack"``,
    :func:`topolip.perturbations.attacks.autoattack` (APGD-CE then APGD-T against the
    ``n_target_classes`` most likely wrong classes, ``apgd_steps`` iterations each, seeded by
    ``seed``), for ``attack="pgd"`` :func:`topolip.perturbations.attacks.pgd` (the ladder's PGD:
    ``pgd_steps`` steps of size ``2.5 ε / pgd_steps`` from ``pgd_restarts`` random starts, the
    per-image worst case, seeded by ``seed``), and for ``attack="fgsm"``
    :func:`topolip.perturbations.attacks.fgsm` (one gradient-sign step). The final bracket is at
    most :math:`b^{2^{-\text{steps}}}` wide in ratio, :math:`b` = ``bracket`` (9.1% for
    :math:`b = 4` and 4 steps, 4.4% for 5); the reported radius is its top, an upper
    bound on the true minimal radius whenever the attack succeeds (the attack is not monotone
    in ε, so a success below ``lo`` cannot be ruled out: the radius stays an upper bound).

    Parameters
    ----------
    model : torch.nn.Module
        Classifier from images in [0, 1] to logits ``(N, K)``, ``K >= 4``; run in eval mode on
        its device (its mode restored).
    x : torch.Tensor of shape (N, C, H, W), floating point
        Clean images, pixels in [0, 1].
    y : torch.Tensor of shape (N,), integer
        True labels.
    eps_max : float
        Largest budget tried, pixel units, in (0, 1].
    steps : int, default=4
        Bisection steps after the bracket (>= 1).
    eps_min : float, optional
        Smallest grid budget of the bracket, in (0, ``eps_max``]; default
        ``eps_max / bracket**5``.
    bracket : float, default=4.0
        Ratio between the bracket's rungs (> 1).
    attack : {"autoattack", "pgd", "fgsm"}, default="autoattack"
        The attack bisected (:data:`RADIUS_ATTACKS`).
    apgd_steps : int, default=20
        Iterations of each APGD run (``attack="autoattack"`` only).
    n_target_classes : int, default=3
        Target classes of APGD-T, in ``1 .. K-1``.
    pgd_steps, pgd_restarts : int, default=20, 2
        Steps and random starts of PGD (``attack="pgd"`` only; the attack ladder's
        ``ladder_pgd_steps`` and ``ladder_pgd_restarts``), each at least 1.
    seed : int, default=0
        Seed of the APGD and PGD random starts (the same at every budget).
    batch_size : int, default=256
        Images per attack pass (memory only).

    Returns
    -------
    RadiusResult

    Raises
    ------
    ValueError
        If ``eps_max`` is not in (0, 1], ``eps_min`` not in (0, eps_max], ``bracket`` not
        > 1, ``attack`` unknown, ``steps``, ``apgd_steps``, ``pgd_steps`` or ``pgd_restarts``
        is not a positive integer; the
        model, images or labels are invalid (NaN, wrong shape, out of [0, 1], labels out of
        range; see :func:`topolip.tensors.check_classifier_inputs`); or an image
        fails the final check (its adversarial image is classified correctly, lies outside the
        reported norm or outside [0, 1]) — the image's index is named.

    References
    ----------
    .. [1] F. Croce, M. Hein, arXiv:2003.01690 (APGD-CE, APGD-T).

    Examples
    --------
    >>> _ = torch.manual_seed(0)
    >>> model = nn.Sequential(nn.Flatten(), nn.Linear(4, 5))
    >>> x, y = torch.rand(6, 1, 2, 2), torch.tensor([0, 1, 2, 3, 4, 0])
    >>> r = minimal_radius(model, x, y, eps_max=0.5, steps=3, apgd_steps=5)
    >>> bool((r.norm <= r.radius + 1e-6).all()), r.radius.shape
    (True, (6,))
    """
    if attack not in RADIUS_ATTACKS:
        raise ValueError(f"attack must be one of {list(RADIUS_ATTACKS)}, got {attack!r}")
    if isinstance(bracket, bool) or not isinstance(bracket, numbers.Real) \
            or not math.isfinite(bracket) or not bracket > 1:
        raise ValueError(f"bracket must be a number > 1 (the ratio between rungs), "
                         f"got {bracket!r}")
    bracket = float(bracket)
    _, eps_max, steps, apgd_steps, pgd_steps, pgd_restarts = _check_call(
        model, x, y, eps_max, steps=steps, apgd_steps=apgd_steps, pgd_steps=pgd_steps,
        pgd_restarts=pgd_restarts)
    eps_min = (eps_max / bracket ** 5 if eps_min is None
               else _positive_budget(eps_min, "eps_min"))
    if eps_min > eps_max:
        raise ValueError(f"eps_min ({eps_min}) must not exceed eps_max ({eps_max})")
    n = len(x)
    correct = _predict(model, x) == y.cpu()
    adv = x.detach().clone()
    radius = np.zeros(n)
    censored = np.zeros(n, dtype=bool)
    lo = np.zeros(n)
    hi = np.full(n, np.inf)
    calls = 0

    def run(idx: np.ndarray, eps: float) -> np.ndarray:
        """Attack images ``idx`` at ``eps``; keep the successes' images; return success mask."""
        nonlocal calls
        calls += 1
        ii = torch.as_tensor(idx, dtype=torch.long, device=x.device)
        if attack == "fgsm":
            out = fgsm(model, x[ii], y[ii.to(y.device)], eps, batch_size=batch_size)
        elif attack == "pgd":
            out = pgd(model, x[ii], y[ii.to(y.device)], eps, steps=pgd_steps,
                      restarts=pgd_restarts, seed=seed, batch_size=batch_size)
        else:
            out = autoattack(model, x[ii], y[ii.to(y.device)], eps, steps=apgd_steps,
                             n_target_classes=n_target_classes, seed=seed,
                             batch_size=batch_size)
        fooled = (_predict(model, out) != y[ii.to(y.device)].cpu()).numpy()
        ok = torch.as_tensor(fooled, device=x.device)
        adv[ii[ok]] = out[ok]
        return fooled

    # 2. bracket on the geometric grid eps_max, eps_max/bracket, ... >= eps_min
    todo = np.flatnonzero(correct.numpy())
    eps = eps_max
    while todo.size:
        fooled = run(todo, eps)
        hi[todo[fooled]] = eps
        lo[todo[~fooled]] = eps
        if eps == eps_max:
            censored[todo[~fooled]] = True
        todo = todo[fooled]
        if eps / bracket < eps_min * (1 - 1e-12):
            lo[todo] = 0.0
            break
        eps = eps / bracket
    # 3. bisection, one attack per group of images sharing a bracket
    live = np.flatnonzero(correct.numpy() & ~censored)
    for _ in range(steps):
        if not live.size:
            break
        mids = np.where(lo[live] > 0, np.sqrt(lo[live] * hi[live]), hi[live] / 2)
        for mid in np.unique(mids):
            group = live[mids == mid]
            fooled = run(group, float(mid))
            hi[group[fooled]] = mid
            lo[group[~fooled]] = mid
    radius[correct.numpy()] = hi[correct.numpy()]
    radius[censored] = np.inf
    delta = (adv - x.detach()).flatten(1).abs().amax(1).double().cpu().numpy()
    result = RadiusResult(radius=radius, norm=np.where(np.isfinite(radius), delta, 0.0),
                          adv=adv, censored=censored, clean_correct=correct.numpy(),
                          eps_max=eps_max, attacks=calls)
    _check_result(model, x, y, result)
    return result


def fab_radius(model: nn.Module, x: torch.Tensor, y: torch.Tensor, *, eps_max: float,
               steps: int = 100, restarts: int = 1, seed: int = 0,
               batch_size: int = 256) -> np.ndarray:
    """Minimal adversarial L∞ radius per image by FAB (Croce and Hein 2020), a minimum-norm attack.

    torchattacks' ``FAB`` (L∞, untargeted) looks for the closest adversarial image by
    projecting on a linearisation of the decision boundary; the radius of an image is the L∞
    norm of the perturbation it finds, if that image is misclassified and within ``eps_max``
    (torchattacks keeps only those), else ``+inf`` (not found); 0 for a clean-misclassified
    image. The cross-check of :func:`minimal_radius` (:func:`radius_agreement`).

    Parameters
    ----------
    model : torch.nn.Module
        Classifier from images in [0, 1] to logits ``(N, K)``; run in eval mode (mode restored).
    x : torch.Tensor of shape (N, C, H, W)
        Clean images, pixels in [0, 1].
    y : torch.Tensor of shape (N,), integer
        True labels.
    eps_max : float
        Largest accepted radius, pixel units, in (0, 1].
    steps : int, default=100
        FAB iterations (AutoAttack's FAB uses 100).
    restarts : int, default=1
        FAB restarts (later ones from random starts in the ``eps_max`` ball).
    seed : int, default=0
        Seed of FAB (the global RNG is saved and restored around the call).
    batch_size : int, default=256
        Images per pass (memory only).

    Returns
    -------
    ndarray of shape (N,), float64
        Radii in pixel units (0, positive, or +inf where FAB found nothing within
        ``eps_max``); every finite positive radius is checked (misclassified, in [0, 1]).

    Raises
    ------
    ValueError
        As :func:`minimal_radius` for bad input or a positive integer parameter; or if an image
        FAB reports as adversarial is classified correctly (named).

    References
    ----------
    .. [1] F. Croce, M. Hein, "Minimally distorted Adversarial Examples with a Fast Adaptive
       Boundary Attack", ICML 2020, arXiv:1907.02044.
    """
    k, eps_max, steps, restarts, batch_size = _check_call(model, x, y, eps_max, steps=steps,
                                                          restarts=restarts,
                                                          batch_size=batch_size)
    device = model_device(model)
    dtype = next(model.parameters()).dtype
    wrapped = Logits(model)
    out = torch.empty_like(x)
    devices = [device] if device.type == "cuda" else []
    with eval_mode(model), torch.enable_grad(), torch.random.fork_rng(devices=devices):
        attack = torchattacks.FAB(wrapped, norm="Linf", eps=eps_max, steps=steps,
                                  n_restarts=restarts, seed=int(seed), n_classes=k)
        for start in range(0, len(x), batch_size):
            sl = slice(start, start + batch_size)
            xb = x[sl].detach().to(device, dtype)
            yb = y[sl].detach().to(device, torch.long)
            out[sl] = attack(xb, yb).detach().to(x.device, x.dtype)
    correct = (_predict(model, x) == y.cpu()).numpy()
    fooled = (_predict(model, out) != y.cpu()).numpy()
    norm = (out - x).flatten(1).abs().amax(1).double().cpu().numpy()
    radius = np.where(~correct, 0.0, np.where(fooled, norm, np.inf))
    bad = np.flatnonzero(correct & fooled & (norm > eps_max + NORM_SLACK))
    if bad.size:
        raise ValueError(f"FAB returned image {int(bad[0])} at L-inf norm {norm[bad[0]]:.6g}, "
                         f"above eps_max {eps_max}")
    return radius


def radius_agreement(radius: np.ndarray, reference: np.ndarray, *,
                     factor: float = 1.25) -> dict[str, float]:
    """How closely two sets of per-image radii of the same images agree (ratio summary).

    Compared on the images where both radii are finite and positive (both methods broke a
    correctly classified image): the per-image ratio ``radius / reference``.

    Parameters
    ----------
    radius, reference : array-like of shape (N,)
        Radii of the same images by two methods (e.g. :func:`minimal_radius` and
        :func:`fab_radius`), pixel units; 0 (clean-misclassified) and +inf (censored or not
        found) allowed.
    factor : float, default=1.25
        The agreement band: a pair agrees when the ratio is in ``[1/factor, factor]``.

    Returns
    -------
    dict
        ``n`` (images compared), ``n_only_radius`` (finite in ``radius`` only),
        ``n_only_reference`` (finite in ``reference`` only), ``median_ratio``,
        ``share_within`` (share of compared images within the band; NaN when none),
        ``factor``.

    Raises
    ------
    ValueError
        If the arrays differ in length, are empty, hold NaN or negative values, or ``factor``
        is not > 1.

    Examples
    --------
    >>> out = radius_agreement([0.1, 0.2, 0.0, np.inf], [0.1, 0.3, 0.0, 0.2])
    >>> out["n"], out["median_ratio"], out["share_within"], out["n_only_reference"]
    (2, 0.8333333333333334, 0.5, 1)
    """
    a = _radii(radius, "radius")
    b = _radii(reference, "reference")
    if a.shape != b.shape:
        raise ValueError(f"radius has {a.size} images but reference has {b.size}")
    if isinstance(factor, bool) or not isinstance(factor, numbers.Real) or not factor > 1:
        raise ValueError(f"factor must be a number > 1, got {factor!r}")
    fa = np.isfinite(a) & (a > 0)
    fb = np.isfinite(b) & (b > 0)
    both = fa & fb
    ratio = a[both] / b[both]
    within = (ratio <= factor) & (ratio >= 1 / factor)
    return {"n": int(both.sum()), "n_only_radius": int((fa & ~fb).sum()),
            "n_only_reference": int((fb & ~fa).sum()),
            "median_ratio": float(np.median(ratio)) if ratio.size else math.nan,
            "share_within": float(within.mean()) if ratio.size else math.nan,
            "factor": float(factor)}


def robust_accuracy_from_radii(radii, eps_grid, *, eps_max: float | None = None) -> np.ndarray:
    """Robust accuracy at each ε: the share of images whose minimal radius exceeds ε.

    An image is robust at ε when no attack of budget ε fools it, i.e. when its radius is above
    ε; a clean-misclassified image (radius 0) is robust at no ε, so the value at ε = 0 is the
    clean accuracy.

    Parameters
    ----------
    radii : array-like of shape (N,)
        Per-image radii, pixel units; 0 and +inf (censored) allowed.
    eps_grid : array-like of shape (G,)
        Budgets, pixel units, >= 0.
    eps_max : float, optional
        The largest budget the radii were searched to; a budget above it is refused when some
        radius is censored (the curve is unknown there).

    Returns
    -------
    ndarray of shape (G,), float64
        Fractions in [0, 1], non-increasing in ε.

    Raises
    ------
    ValueError
        If the radii are empty or hold NaN or negative values, the grid is empty, negative or
        not finite, or a budget exceeds ``eps_max`` with censored radii.

    Examples
    --------
    >>> robust_accuracy_from_radii([0.0, 0.01, 0.02, np.inf], [0.0, 0.01, 0.015, 0.5]).tolist()
    [0.75, 0.5, 0.5, 0.25]
    """
    r = _radii(radii, "radii")
    grid = np.asarray(eps_grid, dtype=float).ravel()
    if grid.size == 0 or not np.isfinite(grid).all() or (grid < 0).any():
        raise ValueError(f"eps_grid must be a non-empty list of finite budgets >= 0, got "
                         f"{list(np.asarray(eps_grid).ravel())}")
    if eps_max is not None and np.isinf(r).any() and (grid > eps_max).any():
        raise ValueError(f"eps_grid reaches {grid.max()} above eps_max {eps_max}, where "
                         f"{int(np.isinf(r).sum())} censored radii leave the curve unknown")
    return (r[None, :] > grid[:, None]).mean(axis=1)


def eps_grid_from_radii(radii: Mapping[object, np.ndarray], *, n_points: int = 12,
                        top: float = 0.9, bottom: float = 0.1) -> np.ndarray:
    """An ε grid that runs, for every model, from >= ``top`` to <= ``bottom`` of its clean accuracy.

    For each model the largest budget that keeps at least ``top`` of its clean-correct images
    robust and the smallest that leaves at most ``bottom`` of them are read off its radii; the
    grid is 0 followed by ``n_points`` geometrically spaced budgets from the smallest of the
    first to the largest of the second, so every model's curve starts near its clean accuracy
    and ends near 0 on the same grid.

    Parameters
    ----------
    radii : mapping of model key to array-like of shape (N,)
        Per-image radii of each model (pixel units; 0 clean-misclassified, +inf censored).
    n_points : int, default=12
        Positive budgets of the grid (>= 2).
    top, bottom : float, default=0.9, 0.1
        Fractions of the clean accuracy the grid must reach at its two ends,
        ``0 < bottom < top < 1``.

    Returns
    -------
    ndarray of shape (n_points + 1,), float64
        ``[0, eps_1 < ... < eps_n]`` in pixel units; for every model
        ``robust_accuracy_from_radii(r, [eps_1]) >= top * clean`` and
        ``robust_accuracy_from_radii(r, [eps_n]) <= bottom * clean``.

    Raises
    ------
    ValueError
        If ``radii`` is empty, a model has no correctly classified image, a model's radii are
        censored for more than ``bottom`` of its correct images (no budget searched brings it
        down: raise ``eps_max``), or the parameters are out of range.

    Examples
    --------
    >>> g = eps_grid_from_radii({"a": np.linspace(0.01, 0.1, 10)}, n_points=3)
    >>> g.round(4).tolist()
    [0.0, 0.02, 0.0424, 0.09]
    """
    n_points = check_count(n_points, "n_points")
    if n_points < 2:
        raise ValueError(f"n_points must be >= 2, got {n_points}")
    if not (0 < bottom < top < 1):
        raise ValueError(f"need 0 < bottom < top < 1, got bottom={bottom}, top={top}")
    if not radii:
        raise ValueError("radii is empty: no model to build the eps grid for")
    lows, highs = [], []
    for key, values in radii.items():
        r = _radii(values, f"radii[{key!r}]")
        pos = np.sort(r[r > 0])
        if not pos.size:
            raise ValueError(f"model {key!r} classifies none of its images correctly: no curve")
        m = pos.size
        keep = math.ceil(top * m)            # at least this many must stay robust at eps_lo
        left = math.floor(bottom * m)        # at most this many may stay robust at eps_hi
        lows.append(pos[m - keep] * (1 - 1e-9))
        hi = pos[m - left - 1]
        if not np.isfinite(hi):
            raise ValueError(f"model {key!r}: {int(np.isinf(pos).sum())} of its {m} correct "
                             f"images are censored, more than {bottom:g} of them; search the "
                             "radii to a larger eps_max")
        highs.append(hi)
    lo, hi = min(lows), max(highs)
    if not lo < hi:
        hi = lo * 2
    return np.concatenate([[0.0], np.geomspace(lo, hi, n_points)])


@torch.no_grad()
def _predict(model: nn.Module, x: torch.Tensor, batch_size: int = 512) -> torch.Tensor:
    """Predicted classes (CPU int64) of images ``x``."""
    device = model_device(model)
    dtype = next(model.parameters()).dtype
    wrapped = Logits(model)
    out = []
    with eval_mode(model):
        for s in range(0, len(x), batch_size):
            out.append(wrapped(x[s:s + batch_size].to(device, dtype)).argmax(1).cpu())
    return torch.cat(out) if out else torch.empty(0, dtype=torch.long)


def _check_result(model: nn.Module, x: torch.Tensor, y: torch.Tensor, r: RadiusResult) -> None:
    """Every finite radius: its image is misclassified, in [0, 1] and within the norm."""
    pred = _predict(model, r.adv).numpy()
    labels = y.cpu().numpy()
    norm = (r.adv - x.detach()).flatten(1).abs().amax(1).double().cpu().numpy()
    for i in np.flatnonzero(np.isfinite(r.radius)):
        if pred[i] == labels[i]:
            raise ValueError(f"radius check failed: image {int(i)} at radius {r.radius[i]:.6g} "
                             f"is classified correctly ({int(labels[i])})")
        if norm[i] > r.radius[i] + NORM_SLACK:
            raise ValueError(f"radius check failed: image {int(i)} lies at L-inf "
                             f"{norm[i]:.6g} from its clean image, above its radius "
                             f"{r.radius[i]:.6g}")
    lo, hi = float(r.adv.min()), float(r.adv.max())
    if lo < 0 or hi > 1:
        raise ValueError(f"radius check failed: adversarial pixels outside [0, 1] "
                         f"({lo:.6g}..{hi:.6g})")


def _radii(values, name: str) -> np.ndarray:
    try:
        r = np.asarray(values, dtype=float).ravel()
    except (TypeError, ValueError) as err:
        raise ValueError(f"{name} must be numbers (radii in pixel units): {err}") from err
    if r.size == 0:
        raise ValueError(f"{name} is empty")
    if np.isnan(r).any():
        raise ValueError(f"{name} holds NaN at image(s) {np.flatnonzero(np.isnan(r))[:5].tolist()}")
    if (r < 0).any():
        raise ValueError(f"{name} holds negative radii at image(s) "
                         f"{np.flatnonzero(r < 0)[:5].tolist()}")
    return r


def _check_call(model: nn.Module, x: torch.Tensor, y: torch.Tensor, eps_max,
                **counts) -> tuple:
    """The checks every radius search starts with: the model and its inputs, the largest
    budget, and each named count a positive integer; returns ``(K, eps_max, *counts)``, ``K``
    the model's number of logits."""
    eps_max = _positive_budget(eps_max, "eps_max")
    values = tuple(check_count(v, name) for name, v in counts.items())
    return (check_classifier_inputs(model, x, y), eps_max, *values)


def _positive_budget(value, name: str) -> float:
    if isinstance(value, bool) or not isinstance(value, numbers.Real) \
            or not math.isfinite(value) or not 0 < value <= 1:
        raise ValueError(f"{name} must be a number in (0, 1] (an L-inf budget in pixel units "
                         f"of [0, 1] images), got {value!r}")
    return float(value)
