"""Training: seeded, resumable after an interruption (bit for bit), checkpoints atomic."""

import math
import subprocess
import sys

import pytest
import torch

from topolip.nets.checkpoints import checkpoint_path
from topolip.nets.data.mnist import load_mnist
from topolip.nets.run_spec import ModelSpec, TrainConfig
from topolip.nets.train import accuracy, fit, load_trained, validation_split

SPEC = ModelSpec("resnet", {"width": 4})
CONFIG = TrainConfig(epochs=3, batch_size=32, lr=3e-3, seed=1)
# the quick profile's recipe, small: validation split, warm-up, affine augmentation
RECIPE = TrainConfig(epochs=3, batch_size=32, lr=3e-3, seed=1, val_size=40, warmup=0.3,
                     rotate=10, translate=0.1, scale=0.1)


class Interrupt(Exception):
    pass


@pytest.fixture(scope="module")
def data():
    return load_mnist(n_train=160, n_test=60, seed=0)


@pytest.mark.parametrize("CONFIG", [CONFIG, RECIPE], ids=["plain", "recipe"])
def test_resume_after_interruption_equals_uninterrupted(tmp_path, data, CONFIG):
    reference = fit(SPEC, data, CONFIG, device="cpu", progress=False)

    ckpt = checkpoint_path(tmp_path, SPEC, CONFIG, data)

    def stop_after_two(epoch):
        if epoch == 2:
            raise Interrupt

    with pytest.raises(Interrupt):
        fit(SPEC, data, CONFIG, checkpoint=ckpt, device="cpu", progress=False,
            on_epoch_end=stop_after_two)
    assert ckpt.exists() and not list(ckpt.parent.glob("*.tmp"))
    with pytest.raises(ValueError, match="unfinished run"):
        load_trained(ckpt)
    resumed = fit(SPEC, data, CONFIG, checkpoint=ckpt, device="cpu", progress=False)
    assert resumed.resumed_from_epoch == 2
    for (name, a), b in zip(reference.model.state_dict().items(),
                            resumed.model.state_dict().values(), strict=True):
        assert torch.equal(a, b), name
    assert resumed.test_accuracy == reference.test_accuracy
    assert [h["loss"] for h in resumed.history] == [h["loss"] for h in reference.history]
    loaded = load_trained(ckpt, device="cpu")
    assert loaded.test_accuracy == reference.test_accuracy and not loaded.model.training
    assert (loaded.train_accuracy, loaded.val_accuracy, loaded.best_epoch) == (
        reference.train_accuracy, reference.val_accuracy, reference.best_epoch)
    # a finished checkpoint is reused without training
    again = fit(SPEC, data, CONFIG, checkpoint=ckpt, device="cpu", progress=False)
    assert again.resumed_from_epoch == CONFIG.epochs


def test_training_learns():
    data = load_mnist(n_train=600, n_test=100, seed=0)
    result = fit(SPEC, data, TrainConfig(epochs=3, batch_size=32, lr=3e-3), device="cpu",
                 progress=False)
    assert result.history[-1]["loss"] < result.history[0]["loss"]
    assert result.test_accuracy > 0.3  # chance is 0.1


def test_checkpoint_names_depend_on_every_input(tmp_path, data):
    base = checkpoint_path(tmp_path, SPEC, CONFIG, data)
    assert base == checkpoint_path(tmp_path, ModelSpec("resnet", {"width": 4}), CONFIG, data)
    assert base != checkpoint_path(tmp_path, ModelSpec("resnet", {"width": 8}), CONFIG, data)
    assert base != checkpoint_path(tmp_path, SPEC, TrainConfig(epochs=4, batch_size=32,
                                                               lr=3e-3, seed=1), data)
    assert base != checkpoint_path(tmp_path, SPEC, CONFIG, load_mnist(160, 60, seed=1))


def test_foreign_or_bad_checkpoint_and_config_errors(tmp_path, data):
    ckpt = tmp_path / "m.pt"
    fit(SPEC, data, TrainConfig(epochs=1, batch_size=64), checkpoint=ckpt, device="cpu",
        progress=False)
    with pytest.raises(ValueError, match="belongs to another run"):
        fit(SPEC, data, TrainConfig(epochs=2, batch_size=64), checkpoint=ckpt, device="cpu",
            progress=False)
    (tmp_path / "junk.pt").write_bytes(b"not a checkpoint")
    with pytest.raises(ValueError, match="cannot read checkpoint"):
        load_trained(tmp_path / "junk.pt")
    with pytest.raises(FileNotFoundError, match="run the train notebook"):
        load_trained(tmp_path / "missing.pt")
    with pytest.raises(ValueError, match="epochs must be a positive integer"):
        TrainConfig(epochs=0)
    with pytest.raises(ValueError, match="lr must be a positive"):
        TrainConfig(lr=float("nan"))


# --- issue 13: channels_last, threads, evaluation batch size ------------------------------------

def test_channels_last_training_matches_contiguous_up_to_rounding():
    from topolip.nets.train import _uses_channels_last, prefers_channels_last

    data = load_mnist(n_train=128, n_test=64, seed=0)
    spec = ModelSpec("conv_stack", {"num_layers": 3, "channels": 8, "kernel_size": 3})
    config = TrainConfig(epochs=1, batch_size=64, lr=1e-3)
    a = fit(spec, data, config, device="cpu", progress=False, channels_last=False)
    b = fit(spec, data, config, device="cpu", progress=False, channels_last=True)
    assert prefers_channels_last("conv_stack", "cpu")
    assert not prefers_channels_last("resnet", "cpu") and not prefers_channels_last("vit", "cpu")
    assert not _uses_channels_last(a.model) and _uses_channels_last(b.model)
    assert b.history[0]["loss"] == pytest.approx(a.history[0]["loss"], rel=1e-4)
    x, y = data.x_test, data.y_test
    assert accuracy(b.model, x, y) == accuracy(b.model, x, y, batch_size=7)
    # one forward and backward pass: equal up to float32 rounding
    torch.manual_seed(0)
    m1 = spec.build()
    m2 = spec.build()
    m2.load_state_dict(m1.state_dict())
    m2 = m2.to(memory_format=torch.channels_last)
    xb, yb = data.x_train[:32], data.y_train[:32]
    loss1 = torch.nn.functional.cross_entropy(m1(xb), yb)
    loss2 = torch.nn.functional.cross_entropy(
        m2(xb.contiguous(memory_format=torch.channels_last)), yb)
    loss1.backward()
    loss2.backward()
    assert loss2.item() == pytest.approx(loss1.item(), rel=1e-6)
    for (name, p1), p2 in zip(m1.named_parameters(), m2.parameters(), strict=True):
        err = float(torch.linalg.norm(p2.grad - p1.grad) / torch.linalg.norm(p1.grad))
        assert err < 2e-5, (name, err)


def test_configure_threads_sets_and_restores():
    from topolip.nets.train import configure_threads

    default = torch.get_num_threads()
    try:
        assert configure_threads(1) == 1 == torch.get_num_threads()
        assert configure_threads(None) >= 1
        for bad in (0, -1, 1.5, True, "2"):
            with pytest.raises(ValueError, match="n must be None or a positive int"):
                configure_threads(bad)
    finally:
        torch.set_num_threads(default)


def test_history_records_the_threads_each_epoch_ran_with(tmp_path, data):
    """Threads change the weights at float32 rounding, so each epoch records them, and a
    resumed run keeps the threads of the epochs it did not retrain."""
    from topolip.nets.train import configure_threads

    default = torch.get_num_threads()
    ckpt = checkpoint_path(tmp_path, SPEC, CONFIG, data)

    def stop_after_one(epoch):
        if epoch == 1:
            raise Interrupt

    try:
        configure_threads(1)
        with pytest.raises(Interrupt):
            fit(SPEC, data, CONFIG, checkpoint=ckpt, device="cpu", progress=False,
                on_epoch_end=stop_after_one)
        configure_threads(2)
        result = fit(SPEC, data, CONFIG, checkpoint=ckpt, device="cpu", progress=False)
    finally:
        torch.set_num_threads(default)
    assert [h["threads"] for h in result.history] == [1] + [2] * (CONFIG.epochs - 1)
    assert [h["threads"] for h in load_trained(ckpt).history] == [1] + [2] * (CONFIG.epochs - 1)


def test_validation_split_is_fixed_disjoint_and_complete():
    fit_idx, val = validation_split(100, 20)
    assert len(val) == 20 and len(fit_idx) == 80
    assert set(fit_idx.tolist()).isdisjoint(val.tolist())
    assert sorted(fit_idx.tolist() + val.tolist()) == list(range(100))
    again_fit, again_val = validation_split(100, 20)
    assert torch.equal(val, again_val) and torch.equal(fit_idx, again_fit)
    assert len(validation_split(100, 0)[1]) == 0
    for bad in (-1, 100, 2.5, True):
        with pytest.raises(ValueError, match="val_size"):
            validation_split(100, bad)


def test_the_kept_epoch_is_the_best_on_validation(data):
    result = fit(SPEC, data, RECIPE, device="cpu", progress=False)
    val = [h["val_accuracy"] for h in result.history]
    best = max(val)
    # the highest validation accuracy, the later epoch on a tie
    assert result.best_epoch == max(i + 1 for i, v in enumerate(val) if v == best)
    assert result.val_accuracy == best
    fit_idx, val_idx = validation_split(len(data.y_train), RECIPE.val_size)
    assert accuracy(result.model, data.x_train[val_idx], data.y_train[val_idx]) == best
    assert accuracy(result.model, data.x_train[fit_idx], data.y_train[fit_idx]) == \
        result.train_accuracy
    assert accuracy(result.model, data.x_test, data.y_test) == result.test_accuracy
    plain = fit(SPEC, data, CONFIG, device="cpu", progress=False)
    assert plain.val_accuracy is None and plain.best_epoch == CONFIG.epochs
    assert all(h["val_accuracy"] is None for h in plain.history)


def test_warm_up_then_cosine_decay(data):
    config = TrainConfig(epochs=4, batch_size=32, lr=1e-2, warmup=0.25, seed=0)
    lrs = [h["lr"] for h in fit(SPEC, data, config, device="cpu", progress=False).history]
    # 160 images, batches of 32: 5 steps an epoch, 20 in all, 5 of warm-up
    # after the 5 warm-up steps the peak, then the cosine over the other 15
    assert lrs[0] == pytest.approx(1e-2)
    assert lrs[1] == pytest.approx(1e-2 * 0.5 * (1 + math.cos(math.pi * 5 / 15)))
    assert lrs == sorted(lrs, reverse=True) and lrs[-1] == pytest.approx(0.0, abs=1e-12)
    no_warmup = TrainConfig(epochs=4, batch_size=32, lr=1e-2, seed=0)
    first = fit(SPEC, data, no_warmup, device="cpu", progress=False).history[0]["lr"]
    assert first == pytest.approx(1e-2 * 0.5 * (1 + math.cos(math.pi * 5 / 20)))


def test_augmentation_is_seeded_and_changes_the_training(data):
    a = fit(SPEC, data, RECIPE, device="cpu", progress=False)
    b = fit(SPEC, data, RECIPE, device="cpu", progress=False)
    assert [h["loss"] for h in a.history] == [h["loss"] for h in b.history]
    still = TrainConfig(**{**RECIPE.__dict__, "rotate": 0.0, "translate": 0.0, "scale": 0.0})
    c = fit(SPEC, data, still, device="cpu", progress=False)
    assert [h["loss"] for h in a.history] != [h["loss"] for h in c.history]


@pytest.mark.parametrize("field, value", [("val_size", -1), ("warmup", 0.6), ("warmup", -0.1),
                                          ("rotate", 200), ("translate", 0.7), ("scale", -0.1),
                                          ("rotate", float("nan"))])
def test_recipe_fields_are_checked(field, value):
    with pytest.raises(ValueError, match=f"TrainConfig: {field}"):
        TrainConfig(**{field: value})


def test_kept_epochs_hold_each_epochs_weights_and_survive_a_resume(tmp_path, data):
    from topolip.nets.checkpoints import epoch_path, load_weights, read_epoch

    ckpt = checkpoint_path(tmp_path, SPEC, RECIPE, data)

    def stop_after_two(epoch):
        if epoch == 2:
            raise Interrupt

    with pytest.raises(Interrupt):
        fit(SPEC, data, RECIPE, checkpoint=ckpt, device="cpu", progress=False,
            keep_epochs=True, on_epoch_end=stop_after_two)
    assert [epoch_path(ckpt, e).exists() for e in (1, 2, 3)] == [True, True, False]
    # a writer killed while keeping epoch 3 left its temporary: the resume removes it
    dead = subprocess.run([sys.executable, "-c", "import os; print(os.getpid())"],
                          capture_output=True, text=True, check=True)
    left = epoch_path(ckpt, 3).with_name(f".epoch-003.pt.{int(dead.stdout)}.ab12cd34.tmp")
    left.write_bytes(b"half")
    result = fit(SPEC, data, RECIPE, checkpoint=ckpt, device="cpu", progress=False,
                 keep_epochs=True)
    assert result.resumed_from_epoch == 2
    _, val_idx = validation_split(len(data.y_train), RECIPE.val_size)
    model = SPEC.build()
    for h in result.history:  # each kept epoch is that epoch's model: its validation accuracy
        state = read_epoch(ckpt, h["epoch"])
        assert state["val_accuracy"] == h["val_accuracy"]
        load_weights(epoch_path(ckpt, h["epoch"]), model, state["model"])
        assert accuracy(model, data.x_train[val_idx], data.y_train[val_idx]) == h["val_accuracy"]
    chosen = read_epoch(ckpt, result.best_epoch)["model"]
    for name, t in result.model.state_dict().items():  # the chosen epoch is one of them
        assert torch.equal(chosen[name], t), name
    assert not left.exists() and not list(left.parent.glob("*.tmp"))
    with pytest.raises(FileNotFoundError, match="no weights of epoch 4"):
        read_epoch(ckpt, 4)
    path = epoch_path(ckpt, 1)
    blob = bytearray(path.read_bytes())
    blob[len(blob) // 2] ^= 0xFF
    path.write_bytes(bytes(blob))
    with pytest.raises(ValueError, match="epoch-001.pt"):
        read_epoch(ckpt, 1)
    with pytest.raises(ValueError, match="keep_epochs needs a checkpoint"):
        fit(SPEC, data, RECIPE, device="cpu", progress=False, keep_epochs=True)
