# ---
# jupyter:
#   jupytext:
#     formats: py:percent
# ---

# %% [markdown]
# # Does TopoLip predict robustness better than simpler measures?
#
# **Question.** TopoLip is built from persistent homology. If a measure that uses no topology
# at all ranks models by robustness as well, the topology adds nothing to that task. This
# chapter ranks every trained model of the run by each measure and asks how well each ranking
# agrees with the accuracy the perturbation costs.
#
# **Method.** The population is every model of the run: the main models (architecture × seed,
# {doc}`01_train`) under every perturbation kind, and every sweep point ({doc}`07_sweeps`)
# under the sweeps' kinds. For each model the chain computed, on the same clouds as TopoLip
# ({doc}`02_topolip`):
# the **Euclidean displacement ratio** $(\varepsilon_L/s_L)/(\varepsilon_0/s_0)$, with the max
# and with the mean paired displacement (no topology);
# a **paired topological divergence** in the spirit of RTD {cite:p}`barannikov2022rtd` and its
# H0 "lite" variant {cite:p}`tulchinskii2025rtdlite`: the total length of the H0 cross-barcode of
# the clean and perturbed distance graphs, from minimum spanning trees on the graph weighted by
# the smaller of the two paired distances, last probe over input (our implementation,
# `topolip.baselines.rtd_lite`), which uses the pairing of samples that TopoLip's separate
# diagrams discard;
# **1 − linear CKA** {cite:p}`kornblith2019cka` between clean and perturbed activations at the
# last probe; the **product of per-layer empirical Lipschitz estimates** and the data-free
# **product of weight spectral norms**; the **mean logit margin** on clean images, the **clean
# accuracy** and the **parameter count**.
# Each measure is oriented a priori so that a positive Kendall $\tau$ means it ranks models by
# robustness the way its rationale predicts (a larger margin, accuracy or size predicts a
# smaller drop). Per kind we report $\tau$ with a 95% bootstrap interval over models, the
# difference of $\tau$ between TopoLip and each baseline on the same resampled models (TopoLip
# is *better* when that interval lies above 0), and the granulated $\tau$ of
# {cite:t}`jiang2020fantastic`: the mean of $\tau$ over the sweep axes, each computed where
# only that axis varies.

# %% tags=["parameters"]
results_dir = "results/quick"
n_boot = 2000
alpha = 0.05

# %% tags=["remove-input"]
from pathlib import Path

from topolip.figures import plot_measure_study
from topolip.measure_study import (
    MEASURES,
    best_measures,
    mean_tau,
    measure_population,
    measure_study,
)
from topolip.pipeline import notebook_parameters, publish_figure, read_table, write_table
from topolip.report import format_interval, glue_number, kind_label, show_parameters, show_table

params = notebook_parameters(globals(), "09_measures")
show_parameters({**params, "tables read": "topolip_summary.csv, sweeps.csv"})

# %% tags=["hide-input"]
tables = Path(results_dir) / "tables"
summary = read_table(tables / "topolip_summary.csv")
sweeps = read_table(tables / "sweeps.csv")
population = measure_population(summary, sweeps)
study = measure_study(population, sweeps, alpha=alpha, n_boot=n_boot)
_ = write_table(population, tables / "measure_population.csv", params)
_ = write_table(study, tables / "measure_study.csv", params)

# %% tags=["remove-input"]
study = read_table(tables / "measure_study.csv")
study["comparison"] = study["comparison"].astype(object).fillna("")  # an empty cell is read back as NaN
models = read_table(tables / "models.csv")
seeds = sorted(int(s) for s in models["seed"].unique())
_ = publish_figure(plot_measure_study(study), "fig-measure-study", results_dir=results_dir,
                   notebook="09_measures", tables=("measure_study.csv",), params=params,
                   seeds=seeds)
ref = study[study["measure"] == "end_to_end_scale_free"].set_index("perturbation")
glue_number("ms-ref-taus", "; ".join(
    f"{kind_label(k)} {format_interval(r['tau'], r['tau_low'], r['tau_high'], '{:.2f}')}"
    for k, r in ref.iterrows()), "{}")
others = study[study["measure"] != "end_to_end_scale_free"]
counts = others["comparison"].value_counts()
glue_number("ms-n-comparisons", int(others["comparison"].ne("").sum()), "{}")
glue_number("ms-n-better", int(counts.get("TopoLip better", 0)), "{}")
glue_number("ms-n-worse", int(counts.get("TopoLip worse", 0)), "{}")
glue_number("ms-n-undecided", int(counts.get("no difference shown", 0)), "{}")
best = best_measures(study)
glue_number("ms-best", "; ".join(
    f"{kind_label(k)}: {lab} ({t:.2f})"
    for k, lab, t in zip(best["perturbation"], best["label"], best["tau"], strict=True))
    or "undefined (too few models)", "{}")
taus = mean_tau(study)
if MEASURES[0].label in taus.index:
    rank = list(taus.index).index(MEASURES[0].label) + 1
    glue_number("ms-ref-rank", f"{rank} of {len(taus)}", "{}")
else:
    glue_number("ms-ref-rank", "unranked (τ undefined)", "{}")
glue_number("ms-top-measure", taus.index[0] if len(taus) else "none", "{}")
glue_number("ms-top-tau", float(taus.iloc[0]) if len(taus) else float("nan"), "{:.2f}")
gran = study.dropna(subset=["granulated_tau"])
gref = gran[gran["measure"] == "end_to_end_scale_free"]
glue_number("ms-granulated", "; ".join(
    f"{kind_label(k)} {v:.2f} over {int(n)} axes"
    for k, v, n in zip(gref["perturbation"], gref["granulated_tau"], gref["n_axes"],
                       strict=True)) or "undefined (a swept axis needs at least 3 models)", "{}")
_ = glue_number("ms-n-population", population["model"].nunique(), "{}")

# %% [markdown]
# ## Results
#
# ```{glue:figure} fig-measure-study
# :name: fig-measure-study
# :alt: For each measure, TopoLip first, Kendall tau with the accuracy drop and its 95 percent interval, one marker per perturbation kind.
#
# Kendall $\tau$ between each measure (oriented) and the accuracy drop over the population of
# models, per perturbation kind, with its 95% bootstrap interval over models; dotted line:
# no association. {glue:md}`fig-measure-study-provenance`
# ```
#
# Over {glue:text}`ms-n-population` models, the end-to-end scale-free TopoLip has
# $\tau$ (with its 95% interval) {glue:text}`ms-ref-taus` ({numref}`fig-measure-study`).
# Against the baselines, in {glue:text}`ms-n-comparisons` (measure, kind) comparisons, TopoLip
# ranks models by robustness significantly better in {glue:text}`ms-n-better`, significantly
# worse in {glue:text}`ms-n-worse`, and no difference is shown in
# {glue:text}`ms-n-undecided`. Averaged over kinds, TopoLip is the
# {glue:text}`ms-ref-rank` measure by $\tau$; the first is {glue:text}`ms-top-measure`
# (mean $\tau$ {glue:text}`ms-top-tau`). The best measure per kind: {glue:text}`ms-best`.
# Within the sweeps, where one parameter varies at a time, TopoLip's granulated $\tau$ is
# {glue:text}`ms-granulated`.

# %% tags=["remove-input"]
wide = study.pivot_table(index="label", columns="perturbation", values="tau", sort=False)
wide.columns = [kind_label(c) for c in wide.columns]
show_table(wide.reset_index(names="measure"), digits=2,
           caption="Kendall τ with the accuracy drop, per measure (rows) and perturbation kind "
                   "(columns); intervals in the figure and in tables/measure_study.csv.")

# %% tags=["remove-input"]
cmp = study[study["comparison"] != ""].copy()
cmp["difference (95% interval)"] = [format_interval(d, lo, hi, "{:+.2f}") for d, lo, hi in
                                    zip(cmp["diff"], cmp["diff_low"], cmp["diff_high"],
                                        strict=True)]
cmp["perturbation"] = cmp["perturbation"].map(kind_label)
show_table(cmp[["perturbation", "label", "difference (95% interval)", "comparison"]],
           columns={"perturbation": "perturbation", "label": "baseline",
                    "difference (95% interval)": "τ(TopoLip) − τ(baseline)",
                    "comparison": "verdict"},
           caption="TopoLip against each baseline: difference of Kendall τ on the same "
                   "resampled models.")

# %% [markdown]
# **Caveats.** The population mixes architectures, seeds and sweep points, so a measure that
# only tells the architectures apart can rank well without tracking robustness within one: the
# granulated $\tau$ over the sweeps is the within-family check. The bootstrap over models
# treats each model as one observation; the seeds of one architecture are not independent of
# its design. Intervals are not corrected for the number of measures: read them as a map of
# where the evidence is, not as verdicts.
