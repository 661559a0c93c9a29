"""Each chapter's glued findings (``topolip.report.findings``), on a real quick run's tables.

``tests/expect/findings/`` holds the tables of one quick run of the chain (``results/quick`` at
commit 06b2f57), trimmed to the columns the findings read (and ``robustness.csv`` to the attacks
at the TopoLip budget), the run's ``capacity_table`` and, in ``expected.json``, the parameters
that run used and the text its executed notebooks glued (read with
:func:`topolip.pipeline.book.glue_values`). So the first test proves that the functions give the
book's text exactly; the others check a few values by hand from the same tables, and the
edge cases on tables made here.
"""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pandas as pd
import pytest

from topolip.evidence.claims import load_claims, with_options
from topolip.report import findings as F
from topolip.report.format import arch_ranking, glue_all, glue_text

ROOT = Path(__file__).resolve().parents[1]
EXPECT = ROOT / "tests/expect/findings"
E = json.loads((EXPECT / "expected.json").read_text())
P = E["params"]


def _read(name: str) -> pd.DataFrame:
    return pd.read_csv(EXPECT / f"{name}.csv")


def _claims():
    return with_options(load_claims(ROOT / "data/claims.yml"), alpha=P["08_verdict"]["alpha"])


CHAPTERS = {
    "00_theory": lambda t: F.theory_findings(t, P["00_theory"]),
    "01_train": lambda t: F.train_findings(
        t, P["01_train"], capacity=_read("capacity"), match_tolerance=E["match_tolerance"],
        data_name=E["data_name"], device=E["device"]),
    "02_topolip": lambda t: F.topolip_findings(t, P["02_topolip"]),
    "03_compare": F.compare_findings,
    "04_robustness": lambda t: F.robustness_findings(t, P["04_robustness"]),
    "05_bounds_vs_measured": lambda t: F.bounds_findings(t, P["05_bounds_vs_measured"],
                                                         data_name=E["data_name"]),
    "06_ood": lambda t: F.ood_findings(t, P["06_ood"]),
    "07_sweeps": lambda t: F.sweeps_findings(t, P["07_sweeps"]),
    "08_verdict": lambda t: F.verdict_findings(t, claims=_claims(),
                                               alpha=P["08_verdict"]["alpha"],
                                               n_seeds=E["n_seeds"]),
    "09_measures": lambda t: F.measures_findings(t, alpha=P["09_measures"]["alpha"]),
}


@pytest.mark.parametrize("chapter", sorted(CHAPTERS))
def test_each_chapter_gives_the_text_its_notebook_glued(chapter):
    found = CHAPTERS[chapter](EXPECT)
    assert found == E["glue"][chapter]
    assert all(isinstance(v, str) for v in found.values())


def test_every_notebook_has_its_findings_function():
    names = {p.stem for p in (ROOT / "notebooks").glob("[0-9][0-9]_*.py")}
    # 10_literature's findings (topolip.report.literature.literature_findings) read its own
    # results and are checked against their goldens in tests/test_literature_run.py.
    assert names == set(CHAPTERS) | {"10_literature"}
    for stem in names:  # the notebook calls it and glues what it returns
        src = (ROOT / "notebooks" / f"{stem}.py").read_text()
        assert "glue_all(" in src and "_findings(" in src, stem
        assert "glue_number(" not in src, stem


def test_frames_in_hand_give_the_same_findings_as_the_folder():
    tables = {n: _read(n) for n in ("bounds", "topolip")}
    before = {n: t.copy() for n, t in tables.items()}
    assert CHAPTERS["05_bounds_vs_measured"](tables) == E["glue"]["05_bounds_vs_measured"]
    for n, t in tables.items():  # the frames passed are not changed
        pd.testing.assert_frame_equal(t, before[n])


# --- values checked by hand on the same tables ---------------------------------------------

def test_train_accuracies_are_means_over_seeds():
    f = CHAPTERS["01_train"](EXPECT)
    models = _read("models")
    acc = models.groupby("arch")["test_accuracy"].mean()
    assert f["acc-vit"] == f"{acc['vit']:.3f}" == "0.894"
    assert f["acc-resnet"] == "0.971" and f["acc-best-arch"] == "ResNet"
    assert f["acc-worst-arch"] == "convolution stack" and f["acc-worst"] == "0.881"
    assert f["acc-spread"] == f"{acc.max() - acc.min():.3f}"
    assert f["n-models"] == "20" and f["n-archs"] == "4" and f["n-seeds"] == "5"
    assert f["match-tolerance"] == "15%"
    assert f["params-vit-resnet"] == "79,690 against 77,858"
    assert f["train-seconds"] == f"{models['train_seconds'].sum():.0f}"


def test_topolip_counts_layer_ratios_and_flags():
    f = CHAPTERS["02_topolip"](EXPECT)
    t = _read("topolip")
    layers = t[t["depth"] > 0]
    assert f["tl-n-ratios"] == str(len(layers)) == "805"
    assert f["tl-n-flagged"] == str(int(layers["flag"].notna().sum())) == "168"
    assert f["tl-share-flagged"] == f"{100 * 168 / 805:.0f}%" == "21%"
    assert f["tl-kinds-input-below"] == "FGSM, PGD"
    assert f["tl-envelope-max"] == f"{(t['bottleneck'] / t['envelope']).max():.2f}"
    assert float(f["tl-envelope-max"]) <= 1  # the stability theorem: W∞ ≤ the envelope


def test_compare_headline_is_the_geometric_mean_over_seeds():
    f = CHAPTERS["03_compare"](EXPECT)
    s = _read("topolip_summary")
    assert f["e2e-kind"] == "Gaussian noise"
    noise = s[s["perturbation"] == "gaussian_noise"]
    gm = np.exp(np.log(noise["end_to_end_scale_free"]).groupby(noise["arch"]).mean())
    assert f["e2e-vit"] == glue_text(gm["vit"]) == "2.98"
    assert f["e2e-resnet"] == glue_text(gm["resnet"]) == "0.44"
    assert f["e2e-smoothest-arch"] == "attention stack" == {"attention_stack": "attention stack"}[
        gm.idxmin()]
    assert f["e2e-rankings"].startswith("contrast: ResNet (0.222) < attention stack (0.305)")


def test_robustness_ladder_and_association():
    f = CHAPTERS["04_robustness"](EXPECT)
    r = _read("robustness")
    pgd = r[(r["perturbation"] == "pgd") & (r["strength"] == 0.05)]
    vit = pgd[pgd["arch"] == "vit"]["accuracy"].mean()
    assert f["rb-pgd-ranking"].startswith(f"ViT {vit:.2f}, ")
    assert f["rb-pgd-ranking"] == ("ViT 0.00, convolution stack 0.28, attention stack 0.30, "
                                   "ResNet 0.42")
    assert f["rb-eps"] == "0.05" and f["rb-eps-grid"] == "0.05, 0.1"
    assert (f["rb-n-flagged"], f["rb-flagged"], f["rb-check-failures"]) == ("0", "none", "none")
    assert f["rb-n-attacked"] == "20"
    smooth = _read("smoothness")
    pooled = smooth[(smooth["level"] == "within architecture") & (smooth["group"] == "pooled")
                    & (smooth["response"] == "accuracy_drop")].iloc[0]
    assert f["rb-pooled-tau"] == f"{pooled['tau']:+.2f}" == "+0.12"
    assert f["rb-pooled-p"] == "0.300" and f["rb-n-permutations"] == "120"
    assert f["rb-exact"] == "exact" and f["rb-n-seeds"] == "5"


def test_bounds_slack_and_looseness():
    f = CHAPTERS["05_bounds_vs_measured"](EXPECT)
    assert f["bounds-data"] == "mnist, 200 test images"
    assert f["bounds-n-layers"] == "230"
    assert f["bounds-max-slack"] == "7.79×10¹⁰"  # 7.79e+10 written with a power of ten
    assert f["bounds-tightest-segment"] == "AdaptiveAvgPool2d" and f["bounds-tightest-ratio"] == "1"
    assert float(f["bounds-min-slack"]) >= 1  # 2 Lip bounds W∞/eps from above


def test_ood_rankings_use_report_arch_ranking():
    f = CHAPTERS["06_ood"](EXPECT)
    b = _read("ood_behaviour")
    auroc = b[b["dataset"] != "in_distribution"].groupby(["dataset", "arch"])["auroc"].mean()
    below = auroc[auroc < 0.5]
    assert f["ood-n-below-chance"] == f"{len(below)} of {len(auroc)}" == "4 of 12"
    digits = arch_ranking(auroc["digits"], "{:.2f}", sep=", ", item="{label} {value}")
    assert f"digits: {digits}" in f["ood-auroc-rankings"]
    assert digits == "convolution stack 0.48, ViT 0.70, attention stack 0.72, ResNet 0.85"


def test_sweeps_spans_and_trends():
    f = CHAPTERS["07_sweeps"](EXPECT)
    s = _read("sweeps")
    fgsm = s[s["perturbation"] == "fgsm"]
    span = fgsm.groupby("arch")["end_to_end_scale_free"].agg(lambda v: v.max() / v.min())
    assert f["sw-max-span-arch"] == "ViT" and f["sw-max-span"] == f"{span.max():.1f}" == "2.2"
    assert f["sw-n-models"] == str(s["checkpoint"].nunique()) == "20"
    assert f["sw-kinds"] == "FGSM and Gaussian noise" and f["sw-kind"] == "FGSM"
    assert f["sw-trends"].startswith("ViT num layers: rises (3.12 to 6.11)")


def test_sweeps_show_the_kind_off_the_noise_floor():
    # FGSM's sweep rows all within the floor (the quick run: 96%): the sentences and figures
    # read Gaussian noise, and say each kind's share
    s = _read("sweeps")
    s["end_to_end_flag"] = np.where(s["perturbation"] == "fgsm",
                                    "input displacement within the noise floor", "")
    params = P["07_sweeps"]
    f = F.sweeps_findings({"sweeps": s}, params)
    assert f["sw-kind"] == "Gaussian noise"
    assert f["sw-floor-shares"] == "FGSM 100%; Gaussian noise 0%"
    noise = s[s["perturbation"] == "gaussian_noise"]
    span = noise.groupby("arch")["end_to_end_scale_free"].agg(lambda v: v.max() / v.min())
    assert f["sw-max-span"] == f"{span.max():.1f}"
    import matplotlib.pyplot as plt

    from topolip.report.figures import plot_size_sweep

    fig = plot_size_sweep(s.assign(seed=0))
    drawn = sorted(np.concatenate([line.get_ydata() for line in fig.axes[0].lines
                                   if not line.get_label().startswith("_")]))  # no guide
    mean = noise.groupby(["arch", "parameters"])["end_to_end_scale_free"].mean()
    assert drawn == pytest.approx(sorted(mean))
    plt.close(fig)


def test_verdict_counts():
    f = CHAPTERS["08_verdict"](EXPECT)
    v = _read("verdicts")
    assert f["headline-n-seeds"] == "5" and f["headline-alpha"] == "0.05"
    assert f["headline-n-primary"] == str(int((v["role"] == "primary").sum())) == "6"
    assert f["headline-envelope"] == "no test"  # a check, not a claim with counts
    env = v[v["claim"] == "envelope"]
    assert f["headline-envelope-ratio"] == f"{env['effect'].iloc[0]:.2f}" == "0.44"
    assert f["primary-row-attention-more-robust"] == "ViT vs ResNet, APGD-CE + APGD-T"


def test_measure_study_reference_row():
    f = CHAPTERS["09_measures"](EXPECT)
    assert (f["ms-ref-tau"], f["ms-ref-p"], f["ms-ref-rank"]) == ("+0.12", "0.300", "7 of 11")
    assert f["ms-significance"] == "does not show" and f["ms-better"] == "none"
    # the same within-architecture τ as chapter 04's pooled association (one test, two views)
    assert f["ms-ref-tau"] == E["glue"]["04_robustness"]["rb-pooled-tau"]


# --- edge cases on tables made here ------------------------------------------------------

def test_glue_text_formats_as_the_book_shows():
    assert glue_text(0.98765, "{:.3f}") == "0.988"
    assert glue_text(float("nan"), "{:.3f}") == "—"
    assert glue_text(7.79e10) == "7.79×10¹⁰" and glue_text(1e-5) == "10⁻⁵"
    assert glue_text(120, "{:,}") == "120" and glue_text(12000, "{:,}") == "12,000"
    assert glue_text(True, "{}") == "True"


def test_glue_all_refuses_unformatted_values():
    with pytest.raises(ValueError, match="'n' must be text"):
        glue_all({"n": 3})


def test_tables_errors_name_the_problem(tmp_path):
    with pytest.raises(FileNotFoundError, match="no table sweeps.csv"):
        F.sweeps_findings(tmp_path, P["07_sweeps"])
    with pytest.raises(KeyError, match="lacks"):
        F.compare_findings({"topolip": _read("topolip")})
    with pytest.raises(TypeError, match="must be a DataFrame"):
        F.compare_findings({"topolip": _read("topolip"), "topolip_summary": [1, 2]})
    with pytest.raises(TypeError, match="folder path or a mapping"):
        F.compare_findings(42)
    with pytest.raises(KeyError, match="params lacks"):
        F.ood_findings(EXPECT, {"n_points": 200})


def test_theory_refuses_an_attention_bound_outside_the_sqrt_n_regime():
    t = {n: _read(n) for n in ("theory_layers", "theory_attention", "theory_conv")}
    flat = t["theory_attention"].assign(bound=1.0)  # no growth with n: slope 0
    with pytest.raises(ValueError, match="not about 1/2"):
        F.theory_findings({**t, "theory_attention": flat}, P["00_theory"])


def test_ood_with_every_auroc_above_chance():
    summary = pd.DataFrame({"arch": ["vit", "resnet", "vit", "resnet"], "seed": 0,
                            "ood_set": ["digits"] * 4,
                            "end_to_end_scale_free": [1.0, 3.0, 2.0, 5.0]})
    behaviour = pd.DataFrame({"arch": ["vit", "resnet", "vit", "resnet"],
                              "dataset": ["digits", "digits", "in_distribution",
                                          "in_distribution"],
                              "auroc": [0.9, 0.75, np.nan, np.nan]})
    f = F.ood_findings({"ood_topolip_summary": summary, "ood_behaviour": behaviour},
                       {"n_points": 50, "n_ood": 100})
    assert f == {"ood-e2e-rankings": "digits: ViT 1.50, ResNet 4.00",
                 "ood-auroc-rankings": "digits: ResNet 0.75, ViT 0.90",
                 "ood-n-below-chance": "0 of 2", "ood-below-chance": "none",
                 "ood-detectors-below-chance": "not measured",
                 "ood-n-points": "50", "ood-n-ood": "100"}
    # with the logit-based detectors' AUROCs: the count below chance for each, of the
    # (set, architecture) means
    behaviour = behaviour.assign(auroc_max_logit=[0.4, 0.6, np.nan, np.nan],
                                 auroc_energy=[0.3, 0.45, np.nan, np.nan])
    f = F.ood_findings({"ood_topolip_summary": summary, "ood_behaviour": behaviour},
                       {"n_points": 50, "n_ood": 100})
    assert f["ood-detectors-below-chance"] == "max-logit 1 of 2, energy 2 of 2"


def test_sweeps_trend_words_and_a_family_with_too_few_sizes():
    rows = []
    for value, e2e, params in ((1, 1.0, 100), (2, 2.0, 200), (4, 3.0, 400)):
        rows.append({"arch": "vit", "parameter": "num_layers", "value_numeric": value,
                     "perturbation": "fgsm", "end_to_end_scale_free": e2e,
                     "accuracy_drop": 0.1, "parameters": params, "test_accuracy": 0.9,
                     "checkpoint": f"vit-{value}"})
    for value, e2e in ((2, 2.0), (4, 1.0)):
        rows.append({"arch": "conv_stack", "parameter": "num_layers", "value_numeric": value,
                     "perturbation": "fgsm", "end_to_end_scale_free": e2e,
                     "accuracy_drop": 0.1, "parameters": 10 * value, "test_accuracy": 0.9,
                     "checkpoint": f"cs-{value}"})
    f = F.sweeps_findings({"sweeps": pd.DataFrame(rows)},
                          {"sweep_perturbations": {"fgsm": 0.05}, "n_points": 20,
                           "n_robust": 10, "sweep_epochs": 1})
    assert f["sw-trends"] == ("ViT num layers: rises (1.00 to 3.00); "
                              "convolution stack num layers: falls (2.00 to 1.00)")
    assert f["sw-size-tau"] == "ViT +1.00"  # the stack has two sizes only: no τ
    assert f["sw-n-robust"] == "20" and f["sw-n-models"] == "5"
    assert f["sw-max-span-arch"] == "ViT" and f["sw-max-span"] == "3.0"
    assert f["sw-ranges"] == "convolution stack 1.00–2.00; ViT 1.00–3.00"
    assert f["sw-median-span"] == "1.3"
    assert f["sw-accuracy"] == "convolution stack 0.900–0.900; ViT 0.900–0.900"
    # one value per checkpoint: a model measured under two kinds counts once, and each
    # family's range runs from its least to its most accurate model
    more = pd.DataFrame(rows).assign(perturbation="gaussian_noise")
    both = pd.concat([pd.DataFrame(rows), more])
    both["test_accuracy"] = both["checkpoint"].map({"vit-1": 0.55, "vit-2": 0.81,
                                                    "vit-4": 0.97, "cs-2": 0.2, "cs-4": 0.6})
    f = F.sweeps_findings({"sweeps": both}, {"sweep_perturbations": {"fgsm": 0.05},
                                             "n_points": 20, "n_robust": 10,
                                             "sweep_epochs": 1})
    assert f["sw-accuracy"] == "convolution stack 0.200–0.600; ViT 0.550–0.970"


def test_an_association_family_that_cannot_decide_is_said_to_describe(tmp_path):
    # the stored book's 8 per-kind and response secondaries at 5 seeds: Holm's first step is
    # at least 8/120 > 0.05, so no sentence may count their decisions
    import shutil

    for f in EXPECT.glob("*.csv"):
        shutil.copy(f, tmp_path / f.name)
    smooth = _read("smoothness")
    # (the stored table is trimmed to the columns the findings read: no role column; the
    # primary is the pooled within-architecture row of the accuracy drop)
    sec = ~((smooth["group"] == "pooled") & (smooth["level"] == "within architecture")
            & (smooth["response"] == "accuracy_drop")).to_numpy()
    smooth["family_floor"] = np.where(sec, 8 / 120, 1 / 120)
    smooth["seeds_needed"] = np.where(sec, 6, 4)
    smooth.to_csv(tmp_path / "smoothness.csv", index=False)
    words = F.robustness_findings(tmp_path, P["04_robustness"])["rb-holm-words"]
    assert words == ("but no kind can be significant after Holm's correction at 5 seeds (the "
                     "family's smallest attainable adjusted p is 0.067 > 0.05; it would need 6 "
                     "seeds): these rows describe")
    old = CHAPTERS["04_robustness"](EXPECT)["rb-holm-words"]
    assert old.startswith("significantly so after Holm's correction for ")


def test_radius_findings_rank_every_rung_and_compare_pgd_with_apgd():
    """04's radius sentences on tables made here: each bisected rung's ranking is the geometric
    mean over seeds, and PGD over APGD-CE + APGD-T is the per-model ratio's geometric mean."""
    med = {("vit", "autoattack"): [0.010, 0.016], ("vit", "pgd"): [0.011, 0.016],
           ("vit", "fgsm"): [0.02, 0.03], ("resnet", "autoattack"): [0.04, 0.05],
           ("resnet", "pgd"): [0.05, 0.05], ("resnet", "fgsm"): [0.08, 0.09]}
    rs = pd.DataFrame([{"arch": a, "seed": s, "method": m, "group": f"{m}_radius",
                        "n_images": 200, "clean_accuracy": 0.9 + 0.02 * s, "median_radius": r,
                        "log_median_radius": np.log(r), "n_censored": 0, "attacks": 30.0}
                       for (a, m), rr in med.items() for s, r in enumerate(rr)])
    check = pd.DataFrame({"arch": ["vit"], "seed": [0], "n": [50], "n_only_bisection": [0],
                          "n_only_fab": [1], "median_ratio": [0.97], "share_within": [0.9],
                          "factor": [1.25]})
    curve = pd.DataFrame({"arch": "vit", "seed": 0, "method": "autoattack",
                          "eps": [0.0, 0.005, 0.1], "robust_accuracy": [0.9, 0.85, 0.0]})
    params = {"n_radius": 200, "radius_eps_max": 0.3, "radius_steps": 3,
              "radius_check_images": 50, "fab_steps": 20}
    f = F.radius_findings({"radius_summary": rs, "radius_check": check, "robust_curve": curve},
                          params)
    gm = {(a, m): float(np.exp(np.log(v).mean())) for (a, m), v in med.items()}
    for m in ("autoattack", "pgd", "fgsm"):
        want = arch_ranking(pd.Series({a: gm[(a, m)] for a in ("vit", "resnet")}), "{:.3f}",
                            sep=" < ")
        assert f[f"rd-{m}-ranking"] == glue_text(want, "{}")
    ratios = [0.011 / 0.010, 1.0, 0.05 / 0.04, 1.0]
    assert f["rd-pgd-over-aa"] == glue_text(
        f"{np.exp(np.log(ratios).mean()):.2f} (per model 1.00 to 1.25, 4 models)", "{}")
    # censored images per rung, strongest first; the images of one rung (4 models x 200)
    assert f["rd-n-censored"] == "APGD-CE + APGD-T 0, PGD 0, FGSM 0" and f["rd-n-rows"] == "800"
    cens = rs.assign(n_censored=np.where(rs["method"] == "fgsm", 2, 0))  # 4 FGSM models
    cens.loc[(cens["method"] == "pgd") & (cens["arch"] == "vit"), "n_censored"] = 1
    f2 = F.radius_findings({"radius_summary": cens, "radius_check": check,
                            "robust_curve": curve}, params)
    assert f2["rd-n-censored"] == "APGD-CE + APGD-T 0, PGD 2, FGSM 8"
    no_pgd = F.radius_findings({"radius_summary": rs[rs["method"] != "pgd"],
                                "radius_check": check, "robust_curve": curve}, params)
    assert no_pgd["rd-pgd-over-aa"] == glue_text("not measured", "{}")
