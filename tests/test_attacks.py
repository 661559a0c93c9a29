"""FGSM and PGD wrappers and the perturbation dispatcher."""

from __future__ import annotations

import copy

import pytest
import torch
import torch.nn.functional as F
from torch import nn

from topolip.attacks import ATTACKS, PERTURBATIONS, fgsm, perturb, pgd, random_sign
from topolip.corruptions import CORRUPTIONS

TOL = 1e-6  # float32 rounding of x + eps * sign


@pytest.fixture(scope="module")
def trained():
    """A small MLP trained on 500 embedded MNIST digits (a second or two), and 300 test digits."""
    from topolip.data import load_mnist

    d = load_mnist(n_train=500, n_test=300, seed=0)
    torch.manual_seed(0)
    model = nn.Sequential(nn.Flatten(), nn.Linear(784, 32), nn.ReLU(), nn.Dropout(0.1),
                          nn.Linear(32, 10))
    opt = torch.optim.Adam(model.parameters(), lr=1e-2)
    for _ in range(60):
        opt.zero_grad()
        F.cross_entropy(model(d.x_train), d.y_train).backward()
        opt.step()
    model.eval()
    return model, d.x_test, d.y_test


def _accuracy(model, x, y) -> float:
    with torch.no_grad():
        return float((model(x).argmax(1) == y).float().mean())


def test_model_is_trained(trained):
    model, x, y = trained
    assert _accuracy(model, x, y) > 0.8


@pytest.mark.parametrize("attack", [fgsm, pgd])
def test_eps_zero_returns_inputs_unchanged(trained, attack):
    model, x, y = trained
    out = attack(model, x, y, 0.0)
    assert torch.equal(out, x) and out.data_ptr() != x.data_ptr()


@pytest.mark.parametrize("eps", [0.01, 0.1, 0.3])
def test_within_eps_and_pixel_range(trained, eps):
    model, x, y = trained
    for adv in (fgsm(model, x, y, eps), pgd(model, x, y, eps, steps=5, seed=0),
                pgd(model, x, y, eps, steps=5, random_start=False), random_sign(x, eps)):
        assert adv.shape == x.shape and adv.dtype == x.dtype
        assert float((adv - x).abs().max()) <= eps + TOL
        assert float(adv.min()) >= 0.0 and float(adv.max()) <= 1.0


def test_fgsm_moves_unclipped_pixels_by_exactly_eps(trained):
    model, x, y = trained
    eps = 0.05
    delta = fgsm(model, x, y, eps) - x
    inside = (x >= eps) & (x <= 1 - eps)  # pixels the clamp cannot touch
    moved = delta[inside].abs()
    assert torch.allclose(moved[moved > 0], torch.tensor(eps), atol=TOL)


@pytest.mark.parametrize("eps", [0.05, 0.1])
def test_attacks_hurt_and_pgd_at_least_as_strong_as_fgsm(trained, eps):
    model, x, y = trained
    clean = _accuracy(model, x, y)
    acc_fgsm = _accuracy(model, fgsm(model, x, y, eps), y)
    acc_pgd = _accuracy(model, pgd(model, x, y, eps, steps=10, seed=0), y)
    acc_random = _accuracy(model, random_sign(x, eps, seed=0), y)
    assert acc_pgd <= acc_fgsm < clean
    assert acc_fgsm < acc_random  # adversarial beats random at the same L-inf size


def test_pgd_deterministic_by_seed_and_rng_untouched(trained):
    model, x, y = trained
    state = torch.get_rng_state()
    a = pgd(model, x, y, 0.1, steps=3, seed=5)
    assert torch.equal(state, torch.get_rng_state())
    assert torch.equal(a, pgd(model, x, y, 0.1, steps=3, seed=5))
    assert not torch.equal(a, pgd(model, x, y, 0.1, steps=3, seed=6))
    no_start = pgd(model, x, y, 0.1, steps=3, random_start=False, seed=1)
    assert torch.equal(no_start, pgd(model, x, y, 0.1, steps=3, random_start=False, seed=2))


def test_fgsm_independent_of_batch_size(trained):
    model, x, y = trained
    a, b = fgsm(model, x, y, 0.1, batch_size=7), fgsm(model, x, y, 0.1, batch_size=1000)
    assert float((a == b).float().mean()) > 0.999  # only float ties in the gradient sign differ


def test_model_modes_restored(trained):
    model, x, y = trained
    model.train()
    model[3].eval()  # a mixed state: one submodule in eval
    try:
        fgsm(model, x[:10], y[:10], 0.1)
        pgd(model, x[:10], y[:10], 0.1, steps=2)
        assert model.training and model[1].training and not model[3].training
    finally:
        model.eval()


def test_attack_runs_in_eval_mode(trained):
    model, x, y = trained
    model.train()  # dropout on: train-mode gradients would differ from run to run
    try:
        a = fgsm(model, x, y, 0.1)
        b = fgsm(model, x, y, 0.1)
        assert torch.equal(a, b)
        model.eval()
        assert torch.equal(a, fgsm(model, x, y, 0.1))
    finally:
        model.eval()


def test_mode_restored_when_the_model_raises():
    class Fails(nn.Module):
        def __init__(self):
            super().__init__()
            self.lin = nn.Linear(4, 2)

        def forward(self, x):
            if x.requires_grad:  # the attack's pass, not the validation pass
                raise RuntimeError("boom")
            return self.lin(x.flatten(1))

    model = Fails().train()
    with pytest.raises(RuntimeError, match="boom"):
        fgsm(model, torch.rand(3, 1, 2, 2), torch.tensor([0, 1, 0]), 0.1)
    assert model.training and model.lin.training


def test_works_under_no_grad(trained):
    model, x, y = trained
    with torch.no_grad():
        adv = fgsm(model, x[:20], y[:20], 0.1)
    assert float((adv - x[:20]).abs().max()) > 0.05


@pytest.mark.parametrize("eps,match", [
    (-0.1, "eps must be >= 0"),
    (float("nan"), "finite number"),
    (float("inf"), "finite number"),
    (8, "exceeds 1.*8/255"),
    ("0.1", "finite number"),
    (True, "finite number"),
])
def test_bad_eps_raises(trained, eps, match):
    model, x, y = trained
    for call in (lambda: fgsm(model, x, y, eps), lambda: pgd(model, x, y, eps),
                 lambda: random_sign(x, eps)):
        with pytest.raises(ValueError, match=match):
            call()


def test_bad_inputs_raise(trained):
    model, x, y = trained
    nan = x.clone()
    nan[0, 0, 0, 0] = float("nan")
    cases = [
        ((model, nan, y), "NaN"),
        ((model, x * 255, y), r"outside \[0, 1\]"),
        ((model, x - 0.5, y), r"outside \[0, 1\]"),
        ((model, x[0], y), r"\(N, C, H, W\)"),
        ((model, x[:0], y[:0]), "non-empty"),
        ((model, (x * 255).to(torch.uint8), y), "floating"),
        ((model, x, y[:-1]), "300 images but y has 299 labels"),
        ((model, x, y.float()), "integer tensor of labels"),
        ((model, x, y + 10), r"labels must be in 0\.\.9"),
        ((model, x.expand(-1, 3, -1, -1), y), r"cannot take images of shape \(3, 28, 28\)"),
        ((model, x[:, :, :20, :20], y), r"cannot take images of shape \(1, 20, 20\)"),
        ((nn.Flatten(), x, y), "no parameters"),
    ]
    for args, match in cases:
        with pytest.raises(ValueError, match=match):
            fgsm(*args, eps=0.1)


@pytest.mark.parametrize("kwargs,match", [
    (dict(alpha=0.0), "alpha"), (dict(alpha=float("nan")), "alpha"),
    (dict(steps=0), "steps must be a positive integer"), (dict(batch_size=0), "batch_size"),
])
def test_bad_pgd_options_raise(trained, kwargs, match):
    model, x, y = trained
    with pytest.raises(ValueError, match=match):
        pgd(model, x, y, 0.1, **kwargs)


@pytest.mark.parametrize("kind", list(PERTURBATIONS))
def test_perturb_dispatches_every_kind(trained, kind):
    model, x, y = trained
    x, y = x[:16], y[:16]
    if PERTURBATIONS[kind] == "eps":
        out = perturb(kind, model, x, y, eps=0.1, seed=1)
        assert float((out - x).abs().max()) <= 0.1 + TOL
        assert torch.equal(perturb(kind, model, x, y, eps=0.0, seed=1), x)
    else:
        out = perturb(kind, None, x, None, severity=3, seed=1)
        assert torch.equal(perturb(kind, None, x, None, severity=0), x)
    assert out.shape == x.shape and float(out.min()) >= 0 and float(out.max()) <= 1
    assert not torch.equal(out, x)


def test_perturb_passes_options_and_seed(trained):
    model, x, y = trained
    x, y = x[:16], y[:16]
    assert torch.equal(perturb("pgd", model, x, y, eps=0.1, seed=3, steps=2, alpha=0.05),
                       pgd(model, x, y, 0.1, seed=3, steps=2, alpha=0.05))
    assert set(PERTURBATIONS) == {*ATTACKS, "random_sign", *CORRUPTIONS}


@pytest.mark.parametrize("args,kwargs,match", [
    (("blur",), dict(severity=1), "unknown perturbation 'blur'"),
    (("fgsm",), dict(), r"needs eps=\.\.\."),
    (("fgsm",), dict(severity=2), r"takes eps=\.\.\., not severity"),
    (("contrast",), dict(eps=0.1), r"takes severity=\.\.\., not eps"),
    (("contrast",), dict(severity=1, steps=3), r"takes no option\(s\) \['steps'\]"),
    (("fgsm",), dict(eps=0.1, steps=3), r"takes no option\(s\) \['steps'\]"),
])
def test_perturb_bad_calls_raise(trained, args, kwargs, match):
    model, x, y = trained
    with pytest.raises(ValueError, match=match):
        perturb(*args, model, x[:4], y[:4], **kwargs)


def test_perturb_attack_needs_model_and_labels(trained):
    _, x, y = trained
    with pytest.raises(ValueError, match="needs the model and the labels"):
        perturb("pgd", None, x, y, eps=0.1)


@pytest.mark.gpu
@pytest.mark.skipif(not torch.cuda.is_available(), reason="needs a CUDA device")
def test_cuda_model_cpu_inputs(trained):
    model, x, y = trained
    cuda_model = copy.deepcopy(model).to("cuda")
    adv = pgd(cuda_model, x, y, 0.1, steps=5, seed=0)
    assert adv.device == x.device
    assert float((adv - x).abs().max()) <= 0.1 + TOL
    assert torch.equal(adv, pgd(cuda_model, x, y, 0.1, steps=5, seed=0))
    on_gpu = fgsm(cuda_model, x.cuda(), y.cuda(), 0.1)
    assert on_gpu.device.type == "cuda"
    assert float((on_gpu.cpu() - fgsm(model, x, y, 0.1) != 0).float().mean()) < 0.01
