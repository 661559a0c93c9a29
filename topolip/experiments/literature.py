"""Measurements behind the chapter "Against the literature" (``10_literature``).

:func:`local_lipschitz`: the local Lipschitz constant of a map at a point (power iteration on
its Jacobian with ``torch.func.jvp``/``vjp``; a lower bound on the Lipschitz constant).
:func:`castin_worst_case`: the worst-case input of Castin et al. (2024) for one head.
:func:`attention_growth_table`, :func:`castin_table`, :func:`castin_real_table`,
:func:`confidence_table`: the tables ``lit_attention_growth``, ``lit_castin``,
``lit_castin_real``, ``lit_confidence`` read by
:mod:`topolip.evidence.literature`.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Iterable, Mapping

import numpy as np
import pandas as pd
import torch
from torch import nn

from topolip.bounds.attention import mha_lipschitz, mha_weights

__all__ = ["attention_block_inputs", "attention_growth_table", "castin_real_table", "castin_table",
           "castin_worst_case", "confidence_table", "head_attention", "is_piecewise_affine",
           "local_lipschitz"]

#: leaf modules of a piecewise-affine network in eval mode (Hein et al. 2019, Section 2):
#: affine maps, ReLU-type activations, max and average pooling, and no-ops
_PIECEWISE_AFFINE = (nn.Linear, nn.Conv2d, nn.ReLU, nn.LeakyReLU, nn.BatchNorm1d,
                     nn.BatchNorm2d, nn.MaxPool2d, nn.AvgPool2d, nn.AdaptiveAvgPool2d,
                     nn.Flatten, nn.Identity, nn.Dropout)


def is_piecewise_affine(model: nn.Module) -> bool:
    """Whether every leaf module of ``model`` is piecewise affine in eval mode.

    Hein et al. (2019, Theorem 3.1) cover classifiers built of affine maps, ReLU-type
    activations and max/average pooling; BatchNorm in eval mode is affine. A GELU, a softmax
    attention or any other leaf makes the model fall outside the theorem. Functional
    non-linearities inside a ``forward`` are not seen (the models here use modules).

    >>> is_piecewise_affine(nn.Sequential(nn.Linear(2, 3), nn.ReLU(), nn.Linear(3, 2)))
    True
    >>> is_piecewise_affine(nn.Sequential(nn.Linear(2, 3), nn.GELU()))
    False
    """
    if any(isinstance(m, nn.MultiheadAttention) for m in model.modules()):
        return False     # softmax attention (not a leaf: it holds its output projection)
    leaves = [m for m in model.modules() if not list(m.children())]
    return all(isinstance(m, _PIECEWISE_AFFINE) for m in leaves)


def attention_block_inputs(model: nn.Module, images: torch.Tensor) -> dict[str, torch.Tensor]:
    """The input tokens of every ``nn.MultiheadAttention`` block of ``model`` on ``images``.

    Parameters
    ----------
    model : nn.Module
        A model holding one or more ``nn.MultiheadAttention`` blocks (self-attention).
    images : torch.Tensor of shape (m, C, H, W)
        Inputs in [0, 1].

    Returns
    -------
    dict of str to torch.Tensor
        Block name (``model.named_modules``) -> its query input, shape (m, n, D) for
        ``batch_first`` blocks (forward pre-hooks, detached copies).

    Raises
    ------
    ValueError
        When ``model`` has no ``nn.MultiheadAttention`` block.
    """
    store: dict[str, torch.Tensor] = {}

    def keep(name):
        def hook(_module, args, kwargs):
            store[name] = (args[0] if args else kwargs["query"]).detach().clone()
        return hook

    blocks = [(n, m) for n, m in model.named_modules() if isinstance(m, nn.MultiheadAttention)]
    if not blocks:
        raise ValueError(f"{type(model).__name__} has no nn.MultiheadAttention block")
    hooks = [m.register_forward_pre_hook(keep(n), with_kwargs=True) for n, m in blocks]
    try:
        with torch.no_grad():
            model.eval()
            model(images)
    finally:
        for h in hooks:
            h.remove()
    return store


def local_lipschitz(f: Callable[[torch.Tensor], torch.Tensor], x: torch.Tensor, *,
                    steps: int = 20, seed: int = 0) -> float:
    r"""Spectral norm of the Jacobian of ``f`` at ``x`` by power iteration on ``JᵀJ``.

    Parameters
    ----------
    f : callable
        A map of tensors (any shapes); the Euclidean norm of the flattened tensors is used.
    x : torch.Tensor
        The point; float64 recommended.
    steps : int, default=20
        Power-iteration steps (each one ``jvp`` and one ``vjp``).
    seed : int, default=0
        Seed of the random start vector.

    Returns
    -------
    float
        ``‖J_f(x)‖₂`` from below (power iteration converges from below): a lower bound on the
        local Lipschitz constant of ``f`` near ``x``.

    Examples
    --------
    >>> a = torch.tensor([[3.0, 0.0], [0.0, 1.0]], dtype=torch.float64)
    >>> round(local_lipschitz(lambda v: a @ v, torch.ones(2, dtype=torch.float64)), 6)
    3.0
    """
    if steps < 1:
        raise ValueError(f"steps must be >= 1, got {steps}")
    g = torch.Generator().manual_seed(seed)
    v = torch.randn(x.shape, generator=g, dtype=x.dtype).to(x.device)
    v = v / v.norm()
    _, vjp = torch.func.vjp(f, x)
    sigma = 0.0
    for _ in range(steps):
        _, jv = torch.func.jvp(f, (x,), (v,))
        (w,) = vjp(jv)
        sigma = float(jv.detach().norm())
        nw = w.norm()
        if nw == 0:
            return 0.0
        v = w / nw
    _, jv = torch.func.jvp(f, (x,), (v,))
    return max(sigma, float(jv.detach().norm()))


def head_attention(w_q: torch.Tensor, w_k: torch.Tensor, w_v: torch.Tensor,
                   ) -> Callable[[torch.Tensor], torch.Tensor]:
    r"""One dot-product head ``X ↦ softmax(X W_qᵀ W_k Xᵀ/√d) X W_vᵀ``, ``X`` of shape (n, D).

    ``w_q, w_k, w_v`` are (d, D) row blocks of a PyTorch in-projection; ``d`` the head size.
    """
    d = w_q.shape[0]

    def f(x: torch.Tensor) -> torch.Tensor:
        s = (x @ w_q.T) @ (x @ w_k.T).T / math.sqrt(d)
        return torch.softmax(s, dim=-1) @ (x @ w_v.T)

    return f


def castin_worst_case(w_q: torch.Tensor, w_k: torch.Tensor, radius: float,
                      n_tokens: int) -> torch.Tensor:
    r"""Castin et al.'s worst-case input ``X₀ = R u``, ``X_i = R u / 2`` (i = 1..n-1).

    Parameters
    ----------
    w_q, w_k : torch.Tensor of shape (d, D)
        One head's query and key rows (PyTorch layout: ``q = W_q x``).
    radius : float
        ``R`` (activation units).
    n_tokens : int
        ``n ≥ 1``.

    Returns
    -------
    torch.Tensor of shape (n, D), float64
        ``u`` is the unit eigenvector of ``A = W_qᵀ W_k / √d`` (scores ``x_iᵀ A x_j``; the
        paper's ``W_Q W_Kᵀ/√d`` in column convention) with the largest real eigenvalue; when
        ``A`` has no real eigenvalue, of its symmetric part.

    References
    ----------
    .. [1] V. Castin, P. Ablin, G. Peyré, "How smooth is attention?", ICML 2024,
       arXiv:2312.14820.
    """
    if n_tokens < 1:
        raise ValueError(f"n_tokens must be >= 1, got {n_tokens}")
    a = (w_q.double().T @ w_k.double()).cpu().numpy() / math.sqrt(w_q.shape[0])
    ev, vec = np.linalg.eig(a)
    real = np.abs(ev.imag) < 1e-9
    if real.any():
        i = np.flatnonzero(real)[np.argmax(ev.real[real])]
        u = vec[:, i].real
    else:
        evs, vecs = np.linalg.eigh((a + a.T) / 2)
        u = vecs[:, -1]
    u = torch.as_tensor(u / np.linalg.norm(u), dtype=torch.float64)
    x = (radius / 2) * u.repeat(n_tokens, 1)
    x[0] = radius * u
    return x


def _attention_blocks(model: nn.Module) -> list[tuple[str, nn.MultiheadAttention]]:
    return [(name, m) for name, m in model.named_modules()
            if isinstance(m, nn.MultiheadAttention)]


def attention_growth_table(models: Mapping[tuple[str, int], nn.Module],
                           tokens: Mapping[tuple[str, int], Mapping[str, torch.Tensor]],
                           radii: Iterable[float] = (1, 2, 4, 8, 16), *,
                           steps: int = 5) -> pd.DataFrame:
    """Row 1 (Kim et al. 2021): local constant of each attention block at scaled test tokens.

    Parameters
    ----------
    models : mapping (arch, seed) -> model
        Trained models; every ``nn.MultiheadAttention`` in them is measured.
    tokens : mapping (arch, seed) -> mapping block name -> tensor (m, n, D)
        The block's observed input tokens (m token sets); each set is scaled to max token norm
        ``R`` and the largest local constant over sets is kept.
    radii : iterable of float
        ``R`` values.
    steps : int, default=5
        Power-iteration steps per token set.

    Returns
    -------
    DataFrame
        Columns ``arch seed block R measured bound`` (bound: :func:`mha_lipschitz` at radius
        R, n tokens).
    """
    rows = []
    for (arch, seed), model in models.items():
        for name, mha in _attention_blocks(model):
            x = tokens[(arch, seed)][name].double()
            mha64 = _f64_copy(mha)

            def f(z, mha64=mha64):
                # need_weights=True takes the explicit path (SDPA has no forward AD on CPU)
                return mha64(z[None], z[None], z[None], need_weights=True)[0][0]

            for r in radii:
                meas = 0.0
                for xs in x:
                    z = xs * (r / xs.norm(dim=-1).max())
                    meas = max(meas, local_lipschitz(f, z, steps=steps))
                rows.append(dict(arch=arch, seed=seed, block=name, R=float(r), measured=meas,
                                 bound=mha_lipschitz(mha, float(r), x.shape[1])))
    return pd.DataFrame(rows, columns=["arch", "seed", "block", "R", "measured", "bound"])


def _f64_copy(mha: nn.MultiheadAttention) -> nn.MultiheadAttention:
    import copy

    m = copy.deepcopy(mha).double().eval()
    m.batch_first = True
    return m


def _heads(mha: nn.MultiheadAttention):
    """Each head of ``mha`` as Castin et al. model it (no in-projection bias), measured
    through its ``W_O`` column block: yields ``(h, (w_q, w_k), f)`` with ``f`` the map
    (n, D) -> (n, D) in float64."""
    w = mha_weights(mha)
    dh = mha.embed_dim // mha.num_heads
    for h in range(mha.num_heads):
        sl = slice(h * dh, (h + 1) * dh)
        f0 = head_attention(w["w_q"][sl], w["w_k"][sl], w["w_v"][sl])
        wo = w["w_o"][:, sl]

        def f(z, f0=f0, wo=wo):
            return f0(z) @ wo.T

        yield h, (w["w_q"][sl], w["w_k"][sl]), f


def castin_table(models: Mapping[tuple[str, int], nn.Module], radius: float,
                 n_values: Iterable[int] = (2, 5, 9, 17, 33, 65), *,
                 steps: int = 10) -> pd.DataFrame:
    """Row 2 (Castin et al. 2024): each head at its worst-case input, per token count n.

    Returns
    -------
    DataFrame
        Columns ``arch seed block head n measured bound_ours bound_theirs``; ``bound_ours`` is
        :func:`mha_lipschitz` of the whole block (it bounds every head's contribution only up
        to the output map, so the head is measured through its ``W_O`` column block);
        ``bound_theirs`` is NaN (their constant not implemented here: the rule uses ours).
    """
    rows = []
    for (arch, seed), model in models.items():
        for name, mha in _attention_blocks(model):
            for h, (w_q, w_k), f in _heads(mha):
                for n in n_values:
                    x = castin_worst_case(w_q, w_k, radius, n)
                    rows.append(dict(arch=arch, seed=seed, block=name, head=h, n=int(n),
                                     measured=local_lipschitz(f, x, steps=steps),
                                     bound_ours=mha_lipschitz(mha, radius, int(n)),
                                     bound_theirs=math.nan))
    return pd.DataFrame(rows, columns=["arch", "seed", "block", "head", "n", "measured",
                                       "bound_ours", "bound_theirs"])


def castin_real_table(models: Mapping[tuple[str, int], nn.Module],
                      tokens: Mapping[tuple[str, int], Mapping[str, torch.Tensor]],
                      n_values: Iterable[int] = (2, 5, 9, 17), *, steps: int = 5,
                      seed: int = 0) -> pd.DataFrame:
    """Row 2, real tokens (Castin et al. 2024, Section 5): each head at its observed tokens.

    For every head (as in :func:`castin_table`: the head as Castin et al. model it, no
    in-projection bias, measured through its ``W_O`` column block) and token count ``n`` no
    larger than a token set's length, ``n`` tokens are drawn without replacement from each
    observed token set (the same draws for every model: generator ``[seed, set, n]``), and
    the median of the local constants over the sets is kept.

    Parameters
    ----------
    models : mapping (arch, seed) -> model
        Trained models; every ``nn.MultiheadAttention`` in them is measured.
    tokens : mapping (arch, seed) -> mapping block name -> tensor (m, T, D)
        The block's observed input tokens (:func:`attention_block_inputs`), m sets of T.
    n_values : iterable of int
        Token counts; those above T are skipped.
    steps : int, default=5
        Power-iteration steps per token set.
    seed : int, default=0
        Seed of the token draws.

    Returns
    -------
    DataFrame
        Columns ``arch seed block head n measured n_sets``.

    Raises
    ------
    ValueError
        If a token count is below 1.
    """
    n_values = [int(n) for n in n_values]
    if any(n < 1 for n in n_values):
        raise ValueError(f"token counts must be >= 1, got {n_values}")
    rows = []
    for (arch, mseed), model in models.items():
        for name, mha in _attention_blocks(model):
            x = tokens[(arch, mseed)][name].double()
            m, t = x.shape[0], x.shape[1]
            draws = {(j, n): np.random.default_rng([seed, j, n]).choice(t, n, replace=False)
                     for j in range(m) for n in n_values if n <= t}
            for h, _, f in _heads(mha):
                for n in n_values:
                    if n > t:
                        continue
                    meas = [local_lipschitz(f, x[j, torch.as_tensor(draws[(j, n)])],
                                            steps=steps) for j in range(m)]
                    rows.append(dict(arch=arch, seed=mseed, block=name, head=h, n=n,
                                     measured=float(np.median(meas)), n_sets=m))
    return pd.DataFrame(rows, columns=["arch", "seed", "block", "head", "n", "measured",
                                       "n_sets"])


def confidence_table(models: Mapping[tuple[str, int], nn.Module], x: torch.Tensor,
                     alphas: Iterable[float] = (1, 10, 100, 1000)) -> pd.DataFrame:
    """Row 4 (Hein et al. 2019): mean max-softmax confidence on ``alpha * x``.

    Parameters
    ----------
    models : mapping (arch, seed) -> model
        Trained classifiers (put in eval mode here).
    x : torch.Tensor of shape (m, C, H, W)
        Test images in [0, 1] (scaled images leave the pixel range on purpose).
    alphas : iterable of float
        Scale factors ``alpha``.

    Returns
    -------
    DataFrame
        Columns ``arch seed alpha relu confidence``; ``relu`` is
        :func:`is_piecewise_affine` of the model (the models the theorem covers).
    """
    rows = []
    with torch.no_grad():
        for (arch, seed), model in models.items():
            model.eval()
            relu = is_piecewise_affine(model)
            for a in alphas:
                p = torch.softmax(model(float(a) * x).double(), dim=-1)
                rows.append(dict(arch=arch, seed=seed, alpha=float(a), relu=relu,
                                 confidence=float(p.max(dim=-1).values.mean())))
    return pd.DataFrame(rows, columns=["arch", "seed", "alpha", "relu", "confidence"])
