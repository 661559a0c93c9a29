"""CIFAR-10 (the paper's data set) from a local folder, through ``torchvision.datasets.CIFAR10``.

The loader reads torchvision's layout, ``root/cifar-10-batches-py/`` holding ``data_batch_1`` ..
``data_batch_5``, ``test_batch`` and ``batches.meta`` (the pickles of the "CIFAR-10 python
version"), and checks their md5 sums as torchvision does. It downloads only when asked.
"""

from __future__ import annotations

import os
import pickle
from pathlib import Path

import numpy as np
import torch

from topolip.nets.data.split import ImageSplit, stratified_split

__all__ = ["CIFAR10_CLASSES", "load_cifar10"]

#: Class names in label order (as in ``batches.meta``).
CIFAR10_CLASSES = ("airplane", "automobile", "bird", "cat", "deer", "dog", "frog", "horse",
                   "ship", "truck")

_URL = "https://www.cs.toronto.edu/~kriz/cifar-10-python.tar.gz"


def load_cifar10(root: str | os.PathLike, *, n_train: int, n_test: int, seed: int = 0,
                 download: bool = False) -> ImageSplit:
    """Load class-stratified subsets of CIFAR-10's train and test sets from ``root``.

    Parameters
    ----------
    root : str or path-like
        Folder holding ``cifar-10-batches-py/`` (torchvision's ``root``); a path that ends in
        ``cifar-10-batches-py`` itself is accepted too.
    n_train : int
        Images drawn from the 50,000 training images, class-stratified (at most 50,000).
    n_test : int
        Images drawn from the 10,000 test images, class-stratified (at most 10,000).
    seed : int, default=0
        Seed of the two draws (the same seed gives the same images on every machine).
    download : bool, default=False
        Download and extract the archive (163 MB) into ``root`` when it is missing or
        corrupted; needs a network.

    Returns
    -------
    ImageSplit
        ``name="cifar10"``; ``x_*`` float32 tensors of shape (n, 3, 32, 32), RGB pixels in
        [0, 1] (uint8 / 255, no mean/std normalization); ``y_*`` int64 labels in 0..9
        (:data:`CIFAR10_CLASSES` order). Train images come from the training batches only and
        test images from ``test_batch`` only.

    Raises
    ------
    FileNotFoundError
        If ``root/cifar-10-batches-py`` is missing and ``download`` is False (the message says
        how to get the data).
    ValueError
        If ``root`` is None or empty; if the files are there but fail torchvision's md5 check
        (incomplete or corrupted: the failing files are named), cannot be unpickled as CIFAR-10
        batches (the file is named) or decode to unexpected shapes or labels; or
        ``n_train``/``n_test`` is not a positive integer within the set's size.

    Notes
    -----
    Each record of a batch file is a row of 3072 uint8: the 1024 red pixels row-major, then
    the green, then the blue plane; pixel ``(c, i, j)`` of an image is ``row[1024 c + 32 i +
    j]``. torchvision decodes them to (N, 32, 32, 3); this loader returns (N, 3, 32, 32).
    Only the drawn images are converted to float, so a small draw stays small in memory.

    References
    ----------
    .. [1] A. Krizhevsky, "Learning Multiple Layers of Features from Tiny Images", technical
       report, University of Toronto, 2009. https://www.cs.toronto.edu/~kriz/cifar.html

    Examples
    --------
    >>> load_cifar10("/nonexistent", n_train=10, n_test=10)
    Traceback (most recent call last):
    ...
    FileNotFoundError: CIFAR-10 not found: /nonexistent/cifar-10-batches-py does not exist. ...
    """
    from torchvision.datasets import CIFAR10

    for name, value in (("n_train", n_train), ("n_test", n_test)):
        if isinstance(value, bool) or not isinstance(value, int | np.integer) or value < 1:
            raise ValueError(f"{name} must be a positive integer, got {value!r}")
    if root is None or not isinstance(root, str | os.PathLike) or not str(root).strip():
        raise ValueError(
            f"root: expected the folder that holds (or will hold) cifar-10-batches-py/, got "
            f"{root!r}; pass root='data/cifar10' (the profiles' data_root) or another folder"
        )
    root = Path(root).expanduser()
    if root.name == CIFAR10.base_folder:
        root = root.parent
    folder = root / CIFAR10.base_folder
    if not download and not folder.is_dir():
        raise FileNotFoundError(
            f"CIFAR-10 not found: {folder} does not exist. Pass download=True where a network "
            f"exists, or download {_URL} and extract it into {root} (it creates "
            f"{CIFAR10.base_folder}/)."
        )
    try:
        train = CIFAR10(str(root), train=True, download=download)
        test = CIFAR10(str(root), train=False, download=False)
    except RuntimeError as err:  # torchvision: "Dataset not found or corrupted"
        expected = [f for f, _ in CIFAR10.train_list + CIFAR10.test_list]
        missing = [f for f in [*expected, CIFAR10.meta["filename"]] if not (folder / f).is_file()]
        detail = f"missing {missing}" if missing else _failing_md5(folder)
        raise ValueError(
            f"CIFAR-10 under {folder} is incomplete or corrupted ({detail}); delete the folder "
            f"and extract {_URL} again, or pass download=True where a network exists"
        ) from err
    except (pickle.UnpicklingError, EOFError, KeyError, TypeError, ValueError, AttributeError,
            IndexError, ImportError, UnicodeDecodeError) as err:  # a file that is no batch
        raise ValueError(
            f"CIFAR-10 file {_unreadable(folder) or folder} cannot be read as a CIFAR-10 "
            f"batch ({type(err).__name__}: {err}); delete the folder and extract {_URL} again"
        ) from err
    for part, ds in (("train", train), ("test", test)):
        data, targets = np.asarray(ds.data), np.asarray(ds.targets)
        if (data.ndim != 4 or data.shape[1:] != (32, 32, 3) or data.dtype != np.uint8
                or targets.shape != (len(data),) or len(data) == 0
                or targets.min() < 0 or targets.max() > 9):
            raise ValueError(
                f"CIFAR-10 under {folder} holds an unexpected {part} set (images "
                f"{data.shape} {data.dtype}, labels {targets.shape}); delete the folder and "
                f"extract {_URL} again"
            )
    x_train, y_train = _draw(train, n_train, seed, "train")
    x_test, y_test = _draw(test, n_test, seed, "test")
    return ImageSplit(name="cifar10", x_train=x_train, y_train=y_train, x_test=x_test,
                      y_test=y_test)


def _failing_md5(folder: Path) -> str:
    """Which files of ``folder`` fail torchvision's md5 check, in words."""
    from torchvision.datasets import CIFAR10
    from torchvision.datasets.utils import check_integrity

    files = [*CIFAR10.train_list, *CIFAR10.test_list,
             [CIFAR10.meta["filename"], CIFAR10.meta["md5"]]]
    bad = [f"{folder / name} ({(folder / name).stat().st_size} bytes)" for name, md5 in files
           if not check_integrity(str(folder / name), md5)]
    if not bad:
        return "a file fails torchvision's md5 check"
    return (f"{', '.join(bad)} fail{'s' if len(bad) == 1 else ''} torchvision's md5 check: "
            "truncated or altered")


def _unreadable(folder: Path) -> Path | None:
    """The first CIFAR-10 file of ``folder`` that does not unpickle to a batch or meta dict."""
    from torchvision.datasets import CIFAR10

    names = [n for n, _ in [*CIFAR10.train_list, *CIFAR10.test_list]]
    for name in [*names, CIFAR10.meta["filename"]]:
        path = folder / name
        try:
            with open(path, "rb") as f:
                entry = pickle.load(f, encoding="latin1")
            keys = ("data", "labels") if name in names else (CIFAR10.meta["key"],)
            if not isinstance(entry, dict) or not all(
                    k in entry or (k == "labels" and "fine_labels" in entry) for k in keys):
                return path
        except Exception:
            return path
    return None


def _draw(dataset, n: int, seed: int, part: str) -> tuple[torch.Tensor, torch.Tensor]:
    """``n`` class-stratified images of a torchvision CIFAR10 set, float32 (n, 3, 32, 32)."""
    labels = torch.as_tensor(np.asarray(dataset.targets, dtype=np.int64))
    if n > len(labels):
        raise ValueError(f"n_{part}={n} exceeds the {len(labels)} CIFAR-10 {part} images")
    # Split indices rather than images, so only the drawn images are converted to float.
    index = torch.arange(len(labels))
    idx = stratified_split(index, labels, n_train=n, n_test=0, seed=seed,
                           name=f"cifar10 {part}").x_train.numpy()
    images = dataset.data[idx]  # (n, 32, 32, 3) uint8, as torchvision decodes it
    x = torch.from_numpy(np.ascontiguousarray(images.transpose(0, 3, 1, 2))).float().div_(255.0)
    return x, labels[idx].contiguous()
