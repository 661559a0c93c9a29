r"""Empirical local Lipschitz estimate: power iteration on ``JᵀJ`` at observed inputs."""

from __future__ import annotations

import copy
import math

import torch
import torch.func
from torch import nn
from torch.nn.attention import SDPBackend, sdpa_kernel

from topolip.bounds._checks import as_batch

__all__ = ["lipschitz_estimate", "as_function"]


def as_function(module: nn.Module):
    """The per-batch map ``x ↦ module(x)`` the bounds refer to.

    ``nn.MultiheadAttention`` becomes self-attention ``x ↦ mha(x, x, x)[0]`` on batch-first
    ``(m, n, D)`` inputs (transposed for ``batch_first=False`` layers); every other module is
    called as is.

    Examples
    --------
    >>> f = as_function(nn.MultiheadAttention(4, 2))                 # batch_first=False layer
    >>> f(torch.zeros(3, 5, 4)).shape                                # still (m, n, D) in and out
    torch.Size([3, 5, 4])
    """
    if isinstance(module, nn.MultiheadAttention):
        if module.batch_first:
            return lambda x: module(x, x, x, need_weights=False)[0]

        def self_attention(x):
            xt = x.transpose(0, 1)
            return module(xt, xt, xt, need_weights=False)[0].transpose(0, 1)

        return self_attention
    return module


def lipschitz_estimate(
    module: nn.Module,
    inputs,
    *,
    n_iter: int = 50,
    seed: int = 0,
    max_samples: int | None = None,
) -> float:
    r"""Largest local Lipschitz constant ``max_i ‖J_f(x_i)‖₂`` over a batch, by power iteration.

    Parameters
    ----------
    module : torch.nn.Module
        Any differentiable per-sample map, evaluated in eval mode in float64 on a copy (the
        module itself is left unchanged). ``nn.MultiheadAttention`` is taken as self-attention
        on batch-first inputs.
    inputs : torch.Tensor or ndarray of shape (m, ...)
        Points where the Jacobian is taken.
    n_iter : int, default=50
        Power iterations (each two vjps on the whole batch).
    seed : int, default=0
        Seed of the random start vectors.
    max_samples : int, optional
        Use only the first ``max_samples`` samples.

    Returns
    -------
    float
        ``max_i ‖J_i v_i‖`` with ``v_i`` the unit vector reached by the iteration for sample
        ``i``: a lower bound on each ``‖J_i‖₂`` (Rayleigh quotient), hence on the local Lipschitz
        constant of ``f`` around the inputs, in the Euclidean norm of the flattened sample.

    Raises
    ------
    TypeError
        If ``inputs`` is not a tensor or array.
    ValueError
        If ``inputs`` is empty, holds NaN/inf, or ``n_iter < 1``.

    Notes
    -----
    In eval mode the supported layers act on each sample separately, so the Jacobian of the
    batched map is block diagonal and one pair of reverse-mode products (``J v`` as the vjp of
    ``u ↦ Jᵀu``, then ``Jᵀ(Jv)``) applies every ``J_iᵀ J_i`` at once; each block's iterate is
    normalised separately. Attention runs on the math SDPA backend (the fused CPU kernel has no
    second derivative). By the mean value
    inequality, ``‖J(x)‖ ≤ Lip(f)`` on any open set containing ``x``, so estimate ``≤`` bound.

    References
    ----------
    .. [1] A. Virmaux, K. Scaman, "Lipschitz regularity of deep neural networks: analysis and
       efficient estimation", NeurIPS 2018, arXiv:1805.10965.

    Examples
    --------
    >>> lin = nn.Linear(3, 2, bias=False)
    >>> _ = lin.weight.data.copy_(torch.tensor([[3.0, 0.0, 0.0], [0.0, 4.0, 0.0]]))
    >>> round(lipschitz_estimate(lin, torch.randn(5, 3)), 6)
    4.0
    """
    from topolip.bounds._checks import check_finite_state

    check_finite_state(module)
    x = as_batch(inputs)
    if int(n_iter) < 1:
        raise ValueError(f"n_iter must be >= 1, got {n_iter}")
    if max_samples is not None:
        x = x[: int(max_samples)]
    model = copy.deepcopy(module).to("cpu", torch.float64).eval()
    # Parameters keep requires_grad: it keeps nn.MultiheadAttention off its fused fast path,
    # which has no second derivative.
    f = as_function(model)
    x = x.detach().to("cpu", torch.float64)
    gen = torch.Generator().manual_seed(int(seed))
    v = torch.randn(x.shape, generator=gen, dtype=torch.float64)

    def normalise(t: torch.Tensor) -> torch.Tensor:
        norms = t.flatten(1).norm(dim=1).reshape(-1, *([1] * (x.ndim - 1)))
        return torch.where(norms > 0, t / norms.clamp_min(1e-300), t)

    v = normalise(v)
    with sdpa_kernel(SDPBackend.MATH):
        out, vjp_fn = torch.func.vjp(f, x)
        # J v as the vjp of the (linear) map u -> J^T u: reverse mode only. Forward mode
        # (torch.func.jvp) would load torch's jvp decompositions through the deprecated
        # torch.jit.script, which warns on every first use.
        _, jvp_fn = torch.func.vjp(lambda u: vjp_fn(u)[0], torch.zeros_like(out))
        best = torch.zeros(x.shape[0], dtype=torch.float64)
        for _ in range(int(n_iter)):
            (jv,) = jvp_fn(v)
            sigma = jv.detach().flatten(1).norm(dim=1)
            # Rayleigh quotient of the current unit iterate: a certified lower bound
            best = torch.maximum(best, torch.where(v.flatten(1).norm(dim=1) > 0, sigma, best))
            (w,) = vjp_fn(jv)
            if not torch.isfinite(w).all():
                raise ValueError("the Jacobian is not finite at some input")
            moved = w.flatten(1).norm(dim=1) > 0
            v = torch.where(moved.reshape(-1, *([1] * (x.ndim - 1))), normalise(w), v)
    est = float(best.max())
    return est if math.isfinite(est) else math.inf
