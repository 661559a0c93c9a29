"""Training: seeded, resumable after an interruption (bit for bit), checkpoints atomic."""

import pytest
import torch

from topolip.data import load_mnist
from topolip.train import ModelSpec, TrainConfig, checkpoint_path, fit, load_trained

SPEC = ModelSpec("resnet", {"width": 4})
CONFIG = TrainConfig(epochs=3, batch_size=32, lr=3e-3, seed=1)


class Interrupt(Exception):
    pass


@pytest.fixture(scope="module")
def data():
    return load_mnist(n_train=160, n_test=60, seed=0)


def test_resume_after_interruption_equals_uninterrupted(tmp_path, data):
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
