"""The whole chain with tiny parameters through the runner, then the book build."""

import re
from pathlib import Path

import nbformat
import pandas as pd
import pytest
from test_book_html import check_book_html

from topolip import roster
from topolip.evidence.calibration import power_table
from topolip.pipeline.book import build_book, glue_values, stage
from topolip.pipeline.params import apply_overrides, load_profile
from topolip.pipeline.provenance import read_table
from topolip.pipeline.runner import run_chain
from topolip.report.measure_sentences import study_findings
from topolip.report.verdict_sentences import claim_findings

ROOT = Path(__file__).resolve().parents[1]

TINY = [
    "results_dir=results/tiny", "n_train=300", "n_test=60", "seeds=[0]", "epochs=1", "val_size=40",
    "vit.num_layers=2", "vit.hidden_dim=16", "vit.mlp_dim=32", "vit.num_heads=2",
    "resnet.width=4", "attention_stack.num_layers=2", "attention_stack.hidden_dim=16",
    "attention_stack.num_heads=2", "conv_stack.num_layers=2", "conv_stack.channels=8",
    "n_points=30",
    # 04_robustness: two strengths per kind, few images
    "n_robust=30", "attack_eps=[0.0, 0.1]", "masking_probe_steps=2", "severities=[0, 2]",
    "n_ladder=30", "ladder_pgd_steps=3", "apgd_steps=3", "square_queries=20",
    "n_radius=30", "radius_steps=2", "radius_check_images=10", "fab_steps=5",
    "topolip_strengths={fgsm: 0.1, pgd: 0.1, gaussian_noise: 2, gaussian_blur: 2, contrast: 2, "
    "rotation: 2, elastic: 2}",
    # 06_ood
    "n_ood=40",
    # 07_sweeps: two points per family, one epoch
    "sweep_epochs=1", "sweep_seeds=[0]",
    "sweeps={vit: {base: {num_layers: 1, num_heads: 2, hidden_dim: 8, mlp_dim: 16}, "
    "grid: {num_layers: [1, 2]}}, resnet: {base: {width: 2}, "
    "grid: {blocks: [[1, 1, 1, 1], [2, 1, 1, 1]]}}, attention_stack: {base: {num_layers: 1, "
    "num_heads: 2, hidden_dim: 8}, grid: {num_layers: [1, 2]}}, conv_stack: {base: "
    "{num_layers: 1, channels: 4}, grid: {num_layers: [1, 2]}}}",
]
ARCHS = {"vit", "resnet", "attention_stack", "conv_stack"}


@pytest.mark.slow
def test_chain_and_book(tmp_path):
    root = stage(ROOT, tmp_path)
    # a repository root holds .venv and results/: the book must not read files outside its toc
    # (installed packages ship Markdown and notebooks with broken references)
    decoy = root / ".venv/lib/site-packages/pkg/README.md"
    decoy.parent.mkdir(parents=True)
    decoy.write_text("# Decoy\n\nSee [missing](./nowhere.txt) and {cite}`no_such_key`.\n")
    params = apply_overrides(load_profile("quick", root=root), TINY)
    lines: list[str] = []
    runs = run_chain(root, params, log=lines.append)
    # one Dask LocalCluster for the whole chain (scheduler: local), not one per notebook
    assert params["scheduler"] == "local"
    assert sum("Dask LocalCluster" in line for line in lines) == 1, lines
    notebooks = sorted((ROOT / "notebooks").glob("[0-9]*.py"))
    assert [r.name for r in runs] == [p.stem for p in notebooks]
    tables = root / "results/tiny/tables"
    topolip = pd.read_csv(tables / "topolip.csv")
    # one row per model, seed, perturbation and layer, with the envelope respected
    assert set(topolip["arch"]) == ARCHS
    assert topolip["perturbation"].nunique() == 7
    assert (topolip["bottleneck"] <= topolip["envelope"] + 1e-5).all()
    assert topolip.loc[topolip["depth"] == 0, "topolip"].isna().all()
    assert topolip["noise_floor"].notna().all() and "flag" in topolip
    assert (tables / "topolip.json").exists()
    summary = pd.read_csv(tables / "topolip_summary.csv")
    assert len(summary) == 4 * 7
    for col in ("end_to_end_scale_free", "accuracy_drop", "relative_drop", "rtd_lite_ratio",
                "displacement_ratio_max", "cka_distance", "log10_spectral_norm_product",
                "log10_lipschitz_estimate_product", "logit_margin", "parameters", "n_layers"):
        assert col in summary, col
    assert not (tables / "resamples.csv").exists()  # the trained model is the unit

    # 04_robustness: accuracy curves, within-kind Kendall tests
    curves = pd.read_csv(tables / "robustness.csv")
    # archs x (ladder attacks x eps + Square at 0 and the TopoLip eps + corruptions x sev.)
    assert len(curves) == 4 * (3 * 2 + 2 + 5 * 2)
    assert set(curves["perturbation"]) >= {"fgsm", "pgd", "autoattack", "square"}
    clean = curves[curves["strength"] == 0]
    assert (clean["accuracy"] == clean["accuracy_clean"]).all()
    masking = pd.read_csv(tables / "masking.csv")
    assert set(masking["check"]) >= {"all", "pgd_le_fgsm", "large_eps_to_zero"}
    assert len(masking[masking["check"] == "all"]) == 4
    radii = pd.read_csv(tables / "radii.csv")
    assert radii["method"].value_counts().to_dict() == {"autoattack": 4 * 30, "pgd": 4 * 30,
                                                        "fgsm": 4 * 30, "fab": 4 * 10}
    assert len(pd.read_csv(tables / "radius_summary.csv")) == 4 * 3
    assert set(pd.read_csv(tables / "robust_curve.csv")["method"]) == {"autoattack", "pgd",
                                                                      "fgsm"}
    assert len(pd.read_csv(tables / "radius_check.csv")) == 4
    assert pd.read_csv(tables / "robust_curve.csv")["robust_accuracy"].between(0, 1).all()
    smooth = pd.read_csv(tables / "smoothness.csv")
    assert set(smooth["group"]) == set(summary["perturbation"]) | {"pooled"}
    # 06_ood: unpaired, so no envelope, but every displacement is defined
    ood = pd.read_csv(tables / "ood_topolip.csv")
    assert set(ood["arch"]) == ARCHS and ood["ood_set"].nunique() == 3
    assert ood[["eps", "bottleneck", "envelope"]].isna().all().all()
    assert ood["delta"].notna().all()
    assert set(pd.read_csv(tables / "ood_behaviour.csv")["dataset"]) == {
        "in_distribution", "digits", "inverted_mnist", "photo_patches"}
    assert set(pd.read_csv(tables / "ood_resamples.csv")["measure"]) == {
        "auroc", "auroc_max_logit", "auroc_energy"}
    # 07_sweeps: one row per sweep point and kind
    sweeps = pd.read_csv(tables / "sweeps.csv")
    assert set(sweeps["arch"]) == ARCHS and len(sweeps) == 8 * 2
    # 08_verdict: one seed is never enough for a decision
    verdicts = pd.read_csv(tables / "verdicts.csv")
    decided = verdicts[verdicts["claim"] != "envelope"]["verdict"]
    # (a rung at the robust-accuracy floor is "floor/ceiling" whatever the seeds)
    assert "not enough seeds" in set(decided)
    assert set(decided) <= {"not enough seeds", "floor/ceiling"}
    # 09_measures: every measure against the accuracy drop
    study = pd.read_csv(tables / "measure_study.csv")
    assert {"end_to_end_scale_free", "rtd_lite_ratio", "cka_distance"} <= set(study["measure"])
    figures = root / "results/tiny/figures"
    for name in ("fig-noise-floor", "fig-robustness-curves", "fig-radius-curves",
                 "fig-topolip-vs-drop",
                 "fig-ood-topolip", "fig-ood-behaviour", "fig-ood-detectors", "fig-sweep-vit",
                 "fig-verdicts", "fig-measure-study"):
        assert (figures / f"{name}.png").exists(), name

    # the numbers of the prose are the library's findings of the saved tables, as read back
    # (a notebook computing its sentences itself would drift from them)
    glued = {name: glue_values(nbformat.read(root / f"book/notebooks/{name}.ipynb", 4))
             for name in ("01_train", "08_verdict", "09_measures")}
    verdicts = read_table(tables / "verdicts.csv")
    found = claim_findings(verdicts, power_table(verdicts))
    for claim, sentence in found["primary"].items():
        assert glued["08_verdict"][f"primary-{claim}"] == sentence, claim
    assert glued["08_verdict"]["headline-n-decisive"] == str(found["n_decisive"])
    assert glued["08_verdict"]["headline-n-families"] == str(found["n_families"])
    study = study_findings(read_table(tables / "measure_study.csv"), kind_label=roster.label)
    assert glued["09_measures"]["ms-sentence"] == study["sentence"]
    models = read_table(tables / "models.csv")
    assert glued["01_train"]["n-models"] == str(len(models))
    assert glued["01_train"]["acc-vit"] == \
        f"{models.loc[models['arch'] == 'vit', 'test_accuracy'].mean():.3f}"

    html = build_book(root)
    for page, words in (("04_robustness", ("Kendall", "accuracy drop", "within architecture")),
                        ("06_ood", ("AUROC", "in distribution")),
                        ("07_sweeps", ("scale-free TopoLip", "num layers")),
                        ("09_measures", ("RTD", "CKA", "granulated")),
                        ("08_verdict", ("not enough seeds", "Holm"))):
        text = (html / f"book/notebooks/{page}.html").read_text()
        assert len(re.findall(r'<img[^>]+src="[^"]+\.png"', text)) >= 1, page
        for word in words:
            assert word in text, (page, word)
    assert (html / "book/intro.html").exists() and (html / "book/method.html").exists()
    # the book reads as a paper: numbered, captioned figures, glued numbers in the prose, no
    # noise, MathJax served by the book itself (tests/test_book_html.py)
    check_book_html(html, root)

    # a second run executes nothing: every notebook is cached
    assert all(r.cached for r in run_chain(root, params, log=lambda _: None))
