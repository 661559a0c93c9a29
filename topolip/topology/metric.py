"""The TopoLip metric: topological displacement per layer and its layer-to-layer ratio.

Definitions (book/method.md; this companion's formalization of arXiv:2410.17628, whose full
text we do not have): for a clean batch ``X`` and a perturbed batch ``X̃`` the topological
displacement at probe point ``ℓ`` is

.. math:: Δ_ℓ = W_{p,q}\\big(\\mathrm{Dgm}(H_ℓ(X)),\\ \\mathrm{Dgm}(H_ℓ(\\tilde X))\\big),

combined over homology degrees as :math:`(\\sum_k W_{p,q}(D_k, D'_k)^p)^{1/p}` (max for
``p = inf``), and :math:`\\mathrm{TopoLip}_ℓ = Δ_ℓ / Δ_{ℓ-1}`. The scale-free variant divides both
clouds of a layer by ``s_ℓ``, the median pairwise distance of the clean cloud; Rips diagrams and
``W_{p,q}`` are positively homogeneous, so it equals ``Δ_ℓ / s_ℓ`` exactly and needs no second
diagram computation.

For paired perturbations (sample ``i`` of ``X̃`` is the perturbed sample ``i`` of ``X``) every
layer is checked against the certified envelope: all pairwise distances move by at most
``2 ε_ℓ`` with ``ε_ℓ = max_i ‖h_ℓ(x_i) − h_ℓ(x̃_i)‖``, so by the stability theorem
(Cohen-Steiner, Edelsbrunner and Harer 2007) the bottleneck distance ``W_{∞,∞}`` is at most
``2 ε_ℓ`` (plus ``2 r`` per subsampled cloud of covering radius ``r``). A violation is a bug and
raises :class:`EnvelopeViolation`.
"""

from __future__ import annotations

import math
from collections.abc import Mapping

import numpy as np
import pandas as pd

from topolip.topology.distances import diagram_distance
from topolip.topology.points import check_points, pairwise_distances
from topolip.topology.rips import rips_diagrams, rips_diagrams_many
from topolip.topology.spec import TopoLipSpec

__all__ = [
    "EnvelopeViolation", "LayerDiagrams", "layer_diagrams", "median_pairwise_distance",
    "summarize", "topolip_table", "topological_displacement",
]


class EnvelopeViolation(RuntimeError):
    """A layer's bottleneck displacement exceeded its certified envelope ``2 ε_ℓ``: a bug."""


class LayerDiagrams(dict):
    """``{label: RipsDiagrams}`` of one set of clouds, with the spec that made them.

    A ``dict`` (probe labels in order) whose read-only :attr:`spec`
    (:class:`topolip.topology.spec.TopoLipSpec`) records the degrees, subsample and backend of its
    diagrams: :func:`topolip_table` and the noise floor refuse diagrams made with another spec
    (:meth:`topolip.topology.spec.TopoLipSpec.check_diagrams`). Built by :func:`layer_diagrams`.

    Raises
    ------
    TypeError
        If ``spec`` is not a :class:`topolip.topology.spec.TopoLipSpec`.
    """

    def __init__(self, diagrams, spec: TopoLipSpec) -> None:
        if not isinstance(spec, TopoLipSpec):
            raise TypeError(f"spec must be a TopoLipSpec, got {type(spec).__name__}")
        super().__init__(diagrams)
        self._spec = spec

    @property
    def spec(self) -> TopoLipSpec:
        """The spec the diagrams were made with."""
        return self._spec

    def __repr__(self) -> str:
        return f"LayerDiagrams({list(self)}, spec={self.spec!r})"


def median_pairwise_distance(points: np.ndarray, name: str = "points", *,
                             distances: np.ndarray | None = None) -> float:
    """``s_ℓ``: the median Euclidean distance over all pairs of rows of ``points`` (m, d).

    Parameters
    ----------
    points : ndarray of shape (m, d)
        The cloud, in activation units.
    name : str, default="points"
        Used in error messages.
    distances : ndarray of shape (m, m), optional
        The cloud's distance matrix (:func:`topolip.topology.points.pairwise_distances`), reused
        instead of computing it again.

    Raises
    ------
    ValueError
        If ``points`` is not 2-D with at least 2 finite rows, or all its points coincide
        (the scale is then 0 and a scale-free displacement undefined), or ``distances`` is not
        of shape (m, m).

    Examples
    --------
    >>> median_pairwise_distance(np.array([[0.0, 0], [3, 4], [0, 8]]))
    5.0
    """
    a = check_points(points, name)
    m = a.shape[0]
    D = pairwise_distances(a, name) if distances is None else np.asarray(distances)
    if D.shape != (m, m):
        raise ValueError(f"distances: expected the ({m}, {m}) distance matrix of {name}, got "
                         f"shape {D.shape}")
    s = float(np.median(D[np.triu_indices(m, 1)]))
    if s <= 0:
        raise ValueError(f"{name}: all points coincide (or at least half of the pairs do): the "
                         f"median pairwise distance is 0 and a scale-free displacement undefined")
    return s


def layer_diagrams(acts: Mapping[str, np.ndarray], spec: TopoLipSpec = TopoLipSpec(), *,
                   distances: Mapping[str, np.ndarray] | None = None,
                   n_jobs: int | None = None) -> LayerDiagrams:
    """Rips diagrams of every layer's cloud, made with ``spec`` (see ``rips_diagrams``).

    Parameters
    ----------
    acts : mapping of str to ndarray of shape (m, d_ℓ)
        Flattened activations per probe point (as from ``collect_activations``).
    spec : TopoLipSpec
        Its ``degrees`` are computed, with its ``backend`` and greedy subsample ``n_perm`` (the
        covering radius is recorded in each layer's result).
    distances : mapping of str to ndarray of shape (m, m), optional
        Each layer's distance matrix (:func:`topolip.topology.points.pairwise_distances`), reused
        instead of computed again; layers it lacks are computed.
    n_jobs : int, optional
        Worker processes for ripser (:func:`topolip.topology.rips.rips_diagrams_many`; default
        :func:`topolip.topology.rips.default_jobs`). The diagrams do not depend on it.

    Returns
    -------
    LayerDiagrams
        ``{label: RipsDiagrams}`` in the order of ``acts``, recording ``spec``.

    Raises
    ------
    ValueError
        For an invalid cloud (the message names its layer) or ``n_jobs``.
    """
    distances = distances or {}
    labels = list(acts)
    dgms = rips_diagrams_many([_named(acts[label], f"activations at {label!r}")
                               for label in labels], degrees=spec.degrees,
                              n_perm=spec.n_perm, backend=spec.backend,
                              distances=[distances.get(label) for label in labels],
                              n_jobs=n_jobs)
    return LayerDiagrams(zip(labels, dgms, strict=True), spec)


def _named(a, name: str):
    """``a`` unchanged once it passed :func:`check_points` (errors name ``name``): no copy."""
    if not (isinstance(a, np.ndarray) and a.dtype == np.float64):
        check_points(a, name)
    elif a.ndim != 2 or a.shape[0] < 2 or a.shape[1] < 1 or not np.isfinite(a).all():
        check_points(a, name)
    return a


def _distance(a, b, spec: TopoLipSpec, p: float | None = None, q: float | None = None) -> float:
    return float(diagram_distance(a, b, p=spec.p if p is None else p,
                                  q=spec.q if q is None else q, degrees=spec.degrees))


def topological_displacement(clean: np.ndarray, perturbed: np.ndarray,
                             spec: TopoLipSpec = TopoLipSpec()) -> float:
    """``Δ = W_{p,q}(Dgm(clean), Dgm(perturbed))`` of two point clouds (any sizes and dims).

    Parameters
    ----------
    clean, perturbed : ndarray of shape (m, d) and (m', d')
        Point clouds in activation units (Euclidean metric); they need no pairing and no common
        dimension.
    spec : TopoLipSpec
        Degrees, order ``p``, ground metric ``q``, backend and greedy subsample ``n_perm`` of
        the diagrams (see ``rips_diagrams``).

    Returns
    -------
    float
        In the units of the activations; ``inf`` only if essential classes differ in number.

    Raises
    ------
    ValueError
        On NaN/inf activations, fewer than 2 points or a cloud that is not 2-D.

    Examples
    --------
    A unit square against the square of side 2. H0: three bars (0, 1) against (0, 2), each
    moved by 1 in l_inf; H1: the 4-cycle (1, √2) against (2, 2√2), cheaper through the
    diagonal, (√2 - 1)/2 + (√2 - 1) = 0.62132:

    >>> square = np.array([[0.0, 0], [1, 0], [1, 1], [0, 1]])
    >>> round(topological_displacement(square, 2 * square, TopoLipSpec(degrees=(0,))), 6)
    3.0
    >>> round(topological_displacement(square, 2 * square), 5)
    3.62132
    """
    a = rips_diagrams(check_points(clean, "clean"), degrees=spec.degrees, n_perm=spec.n_perm,
                      backend=spec.backend)
    b = rips_diagrams(check_points(perturbed, "perturbed"), degrees=spec.degrees,
                      n_perm=spec.n_perm, backend=spec.backend)
    return _distance(a, b, spec)


def topolip_table(
    clean: Mapping[str, np.ndarray],
    perturbed: Mapping[str, np.ndarray],
    spec: TopoLipSpec = TopoLipSpec(),
    *,
    paired: bool = True,
    clean_diagrams: LayerDiagrams | None = None,
    rtol: float = 1e-6,
    clean_distances: Mapping[str, np.ndarray] | None = None,
    perturbed_distances: Mapping[str, np.ndarray] | None = None,
    n_jobs: int | None = None,
) -> pd.DataFrame:
    """Per-layer displacement ``Δ_ℓ`` and ``TopoLip_ℓ``, raw and scale-free, in probe order.

    Parameters
    ----------
    clean, perturbed : mapping of str to ndarray of shape (m, d_ℓ)
        Activations at the same probe labels, in the same order (``"input"`` first).
    spec : TopoLipSpec
        Degrees, ``p``, ``q``, backend and greedy subsample ``n_perm`` of every ``Δ_ℓ``.
    paired : bool, default=True
        Row ``i`` of ``perturbed`` is the perturbation of row ``i`` of ``clean`` (attacks, noise,
        corruptions). Then ``ε_ℓ``, the bottleneck displacement and the envelope are reported
        and checked. ``False`` for another data set (out-of-distribution).
    clean_diagrams : LayerDiagrams, optional
        Precomputed :func:`layer_diagrams` of ``clean`` with ``spec`` (reuse across
        perturbations).
    rtol : float, default=1e-6
        ``TopoLip_ℓ`` is NaN (with a reason) when the scale-free ``Δ_{ℓ-1}`` is below this.
    clean_distances, perturbed_distances : mapping of str to ndarray of shape (m, m), optional
        Each layer's distance matrix (:func:`topolip.topology.points.pairwise_distances`) of the
        clean
        and the perturbed clouds, reused for the diagrams and the scale ``s_ℓ``; computed once
        per cloud here when omitted.
    n_jobs : int, optional
        Worker processes for ripser (:func:`topolip.topology.rips.rips_diagrams_many`; default
        :func:`topolip.topology.rips.default_jobs`). The result does not depend on it.

    Returns
    -------
    pandas.DataFrame
        One row per layer: ``layer``, ``depth`` (0 for the input), ``dim`` (``d_ℓ``), ``scale``
        (``s_ℓ``), ``delta``, ``delta_scale_free``, ``topolip``, ``topolip_scale_free``,
        ``topolip_reason`` (empty when defined), ``eps`` (``ε_ℓ``), ``bottleneck``
        (``W_{∞,∞}``), ``envelope`` (certified upper bound of ``bottleneck``), ``r_cover``.

    Raises
    ------
    ValueError
        If the label sets differ, a cloud is invalid, ``paired`` clouds differ in size, or
        ``clean_diagrams`` were made with another spec (or record none).
    EnvelopeViolation
        If ``bottleneck > envelope`` on some layer (beyond float32 rounding of ripser).

    Examples
    --------
    >>> rng = np.random.default_rng(0)
    >>> x = rng.normal(size=(30, 5)); y = x + 0.01 * rng.normal(size=x.shape)
    >>> t = topolip_table({"input": x, "double": 2 * x}, {"input": y, "double": 2 * y})
    >>> round(float(t.loc[1, "topolip"]), 6), round(float(t.loc[1, "topolip_scale_free"]), 6)
    (2.0, 1.0)
    """
    labels = list(clean)
    if list(perturbed) != labels:
        raise ValueError(f"clean and perturbed probe labels differ: {labels} vs {list(perturbed)}")
    clean_distances = dict(clean_distances or {})
    perturbed_distances = perturbed_distances or {}
    for label in labels:
        if label not in clean_distances:
            clean_distances[label] = pairwise_distances(
                check_points(clean[label], f"clean activations at {label!r}"))
    if clean_diagrams is None:
        clean_diagrams = layer_diagrams(clean, spec, distances=clean_distances, n_jobs=n_jobs)
    else:
        spec.check_diagrams(clean_diagrams, "clean_diagrams")
    moved = {label: check_points(perturbed[label], f"perturbed activations at {label!r}")
             for label in labels}
    moved_dgms = dict(zip(labels, rips_diagrams_many(
        [moved[label] for label in labels], degrees=spec.degrees, n_perm=spec.n_perm,
        backend=spec.backend,
        distances=[perturbed_distances.get(label) for label in labels], n_jobs=n_jobs),
        strict=True))
    rows = []
    prev_sf = None
    for depth, label in enumerate(labels):
        a = check_points(clean[label], f"clean activations at {label!r}")
        b = moved[label]
        dgm_a = clean_diagrams[label]
        dgm_b = moved_dgms[label]
        scale = median_pairwise_distance(a, f"clean activations at {label!r}",
                                         distances=clean_distances[label])
        delta = _distance(dgm_a, dgm_b, spec)
        r_cover = float(getattr(dgm_a, "r_cover", 0.0) or 0.0) + float(
            getattr(dgm_b, "r_cover", 0.0) or 0.0)
        row = {"layer": label, "depth": depth, "dim": a.shape[1], "scale": scale,
               "delta": delta, "delta_scale_free": delta / scale, "r_cover": r_cover}
        if paired:
            if a.shape != b.shape:
                raise ValueError(f"paired clouds at {label!r} differ in shape: {a.shape} vs "
                                 f"{b.shape}; pass paired=False for unpaired data")
            eps = float(np.linalg.norm(a - b, axis=1).max())
            bott = _distance(dgm_a, dgm_b, spec, p=math.inf, q=math.inf)
            envelope = 2 * eps + 2 * r_cover
            slack = 1e-5 * max(1.0, float(np.abs(a).max()), float(np.abs(b).max()))
            if bott > envelope + slack:
                raise EnvelopeViolation(
                    f"layer {label!r}: bottleneck displacement {bott:.6g} exceeds the certified "
                    f"envelope 2·eps + 2·r_cover = {envelope:.6g} (eps={eps:.6g}); this is a bug "
                    "in the diagram or distance code")
            row.update(eps=eps, bottleneck=bott, envelope=envelope)
        else:
            row.update(eps=math.nan, bottleneck=math.nan, envelope=math.nan)
        if prev_sf is None:
            ratio = ratio_sf = math.nan
            reason = "first probe point (no previous layer)"
        elif prev_sf < rtol:
            ratio = ratio_sf = math.nan
            reason = f"previous displacement below tolerance (scale-free {prev_sf:.3g} < {rtol:g})"
        elif math.isinf(delta) or math.isinf(rows[-1]["delta"]):
            ratio = ratio_sf = math.nan
            reason = "infinite displacement (essential classes differ in number)"
        else:
            ratio = delta / rows[-1]["delta"]
            ratio_sf = row["delta_scale_free"] / prev_sf
            reason = ""
        row.update(topolip=ratio, topolip_scale_free=ratio_sf, topolip_reason=reason)
        rows.append(row)
        prev_sf = row["delta_scale_free"]
    return pd.DataFrame(rows)


def summarize(table: pd.DataFrame) -> dict[str, float]:
    """Model TopoLip of a :func:`topolip_table`: the ratios telescope to ``Δ_L / Δ_0``.

    Returns
    -------
    dict
        ``end_to_end`` (``Δ_L/Δ_0``), ``geometric_mean`` (``(Δ_L/Δ_0)^{1/L}``) and ``max``
        (``max_ℓ TopoLip_ℓ``), each raw and with suffix ``_scale_free``; NaN when ``Δ_0`` is
        below tolerance.

    Examples
    --------
    >>> t = pd.DataFrame({"delta": [1.0, 2.0, 8.0], "delta_scale_free": [1.0, 1.0, 2.0],
    ...                   "topolip": [np.nan, 2.0, 4.0], "topolip_scale_free": [np.nan, 1.0, 2.0]})
    >>> summarize(t)["geometric_mean"], summarize(t)["end_to_end_scale_free"]
    (2.8284271247461903, 2.0)
    """
    out: dict[str, float] = {}
    n_layers = len(table) - 1
    for suffix, col, dcol in (("", "topolip", "delta"),
                              ("_scale_free", "topolip_scale_free", "delta_scale_free")):
        d0, dl = float(table[dcol].iloc[0]), float(table[dcol].iloc[-1])
        e2e = dl / d0 if d0 > 0 and math.isfinite(d0) else math.nan
        out["end_to_end" + suffix] = e2e
        out["geometric_mean" + suffix] = (e2e ** (1 / n_layers)
                                          if n_layers > 0 and math.isfinite(e2e) else math.nan)
        vals = table[col].to_numpy(dtype=float)[1:]
        out["max" + suffix] = float(np.nanmax(vals)) if np.isfinite(vals).any() else math.nan
    return out
