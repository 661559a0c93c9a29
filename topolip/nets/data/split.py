"""Train/test splits of image tensors."""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
import torch

__all__ = ["ImageSplit", "stratified_split"]


@dataclass(frozen=True)
class ImageSplit:
    """Images and labels of one data set, split into train and test parts.

    ``x_*``: float32 tensors of shape (n, C, H, W), pixels in [0, 1]; ``y_*``: int64 labels.
    """

    name: str
    x_train: torch.Tensor
    y_train: torch.Tensor
    x_test: torch.Tensor
    y_test: torch.Tensor

    @property
    def num_classes(self) -> int:
        return int(max(self.y_train.max(), self.y_test.max())) + 1

    @property
    def image_shape(self) -> tuple[int, int, int]:
        return tuple(self.x_train.shape[1:])


def stratified_split(x: torch.Tensor, y: torch.Tensor, *, n_train: int, n_test: int, seed: int,
                     name: str) -> ImageSplit:
    """Split ``(x, y)`` into class-stratified train and test parts, deterministically by seed.

    Each class contributes to each part in proportion to its frequency (largest remainders fill
    the last places), and the parts are disjoint.

    Raises
    ------
    ValueError
        If ``n_train + n_test`` exceeds the number of samples.

    Examples
    --------
    >>> x = torch.arange(20.0).reshape(20, 1, 1, 1); y = torch.arange(20) % 2
    >>> s = stratified_split(x, y, n_train=10, n_test=4, seed=0, name="toy")
    >>> s.y_train.bincount().tolist(), s.y_test.bincount().tolist()
    ([5, 5], [2, 2])
    """
    n = len(y)
    if n_train + n_test > n:
        raise ValueError(f"{name}: n_train + n_test = {n_train + n_test} exceeds the {n} samples")
    rng = np.random.default_rng(seed)
    labels = y.numpy()
    classes, counts = np.unique(labels, return_counts=True)

    def quota(total: int) -> np.ndarray:
        exact = counts * total / n
        q = np.floor(exact).astype(int)
        order = np.argsort(-(exact - q), kind="stable")
        q[order[: total - q.sum()]] += 1
        return q

    q_train, q_test = quota(n_train), quota(n_test)
    train_idx, test_idx = [], []
    for c, a, b in zip(classes, q_train, q_test, strict=True):
        idx = rng.permutation(np.flatnonzero(labels == c))
        train_idx.append(idx[:a])
        test_idx.append(idx[a:a + b])
    train_idx = rng.permutation(np.concatenate(train_idx))
    test_idx = rng.permutation(np.concatenate(test_idx))
    return ImageSplit(
        name=name,
        x_train=x[train_idx].contiguous(), y_train=y[train_idx].contiguous(),
        x_test=x[test_idx].contiguous(), y_test=y[test_idx].contiguous(),
    )
