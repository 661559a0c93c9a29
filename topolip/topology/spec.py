"""What decides a TopoLip number, in one frozen value: :class:`TopoLipSpec`.

A displacement ``Δ_ℓ = W_{p,q}(Dgm(H_ℓ(X)), Dgm(H_ℓ(X̃)))`` (book/method.md) depends on how the
diagrams are made (the homological ``degrees``, the greedy subsample ``n_perm``, the
``backend`` that computes them) and on the distance between them (the Wasserstein order ``p``
and the ground metric ``l_q``). These travel together: a notebook builds its spec once from its
parameters (:meth:`TopoLipSpec.from_params`), every diagram set records the spec that made it
(:func:`topolip.topology.metric.layer_diagrams`), and a table refuses diagrams made with another
spec
(:meth:`TopoLipSpec.check_diagrams`), so a noise floor can never compare a subsampled diagram
with a full one.

:func:`check_n_points` is the one range check of the images of a point cloud.

Numpy only: importing this module loads no torch.
"""

from __future__ import annotations

import math
import numbers
from collections.abc import Mapping
from dataclasses import dataclass

from topolip.topology.distances import check_ground_metric, check_order
from topolip.topology.rips import check_backend, check_degrees

__all__ = ["PARAMETERS", "TopoLipSpec", "check_n_perm", "check_n_points"]

#: ``{parameter name: field of TopoLipSpec}``: the notebook and profile parameters that
#: :meth:`TopoLipSpec.from_params` reads.
PARAMETERS: dict[str, str] = {"degrees": "degrees", "p": "p", "q": "q", "n_perm": "n_perm",
                              "persistence_backend": "backend"}


def check_n_perm(n_perm) -> int | None:
    """Validate a greedy-permutation subsample size: ``None`` (every point) or an int ``>= 2``.

    Raises
    ------
    ValueError
        If ``n_perm`` is neither ``None`` nor an int ``>= 2`` (bools are refused).

    Examples
    --------
    >>> check_n_perm(None), check_n_perm(50)
    (None, 50)
    """
    if n_perm is None:
        return None
    if isinstance(n_perm, bool) or not isinstance(n_perm, numbers.Integral) or n_perm < 2:
        raise ValueError(f"n_perm: expected None or an int >= 2, got {n_perm!r}; use None to "
                         "keep every point")
    return int(n_perm)


def check_n_points(n_points, n_images: int, *, floor: bool = False) -> int:
    """The one range check of ``n_points``, the images of each point cloud.

    Parameters
    ----------
    n_points : int
        Images per cloud: ``2 <= n_points <= n_images`` (a Rips diagram needs two points).
    n_images : int
        The images available.
    floor : bool, default=False
        A disjoint clean batch of ``n_points`` images (the noise floor) is drawn as well:
        ``2 * n_points <= n_images``.

    Returns
    -------
    int

    Raises
    ------
    ValueError
        If ``n_points`` is not an int (bools are refused) or out of that range.

    Examples
    --------
    >>> check_n_points(5, 10, floor=True)
    5
    >>> check_n_points(6, 10, floor=True)
    Traceback (most recent call last):
    ...
    ValueError: n_points=6 does not fit: the cloud and the noise floor's disjoint batch need
    2 * n_points <= the 10 images
    """
    if isinstance(n_points, bool) or not isinstance(n_points, numbers.Integral):
        raise ValueError(f"n_points must be an int (images per point cloud), got {n_points!r}")
    if not 2 <= n_points <= n_images:
        raise ValueError(f"n_points must be an int between 2 and the {n_images} images, got "
                         f"{n_points!r}")
    if floor and 2 * n_points > n_images:
        raise ValueError(f"n_points={n_points} does not fit: the cloud and the noise floor's "
                         f"disjoint batch need 2 * n_points <= the {n_images} images")
    return int(n_points)


@dataclass(frozen=True)
class TopoLipSpec:
    """How the diagrams of a TopoLip number are made and compared.

    Attributes
    ----------
    degrees : tuple of int, default=(0, 1)
        Homological degrees of the diagrams, in the order given (the :attr:`label`'s); the
        distance combines them as ``(Σ_k W_{p,q}(D_k, D'_k)^p)^{1/p}``.
    p : float, default=1.0
        Wasserstein order, ``p >= 1`` or ``math.inf`` (bottleneck).
    q : float, default=math.inf
        Ground metric ``l_q`` on the plane, ``q`` in {1, 2, inf}.
    backend : str, default="ripser"
        Who computes the diagrams (:data:`topolip.topology.rips.BACKENDS`). Not part of the
        :attr:`label`: both give the same diagrams up to float32 rounding
        (:func:`topolip.topology.rips.rips_diagrams`), but diagrams of two backends are not mixed.
    n_perm : int or None, default=None
        Greedy-permutation subsample size of every cloud (``None``: every point); it changes
        the diagrams, so it is part of the spec and of the :attr:`label`.

    Raises
    ------
    ValueError
        If ``p < 1``, ``q`` is not 1, 2 or inf, ``degrees`` is empty or holds a negative value,
        ``backend`` is unknown or ``n_perm`` is not ``None`` or an int ``>= 2``.
    ImportError
        If ``backend="gudhi"`` and GUDHI is not installed.

    Examples
    --------
    >>> TopoLipSpec().label
    'W_{p=1, q=inf}, degrees H0+H1'
    >>> TopoLipSpec(degrees=(0,), n_perm=50).label
    'W_{p=1, q=inf}, degrees H0, greedy subsample of 50 points'
    """

    degrees: tuple[int, ...] = (0, 1)
    p: float = 1.0
    q: float = math.inf
    backend: str = "ripser"
    n_perm: int | None = None

    def __post_init__(self) -> None:
        degrees = self.degrees
        check_degrees(degrees)  # the order given is kept: it is the label's
        degrees = (degrees,) if isinstance(degrees, numbers.Integral) else degrees
        object.__setattr__(self, "degrees", tuple(int(k) for k in degrees))
        object.__setattr__(self, "p", check_order(self.p))
        object.__setattr__(self, "q", check_ground_metric(self.q))
        object.__setattr__(self, "backend", check_backend(self.backend))
        object.__setattr__(self, "n_perm", check_n_perm(self.n_perm))

    @classmethod
    def from_params(cls, params: Mapping) -> TopoLipSpec:
        """The spec of a notebook's or profile's parameters (:data:`PARAMETERS`).

        Parameters
        ----------
        params : mapping
            Holds ``degrees``, ``p``, ``q``, ``n_perm`` and ``persistence_backend`` (other
            keys are ignored; an absent key takes the field's default).

        Raises
        ------
        ValueError
            If a value is invalid; the message names the parameter.
        ImportError
            If ``persistence_backend="gudhi"`` and GUDHI is not installed.

        Examples
        --------
        >>> TopoLipSpec.from_params({"degrees": [0, 1], "p": 2, "q": 2, "n_perm": None,
        ...                          "persistence_backend": "ripser", "n_points": 100})
        TopoLipSpec(degrees=(0, 1), p=2.0, q=2.0, backend='ripser', n_perm=None)
        >>> TopoLipSpec.from_params({"p": 0.5})
        Traceback (most recent call last):
        ...
        ValueError: parameter 'p': p: expected the order p >= 1 (a real number) or math.inf
        (bottleneck), got 0.5; W_p is a metric only for p >= 1
        """
        if not isinstance(params, Mapping):
            raise ValueError(f"params must be a mapping of parameter names to values, got "
                             f"{type(params).__name__}")
        fields = {}
        for name, field in PARAMETERS.items():
            if name not in params:
                continue
            try:
                cls(**{field: params[name]})  # each value checked alone: the error names it
            except ValueError as exc:
                raise ValueError(f"parameter {name!r}: {exc}") from None
            fields[field] = params[name]
        return cls(**fields)

    @property
    def label(self) -> str:
        """The distance in words, e.g. ``'W_{p=1, q=inf}, degrees H0+H1'``."""
        fmt = lambda v: "inf" if math.isinf(v) else f"{v:g}"  # noqa: E731
        label = (f"W_{{p={fmt(self.p)}, q={fmt(self.q)}}}, degrees "
                 + "+".join(f"H{k}" for k in self.degrees))
        if self.n_perm is not None:
            label += f", greedy subsample of {self.n_perm} points"
        return label

    def check_diagrams(self, diagrams, name: str = "diagrams") -> None:
        """Refuse diagrams not made with this spec.

        Parameters
        ----------
        diagrams : topolip.topology.metric.LayerDiagrams
            Diagrams that record their spec (:func:`topolip.topology.metric.layer_diagrams`).
        name : str, default="diagrams"
            Used in the error message.

        Raises
        ------
        ValueError
            If ``diagrams`` records no spec (a plain mapping) or another one; the message
            names both.
        """
        made_with = getattr(diagrams, "spec", None)
        if made_with is None:
            raise ValueError(f"{name} record no spec (got a {type(diagrams).__name__}); compute "
                             f"them with topolip.topology.metric.layer_diagrams(clouds, spec) "
                             f"for {self!r}")
        if made_with != self:
            raise ValueError(f"{name} were made with {made_with!r}, not with {self!r}; compute "
                             "them again with this spec")
