r"""Operator norm of a 2-D convolution on a given input size, certified from above.

A ``Conv2d`` acting on ``(C_in, H, W)`` images is a linear map ``T`` between the flattened
spaces; its Lipschitz constant in the Euclidean norm is ``‖T‖₂``, which depends on the input
size through the padding. This module gives three upper bounds and one lower bound:

* ``cholesky`` — tight to about 1e-3: the smaller Gram matrix ``G`` of ``T`` (``TᵀT`` or
  ``TTᵀ``) is sparse and banded; a Lanczos estimate ``λ`` of ``λ_max(G)`` is certified from above
  by a banded Cholesky factorisation of ``μI − G`` with ``μ = λ(1 + rtol)`` (a symmetric matrix is
  positive definite iff its Cholesky factorisation exists), plus Demmel's rounding-error term;
* ``circular`` — zero padding embeds the convolution in a circular one on the padded grid, whose
  singular values are those of the Fourier transform of the kernel at each frequency (Sedghi,
  Gupta and Long 2019); looser on small inputs, used when the band does not fit in memory;
* ``cheap`` — ``√m ‖W̃‖₂`` with ``W̃`` the ``(C_out, C_in k_h k_w)`` reshaped kernel and ``m`` the
  largest number of patches an input pixel belongs to (``k_h k_w`` at stride 1);
* ``lower`` — the Lanczos/power estimate ``√λ``, a lower bound up to solver tolerance.
"""

from __future__ import annotations

import hashlib
import math
from collections import OrderedDict
from dataclasses import dataclass

import numpy as np
import scipy.linalg
import scipy.sparse
import scipy.sparse.linalg
import torch
from torch import nn

from topolip.bounds._checks import SVD_SAFETY, UNIT_ROUNDOFF, spectral_norm

__all__ = ["ConvNormBounds", "conv2d_norm_bounds", "conv2d_lipschitz", "conv2d_cheap_bound"]

_MODES = ("zeros", "circular", "reflect", "replicate")


@dataclass(frozen=True)
class ConvNormBounds:
    """Bounds on the operator norm ``‖T‖₂`` of a convolution on one input size.

    Attributes
    ----------
    upper : float
        The smallest of the certified upper bounds computed: the bound to use.
    method : str
        Which one it is: ``"cholesky"``, ``"circular"`` or ``"cheap"``.
    cholesky : float
        Certified bound from the banded Cholesky test; NaN when not run (band over the memory
        cap, or the circular bound already within ``rtol`` of ``lower``).
    circular : float
        Upper bound from the circular embedding (NaN for padding modes other than zeros).
    cheap : float
        Upper bound ``√m ‖W̃‖₂`` (patch counting).
    lower : float
        Lanczos estimate of ``‖T‖₂`` (a lower bound up to solver tolerance; NaN if not computed).
    input_size : tuple of int
        ``(H, W)`` the bounds refer to.
    """

    upper: float
    method: str
    cholesky: float
    circular: float
    cheap: float
    lower: float
    input_size: tuple[int, int]


# Results by (kernel bytes, geometry, options): a model's bound is taken once per perturbation,
# and the certification depends only on the weights and the input size.
_CACHE: OrderedDict[tuple, ConvNormBounds] = OrderedDict()
_CACHE_SIZE = 512


def _conv_params(conv: nn.Conv2d, input_size) -> dict:
    if not isinstance(conv, nn.Conv2d):
        raise TypeError(f"expected torch.nn.Conv2d, got {type(conv).__name__}")
    if conv.padding_mode not in _MODES:
        raise ValueError(f"Conv2d padding_mode {conv.padding_mode!r} is not one of {_MODES}")
    h, w = (int(s) for s in input_size)
    if h < 1 or w < 1:
        raise ValueError(f"input_size must be two positive integers, got {input_size}")
    kh, kw = conv.kernel_size
    sh, sw = conv.stride
    dh, dw = conv.dilation
    if isinstance(conv.padding, str):
        if conv.padding == "valid":
            pads = ((0, 0), (0, 0))
        else:  # "same": PyTorch puts the extra pixel after
            tot_h, tot_w = dh * (kh - 1), dw * (kw - 1)
            pads = ((tot_h // 2, tot_h - tot_h // 2), (tot_w // 2, tot_w - tot_w // 2))
    else:
        ph, pw = conv.padding
        pads = ((ph, ph), (pw, pw))
    # Full kernel (C_out, C_in, kh, kw): groups expanded into a block-diagonal kernel.
    weight = conv.weight.detach().to("cpu", torch.float64).numpy()
    cout, cin_g = weight.shape[:2]
    g = conv.groups
    full = np.zeros((cout, cin_g * g, kh, kw))
    og = cout // g
    for k in range(g):
        full[k * og:(k + 1) * og, k * cin_g:(k + 1) * cin_g] = weight[k * og:(k + 1) * og]
    return dict(kernel=full, size=(h, w), kernel_size=(kh, kw), stride=(sh, sw),
                dilation=(dh, dw), pads=pads, mode=conv.padding_mode)


def _index_map(n: int, k: int, s: int, d: int, pad: tuple[int, int], mode: str) -> np.ndarray:
    """Input index read by output ``v`` and kernel tap ``a`` along one axis; -1 = zero padding.

    Returns an int array of shape (n_out, k).
    """
    before, after = pad
    n_out = (n + before + after - d * (k - 1) - 1) // s + 1
    if n_out < 1:
        raise ValueError(f"kernel (dilated size {d * (k - 1) + 1}) larger than padded input {n}")
    pos = s * np.arange(n_out)[:, None] - before + d * np.arange(k)[None, :]
    if mode == "zeros":
        return np.where((pos >= 0) & (pos < n), pos, -1)
    if mode == "circular":
        return np.mod(pos, n)
    if mode == "replicate":
        return np.clip(pos, 0, n - 1)
    # reflect (no edge repeat), as torch.nn.functional.pad
    pos = np.abs(pos)
    return np.where(pos > n - 1, 2 * (n - 1) - pos, pos)


def _sparse_operator(p: dict) -> scipy.sparse.csr_matrix:
    """The convolution as a sparse matrix, channels fastest: row (v_h·W_out + v_w)·C_out + o."""
    kernel = p["kernel"]
    cout, cin, kh, kw = kernel.shape
    h, w = p["size"]
    ih = _index_map(h, kh, p["stride"][0], p["dilation"][0], p["pads"][0], p["mode"])
    iw = _index_map(w, kw, p["stride"][1], p["dilation"][1], p["pads"][1], p["mode"])
    oh, ow = ih.shape[0], iw.shape[0]
    # Broadcast over (v_h, v_w, a, b)
    uh = ih[:, None, :, None]
    uw = iw[None, :, None, :]
    valid = (uh >= 0) & (uw >= 0)
    vh, vw, a, b = np.nonzero(np.broadcast_to(valid, (oh, ow, kh, kw)))
    pix_out = vh * ow + vw
    pix_in = ih[vh, a] * w + iw[vw, b]
    o, c = np.meshgrid(np.arange(cout), np.arange(cin), indexing="ij")
    o, c = o.ravel(), c.ravel()
    rows = (pix_out[:, None] * cout + o[None, :]).ravel()
    cols = (pix_in[:, None] * cin + c[None, :]).ravel()
    vals = kernel[o[None, :], c[None, :], a[:, None], b[:, None]].ravel()
    keep = vals != 0
    mat = scipy.sparse.coo_matrix((vals[keep], (rows[keep], cols[keep])),
                                  shape=(oh * ow * cout, h * w * cin))
    return mat.tocsr()  # duplicates (circular/reflect padding) are summed


def _certify_band(gram: scipy.sparse.csr_matrix, lam: float, frob_t2: float, terms: int,
                  rtol: float, max_band_entries: float) -> float:
    """Certified upper bound on λ_max(gram) near ``lam`` via banded Cholesky; NaN if too big."""
    dim = gram.shape[0]
    coo = scipy.sparse.tril(gram).tocoo()
    band = int((coo.row - coo.col).max()) if coo.nnz else 0
    if (band + 1) * dim > max_band_entries:
        return float("nan")
    ab0 = np.zeros((band + 1, dim))
    ab0[coo.row - coo.col, coo.col] = coo.data
    max_diag = float(ab0[0].max())
    scale = max(lam, max_diag * 1e-12, np.finfo(float).tiny)
    tol = rtol
    for _ in range(40):
        mu = lam * (1.0 + tol) + scale * 1e-12
        ab = -ab0
        ab[0] += mu
        try:
            fac = scipy.linalg.cholesky_banded(ab, lower=True, check_finite=False)
        except np.linalg.LinAlgError:
            tol *= 4.0
            continue
        # Demmel: if Cholesky completes, R̃ᵀR̃ = M + ΔM with |ΔM| ≤ γ_{n+1}|R̃ᵀ||R̃|, so
        # ‖ΔM‖₂ ≤ γ_{n+1}‖R̃‖_F². Forming G in floating point errs by ≤ γ_terms ‖T‖_F², and the
        # shift μ − G_ii by ≤ u(μ + max G_ii).
        gamma = lambda n: n * UNIT_ROUNDOFF / (1.0 - n * UNIT_ROUNDOFF)  # noqa: E731
        err = (gamma(dim + 1) * float(np.sum(fac * fac)) + gamma(terms) * frob_t2
               + UNIT_ROUNDOFF * (mu + max_diag))
        return (mu + err) * (1.0 + 4 * UNIT_ROUNDOFF)
    raise RuntimeError("conv2d certification failed to converge; the Gram matrix is not PSD?")


def _band_estimate(p: dict) -> float:
    """Entries of the banded storage of the smaller Gram matrix (zero padding), unformed."""
    cout, cin, kh, kw = p["kernel"].shape
    h, w = p["size"]
    (sh, sw), (dh, dw) = p["stride"], p["dilation"]
    oh = (h + sum(p["pads"][0]) - dh * (kh - 1) - 1) // sh + 1
    ow = (w + sum(p["pads"][1]) - dw * (kw - 1) - 1) // sw + 1
    if p["mode"] != "zeros":  # wrap-around couples far pixels: the band can be the whole matrix
        dim = min(oh * ow * cout, h * w * cin)
        return float(dim) * dim
    if oh * ow * cout <= h * w * cin:
        band = ((dh * (kh - 1) // sh) * ow + dw * (kw - 1) // sw + 1) * cout
        return float(band + 1) * oh * ow * cout
    band = (dh * (kh - 1) * w + dw * (kw - 1) + 1) * cin
    return float(band + 1) * h * w * cin


def _top_eigenvalue(gram: scipy.sparse.csr_matrix) -> float:
    dim = gram.shape[0]
    if dim <= 1500:
        return float(scipy.linalg.eigvalsh(gram.toarray(), subset_by_index=[dim - 1, dim - 1])[0])
    rng = np.random.default_rng(0)
    v0 = rng.standard_normal(dim)
    val = scipy.sparse.linalg.eigsh(gram, k=1, which="LA", tol=1e-8, v0=v0,
                                    return_eigenvectors=False)
    return float(val[0])


def _circular_bound(p: dict, max_fft_entries: float) -> float:
    """max_ω σ_max(K̂(ω)) on the zero-padded grid (H + pads) × (W + pads); NaN if not applicable."""
    if p["mode"] != "zeros":
        return float("nan")
    kernel = p["kernel"]
    cout, cin, kh, kw = kernel.shape
    (dh, dw), (h, w) = p["dilation"], p["size"]
    dil = np.zeros((cout, cin, dh * (kh - 1) + 1, dw * (kw - 1) + 1))
    dil[:, :, ::dh, ::dw] = kernel
    nh = h + sum(p["pads"][0])
    nw = w + sum(p["pads"][1])
    nh, nw = max(nh, dil.shape[2]), max(nw, dil.shape[3])
    if cout * cin * nh * (nw // 2 + 1) > max_fft_entries:
        return float("nan")
    # Real kernel: K̂(-ω) = conj K̂(ω) has the same singular values, so rfft2 suffices.
    spec = np.fft.rfft2(dil, s=(nh, nw), axes=(2, 3))  # (cout, cin, nh, nw//2+1)
    spec = spec.reshape(cout, cin, -1).transpose(2, 0, 1)
    spec_h = spec.conj().transpose(0, 2, 1)
    gram = spec_h @ spec if cin <= cout else spec @ spec_h
    top = np.linalg.eigvalsh(gram)[:, -1].max()
    return math.sqrt(max(float(top), 0.0)) * (1.0 + SVD_SAFETY)


def _cheap_bound(p: dict) -> float:
    kernel = p["kernel"]
    cout = kernel.shape[0]
    mult = 1
    for axis in range(2):
        n, k = p["size"][axis], kernel.shape[2 + axis]
        idx = _index_map(n, k, p["stride"][axis], p["dilation"][axis], p["pads"][axis], p["mode"])
        counts = np.bincount(idx[idx >= 0].ravel(), minlength=n)
        mult *= int(counts.max()) if counts.size else 0
    return math.sqrt(mult) * spectral_norm(kernel.reshape(cout, -1))


def conv2d_norm_bounds(
    conv: nn.Conv2d,
    input_size: tuple[int, int],
    *,
    rtol: float = 1e-3,
    max_band_entries: float = 2.5e7,
    max_fft_entries: float = 2e7,
    out_scale=None,
) -> ConvNormBounds:
    r"""Upper and lower bounds on the operator norm of ``conv`` on ``(C_in, H, W)`` inputs.

    Parameters
    ----------
    conv : torch.nn.Conv2d
        Any stride, dilation, groups and padding (int, tuple, ``"same"``, ``"valid"``); padding
        modes ``zeros``, ``circular``, ``reflect``, ``replicate``. The bias does not matter.
    input_size : tuple of int
        ``(H, W)``, the spatial size of the inputs in pixels.
    rtol : float, default=1e-3
        Relative gap asked between the Lanczos estimate of ``‖T‖₂²`` and the Cholesky bound
        (widened automatically until the test passes); the Cholesky test is skipped when the
        circular bound is already within ``rtol`` of the estimate.
    max_band_entries : float, default=2.5e7
        Memory cap (float64 entries, 8 bytes each) of the banded Gram matrix; above it the
        Cholesky test is skipped (NaN) and ``upper`` falls back on ``circular``/``cheap``.
    max_fft_entries : float, default=2e7
        Memory cap of the kernel's Fourier transform for the circular bound.
    out_scale : array_like of shape (C_out,), optional
        Per-output-channel factors folded into the kernel first (an eval-mode BatchNorm after
        the convolution: ``γ/√(σ²+eps)``), so the bound is that of ``BN ∘ conv``.

    Returns
    -------
    ConvNormBounds
        ``upper`` (the bound to use) and ``method``, ``cholesky``, ``circular``, ``cheap``,
        ``lower``.

    Raises
    ------
    TypeError
        If ``conv`` is not a ``Conv2d``.
    ValueError
        On an unknown padding mode or an input smaller than the dilated kernel.

    Notes
    -----
    Certified bound (ours, standard numerical linear algebra). With ``G`` the smaller Gram matrix
    of ``T``, ``λ_max(G) ≤ μ`` iff ``μI − G ⪰ 0``; a Cholesky factorisation that completes in
    floating point proves ``μI − G + ΔM ≻ 0`` with ``‖ΔM‖₂ ≤ γ_{n+1}‖R̃‖_F²`` (Demmel 1989; Higham,
    *Accuracy and Stability of Numerical Algorithms*, Thm 10.3), so
    ``‖T‖₂ ≤ √(μ + γ_{n+1}‖R̃‖_F² + γ_t‖T‖_F² + u(μ + max G_ii))``. Ordering pixels row-major with
    channels fastest makes ``G`` banded (bandwidth about ``(k−1)(W+1)C``), so the factorisation
    costs ``O(n b²)``.

    Circular bound: for zero padding, ``T = S ∘ C_N ∘ E`` with ``E`` the isometric embedding into
    the padded grid ``N = (H + p_h, W + p_w)``, ``C_N`` the circular convolution there and ``S``
    a selection (``‖S‖, ‖E‖ ≤ 1``); ``‖C_N‖₂ = max_ω σ_max(K̂(ω))`` over the ``N`` frequencies
    (Sedghi, Gupta and Long 2019). Strides only subsample: ``‖T_s‖ ≤ ‖T_1‖``.

    Cheap bound: ``(Tx)_v = W̃ · patch_v(x)``, so ``‖Tx‖² ≤ ‖W̃‖² Σ_v ‖patch_v(x)‖² ≤ m ‖W̃‖² ‖x‖²``
    where every pixel lies in at most ``m`` patches (Cisse et al. 2017; Tsuzuku, Sato and
    Sugiyama 2018).

    References
    ----------
    .. [1] H. Sedghi, V. Gupta, P. M. Long, "The singular values of convolutional layers",
       ICLR 2019, arXiv:1805.10408.
    .. [2] B. Delattre, Q. Barthélemy, A. Araujo, A. Allauzen, "Efficient bound of Lipschitz
       constant for convolutional layers by Gram iteration", ICML 2023, arXiv:2305.16173.
    .. [3] M. Cisse et al., "Parseval networks", ICML 2017, arXiv:1704.08847.
    .. [4] Y. Tsuzuku, I. Sato, M. Sugiyama, "Lipschitz-margin training", NeurIPS 2018,
       arXiv:1802.04034.

    Examples
    --------
    >>> conv = nn.Conv2d(1, 1, 3, padding=1, bias=False)
    >>> _ = conv.weight.data.fill_(1.0)
    >>> b = conv2d_norm_bounds(conv, (7, 7))
    >>> exact = (1 + 2 * math.cos(math.pi / 8)) ** 2      # ‖T‖ of the all-ones 3×3 kernel
    >>> b.method, exact <= b.upper <= exact * 1.001, round(b.circular, 3), round(b.cheap, 3)
    ('cholesky', True, 9.0, 9.0)
    """
    p = _conv_params(conv, input_size)
    if out_scale is not None:
        scale = np.asarray(torch.as_tensor(out_scale).detach().cpu().double(), dtype=float)
        p["kernel"] = p["kernel"] * scale.reshape(-1, 1, 1, 1)
    key = (hashlib.sha1(np.ascontiguousarray(p["kernel"]).tobytes()).hexdigest(),
           p["kernel"].shape, p["size"], p["stride"], p["dilation"], p["pads"], p["mode"],
           float(rtol), float(max_band_entries), float(max_fft_entries))
    if key in _CACHE:
        _CACHE.move_to_end(key)
        return _CACHE[key]
    result = _compute_bounds(p, rtol, max_band_entries, max_fft_entries)
    _CACHE[key] = result
    if len(_CACHE) > _CACHE_SIZE:
        _CACHE.popitem(last=False)
    return result


def _compute_bounds(p: dict, rtol: float, max_band_entries: float,
                    max_fft_entries: float) -> ConvNormBounds:
    cheap = _cheap_bound(p)
    circular = _circular_bound(p, max_fft_entries)
    cholesky = lower = float("nan")
    if not np.any(p["kernel"]):
        cholesky = lower = 0.0
    elif _band_estimate(p) <= max_band_entries:
        op = _sparse_operator(p)
        gram = ((op @ op.T) if op.shape[0] <= op.shape[1] else (op.T @ op)).tocsr()
        lam = max(_top_eigenvalue(gram), 0.0)
        lower = math.sqrt(lam)
        # The circular bound is already certified; when it is within `rtol` of the Lanczos
        # estimate the Cholesky test cannot improve it by more than that.
        if not (np.isfinite(circular) and circular <= lower * (1.0 + rtol)):
            terms = int(np.diff(op.indptr).max()) if op.nnz else 1
            frob = float(op.multiply(op).sum())
            lam_cert = _certify_band(gram, lam, frob, terms, rtol, max_band_entries)
            cholesky = math.sqrt(lam_cert) if np.isfinite(lam_cert) else float("nan")
    candidates = {"cholesky": cholesky, "circular": circular, "cheap": cheap}
    method = min((k for k, v in candidates.items() if np.isfinite(v)), key=candidates.get)
    return ConvNormBounds(upper=candidates[method], method=method, cholesky=cholesky,
                          circular=circular, cheap=cheap, lower=lower, input_size=p["size"])


def conv2d_lipschitz(conv: nn.Conv2d, input_size: tuple[int, int], **kwargs) -> float:
    """The bound to use for ``conv`` on ``(H, W)`` inputs: ``conv2d_norm_bounds(...).upper``.

    Parameters
    ----------
    conv : torch.nn.Conv2d
        The convolution to bound (its weight, stride, padding, dilation and groups).
    input_size : tuple of int
        ``(H, W)`` in pixels.
    **kwargs
        Passed to :func:`conv2d_norm_bounds`.

    Returns
    -------
    float
        A certified upper bound on the operator norm (Euclidean, flattened sample).

    Raises
    ------
    TypeError, ValueError
        As :func:`conv2d_norm_bounds`.

    Notes
    -----
    See :func:`conv2d_norm_bounds`.

    References
    ----------
    .. [1] Sedghi, Gupta, Long 2019, arXiv:1805.10408; Delattre et al. 2023, arXiv:2305.16173.

    Examples
    --------
    >>> conv = nn.Conv2d(2, 3, 1, bias=False)               # a 1×1 conv is W at every pixel
    >>> w = conv.weight.detach()[:, :, 0, 0].double()
    >>> abs(conv2d_lipschitz(conv, (5, 5)) / torch.linalg.matrix_norm(w, 2).item() - 1) < 1e-3
    True
    """
    return conv2d_norm_bounds(conv, input_size, **kwargs).upper


def conv2d_cheap_bound(conv: nn.Conv2d, input_size: tuple[int, int]) -> float:
    r"""The patch-counting bound ``√m ‖W̃‖₂`` on the operator norm of ``conv``.

    Parameters
    ----------
    conv : torch.nn.Conv2d
        The convolution to bound.
    input_size : tuple of int
        ``(H, W)`` in pixels (it fixes ``m`` near the borders and for non-zero padding modes).

    Returns
    -------
    float
        ``√m ‖W̃‖₂``, ``W̃`` of shape ``(C_out, C_in k_h k_w)``, ``m`` the most patches any pixel
        belongs to (``k_h k_w`` for stride 1, 1 for non-overlapping patches).

    Raises
    ------
    TypeError, ValueError
        As :func:`conv2d_norm_bounds`.

    Notes
    -----
    ``‖Tx‖² = Σ_v ‖W̃ patch_v(x)‖² ≤ ‖W̃‖² Σ_v ‖patch_v(x)‖² ≤ m‖W̃‖²‖x‖²``.

    References
    ----------
    .. [1] M. Cisse et al., "Parseval networks", arXiv:1704.08847.
    .. [2] Y. Tsuzuku, I. Sato, M. Sugiyama, "Lipschitz-margin training", arXiv:1802.04034.

    Examples
    --------
    >>> conv = nn.Conv2d(1, 1, 3, padding=1, bias=False)
    >>> _ = conv.weight.data.fill_(1.0)
    >>> round(conv2d_cheap_bound(conv, (7, 7)), 6)                  # √9 · ‖ones(1, 9)‖ = 3 · 3
    9.0
    """
    return _cheap_bound(_conv_params(conv, input_size))
