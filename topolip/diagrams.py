r"""Persistence diagrams of point clouds (Vietoris--Rips, through ripser).

This module turns a point cloud, an ``(m, d)`` array such as the flattened
activations of ``m`` samples at one layer, into its persistence diagrams and
keeps the conventions of the companion (book/method.md) explicit:

* the filtration is Vietoris--Rips on the Euclidean metric, a simplex enters
  at its diameter (ripser's convention), computed to full threshold with
  coefficients in :math:`\mathbb{Z}/2`;
* finite points and essential points (death :math:`= \infty`) are kept apart,
  so that no distance ever replaces :math:`\infty` by a large number;
* birth and death values are exact float64 pairwise distances (ripser works in
  float32; see :func:`rips_diagrams`, Notes);
* optional subsampling by greedy permutation reports its covering radius, the
  size of the approximation next to the result.

The module imports neither torch nor the rest of :mod:`topolip`.

References
----------
.. [1] B. Chen, "Is Smoothness the Key to Robustness? A Comparison of Attention
   and Convolution Models Using a Novel Metric", arXiv:2410.17628.
.. [2] U. Bauer, "Ripser: efficient computation of Vietoris-Rips persistence
   barcodes", J. Appl. Comput. Topol. 5 (2021); C. Tralie, N. Saul,
   R. Bar-On, "Ripser.py", JOSS 3(29) 925 (2018).
.. [3] F. Chazal, V. de Silva, S. Oudot, "Persistence stability for geometric
   complexes", Geom. Dedicata 173 (2014).
"""

from __future__ import annotations

import math
import numbers
import os
import sys
import warnings
from collections.abc import Sequence
from dataclasses import dataclass, field

import numpy as np

__all__ = [
    "BACKENDS", "FILTRATION", "PARALLEL_MIN_POINTS", "Diagram", "RipsDiagrams", "check_backend",
    "check_degrees", "check_diagram", "check_points", "default_jobs", "pairwise_distances",
    "rips_diagrams", "rips_diagrams_many",
]

#: Persistence backends of :func:`rips_diagrams`: ``"ripser"`` (ripser.py, float32, the
#: default) and ``"gudhi"`` (GUDHI's Ripser port, float64; its module is MIT-licensed; GUDHI is
#: an optional dependency, ``pip install gudhi``).
BACKENDS = ("ripser", "gudhi")

#: The filtration convention recorded on every result of :func:`rips_diagrams`.
FILTRATION = (
    "Vietoris-Rips filtration of the Euclidean distance, a simplex enters at its "
    "diameter (ripser's convention, also with backend='gudhi'), full threshold, coefficients Z/2"
)

# ripser.py warns whenever a cloud has more columns than rows, the normal case for layer
# activations (few samples, many features). Only this message is silenced.
_RIPSER_WIDE_WARNING = r"The input point cloud has more columns than rows"

# ripser computes in float32: after rescaling the largest distance into [1, 2), every nonzero
# distance must be a normal float32 number, so the spread of distances is limited to this.
_F32_TINY = float(np.finfo(np.float32).tiny)  # 2**-126


def _real_array(x, name: str, what: str, *, allow_bool: bool = True,
                copy: bool = True) -> np.ndarray:
    """``x`` as a float64 ndarray; refuse complex, boolean and text input instead of coercing.

    numpy would drop an imaginary part (with a warning only) and parse strings such as
    ``"1.5"``; both hide a caller's mistake, so they are errors here.
    """
    try:
        raw = np.asarray(x)
    except (TypeError, ValueError) as exc:
        raise ValueError(
            f"{name}: expected a numeric array of {what}, got {type(x).__name__} that numpy "
            f"cannot read as one array ({exc}); pass a rectangular list or an ndarray"
        ) from None
    kind = raw.dtype.kind
    if kind == "O":
        flat = raw.reshape(-1)
        bad = [v for v in flat if isinstance(v, complex | np.complexfloating | str | bytes)]
        if bad:
            kind = "c" if isinstance(bad[0], complex | np.complexfloating) else "U"
    if kind == "c":
        raise ValueError(
            f"{name}: expected real numbers, got complex values (dtype {raw.dtype}); a "
            f"persistence computation has no complex input: pass the real part explicitly "
            f"(x.real) if that is what you mean"
        )
    if kind in "USa":
        raise ValueError(
            f"{name}: expected a numeric array of {what}, got text (dtype {raw.dtype}); "
            f"convert the values with float() first"
        )
    if kind == "b" and not allow_bool:
        raise ValueError(f"{name}: expected numbers, got booleans; pass {what}")
    if kind not in "iufbO":
        raise ValueError(f"{name}: expected a numeric array of {what}, got dtype {raw.dtype}")
    try:
        return np.array(raw, dtype=np.float64) if copy else np.asarray(raw, dtype=np.float64)
    except (TypeError, ValueError, OverflowError) as exc:
        raise ValueError(
            f"{name}: expected a numeric array of {what}, got an object of type "
            f"{type(x).__name__} that does not convert to float64 ({exc}); pass a list of "
            f"numbers or an ndarray"
        ) from None


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
    arr = _real_array(dgm, name, "shape (n, 2) of (birth, death) rows", allow_bool=False)
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


def check_points(points, name: str = "points") -> np.ndarray:
    """Validate a point cloud: float64 array of shape (m, d) with m >= 2, d >= 1, all finite.

    A float64 ndarray is returned as it is (no copy: clouds of activations are large), any
    other input converted; callers must not modify the result in place.

    Raises
    ------
    ValueError
        Naming ``name``, the expected and the received shape, and the fix, for a non-numeric
        input, a rank other than 2, fewer than 2 points or NaN/inf coordinates.

    Examples
    --------
    >>> check_points([[0, 1], [2, 3]]).dtype
    dtype('float64')
    >>> check_points([[0.0, float("nan")], [1, 1]], name="activations at 'block1'")
    Traceback (most recent call last):
    ...
    ValueError: activations at 'block1': expected finite coordinates, got NaN in row 0 ...
    """
    X = _real_array(points, name, "shape (m, d), one row per sample (flatten each sample's "
                    "activations into one row)", copy=False)
    if X.ndim != 2:
        raise ValueError(
            f"{name}: expected a 2-d array of shape (m, d) (one row per sample), got "
            f"{X.ndim}-d array of shape {X.shape}; flatten each sample, e.g. "
            f"points.reshape(len(points), -1)"
        )
    if X.shape[0] < 2:
        raise ValueError(
            f"{name}: expected at least 2 points (rows), got shape {X.shape}; a persistence "
            f"diagram of fewer than 2 points carries no distance information"
        )
    if X.shape[1] < 1:
        raise ValueError(f"{name}: expected at least 1 coordinate per point, got shape {X.shape}")
    if not np.isfinite(X).all():
        bad = ~np.isfinite(X)
        row = int(np.flatnonzero(bad.any(axis=1))[0])
        kind = "NaN" if np.isnan(X[row]).any() else "inf"
        raise ValueError(
            f"{name}: expected finite coordinates, got {kind} in row {row} "
            f"({int(bad.any(axis=1).sum())} bad rows of {X.shape[0]}); drop or repair "
            f"these samples (a diverged activation?) before computing diagrams"
        )
    return X


def check_degrees(degrees) -> tuple[int, ...]:
    """Validate homological degrees: the one check of ``degrees`` in the package.

    Parameters
    ----------
    degrees : int or sequence of int
        Distinct non-negative degrees, e.g. ``(0, 1)``; one int means that degree alone.

    Returns
    -------
    tuple of int
        The degrees, sorted.

    Raises
    ------
    ValueError
        If ``degrees`` is not an int or a sequence of ints, is empty, holds a negative value, a
        bool or a non-integer, or repeats a degree.

    Examples
    --------
    >>> check_degrees((1, 0))
    (0, 1)
    """
    if isinstance(degrees, numbers.Integral) and not isinstance(degrees, bool):
        degrees = (degrees,)
    try:
        degs = tuple(degrees)
    except TypeError:
        raise ValueError(
            f"degrees: expected a sequence of non-negative ints such as (0, 1), got {degrees!r}"
        ) from None
    if not degs:
        raise ValueError("degrees: expected at least one degree, got an empty sequence")
    for k in degs:
        if isinstance(k, bool) or not isinstance(k, numbers.Integral) or k < 0:
            raise ValueError(f"degrees: expected non-negative ints such as (0, 1), got {degs!r}")
    if len(set(degs)) != len(degs):
        raise ValueError(f"degrees: expected distinct degrees, got {degs!r}")
    return tuple(sorted(int(k) for k in degs))


# Pairs whose squared distance from the Gram matrix is below this fraction of their squared
# norms (after centring) lose more than ~1e-12 of relative accuracy to cancellation: those are
# recomputed from their difference.
_GEMM_REFINE = 1e-2


def pairwise_distances(points, name: str = "points") -> np.ndarray:
    r"""Euclidean distance matrix of a point cloud, in float64 through one matrix product.

    Parameters
    ----------
    points : array_like of shape (m, d)
        One row per sample, validated with :func:`check_points`.
    name : str, default="points"
        Name of the argument, used in error messages.

    Returns
    -------
    ndarray of shape (m, m), dtype float64
        Symmetric, exact zeros on the diagonal and between identical rows, nonnegative, in the
        units of ``points``. Entries agree with :func:`scipy.spatial.distance.pdist` to a
        relative error of about ``1e-13`` (see Notes).

    Raises
    ------
    ValueError
        As :func:`check_points`; also if a distance exceeds float64's range.

    Notes
    -----
    The cloud is divided by a power of two near its largest coordinate (exact) and centred,
    then :math:`D_{ij}^2 = \|x_i\|^2 + \|x_j\|^2 - 2\,x_i \cdot x_j` from one Gram matrix
    (BLAS), clipped at 0, and :math:`D = \sqrt{D^2}` scaled back. The Gram matrix costs
    ``m^2 d`` multiply-adds at BLAS speed, 5--10 times faster than ``pdist`` for the wide clouds
    of layer activations. Cancellation makes the formula inaccurate for pairs much closer than
    their norms; every pair with :math:`D_{ij}^2 < 10^{-2} (\|x_i\|^2 + \|x_j\|^2)` (after
    centring, only near-coincident points) is recomputed from the difference of the uncentred
    rows, and identical rows get an exact 0.

    Examples
    --------
    >>> pairwise_distances([[0.0, 0.0], [3.0, 4.0], [0.0, 0.0]])
    array([[0., 5., 0.],
           [5., 0., 5.],
           [0., 5., 0.]])
    """
    X = check_points(points, name)
    c = _pow2_scale(np.abs(X).max())
    Xs = X / c
    X = Xs - Xs.mean(axis=0)  # centred for the Gram matrix; differences from Xs (uncentred)
    sq = np.einsum("ij,ij->i", X, X)
    d2 = X @ X.T
    d2 *= -2.0
    d2 += sq[:, None]
    d2 += sq[None, :]
    np.maximum(d2, 0.0, out=d2)
    d2 = np.triu(d2, 1)
    d2 = d2 + d2.T
    i, j = np.nonzero(np.triu(d2 < _GEMM_REFINE * (sq[:, None] + sq[None, :]), 1))
    if i.size:
        diff = Xs[i] - Xs[j]
        exact = np.einsum("ij,ij->i", diff, diff)
        d2[i, j] = d2[j, i] = exact
    D = np.sqrt(d2)
    return _unscale(D, c, "a pairwise distance")


def _check_distances(distances, m: int) -> np.ndarray:
    """A precomputed (m, m) distance matrix as float64, checked for shape and finiteness."""
    D = _real_array(distances, "distances", f"shape ({m}, {m}), the cloud's distance matrix",
                    allow_bool=False)
    if D.shape != (m, m):
        raise ValueError(
            f"distances: expected the ({m}, {m}) distance matrix of the {m} points, got shape "
            f"{D.shape}; compute it with pairwise_distances(points)"
        )
    if not np.isfinite(D).all() or (D < 0).any() or (np.diagonal(D) != 0).any():
        raise ValueError(
            "distances: expected finite nonnegative entries with zeros on the diagonal; "
            "compute it with pairwise_distances(points)"
        )
    return D


def _pair_distances(X: np.ndarray, i: np.ndarray, j: np.ndarray) -> np.ndarray:
    """``pdist`` of the pairs of rows ``(i[k], j[k])`` of ``X`` (``i < j``), bit for bit.

    scipy's Euclidean kernel sums the squared coordinate differences ``x - y`` in order and takes
    the square root, pair by pair. The differences ``X[i] - X[j]`` are the same IEEE operations,
    and their distance to the origin (:func:`scipy.spatial.distance.cdist` against one row of
    zeros, ``d - 0 = d`` exactly) runs the same kernel on them: one public call per block of
    pairs gives, for each pair, the value ``pdist(X)`` holds (tested), at the cost of the pairs
    alone rather than of all ``m (m - 1) / 2``. Blocks of about :data:`_PAIR_BLOCK_VALUES`
    differences keep them in cache.
    """
    from scipy.spatial.distance import cdist

    out = np.empty(len(i))
    zero = np.zeros((1, X.shape[1]))
    rows = max(1, _PAIR_BLOCK_VALUES // max(X.shape[1], 1))
    for s in range(0, len(i), rows):
        out[s:s + rows] = cdist(X[i[s:s + rows]] - X[j[s:s + rows]], zero)[:, 0]
    return out


# Differences per cdist call in _pair_distances: 512 KiB of float64, fastest on the 2-core
# machine (300 pairs of 12,544 coordinates: 6.6 ms, against 18 ms in one block and about 30 ms
# for one pdist call per pair).
_PAIR_BLOCK_VALUES = 65_536


def _snap_pairs(values: np.ndarray, table: np.ndarray, pairs: np.ndarray,
                X: np.ndarray | None) -> np.ndarray:
    """Replace ripser's float32-rounded values by exact float64 distances of pairs of rows.

    ``table`` is sorted (0 first, then the approximate pairwise distances), ``pairs[k]`` the
    rows ``(i, j)`` of ``table[k]`` (``(-1, -1)`` for the 0). A value within float32 rounding
    of its nearest entry is replaced by the exact distance of that pair of rows of ``X``, the
    value :func:`scipy.spatial.distance.pdist` of the whole cloud holds for it, bit for bit
    (``X=None``: by the table's entry).
    """
    fin = np.isfinite(values)
    if not fin.any():
        return values
    out = values.copy()
    v = values[fin]
    pos = np.clip(np.searchsorted(table, v), 1, len(table) - 1)
    lo, hi = table[pos - 1], table[pos]
    k = np.where(np.abs(v - lo) <= np.abs(hi - v), pos - 1, pos)
    tol = 4.0 * np.abs(v) * np.finfo(np.float32).eps + np.finfo(np.float64).tiny
    ok = np.abs(table[k] - v) <= tol
    if X is None:
        v[ok] = table[k[ok]]
    else:
        uk, inv = np.unique(k[ok], return_inverse=True)
        exact = np.zeros(len(uk))
        nz = pairs[uk, 0] >= 0
        exact[nz] = _pair_distances(X, pairs[uk[nz], 0], pairs[uk[nz], 1])
        v[ok] = exact[inv]
    out[fin] = v
    return out


def _pow2_scale(value: float) -> float:
    """A power of two within a factor 2 of ``value`` (1.0 for 0): division by it is exact."""
    value = float(value)
    if value == 0.0 or not math.isfinite(value):
        return 1.0
    return math.ldexp(1.0, math.frexp(value)[1] - 1)


def _unscale(values, c: float, what: str):
    """``values * c`` (c a power of two), refusing a result beyond float64's range."""
    out = np.asarray(values, dtype=np.float64) * c
    if np.isinf(out[np.isfinite(np.asarray(values, dtype=np.float64))]).any():
        raise ValueError(
            f"points: {what} exceeds float64's range (about 1.8e308) in the cloud's units; "
            f"divide the cloud by a constant first (Rips diagrams scale with it)"
        )
    return out if isinstance(values, np.ndarray) else float(out)


def _check_zero_pairs(X: np.ndarray, iu: np.ndarray, ju: np.ndarray,
                      dists: np.ndarray) -> None:
    """Refuse a cloud whose distinct rows came out at distance 0 (spread beyond float64):
    every pair at distance 0 must be equal rows."""
    for z in np.flatnonzero(dists == 0):
        if not np.array_equal(X[iu[z]], X[ju[z]]):
            raise ValueError(
                f"points: some distinct points are closer than float64 can resolve next to "
                f"the cloud's largest coordinate ({np.abs(X).max():.3g}); merge them or "
                f"drop the far outliers before computing diagrams"
            )


def _check_float32_spread(scaled: np.ndarray, unit: float) -> None:
    """Refuse distances that ripser's float32 cannot hold next to the largest one."""
    nonzero = scaled[scaled > 0]
    if nonzero.size and float(nonzero.min()) < _F32_TINY:
        lo, hi = float(nonzero.min()) * unit, float(scaled.max()) * unit
        raise ValueError(
            f"points: pairwise distances span from {lo:.3g} to {hi:.3g}, a ratio beyond "
            f"float32's range (about 8.5e37) that ripser computes in; the smallest ones cannot "
            f"be represented next to the largest. Merge points closer than {hi * 2.0**-120:.3g} "
            f"(or drop the far outliers) before computing diagrams"
        )


def _greedy_permutation(X: np.ndarray, n_perm: int) -> tuple[np.ndarray, float]:
    """Furthest-point sampling as ripser's ``get_greedy_perm``, in exact float64.

    Starts at row 0 and adds, each time, the point farthest from those kept
    (first index on ties). Memory O(m), time O(m * n_perm). Returns the kept
    indices (read-only) and the covering radius max_x min_s |x - s|.
    """
    idx = np.zeros(n_perm, dtype=np.int64)
    ds = np.linalg.norm(X - X[0], axis=1)
    for i in range(1, n_perm):
        idx[i] = int(np.argmax(ds))
        np.minimum(ds, np.linalg.norm(X - X[idx[i]], axis=1), out=ds)
    idx.setflags(write=False)
    return idx, float(ds.max())


def rips_diagrams(points, degrees=(0, 1), n_perm: int | None = None, *,
                  distances=None, backend: str = "ripser") -> RipsDiagrams:
    r"""Vietoris--Rips persistence diagrams of a point cloud.

    Parameters
    ----------
    points : array_like of shape (m, d)
        One row per sample (for a layer: the flattened activations
        :math:`\operatorname{vec}(h_\ell(x_i))`), Euclidean metric, in
        activation units. ``m >= 2``. Duplicate rows are valid.
    degrees : sequence of int, default=(0, 1)
        Homological degrees to compute (0: components, 1: loops, ...).
    n_perm : int or None, default=None
        If given, compute the diagrams of the first ``n_perm`` points of a
        greedy (furthest-point) permutation of the cloud, starting at row 0
        (the permutation of ripser's ``n_perm``, recomputed in float64 with
        O(m) memory), and report its covering radius. ``n_perm >= m`` uses
        every point (covering radius 0).
    distances : array_like of shape (m, m), optional
        The cloud's Euclidean distance matrix, as from :func:`pairwise_distances` (computed
        here when omitted). Pass it when the same cloud's matrix serves other computations
        (median scale, baselines, resamples: take ``distances[np.ix_(idx, idx)]`` with
        ``points[idx]``): the diagrams are the same, and no distance is computed twice.
    backend : {"ripser", "gudhi"}, default="ripser"
        Who computes persistence (:data:`BACKENDS`): ripser.py [2]_, or GUDHI's port of
        Ripser [4]_ (float64, about 1.8 times faster on 200-point activation clouds; needs
        ``gudhi``). Both results are snapped to the same exact distances (Notes): the diagrams
        are identical except where ripser's float32 merges two distinct distances.

    Returns
    -------
    RipsDiagrams
        Per degree a :class:`Diagram` with finite and essential points apart,
        plus the filtration convention, ``r_cover`` and ``idx_perm``.

    Raises
    ------
    ValueError
        If ``points`` is not a 2-d real numeric array, has fewer than 2 rows or
        a NaN/inf coordinate; if its nonzero pairwise distances span more than
        float32's range, or exceed float64's (see Notes); if ``degrees`` is not a non-empty
        sequence of
        distinct non-negative ints; if ``n_perm`` is not an int ``>= 2``; if ``distances``
        is not a finite nonnegative ``(m, m)`` matrix with a zero diagonal; if ``backend`` is
        not one of :data:`BACKENDS`.
    ImportError
        If ``backend="gudhi"`` and GUDHI is not installed.

    Notes
    -----
    The filtration is :math:`\operatorname{Rips}_r(P) = \{\sigma \subseteq P :
    \operatorname{diam}\sigma \le r\}`, computed to full threshold, so degree 0
    has exactly one essential point (birth 0) and higher degrees none.

    *Exact values.* ripser computes in float32. Rips diagrams are positively
    homogeneous, :math:`\mathrm{Dgm}(X/c) = \mathrm{Dgm}(X)/c`, so the cloud is
    divided by a power of two near its largest coordinate (exact) and the
    distance matrix by a power of two near its largest entry before ripser,
    and the results are multiplied back: clouds at any float64 scale (points
    ``1e-300`` or ``1e200`` apart) give the same diagrams up to that factor.
    Every birth and death of a Rips filtration is the diameter of a simplex,
    that is 0 or a pairwise distance, so each value returned by ripser is
    replaced by the nearest float64 pairwise distance: the nearest entry of the distance
    matrix (:func:`pairwise_distances`, one matrix product) names the pair, whose distance is
    recomputed by scipy's Euclidean kernel, bit for bit the value of
    :func:`scipy.spatial.distance.pdist`. The values are therefore exact
    float64 distances (relative error a few float64 ulps), except where two
    distinct distances share one float32 rounding: then within a relative
    :math:`2^{-24} \approx 6 \cdot 10^{-8}`. Bars shorter than a relative
    :math:`2^{-24}` of their death may be missing, as in ripser. A cloud
    whose nonzero pairwise distances span more than float32's range (ratio
    above about :math:`8.5 \cdot 10^{37}`) is refused, as is one whose
    distances exceed float64's range.

    *Small clouds.* Two points are handled without calling ripser: degree 0
    is :math:`\{(0, \|x_1 - x_2\|)\}` (empty if the points coincide) plus the
    essential point, higher degrees are empty.

    *Subsampling.* With ``n_perm`` the diagrams are those of the kept subset
    :math:`S`. Since :math:`d_{GH}(S, X) \le r_{cover}` and Rips diagrams are
    :math:`2 d_{GH}`-stable [3]_, :math:`W_{\infty,\infty}(\mathrm{Dgm}_k(S),
    \mathrm{Dgm}_k(X)) \le 2\, r_{cover}` in every degree ``k``.

    ripser's warning about clouds with more columns than rows (the normal case
    for activations) is silenced here, and only that warning.

    References
    ----------
    .. [1] B. Chen, arXiv:2410.17628 (TopoLip).
    .. [2] C. Tralie, N. Saul, R. Bar-On, "Ripser.py: A Lean Persistent
       Homology Library for Python", JOSS 3(29) 925 (2018).
    .. [3] F. Chazal, V. de Silva, S. Oudot, "Persistence stability for
       geometric complexes", Geom. Dedicata 173 (2014).
    .. [4] The GUDHI Project, GUDHI User and Reference Manual, "Rips persistence"
       (``gudhi.sklearn.rips_persistence.RipsPersistence``), https://gudhi.inria.fr.

    Examples
    --------
    >>> import numpy as np
    >>> t = 2 * np.pi * np.arange(12) / 12
    >>> res = rips_diagrams(np.c_[np.cos(t), np.sin(t)])
    >>> res[0].essential, res[1].finite.round(4)
    (array([0.]), array([[0.5176, 1.7321]]))
    >>> res.r_cover, res.idx_perm is None
    (0.0, True)
    """
    backend = check_backend(backend)
    job = _prepare(points, degrees, n_perm, distances)
    return _finish(job, None if job.matrix is None
                   else _run_persistence(job.matrix, job.maxdim, backend))


@dataclass
class _RipsJob:
    """One cloud between :func:`_prepare` and :func:`_finish`: ``matrix`` (scaled for ripser's
    float32, ``None`` for two points) is all that the persistence backend needs, so only it
    crosses to a worker process; the points stay here for the exact-distance snapping of
    :func:`_finish`."""

    degs: tuple[int, ...]
    n_points: int
    X: np.ndarray          # the (kept) cloud in units of c_in
    c_in: float
    c_d: float
    r_cover: float
    idx_perm: np.ndarray | None
    iu: np.ndarray
    ju: np.ndarray
    dists: np.ndarray      # condensed distances in units of c_in
    maxdim: int
    matrix: np.ndarray | None


def _prepare(points, degrees, n_perm, distances) -> _RipsJob:
    """Validate and scale one cloud for ripser (everything of :func:`rips_diagrams` before it)."""
    X = X_in = check_points(points)
    degs = check_degrees(degrees)
    m = n_points = X.shape[0]
    if n_perm is not None:
        if isinstance(n_perm, bool) or not isinstance(n_perm, numbers.Integral):
            raise ValueError(f"n_perm: expected None or an int >= 2, got {n_perm!r}")
        if n_perm < 2:
            raise ValueError(
                f"n_perm: expected None or an int >= 2, got {n_perm}; use None to keep every point"
            )

    D_in = None if distances is None else _check_distances(distances, m)

    # Rips diagrams are positively homogeneous, Dgm(X / c) = Dgm(X) / c: compute on a cloud
    # scaled by a power of two (exact) so that no float64 or float32 step over- or underflows.
    c_in = _pow2_scale(np.abs(X).max())
    X = X / c_in
    r_cover = 0.0
    idx_perm = None
    if n_perm is not None and n_perm < m:
        idx_perm, r_cover = _greedy_permutation(X, int(n_perm))
        r_cover = _unscale(r_cover, c_in, "the covering radius")
        X = X[idx_perm]
        m = X.shape[0]
    # The distance matrix in units of c_in: given (divided by c_in, exact) or one GEMM.
    if D_in is None:
        D = pairwise_distances(X)
    else:
        D = D_in / c_in
        if idx_perm is not None:
            D = D[np.ix_(idx_perm, idx_perm)]
    iu, ju = np.triu_indices(m, 1)
    dists = D[iu, ju]
    _check_zero_pairs(X_in if idx_perm is None else X_in[idx_perm], iu, ju, dists)
    c_d, matrix = 1.0, None
    if m > 2:
        c_d = _pow2_scale(dists.max())  # largest distance in [1, 2) for ripser's float32
        _check_float32_spread(dists / c_d, c_in * c_d)
        matrix = D / c_d
    return _RipsJob(degs=degs, n_points=int(n_points), X=X, c_in=c_in, c_d=c_d,
                    r_cover=r_cover, idx_perm=idx_perm, iu=iu, ju=ju, dists=dists,
                    maxdim=max(degs), matrix=matrix)


def check_backend(backend) -> str:
    """The persistence backend ``backend`` if it is one of :data:`BACKENDS`.

    Raises
    ------
    ValueError
        If it is not.
    ImportError
        If it is ``"gudhi"`` and GUDHI cannot be imported.

    Examples
    --------
    >>> check_backend("ripser")
    'ripser'
    """
    if not isinstance(backend, str) or backend not in BACKENDS:
        raise ValueError(f"backend: expected one of {list(BACKENDS)}, got {backend!r}")
    if backend == "gudhi":
        try:
            import gudhi.sklearn.rips_persistence  # noqa: F401
        except ImportError as exc:
            raise ImportError("backend='gudhi' needs GUDHI: pip install gudhi (its Ripser "
                              "module is MIT-licensed)") from exc
    return backend


def _run_persistence(matrix: np.ndarray, maxdim: int, backend: str = "ripser") -> list[np.ndarray]:
    """Persistence of a prepared distance matrix in degrees ``0..maxdim`` (module level: it runs
    in worker processes): ripser.py, or GUDHI's Ripser port for ``backend="gudhi"``."""
    if backend == "gudhi":
        from gudhi.sklearn.rips_persistence import RipsPersistence

        rp = RipsPersistence(homology_dimensions=list(range(maxdim + 1)),
                             input_type="full distance matrix", homology_coeff_field=2,
                             n_jobs=1)  # Z/2 as ripser (GUDHI's default field is Z/11)
        return [np.asarray(g, dtype=np.float64).reshape(-1, 2)
                for g in rp.fit_transform([matrix])[0]]
    import ripser

    with warnings.catch_warnings():
        warnings.filterwarnings("ignore", message=_RIPSER_WIDE_WARNING, category=UserWarning)
        return ripser.ripser(matrix, maxdim=maxdim, distance_matrix=True)["dgms"]


def _finish(job: _RipsJob, dgms: list[np.ndarray] | None) -> RipsDiagrams:
    """Snap ripser's float32 values to exact float64 distances and unscale."""
    X, maxdim = job.X, job.maxdim
    if dgms is None:  # two points
        from scipy.spatial.distance import pdist

        d = float(pdist(X)[0])
        raw = [np.array([[0.0, d], [0.0, np.inf]]) if d > 0 else np.array([[0.0, np.inf]])]
        raw += [np.empty((0, 2))] * maxdim
    else:
        raw = [np.asarray(g, dtype=np.float64).reshape(-1, 2) * job.c_d for g in dgms]
        order = np.argsort(job.dists)
        table = np.concatenate([[0.0], job.dists[order]])
        pairs = np.concatenate([[[-1, -1]], np.column_stack([job.iu[order], job.ju[order]])])
        # every birth and death of every degree snapped at once: one exact-distance call
        flat = _snap_pairs(np.concatenate([g.ravel() for g in raw]), table, pairs, X)
        ends = np.cumsum([g.size for g in raw])[:-1]
        raw = [part.reshape(-1, 2) for part in np.split(flat, ends)]
    raw = [_unscale(g, job.c_in, "a birth or death") for g in raw]

    out = []
    for k in job.degs:
        g = raw[k] if k < len(raw) else np.empty((0, 2))
        ess = np.isinf(g[:, 1])
        fin = g[~ess]
        fin = fin[np.lexsort((fin[:, 1], fin[:, 0]))] if len(fin) else fin
        out.append(Diagram(finite=fin, essential=g[ess, 0], degree=k))
    return RipsDiagrams(
        degrees=job.degs,
        diagrams=tuple(out),
        n_points=job.n_points,
        r_cover=job.r_cover,
        idx_perm=job.idx_perm,
    )


#: Clouds below this many points are computed in-process (a worker round trip costs more).
PARALLEL_MIN_POINTS = 64


def default_jobs(n_clouds: int) -> int:
    """Worker processes :func:`rips_diagrams_many` uses by default for ``n_clouds`` clouds.

    ``TOPOLIP_JOBS`` (an int) overrides; otherwise the CPUs this process may use, capped at
    ``n_clouds``, and 1 inside a Dask worker (the cluster already runs one task per core).

    Parameters
    ----------
    n_clouds : int
        Number of clouds to compute.

    Returns
    -------
    int
        At least 1.

    Raises
    ------
    ValueError
        If ``TOPOLIP_JOBS`` is set but is not a positive int.
    """
    env = os.environ.get("TOPOLIP_JOBS")
    if env:
        try:
            jobs = int(env)
        except ValueError:
            jobs = 0
        if jobs < 1:
            raise ValueError(f"TOPOLIP_JOBS must be a positive int, got {env!r}")
        return max(1, min(jobs, n_clouds))
    if _in_dask_worker():
        return 1
    try:
        cpus = len(os.sched_getaffinity(0))
    except AttributeError:  # not on Linux
        cpus = os.cpu_count() or 1
    return max(1, min(cpus, n_clouds))


def _in_dask_worker() -> bool:
    if "distributed" not in sys.modules:
        return False
    try:
        from distributed import get_worker

        get_worker()
    except (ImportError, ValueError):
        return False
    return True


def rips_diagrams_many(clouds: Sequence, degrees=(0, 1), n_perm: int | None = None, *,
                       distances: Sequence | None = None, n_jobs: int | None = None,
                       backend: str = "ripser") -> list[RipsDiagrams]:
    """:func:`rips_diagrams` of several clouds, ripser running in parallel worker processes.

    Each cloud is validated and scaled here, only its scaled distance matrix goes to a worker
    (joblib's loky processes, reused between calls: ripser holds the GIL), and ripser's
    values are snapped to exact distances here, so the diagrams are identical to
    ``[rips_diagrams(c, degrees, n_perm, distances=d) for c, d in zip(clouds, distances)]``.

    Parameters
    ----------
    clouds : sequence of array_like of shape (m_i, d_i)
        The point clouds (see :func:`rips_diagrams`).
    degrees : sequence of int, default=(0, 1)
        Homological degrees, the same for every cloud.
    n_perm : int or None, default=None
        Greedy subsample size, the same for every cloud (see :func:`rips_diagrams`).
    distances : sequence of array_like of shape (m_i, m_i) or None, optional
        Each cloud's distance matrix (or ``None`` for that cloud), as from
        :func:`pairwise_distances`.
    n_jobs : int, optional
        Worker processes; default :func:`default_jobs`. ``1`` computes in this process, as do
        clouds of fewer than :data:`PARALLEL_MIN_POINTS` points.
    backend : {"ripser", "gudhi"}, default="ripser"
        Persistence backend (see :func:`rips_diagrams`).

    Returns
    -------
    list of RipsDiagrams
        In the order of ``clouds``.

    Raises
    ------
    ValueError
        As :func:`rips_diagrams`, for the first bad cloud (before any ripser call); if
        ``distances`` does not have one entry per cloud, ``n_jobs`` is not a positive int or
        ``backend`` is unknown.
    ImportError
        If ``backend="gudhi"`` and GUDHI is not installed.
    """
    clouds = list(clouds)
    if distances is None:
        distances = [None] * len(clouds)
    distances = list(distances)
    if len(distances) != len(clouds):
        raise ValueError(f"distances: expected one matrix (or None) per cloud, got "
                         f"{len(distances)} for {len(clouds)} clouds")
    if n_jobs is not None and (isinstance(n_jobs, bool) or not isinstance(n_jobs, int)
                               or n_jobs < 1):
        raise ValueError(f"n_jobs must be a positive int or None, got {n_jobs!r}")
    backend = check_backend(backend)
    jobs = [_prepare(c, degrees, n_perm, d) for c, d in zip(clouds, distances, strict=True)]
    big = [i for i, job in enumerate(jobs)
           if job.matrix is not None and len(job.matrix) >= PARALLEL_MIN_POINTS]
    workers = default_jobs(len(big)) if n_jobs is None else min(n_jobs, max(len(big), 1))
    results: list = [None] * len(jobs)
    if workers > 1:
        from joblib import Parallel, delayed

        out = Parallel(n_jobs=workers, backend="loky")(
            delayed(_run_persistence)(jobs[i].matrix, jobs[i].maxdim, backend) for i in big)
        for i, dgms in zip(big, out, strict=True):
            results[i] = dgms
    for i, job in enumerate(jobs):
        if results[i] is None and job.matrix is not None:
            results[i] = _run_persistence(job.matrix, job.maxdim, backend)
    return [_finish(job, dgms) for job, dgms in zip(jobs, results, strict=True)]
