"""Float64/float32 helpers shared by :mod:`topolip.topology.points`, :mod:`~.diagram` and
:mod:`~.rips`: array checks, exact pair distances in blocks, and the power-of-two scaling and
snapping that make ripser's float32 filtration values exact float64 distances. Private to the
topology layer (its names carry no underscore because the module does).
"""

from __future__ import annotations

import math

import numpy as np

# ripser computes in float32: after rescaling the largest distance into [1, 2), every nonzero
# distance must be a normal float32 number, so the spread of distances is limited to this.
F32_TINY = float(np.finfo(np.float32).tiny)  # 2**-126


def real_array(x, name: str, what: str, *, allow_bool: bool = True,
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


def check_distances(distances, m: int) -> np.ndarray:
    """A precomputed (m, m) distance matrix as float64, checked for shape and finiteness."""
    D = real_array(distances, "distances", f"shape ({m}, {m}), the cloud's distance matrix",
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


def pair_distances(X: np.ndarray, i: np.ndarray, j: np.ndarray) -> np.ndarray:
    """``pdist`` of the pairs of rows ``(i[k], j[k])`` of ``X`` (``i < j``), bit for bit.

    scipy's Euclidean kernel sums the squared coordinate differences ``x - y`` in order and takes
    the square root, pair by pair. The differences ``X[i] - X[j]`` are the same IEEE operations,
    and their distance to the origin (:func:`scipy.spatial.distance.cdist` against one row of
    zeros, ``d - 0 = d`` exactly) runs the same kernel on them: one public call per block of
    pairs gives, for each pair, the value ``pdist(X)`` holds (tested), at the cost of the pairs
    alone rather than of all ``m (m - 1) / 2``. Blocks of about :data:`PAIR_BLOCK_VALUES`
    differences keep them in cache.
    """
    from scipy.spatial.distance import cdist

    out = np.empty(len(i))
    zero = np.zeros((1, X.shape[1]))
    rows = max(1, PAIR_BLOCK_VALUES // max(X.shape[1], 1))
    for s in range(0, len(i), rows):
        out[s:s + rows] = cdist(X[i[s:s + rows]] - X[j[s:s + rows]], zero)[:, 0]
    return out


# Differences per cdist call in pair_distances: 512 KiB of float64, fastest on the 2-core
# machine (300 pairs of 12,544 coordinates: 6.6 ms, against 18 ms in one block and about 30 ms
# for one pdist call per pair).
PAIR_BLOCK_VALUES = 65_536


def snap_pairs(values: np.ndarray, table: np.ndarray, pairs: np.ndarray,
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
        exact[nz] = pair_distances(X, pairs[uk[nz], 0], pairs[uk[nz], 1])
        v[ok] = exact[inv]
    out[fin] = v
    return out


def pow2_scale(value: float) -> float:
    """A power of two within a factor 2 of ``value`` (1.0 for 0): division by it is exact."""
    value = float(value)
    if value == 0.0 or not math.isfinite(value):
        return 1.0
    return math.ldexp(1.0, math.frexp(value)[1] - 1)


def unscale(values, c: float, what: str):
    """``values * c`` (c a power of two), refusing a result beyond float64's range."""
    out = np.asarray(values, dtype=np.float64) * c
    if np.isinf(out[np.isfinite(np.asarray(values, dtype=np.float64))]).any():
        raise ValueError(
            f"points: {what} exceeds float64's range (about 1.8e308) in the cloud's units; "
            f"divide the cloud by a constant first (Rips diagrams scale with it)"
        )
    return out if isinstance(values, np.ndarray) else float(out)


def check_zero_pairs(X: np.ndarray, iu: np.ndarray, ju: np.ndarray,
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


def check_float32_spread(scaled: np.ndarray, unit: float) -> None:
    """Refuse distances that ripser's float32 cannot hold next to the largest one."""
    nonzero = scaled[scaled > 0]
    if nonzero.size and float(nonzero.min()) < F32_TINY:
        lo, hi = float(nonzero.min()) * unit, float(scaled.max()) * unit
        raise ValueError(
            f"points: pairwise distances span from {lo:.3g} to {hi:.3g}, a ratio beyond "
            f"float32's range (about 8.5e37) that ripser computes in; the smallest ones cannot "
            f"be represented next to the largest. Merge points closer than {hi * 2.0**-120:.3g} "
            f"(or drop the far outliers) before computing diagrams"
        )
