r"""Lipschitz bounds of self-attention: dot-product (local) and L2 with tied weights (global).

Inputs are sequences ``X ∈ R^{n×D}`` of ``n`` tokens (rows ``x_i``), flattened per sample, so the
Euclidean norm is the Frobenius norm of ``X``. Weights follow PyTorch: ``q_i = W_Q x_i + b_Q``
with ``W_Q`` of shape ``(D, D)`` whose row block ``h`` (``d_h = D/H`` rows) is head ``h``.

Dot-product attention has no global Lipschitz constant (Kim, Papamakarios and Mnih 2021,
Theorem 3.1), so :func:`dot_product_attention_lipschitz` bounds it on the set of inputs whose
tokens have norm at most ``R``; L2 attention with tied query/key weights is globally Lipschitz
(their Theorem 3.2), :class:`L2SelfAttention` implements it and :func:`l2_attention_lipschitz`
gives the bound.
"""

from __future__ import annotations

import math

import torch
import torch.nn.functional as F
from scipy.special import lambertw
from torch import nn

from topolip.bounds._checks import spectral_norm

__all__ = [
    "dot_product_attention_lipschitz",
    "mha_lipschitz",
    "L2SelfAttention",
    "l2_attention_lipschitz",
    "mha_weights",
]


def _f64(t) -> torch.Tensor:
    return torch.as_tensor(t).detach().to("cpu", torch.float64)


def dot_product_attention_lipschitz(
    w_q, w_k, w_v, w_o, num_heads: int, radius: float, n_tokens: int, *, b_q=None,
) -> float:
    r"""Local Lipschitz bound of multi-head dot-product self-attention on tokens of norm ``≤ R``.

    Parameters
    ----------
    w_q, w_k, w_v : array_like of shape (D, D)
        Query, key and value weights (PyTorch layout, row block ``h`` is head ``h``).
    w_o : array_like of shape (D_out, D)
        Output projection; column block ``h`` is ``O^h``.
    num_heads : int
        ``H``; ``D`` must be divisible by it; scores are scaled by ``1/√(D/H)``.
    radius : float
        ``R ≥ 0``: the bound holds on ``{X : ‖x_i‖ ≤ R for every token}`` (activation units).
    n_tokens : int
        ``n``, the sequence length.
    b_q : array_like of shape (D,), optional
        Query bias (key and value biases do not change the Lipschitz constant: a key bias adds a
        constant to each row of scores, a value bias a constant to the output).

    Returns
    -------
    float
        An upper bound on ``‖f(X) − f(Y)‖_F / ‖X − Y‖_F`` for ``X, Y`` in that set.

    Raises
    ------
    ValueError
        On inconsistent shapes, ``D`` not divisible by ``H``, ``R < 0`` or ``n < 1``.

    Notes
    -----
    Derived here, following the Jacobian analysis of Kim et al. (2021, section 3) and Castin,
    Ablin and Peyré (2024, section 3), whose √n behaviour it reproduces; the constants, the bias
    term and the saturation factor ``c`` are ours. Per head write ``A = W_Qᵀ W_K / √d_h``,
    ``a = W_Kᵀ b_Q / √d_h``, so the scores are ``s_ij = x_iᵀ A x_j + aᵀ x_j`` (+ terms constant in
    ``j``), ``P_i = softmax(s_i)``, ``g_i = Σ_j P_ij v_j`` with ``v_j = W_V x_j``. Then

    .. math:: dg_i = \sum_j P_{ij} W_V dx_j
              + \sum_j P_{ij} (v_j - \bar v_i)(ds_{ij} - \overline{ds}_i),

    ``ds_ij = (Aᵀ dx_i)ᵀ x_j + (Aᵀ x_i + a)ᵀ dx_j``. (i) Value path: ``‖P dX W_Vᵀ‖_F ≤ ‖P‖₂‖W_V‖
    ‖dX‖_F`` and ``‖P‖₂ ≤ √(max row sum · max column sum) = √c``. A row's scores spread over at
    most ``Δ = 2R(‖A‖R + ‖a‖)``, so ``P_ij ≤ 1/(1 + (n−1)e^{−Δ})`` and
    ``c = n / (1 + (n−1) e^{−Δ})`` (``≤ n``: √n for moderate ``n``, ``≤ e^Δ`` for large ``n``).
    (ii) Softmax path: weighted Cauchy–Schwarz gives ``‖·‖ ≤ Std_{P_i}(v)·Std_{P_i}(ds_i)``;
    ``Std(v) ≤ ‖W_V‖R``; ``Std(ds_i) ≤ ‖A‖R‖dx_i‖ + (‖A‖R + ‖a‖)(Σ_j P_ij‖dx_j‖²)^{1/2}``, and
    summing over ``i`` with ``Σ_i P_ij ≤ c``:

    .. math:: L_h = \sqrt{c}\,\|W_V\| + \|W_V\| R \left(\|A\| R
              + \sqrt{c}\,(\|A\| R + \|a\|)\right).

    Heads: ``f = Σ_h O^h g^h``, so ``Lip ≤ min(‖W_O‖₂ (Σ_h L_h²)^{1/2}, Σ_h ‖O^h‖₂ L_h)``. The ball
    of token radius ``R`` is convex, so the Jacobian bound is a Lipschitz bound on it. For
    ``n = 1`` the softmax path vanishes.

    References
    ----------
    .. [1] H. Kim, G. Papamakarios, A. Mnih, "The Lipschitz constant of self-attention",
       ICML 2021, arXiv:2006.04710.
    .. [2] V. Castin, P. Ablin, G. Peyré, "How smooth is attention?", ICML 2024,
       arXiv:2312.14820.

    Examples
    --------
    >>> eye = torch.eye(4)
    >>> round(dot_product_attention_lipschitz(eye, eye, eye, eye, 1, radius=0.0, n_tokens=9), 6)
    1.0
    >>> b1 = dot_product_attention_lipschitz(eye, eye, eye, eye, 2, radius=2.0, n_tokens=4)
    >>> b2 = dot_product_attention_lipschitz(eye, eye, eye, eye, 2, radius=2.0, n_tokens=16)
    >>> 1.5 < b2 / b1 < 2.0                       # about √(16/4) = 2 while n ≪ e^Δ ≈ 300
    True
    """
    w_q, w_k, w_v, w_o = (_f64(w) for w in (w_q, w_k, w_v, w_o))
    d = w_q.shape[1]
    for name, w in (("w_q", w_q), ("w_k", w_k), ("w_v", w_v)):
        if w.ndim != 2 or w.shape != (d, d):
            raise ValueError(f"{name} must have shape ({d}, {d}), got {tuple(w.shape)}")
    if w_o.ndim != 2 or w_o.shape[1] != d:
        raise ValueError(f"w_o must have shape (D_out, {d}), got {tuple(w_o.shape)}")
    num_heads = int(num_heads)
    if num_heads < 1 or d % num_heads:
        raise ValueError(f"embedding size {d} is not divisible by num_heads={num_heads}")
    radius, n = float(radius), int(n_tokens)
    if not math.isfinite(radius) or radius < 0:
        raise ValueError(f"radius must be a finite number >= 0, got {radius}")
    if n < 1:
        raise ValueError(f"n_tokens must be >= 1, got {n_tokens}")
    b_q = torch.zeros(d, dtype=torch.float64) if b_q is None else _f64(b_q).reshape(d)
    dh = d // num_heads
    per_head, out_norms = [], []
    for h in range(num_heads):
        blk = slice(h * dh, (h + 1) * dh)
        a_mat = w_q[blk].T @ w_k[blk] / math.sqrt(dh)
        a_vec = w_k[blk].T @ b_q[blk] / math.sqrt(dh)
        norm_a, norm_av = spectral_norm(a_mat), float(a_vec.norm())
        norm_v = spectral_norm(w_v[blk])
        spread = 2.0 * radius * (norm_a * radius + norm_av)
        c = n / (1.0 + (n - 1) * math.exp(-spread)) if n > 1 else 1.0
        soft = 0.0 if n == 1 else norm_v * radius * (norm_a * radius
                                                     + math.sqrt(c) * (norm_a * radius + norm_av))
        per_head.append(math.sqrt(c) * norm_v + soft)
        out_norms.append(spectral_norm(w_o[:, blk]))
    stacked = spectral_norm(w_o) * math.sqrt(sum(lh * lh for lh in per_head))
    summed = sum(o * lh for o, lh in zip(out_norms, per_head, strict=True))
    return min(stacked, summed)


def mha_weights(mha: nn.MultiheadAttention) -> dict[str, torch.Tensor]:
    """``{"w_q", "w_k", "w_v", "w_o", "b_q"}`` of a self-attention ``nn.MultiheadAttention``.

    Parameters
    ----------
    mha : torch.nn.MultiheadAttention
        Without ``add_bias_kv``/``add_zero_attn`` and with ``kdim = vdim = embed_dim``.

    Returns
    -------
    dict of str to torch.Tensor
        float64 copies; ``b_q`` is zeros when the layer has no input bias.

    Raises
    ------
    ValueError
        For the unsupported configurations above.

    Examples
    --------
    >>> sorted(mha_weights(nn.MultiheadAttention(8, 2)))
    ['b_q', 'w_k', 'w_o', 'w_q', 'w_v']
    """
    if mha.bias_k is not None or mha.add_zero_attn:
        raise ValueError("MultiheadAttention with add_bias_kv or add_zero_attn is not supported")
    d = mha.embed_dim
    if mha.in_proj_weight is not None:  # one packed (3d, d) projection: kdim = vdim = d
        w = _f64(mha.in_proj_weight)
        w_q, w_k, w_v = w[:d], w[d:2 * d], w[2 * d:]
    else:
        if mha.kdim != d or mha.vdim != d:
            raise ValueError("self-attention bounds need kdim = vdim = embed_dim")
        w_q, w_k, w_v = (_f64(mha.q_proj_weight), _f64(mha.k_proj_weight),
                         _f64(mha.v_proj_weight))
    b_q = (_f64(mha.in_proj_bias)[:d] if mha.in_proj_bias is not None
           else torch.zeros(d, dtype=torch.float64))
    return dict(w_q=w_q, w_k=w_k, w_v=w_v, w_o=_f64(mha.out_proj.weight), b_q=b_q)


def mha_lipschitz(mha: nn.MultiheadAttention, radius: float, n_tokens: int) -> float:
    r"""Local Lipschitz bound of ``X ↦ mha(X, X, X)`` on ``n`` tokens of norm at most ``R``.

    Parameters
    ----------
    mha : torch.nn.MultiheadAttention
        Used as self-attention, in eval mode (attention dropout off).
    radius : float
        Token radius ``R`` (activation units).
    n_tokens : int
        Sequence length ``n``.

    Returns
    -------
    float
        :func:`dot_product_attention_lipschitz` of its weights.

    Raises
    ------
    ValueError
        See :func:`mha_weights` and :func:`dot_product_attention_lipschitz`.

    Notes
    -----
    See :func:`dot_product_attention_lipschitz` for the derivation.

    References
    ----------
    .. [1] H. Kim, G. Papamakarios, A. Mnih, arXiv:2006.04710.
    .. [2] V. Castin, P. Ablin, G. Peyré, arXiv:2312.14820.

    Examples
    --------
    >>> _ = torch.manual_seed(0)
    >>> mha = nn.MultiheadAttention(8, 2, batch_first=True)
    >>> mha_lipschitz(mha, 1.0, 5) < mha_lipschitz(mha, 2.0, 5)
    True
    """
    w = mha_weights(mha)
    return dot_product_attention_lipschitz(w["w_q"], w["w_k"], w["w_v"], w["w_o"],
                                           mha.num_heads, radius, n_tokens, b_q=w["b_q"])


class L2SelfAttention(nn.Module):
    r"""Multi-head L2 self-attention with tied query and key weights (Kim et al. 2021).

    Parameters
    ----------
    embed_dim : int
        Token size ``D``.
    num_heads : int
        ``H``; ``D`` must be divisible by it.
    out_bias : bool, default=True
        Bias of the output projection (the query/key/value maps have none: a bias there breaks
        the global Lipschitz property of the construction).

    Notes
    -----
    For head ``h`` with ``W^{Q,h} = W^{K,h}`` (rows of ``q_weight``) and ``d_h = D/H``:

    .. math:: P^h_{ij} = \operatorname{softmax}_j\!\left(-\|W^{Q,h}x_i - W^{Q,h}x_j\|^2/\sqrt{d_h}
              \right), \quad F^h(X) = P^h X A_h V_h^\top, \quad
              A_h = {W^{Q,h}}^\top W^{Q,h}/\sqrt{d_h},

    ``F(X) = [F^1 … F^H] W_Oᵀ + b_O``. The value map is tied to the query map through ``A_h``,
    which the Lipschitz proof needs. Input and output ``(m, n, D)``, batch first.

    References
    ----------
    .. [1] H. Kim, G. Papamakarios, A. Mnih, "The Lipschitz constant of self-attention",
       ICML 2021, arXiv:2006.04710, section 3.2.

    Examples
    --------
    >>> _ = torch.manual_seed(0)
    >>> att = L2SelfAttention(8, 2)
    >>> att(torch.randn(3, 5, 8)).shape
    torch.Size([3, 5, 8])
    """

    def __init__(self, embed_dim: int, num_heads: int, *, out_bias: bool = True):
        super().__init__()
        if embed_dim < 1 or num_heads < 1 or embed_dim % num_heads:
            raise ValueError(f"embed_dim={embed_dim} must be a positive multiple of "
                             f"num_heads={num_heads}")
        self.embed_dim, self.num_heads = int(embed_dim), int(num_heads)
        self.head_dim = embed_dim // num_heads
        self.q_weight = nn.Parameter(torch.empty(embed_dim, embed_dim))
        self.v_weight = nn.Parameter(torch.empty(embed_dim, embed_dim))
        self.out_proj = nn.Linear(embed_dim, embed_dim, bias=out_bias)
        nn.init.xavier_uniform_(self.q_weight)
        nn.init.xavier_uniform_(self.v_weight)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        """Apply the attention to ``x`` of shape ``(m, n, D)``."""
        m, n, d = x.shape  # (batch, tokens, embed)
        hd, heads = self.head_dim, self.num_heads
        wq = self.q_weight.view(heads, hd, d)                      # (H, d_h, D)
        wv = self.v_weight.view(heads, hd, d)                      # (H, d_h, D)
        q = torch.einsum("mnd,hkd->mhnk", x, wq)                   # (m, H, n, d_h)
        sq = (q * q).sum(-1)                                       # (m, H, n)
        dist2 = sq[..., :, None] + sq[..., None, :] - 2 * q @ q.transpose(-1, -2)
        p = F.softmax(-dist2 / math.sqrt(hd), dim=-1)              # (m, H, n, n)
        mix = torch.einsum("hkd,hvd->hkv", wq, wv)                 # W_Q^h V_hᵀ: (H, d_h, d_h)
        heads_out = (p @ q) @ mix / math.sqrt(hd)                  # P X A_h V_hᵀ: (m, H, n, d_h)
        return self.out_proj(heads_out.transpose(1, 2).reshape(m, n, d))


def l2_attention_lipschitz(att: L2SelfAttention, n_tokens: int) -> float:
    r"""Global Lipschitz bound of :class:`L2SelfAttention` on sequences of ``n`` tokens.

    Parameters
    ----------
    att : L2SelfAttention
        The attention layer to bound.
    n_tokens : int
        ``N``, the sequence length.

    Returns
    -------
    float
        ``√N (4 W₀((N−1)/e) + 1) · min(‖W_O‖₂ (Σ_h ‖A_h‖²‖V_h‖²)^{1/2}, Σ_h ‖O^h‖₂ ‖A_h‖ ‖V_h‖)``.

    Raises
    ------
    ValueError
        If ``n_tokens < 1``.

    Notes
    -----
    Cited: Kim et al. (2021), Theorem 3.2, bound one head ``f(X) = P X A`` by
    ``Lip₂(f) ≤ √N (4φ⁻¹(N−1) + 1) ‖A‖₂`` with ``φ(x) = x e^{x+1}``, so ``φ⁻¹(N−1) =
    W₀((N−1)/e)`` (Lambert W), and ``‖A_h‖₂ = ‖W^{Q,h}‖₂²/√(D/H)`` — the query weight enters
    squared. Stacking the heads through ``V_h`` and ``W_O`` as in
    :func:`dot_product_attention_lipschitz` gives the formula (for ``N = 1`` it is ``‖A‖``,
    exact for ``f(x) = xA``). The bound grows like ``√N log N``; it holds for every input.
    The paper's text was not at hand when this was written: the constant is the theorem as we
    read it, with the query weight entering squared through ``A_h`` (as scaling ``W^Q → αW^Q``
    requires, the value path alone growing like ``α²``); the tests and the theory notebook check
    it against local estimates, including gradient-ascent searches.

    References
    ----------
    .. [1] H. Kim, G. Papamakarios, A. Mnih, "The Lipschitz constant of self-attention",
       ICML 2021, arXiv:2006.04710, Theorem 3.2.

    Examples
    --------
    >>> _ = torch.manual_seed(0)
    >>> att = L2SelfAttention(8, 2)
    >>> l2_attention_lipschitz(att, 4) < l2_attention_lipschitz(att, 16)
    True
    """
    n = int(n_tokens)
    if n < 1:
        raise ValueError(f"n_tokens must be >= 1, got {n_tokens}")
    hd = att.head_dim
    wq, wv, wo = _f64(att.q_weight), _f64(att.v_weight), _f64(att.out_proj.weight)
    terms, summed = [], 0.0
    for h in range(att.num_heads):
        blk = slice(h * hd, (h + 1) * hd)
        lh = spectral_norm(wq[blk]) ** 2 / math.sqrt(hd) * spectral_norm(wv[blk])
        terms.append(lh)
        summed += spectral_norm(wo[:, blk]) * lh
    factor = math.sqrt(n) * (4.0 * float(lambertw((n - 1) / math.e).real) + 1.0)
    return factor * min(spectral_norm(wo) * math.sqrt(sum(t * t for t in terms)), summed)
