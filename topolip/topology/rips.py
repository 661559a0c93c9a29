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

:func:`rips_diagrams_many` computes many clouds' diagrams at once, in worker processes when the
clouds are large enough to pay for it (:data:`PARALLEL_MIN_POINTS`), serially inside a Dask
worker. The diagrams are values of :mod:`topolip.topology.diagram`; the exact distances come
from :mod:`topolip.topology.points`.

The module imports neither torch nor any layer above :mod:`topolip.topology`.

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

import numbers
import os
import sys
import warnings
from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np

from topolip.topology._float import (
    check_distances,
    check_float32_spread,
    check_zero_pairs,
    pow2_scale,
    snap_pairs,
    unscale,
)
from topolip.topology.diagram import Diagram, RipsDiagrams
from topolip.topology.points import check_points, pairwise_distances

__all__ = [
    "BACKENDS", "PARALLEL_MIN_POINTS", "check_backend", "check_degrees", "default_jobs",
    "rips_diagrams", "rips_diagrams_many",
]


#: Persistence backends of :func:`rips_diagrams`: ``"ripser"`` (ripser.py, float32, the
#: default) and ``"gudhi"`` (GUDHI's Ripser port, float64; its module is MIT-licensed; GUDHI is
#: an optional dependency, ``pip install gudhi``).
BACKENDS = ("ripser", "gudhi")


# ripser.py warns whenever a cloud has more columns than rows, the normal case for layer
# activations (few samples, many features). Only this message is silenced.
_RIPSER_WIDE_WARNING = r"The input point cloud has more columns than rows"


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

    D_in = None if distances is None else check_distances(distances, m)

    # Rips diagrams are positively homogeneous, Dgm(X / c) = Dgm(X) / c: compute on a cloud
    # scaled by a power of two (exact) so that no float64 or float32 step over- or underflows.
    c_in = pow2_scale(np.abs(X).max())
    X = X / c_in
    r_cover = 0.0
    idx_perm = None
    if n_perm is not None and n_perm < m:
        idx_perm, r_cover = _greedy_permutation(X, int(n_perm))
        r_cover = unscale(r_cover, c_in, "the covering radius")
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
    check_zero_pairs(X_in if idx_perm is None else X_in[idx_perm], iu, ju, dists)
    c_d, matrix = 1.0, None
    if m > 2:
        c_d = pow2_scale(dists.max())  # largest distance in [1, 2) for ripser's float32
        check_float32_spread(dists / c_d, c_in * c_d)
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
        flat = snap_pairs(np.concatenate([g.ravel() for g in raw]), table, pairs, X)
        ends = np.cumsum([g.size for g in raw])[:-1]
        raw = [part.reshape(-1, 2) for part in np.split(flat, ends)]
    raw = [unscale(g, job.c_in, "a birth or death") for g in raw]

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
