r"""Adversarial attacks (L∞) through torchattacks, and one dispatcher for every perturbation the
experiments use: attacks, random-sign noise and the common corruptions.

The attacks form a ladder from weak to strong (:data:`topolip.roster.LADDER`): FGSM (one
gradient-sign step), PGD (iterated and projected, with random restarts) and ``autoattack``, APGD-CE
followed by APGD-T (Croce and Hein 2020), the white-box part of AutoAttack; ``square`` (the Square
attack, which queries the model's logits only) is the black-box check that a white-box attack is not
blinded by masked gradients. No attack is implemented here: each is torchattacks' own, and restarts
and attack sequences are combined by ``torchattacks.MultiAttack``, which keeps, per image, the first
adversarial example that fools the model (the per-image worst case).

Units: images are ``(N, C, H, W)`` tensors with pixels in [0, 1]; the budget ``eps`` is an L∞
radius in the same pixel units (``8/255`` is CIFAR-10's customary value, ``0.1``-``0.3`` MNIST's).
Every function returns a new tensor on the input's device with its dtype; the model runs on its
own device (that of its first parameter), in eval mode, and each submodule's train/eval flag is
restored afterwards, also when the attack raises.

The model is wrapped so that torchattacks sees a plain ``nn.Module`` from images in [0, 1] to
logits ``(N, K)``: the project's models take [0, 1] pixels directly (no normalization layer to
undo), and a model returning a tuple contributes its first element.

References
----------
.. [1] I. J. Goodfellow, J. Shlens, C. Szegedy, "Explaining and Harnessing Adversarial
   Examples", ICLR 2015, arXiv:1412.6572.
.. [2] A. Madry, A. Makelov, L. Schmidt, D. Tsipras, A. Vladu, "Towards Deep Learning Models
   Resistant to Adversarial Attacks", ICLR 2018, arXiv:1706.06083.
.. [3] H. Kim, "Torchattacks: A PyTorch Repository for Adversarial Attacks", arXiv:2010.01950.
.. [4] F. Croce, M. Hein, "Reliable evaluation of adversarial robustness with an ensemble of
   diverse parameter-free attacks", ICML 2020, arXiv:2003.01690 (APGD-CE, APGD-T).
.. [5] M. Andriushchenko, F. Croce, N. Flammarion, M. Hein, "Square Attack: a query-efficient
   black-box adversarial attack via random search", ECCV 2020, arXiv:1912.00049.
"""

from __future__ import annotations

import math
import numbers
from collections.abc import Callable

import torch
import torchattacks
from torch import nn

from topolip import roster
from topolip.perturbations.corruptions import corrupt
from topolip.tensors import (
    Logits,
    check_classifier_inputs,
    check_count,
    check_images,
    eval_mode,
    model_device,
)

__all__ = ["ATTACKS", "PERTURBATIONS", "autoattack", "check_strength", "fgsm",
           "perturb", "perturb_at", "pgd", "random_sign", "square"]

#: Adversarial attacks, run through torchattacks (strength: the L∞ budget ``eps``): the
#: roster's adversarial kinds (:func:`topolip.roster.kind_names`).
ATTACKS: tuple[str, ...] = roster.kind_names("adversarial")

#: Every kind :func:`perturb` takes, with the name of its strength parameter
#: (:attr:`topolip.roster.Kind.strength`); the roster's corruptions are
#: :data:`topolip.perturbations.corruptions.CORRUPTIONS` (``tests/test_roster.py``).
PERTURBATIONS: dict[str, str] = {k.name: k.strength for k in roster.KINDS}


def fgsm(model: nn.Module, x: torch.Tensor, y: torch.Tensor, eps: float, *,
         batch_size: int = 256) -> torch.Tensor:
    r"""Fast gradient sign method (Goodfellow et al. 2015): one L∞ step of size ``eps``.

    .. math::
        \tilde x = \mathrm{clip}_{[0, 1]}\bigl(x + \varepsilon\,
        \mathrm{sign}\,\nabla_x \mathcal{L}_{\mathrm{CE}}(f(x), y)\bigr)

    Parameters
    ----------
    model : torch.nn.Module
        Classifier from images in [0, 1] to logits ``(N, K)``; run in eval mode on its device.
    x : torch.Tensor of shape (N, C, H, W), floating point
        Clean images, pixels in [0, 1].
    y : torch.Tensor of shape (N,), integer
        True labels in ``0 .. K-1``.
    eps : float
        L∞ budget in pixel units, in [0, 1]; 0 returns a copy of ``x`` without running the model.
    batch_size : int, default=256
        Samples per forward/backward pass (memory only: the result depends on it only through
        float rounding, which can flip the sign of a gradient entry that is 0 up to rounding).

    Returns
    -------
    torch.Tensor of shape (N, C, H, W)
        Adversarial images on ``x``'s device, dtype of ``x``; ``|x̃ - x| <= eps`` and
        ``0 <= x̃ <= 1`` elementwise.

    Raises
    ------
    ValueError
        If ``eps`` is negative, above 1 or not finite; ``x`` is not a non-empty floating
        (N, C, H, W) tensor, holds NaN/inf or pixels outside [0, 1]; ``y`` is not N integer
        labels within the model's K logits; or the model cannot take ``x``'s shape.

    See Also
    --------
    pgd : the iterated, projected version (stronger for the same ``eps``).

    References
    ----------
    .. [1] I. J. Goodfellow, J. Shlens, C. Szegedy, "Explaining and Harnessing Adversarial
       Examples", ICLR 2015, arXiv:1412.6572.

    Examples
    --------
    >>> _ = torch.manual_seed(0)
    >>> model = nn.Sequential(nn.Flatten(), nn.Linear(4, 3))
    >>> x, y = torch.rand(5, 1, 2, 2), torch.tensor([0, 1, 2, 0, 1])
    >>> adv = fgsm(model, x, y, eps=0.1)
    >>> bool((adv - x).abs().max() <= 0.1 + 1e-6), bool(torch.equal(fgsm(model, x, y, 0.0), x))
    (True, True)
    """
    eps = _check_eps(eps)
    _check_batch_size(batch_size)
    check_classifier_inputs(model, x, y)
    if eps == 0.0:
        return x.detach().clone()
    return _run_attack(model, x, y, lambda m: torchattacks.FGSM(m, eps=eps), batch_size)


def pgd(model: nn.Module, x: torch.Tensor, y: torch.Tensor, eps: float, *,
        alpha: float | None = None, steps: int = 10, restarts: int = 1,
        random_start: bool = True, seed: int = 0, batch_size: int = 256) -> torch.Tensor:
    r"""Projected gradient descent in the L∞ ball (Madry et al. 2018), through torchattacks.

    .. math::
        x^{0} = \mathrm{clip}_{[0,1]}(x + u),\ u \sim U[-\varepsilon, \varepsilon]^{d};\quad
        x^{t+1} = \Pi_{B_\infty(x, \varepsilon) \cap [0, 1]^d}\bigl(x^{t} + \alpha\,
        \mathrm{sign}\,\nabla_x \mathcal{L}_{\mathrm{CE}}(f(x^{t}), y)\bigr)

    With ``restarts > 1`` PGD runs again from a new random start on the images that the
    previous runs did not fool (``torchattacks.MultiAttack``): an image counts as robust only if
    every restart fails, so the accuracy is the per-image worst case over the restarts.

    Parameters
    ----------
    model : torch.nn.Module
        Classifier from images in [0, 1] to logits ``(N, K)``; run in eval mode on its device.
    x : torch.Tensor of shape (N, C, H, W), floating point
        Clean images, pixels in [0, 1].
    y : torch.Tensor of shape (N,), integer
        True labels in ``0 .. K-1``.
    eps : float
        L∞ budget in pixel units, in [0, 1]; 0 returns a copy of ``x`` without running the model.
    alpha : float, optional
        Step size in pixel units; default ``2.5 * eps / steps`` (Madry et al.'s rule, enough to
        reach the ball's boundary from any start).
    steps : int, default=10
        Number of gradient steps of each run (at least 1).
    restarts : int, default=1
        Runs from independent random starts (at least 1; more than 1 needs ``random_start``).
        Each returned image is the final iterate of the first run that fooled the model, or of
        the clean image where none did.
    random_start : bool, default=True
        Start from a uniform random point of the ball (Madry et al.); else from ``x``.
    seed : int, default=0
        Seed of the random starts. The global RNG state is saved and restored around the call.
    batch_size : int, default=256
        Samples per forward/backward pass.

    Returns
    -------
    torch.Tensor of shape (N, C, H, W)
        Adversarial images on ``x``'s device, dtype of ``x``; ``|x̃ - x| <= eps`` and
        ``0 <= x̃ <= 1`` elementwise.

    Raises
    ------
    ValueError
        As :func:`fgsm`, and if ``alpha`` is not positive and finite, ``steps`` or ``restarts``
        is not a positive integer, or ``restarts > 1`` without ``random_start``.

    Notes
    -----
    The result is deterministic for the same seed, ``batch_size`` and device: torchattacks draws
    the random starts from the global RNG of the model's device, batch after batch and restart
    after restart, which this function seeds inside :func:`torch.random.fork_rng`. With
    ``restarts=1`` the result is that of a single PGD run (the same draws). CUDA's convolution
    backward may add run-to-run noise unless ``torch.use_deterministic_algorithms(True)`` is set.

    References
    ----------
    .. [1] A. Madry, A. Makelov, L. Schmidt, D. Tsipras, A. Vladu, "Towards Deep Learning Models
       Resistant to Adversarial Attacks", ICLR 2018, arXiv:1706.06083.

    Examples
    --------
    >>> _ = torch.manual_seed(0)
    >>> model = nn.Sequential(nn.Flatten(), nn.Linear(4, 3))
    >>> x, y = torch.rand(5, 1, 2, 2), torch.tensor([0, 1, 2, 0, 1])
    >>> adv = pgd(model, x, y, eps=0.1, steps=5, seed=1)
    >>> again = pgd(model, x, y, 0.1, steps=5, seed=1)
    >>> bool((adv - x).abs().max() <= 0.1 + 1e-6), bool(torch.equal(adv, again))
    (True, True)
    >>> adv2 = pgd(model, x, y, 0.1, steps=5, restarts=2, seed=1)
    >>> bool((adv2 - x).abs().max() <= 0.1 + 1e-6)
    True
    """
    eps = _check_eps(eps)
    _check_batch_size(batch_size)
    steps = check_count(steps, "steps")
    restarts = check_count(restarts, "restarts")
    if restarts > 1 and not random_start:
        raise ValueError(f"restarts={restarts} needs random_start=True: without a random start "
                         "every restart is the same run")
    if alpha is None:
        alpha = 2.5 * eps / steps
    elif isinstance(alpha, bool) or not isinstance(alpha, numbers.Real) or not (
            math.isfinite(alpha) and alpha > 0):
        raise ValueError(
            f"alpha (PGD step, pixel units) must be positive and finite, got {alpha!r}"
        )
    check_classifier_inputs(model, x, y)
    if eps == 0.0:
        return x.detach().clone()

    def make(m: nn.Module) -> torchattacks.attack.Attack:
        runs = [torchattacks.PGD(m, eps=eps, alpha=float(alpha), steps=steps,
                                 random_start=bool(random_start)) for _ in range(restarts)]
        return runs[0] if restarts == 1 else torchattacks.MultiAttack(runs)

    return _run_seeded(model, x, y, make, batch_size, seed)


def autoattack(model: nn.Module, x: torch.Tensor, y: torch.Tensor, eps: float, *,
               steps: int = 100, n_target_classes: int = 9, restarts: int = 1, seed: int = 0,
               batch_size: int = 256) -> torch.Tensor:
    r"""APGD-CE then APGD-T (Croce and Hein 2020), per image the first that fools the model.

    The white-box part of AutoAttack's ``standard`` version (its FAB-T and Square parts are
    left out; :func:`square` is run apart as the black-box check): torchattacks' ``APGD``
    (cross-entropy loss, untargeted) and ``APGDT`` (targeted DLR loss, one run per target
    class), combined by ``torchattacks.MultiAttack``. Each APGD run has its own step-size
    schedule (no step size to tune) and starts from a random point of the ball; APGD-T runs only
    on the images that APGD-CE left correctly classified, and each target only on those the
    earlier targets left.

    .. math::
        \mathcal{L}_{\mathrm{DLR-T}}(z, y, t) = -\frac{z_y - z_t}
        {z_{\pi_1} - (z_{\pi_3} + z_{\pi_4})/2}

    with :math:`z_{\pi_1} \ge z_{\pi_2} \ge \dots` the sorted logits and :math:`t` the target.

    Parameters
    ----------
    model : torch.nn.Module
        Classifier from images in [0, 1] to logits ``(N, K)`` with ``K >= 4`` (the DLR loss uses
        the fourth largest logit); run in eval mode on its device.
    x : torch.Tensor of shape (N, C, H, W), floating point
        Clean images, pixels in [0, 1].
    y : torch.Tensor of shape (N,), integer
        True labels in ``0 .. K-1``.
    eps : float
        L∞ budget in pixel units, in [0, 1]; 0 returns a copy of ``x`` without running the model.
    steps : int, default=100
        Iterations of each APGD run (AutoAttack's standard value 100).
    n_target_classes : int, default=9
        Target classes of APGD-T, in ``1 .. K-1``: the ``n_target_classes`` largest logits of
        the clean image after the first (for a correctly classified image, its most likely wrong
        classes). AutoAttack's standard version uses 9 (every wrong class of a 10-class task);
        fewer is a cheaper budget that keeps the strongest targets.
    restarts : int, default=1
        Random restarts of each APGD run (per target class for APGD-T).
    seed : int, default=0
        Seed of the random starts (torchattacks reseeds the global RNG with it in every run;
        the global RNG state is saved and restored around the call).
    batch_size : int, default=256
        Samples per forward/backward pass.

    Returns
    -------
    torch.Tensor of shape (N, C, H, W)
        Adversarial images on ``x``'s device, dtype of ``x``; ``|x̃ - x| <= eps`` and
        ``0 <= x̃ <= 1`` elementwise. An image no run fooled is returned clean.

    Raises
    ------
    ValueError
        As :func:`fgsm`, and if ``steps`` or ``restarts`` is not a positive integer, the model
        has fewer than 4 logits, or ``n_target_classes`` is not in ``1 .. K-1``.

    Notes
    -----
    Gradient steps per image: ``steps * restarts`` for APGD-CE, plus ``steps * restarts`` per
    target class for the images still robust. Deterministic for the same seed, ``batch_size``
    and device.

    References
    ----------
    .. [1] F. Croce, M. Hein, "Reliable evaluation of adversarial robustness with an ensemble
       of diverse parameter-free attacks", ICML 2020, arXiv:2003.01690.

    Examples
    --------
    >>> _ = torch.manual_seed(0)
    >>> model = nn.Sequential(nn.Flatten(), nn.Linear(4, 5))
    >>> x, y = torch.rand(6, 1, 2, 2), torch.tensor([0, 1, 2, 3, 4, 0])
    >>> adv = autoattack(model, x, y, 0.1, steps=10, n_target_classes=2, seed=0)
    >>> again = autoattack(model, x, y, 0.1, steps=10, n_target_classes=2, seed=0)
    >>> bool((adv - x).abs().max() <= 0.1 + 1e-6), bool(torch.equal(adv, again))
    (True, True)
    """
    eps = _check_eps(eps)
    _check_batch_size(batch_size)
    steps = check_count(steps, "steps")
    restarts = check_count(restarts, "restarts")
    n_target_classes = check_count(n_target_classes, "n_target_classes")
    k = check_classifier_inputs(model, x, y)
    if k < 4:
        raise ValueError(f"autoattack needs a model with at least 4 logits (APGD-T's DLR loss "
                         f"uses the fourth largest), got {k}")
    if n_target_classes > k - 1:
        raise ValueError(f"n_target_classes must be in 1..{k - 1} (the model's wrong classes), "
                         f"got {n_target_classes}")
    if eps == 0.0:
        return x.detach().clone()

    def make(m: nn.Module) -> torchattacks.attack.Attack:
        return torchattacks.MultiAttack([
            torchattacks.APGD(m, norm="Linf", eps=eps, steps=steps, n_restarts=restarts,
                              seed=int(seed), loss="ce"),
            torchattacks.APGDT(m, norm="Linf", eps=eps, steps=steps, n_restarts=restarts,
                               seed=int(seed), n_classes=n_target_classes + 1),
        ])

    return _run_seeded(model, x, y, make, batch_size, seed)


def square(model: nn.Module, x: torch.Tensor, y: torch.Tensor, eps: float, *,
           n_queries: int = 5000, p_init: float = 0.8, seed: int = 0,
           batch_size: int = 256) -> torch.Tensor:
    r"""The Square attack (Andriushchenko et al. 2020): black-box random search in the L∞ ball.

    torchattacks' ``Square`` (margin loss, one restart): it reads the model's logits only, never
    its gradients, changing a random square of pixels by ``±eps`` per query and keeping the
    change when the margin :math:`z_y - \max_{k \ne y} z_k` falls. Being gradient-free, it is
    the check of Carlini et al. (2019) that a white-box attack is not blinded by masked
    gradients: on a model whose gradients are honest it is not stronger than APGD.

    Parameters
    ----------
    model : torch.nn.Module
        Classifier from images in [0, 1] to logits ``(N, K)``; run in eval mode on its device.
    x : torch.Tensor of shape (N, C, H, W), floating point
        Clean images, pixels in [0, 1].
    y : torch.Tensor of shape (N,), integer
        True labels in ``0 .. K-1``.
    eps : float
        L∞ budget in pixel units, in [0, 1]; 0 returns a copy of ``x`` without running the model.
    n_queries : int, default=5000
        Query budget per image (forward passes; the search stops early on a fooled image).
    p_init : float, default=0.8
        Initial fraction of pixels in the square (AutoAttack's value), in (0, 1]; the fraction
        shrinks on a schedule scaled to ``n_queries``.
    seed : int, default=0
        Seed of the random search (the global RNG state is saved and restored).
    batch_size : int, default=256
        Samples per forward pass.

    Returns
    -------
    torch.Tensor of shape (N, C, H, W)
        Adversarial images on ``x``'s device, dtype of ``x``; ``|x̃ - x| <= eps`` and
        ``0 <= x̃ <= 1`` elementwise. An image the search did not fool is returned clean.

    Raises
    ------
    ValueError
        As :func:`fgsm`, and if ``n_queries`` is not a positive integer or ``p_init`` is not in
        (0, 1].

    References
    ----------
    .. [1] M. Andriushchenko, F. Croce, N. Flammarion, M. Hein, "Square Attack: a
       query-efficient black-box adversarial attack via random search", ECCV 2020,
       arXiv:1912.00049.
    .. [2] N. Carlini et al., "On Evaluating Adversarial Robustness", arXiv:1902.06705.

    Examples
    --------
    >>> _ = torch.manual_seed(0)
    >>> model = nn.Sequential(nn.Flatten(), nn.Linear(16, 3))
    >>> x, y = torch.rand(4, 1, 4, 4), torch.tensor([0, 1, 2, 0])
    >>> adv = square(model, x, y, 0.1, n_queries=20, seed=0)
    >>> bool((adv - x).abs().max() <= 0.1 + 1e-6)
    True
    >>> bool(torch.equal(adv, square(model, x, y, 0.1, n_queries=20, seed=0)))
    True
    """
    eps = _check_eps(eps)
    _check_batch_size(batch_size)
    n_queries = check_count(n_queries, "n_queries")
    if isinstance(p_init, bool) or not isinstance(p_init, numbers.Real) or not (
            0 < p_init <= 1):
        raise ValueError(f"p_init (fraction of pixels of the first square) must be in (0, 1], "
                         f"got {p_init!r}")
    check_classifier_inputs(model, x, y)
    if eps == 0.0:
        return x.detach().clone()
    return _run_seeded(
        model, x, y,
        lambda m: torchattacks.Square(m, norm="Linf", eps=eps, n_queries=n_queries,
                                      n_restarts=1, p_init=float(p_init), loss="margin",
                                      seed=int(seed)),
        batch_size, seed)


def random_sign(x: torch.Tensor, eps: float, *, seed: int = 0) -> torch.Tensor:
    r"""Random-sign noise of L∞ size ``eps``: the non-adversarial control for FGSM.

    .. math::
        \tilde x = \mathrm{clip}_{[0, 1]}(x + \varepsilon s), \quad
        s \sim \mathrm{Uniform}\{-1, +1\}^{d}

    Every pixel moves by ``eps`` (before clipping) like FGSM's, but in a random direction.

    Parameters
    ----------
    x : torch.Tensor of shape (N, C, H, W), floating point
        Images, pixels in [0, 1].
    eps : float
        L∞ size in pixel units, in [0, 1].
    seed : int, default=0
        Seed of the signs (drawn on the CPU, so the result does not depend on the device).

    Returns
    -------
    torch.Tensor of shape (N, C, H, W)
        On ``x``'s device, dtype of ``x``, in [0, 1].

    Raises
    ------
    ValueError
        If ``eps`` is not in [0, 1] or ``x`` is not a non-empty floating (N, C, H, W) tensor in
        [0, 1].

    Examples
    --------
    >>> x = torch.full((2, 1, 2, 2), 0.5)
    >>> d = random_sign(x, 0.1, seed=0) - x
    >>> again = random_sign(x, 0.1, seed=0) - x
    >>> bool(torch.allclose(d.abs(), torch.tensor(0.1))), bool(torch.equal(d, again))
    (True, True)
    """
    eps = _check_eps(eps)
    check_images(x)
    gen = torch.Generator().manual_seed(int(seed))
    signs = torch.randint(0, 2, x.shape, generator=gen).to(x.dtype) * 2 - 1
    return (x.detach() + eps * signs.to(x.device)).clamp(0.0, 1.0)


def check_strength(kind: str, value) -> float | int:
    """A strength of ``kind`` as :func:`perturb` takes it: ``eps`` (float, pixel units) for
    attacks and random-sign noise, ``severity`` (int) for corruptions.

    Parameters
    ----------
    kind : str
        A key of :data:`PERTURBATIONS`.
    value : float
        The strength; its name (``eps`` or ``severity``) is ``PERTURBATIONS[kind]``.

    Returns
    -------
    float or int

    Raises
    ------
    ValueError
        For an unknown kind, a non-finite or non-numeric value, or a fractional severity.

    Examples
    --------
    >>> check_strength("fgsm", 1 / 4), check_strength("contrast", 3.0)
    (0.25, 3)
    >>> {PERTURBATIONS["contrast"]: check_strength("contrast", 3)}
    {'severity': 3}
    """
    if kind not in PERTURBATIONS:
        raise ValueError(f"unknown perturbation {kind!r}; known: {list(PERTURBATIONS)}")
    if isinstance(value, bool) or not isinstance(value, numbers.Real) or not math.isfinite(value):
        raise ValueError(f"strength of {kind!r} must be a finite number, got {value!r}")
    if PERTURBATIONS[kind] == "severity":
        if int(value) != value:
            raise ValueError(f"severity of {kind!r} must be an integer 0..5, got {value!r}")
        return int(value)
    return float(value)


def perturb_at(kind: str, model: nn.Module | None, x: torch.Tensor, y: torch.Tensor | None,
               strength: float, *, seed: int = 0, pgd_steps: int = 10, pgd_restarts: int = 1,
               batch_size: int | None = None, **options) -> torch.Tensor:
    """:func:`perturb` by ``(kind, strength)``: the strength named for its kind, PGD's steps.

    The one place where a strength becomes ``eps`` or ``severity`` (:func:`check_strength`).
    An ``eps`` of 0 returns ``x`` itself: the L∞ ball of radius 0 holds the clean images only.

    Parameters
    ----------
    kind : str
        A key of :data:`PERTURBATIONS`.
    model : torch.nn.Module or None
        The attacked classifier; needed by the attacks only.
    x : torch.Tensor of shape (N, C, H, W), floating point
        Clean images, pixels in [0, 1].
    y : torch.Tensor of shape (N,) or None
        True labels; needed by the attacks only.
    strength : float
        ε in pixel units (attacks, random-sign noise; L∞) or severity 0..5 (corruptions).
    seed : int, default=0
        Seed of the random parts (PGD's start, noise, corruptions).
    pgd_steps : int, default=10
        Steps of PGD (step size ``2.5 ε / steps``).
    pgd_restarts : int, default=1
        Random restarts of PGD (per-image worst case, see :func:`pgd`).
    batch_size : int, optional
        Images per attack pass of the attacks (memory only; their default when omitted).
    **options
        Further options of the kind's function (:func:`perturb`), e.g. ``n_target_classes``
        of ``autoattack`` or ``n_queries`` of ``square``.

    Returns
    -------
    torch.Tensor of shape (N, C, H, W)
        The perturbed images, pixels in [0, 1].

    Raises
    ------
    ValueError
        As :func:`check_strength` and :func:`perturb`.

    Examples
    --------
    >>> x = torch.rand(2, 1, 4, 4)
    >>> perturb_at("fgsm", None, x, None, 0.0) is x
    True
    >>> bool(torch.equal(perturb_at("contrast", None, x, None, 0), x))
    True
    """
    value = check_strength(kind, strength)
    unit = PERTURBATIONS[kind]
    if unit == "eps" and value == 0:
        check_images(x)
        return x
    if kind == "pgd":
        options = {"steps": pgd_steps, "restarts": pgd_restarts, **options}
    if batch_size is not None and kind in ATTACKS:
        options["batch_size"] = batch_size
    return perturb(kind, model, x, y, seed=seed, **{unit: value}, **options)


def perturb(kind: str, model: nn.Module | None, x: torch.Tensor, y: torch.Tensor | None, *,
            eps: float | None = None, severity: int | None = None, seed: int = 0,
            **options) -> torch.Tensor:
    """Perturb ``x`` with any kind of :data:`PERTURBATIONS`: one call for the notebooks.

    Parameters
    ----------
    kind : str
        An attack of :data:`ATTACKS` (``"fgsm"``, ``"pgd"``, ``"autoattack"``, ``"square"``) or
        ``"random_sign"`` (strength ``eps``), or a corruption of
        :data:`topolip.perturbations.corruptions.CORRUPTIONS` (strength ``severity``).
    model : torch.nn.Module or None
        The attacked classifier; needed by the attacks only.
    x : torch.Tensor of shape (N, C, H, W), floating point
        Clean images, pixels in [0, 1].
    y : torch.Tensor of shape (N,) or None
        True labels; needed by the attacks only.
    eps : float, optional
        L∞ budget in pixel units for the attacks and ``random_sign``.
    severity : int, optional
        0..5 for the corruptions (see :data:`topolip.perturbations.corruptions.SEVERITIES`).
    seed : int, default=0
        Seed of the random starts (PGD, APGD), the random search (Square), the random signs or
        the corruption.
    **options
        Further keywords of :func:`fgsm` (``batch_size``), :func:`pgd` (``batch_size``,
        ``alpha``, ``steps``, ``restarts``, ``random_start``), :func:`autoattack`
        (``batch_size``, ``steps``, ``n_target_classes``, ``restarts``) or :func:`square`
        (``batch_size``, ``n_queries``, ``p_init``).

    Returns
    -------
    torch.Tensor of shape (N, C, H, W)
        The perturbed images, pixels in [0, 1].

    Raises
    ------
    ValueError
        If ``kind`` is unknown, its strength parameter is missing, the other one is given, an
        attack lacks ``model`` or ``y``, an option does not apply, or the called function raises.

    References
    ----------
    .. [1] I. J. Goodfellow, J. Shlens, C. Szegedy, arXiv:1412.6572 (FGSM).
    .. [2] A. Madry et al., arXiv:1706.06083 (PGD).
    .. [3] F. Croce, M. Hein, arXiv:2003.01690 (APGD-CE, APGD-T).
    .. [4] M. Andriushchenko et al., arXiv:1912.00049 (Square).
    .. [5] D. Hendrycks, T. Dietterich, arXiv:1903.12261 (corruptions).

    Examples
    --------
    >>> _ = torch.manual_seed(0)
    >>> model = nn.Sequential(nn.Flatten(), nn.Linear(4, 3))
    >>> x, y = torch.rand(5, 1, 2, 2), torch.tensor([0, 1, 2, 0, 1])
    >>> perturb("pgd", model, x, y, eps=0.05, seed=0, steps=3).shape
    torch.Size([5, 1, 2, 2])
    >>> bool(torch.equal(perturb("contrast", None, x, None, severity=0), x))
    True
    >>> perturb("gaussian_blur", None, x, None, eps=0.1)
    Traceback (most recent call last):
    ...
    ValueError: perturbation 'gaussian_blur' takes severity=..., not eps
    """
    if kind not in PERTURBATIONS:
        raise ValueError(f"unknown perturbation {kind!r}; known: {list(PERTURBATIONS)}")
    param = PERTURBATIONS[kind]
    given, other = (eps, severity) if param == "eps" else (severity, eps)
    other_name = "severity" if param == "eps" else "eps"
    if other is not None:
        raise ValueError(f"perturbation {kind!r} takes {param}=..., not {other_name}")
    if given is None:
        raise ValueError(f"perturbation {kind!r} needs {param}=...")
    allowed = _OPTIONS.get(kind, set())
    unknown = sorted(set(options) - allowed)
    if unknown:
        raise ValueError(f"perturbation {kind!r} takes no option(s) {unknown}; "
                         f"it takes {sorted(allowed) or 'none'}")
    if kind in ATTACKS and (model is None or y is None):
        raise ValueError(f"attack {kind!r} needs the model and the labels y")
    if kind == "fgsm":
        return fgsm(model, x, y, eps, **options)
    if kind == "pgd":
        return pgd(model, x, y, eps, seed=seed, **options)
    if kind == "autoattack":
        return autoattack(model, x, y, eps, seed=seed, **options)
    if kind == "square":
        return square(model, x, y, eps, seed=seed, **options)
    if kind == "random_sign":
        return random_sign(x, eps, seed=seed)
    return corrupt(x, kind, severity, seed=seed)


#: The options :func:`perturb` passes on, per attack.
_OPTIONS: dict[str, set[str]] = {
    "fgsm": {"batch_size"},
    "pgd": {"batch_size", "alpha", "steps", "restarts", "random_start"},
    "autoattack": {"batch_size", "steps", "n_target_classes", "restarts"},
    "square": {"batch_size", "n_queries", "p_init"},
}


def _run_attack(model: nn.Module, x: torch.Tensor, y: torch.Tensor,
                make: Callable[[nn.Module], torchattacks.attack.Attack],
                batch_size: int) -> torch.Tensor:
    device = model_device(model)
    dtype = next(model.parameters()).dtype
    wrapped = Logits(model)
    out = torch.empty_like(x, device=x.device)
    with eval_mode(model), torch.enable_grad():
        attack = make(wrapped)
        for start in range(0, x.shape[0], batch_size):
            sl = slice(start, start + batch_size)
            xb = x[sl].detach().to(device, dtype)
            yb = y[sl].detach().to(device, torch.long)
            out[sl] = attack(xb, yb).detach().to(x.device, x.dtype)
    return out


def _run_seeded(model: nn.Module, x: torch.Tensor, y: torch.Tensor,
                make: Callable[[nn.Module], torchattacks.attack.Attack], batch_size: int,
                seed: int) -> torch.Tensor:
    """:func:`_run_attack` with the global RNG (CPU and the model's CUDA device) seeded with
    ``seed`` and restored afterwards: torchattacks draws random starts from it, and APGD and
    Square reseed it themselves."""
    device = model_device(model)
    devices = [device] if device.type == "cuda" else []
    with torch.random.fork_rng(devices=devices):
        torch.manual_seed(int(seed))
        return _run_attack(model, x, y, make, batch_size)


def _check_eps(eps: float) -> float:
    if isinstance(eps, bool) or not isinstance(eps, numbers.Real) or not math.isfinite(eps):
        raise ValueError(f"eps must be a finite number in [0, 1] (pixel units), got {eps!r}")
    if eps < 0:
        raise ValueError(f"eps must be >= 0 (an L-inf radius in pixel units), got {eps}")
    if eps > 1:
        raise ValueError(f"eps={eps} exceeds 1, the whole pixel range: eps is in pixel units of "
                         "images in [0, 1] (write 8/255, not 8)")
    return float(eps)


def _check_batch_size(batch_size: int) -> None:
    if isinstance(batch_size, bool) or not isinstance(batch_size, numbers.Integral) \
            or batch_size < 1:
        raise ValueError(f"batch_size must be a positive integer, got {batch_size!r}")
