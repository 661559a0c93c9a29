"""The whole chain with tiny parameters through the runner, then the book build."""

import re
from pathlib import Path

import pandas as pd
import pytest

from topolip.pipeline import apply_overrides, build_book, load_profile, run_chain, stage

ROOT = Path(__file__).resolve().parents[1]

TINY = [
    "results_dir=results/tiny", "n_train=300", "n_test=60", "seeds=[0]", "epochs=1",
    "vit.num_layers=2", "vit.hidden_dim=16", "vit.mlp_dim=32", "vit.num_heads=2",
    "resnet.width=4", "attention_stack.num_layers=2", "attention_stack.hidden_dim=16",
    "attention_stack.num_heads=2", "conv_stack.num_layers=2", "conv_stack.channels=8",
    "n_points=30",
]


@pytest.mark.slow
def test_chain_and_book(tmp_path):
    root = stage(ROOT, tmp_path)
    params = apply_overrides(load_profile("quick", root=root), TINY)
    runs = run_chain(root, params, log=lambda _: None)
    assert [r.name for r in runs] == [p.stem for p in sorted((ROOT / "notebooks").glob("[0-9]*.py"))]
    tables = root / "results/tiny/tables"
    topolip = pd.read_csv(tables / "topolip.csv")
    # one row per model, seed, perturbation and layer, with the envelope respected
    assert set(topolip["arch"]) == {"vit", "resnet", "attention_stack", "conv_stack"}
    assert set(topolip["perturbation"]) == {"fgsm", "gaussian_noise"}
    assert (topolip["bottleneck"] <= topolip["envelope"] + 1e-5).all()
    assert topolip.loc[topolip["depth"] == 0, "topolip"].isna().all()
    assert (tables / "topolip.json").exists()

    html = build_book(root)
    compare = (html / "book/notebooks/03_compare.html").read_text()
    assert re.search(r'<img[^>]+src="[^"]+\.png"', compare), "the ViT-vs-ResNet figure is embedded"
    assert "test_accuracy" in (html / "book/notebooks/01_train.html").read_text()
    assert "mean" in compare and "geometric_mean_scale_free" in compare
    per_layer = (html / "book/notebooks/02_topolip.html").read_text()
    assert "topolip_scale_free" in per_layer and "final_norm" in per_layer and "pool" in per_layer
    assert (html / "book/intro.html").exists() and (html / "book/method.html").exists()

    # a second run executes nothing: every notebook is cached
    assert all(r.cached for r in run_chain(root, params, log=lambda _: None))
