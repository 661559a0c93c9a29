"""What a training run is: the model (:class:`ModelSpec`, built by
:func:`topolip.nets.models.build_model`) and its training configuration (:class:`TrainConfig`),
each checked when made. :func:`spec_for` completes a spec from the data's image shape.
"""

from __future__ import annotations

import math
import numbers
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

from torch import nn

from topolip.io import json_plain
from topolip.nets.data.split import ImageSplit
from topolip.nets.models import build_model, check_arch

__all__ = ["ModelSpec", "TrainConfig", "spec_for"]


@dataclass(frozen=True)
class ModelSpec:
    """An architecture name and the keyword parameters of its builder (see ``build_model``)."""

    arch: str
    params: Mapping[str, Any] = field(default_factory=dict)

    def build(self) -> nn.Module:
        """Build the (untrained) model; raises ValueError on an unknown arch or parameter."""
        return build_model(self.arch, **dict(self.params))

    def to_dict(self) -> dict[str, Any]:
        return {"arch": self.arch, "params": json_plain(dict(self.params))}


@dataclass(frozen=True)
class TrainConfig:
    """Hyper-parameters of a training run (AdamW, linear warm-up then cosine learning-rate decay,
    cross-entropy, optional affine augmentation, checkpoint chosen on a validation split).

    Fields
    ------
    epochs, batch_size, lr, weight_decay, seed
        AdamW's peak learning rate and decoupled weight decay; the seed sets the initial weights
        and the per-epoch shuffling and augmentation draws.
    val_size : int, default=0
        Training images held out for validation (:func:`validation_split`: the same images for
        every model of a data split). With ``val_size > 0`` the returned model is the epoch with
        the highest validation accuracy (the later epoch on a tie); with 0, the last epoch.
    warmup : float, default=0
        Fraction of the training steps spent in linear warm-up from 0 to ``lr`` before the
        cosine decay to 0 (per step), the schedule of Loshchilov & Hutter (2017) with the
        warm-up of Goyal et al. (2017).
    rotate, translate, scale : float, default=0
        Random affine augmentation of the training images, torchvision's
        ``transforms.v2.RandomAffine``: rotation up to ``rotate`` degrees, shifts up to
        ``translate`` of the image side, zoom in ``[1 - scale, 1 + scale]``; all 0: none.

    Raises
    ------
    ValueError
        Naming the field, if a value has the wrong type (text, bool, NaN) or is out of range
        (epochs < 1, batch_size < 1, seed < 0, lr <= 0, weight_decay < 0, val_size < 0,
        warmup outside [0, 0.5], rotate outside [0, 180], translate outside [0, 0.5],
        scale outside [0, 0.5]).
    """

    epochs: int = 5
    batch_size: int = 128
    lr: float = 1e-3
    weight_decay: float = 1e-4
    seed: int = 0
    val_size: int = 0
    warmup: float = 0.0
    rotate: float = 0.0
    translate: float = 0.0
    scale: float = 0.0

    @property
    def augments(self) -> bool:
        """Whether any affine augmentation is drawn."""
        return self.rotate > 0 or self.translate > 0 or self.scale > 0

    def __post_init__(self) -> None:
        for name, low, what in (("epochs", 1, "a positive integer"),
                                ("batch_size", 1, "a positive integer"),
                                ("seed", 0, "a non-negative integer"),
                                ("val_size", 0, "a non-negative integer")):
            value = getattr(self, name)
            if (isinstance(value, bool) or not isinstance(value, numbers.Real)
                    or not math.isfinite(value) or int(value) != value or value < low):
                raise ValueError(f"TrainConfig: {name} must be {what}, got {value!r}")
            object.__setattr__(self, name, int(value))
        for name, what, ok in (("lr", "a positive finite number", lambda v: v > 0),
                               ("weight_decay", "a finite number >= 0", lambda v: v >= 0),
                               ("warmup", "a fraction of the steps in [0, 0.5]",
                                lambda v: 0 <= v <= 0.5),
                               ("rotate", "a number of degrees in [0, 180]",
                                lambda v: 0 <= v <= 180),
                               ("translate", "a fraction of the image side in [0, 0.5]",
                                lambda v: 0 <= v <= 0.5),
                               ("scale", "a zoom fraction in [0, 0.5]", lambda v: 0 <= v <= 0.5)):
            value = getattr(self, name)
            if (isinstance(value, bool) or not isinstance(value, numbers.Real)
                    or not math.isfinite(value) or not ok(value)):
                raise ValueError(f"TrainConfig: {name} must be {what}, got {value!r}")
            object.__setattr__(self, name, float(value))


def spec_for(arch: str, params: Mapping[str, Any], data: ImageSplit) -> ModelSpec:
    """The :class:`ModelSpec` of ``arch`` for ``data``'s image shape.

    ``in_channels``, ``image_size`` and ``num_classes`` are taken from the data when the
    architecture's builder has them and ``params`` does not set them.

    Examples
    --------
    >>> from topolip.nets.data.mnist import load_mnist
    >>> spec_for("vit", {"num_layers": 2}, load_mnist(100, 50)).params["image_size"]
    28
    """
    import inspect

    takes = inspect.signature(check_arch(arch)).parameters
    derived = {"in_channels": data.image_shape[0], "image_size": data.image_shape[1],
               "num_classes": data.num_classes}
    full = {k: v for k, v in derived.items() if k in takes}
    full.update(json_plain(dict(params)))
    return ModelSpec(arch, full)
