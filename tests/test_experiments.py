"""Experiment loops: robustness curves, OOD measurements, correlations, sweeps, their figures."""

from __future__ import annotations

import math

import matplotlib

matplotlib.use("Agg")

import numpy as np
import pandas as pd
import pytest
import torch
from torch import nn

from topolip.evidence.bound_tables import LOCAL, bounds_vs_measured
from topolip.experiments.measure import (
    measure_bounds,
    measure_model,
    model_summaries,
    seed_batch,
)
from topolip.experiments.ood import (
    measure_ood,
    measure_ood_trained,
    ood_auroc_resamples,
    ood_behaviour,
)
from topolip.experiments.robustness import max_softmax, robustness_curves
from topolip.experiments.sweeps import run_sweeps, sweep_points
from topolip.nets.data import ImageSplit, load_mnist
from topolip.nets.models import collect_activations
from topolip.nets.train import ModelSpec, TrainConfig, accuracy, fit
from topolip.perturbations.ood_sets import load_ood_batches
from topolip.report.figures import (
    plot_accuracy_curves,
    plot_ood_behaviour,
    plot_sweep,
    plot_topolip_by_layer,
    plot_topolip_vs_accuracy,
)
from topolip.topology.metric import topological_displacement
from topolip.topology.spec import TopoLipSpec


@pytest.fixture(scope="module")
def data():
    return load_mnist(n_train=600, n_test=120, seed=0)


@pytest.fixture(scope="module")
def trained(data):
    torch.manual_seed(0)
    result = fit(ModelSpec("resnet", {"width": 4}), data,
                 TrainConfig(epochs=3, batch_size=32, lr=3e-3), device="cpu", progress=False)
    assert result.test_accuracy > 0.5, "the fixture model must have learned something"
    return result.model


# --- bounds against measurement ---------------------------------------------------------------


def test_measure_bounds_recreates_the_topolip_perturbations(trained, data):
    x, y = seed_batch(data.x_test, data.y_test, 24, seed=0)
    kinds = {"fgsm": 0.1, "gaussian_noise": 2}
    bounds = measure_bounds(trained, x, y, kinds, n_points=12, seed=0, pgd_steps=2,
                            estimate_samples=3, estimate_n_iter=5)
    n_layers = 1 + len(trained.probe_points)
    assert bounds["perturbation"].tolist() == ([LOCAL] * n_layers + ["fgsm"] * n_layers
                                               + ["gaussian_noise"] * n_layers)
    assert bounds.columns[0] == "perturbation"
    local = bounds[bounds["perturbation"] == LOCAL].iloc[1:]
    assert (local["estimate"] <= local["bound"] * (1 + 1e-6)).all()
    chains = bounds[bounds["perturbation"] != LOCAL]
    assert (chains["eps"] <= chains["eps_bound_chain"] * (1 + 1e-6) + 1e-5).all()
    # the same perturbed clouds as the TopoLip measurement of the same batch and seed
    topo = measure_model(trained, x, y, kinds, TopoLipSpec(degrees=(0,)), n_points=12,
                         seed=0, pgd_steps=2, baseline_measures=False).layers
    topo.insert(0, "arch", "resnet")
    topo.insert(1, "seed", 0)
    joined = bounds_vs_measured(bounds.assign(arch="resnet", seed=0), topo)
    assert len(joined) == 2 * n_layers
    assert (joined["ratio"].iloc[1:].dropna() <= joined["two_lip"].iloc[1:].dropna()).all()
    with pytest.raises(ValueError, match="unknown kinds"):
        measure_bounds(trained, x, y, {"fog": 1}, n_points=12)
    with pytest.raises(ValueError, match="n_points must be an int between 2 and the 24 images"):
        measure_bounds(trained, x, y, kinds, n_points=30)


# --- robustness curves -------------------------------------------------------------------------

def test_strength_zero_is_clean_accuracy_and_drop_is_consistent(trained, data):
    x, y = data.x_test, data.y_test
    t = robustness_curves(trained, x, y, {"fgsm": [0.0, 0.1], "pgd": [0.0],
                                          "gaussian_noise": [0, 3], "elastic": [0]}, seed=1)
    clean = accuracy(trained, x, y)
    zero = t[t["strength"] == 0]
    assert len(zero) == 4 and (zero["accuracy"] == clean).all()
    assert (t["accuracy_clean"] == clean).all() and (t["n"] == len(y)).all()
    np.testing.assert_allclose(t["accuracy_drop"], clean - t["accuracy"], atol=0)
    assert t["unit"].tolist() == ["eps", "eps", "eps", "severity", "severity", "severity"]
    assert t.loc[t["perturbation"] == "fgsm", "accuracy"].iloc[1] < clean  # the attack bites
    assert not trained.training


def test_pgd_accuracy_does_not_increase_with_eps(trained, data):
    eps = [0.0, 0.02, 0.05, 0.1, 0.2, 0.3]
    t = robustness_curves(trained, data.x_test, data.y_test, {"pgd": eps}, seed=0, pgd_steps=10)
    acc = t["accuracy"].to_numpy()
    assert t["strength"].tolist() == eps
    assert (np.diff(acc) <= 0).all(), acc
    assert acc[-1] < 0.2 < acc[0]


def test_pgd_is_at_least_as_strong_as_fgsm(trained, data):
    t = robustness_curves(trained, data.x_test, data.y_test, {"fgsm": [0.1], "pgd": [0.1]},
                          pgd_steps=10)
    fgsm_acc, pgd_acc = t["accuracy"]
    assert pgd_acc <= fgsm_acc


def test_robustness_curves_reject_bad_input(trained, data):
    x, y = data.x_test[:10], data.y_test[:10]
    with pytest.raises(ValueError, match=r"unknown perturbation\(s\) \['fog'\]"):
        robustness_curves(trained, x, y, {"fog": [1]})
    with pytest.raises(ValueError, match=r"severity of 'contrast' must be an integer"):
        robustness_curves(trained, x, y, {"contrast": [2.5]})
    with pytest.raises(ValueError, match=r"strengths\['fgsm'\] must be a non-empty list"):
        robustness_curves(trained, x, y, {"fgsm": []})
    with pytest.raises(ValueError, match=r"strengths\['fgsm'\] must be a non-empty list"):
        robustness_curves(trained, x, y, {"fgsm": 0.1})
    with pytest.raises(ValueError, match="exceeds 1, the whole pixel range"):
        robustness_curves(trained, x, y, {"fgsm": [8]})
    with pytest.raises(ValueError, match="severity must be an integer in 0..5"):
        robustness_curves(trained, x, y, {"rotation": [6]})


# --- OOD behaviour and TopoLip under shift -----------------------------------------------------

def test_max_softmax_matches_softmax_and_bounds(trained, data):
    conf = max_softmax(trained, data.x_test, batch_size=7)
    with torch.no_grad():
        ref = torch.softmax(trained(data.x_test), 1).amax(1).double().numpy()
    np.testing.assert_allclose(conf, ref, rtol=1e-5)
    assert conf.shape == (len(data.x_test),) and conf.min() >= 0.1 - 1e-9 and conf.max() <= 1
    with pytest.raises(ValueError, match="non-empty"):
        max_softmax(trained, data.x_test[:0])


def test_ood_behaviour_auroc_is_the_pairwise_probability(trained, data):
    ood = load_ood_batches(["digits", "photo_patches"], data, n=50, seed=0)
    t = ood_behaviour(trained, data.x_test, data.y_test, ood)
    assert t["dataset"].tolist() == ["in_distribution", "digits", "photo_patches"]
    assert t["accuracy"].iloc[0] == accuracy(trained, data.x_test, data.y_test)
    assert math.isnan(t["auroc"].iloc[0]) and math.isnan(t["accuracy"].iloc[2])
    assert t["accuracy"].iloc[1] == accuracy(trained, *ood["digits"])
    c_in = max_softmax(trained, data.x_test)
    for i, name in ((1, "digits"), (2, "photo_patches")):
        c_out = max_softmax(trained, ood[name][0])
        diff = c_in[:, None] - c_out[None, :]
        brute = ((diff > 0).sum() + 0.5 * (diff == 0).sum()) / diff.size  # Mann-Whitney
        assert t["auroc"].iloc[i] == pytest.approx(brute, abs=1e-12)
        assert t["mean_confidence"].iloc[i] == pytest.approx(c_out.mean())
    with pytest.raises(ValueError, match="at least one"):
        ood_behaviour(trained, data.x_test, data.y_test, {})
    with pytest.raises(ValueError, match="5 images but 4 labels"):
        ood_behaviour(trained, data.x_test, data.y_test,
                      {"bad": (data.x_test[:5], data.y_test[:4])})


def test_measure_ood_trained_forwards_each_set_once_with_the_public_results(trained, data):
    """The per-model task of 06 shares one forward pass per set between the behaviour table and
    the AUROC resamples: same tables as the two public functions, a third of their passes."""
    ood = load_ood_batches(["digits", "photo_patches"], data, n=50, seed=0)
    seen = []
    hook = trained.register_forward_pre_hook(lambda _m, args: seen.append(len(args[0])))
    try:
        _, behaviour, resamples = measure_ood_trained(trained, {"seed": 1}, data=data, ood=ood,
                                                      n_points=20, n_resamples=3)
        n_task = sum(seen)
        seen.clear()
        ref_b = ood_behaviour(trained, data.x_test, data.y_test, ood)
        ref_a = ood_auroc_resamples(trained, data.x_test, ood, n_resamples=3, seed=1)
        n_public = sum(seen)
    finally:
        hook.remove()
    pd.testing.assert_frame_equal(behaviour, ref_b)
    auroc = resamples[resamples["measure"] == "auroc"]
    assert auroc["value"].tolist() == ref_a["auroc"].tolist()
    assert auroc["group"].tolist() == ref_a["dataset"].tolist()
    assert set(resamples["measure"]) == {"auroc"}  # no diagram is computed on a resample
    n_sets = len(data.x_test) + 50 + 50
    # one pass per set, plus the TopoLip clouds (20 clean + 20 per OOD set) for the per-layer
    # table
    assert n_public == 2 * n_sets and n_task == n_sets + 3 * 20


def test_ood_batches_drop_digit_labels_for_other_data():
    rng = torch.Generator().manual_seed(0)
    fake = ImageSplit("cifar10", torch.rand(20, 3, 32, 32, generator=rng), torch.arange(20) % 10,
                      torch.rand(10, 3, 32, 32, generator=rng), torch.arange(10))
    b = load_ood_batches(["digits", "inverted_mnist"], fake, n=10)
    for x, y in b.values():
        assert x.shape == (10, 3, 32, 32) and (y == -1).all()
        assert float(x.min()) >= 0 and float(x.max()) <= 1
    mnist = load_ood_batches(["digits"], load_mnist(20, 10), n=10)
    assert sorted(mnist["digits"][1].tolist()) == list(range(10))
    with pytest.raises(ValueError, match="distinct OOD sets"):
        load_ood_batches(["digits", "digits"], fake, n=3)
    with pytest.raises(ValueError, match="unknown OOD set 'svhn'"):
        load_ood_batches(["svhn"], fake, n=3)


def test_measure_ood_is_unpaired_with_defined_displacements(trained, data):
    x = data.x_test[:40]
    ood = {name: xb[:30] for name, (xb, _) in
           load_ood_batches(["digits", "inverted_mnist"], data, n=30).items()}
    t = measure_ood(trained, x, ood)
    labels = ["input", "stem", "block1", "block2", "block3", "block4", "pool"]
    assert t["layer"].tolist() == labels * 2
    assert t[["eps", "bottleneck", "envelope"]].isna().all().all()
    assert np.isfinite(t["delta"]).all() and (t["delta"] > 0).all()
    assert (t["n_clean"] == 40).all() and (t["n_ood"] == 30).all()
    assert t.loc[t["depth"] == 0, "topolip"].isna().all()
    assert np.isfinite(t.loc[t["depth"] > 0, "topolip"]).all()
    # Δ_0 is the displacement of the raw pixel clouds, and the ratios telescope
    d0 = topological_displacement(x.flatten(1).double().numpy(),
                                  ood["digits"].flatten(1).double().numpy())
    part = t[t["ood_set"] == "digits"]
    assert part["delta"].iloc[0] == pytest.approx(d0, rel=1e-9)
    assert np.prod(part["topolip"].iloc[1:]) == pytest.approx(
        part["delta"].iloc[-1] / part["delta"].iloc[0], rel=1e-9)
    acts = collect_activations(trained, ood["digits"])
    assert part["dim"].tolist() == [a.shape[1] for a in acts.values()]
    s = model_summaries(t.assign(arch="resnet", seed=0), by=("arch", "seed", "ood_set"))
    assert s["ood_set"].tolist() == ["digits", "inverted_mnist"]
    with pytest.raises(ValueError, match="like x"):
        measure_ood(trained, x, {"small": torch.rand(5, 1, 8, 8)})
    with pytest.raises(ValueError, match="at least one"):
        measure_ood(trained, x, {})


# --- sweeps ------------------------------------------------------------------------------------

def test_sweep_reuses_checkpoints_and_trains_the_base_once(tmp_path):
    data = load_mnist(n_train=120, n_test=40, seed=0)
    kwargs = dict(results_dir=tmp_path, x=data.x_test[:12], y=data.y_test[:12],
                  perturbations={"fgsm": 0.1}, seeds=[0, 1], device="cpu")
    base = {"channels": 2, "num_layers": 2}
    grid = {"num_layers": [1, 2], "channels": [2, 3]}
    config = TrainConfig(epochs=2, batch_size=60)
    first = run_sweeps({"conv_stack": {"base": base, "grid": grid}}, data, config, **kwargs)
    assert len(first) == 8  # 4 points x 2 seeds
    assert first["is_base"].tolist() == [False, False, True, True, True, True, False, False]
    # the base model (num_layers=2, channels=2) is one checkpoint per seed, trained once
    assert first["checkpoint"].nunique() == 6
    assert len(list((tmp_path / "models").glob("*.pt"))) == 6
    trained_now = first.drop_duplicates("checkpoint")["resumed_from_epoch"]
    assert (trained_now == 0).all()
    base_rows = first[first["is_base"]]
    assert (base_rows.groupby("seed")["resumed_from_epoch"].max() == config.epochs).all()
    assert first["n_layers"].tolist() == [2, 2, 3, 3, 3, 3, 3, 3]
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
    kwargs = dict(x=data.x_test[:10], y=data.y_test[:10], perturbations={"gaussian_noise": 2},
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
                   TrainConfig(epochs=1), results_dir=tmp_path, x=data.x_test, y=data.y_test,
                   perturbations={"fgsm": 0.1})
    assert not (tmp_path / "models").exists(), "nothing was trained before the bad point"
    with pytest.raises(ValueError, match="non-empty .kind: strength. mapping"):
        run_sweeps({"vit": {"base": {}, "grid": {"num_layers": [1]}}}, data,
                   TrainConfig(epochs=1), results_dir=tmp_path, x=data.x_test, y=data.y_test,
                   perturbations={})
    with pytest.raises(ValueError, match=r"unknown perturbation\(s\) \['blur'\]"):
        run_sweeps({"vit": {"base": {}, "grid": {"num_layers": [1]}}}, data,
                   TrainConfig(epochs=1), results_dir=tmp_path, x=data.x_test, y=data.y_test,
                   perturbations={"fgsm": 0.1, "blur": 1})


# --- figures -----------------------------------------------------------------------------------

def _png(fig) -> bytes:
    """``fig`` as PNG bytes without time stamps or version strings."""
    import io

    buf = io.BytesIO()
    fig.savefig(buf, format="png", dpi=120, metadata={"Software": None}, bbox_inches="tight")
    return buf.getvalue()


def test_figures_draw_from_tables_and_are_byte_stable(trained, data):
    import matplotlib.pyplot as plt

    x, y = data.x_test[:30], data.y_test[:30]
    curves = robustness_curves(trained, x, y, {"fgsm": [0.0, 0.1], "contrast": [0, 3]})
    m = measure_model(trained, x, y, {"fgsm": 0.1, "contrast": 3}, TopoLipSpec(),
                      baseline_measures=False)
    curves2, topo2, summary2 = [], [], []
    for seed in (0, 1):
        curves2.append(curves.assign(arch="resnet", seed=seed))
        topo2.append(m.layers.assign(arch="resnet", seed=seed))
        summary2.append(m.summary.assign(arch="resnet", seed=seed))
    curves, topo, summary = pd.concat(curves2), pd.concat(topo2), pd.concat(summary2)
    ood = ood_behaviour(trained, x, y, load_ood_batches(["digits"], data, n=20)).assign(
        arch="resnet", seed=0)
    sweep = pd.DataFrame({"arch": ["vit"] * 3, "parameter": ["num_layers"] * 3,
                          "value": ["1", "2", "4"], "value_numeric": [1.0, 2.0, 4.0],
                          "seed": [0] * 3, "test_accuracy": [0.7, 0.8, 0.9],
                          "geometric_mean": [1.1, 1.2, 1.3],
                          "geometric_mean_scale_free": [0.9, 1.0, 1.1]})
    for name, draw in {"curves": lambda: plot_accuracy_curves(curves),
                       "scatter": lambda: plot_topolip_vs_accuracy(summary),
                       "sweep": lambda: plot_sweep(sweep, "vit"),
                       "ood": lambda: plot_ood_behaviour(ood),
                       "layers": lambda: plot_topolip_by_layer(topo)}.items():
        images = []
        for _ in range(2):
            fig = draw()
            images.append(_png(fig))
            plt.close(fig)
        assert images[0] == images[1], name
    with pytest.raises(ValueError, match="no sweep rows for arch 'resnet'"):
        plot_sweep(sweep, "resnet")
    with pytest.raises(ValueError, match=r"lacks column\(s\) \['unit'\]"):
        plot_accuracy_curves(curves.drop(columns="unit"))
    with pytest.raises(ValueError, match="empty"):
        plot_ood_behaviour(ood.head(0))


def test_ood_table_draws_by_set_without_strength(trained, data):
    import matplotlib.pyplot as plt

    ood = {"digits": load_ood_batches(["digits"], data, n=20)["digits"][0]}
    t = measure_ood(trained, data.x_test[:20], ood).assign(arch="resnet", seed=0)
    fig = plot_topolip_by_layer(t, row="ood_set")
    assert fig.axes[0].get_title() == "digits: raw"
    plt.close(fig)


def test_models_never_left_in_train_mode():
    model = nn.Sequential(nn.Flatten(), nn.Linear(4, 3), nn.Dropout(0.5))
    model.train()
    x, y = torch.rand(6, 1, 2, 2), torch.arange(6) % 3
    robustness_curves(model, x, y, {"fgsm": [0.1]})
    max_softmax(model, x)
    assert model.training and model[2].training
