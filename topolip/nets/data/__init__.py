"""Data sets: the embedded MNIST digits (default) and CIFAR-10 from a local folder.

Out-of-distribution sets are in :mod:`topolip.perturbations.ood_sets`. The package defines
:func:`load_dataset` (the one entry point by name) and re-exports nothing: the loaders are in
:mod:`.mnist` and :mod:`.cifar`, the split in :mod:`.split`."""

from __future__ import annotations

from pathlib import Path

from topolip import roster
from topolip.nets.data import cifar, mnist, split

__all__ = ["DATASETS", "load_dataset"]

DATASETS = roster.dataset_names()


def load_dataset(name: str, *, n_train: int, n_test: int, seed: int = 0,
                 root: str | Path | None = None) -> split.ImageSplit:
    """Load data set ``name`` (``"mnist"``: the embedded digits; ``"cifar10"``: from ``root``).

    Raises
    ------
    ValueError
        If ``name`` is unknown (the known names are listed), or ``name="cifar10"`` without a
        ``root`` (the folder holding ``cifar-10-batches-py/``).

    Examples
    --------
    >>> load_dataset("mnist", n_train=20, n_test=10).image_shape
    (1, 28, 28)
    """
    if name == "mnist":
        return mnist.load_mnist(n_train=n_train, n_test=n_test, seed=seed)
    if name == "cifar10":
        if root is None:
            raise ValueError("root: load_dataset('cifar10', ...) needs root=, the folder holding "
                             "cifar-10-batches-py/ (the profiles' data_root, e.g. data/cifar10)")
        return cifar.load_cifar10(root, n_train=n_train, n_test=n_test, seed=seed)
    raise ValueError(f"unknown dataset {name!r}; known: {list(DATASETS)}")
