"""The measure study (topolip.evidence.measures) on hand-made tables with known answers: the
within-architecture τ, its exact seed permutation, the jackknife comparison against a brute-force
reference, the granulated τ of Jiang et al., the glued findings, and the calibration of the
TopoLip-against-baseline test on clustered models."""

import math
from itertools import permutations

import numpy as np
import pandas as pd
import pytest
import scipy.stats as st

from topolip.evidence.measures import (
    MEASURES,
    compare_within,
    granulated_taus,
    measure_population,
    measure_study,
    within_tau,
)
from topolip.report.measure_sentences import study_findings

FLAG = "input displacement within the noise floor"


def _tiny():
    """2 architectures × 3 seeds; within each the measure orders 2 of 3 pairs as the drop does
    (τ = 1/3 per architecture), while across architectures every pair is discordant."""
    return pd.DataFrame({"arch": ["a"] * 3 + ["b"] * 3, "seed": [0, 1, 2] * 2,
                         "m": [1.0, 2, 3, 13, 11, 12], "r": [1.0, 3, 2, -7, -8, -9]})


def test_within_tau_by_hand_and_pooled_tau_is_confounded():
    t = _tiny()
    # a: pairs (0,1) +, (0,2) +, (1,2) -; b: (0,1) +, (0,2) +, (1,2) -  ->  (4 - 2) / 6
    tau, n_pairs = within_tau(t, "m", "r")
    assert tau == pytest.approx(1 / 3) and n_pairs == 6
    # pooled: the 9 cross-architecture pairs are all discordant: (2 - 9) / 15
    assert st.kendalltau(t["m"], t["r"]).statistic == pytest.approx(-7 / 15)
    # a measure constant within every architecture cannot rank models within one
    assert math.isnan(within_tau(t.assign(m=[1.0] * 3 + [5.0] * 3), "m", "r")[0])
    # a missing model drops its pairs only
    tau, n_pairs = within_tau(t.assign(m=[np.nan, 2, 3, 13, 11, 12]), "m", "r")
    # a: only (1,2), discordant; b: as before (+1 +1 -1)  ->  (-1 + 1) / 4
    assert n_pairs == 4 and tau == pytest.approx(0.0)
    with pytest.raises(ValueError, match="repeated"):
        within_tau(pd.concat([t, t.iloc[:1]]), "m", "r")
    with pytest.raises(ValueError, match=r"table lacks column\(s\) \['r'\]"):
        within_tau(t.drop(columns="r"), "m", "r")


def _population(drop, measures, *, archs=("a", "b"), kinds=("fgsm",), flags=None):
    n_arch, n_seed = drop.shape[-1], drop.shape[-2]
    rows = []
    for k, kind in enumerate(kinds):
        for s in range(n_seed):
            for a in range(n_arch):
                row = {"source": "chain", "arch": archs[a], "seed": s, "perturbation": kind,
                       "accuracy_drop": float(drop[s, a] if drop.ndim == 2 else drop[k, s, a]),
                       "excluded": bool(flags is not None and flags[k, s, a])}
                for name, v in measures.items():
                    row[name] = v[s, a] if v.ndim == 2 else v[k, s, a]
                rows.append(row)
    return pd.DataFrame(rows)


def test_seed_permutation_p_is_exact():
    # 4 seeds, opposite orders in the two architectures (so seed-centring leaves them as they
    # are), measure = drop: τ = 1, and only the identity and the reversal of the 4! = 24 seed
    # relabellings reach |τ| = 1
    drop = np.array([[1.0, 40], [2, 30], [3, 20], [4, 10]])
    pop = _population(drop, {"end_to_end_scale_free": drop, "parameters": np.ones((4, 2))})
    study, _ = measure_study(pop)
    ref = study.set_index(["perturbation", "measure"]).loc[("all", "end_to_end_scale_free")]
    assert ref["tau_within"] == 1.0 and ref["p_within"] == pytest.approx(2 / 24)
    assert ref["n_permutations"] == 24 and ref["p_mc_se"] == 0.0
    # brute force over the 24 relabellings, the same permutation in both architectures
    tau = [within_tau(pd.DataFrame({"arch": np.tile(["a", "b"], 4),
                                    "seed": np.repeat(range(4), 2),
                                    "m": drop.ravel(), "r": drop[list(p)].ravel()}),
                      "m", "r")[0] for p in permutations(range(4))]
    assert np.mean(np.abs(tau) >= 1 - 1e-12) == pytest.approx(2 / 24)
    # parameters are constant within architectures: no τ, no comparison
    par = study.set_index(["perturbation", "measure"]).loc[("all", "parameters")]
    assert math.isnan(par["tau_within"]) and par["comparison"] == "not testable"


def _brute_jackknife(t, a, b, r):
    """Delete-one-seed jackknife of the pair-weighted within-arch τ difference, with scipy."""
    def tw(df, col):
        num = den = 0.0
        for _, g in df.groupby("arch"):
            if len(g) >= 2:
                p = len(g) * (len(g) - 1) / 2
                num += st.kendalltau(g[col], g[r]).statistic * p
                den += p
        return num / den
    d = tw(t, a) - tw(t, b)
    seeds = sorted(t["seed"].unique())
    reps = np.array([tw(t[t["seed"] != s], a) - tw(t[t["seed"] != s], b) for s in seeds])
    n = len(seeds)
    se = math.sqrt((n - 1) / n * ((reps - reps.mean()) ** 2).sum())
    return d, se, 2 * st.t.sf(abs(d / se), n - 1)


def test_jackknife_comparison_equals_a_brute_force_reference():
    rng = np.random.default_rng(3)
    t = pd.DataFrame({"arch": np.repeat(["a", "b", "c"], 6), "seed": np.tile(range(6), 3),
                      "r": rng.normal(size=18)})
    t["x"] = t["r"] + rng.normal(size=18)
    t["z"] = rng.normal(size=18)
    out = compare_within(t, "x", "z", "r")
    d, se, p = _brute_jackknife(t, "x", "z", "r")
    assert out["diff"] == pytest.approx(d) and out["se"] == pytest.approx(se)
    assert out["p"] == pytest.approx(p) and out["df"] == 5
    # too few seeds for a replicate of >= 3 seeds: no test
    few = compare_within(t[t["seed"] < 3], "x", "z", "r")
    assert math.isfinite(few["diff"]) and math.isnan(few["p"])


def _clustered(rng, n_sim, rho1, rho2, *, n_arch=4, n_seed=5, image=1.0):
    """Architecture means that differ (in the drop and, oppositely, in the measures), a seed
    effect shared by the architectures of a seed, and two measures correlated rho1 / rho2
    with the within-architecture part of the drop."""
    mu = rng.normal(0, 3, (n_sim, 1, n_arch))
    z = (image * rng.normal(size=(n_sim, n_seed, 1)) + rng.normal(size=(n_sim, n_seed, n_arch))
         ) / math.sqrt(1 + image ** 2)
    x1 = rng.normal(0, 3, (n_sim, 1, n_arch)) + rho1 * z + math.sqrt(1 - rho1 ** 2) * rng.normal(
        size=z.shape)
    x2 = -mu + rho2 * z + math.sqrt(1 - rho2 ** 2) * rng.normal(size=z.shape)
    return mu + z, x1, x2


def _table(y, x1, x2):
    n_seed, n_arch = y.shape
    return pd.DataFrame({"arch": np.tile([f"a{i}" for i in range(n_arch)], n_seed),
                         "seed": np.repeat(range(n_seed), n_arch), "r": y.ravel(),
                         "x1": x1.ravel(), "x2": x2.ravel()})


#: simulated books per calibration figure, and the most false calls a 5% rule may make in
#: them: the 99th percentile of Binomial(N_SIM, 0.05), i.e. a rule whose true rate is 5% fails
#: this test 1% of the time.
N_SIM = 300
ALLOWED = int(st.binom.ppf(0.99, N_SIM, 0.05))


def test_comparison_is_calibrated_on_clustered_models_and_detects_a_better_measure():
    rng = np.random.default_rng(2020)
    for rho in (0.0, 0.6):  # two equally good measures (useless, or both informative)
        y, x1, x2 = _clustered(rng, N_SIM, rho, rho)
        calls = sum(compare_within(_table(y[i], x1[i], x2[i]), "x1", "x2", "r")["p"] < 0.05
                    for i in range(N_SIM))
        print(f"null rho={rho}: {calls}/{N_SIM} better/worse calls (allowed {ALLOWED})")
        assert calls <= ALLOWED
        # the pooled τ difference is confounded: x2 follows the architectures' drops
        pooled = np.mean([st.kendalltau(x2[i].ravel(), y[i].ravel()).statistic
                          - st.kendalltau(x1[i].ravel(), y[i].ravel()).statistic
                          for i in range(50)])
        assert pooled < -0.3
    y, x1, x2 = _clustered(rng, 100, 0.99, 0.0)  # a measure that tracks the drop, one that not
    out = [compare_within(_table(y[i], x1[i], x2[i]), "x1", "x2", "r") for i in range(100)]
    power = np.mean([o["p"] < 0.05 and o["diff"] > 0 for o in out])
    print(f"power (rho 0.99 vs 0, 4 archs x 5 seeds): {power:.2f}")
    assert power >= 0.5


def test_association_permutation_is_calibrated_on_clustered_models():
    rng = np.random.default_rng(7)
    n_sim = 200
    y, x1, _ = _clustered(rng, n_sim, 0.0, 0.0)
    calls = 0
    for i in range(n_sim):
        pop = _population(y[i], {"end_to_end_scale_free": x1[i]},
                          archs=("a", "b", "c", "d"))
        study, _ = measure_study(pop)
        calls += study.loc[study["perturbation"] == "all", "p_within"].iloc[0] < 0.05
    print(f"association null: {calls}/{n_sim} calls")
    assert calls <= int(st.binom.ppf(0.99, n_sim, 0.05))


def test_granulated_tau_by_hand():
    # axis w (3 widths) for seeds 0 and 1, axis d (2 depths) for seeds 0 and 1
    t = pd.DataFrame({"arch": "vit", "axis": ["w"] * 6 + ["d"] * 4,
                      "seed": [0, 0, 0, 1, 1, 1, 0, 0, 1, 1],
                      "m": [1, 2, 3, 1, 2, 3, 1, 2, 1, 2],
                      "r": [1, 2, 3, 2, 1, 3, 5, 6, 6, 5]})
    g = granulated_taus(t, "m", "r").set_index("axis")
    # w: seed 0 τ = 1, seed 1 τ = (-1 + 1 + 1) / 3 -> 2/3; d: +1 and -1 -> 0
    assert g.loc["w", "tau"] == pytest.approx(2 / 3) and g.loc["d", "tau"] == 0.0
    assert g["n_settings"].tolist() == [2, 2] and g["n_models"].tolist() == [4, 6]
    with pytest.raises(ValueError, match=r"sweep lacks column\(s\) \['r'\]"):
        granulated_taus(t.drop(columns="r"), "m", "r")


def _summary_and_sweeps():
    rng = np.random.default_rng(0)
    rows = []
    for kind in ("fgsm", "gaussian_noise"):
        for a, arch in enumerate(("vit", "resnet")):
            for s in range(5):
                drop = 0.1 * a + 0.02 * s + 0.01 * rng.random()
                rows.append({"arch": arch, "seed": s, "perturbation": kind, "strength": 0.1,
                             "accuracy_drop": drop, "end_to_end_scale_free": drop,
                             "displacement_ratio_max": rng.random(), "parameters": 100 + a,
                             "end_to_end_flag": FLAG if (kind, arch, s) == ("fgsm", "vit", 4)
                             else ""})
    sweeps = []
    for arch, grid in (("vit", {"w": [1, 2, 3], "d": [1, 2]}), ("resnet", {"w": [1, 2, 3]})):
        for axis, values in grid.items():
            for v in values:
                sweeps.append({"arch": arch, "parameter": axis, "value": str(v),
                               "is_base": v == 2, "seed": 0, "perturbation": "fgsm",
                               "strength": 0.1, "accuracy_drop": v / 10,
                               "end_to_end_scale_free": v * (1 if axis == "w" else -1),
                               "displacement_ratio_max": 1.0,
                               "checkpoint": f"{arch}-{axis}{v}" if v != 2 else f"{arch}-base"})
    return pd.DataFrame(rows), pd.DataFrame(sweeps)


def test_population_and_study_tables():
    summary, sweeps = _summary_and_sweeps()
    pop = measure_population(summary, sweeps)
    assert pop["source"].value_counts().to_dict() == {"chain": 20, "sweep": 8}
    assert pop["excluded"].sum() == 1
    base = pop[pop["model"] == "vit-base"]
    assert sorted(base["axis"]) == ["d", "w"] and base["is_base"].all()  # one row per axis
    study, gran = measure_study(pop)
    s = study.set_index(["perturbation", "measure"])
    fg = s.loc[("fgsm", "end_to_end_scale_free")]
    # the flagged model leaves the ranking of every measure; TopoLip = drop on the rest
    assert fg["n_excluded"] == 1 and fg["n_models"] == 9 and fg["tau_within"] == 1.0
    assert s.loc[("fgsm", "displacement_ratio_max"), "n_models"] == 9
    assert fg["n_pairs"] == 6 + 10 and fg["rank"] == 1
    # granulated: vit w +1, vit d -1 (depth reverses), resnet w +1: mean over families of
    # the mean over axes = (0 + 1) / 2; the ratio is constant in the sweeps: undefined
    assert fg["granulated_tau"] == pytest.approx(0.5) and fg["n_axes"] == 3
    assert fg["n_families"] == 2
    assert math.isnan(s.loc[("fgsm", "displacement_ratio_max"), "granulated_tau"])
    assert set(gran["axis"]) == {"w", "d"}
    all_rows = study[study["perturbation"] == "all"]
    assert set(all_rows["role"]) == {"primary"} and (study["role"] == "secondary").sum() == \
        2 * len(all_rows)
    # only baselines are compared; Holm never lowers a p-value; the interval excludes 0 exactly
    # where the row is decided
    assert set(study.loc[~study["baseline"], "comparison"]) == {""}
    tested = study.dropna(subset=["p_diff_holm"])
    assert (tested["p_diff_holm"] >= tested["p_diff"] - 1e-12).all()
    excl = (tested["diff_low"] > 0) | (tested["diff_high"] < 0)
    assert (excl == tested["comparison"].isin(["TopoLip better", "TopoLip worse"])).all()
    assert list(dict.fromkeys(study["measure"])) == [m.column for m in MEASURES
                                                     if m.column in pop]
    with pytest.raises(ValueError, match="reference measure"):
        measure_study(pop.drop(columns="end_to_end_scale_free"))
    with pytest.raises(ValueError, match="alpha"):
        measure_study(pop, alpha=1.5)


def _hand_study():
    rows = []
    for measure, label, base, tau, p, ph, pdh, cmp_, pooled in (
            ("end_to_end_scale_free", "TopoLip", False, 0.18, 0.23, 0.23, np.nan, "", 0.48),
            ("displacement_ratio_max", "Euclidean", True, 0.57, 0.0083, 0.09, 0.01,
             "TopoLip worse", 0.5),
            ("cka_distance", "CKA", True, 0.1, 0.5, 1.0, 0.8, "no difference shown", 0.2),
            ("parameters", "size", True, np.nan, np.nan, np.nan, np.nan, "not testable", 0.3)):
        rows.append({"perturbation": "all", "role": "primary", "measure": measure,
                     "label": label, "baseline": base, "n_models": 20, "n_archs": 4,
                     "n_seeds": 5, "n_excluded": 3, "n_permutations": 120,
                     "tau_within": tau, "p_within": p, "p_within_holm": ph,
                     "p_mc_se": 0.0, "rank": {0.57: 1, 0.18: 2, 0.1: 3}.get(tau, np.nan),
                     "n_ranked": 3, "tau_pooled": pooled, "p_diff_holm": pdh,
                     "comparison": cmp_, "granulated_tau": 0.25 if base is False else np.nan,
                     "n_axes": 4})
    rows.append({**rows[0], "perturbation": "fgsm", "role": "secondary", "tau_within": 0.3})
    rows.append({**rows[1], "perturbation": "fgsm", "role": "secondary",
                 "comparison": "no difference shown"})
    return pd.DataFrame(rows)


def test_findings_glue_the_numbers_of_the_table():
    f = study_findings(_hand_study())
    assert f["ref_rank"] == "2 of 3" and f["top_measure"] == "Euclidean"
    assert f["top_tau"] == 0.57 and f["ref_tau"] == 0.18 and f["ref_tau_pooled"] == 0.48
    assert (f["n_comparisons"], f["n_better"], f["n_worse"], f["n_undecided"],
            f["n_untestable"]) == (2, 0, 1, 1, 1)
    assert f["worse"] == "Euclidean" and f["better"] == "none"
    assert (f["n_secondary"], f["n_secondary_worse"]) == (1, 0)
    assert not f["ref_significant"] and f["n_significant_measures"] == 0
    assert f["ref_taus_by_kind"] == "fgsm +0.30"
    assert study_findings(_hand_study(), kind_label=str.upper)["ref_taus_by_kind"] == "FGSM +0.30"
    assert f["granulated"] == "+0.25 over 4 swept axes"
    assert f["near"] == 0  # no Holm p-value within 0.01 of 0.05
    assert (f["n_kinds"], f["n_excluded"], f["n_permutations"]) == (1, 3, 120)
    assert f["min_p"] == pytest.approx(1 / 120)
    # 4 tests (2 primary non-TopoLip rows with a p, 2 secondary) x 1/120 < 0.05: possible
    assert f["n_tau_family"] == 4 and f["family_note"].startswith("small enough")
    assert f["sentence"] == (
        "Within architectures, TopoLip ranks 2 of 3 measures by Kendall τ with the accuracy "
        "drop (τ = +0.18, seed-permutation p 0.23: no association shown at α = 0.05); "
        "against the 2 testable baselines it is significantly worse than Euclidean "
        "(Holm, α = 0.05). Pooled over architectures its "
        "τ is +0.48, a number that mixes the ranking of architectures with that of models.")
    # read back from CSV, booleans and empty verdicts survive
    back = _hand_study().astype({"baseline": str}).replace({"comparison": {"": np.nan}})
    assert study_findings(back)["n_comparisons"] == 2
    one_seed = _hand_study().assign(tau_within=np.nan, rank=np.nan, n_seeds=1)
    f = study_findings(one_seed)
    assert f["ref_rank"].startswith("unranked") and f["top_measure"] == "none"
    assert f["sentence"].startswith("With 1 seed(s) per architecture, TopoLip ranks no two")
    with pytest.raises(ValueError, match="no primary row"):
        study_findings(_hand_study().query("measure != 'end_to_end_scale_free'"))


@pytest.mark.slow
def test_comparison_over_kinds_sharing_models_is_calibrated():
    """The primary comparison averages the per-kind differences over kinds measured on the
    same models (a model's drops and measures correlate across kinds); deleting a seed deletes
    it from every kind, so the rule stays calibrated, and it still detects a better measure."""
    rng = np.random.default_rng(11)
    kinds = ("fgsm", "pgd", "gaussian_noise")

    def book(rho1, rho2, *, tracks=False):
        y, x1, x2 = _clustered(rng, 1, rho1, rho2)
        parts = []
        for kind in kinds:  # each kind: the model's own value plus a kind-specific part
            yk = 0.8 * y[0] + 0.6 * rng.normal(size=y[0].shape)
            x1k = (yk + 0.1 * rng.normal(size=yk.shape) if tracks
                   else 0.8 * x1[0] + 0.6 * rng.normal(size=yk.shape))
            parts.append(_table(yk, x1k, 0.8 * x2[0] + 0.6 * rng.normal(size=yk.shape))
                         .assign(kind=kind))
        return compare_within(pd.concat(parts), "x1", "x2", "r", strata="kind")

    calls = sum(book(0.5, 0.5)["p"] < 0.05 for _ in range(N_SIM))
    print(f"null over kinds: {calls}/{N_SIM} calls (allowed {ALLOWED})")
    assert calls <= ALLOWED
    # x1 tracks each kind's drop, x2 is unrelated to it
    power = np.mean([(o := book(0.0, 0.0, tracks=True))["p"] < 0.05 and o["diff"] > 0
                     for _ in range(100)])
    print(f"power over kinds (tracks the drop vs unrelated): {power:.2f}")
    assert power >= 0.5


# --------------------------------------------------------------------------- issue 26


def test_seed_centring_by_hand_and_it_commutes_with_relabelling_whole_seeds():
    from topolip.evidence.measures import seed_centred

    rng = np.random.default_rng(26)
    grid = rng.normal(size=(5, 3)) * [1.0, 10.0, 100.0]      # seeds × archs, scales differ
    grid[1, 2] = np.nan
    t = pd.DataFrame({"arch": np.tile(["a", "b", "c"], 5), "seed": np.repeat(range(5), 3),
                      "m": grid.ravel(), "p": np.tile([1.0, 2.0, 3.0], 5)})
    c = seed_centred(t, ["m", "p"])
    # by hand: z-score each architecture over its seeds (population sd), less each seed's mean
    z = (grid - np.nanmean(grid, 0)) / np.nanstd(grid, 0)
    expect = z - np.nanmean(z, 1, keepdims=True)
    np.testing.assert_allclose(c["m"].to_numpy().reshape(5, 3), expect, equal_nan=True)
    # a measure constant within every architecture stays constant (it still ranks nothing)
    assert (c["p"] == 0).all()
    # relabelling whole seeds before centring = relabelling the centred values
    perm = np.array([3, 0, 4, 1, 2])
    relab = t.assign(m=grid[perm].ravel())
    np.testing.assert_allclose(seed_centred(relab, ["m"])["m"].to_numpy().reshape(5, 3),
                               expect[perm], equal_nan=True)
    with pytest.raises(ValueError, match="repeated"):
        seed_centred(pd.concat([t, t.iloc[:1]]), ["m"])
    with pytest.raises(ValueError, match=r"lacks column\(s\) \['q'\]"):
        seed_centred(t, ["q"])


def test_a_seed_batch_is_no_association_after_centring():
    # every architecture's measure and drop follow the seed's batch, nothing else: raw τ = 1
    # in every architecture (p = 2/24 at 4 seeds, the smallest); centred, nothing is left
    rng = np.random.default_rng(1)
    batch = np.array([0.0, 3.0, 1.0, 2.0])[:, None]
    drop = batch + 0.01 * rng.normal(size=(4, 3))
    x = 2 * batch + 0.01 * rng.normal(size=(4, 3))
    pop = _population(drop, {"end_to_end_scale_free": x}, archs=("a", "b", "c"))
    raw, _ = measure_study(pop, centre=False)
    cen, _ = measure_study(pop)
    key = ["perturbation", "measure"]
    r = raw.set_index(key).loc[("all", "end_to_end_scale_free")]
    c = cen.set_index(key).loc[("all", "end_to_end_scale_free")]
    assert r["tau_within"] == 1.0 and r["p_within"] == pytest.approx(2 / 24)
    assert abs(c["tau_within"]) < 1 and c["p_within"] > 0.2


def test_kinds_weigh_by_their_pairs():
    # two architectures of opposite seed orders (centring leaves their orders), 3 seeds.
    # fgsm: the measure reverses the drop, and the noise floor leaves one pair (a's seeds 0, 1;
    # b's seed 2); blur: the measure is the drop, 6 pairs. By pairs: (-1 + 6) / 7; alike: 0
    d = np.array([[1.0, 3.0], [2.0, 2.0], [3.0, 1.0]])
    d = np.stack([d, d])
    x = np.stack([-d[0], d[1]])
    flags = np.zeros((2, 3, 2), bool)
    flags[0, 2, 0] = flags[0, 0, 1] = flags[0, 1, 1] = True
    pop = _population(d, {"end_to_end_scale_free": x}, kinds=("fgsm", "blur"), flags=flags)
    key = ["perturbation", "measure"]
    by_pairs = measure_study(pop)[0].set_index(key)
    alike = measure_study(pop, weights="equal")[0].set_index(key)
    assert by_pairs.loc[("fgsm", "end_to_end_scale_free"), "n_pairs"] == 1
    assert by_pairs.loc[("fgsm", "end_to_end_scale_free"), "tau_within"] == -1.0
    assert by_pairs.loc[("blur", "end_to_end_scale_free"), "tau_within"] == 1.0
    assert by_pairs.loc[("all", "end_to_end_scale_free"), "tau_within"] == pytest.approx(5 / 7)
    assert alike.loc[("all", "end_to_end_scale_free"), "tau_within"] == pytest.approx(0.0)
    # each row counts its own models left out
    assert by_pairs.loc[("fgsm", "end_to_end_scale_free"), "n_excluded"] == 3
    assert by_pairs.loc[("blur", "end_to_end_scale_free"), "n_excluded"] == 0
    with pytest.raises(ValueError, match="weights must be 'pairs' or 'equal'"):
        measure_study(pop, weights="mean")


def test_a_jackknife_with_zero_variance_is_not_testable():
    # a follows the response, b reverses it, in every seed's absence alike: d = 2 with no
    # spread; a t of infinity (p = 0) would call it significant
    r = np.array([1, 2, 3, 4, 5, 5, 4, 3, 2, 1.0])
    t = pd.DataFrame({"arch": np.repeat(["x", "y"], 5), "seed": np.tile(range(5), 2),
                      "a": r, "b": -r, "r": r})
    out = compare_within(t, "a", "b", "r")
    assert out["diff"] == pytest.approx(2.0)
    assert math.isnan(out["se"]) and math.isnan(out["p"])
    pop = t.rename(columns={"a": "end_to_end_scale_free", "b": "displacement_ratio_max",
                            "r": "accuracy_drop"}).assign(source="chain", perturbation="fgsm",
                                                          excluded=False)
    study, _ = measure_study(pop)
    row = study.set_index(["perturbation", "measure"]).loc[("all", "displacement_ratio_max")]
    assert row["comparison"] == "not testable"


def test_models_that_did_not_learn_are_left_out_of_the_study_and_counted():
    from topolip.report.findings import learner_findings

    summary = pd.DataFrame({"arch": ["vit", "vit", "resnet"], "seed": [0, 1, 0],
                            "perturbation": "gaussian_noise", "accuracy_drop": [0.1, 0.2, 0.3],
                            "end_to_end_scale_free": [1.0, 2.0, 3.0],
                            "accuracy_clean": [0.95, 0.30, 0.97], "end_to_end_flag": ""})
    sweeps = pd.DataFrame({"arch": "conv_stack", "parameter": "num_layers", "value": ["2", "4"],
                           "seed": 0, "perturbation": "gaussian_noise",
                           "accuracy_drop": [0.05, 0.2], "end_to_end_scale_free": [1.0, 1.5],
                           "test_accuracy": [0.373, 0.835], "checkpoint": ["c2", "c4"]})
    pop = measure_population(summary, sweeps, min_accuracy=0.5)
    assert pop.loc[pop["did_not_learn"], "model"].tolist() == ["vit/seed1", "c2"]
    assert pop["excluded"].tolist() == [False, True, False, True, False]
    kept = measure_population(summary, sweeps)
    assert not kept["excluded"].any()
    text = learner_findings(pop, 0.5)["ms-not-learned"]
    assert text.startswith("2 models (ViT: clean accuracy 0.300; convolution stack")
    assert "0.373" in text
    with pytest.raises(ValueError, match="min_accuracy must be a number in"):
        measure_population(summary, min_accuracy=1.5)
