r"""Baseline measures that TopoLip is judged against in the measure study.

Each answers the question TopoLip answers (how much does a network amplify a perturbation?)
without persistent homology, or with a topology that uses the pairing of clean and perturbed
samples that TopoLip's separate diagrams discard:

- :func:`displacement_ratio`: the Euclidean displacement ratio ``(ε_L/s_L) / (ε_0/s_0)`` with the
  max (``ε``) or the mean paired displacement; no topology at all.
- :func:`rtd_lite`: an H0 cross-barcode in the spirit of RTD-Lite [2]_ (itself a fast variant of
  Representation Topology Divergence [1]_): paired, topological.
- :func:`cka_distance`: ``1 − linear CKA`` [3]_ of clean and perturbed activations.
- :func:`spectral_norm_product`: the product of the weights' spectral norms (data-free), as
  ``log10``; :func:`logit_margin`: the mean logit margin on clean data. The product of the
  per-layer empirical Lipschitz estimates: :func:`lipschitz_estimate_product`.

Clouds are arrays of shape ``(m, d)`` (one row per sample: flattened activations), Euclidean
metric, in activation units; paired clouds have the same ``m`` and row ``i`` of the perturbed
cloud is the perturbation of row ``i`` of the clean one.

References
----------
.. [1] S. Barannikov, I. Trofimov, N. Balabin, E. Burnaev, "Representation Topology Divergence:
   A Method for Comparing Neural Network Representations", ICML 2022, arXiv:2201.00058.
.. [2] E. Tulchinskii, D. Voronkova, I. Trofimov, E. Burnaev, S. Barannikov, "RTD-Lite: Scalable
   Topological Analysis for Comparing Weighted Graphs in Learning Tasks", AISTATS 2025.
.. [3] S. Kornblith, M. Norouzi, H. Lee, G. Hinton, "Similarity of Neural Network
   Representations Revisited", ICML 2019, arXiv:1905.00414.
"""

from __future__ import annotations

import math
from collections.abc import Mapping

import numpy as np
from scipy.cluster.hierarchy import linkage
from scipy.spatial.distance import pdist, squareform

from topolip.topology.points import check_points

__all__ = [
    "cka_distance", "displacement_ratio", "lipschitz_estimate_product", "logit_margin",
    "margin_from_logits", "paired_displacement", "rtd_lite", "spectral_norm_product",
]


def _paired(clean, perturbed, name: str) -> tuple[np.ndarray, np.ndarray]:
    a = check_points(clean, f"clean {name}")
    b = check_points(perturbed, f"perturbed {name}")
    if a.shape != b.shape:
        raise ValueError(f"paired clouds {name} must have the same shape, got {a.shape} and "
                         f"{b.shape}")
    return a, b


def paired_displacement(clean, perturbed, *, reduce: str = "max", name: str = "cloud",
                        scale: float | None = None) -> float:
    """Scale-free paired displacement ``reduce_i ‖a_i − b_i‖ / s`` of one layer.

    ``s`` is the median pairwise distance of the clean cloud (the scale of the scale-free
    TopoLip); ``reduce`` is ``"max"`` (then the numerator is the ``ε_ℓ`` of the certified
    envelope) or ``"mean"``.

    Parameters
    ----------
    clean, perturbed : array_like of shape (m, d)
        Paired clouds.
    reduce : {"max", "mean"}
        Reduction of the per-point displacements over the ``m`` points.
    name : str
        Used in error messages.
    scale : float, optional
        ``s`` when already known (e.g. from the cloud's distance matrix); default: computed.

    Returns
    -------
    float

    Raises
    ------
    ValueError
        On invalid or unpaired clouds, an unknown ``reduce``, or a clean cloud whose points all
        coincide (no scale).

    Examples
    --------
    >>> a = np.array([[0.0, 0], [3, 4]]); b = a + [[0, 1], [0, 0]]
    >>> paired_displacement(a, b), paired_displacement(a, b, reduce="mean")
    (0.2, 0.1)
    """
    if reduce not in ("max", "mean"):
        raise ValueError(f"reduce must be 'max' or 'mean', got {reduce!r}")
    a, b = _paired(clean, perturbed, name)
    s = float(np.median(pdist(a))) if scale is None else float(scale)
    if not s > 0:
        raise ValueError(f"{name}: all clean points coincide, the scale is 0")
    d = np.linalg.norm(a - b, axis=1)
    return float((d.max() if reduce == "max" else d.mean()) / s)


def displacement_ratio(clean: Mapping[str, np.ndarray], perturbed: Mapping[str, np.ndarray],
                       *, reduce: str = "max", scales: Mapping[str, float] | None = None) -> float:
    r"""Euclidean displacement ratio of a network, ``(ε_L/s_L) / (ε_0/s_0)``: no topology.

    Parameters
    ----------
    clean, perturbed : mapping of str to ndarray of shape (m, d_ℓ)
        Paired activations per probe point, input first and last probe last (as from
        :func:`topolip.nets.models.probes.collect_activations`).
    reduce : {"max", "mean"}, default="max"
        Max (``ε_ℓ``) or mean paired displacement, see :func:`paired_displacement`.
    scales : mapping of str to float, optional
        ``{label: s_ℓ}`` when already known; default: computed from the clean clouds.

    Returns
    -------
    float
        NaN when the input displacement is 0.

    Notes
    -----
    The analogue of the end-to-end scale-free TopoLip ``Δ_L/Δ_0`` with the diagram distance
    replaced by the paired displacement. A pure scaling ``h(x) = c x`` gives 1; an isometry 1.

    Examples
    --------
    >>> rng = np.random.default_rng(0); x = rng.normal(size=(20, 3)); y = x + 0.1
    >>> round(displacement_ratio({"input": x, "out": 5 * x}, {"input": y, "out": 5 * y}), 12)
    1.0
    """
    labels = list(clean)
    if list(perturbed) != labels or len(labels) < 2:
        raise ValueError(f"clean and perturbed must have the same >= 2 probe labels, got "
                         f"{labels} and {list(perturbed)}")
    first, last = labels[0], labels[-1]
    scales = scales or {}
    d0 = paired_displacement(clean[first], perturbed[first], reduce=reduce, name=repr(first),
                             scale=scales.get(first))
    dl = paired_displacement(clean[last], perturbed[last], reduce=reduce, name=repr(last),
                             scale=scales.get(last))
    return dl / d0 if d0 > 0 else math.nan


def _mst_edges(dist: np.ndarray) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Prim's minimum spanning tree of a dense (m, m) distance matrix: (u, v, weight)."""
    m = len(dist)
    in_tree = np.zeros(m, dtype=bool)
    in_tree[0] = True
    best = dist[0].copy()
    parent = np.zeros(m, dtype=int)
    us, vs, ws = [], [], []
    for _ in range(m - 1):
        cand = np.where(in_tree, np.inf, best)
        v = int(np.argmin(cand))
        us.append(parent[v])
        vs.append(v)
        ws.append(best[v])
        in_tree[v] = True
        closer = dist[v] < best
        best = np.where(closer, dist[v], best)
        parent = np.where(closer, v, parent)
    return np.array(us), np.array(vs), np.array(ws)


def _minimax(dist: np.ndarray) -> np.ndarray:
    """Single-linkage (minimax path) distances of a dense distance matrix, dense (m, m)."""
    from scipy.cluster.hierarchy import cophenet

    z = linkage(squareform(dist, checks=False), method="single")
    return squareform(cophenet(z))


def _cross_barcode_length(da: np.ndarray, db: np.ndarray) -> float:
    """Total length of the H0 cross-barcode of ``da`` against ``min(da, db)``.

    Each edge ``(u, v)`` of a minimum spanning tree of ``da`` (the graph whose components
    merge at the H0 deaths of ``da``) gives the bar ``[minimax_{min(da, db)}(u, v), da(u, v)]``:
    the two sides were already joined, in the graph of the smaller paired distances, at its
    birth.
    """
    u, v, w = _mst_edges(da)
    joint = _minimax(np.minimum(da, db))
    return float(np.sum(w - joint[u, v]))


def rtd_lite(clean, perturbed, *, scale: float | None = None, name: str = "cloud",
             distances: tuple[np.ndarray, np.ndarray] | None = None) -> float:
    r"""Symmetric H0 cross-barcode length of paired clouds, in the spirit of RTD-Lite.

    Parameters
    ----------
    clean, perturbed : array_like of shape (m, d)
        Paired clouds (row ``i`` of ``perturbed`` perturbs row ``i`` of ``clean``), ``m >= 2``.
    scale : float, optional
        Both distance matrices are divided by it first (default: the median pairwise distance
        of the clean cloud, making the value scale-free like the scale-free TopoLip).
    name : str
        Used in error messages.
    distances : (ndarray, ndarray) of shape (m, m), optional
        The two clouds' Euclidean distance matrices when already computed (e.g. by
        :func:`topolip.topology.points.pairwise_distances`); default: computed here.

    Returns
    -------
    float
        ``(R(A, B) + R(B, A)) / 2`` with ``A``, ``B`` the (scaled) distance matrices and
        ``R(A, B) = Σ_{(u,v) ∈ MST(A)} (A_{uv} − M_{uv})``, ``M`` the minimax-path (single
        linkage) distance in the graph weighted by ``min(A, B)``. 0 iff every bar is empty,
        e.g. for identical or isometric paired clouds.

    Raises
    ------
    ValueError
        On invalid or unpaired clouds, or a clean cloud with all points equal (no scale).

    Notes
    -----
    RTD [1]_ compares two representations of the same samples through the barcode of the
    graph of both, in which the cross-barcode's bars record clusters present at a scale in one
    representation and not in the joint graph weighted by the smaller of the two distances;
    RTD-Lite [2]_ computes its degree-0 part from minimum spanning trees. This function is
    our implementation of that degree-0 quantity as stated above (bars from the MST edges of
    one graph, born when the joint graph joins the edge's ends); it is symmetrised and
    reports the total bar length. Unlike TopoLip's diagram distance it uses the pairing of
    samples: a rotation of a cloud is invisible to both, but a permutation of its points is
    invisible only to TopoLip.

    Examples
    --------
    A pure scaling by ``c >= 1`` of the pairwise distances: every bar of ``R(cA, A)`` has length
    ``(c − 1) A_e``, those of ``R(A, cA)`` are empty.

    >>> x = np.array([[0.0, 0], [1, 0], [3, 0]])
    >>> rtd_lite(x, 2 * x, scale=1.0)  # MST of x has weights 1 and 2: ((2-1)*(1+2) + 0) / 2
    1.5
    >>> rtd_lite(x, x @ np.array([[0.0, 1], [-1, 0]]))  # a rotation
    0.0
    """
    a, b = _paired(clean, perturbed, name)
    if distances is None:
        da, db = squareform(pdist(a)), squareform(pdist(b))
    else:
        da, db = (np.asarray(d, dtype=np.float64) for d in distances)
        if da.shape != (len(a), len(a)) or db.shape != da.shape:
            raise ValueError(f"{name}: distances must be two ({len(a)}, {len(a)}) matrices, got "
                             f"{da.shape} and {db.shape}")
    if scale is None:
        scale = float(np.median(da[np.triu_indices(len(a), 1)]))
        if scale <= 0:
            raise ValueError(f"{name}: all clean points coincide, the scale is 0")
    elif not (isinstance(scale, int | float) and math.isfinite(scale) and scale > 0):
        raise ValueError(f"scale must be a positive finite number, got {scale!r}")
    da, db = da / scale, db / scale
    value = 0.5 * (_cross_barcode_length(da, db) + _cross_barcode_length(db, da))
    return max(value, 0.0)


def cka_distance(clean, perturbed, *, name: str = "cloud") -> float:
    r"""``1 − linear CKA`` of paired activations (Kornblith et al. 2019).

    Parameters
    ----------
    clean, perturbed : array_like of shape (m, d)
        Paired clouds of one layer.
    name : str
        Used in error messages.

    Returns
    -------
    float
        In [0, 1]; 0 when ``perturbed`` is an isotropic scaling or an orthogonal transform
        (plus a translation) of ``clean``.

    Raises
    ------
    ValueError
        On invalid or unpaired clouds, or a cloud with no variance (CKA undefined).

    Notes
    -----
    With centred Gram matrices :math:`K = \bar X \bar X^\top`, :math:`L = \bar Y \bar Y^\top`:
    :math:`\mathrm{CKA} = \langle K, L\rangle_F / (\|K\|_F \|L\|_F)`.

    Examples
    --------
    >>> rng = np.random.default_rng(0); x = rng.normal(size=(30, 4))
    >>> q, _ = np.linalg.qr(rng.normal(size=(4, 4)))
    >>> round(cka_distance(x, 3 * x @ q + 1), 12)
    0.0
    """
    a, b = _paired(clean, perturbed, name)
    a = a - a.mean(axis=0)
    b = b - b.mean(axis=0)
    k, l_ = a @ a.T, b @ b.T
    nk, nl = np.linalg.norm(k), np.linalg.norm(l_)
    if nk == 0 or nl == 0:
        raise ValueError(f"{name}: a cloud has no variance, linear CKA is undefined")
    cka = float(np.sum(k * l_) / (nk * nl))
    return float(min(max(1.0 - cka, 0.0), 1.0))


def spectral_norm_product(model) -> float:
    """``log10`` of the product of the spectral norms of every weight matrix of ``model``.

    Data-free. A Linear weight is its matrix; a convolution's ``(out, in, kh, kw)`` weight is
    reshaped to ``(out, in·kh·kw)`` (the usual surrogate of its operator norm); the in-projection
    of a multi-head attention is split into its query, key and value blocks. Biases and
    norm-layer scales are not weights here.

    Parameters
    ----------
    model : torch.nn.Module
        Any model; every Linear, Conv and MultiheadAttention weight counts.

    Returns
    -------
    float
        ``Σ log10 ‖W‖₂`` over the weight matrices (``-inf`` if one is zero).

    Raises
    ------
    ValueError
        If the model has no weight matrix or a weight is not finite.

    Examples
    --------
    >>> import torch
    >>> a, b = torch.nn.Linear(2, 2, bias=False), torch.nn.Linear(2, 2, bias=False)
    >>> with torch.no_grad():
    ...     _ = a.weight.copy_(torch.diag(torch.tensor([10.0, 1.0])))
    ...     _ = b.weight.copy_(torch.diag(torch.tensor([1.0, 100.0])))
    >>> spectral_norm_product(torch.nn.Sequential(a, torch.nn.ReLU(), b))
    3.0
    """
    import torch

    total, count = 0.0, 0
    for name, module in model.named_modules():
        mats = []
        if isinstance(module, torch.nn.MultiheadAttention):
            if module.in_proj_weight is not None:
                mats += list(module.in_proj_weight.chunk(3, dim=0))
            else:
                mats += [module.q_proj_weight, module.k_proj_weight, module.v_proj_weight]
        elif isinstance(module, torch.nn.Linear | torch.nn.Conv2d):
            mats.append(module.weight.reshape(module.weight.shape[0], -1))
        for w in mats:
            w = w.detach().to(torch.float64).cpu()
            if not torch.isfinite(w).all():
                raise ValueError(f"weight of {name or 'model'} is not finite")
            s = float(torch.linalg.matrix_norm(w, ord=2))
            total += math.log10(s) if s > 0 else -math.inf
            count += 1
    if count == 0:
        raise ValueError("the model has no Linear, Conv2d or attention weight")
    return total


def logit_margin(model, x, y, *, batch_size: int = 512) -> float:
    """Mean logit margin on ``x``: true-class logit minus the largest other logit.

    Parameters
    ----------
    model : torch.nn.Module
        Classifier from images in [0, 1] to logits ``(N, K)``; run in eval mode (restored).
    x : torch.Tensor of shape (N, C, H, W)
        Clean images, pixels in [0, 1].
    y : torch.Tensor of shape (N,)
        True labels in ``0..K-1``.
    batch_size : int, default=512
        Images per forward pass (memory only; the result does not depend on it).

    Returns
    -------
    float
        In logit units; negative on average when most images are misclassified.

    Raises
    ------
    ValueError
        If ``x`` and ``y`` are empty or of different lengths.

    Examples
    --------
    >>> import torch
    >>> lin = torch.nn.Linear(1, 3)
    >>> with torch.no_grad():
    ...     _ = lin.weight.zero_(); _ = lin.bias.copy_(torch.tensor([2.0, 0.5, 0.0]))
    >>> logit_margin(torch.nn.Sequential(torch.nn.Flatten(), lin), torch.zeros(2, 1, 1, 1),
    ...              torch.tensor([0, 1]))
    0.0
    """
    import torch

    from topolip.tensors import eval_mode

    if len(x) == 0 or len(x) != len(y):
        raise ValueError(f"x and y must be non-empty and of equal length, got {len(x)} and "
                         f"{len(y)}")
    device = next(model.parameters()).device
    with eval_mode(model), torch.no_grad():
        logits = torch.cat([model(x[s:s + batch_size].to(device)).float().cpu()
                            for s in range(0, len(x), batch_size)])
    return margin_from_logits(logits.numpy(), np.asarray(y))


def margin_from_logits(logits: np.ndarray, y: np.ndarray) -> float:
    """Mean logit margin from logits already computed (:func:`logit_margin` without a pass).

    Parameters
    ----------
    logits : ndarray of shape (N, K)
        A classifier's logits, ``K >= 2``.
    y : ndarray of shape (N,)
        True labels in ``0..K-1``.

    Returns
    -------
    float
        Mean over images of the true-class logit minus the largest other logit (float64 sum).

    Raises
    ------
    ValueError
        If the shapes do not match, ``K < 2``, or a label is out of range.

    Examples
    --------
    >>> margin_from_logits(np.array([[2.0, 0.5, 0.0], [2.0, 0.5, 0.0]]), np.array([0, 1]))
    0.0
    """
    logits = np.asarray(logits, dtype=np.float64)
    y = np.asarray(y)
    if logits.ndim != 2 or logits.shape[1] < 2 or y.shape != (logits.shape[0],) or not len(y):
        raise ValueError(f"logits must be (N, K >= 2) with labels of shape (N,), got "
                         f"{logits.shape} and {y.shape}")
    if not np.issubdtype(y.dtype, np.integer) or y.min() < 0 or y.max() >= logits.shape[1]:
        raise ValueError(f"labels must be ints in 0..{logits.shape[1] - 1}")
    rows = np.arange(len(y))
    true = logits[rows, y]
    other = logits.copy()
    other[rows, y] = -np.inf
    return float((true - other.max(1)).mean())


def lipschitz_estimate_product(model, x, *, n_iter: int = 10, seed: int = 0) -> float:
    """``log10`` of the product over probe segments of the empirical local Lipschitz constants.

    Each segment ``f_ℓ`` between two probe points (:func:`topolip.bounds.segments.model_segments`)
    gets :func:`topolip.bounds.estimate.lipschitz_estimate` (power iteration on its Jacobian) at its
    inputs, the activations of ``x``; the product is a local, empirical stand-in for the network's
    Lipschitz constant (not a bound: each factor is a lower bound of its segment's local constant,
    and the product of local constants is no bound on the composition's).

    Parameters
    ----------
    model : torch.nn.Module
        Built by :func:`topolip.nets.models.build_model`; run in eval mode (modes restored).
    x : torch.Tensor of shape (m, C, H, W)
        Clean images, pixels in [0, 1] (a few suffice: the estimate maximises over them).
    n_iter : int, default=10
        Power iterations per segment.
    seed : int, default=0
        Seed of the start vectors.

    Returns
    -------
    float
        ``Σ_ℓ log10 estimate_ℓ``.

    Raises
    ------
    ValueError
        On an unsupported model or invalid images.

    Examples
    --------
    >>> import torch
    >>> from topolip.nets.models import build_model
    >>> _ = torch.manual_seed(0)
    >>> m = build_model("conv_stack", num_layers=1, channels=2)
    >>> bool(np.isfinite(lipschitz_estimate_product(m, torch.rand(2, 1, 28, 28), n_iter=3)))
    True
    """
    import torch

    from topolip.bounds.estimate import lipschitz_estimate
    from topolip.bounds.segments import model_segments
    from topolip.tensors import eval_mode

    segments = model_segments(model)
    with eval_mode(model):
        h = x.to(next(model.parameters()).device)
        total = 0.0
        for seg in segments.values():
            total += math.log10(max(lipschitz_estimate(seg, h, n_iter=n_iter, seed=seed),
                                    1e-300))
            with torch.no_grad():
                out = seg(h)
            h = out[0] if isinstance(out, tuple) else out
    return total
