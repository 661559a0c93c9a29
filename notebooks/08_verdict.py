# ---
# jupyter:
#   jupytext:
#     formats: py:percent
# ---

# %% [markdown]
# # What our runs show about the paper's claims
#
# **Question.** Which of the paper's claims, as we read them in its abstracts (our paraphrase,
# not quotations, in `data/claims.yml`), does this run support, which does it contradict, and
# where is the evidence too weak to say?
#
# **Method.** Attention-based models are compared with convolution-based ones in two pairs:
# the ViT against the ResNet, and the plain attention-only stack against the plain
# convolution-only stack. Each compared quantity is measured per training seed on that seed's
# images, and again on bootstrap resamples of the images; its 95% interval comes from a
# hierarchical bootstrap (seeds, then images within a seed; the two architectures of a seed
# share the images, so the resampling is paired), with Student quantiles because a bootstrap
# of 3 seeds alone is far too narrow {cite:p}`davison1997bootstrap`. **The rule:** a comparison
# is *supported* or *contradicted* only when its interval excludes no difference after Holm's
# correction over all comparisons of the same claim {cite:p}`holm1979simple`, with at least 3
# seeds on each side; otherwise it is *inconclusive* (or *not enough seeds*). The association
# of smoothness with robustness is tested within each perturbation kind by a permutation test
# over models, and across kinds only by a stratified one. A simulation with no true difference
# (`tests/test_stats.py`) confirms that the rule decides in at most 5% of such cases.

# %% tags=["parameters"]
results_dir = "results/quick"
alpha = 0.05

# %% tags=["remove-input"]
from pathlib import Path

from topolip.claims import evaluate, load_claims, verdict_counts, with_options
from topolip.figures import plot_verdicts
from topolip.pipeline import notebook_parameters, publish_figure, read_table, write_table
from topolip.report import (
    comparison_label,
    format_interval,
    glue_number,
    show_parameters,
    show_table,
)

params = {**notebook_parameters(globals(), "08_verdict"), "claims": "data/claims.yml"}
show_parameters(params)

# %% tags=["hide-input"]
tables_dir = Path(results_dir) / "tables"
claims = with_options(load_claims("data/claims.yml"), alpha=alpha)
tables = {name: read_table(tables_dir / f"{name}.csv")
          for name in ("topolip", "topolip_summary", "resamples", "smoothness",
                       "ood_topolip_summary", "ood_resamples", "ood_behaviour")}
verdicts = evaluate(claims, tables)
_ = write_table(verdicts, tables_dir / "verdicts.csv", params)
envelope = verdicts[verdicts["claim"] == "envelope"]
assert (envelope["verdict"] == "supported").all(), "the certified envelope is a theorem: a bug"

# %% tags=["remove-input"]
verdicts = read_table(tables_dir / "verdicts.csv")
seeds = sorted(int(s) for s in tables["topolip_summary"]["seed"].unique())
_ = publish_figure(plot_verdicts(verdicts), "fig-verdicts",
                   results_dir=results_dir, notebook="08_verdict",
                   tables=("verdicts.csv",), params=params, seeds=seeds)
for c in claims:
    glue_number(f"headline-{c.id}", verdict_counts(verdicts, c.id), "{}")
glue_number("headline-n-seeds", len(seeds), "{}")
glue_number("headline-n-comparisons", int((verdicts["claim"] != "envelope").sum()), "{}")
decisive = verdicts[verdicts["verdict"].isin(["supported", "contradicted"])
                    & (verdicts["claim"] != "envelope")]
glue_number("headline-n-decisive", len(decisive), "{}")
glue_number("headline-n-supported", int((decisive["verdict"] == "supported").sum()), "{}")
glue_number("headline-n-contradicted", int((decisive["verdict"] == "contradicted").sum()), "{}")
glue_number("headline-vit-resnet-robust",
            verdict_counts(verdicts, "attention-more-robust", comparison="vit vs resnet",
                           by_count=True), "{}")
glue_number("headline-vit-resnet-smoother",
            verdict_counts(verdicts, "attention-smoother", comparison="vit vs resnet",
                           by_count=True), "{}")
env = verdicts[verdicts["claim"] == "envelope"]
_ = glue_number("headline-envelope-ratio", float(env["effect"].iloc[0]) if len(env) else float("nan"),
            "{:.2f}")

# %% [markdown]
# ## Results
#
# ```{glue:figure} fig-verdicts
# :name: fig-verdicts
# :alt: Forest plot, one panel per claim: for each architecture pair and perturbation or data set, the difference attention minus convolution with its 95 percent interval, coloured by verdict.
#
# Every architecture comparison of every claim: the difference attention minus convolution of
# the seed means (points) with its 95% interval (hierarchical bootstrap over seeds and images,
# Student quantiles), coloured by the verdict after Holm's correction within the claim.
# {glue:md}`fig-verdicts-provenance`
# ```
#
# With {glue:text}`headline-n-seeds` seeds per architecture, {glue:text}`headline-n-decisive`
# of the {glue:text}`headline-n-comparisons` comparisons are decisive
# ({numref}`fig-verdicts`): {glue:text}`headline-n-supported` support a claim and
# {glue:text}`headline-n-contradicted` contradict one. Per claim:
#
# - *Attention is smoother* (scale-free): {glue:text}`headline-attention-smoother`; raw:
#   {glue:text}`headline-attention-smoother-raw`.
# - *Attention is more robust*: {glue:text}`headline-attention-more-robust`; for the ViT against
#   the ResNet alone: {glue:text}`headline-vit-resnet-robust`.
# - *Attention is smoother on out-of-distribution data*:
#   {glue:text}`headline-attention-smoother-ood`.
# - *Attention separates out-of-distribution data better*:
#   {glue:text}`headline-attention-ood-robust`.
# - *Smoothness goes with robustness* (Kendall τ within kinds, stratified across kinds, with
#   and without clean accuracy partialled out): {glue:text}`headline-smoothness-robustness`.
# - The certified envelope held on every layer (largest bottleneck/envelope ratio
#   {glue:text}`headline-envelope-ratio`); it is a theorem, and this notebook fails if it is ever
#   violated.
#
# The table lists every comparison; the same rows, with the number of image resamples, are in
# `tables/verdicts.csv`.

# %% tags=["remove-input"]
view = verdicts[verdicts["claim"] != "envelope"].copy()
view["comparison"] = [comparison_label(c, g)
                      for c, g in zip(view["comparison"], view["group"], strict=True)]
view["effect (95% interval)"] = [
    format_interval(e, lo, hi)
    for e, lo, hi in zip(view["effect"], view["low"], view["high"], strict=True)]
show_table(view[["claim", "comparison", "effect (95% interval)", "p_adjusted", "n_seeds",
                 "verdict"]],
           columns={"claim": "claim", "comparison": "comparison",
                    "effect (95% interval)": "effect (95% interval)",
                    "p_adjusted": "Holm p", "n_seeds": "seeds", "verdict": "verdict"}, digits=3,
           caption="Every comparison: effect (attention − convolution, or Kendall τ for a rank "
                   "correlation, whose permutation p-value decides), its interval, "
                   "Holm-adjusted p-value, seeds per side, verdict.")

# %% [markdown]
# **Caveats.** The verdicts are about this run: small models, short training, MNIST digits in
# the quick profile (the paper used CIFAR-10, which the paper profile loads). Three seeds is
# the minimum for a verdict and gives little power: an *inconclusive* row is absence of
# evidence, not evidence of no difference. The claims are our paraphrases of the abstracts; the
# paper's own experiments may define smoothness and robustness differently.
