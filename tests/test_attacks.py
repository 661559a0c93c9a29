"""The attack ladder (FGSM, PGD, autoattack), Square, and the perturbation dispatcher."""

from __future__ import annotations

import copy

import pytest
import torch
import torch.nn.functional as F
from torch import nn

from topolip.perturbations.attacks import (
    ATTACKS,
    PERTURBATIONS,
    autoattack,
    fgsm,
    perturb,
    pgd,
    random_sign,
    square,
)
from topolip.perturbations.corruptions import CORRUPTIONS
from topolip.roster import LADDER

TOL = 1e-6  # float32 rounding of x + eps * sign


@pytest.fixture(scope="module")
def trained():
    """A small MLP trained on 500 embedded MNIST digits (a second or two), and 300 test digits."""
    from topolip.nets.data.mnist import load_mnist

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
        cheap = {"autoattack": {"steps": 10, "n_target_classes": 3},
                 "square": {"n_queries": 200}}.get(kind, {})
        out = perturb(kind, model, x, y, eps=0.1, seed=1, **cheap)
        assert float((out - x).abs().max()) <= 0.1 + TOL
        assert torch.equal(perturb(kind, model, x, y, eps=0.0, seed=1, **cheap), x)
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
    for attack, kw in ((autoattack, dict(steps=10, n_target_classes=3)),
                       (square, dict(n_queries=50)), (pgd, dict(steps=5, restarts=2))):
        adv = attack(cuda_model, x, y, 0.1, seed=1, **kw)
        assert adv.device == x.device and float((adv - x).abs().max()) <= 0.1 + TOL
        assert torch.equal(adv, attack(cuda_model, x, y, 0.1, seed=1, **kw))


# ------------------------------------------------------------------ the ladder: values, not smoke

def _linear(n_classes: int, seed: int = 0) -> nn.Module:
    torch.manual_seed(seed)
    model = nn.Sequential(nn.Flatten(), nn.Linear(16, n_classes))
    with torch.no_grad():
        model[1].weight.normal_()
        model[1].bias.zero_()
    return model.eval()


def _interior_images(n: int, eps: float, seed: int = 0) -> torch.Tensor:
    """Pixels in [eps, 1 - eps]: the [0, 1] clip cannot bind inside the eps ball."""
    gen = torch.Generator().manual_seed(seed)
    return eps + (1 - 2 * eps) * torch.rand(n, 1, 4, 4, generator=gen)


def _exact_robust(model: nn.Module, x: torch.Tensor, y: torch.Tensor, eps: float) -> torch.Tensor:
    """Robust in the L-inf ball of a linear model, box not binding: for every wrong class j,
    z_y - z_j > eps * ||w_y - w_j||_1 (the worst case moves each pixel by eps against w_y - w_j)."""
    w, b = model[1].weight.detach(), model[1].bias.detach()
    z = x.flatten(1) @ w.T + b
    margin = z.gather(1, y[:, None]) - z                      # (N, K), z_y - z_j
    l1 = (w[y][:, None, :] - w[None, :, :]).abs().sum(-1)      # (N, K), ||w_y - w_j||_1
    slack = margin - eps * l1
    slack[torch.arange(len(y)), y] = float("inf")
    return (slack > 0).all(1)


def test_fgsm_on_a_binary_linear_model_is_the_exact_worst_case():
    # two classes: the CE gradient's sign is -sign(w_y - w_other) in every pixel, so FGSM moves
    # the logit margin by exactly eps * ||w_y - w_other||_1, the L-inf optimum
    eps = 0.05
    model = _linear(2)
    x = _interior_images(400, eps)
    y = model(x).argmax(1)                                     # clean accuracy 1
    w = model[1].weight.detach()
    margin = lambda imgs: (model(imgs) @ torch.tensor([1.0, -1.0]))  # noqa: E731
    sign = 1 - 2 * y.float()                                   # +1 for class 0, -1 for class 1
    adv = fgsm(model, x, y, eps)
    moved = (margin(x) - margin(adv)) * sign
    assert torch.allclose(moved, torch.full_like(moved, eps * float((w[0] - w[1]).abs().sum())),
                          atol=1e-4)
    robust = _exact_robust(model, x, y, eps)
    assert 0.2 < float(robust.float().mean()) < 0.95            # the case is not trivial
    assert torch.equal(model(adv).argmax(1) == y, robust)


def test_autoattack_reaches_the_exact_robust_accuracy_of_a_linear_model():
    # four classes and three targets (every wrong class): APGD-T against the class j that
    # violates z_y - z_j > eps ||w_y - w_j||_1 finds it; no attack can go below the exact value
    eps = 0.05
    model = _linear(4, seed=1)
    x = _interior_images(300, eps, seed=1)
    y = model(x).argmax(1)
    exact = float(_exact_robust(model, x, y, eps).float().mean())
    acc = {name: _accuracy(model, adv, y) for name, adv in (
        ("fgsm", fgsm(model, x, y, eps)),
        ("pgd", pgd(model, x, y, eps, steps=20, restarts=2, seed=0)),
        ("autoattack", autoattack(model, x, y, eps, steps=20, n_target_classes=3, seed=0)))}
    assert 0.2 < exact < 0.9
    assert acc["autoattack"] == pytest.approx(exact, abs=1 / 300)
    assert exact - 1e-9 <= acc["autoattack"] <= acc["pgd"] <= acc["fgsm"]


def test_the_ladder_orders_the_attacks_on_a_trained_model(trained):
    model, x, y = trained
    for eps in (0.05, 0.1):
        acc = [_accuracy(model, adv, y) for adv in (
            fgsm(model, x, y, eps),
            pgd(model, x, y, eps, steps=20, restarts=2, seed=0),
            autoattack(model, x, y, eps, steps=20, n_target_classes=3, seed=0))]
        assert acc[2] <= acc[1] <= acc[0] < _accuracy(model, x, y), (eps, acc)
    assert LADDER == ("fgsm", "pgd", "autoattack") and set(LADDER) < set(ATTACKS)


def test_square_is_black_box_and_not_stronger_than_autoattack(trained):
    model, x, y = trained
    x, y = x[:100], y[:100]
    acc_sq = _accuracy(model, square(model, x, y, 0.1, n_queries=300, seed=0), y)
    acc_aa = _accuracy(model, autoattack(model, x, y, 0.1, steps=20, n_target_classes=3), y)
    assert acc_aa <= acc_sq < _accuracy(model, x, y)
    # it never asks for a gradient: it runs with the parameters frozen and inputs without grad
    frozen = copy.deepcopy(model).requires_grad_(False)
    with torch.no_grad():
        adv = square(frozen, x[:10], y[:10], 0.1, n_queries=50, seed=0)
    assert float((adv - x[:10]).abs().max()) <= 0.1 + TOL


def test_pgd_restarts_keep_the_per_image_worst_case(trained):
    model, x, y = trained
    eps = 0.05  # 3 steps: short enough for the random start to matter (158 -> 160 fooled)
    one = pgd(model, x, y, eps, steps=3, seed=4, batch_size=512)
    three = pgd(model, x, y, eps, steps=3, restarts=3, seed=4, batch_size=512)
    fooled_one = model(one).argmax(1) != y
    fooled_three = model(three).argmax(1) != y
    # the first restart is the single run (same draws); later ones only add fooled images
    assert bool((fooled_one <= fooled_three).all())
    assert int(fooled_three.sum()) > int(fooled_one.sum())
    assert float((three - x).abs().max()) <= eps + TOL


@pytest.mark.parametrize("attack,kwargs", [
    (pgd, dict(steps=3, restarts=2)),
    (autoattack, dict(steps=5, n_target_classes=2)),
    (square, dict(n_queries=30)),
])
def test_seeded_attacks_are_deterministic_and_leave_the_rng_alone(trained, attack, kwargs):
    model, x, y = trained
    x, y = x[:40], y[:40]
    state = torch.get_rng_state()
    a = attack(model, x, y, 0.1, seed=3, **kwargs)
    assert torch.equal(state, torch.get_rng_state())
    assert torch.equal(a, attack(model, x, y, 0.1, seed=3, **kwargs))
    assert torch.equal(attack(model, x, y, 0.0, seed=3, **kwargs), x)


@pytest.mark.parametrize("call,match", [
    (lambda m, x, y: autoattack(m, x, y, -0.1), "eps must be >= 0"),
    (lambda m, x, y: square(m, x, y, -0.1), "eps must be >= 0"),
    (lambda m, x, y: pgd(m, x, y, 0.1, restarts=0), "restarts must be a positive integer"),
    (lambda m, x, y: pgd(m, x, y, 0.1, restarts=2, random_start=False),
     "restarts=2 needs random_start=True"),
    (lambda m, x, y: autoattack(m, x, y, 0.1, n_target_classes=10),
     r"n_target_classes must be in 1\.\.9"),
    (lambda m, x, y: autoattack(m, x, y, 0.1, steps=0), "steps must be a positive integer"),
    (lambda m, x, y: square(m, x, y, 0.1, n_queries=0), "n_queries must be a positive integer"),
    (lambda m, x, y: square(m, x, y, 0.1, p_init=0.0), r"p_init .* must be in \(0, 1\]"),
    (lambda m, x, y: perturb("autoattack", m, x, y, eps=0.1, alpha=0.1),
     r"takes no option\(s\) \['alpha'\]"),
    (lambda m, x, y: perturb("cw", m, x, y, eps=0.1), "unknown perturbation 'cw'"),
])
def test_bad_ladder_arguments_raise_naming_them(trained, call, match):
    model, x, y = trained
    with pytest.raises(ValueError, match=match):
        call(model, x[:8], y[:8])


def test_autoattack_needs_four_logits():
    model = _linear(3)
    x = _interior_images(4, 0.1)
    with pytest.raises(ValueError, match="at least 4 logits"):
        autoattack(model, x, model(x).argmax(1), 0.1)
