# ---
# jupyter:
#   jupytext:
#     formats: py:percent
# ---

# %% [markdown]
# # Theory: Lipschitz bounds for every probed layer
#
# **Question.** TopoLip is meant to serve theory and experiment at once
# ({doc}`../method`). What can be proved about how much each kind of layer of these models can
# stretch a perturbation, and how tight is it?
#
# **Method.** For every kind of layer the models of this book probe, a closed-form upper
# bound on its Lipschitz constant, derived here or taken from the literature (each says which),
# and a numerical check of every bound against an empirical local estimate on random layers.
# The chapter {doc}`05_bounds_vs_measured` puts the same bounds next to the displacements
# measured on the trained models.
#
# **Conventions.** A layer is a map $f$ on one sample; its input and output are flattened, and
# all norms are Euclidean (for a sequence of $n$ tokens $X \in \mathbb R^{n\times D}$ this is the
# Frobenius norm). $\mathrm{Lip}(f) = \sup_{x\ne y}\|f(x)-f(y)\|/\|x-y\|$. Where no finite global
# constant exists (LayerNorm, dot-product attention) we bound the constant on a stated set of
# inputs: a *local* bound. Layers are taken in eval mode (BatchNorm with its running statistics,
# dropout off). Everything below runs through `topolip.bounds`:
# `lipschitz_bound(module, inputs)` and `lipschitz_estimate(module, inputs)`.

# %% tags=["parameters"]
results_dir = "results/quick"
theory_seed = 0
theory_samples = 8            # inputs per random layer (the estimate is maximised over them)
theory_n_iter = 20              # power iterations of the estimate
token_dim = 32           # D of the random attention / encoder layers
theory_heads = 4
n_tokens = 17            # sequence length of the random attention layers (a 28×28 ViT, patch 7)
theory_channels = 8             # channels of the random convolutions
theory_image_size = 12          # side of their inputs, pixels
n_grid = [1, 2, 4, 8, 16, 32, 64, 128, 256, 1024]
radius_grid = [0.5, 1.0, 2.0, 4.0, 8.0]
slope_radius = 4.0       # radius at which the √n regime of the attention bound is checked
width_grid = [8, 16, 32, 64, 128]
max_estimate_tokens = 64  # the attention estimate is computed up to this sequence length
kernel_grid = [1, 3, 5, 7]
channel_grid = [2, 4, 8, 16, 32]
input_size_grid = [4, 6, 8, 12, 16, 24, 32]

# %% tags=["remove-input"]
from pathlib import Path

import torch

from topolip.experiments.theory import attention_scaling, bound_check, conv_scaling, random_layers
from topolip.pipeline.figure_registry import publish_registered
from topolip.pipeline.params import notebook_parameters
from topolip.pipeline.provenance import write_table
from topolip.report.findings import theory_findings
from topolip.report.format import glue_all, show_parameters, show_table

# the random layers' weights come from torch's global generator, their inputs from gen
torch.manual_seed(theory_seed)
gen = torch.Generator().manual_seed(theory_seed)
tables = Path(results_dir) / "tables"
params = notebook_parameters(globals(), "00_theory")
show_parameters(params)

# %% [markdown]
# ## What a Lipschitz bound controls
#
# Let $X = \{x_i\}$ be a batch and $\tilde X = \{\tilde x_i\}$ its perturbation, paired sample by
# sample, and $h_\ell = f_\ell\circ\dots\circ f_1$ the map to probe point $\ell$. With
# $\varepsilon_\ell = \max_i\|h_\ell(x_i)-h_\ell(\tilde x_i)\|$, every pairwise distance moves by
# at most $2\varepsilon_\ell$:
# $\big|\,\|h_\ell(x_i)-h_\ell(x_j)\| - \|h_\ell(\tilde x_i)-h_\ell(\tilde x_j)\|\,\big| \le 2\varepsilon_\ell$.
# The Vietoris–Rips filtrations of the two clouds are filtrations of the same full simplex on
# $m$ vertices by the diameter function, and the two diameter functions differ by at most
# $2\varepsilon_\ell$ on every simplex, so by the stability theorem of
# {cite:t}`cohensteiner2007stability` (for Rips complexes, {cite:t}`chazal2014persistence`)
#
# $$ \begin{aligned}
#    &W_{\infty,\infty}\big(\mathrm{Dgm}(H_\ell X), \mathrm{Dgm}(H_\ell \tilde X)\big) \\
#    &\quad\le 2\varepsilon_\ell \le 2\,\Big(\prod_{j\le\ell}\mathrm{Lip}(f_j)\Big)\,\varepsilon_0 .
#    \end{aligned} $$
#
# This is the *certified envelope* of the method page. Each factor is one layer's Lipschitz
# constant, so with per-layer bounds $L_j \ge \mathrm{Lip}(f_j)$, and since
# $\varepsilon_\ell \le L_\ell\,\varepsilon_{\ell-1}$, one layer's bound controls
#
# $$ \frac{W_{\infty,\infty,\ell}}{\varepsilon_{\ell-1}} \;\le\; 2L_\ell ,$$
#
# the bottleneck displacement at layer $\ell$ relative to the largest paired displacement at
# the layer before. $2L_\ell$ is **not** a bound on TopoLip $\Delta_\ell/\Delta_{\ell-1}$: that
# ratio can exceed it by any factor when $\Delta_{\ell-1}$ is much smaller than
# $\varepsilon_{\ell-1}$ (a perturbation that moves every point but barely changes the shape
# of the cloud).
#
# For a local bound the constant must hold along the segment from $x_i$ to $\tilde x_i$, not
# only at $x_i$. `lipschitz_bound(module, inputs, margin=δ)` returns a constant valid for all
# pairs $(x, \tilde x)$ with $x$ an observed input and $\|\tilde x - x\|\le\delta$; with
# $\delta = \varepsilon_{\ell-1}$ the step $\varepsilon_\ell \le L_\ell\,\varepsilon_{\ell-1}$ is
# certified, and `layer_bounds` checks it on every layer. With margin 0 (LayerNorm,
# attention) the value is only a *pointwise Jacobian bound* at the observed inputs: it certifies
# nothing about a perturbation. A chain computed a priori from the input must take its margins
# from the chain itself, $\delta_\ell = (\prod_{j<\ell}L_j)\,\varepsilon_0$ (the chained bound
# so far times $\varepsilon_0$).
#
# **The estimate.** $\|J_f(x)\|_2 \le \mathrm{Lip}(f)$ at every point $x$ (mean value
# inequality), so the largest Jacobian norm over observed inputs is a *lower* bound of the
# (local) constant. `lipschitz_estimate` computes it by power iteration on $J^\top J$ with
# `torch.func` (`jvp` then `vjp`), per sample, and maximises over the batch. Every table and
# plot below asserts estimate $\le$ bound.

# %% [markdown]
# ## Linear maps, convolutions, normalisation, activations
#
# **Linear.** $\mathrm{Lip}(x\mapsto Wx+b) = \|W\|_2$, the largest singular value (exact). On a
# sequence of tokens the map is block diagonal with copies of $W$: the same constant.
#
# **Convolution.** A `Conv2d` on $(C_{in}, H, W)$ inputs is a linear map $T$; the bound is
# $\|T\|_2$ *for that input size* (the padding makes it depend on it). Three upper bounds:
#
# * *Patch counting* {cite:p}`cisse2017parseval,tsuzuku2018margin`:
#   $(Tx)_v = \tilde W\,\mathrm{patch}_v(x)$ with $\tilde W\in\mathbb R^{C_{out}\times C_{in}k_hk_w}$,
#   so $\|Tx\|^2 \le \|\tilde W\|_2^2\sum_v\|\mathrm{patch}_v(x)\|^2 \le m\,\|\tilde W\|_2^2\|x\|^2$
#   where every pixel lies in at most $m$ patches ($k_hk_w$ at stride 1; 1 for the ViT's
#   non-overlapping patches, where the bound is exact).
# * *Circular embedding* {cite:p}`sedghi2019singular`: zero padding embeds $T$ isometrically
#   in a circular convolution on the padded grid, $T = S\,C_N\,E$ with $\|S\|,\|E\|\le1$, and
#   $\|C_N\|_2 = \max_\omega \sigma_{\max}(\hat K(\omega))$ over the $N$ grid frequencies. Note that
#   zero padding is *not* circular: for small inputs this bound is several percent loose.
# * *Certified and tight* (ours, standard numerical linear algebra): the smaller Gram matrix
#   $G$ of $T$ is sparse and banded (pixels row-major, channels fastest). A Lanczos estimate
#   $\lambda$ of $\lambda_{\max}(G)$ is certified from above by a Cholesky factorisation of
#   $\mu I - G$, $\mu = \lambda(1+10^{-3})$: a symmetric matrix is positive definite iff the
#   factorisation exists, and when it completes in floating point,
#   $\mu I - G + \Delta$ is positive definite with $\|\Delta\|_2 \le \gamma_{n+1}\|\tilde R\|_F^2$
#   {cite:p}`demmel1989cholesky`, which is added. Result: an upper bound within $0.05\,\%$ of $\|T\|_2$.
#   {cite:t}`delattre2023gram` certify the circular case by Gram iteration; the Cholesky test
#   handles the zero-padded operator actually used.
#
# **BatchNorm (eval).** $y_c = \gamma_c (x_c-\mu_c)/\sqrt{\sigma_c^2+\epsilon} + \beta_c$ is
# diagonal: $\mathrm{Lip} = \max_c|\gamma_c|/\sqrt{\sigma_c^2+\epsilon}$ (exact). After a
# convolution it is folded into the kernel, $\mathrm{Lip}(\mathrm{BN}\circ T) = \|DT\|_2$, which is
# tighter than the product.
#
# **LayerNorm (local; derived here).** For a token $x\in\mathbb R^d$, $c = x-\bar x$,
# $s = \sqrt{\|c\|^2/d+\epsilon}$, $z = c/s$: the Jacobian is
# $J = \mathrm{diag}(\gamma)\,s^{-1}(P - zz^\top/d)$ with $P = I - \mathbf 1\mathbf 1^\top/d$. As
# $z\perp\mathbf 1$ and $\|z\|^2<d$, $P - zz^\top/d$ has eigenvalues in $[0,1]$, so
# $\|J\|_2\le\max|\gamma|/s$. The token standard deviation $\sigma(x) = \|Px\|/\sqrt d$ is
# $1/\sqrt d$-Lipschitz, so within distance $\delta$ of the observed tokens
# $\mathrm{Lip}\le\max|\gamma|\,/\sqrt{(\sigma_{\min}-\delta/\sqrt d)_+^2+\epsilon}$. There is
# no useful global constant ($\max|\gamma|/\sqrt\epsilon$). Every LayerNorm output has norm at
# most $R_{LN} = \max|\gamma|\sqrt d + \|\beta\|$, which bounds the radius seen by the attention
# that follows it.
#
# **Activations (elementwise).** $\mathrm{Lip} = \sup|\varphi'|$: 1 for ReLU, $\tfrac14$ for
# the sigmoid. For $\mathrm{GELU}(t) = t\Phi(t)$: $\mathrm{GELU}' = \Phi + t\varphi$ and
# $\mathrm{GELU}'' = \varphi(t)(2-t^2)$, so the maximum is at $t=\sqrt2$:
#
# $$ \begin{aligned}
#    \max|\mathrm{GELU}'| &= \Phi(\sqrt2) + \sqrt2\,\varphi(\sqrt2) \\
#    &= \tfrac12\big(1+\mathrm{erf}(1)\big) + \frac{1}{e\sqrt\pi} \\
#    &\approx 1.128904
#    \end{aligned} $$
#
# (the minimum, $1 - 1.1289$ at $-\sqrt2$, is smaller in absolute value).
#
# **Pooling.** Global average pooling over $H\times W$: $1/\sqrt{HW}$ (Cauchy–Schwarz, exact);
# other average pools: the norm of the pooling matrix; max pooling: $\sqrt m$, $m$ the most
# windows sharing a pixel. Mean over $T$ tokens: $1/\sqrt T$.
#
# **Composition and residual blocks.** $\mathrm{Lip}(g\circ f)\le\mathrm{Lip}(g)\mathrm{Lip}(f)$,
# $\mathrm{Lip}(x + g(x))\le 1+\mathrm{Lip}(g)$. A ResNet `BasicBlock` is
# $\mathrm{ReLU}(\mathrm{main}(x) + \mathrm{shortcut}(x))$: bound $L_{\text{main}} + L_{\text{shortcut}}$
# (1 for the identity). A pre-norm ViT block $x' = x + \mathrm{Att}(\mathrm{LN}_1 x)$,
# $y = x' + \mathrm{MLP}(\mathrm{LN}_2 x')$ has bound
# $(1 + L_{\text{Att}}L_{\mathrm{LN}_1})(1 + L_{\text{MLP}}L_{\mathrm{LN}_2})$, the attention
# taken on tokens of norm $\le\min(\text{observed} + L_{\mathrm{LN}_1}\delta,\ R_{LN_1})$.

# %% [markdown]
# ## Self-attention
#
# **Dot-product attention is not globally Lipschitz** ({cite:t}`kim2021lipschitz`,
# Theorem 3.1): its Jacobian grows without bound with the input. We therefore bound it on the
# set of sequences of $n$ tokens with $\|x_i\|\le R$. The derivation below is ours; it follows
# the Jacobian analysis of {cite:t}`kim2021lipschitz` and {cite:t}`castin2024smooth`, whose
# $\sqrt n$ behaviour it reproduces; the constants, the query-bias term and the saturation
# factor $c$ are not taken from those papers.
#
# *One head.* With PyTorch's layout ($q_i = W_Qx_i + b_Q$, $k_j = W_Kx_j + b_K$, $v_j = W_Vx_j + b_V$,
# head width $d_h = D/H$), write $A = W_Q^\top W_K/\sqrt{d_h}$ and $a = W_K^\top b_Q/\sqrt{d_h}$.
# Up to terms constant in $j$ (which softmax ignores), the scores are
# $s_{ij} = x_i^\top A x_j + a^\top x_j$, $P_i = \mathrm{softmax}(s_{i\cdot})$ and
# $g_i = \sum_j P_{ij}v_j$ (a value bias only shifts $g$). Differentiating,
#
# $$ \begin{aligned}
#   dg_i &= \underbrace{\sum_j P_{ij}\,W_V\,dx_j}_{\text{value path}} \\
#   &\quad + \underbrace{\sum_j P_{ij}\,(v_j-\bar v_i)\,(ds_{ij}-\overline{ds}_i)}_{\text{softmax path}},
#   \\
#   ds_{ij} &= (A^\top dx_i)^\top x_j + (A^\top x_i + a)^\top dx_j ,
#   \end{aligned} $$
#
# using $d\,\mathrm{softmax}(s) = (\mathrm{diag}P - PP^\top)ds$. Bars are $P_i$-weighted means.
#
# 1. *Value path.* In matrix form it is $P\,dX\,W_V^\top$, of norm $\le\|P\|_2\|W_V\|_2\|dX\|$.
#    By the Schur test $\|P\|_2\le\sqrt{\max_i\sum_jP_{ij}\cdot\max_j\sum_iP_{ij}} = \sqrt c$ with
#    $c$ the largest column sum. On the ball, the scores of a row spread over at most
#    $\Delta = 2R(\|A\|R+\|a\|)$, so $P_{ij}\le 1/(1+(n-1)e^{-\Delta})$ and
#    $c\le n/(1+(n-1)e^{-\Delta})$: about $n$ while $n\ll e^{\Delta}$, at most $e^{\Delta}$ after.
# 2. *Softmax path.* Weighted Cauchy–Schwarz gives
#    $\big\|\sum_jP_{ij}(v_j-\bar v_i)(ds_{ij}-\overline{ds}_i)\big\|\le\mathrm{Std}_{P_i}(v)\,\mathrm{Std}_{P_i}(ds_{i\cdot})$,
#    with $\mathrm{Std}_{P_i}(v)\le\|W_V\|R$ and, std being a seminorm,
#    $\mathrm{Std}_{P_i}(ds_{i\cdot})\le\|A\|R\,\|dx_i\| + (\|A\|R+\|a\|)\big(\sum_jP_{ij}\|dx_j\|^2\big)^{1/2}$.
#    Summing squares over $i$ (Minkowski) and using $\sum_iP_{ij}\le c$:
#
# $$ \begin{aligned}
#    L_h = \sqrt c\,\|W_V\| &+ \|W_V\|\,R\,\Big(\|A\|R \\
#    &+ \sqrt c\,\big(\|A\|R+\|a\|\big)\Big).
#    \end{aligned} $$
#
# *Heads.* $f = \sum_h O^h g^h$ ($O^h$ the column blocks of $W_O$), so
# $\mathrm{Lip}(f)\le\min\big(\|W_O\|_2(\sum_hL_h^2)^{1/2},\ \sum_h\|O^h\|_2L_h\big)$. The ball is
# convex, so this bound on the Jacobian is a Lipschitz bound on it. For $n=1$ the softmax path
# vanishes. For moderate $n$ the bound grows like $\sqrt n$ (value path and key part of the
# softmax path), as {cite:t}`castin2024smooth` prove is unavoidable in the worst case; it saturates
# for $n\gg e^{\Delta}$ (their mean-field regime).
#
# **L2 self-attention** ({cite:t}`kim2021lipschitz`, cited). Replacing the dot product by
# $-\|W^{Q,h}x_i - W^{K,h}x_j\|^2/\sqrt{d_h}$ with *tied* $W^{Q,h}=W^{K,h}$ and the value tied
# through $A_h = {W^{Q,h}}^\top W^{Q,h}/\sqrt{d_h}$, i.e. $F^h(X) = P^hXA_hV_h^\top$, gives a
# globally Lipschitz map: their Theorem 3.2 bounds one head by
# $\sqrt N\,(4\varphi^{-1}(N-1)+1)\,\|A_h\|_2$, $\varphi(x) = xe^{x+1}$, so
# $\varphi^{-1}(N-1) = W_0((N-1)/e)$ (Lambert W); stacking heads as above,
#
# $$ \begin{aligned}
#    \mathrm{Lip}(F) &\le \sqrt N\,\big(4W_0(\tfrac{N-1}{e})+1\big)\,\|W_O\|_2 \\
#    &\quad\cdot \Big(\sum_h \|A_h\|_2^2\|V_h\|_2^2\Big)^{1/2}, \\
#    \|A_h\|_2 &= \|W^{Q,h}\|_2^2/\sqrt{d_h}.
#    \end{aligned} $$
#
# (The tools this companion was built with reached the paper's abstract, not its theorem's
# text: this is the theorem as we read it, the query weight entering squared through $A_h$ as
# scaling $W^Q\to\alpha W^Q$ requires; the check below tests it numerically.)
# `topolip.bounds.attention.L2SelfAttention` implements this layer so the bound has something
# to apply to.

# %% [markdown]
# ## Every bound against its estimate, on random layers
#
# Random layers of every supported kind (PyTorch's default initialisation; BatchNorm statistics
# drawn at random), random Gaussian inputs, {glue:text}`theory-samples` of them. The ratio bound/estimate
# measures how loose each bound is at these inputs (1 = tight).

# %% tags=["hide-input"]
layers = random_layers(token_dim=token_dim, heads=theory_heads, channels=theory_channels,
                       image_size=theory_image_size, n_tokens=n_tokens, samples=theory_samples,
                       generator=gen)
# raises BoundViolation if an estimate exceeds its bound
random_table = bound_check(layers, n_iter=theory_n_iter, seed=theory_seed)
_ = write_table(random_table, tables / "theory_layers.csv", params)
show_table(random_table, columns={"layer": "layer", "bound": "bound", "estimate": "estimate",
                                  "bound / estimate": "bound / estimate"}, digits=4,
           caption="Every bound against its estimate on a random layer (1 = tight).")

# %% [markdown]
# All {glue:text}`theory-n-layers` bounds hold. {glue:text}`theory-n-tight` of them are tight
# (ratio below 1.01): linear maps, convolutions, BatchNorm, pooling, ReLU and GELU (ratio 1 up
# to the $10^{-3}$ certification gap; GELU's inputs sit at its steepest point $\sqrt2$). The
# loosest is {glue:text}`theory-loosest-layer` (ratio {glue:text}`theory-loosest-ratio`). The
# compositions are looser, as a product of per-part bounds must be when the parts' worst
# directions do not align. The attention bounds are the loosest: a worst case over a whole
# ball, against the Jacobian at a few random points.

# %% [markdown]
# ## How the bounds scale
#
# ### Attention against sequence length, radius and width
#
# One random `nn.MultiheadAttention` per width; inputs are random sequences whose tokens all
# have norm exactly $R$. The estimate is the largest Jacobian norm at those inputs (a lower
# bound of the local constant on the ball).

# %% tags=["hide-input"]
attention = attention_scaling(width=token_dim, heads=theory_heads, n_grid=n_grid,
                              radius_grid=radius_grid, width_grid=width_grid,
                              samples=theory_samples, generator=gen, n_iter=theory_n_iter,
                              seed=theory_seed, max_estimate_tokens=max_estimate_tokens)
_ = write_table(attention, tables / "theory_attention.csv", params)

# drawn from the saved table, as `topolip figure fig-theory-attention` redraws it
_ = publish_registered("fig-theory-attention", results_dir=results_dir, params=params,
                       width=token_dim)

# %% [markdown]
# ```{glue:figure} fig-theory-attention
# :name: fig-theory-attention
# :alt: Three log-log panels of the attention Lipschitz bound and its estimate: against sequence length for five token radii with a square-root guide, against token radius, and against width.
#
# The local Lipschitz bound of one random multi-head attention layer (solid) and the largest
# Jacobian norm at random inputs, its estimate (dashed): (a) against the sequence length $n$,
# one colour per token radius $R$, with a $\sqrt n$ guide (dotted); (b) against $R$; (c) against
# the width $D$. Random layers (PyTorch's default initialisation), seed {glue:text}`theory-seed`; no data
# set involved. {glue:md}`fig-theory-attention-provenance`
# ```
#
# As {numref}`fig-theory-attention` shows, the bound grows like $\sqrt n$ for moderate $n$
# (log-log slope {glue:text}`theory-attention-slope` at $R =$ {glue:text}`theory-slope-radius`
# for $4 \le n \le 256$) and flattens once $n$ exceeds $e^{\Delta}$
# (immediately for $R \le 1$, where $e^{\Delta}$ is small); it grows like $R^2$ for large $R$ (the softmax path), and with width
# only through the weight norms (PyTorch's default initialisation keeps them about constant).
# The estimates at random points grow much more slowly: random tokens on a sphere give nearly
# uniform attention, far from the worst case of the ball.

# %% [markdown]
# ### Convolution against kernel size, channels and input size
#
# Random `Conv2d` layers (stride 1, "same" zero padding, PyTorch's default initialisation).
# For each: the certified bound (Cholesky test), the circular-embedding bound, the cheap
# patch-counting bound, and the estimate (power iteration on the operator, at random inputs).

# %% tags=["hide-input"]
# raises BoundViolation if an estimate exceeds the certified bound, or that one the others
conv_table = conv_scaling(channels=theory_channels, image_size=theory_image_size,
                          kernel_grid=kernel_grid, channel_grid=channel_grid,
                          input_size_grid=input_size_grid, generator=gen, n_iter=theory_n_iter,
                          seed=theory_seed)
_ = write_table(conv_table, tables / "theory_conv.csv", params)
_ = publish_registered("fig-theory-conv", results_dir=results_dir, params=params)
# the glued numbers (raises if the attention bound is not in its √n regime at slope_radius or
# the certified conv norm is not saturated in the input size)
_ = glue_all(theory_findings({"theory_layers": random_table, "theory_attention": attention,
                              "theory_conv": conv_table}, params))

# %% [markdown]
# ```{glue:figure} fig-theory-conv
# :name: fig-theory-conv
# :alt: Three panels of bounds on a convolution's operator norm against kernel size, number of channels and input side: the certified bound, the circular-embedding bound, the patch-counting bound and the estimate.
#
# Bounds on the operator norm of one random `Conv2d` (stride 1, "same" zero padding) against
# the kernel size, the number of channels and the input side: the certified bound (Cholesky
# test), the circular-embedding bound, the patch-counting bound, and the estimate (power
# iteration). Random layers, seed {glue:text}`theory-seed`; no data set involved.
# {glue:md}`fig-theory-conv-provenance`
# ```
#
# {numref}`fig-theory-conv`: the operator norm of one convolution does not grow with the input
# size: it increases slightly and saturates ({glue:text}`theory-conv-growth` % from side
# {glue:text}`theory-conv-size-prev` to {glue:text}`theory-conv-size-last`) (the zero-padded operator on a small image is a compression of the one
# on a larger image, and all are bounded by the circular bound $\max_\omega\sigma_{\max}(\hat K(\omega))$,
# which does not depend on the size). The circular bound is loose on small inputs and tight on
# large ones; the cheap bound is loose by a factor up to $k$ (here up to
# {glue:text}`theory-conv-cheap-slack`). With default initialisation the
# norm stays of order 1 as kernel size and channels grow (the weights shrink like
# $1/\sqrt{\text{fan-in}}$), so a convolution's Lipschitz constant is governed by its weights,
# not its shape.

# %% [markdown]
# ## What is derived here and what is cited
#
# | bound | formula | source |
# |---|---|---|
# | Linear | $\lVert W\rVert _2$ | standard |
# | Conv2d, certified | Lanczos + Cholesky test of $\mu I - G$, Demmel's error term | ours (numerical linear algebra: {cite:t}`demmel1989cholesky`; {cite:t}`higham2002accuracy`) |
# | Conv2d, circular | $\max_\omega\sigma_{\max}(\hat K(\omega))$ on the padded grid | {cite:t}`sedghi2019singular`; {cite:t}`delattre2023gram` |
# | Conv2d, cheap | $\sqrt m\,\lVert \tilde W\rVert _2$ | {cite:t}`cisse2017parseval`; {cite:t}`tsuzuku2018margin` |
# | BatchNorm (eval) | $\max_c\lvert \gamma_c\rvert /\sqrt{\sigma_c^2+\epsilon}$, folded into the preceding conv | standard |
# | LayerNorm (local) | $\max\lvert \gamma\rvert /\sqrt{(\sigma_{\min}-\delta/\sqrt d)_+^2+\epsilon}$ | derived here |
# | GELU | $\tfrac12(1+\mathrm{erf}\,1) + 1/(e\sqrt\pi)$ | derived here |
# | residual, ResNet and ViT blocks | $1+L$, $L_{\text{main}}+L_{\text{shortcut}}$, $(1+L_AL_{LN_1})(1+L_ML_{LN_2})$ | composition rules |
# | dot-product attention (local) | $L_h$ above, heads stacked | derived here, after {cite:t}`kim2021lipschitz` and {cite:t}`castin2024smooth` |
# | L2 attention (global) | $\sqrt N(4W_0(\frac{N-1}{e})+1)\lVert W_O\rVert (\sum_h\lVert A_h\rVert ^2\lVert V_h\rVert ^2)^{1/2}$ | {cite:t}`kim2021lipschitz`, Thm 3.2 |
# | envelope | $W_{\infty,\infty}\le2\varepsilon_\ell\le2\prod_jL_j\,\varepsilon_0$ | {cite:t}`cohensteiner2007stability` |
#
# The references are listed in full in {doc}`../references`.
#
# ## Summary
#
# Every layer type the book probes has a bound here, and every bound held against its estimate
# on random layers (the asserts above stop the book otherwise). The linear parts are tight; the
# compositions lose what misaligned worst cases lose; dot-product attention has only a local
# bound, growing like $\sqrt n$ in the sequence length and like $R^2$ in the token radius.
#
# **Caveats.** The checks use random layers and random inputs; a bound that holds there holds
# everywhere (it is proved), but its tightness on trained weights and real activations is
# measured only in {doc}`05_bounds_vs_measured`. The estimates are lower bounds taken at a few
# points, so a large bound/estimate ratio may come from the estimate as much as from the bound.
