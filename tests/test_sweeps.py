"""Sweeps: architectures trained at each swept parameter, their checkpoints reused, every
point checked before training (topolip.experiments.sweeps)."""

from __future__ import annotations

import matplotlib

matplotlib.use("Agg")

import numpy as np
import pandas as pd
import pytest

from topolip.experiments.model_measurement import model_images
from topolip.experiments.sweeps import run_sweeps, sweep_points
from topolip.nets.data.mnist import load_mnist
from topolip.nets.run_spec import TrainConfig
from topolip.nets.train import accuracy, load_trained

# --- sweeps ------------------------------------------------------------------------------------

def test_sweep_reuses_checkpoints_and_trains_the_base_once(tmp_path):
    data = load_mnist(n_train=120, n_test=40, seed=0)
    kwargs = dict(results_dir=tmp_path, n_robust=12, n_points=6, floor=True,
                  perturbations={"fgsm": 0.1}, seeds=[0, 1], device="cpu")
    base = {"channels": 2, "num_layers": 2}
    grid = {"num_layers": [1, 2], "channels": [2, 3]}
    config = TrainConfig(epochs=2, batch_size=60)
    first = run_sweeps({"conv_stack": {"base": base, "grid": grid}}, data, config, **kwargs)
    assert len(first) == 8  # 4 points x 2 seeds, seed by seed
    assert first["seed"].tolist() == [0] * 4 + [1] * 4
    assert first["is_base"].tolist() == [False, True, True, False] * 2
    # the base model (num_layers=2, channels=2) is one checkpoint per seed, trained once
    assert first["checkpoint"].nunique() == 6
    assert len(list((tmp_path / "models").glob("*.pt"))) == 6
    trained_now = first.drop_duplicates("checkpoint")["resumed_from_epoch"]
    assert (trained_now == 0).all()
    base_rows = first[first["is_base"]]
    assert (base_rows.groupby("seed")["resumed_from_epoch"].max() == config.epochs).all()
    assert first["n_layers"].tolist() == [2, 3, 3, 3] * 2
    # each seed's models are measured on that seed's images (the chain's one rule)
    for _, row in first.drop_duplicates("seed").iterrows():
        own = model_images(data.x_test, data.y_test, int(row["seed"]), n_points=6, n_robust=12,
                           floor=True)
        model = load_trained(row["checkpoint"], device="cpu").model
        assert row["accuracy_clean"] == pytest.approx(accuracy(model, own.x, own.y))
    for col in ("geometric_mean", "geometric_mean_scale_free", "end_to_end", "max"):
        assert np.isfinite(first[col]).all(), col
    np.testing.assert_allclose(first["geometric_mean"] ** first["n_layers"],
                               first["end_to_end"], rtol=1e-9)
    assert set(first["value"]) == {"1", "2", "3"}
    # a second call trains nothing and gives the same numbers
    stamps = {p: p.stat().st_mtime_ns for p in (tmp_path / "models").glob("*.pt")}
    second = run_sweeps({"conv_stack": {"base": base, "grid": grid}}, data, config, **kwargs)
    assert (second["resumed_from_epoch"] == config.epochs).all()
    assert {p: p.stat().st_mtime_ns for p in (tmp_path / "models").glob("*.pt")} == stamps
    cols = [c for c in first.columns if c != "resumed_from_epoch"]
    pd.testing.assert_frame_equal(first[cols], second[cols])


def test_run_sweeps_is_the_sweeps_one_after_the_other(tmp_path):
    """One batch of tasks over several architectures gives the rows of one call each."""
    data = load_mnist(n_train=60, n_test=20, seed=0)
    kwargs = dict(n_robust=10, perturbations={"gaussian_noise": 2},
                  seeds=[0], device="cpu")
    config = TrainConfig(epochs=1, batch_size=30)
    sweeps = {"conv_stack": {"base": {"channels": 2}, "grid": {"num_layers": [1, 2]}},
              "attention_stack": {"base": {"num_layers": 1, "hidden_dim": 8, "num_heads": 2},
                                  "grid": {"hidden_dim": [4, 8]}}}
    together = run_sweeps(sweeps, data, config, results_dir=tmp_path / "a", **kwargs)
    apart = pd.concat([run_sweeps({arch: s}, data, config, results_dir=tmp_path / "b", **kwargs)
                       for arch, s in sweeps.items()], ignore_index=True)
    assert together["arch"].tolist() == ["conv_stack"] * 2 + ["attention_stack"] * 2
    same = [c for c in together.columns if c != "checkpoint"]
    pd.testing.assert_frame_equal(together[same], apart[same])
    with pytest.raises(ValueError, match="exactly the keys 'base' and 'grid'"):
        run_sweeps({"vit": {"base": {}}}, data, config, results_dir=tmp_path, **kwargs)


def test_sweep_points_check_every_point_before_training(tmp_path):
    data = load_mnist(n_train=40, n_test=20, seed=0)
    pts = sweep_points("resnet", {"width": 2}, {"blocks": [[1, 1, 1, 1], (2, 1, 1, 1)]}, data)
    assert [p.value_label for p in pts] == ["[1, 1, 1, 1]", "[2, 1, 1, 1]"]
    assert [p.value_numeric for p in pts] == [4.0, 5.0]
    assert pts[0].spec.params["in_channels"] == 1 and pts[0].spec.params["blocks"] == [1, 1, 1, 1]
    with pytest.raises(ValueError, match=r"unknown parameter\(s\) \['depth'\] for arch 'vit'"):
        sweep_points("vit", {}, {"depth": [1]}, data)
    with pytest.raises(ValueError, match="repeats a value"):
        sweep_points("vit", {}, {"num_layers": [1, 1]}, data)
    with pytest.raises(ValueError, match="non-empty mapping"):
        sweep_points("vit", {}, {}, data)
    with pytest.raises(ValueError, match=r"hidden_dim=30 is not divisible by num_heads=4"):
        run_sweeps({"vit": {"base": {"num_heads": 4},
                            "grid": {"num_layers": [1], "hidden_dim": [30]}}}, data,
                   TrainConfig(epochs=1), results_dir=tmp_path, n_robust=20,
                   perturbations={"fgsm": 0.1})
    assert not (tmp_path / "models").exists(), "nothing was trained before the bad point"
    with pytest.raises(ValueError, match="non-empty .kind: strength. mapping"):
        run_sweeps({"vit": {"base": {}, "grid": {"num_layers": [1]}}}, data,
                   TrainConfig(epochs=1), results_dir=tmp_path, n_robust=20,
                   perturbations={})
    with pytest.raises(ValueError, match=r"unknown perturbation\(s\) \['blur'\]"):
        run_sweeps({"vit": {"base": {}, "grid": {"num_layers": [1]}}}, data,
                   TrainConfig(epochs=1), results_dir=tmp_path, n_robust=20,
                   perturbations={"fgsm": 0.1, "blur": 1})


