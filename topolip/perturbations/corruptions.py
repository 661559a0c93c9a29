r"""Common corruptions at severities 0..5, after Hendrycks & Dietterich (2019), with torchvision.

Every corruption maps a batch ``(N, C, H, W)`` of images in [0, 1] to a batch of the same shape,
dtype and device, clamped to [0, 1]; severity 0 returns the input unchanged (an exact copy);
the random ones (noise, rotation sign, elastic field) draw from a ``torch.Generator`` seeded with
``seed`` on the CPU, so the output is the same on every machine and device for the same seed
and batch.

Severity table (the companion's choice for 28×28 and 32×32 images; :data:`SEVERITIES`):

==================  =====================================  ==================================
kind                parameter (unit)                       severity 1, 2, 3, 4, 5
==================  =====================================  ==================================
``gaussian_noise``  ``sigma``: noise s.d. (pixel units)    0.08, 0.12, 0.18, 0.26, 0.38
``gaussian_blur``   ``sigma``: kernel s.d. (pixels)        0.5, 0.75, 1.0, 1.5, 2.0
``contrast``        ``factor``: kept contrast (1 = none)   0.75, 0.5, 0.4, 0.3, 0.15
``rotation``        ``degrees``: angle, random sign        10, 20, 30, 40, 50
``elastic``         ``alpha`` (pixels), ``sigma`` (px)     alpha 10, 20, 30, 40, 50; sigma 3
==================  =====================================  ==================================

Gaussian noise uses ImageNet-C's standard deviations and contrast CIFAR-10-C's factors
(Hendrycks & Dietterich 2019); blur, rotation and elastic deformation are scaled for small
images (a blur of s.d. 2 px or an RMS displacement of about 1.6 px already blurs a 28×28 digit
heavily). Elastic deformation follows torchvision's ``ElasticTransform`` convention: a uniform
random field in [-1, 1] per axis, smoothed by a Gaussian of s.d. ``sigma`` pixels and scaled so
that ``alpha`` is the displacement, in pixels, of an unsmoothed field of amplitude 2; each image
gets its own field.

References
----------
.. [1] D. Hendrycks, T. Dietterich, "Benchmarking Neural Network Robustness to Common
   Corruptions and Perturbations", ICLR 2019, arXiv:1903.12261.
.. [2] P. Y. Simard, D. Steinkraus, J. C. Platt, "Best Practices for Convolutional Neural
   Networks Applied to Visual Document Analysis", ICDAR 2003 (elastic deformation).
"""

from __future__ import annotations

import math
import numbers

import torch
from torchvision.transforms.v2 import InterpolationMode
from torchvision.transforms.v2 import functional as TF

from topolip.tensors import check_images

__all__ = ["CORRUPTIONS", "MAX_SEVERITY", "SEVERITIES", "corrupt", "corruption_params"]

MAX_SEVERITY = 5

#: ``{kind: (parameters at severity 1, ..., parameters at severity 5)}``; units in the module
#: docstring. Severity 0 is the identity for every kind.
SEVERITIES: dict[str, tuple[dict[str, float], ...]] = {
    "gaussian_noise": tuple({"sigma": s} for s in (0.08, 0.12, 0.18, 0.26, 0.38)),
    "gaussian_blur": tuple({"sigma": s} for s in (0.5, 0.75, 1.0, 1.5, 2.0)),
    "contrast": tuple({"factor": c} for c in (0.75, 0.5, 0.4, 0.3, 0.15)),
    "rotation": tuple({"degrees": d} for d in (10.0, 20.0, 30.0, 40.0, 50.0)),
    "elastic": tuple({"alpha": a, "sigma": 3.0} for a in (10.0, 20.0, 30.0, 40.0, 50.0)),
}

#: The corruption kinds, in the order the notebooks report them.
CORRUPTIONS: tuple[str, ...] = tuple(SEVERITIES)


def corruption_params(kind: str, severity: int) -> dict[str, float]:
    """Parameters of corruption ``kind`` at ``severity`` (a copy of a :data:`SEVERITIES` row).

    Parameters
    ----------
    kind : str
        One of :data:`CORRUPTIONS`.
    severity : int
        0 (identity, no parameters: ``{}``) to 5.

    Returns
    -------
    dict of str to float
        Units as in the module's severity table.

    Raises
    ------
    ValueError
        If ``kind`` is unknown or ``severity`` is not an integer in 0..5.

    Examples
    --------
    >>> corruption_params("elastic", 2)
    {'alpha': 20.0, 'sigma': 3.0}
    >>> corruption_params("contrast", 0)
    {}
    """
    _check_kind_severity(kind, severity)
    return {} if severity == 0 else dict(SEVERITIES[kind][int(severity) - 1])


def corrupt(x: torch.Tensor, kind: str, severity: int, *, seed: int = 0) -> torch.Tensor:
    r"""Corrupt a batch of images with ``kind`` at ``severity`` (Hendrycks & Dietterich 2019).

    Parameters
    ----------
    x : torch.Tensor of shape (N, C, H, W), floating point
        Images, pixels in [0, 1]. ``contrast`` needs ``C`` in {1, 3}.
    kind : str
        One of :data:`CORRUPTIONS`: ``"gaussian_noise"``, ``"gaussian_blur"``, ``"contrast"``,
        ``"rotation"``, ``"elastic"``.
    severity : int
        0 (identity) to 5; parameters in :data:`SEVERITIES` and the module docstring.
    seed : int, default=0
        Seed of the noise, the rotation signs and the elastic fields (drawn on the CPU, so the
        result does not depend on the device).

    Returns
    -------
    torch.Tensor of shape (N, C, H, W)
        Same dtype and device as ``x``, pixels clamped to [0, 1]; a copy of ``x`` at severity 0.

    Raises
    ------
    ValueError
        If ``kind`` or ``severity`` is invalid, ``x`` is not a non-empty floating (N, C, H, W)
        tensor, holds NaN/inf or pixels outside [0, 1], or ``contrast`` gets ``C`` not in {1, 3}.

    Notes
    -----
    ``gaussian_noise``: :math:`\mathrm{clip}(x + \sigma z)`, :math:`z \sim N(0, I)`.
    ``gaussian_blur``: ``torchvision`` Gaussian blur, kernel side :math:`2\lceil 3\sigma\rceil+1`,
    reflect padding. ``contrast``: :math:`c\,x + (1 - c)\,\bar{x}_{\mathrm{gray}}` per image
    (``adjust_contrast``). ``rotation``: about the centre by ``±degrees`` (sign drawn per image),
    bilinear, black fill. ``elastic``: ``torchvision``'s ``elastic`` with one seeded displacement
    field per image, bilinear, black fill.

    References
    ----------
    .. [1] D. Hendrycks, T. Dietterich, "Benchmarking Neural Network Robustness to Common
       Corruptions and Perturbations", ICLR 2019, arXiv:1903.12261.

    Examples
    --------
    >>> x = torch.rand(4, 1, 28, 28, generator=torch.Generator().manual_seed(0))
    >>> bool(torch.equal(corrupt(x, "gaussian_blur", 0), x))
    True
    >>> y = corrupt(x, "gaussian_noise", 3, seed=1)
    >>> again = corrupt(x, "gaussian_noise", 3, seed=1)
    >>> y.shape, bool(y.min() >= 0 and y.max() <= 1), bool(torch.equal(y, again))
    (torch.Size([4, 1, 28, 28]), True, True)
    """
    _check_kind_severity(kind, severity)
    _check_images(x, kind)
    if severity == 0:
        return x.clone()
    params = SEVERITIES[kind][int(severity) - 1]
    gen = torch.Generator().manual_seed(int(seed))
    out = _APPLY[kind](x, gen=gen, **params)
    return out.clamp(0.0, 1.0)


def _gaussian_noise(x: torch.Tensor, *, gen: torch.Generator, sigma: float) -> torch.Tensor:
    z = torch.randn(x.shape, generator=gen, dtype=x.dtype)
    return x + sigma * z.to(x.device)


def _gaussian_blur(x: torch.Tensor, *, gen: torch.Generator,  # noqa: ARG001 - deterministic
                   sigma: float) -> torch.Tensor:
    k = 2 * math.ceil(3 * sigma) + 1
    return TF.gaussian_blur(x, kernel_size=[k, k], sigma=[sigma, sigma])


def _contrast(x: torch.Tensor, *, gen: torch.Generator,  # noqa: ARG001 - deterministic
              factor: float) -> torch.Tensor:
    return TF.adjust_contrast(x, contrast_factor=factor)


def _rotation(x: torch.Tensor, *, gen: torch.Generator, degrees: float) -> torch.Tensor:
    positive = torch.rand(x.shape[0], generator=gen) < 0.5
    out = torch.empty_like(x)
    for mask, angle in ((positive, degrees), (~positive, -degrees)):
        idx = mask.nonzero().flatten().to(x.device)
        if len(idx):
            out[idx] = TF.rotate(x[idx], angle=angle, interpolation=InterpolationMode.BILINEAR,
                                 fill=0.0)
    return out


def _elastic(x: torch.Tensor, *, gen: torch.Generator, alpha: float, sigma: float) -> torch.Tensor:
    n, _, h, w = x.shape
    k = int(8 * sigma + 1)
    k += k % 2 == 0  # odd kernel, as torchvision's ElasticTransform
    # One field per image, drawn as ElasticTransform.make_params draws it (but from `gen`):
    # dx, dy uniform in [-1, 1], smoothed, in normalized grid units (1 unit = size/2 pixels).
    dx = TF.gaussian_blur(torch.rand(n, 1, h, w, generator=gen) * 2 - 1, [k, k], [sigma, sigma])
    dy = TF.gaussian_blur(torch.rand(n, 1, h, w, generator=gen) * 2 - 1, [k, k], [sigma, sigma])
    fields = torch.cat([dx * alpha / w, dy * alpha / h], 1).permute(0, 2, 3, 1)  # (n, h, w, 2)
    out = torch.empty_like(x)
    for i in range(n):
        out[i] = TF.elastic(x[i:i + 1], displacement=fields[i:i + 1].to(x.device),
                            interpolation=InterpolationMode.BILINEAR, fill=0.0)[0]
    return out


_APPLY = {
    "gaussian_noise": _gaussian_noise,
    "gaussian_blur": _gaussian_blur,
    "contrast": _contrast,
    "rotation": _rotation,
    "elastic": _elastic,
}


def _check_kind_severity(kind: str, severity: int) -> None:
    if kind not in SEVERITIES:
        raise ValueError(f"unknown corruption {kind!r}; known: {list(CORRUPTIONS)}")
    if (isinstance(severity, bool) or not isinstance(severity, numbers.Integral)
            or not 0 <= severity <= MAX_SEVERITY):
        raise ValueError(
            f"severity must be an integer in 0..{MAX_SEVERITY} (0 = clean), got {severity!r}"
        )


def _check_images(x: torch.Tensor, kind: str) -> None:
    check_images(x)
    if kind == "contrast" and x.shape[1] not in (1, 3):
        raise ValueError(f"contrast needs 1 or 3 channels (grayscale or RGB), got {x.shape[1]}")
