r"""Persistence diagrams as values: :class:`Diagram` (one degree) and
:class:`RipsDiagrams` (every degree of one cloud, with the covering radius of a subsample), and
:func:`check_diagram`, the check every distance applies to its input.

Finite points and essential points (death :math:`= \infty`) are kept apart, so that no
distance ever replaces :math:`\infty` by a large number. Numpy only.
"""

from __future__ import annotations

import numbers
from dataclasses import dataclass, field

import numpy as np

from topolip.topology._float import real_array

__all__ = ["FILTRATION", "Diagram", "RipsDiagrams", "check_diagram"]


#: The filtration convention recorded on every result of :func:`rips_diagrams`.
FILTRATION = (
    "Vietoris-Rips filtration of the Euclidean distance, a simplex enters at its "
    "diameter (ripser's convention, also with backend='gudhi'), full threshold, coefficients Z/2"
)


def check_diagram(dgm, name: str = "dgm") -> np.ndarray:
    r"""Validate a persistence diagram and return it as a float64 ``(n, 2)`` array.

    Parameters
    ----------
    dgm : array_like of shape (n, 2), or Diagram
        Rows are ``(birth, death)`` pairs in the filtration's units (for a
        point cloud: distances in activation units). Deaths may be ``+inf``
        (essential points). An empty sequence, or an array of shape ``(0,)``
        or ``(0, 2)`` (or ``(0, 0)``), is the empty diagram. A :class:`Diagram` is accepted and
        converted with :attr:`Diagram.array`.
    name : str, default="dgm"
        Name of the argument, used in error messages.

    Returns
    -------
    ndarray of shape (n, 2), dtype float64
        A new array (the input is never modified).

    Raises
    ------
    ValueError
        If the array is not of shape ``(n, 2)`` (an empty array must have shape
        ``(0,)``, ``(0, 0)`` or ``(0, 2)``, not ``(k, 0)`` with ``k > 0``), is not
        real-numeric (complex, boolean and text values are refused, not coerced),
        contains NaN, a birth that is not finite, a death equal to ``-inf``, or a death
        smaller than its birth. The message names ``name``, what was expected,
        what was got and how to fix it.

    Notes
    -----
    A diagram is a finite multiset of points :math:`(b, d)` with
    :math:`b \in \mathbb{R}` and :math:`b \le d \le +\infty`. Points with
    :math:`d = b` lie on the diagonal; they are valid and contribute nothing to
    any diagram distance.

    Examples
    --------
    >>> check_diagram([[0.0, 1.0], [0.5, float("inf")]])
    array([[0. , 1. ],
           [0.5, inf]])
    >>> check_diagram([]).shape
    (0, 2)
    >>> check_diagram([[1.0, 0.5]], name="dgm_a")
    Traceback (most recent call last):
    ...
    ValueError: dgm_a: expected death >= birth in every row, got row 0 = (1.0, 0.5); ...
    """
    if isinstance(dgm, Diagram):
        return dgm.array.copy()
    arr = real_array(dgm, name, "shape (n, 2) of (birth, death) rows", allow_bool=False)
    if arr.shape in ((0,), (0, 0), (0, 2)):
        return np.empty((0, 2), dtype=np.float64)
    if arr.ndim != 2 or arr.shape[1] != 2:
        raise ValueError(
            f"{name}: expected an array of shape (n, 2) of (birth, death) rows, got shape "
            f"{arr.shape}; pass one diagram (one homological degree) at a time, e.g. "
            f"dgms[k] rather than the list of all degrees"
        )
    if np.isnan(arr).any():
        row = int(np.flatnonzero(np.isnan(arr).any(axis=1))[0])
        raise ValueError(
            f"{name}: expected no NaN, got NaN in row {row} = {tuple(arr[row].tolist())}; "
            f"remove or repair the rows with NaN before computing distances"
        )
    bad_birth = ~np.isfinite(arr[:, 0])
    if bad_birth.any():
        row = int(np.flatnonzero(bad_birth)[0])
        raise ValueError(
            f"{name}: expected finite births, got row {row} = {tuple(arr[row].tolist())}; "
            f"Rips diagrams of point clouds have finite births (only deaths may be +inf)"
        )
    neg_inf = arr[:, 1] == -np.inf
    if neg_inf.any():
        row = int(np.flatnonzero(neg_inf)[0])
        raise ValueError(
            f"{name}: expected deaths in [birth, +inf], got row {row} = "
            f"{tuple(arr[row].tolist())}; a death of -inf is not a persistence pair"
        )
    below = arr[:, 1] < arr[:, 0]
    if below.any():
        row = int(np.flatnonzero(below)[0])
        raise ValueError(
            f"{name}: expected death >= birth in every row, got row {row} = "
            f"{tuple(arr[row].tolist())}; check the column order (birth first, then death)"
        )
    return arr


def _readonly(a: np.ndarray) -> np.ndarray:
    a = np.array(a, dtype=np.float64, copy=True)
    a.setflags(write=False)
    return a


@dataclass(frozen=True, eq=False)
class Diagram:
    r"""One persistence diagram, finite and essential points kept apart.

    Parameters
    ----------
    finite : ndarray of shape (n, 2)
        Finite ``(birth, death)`` points, ``birth <= death < inf``, in the
        filtration's units (distances in activation units for a point cloud).
    essential : ndarray of shape (k,)
        Births of the essential classes (bars that never die).
    degree : int
        Homological degree ``k`` of the diagram (0: components, 1: loops).

    Notes
    -----
    Both arrays are stored as read-only float64 copies. A Vietoris--Rips
    diagram of a finite cloud computed to full threshold has exactly one
    essential point in degree 0 (birth 0) and none in higher degrees.

    Examples
    --------
    >>> dgm = Diagram.from_array([[0.0, 1.0], [0.0, float("inf")]], degree=0)
    >>> dgm.finite, dgm.essential, len(dgm)
    (array([[0., 1.]]), array([0.]), 2)
    >>> dgm.array
    array([[ 0.,  1.],
           [ 0., inf]])
    """

    finite: np.ndarray
    essential: np.ndarray
    degree: int

    def __post_init__(self) -> None:
        fin = check_diagram(self.finite, name="finite")
        if np.isinf(fin[:, 1]).any():
            raise ValueError(
                "finite: expected only finite deaths, got +inf; put essential classes "
                "in `essential` (their births), or build with Diagram.from_array"
            )
        ess = np.asarray(self.essential, dtype=np.float64).reshape(-1)
        if not np.isfinite(ess).all():
            raise ValueError(
                f"essential: expected finite births of the essential classes, got "
                f"{ess[~np.isfinite(ess)][:3].tolist()}; pass the births only (not inf deaths)"
            )
        if isinstance(self.degree, bool) or not isinstance(self.degree, numbers.Integral):
            raise ValueError(f"degree: expected a non-negative int, got {self.degree!r}")
        if self.degree < 0:
            raise ValueError(f"degree: expected a non-negative int, got {self.degree}")
        object.__setattr__(self, "finite", _readonly(fin))
        object.__setattr__(self, "essential", _readonly(ess))
        object.__setattr__(self, "degree", int(self.degree))

    @classmethod
    def from_array(cls, dgm, degree: int) -> Diagram:
        """Build a :class:`Diagram` from ``(n, 2)`` rows, deaths possibly ``inf``.

        Parameters
        ----------
        dgm : array_like of shape (n, 2)
            Validated with :func:`check_diagram`.
        degree : int
            Homological degree.

        Returns
        -------
        Diagram

        Examples
        --------
        >>> Diagram.from_array([[0.2, 0.7]], degree=1).finite
        array([[0.2, 0.7]])
        """
        arr = check_diagram(dgm, name="dgm")
        ess = np.isinf(arr[:, 1])
        return cls(finite=arr[~ess], essential=arr[ess, 0], degree=degree)

    @property
    def array(self) -> np.ndarray:
        """ndarray of shape (n + k, 2): finite points, then ``(birth, inf)`` rows."""
        ess = np.column_stack([self.essential, np.full(self.essential.shape, np.inf)])
        return np.concatenate([self.finite, ess.reshape(-1, 2)], axis=0)

    def __len__(self) -> int:
        return int(self.finite.shape[0] + self.essential.shape[0])

    def __repr__(self) -> str:
        return (
            f"Diagram(degree={self.degree}, n_finite={self.finite.shape[0]}, "
            f"n_essential={self.essential.shape[0]})"
        )


@dataclass(frozen=True, eq=False)
class RipsDiagrams:
    """Vietoris--Rips diagrams of one point cloud, with their conventions.

    Attributes
    ----------
    degrees : tuple of int
        The homological degrees computed, increasing.
    diagrams : tuple of Diagram
        One diagram per entry of ``degrees``, same order.
    n_points : int
        Number of points of the input cloud.
    r_cover : float
        Covering radius of the points used, in activation units:
        :math:`\\max_{x \\in X} \\min_{s \\in S} \\|x - s\\|_2` for the kept subset
        :math:`S`; ``0.0`` when every point is used. The bottleneck distance
        between the diagrams of :math:`S` and of the full cloud is at most
        ``2 * r_cover`` in every degree.
    idx_perm : ndarray of shape (n_perm,) or None
        Indices (into the input cloud) of the points kept by greedy
        permutation, in insertion order; ``None`` when every point is used.
    filtration : str
        The filtration convention, :data:`FILTRATION`.

    Examples
    --------
    >>> from topolip.topology.rips import rips_diagrams
    >>> res = rips_diagrams([[0.0, 0.0], [3.0, 4.0]])
    >>> res[0].array, len(res[1])
    (array([[ 0.,  5.],
           [ 0., inf]]), 0)
    """

    degrees: tuple[int, ...]
    diagrams: tuple[Diagram, ...]
    n_points: int
    r_cover: float = 0.0
    idx_perm: np.ndarray | None = None
    filtration: str = field(default=FILTRATION)

    def __getitem__(self, degree: int) -> Diagram:
        """The :class:`Diagram` of homological degree ``degree``."""
        try:
            return self.diagrams[self.degrees.index(degree)]
        except ValueError:
            raise KeyError(
                f"degree {degree!r} was not computed; computed degrees: {self.degrees}"
            ) from None

    @property
    def subsampled(self) -> bool:
        """True when a greedy subsample (``n_perm``) replaced the full cloud."""
        return self.idx_perm is not None

    def as_dict(self) -> dict[int, np.ndarray]:
        """``{degree: (n, 2) array with inf deaths}`` for every computed degree."""
        return {k: d.array for k, d in zip(self.degrees, self.diagrams, strict=True)}
