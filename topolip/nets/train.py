"""Seeded training with atomic, resumable checkpoints.

A run is named by what determines it: the model spec (architecture and its parameters), the
training configuration and the data (:mod:`topolip.nets.run_spec`).
:func:`topolip.nets.checkpoints.checkpoint_path` turns these into a file name, so a changed
parameter never reuses a stale checkpoint, and :func:`fit` writes the checkpoint
atomically after every epoch and resumes from it: an interrupted run loses at most the epoch in
progress, and the resumed result equals the uninterrupted one bit for bit on the same machine.
"""

from __future__ import annotations

import copy
import hashlib
import math
import numbers
import time
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import torch
from torch import nn
from tqdm import tqdm

from topolip.nets.checkpoints import (
    FORMAT,
    checkpoint_error,
    load_weights,
    read_checkpoint,
    remove_stale_temporaries,
    run_identity,
    save_checkpoint,
    save_epoch,
)
from topolip.nets.data.split import ImageSplit
from topolip.nets.run_spec import ModelSpec, TrainConfig
from topolip.tensors import eval_mode

__all__ = [
    "CHANNELS_LAST_ARCHS", "EVAL_BATCH_SIZE", "TaskAbandoned", "TrainResult", "accuracy",
    "configure_threads", "default_device", "fit", "load_trained", "prefers_channels_last",
    "training_environment", "validation_split",
]

#: Architectures trained in ``channels_last`` memory format on the CPU (see
#: :func:`prefers_channels_last`; the ResNet is not among them: its BatchNorm layers do not give
#: the same numbers in that format).
CHANNELS_LAST_ARCHS = ("conv_stack",)

#: Evaluation batch size of :func:`accuracy`: the fastest measured on the 2-core CPU machine
#: (quick ResNet in channels_last, 1 thread: 3,340 images/s at 256, 3,330 at 128, 2,390 at 512;
#: the ViT is flat between 128 and 512).
EVAL_BATCH_SIZE = 256

# torch's own default number of intra-op threads, read once at import (configure_threads(None)).
_TORCH_DEFAULT_THREADS = torch.get_num_threads()


def configure_threads(n: int | None) -> int:
    """Set the number of CPU threads torch uses inside one operation; return the number set.

    Parameters
    ----------
    n : int or None
        Threads (``>= 1``); ``None`` restores torch's default (one per core, as read when this
        module was imported).

    Returns
    -------
    int
        ``torch.get_num_threads()`` afterwards.

    Raises
    ------
    ValueError
        If ``n`` is not ``None`` or a positive int.

    Notes
    -----
    On a quiet machine torch's default (all cores) is fastest. On a shared one it is not:
    measured on the 2-core machine with other processes busy (load about 3), one epoch step of
    the quick ResNet ran at 625 images/s with 1 thread and 60--78 with 2; the issue measured a
    2-thread ViT epoch slowing from 0.97 s to 4.6 s next to one busy process while a 1-thread
    run did not slow. Use 1 thread per process when the cores are shared (or several
    processes, e.g. Dask workers, run at once), ``None`` on a machine of one's own.

    Examples
    --------
    >>> configure_threads(1)
    1
    >>> configure_threads(None) == _TORCH_DEFAULT_THREADS
    True
    """
    if n is None:
        torch.set_num_threads(_TORCH_DEFAULT_THREADS)
    elif isinstance(n, bool) or not isinstance(n, numbers.Integral) or n < 1:
        raise ValueError(f"configure_threads: n must be None or a positive int, got {n!r}")
    else:
        torch.set_num_threads(int(n))
    return torch.get_num_threads()


def prefers_channels_last(arch: str, device: torch.device | str) -> bool:
    """Whether :func:`fit` trains ``arch`` in ``channels_last`` memory format on ``device``.

    True for :data:`CHANNELS_LAST_ARCHS` on the CPU. Measured on the 2-core machine (1
    thread, 1,024 digits, batch 128, images/s of training): conv stack 1,850 → 2,040, same
    numbers up to float32 rounding (gradients within 2e-6 of float64, as contiguous).
    The quick ResNet would gain more (630 → 850) but is left contiguous: with torch 2's CPU
    BatchNorm in ``channels_last`` its training-mode forward differs by 3e-5 and its gradients
    by up to 2% from the float64 reference (contiguous: 1e-7 and 1e-5), not rounding.
    Attention models have no 4-d activations to reorder.

    Examples
    --------
    >>> prefers_channels_last("conv_stack", "cpu"), prefers_channels_last("resnet", "cpu")
    (True, False)
    """
    return arch in CHANNELS_LAST_ARCHS and torch.device(device).type == "cpu"


def _uses_channels_last(model: nn.Module) -> bool:
    """True when the model's first convolution with several input channels is channels_last."""
    for module in model.modules():
        if isinstance(module, nn.Conv2d) and module.in_channels > 1:
            w = module.weight
            return w.is_contiguous(memory_format=torch.channels_last) and not w.is_contiguous()
    return False


def _to_format(x: torch.Tensor, channels_last: bool) -> torch.Tensor:
    return x.contiguous(memory_format=torch.channels_last) if channels_last and x.ndim == 4 else x


@dataclass
class TrainResult:
    """A trained model and how it got there.

    ``history``: one dict per epoch (``epoch``, ``loss``, ``train_accuracy`` (on the augmented
    batches, in train mode), ``val_accuracy`` (None without a validation split), ``lr`` (the
    learning rate after the epoch's last step), ``seconds``,
    ``threads``: torch's CPU threads during the epoch, which change the trained weights at float32
    rounding; absent from checkpoints written before it was recorded);
    ``test_accuracy``: clean accuracy on ``data.x_test`` in [0, 1], of the chosen epoch;
    ``train_accuracy``: clean accuracy (eval mode, no augmentation) on the images trained on;
    ``val_accuracy``: on the validation split (None without one); ``best_epoch``: the epoch
    returned (the last one without a validation split);
    ``environment``: the :func:`training_environment` recorded in the checkpoint (None for a
    checkpoint written before environments were recorded);
    ``retrained``: why an existing checkpoint was trained again ("" when it was not), e.g.
    ``"lock 'ab..' -> 'cd..'"``.
    """

    model: nn.Module
    spec: ModelSpec
    config: TrainConfig
    history: list[dict[str, float]]
    test_accuracy: float
    device: str
    train_accuracy: float | None = None
    val_accuracy: float | None = None
    best_epoch: int | None = None
    resumed_from_epoch: int = 0
    environment: dict[str, Any] | None = None
    retrained: str = ""


def default_device() -> torch.device:
    """CUDA when a GPU is present, else the CPU."""
    return torch.device("cuda" if torch.cuda.is_available() else "cpu")


#: Seed of :func:`validation_split` (fixed: every model of a data split validates on the same
#: images, whatever its training seed).
VALIDATION_SEED = 20_241_023


def validation_split(n_train: int, val_size: int) -> tuple[torch.Tensor, torch.Tensor]:
    """Indices ``(fit, validation)`` into ``n_train`` training images, ``val_size`` held out.

    A permutation seeded by :data:`VALIDATION_SEED`, so every model trained on the same data
    holds out the same images; both index tensors are sorted.

    Raises
    ------
    ValueError
        If ``val_size`` is negative or leaves fewer than one image to train on.

    Examples
    --------
    >>> fit_idx, val_idx = validation_split(10, 3)
    >>> len(fit_idx), len(val_idx), sorted(fit_idx.tolist() + val_idx.tolist()) == list(range(10))
    (7, 3, True)
    """
    if isinstance(val_size, bool) or int(val_size) != val_size or not 0 <= val_size < n_train:
        raise ValueError(f"val_size must be an integer in [0, {n_train - 1}] (the training "
                         f"images are {n_train}), got {val_size!r}")
    order = torch.randperm(n_train, generator=torch.Generator().manual_seed(VALIDATION_SEED))
    val = order[:int(val_size)].sort().values
    fit_idx = order[int(val_size):].sort().values
    return fit_idx, val


#: Images per draw of the augmentation: torchvision's v2 transforms draw one set of parameters
#: per call, and a call per image costs 1.1 s per epoch of 4,000 digits (1 thread) against
#: 0.19 s per group of 8; groups of 4 keep the draws nearly per image at a fifth of the cost.
AUGMENT_GROUP = 4


def _augment(x: torch.Tensor, config: TrainConfig, generator: torch.Generator) -> torch.Tensor:
    """Random affine copies of ``x`` (n, C, H, W): one draw of torchvision's RandomAffine per
    :data:`AUGMENT_GROUP` images, seeded by ``generator`` (torchvision draws from torch's
    global generator, which is set from it and restored)."""
    from torchvision.transforms import v2

    transform = v2.RandomAffine(degrees=config.rotate,
                                translate=(config.translate, config.translate),
                                scale=(1 - config.scale, 1 + config.scale))
    state = torch.random.get_rng_state()
    try:
        torch.manual_seed(int(torch.randint(2**62, (1,), generator=generator)))
        return torch.cat([transform(x[s:s + AUGMENT_GROUP])
                          for s in range(0, len(x), AUGMENT_GROUP)])
    finally:
        torch.random.set_rng_state(state)


@torch.no_grad()
def accuracy(model: nn.Module, x: torch.Tensor, y: torch.Tensor, *,
             batch_size: int = EVAL_BATCH_SIZE) -> float:
    """Fraction of ``x`` (shape (n, C, H, W), pixels in [0, 1]) classified as ``y``, in eval mode.

    The model's previous train/eval mode is restored afterwards. A model in ``channels_last``
    format (as :func:`fit` leaves a conv stack on the CPU) gets its inputs in that
    format too. ``batch_size`` defaults to :data:`EVAL_BATCH_SIZE`, the fastest measured.

    Raises
    ------
    ValueError
        If ``x`` and ``y`` disagree in length or are empty.
    """
    if len(x) != len(y) or len(x) == 0:
        raise ValueError(f"x and y must be non-empty and of equal length, got {len(x)} and "
                         f"{len(y)}")
    device = next(model.parameters()).device
    cl = _uses_channels_last(model)
    with eval_mode(model):
        correct = 0
        for s in range(0, len(x), batch_size):
            logits = model(_to_format(x[s:s + batch_size].to(device), cl))
            correct += int((logits.argmax(1).cpu() == y[s:s + batch_size]).sum())
    return correct / len(x)


class TaskAbandoned(RuntimeError):
    """A training stopped because nobody waits for it any more (its client or scheduler is
    gone); it wrote no checkpoint after it noticed."""


def _abandon_if_unwanted(still_wanted: Callable[[], bool] | None, spec: Any, epoch: int) -> None:
    if still_wanted is not None and not still_wanted():
        raise TaskAbandoned(f"training of {getattr(spec, 'arch', spec)} stopped after epoch "
                            f"{epoch}: its client is gone; no checkpoint written for it")


def _lock_hash() -> str | None:
    """SHA-256 (16 hex digits) of the ``requirements.lock`` beside the package (the repository
    root of an editable install), else of the working directory's; None without one."""
    for folder in (Path(__file__).resolve().parents[2], Path.cwd()):
        lock = folder / "requirements.lock"
        if lock.is_file():
            return hashlib.sha256(lock.read_bytes()).hexdigest()[:16]
    return None


def training_environment(device: torch.device | str | None = None) -> dict[str, Any]:
    """What, besides the run identity, decides a trained model's weights: recorded in every
    checkpoint :func:`fit` writes.

    Parameters
    ----------
    device : torch.device or str, optional
        The training device (default :func:`default_device`).

    Returns
    -------
    dict
        ``lock`` (16 hex digits of ``requirements.lock``'s SHA-256, None without the file),
        ``torch`` (version), ``device`` (``"cpu"`` or ``"cuda"``), ``threads`` (torch's CPU
        threads; None on a GPU, where they do not change the weights) and, informative only,
        ``device_name`` (the GPU's name, None on the CPU).

    Notes
    -----
    A checkpoint whose recorded environment differs from this one in ``lock``, ``torch`` or
    ``device`` is retrained by :func:`fit` (it would not be what a fresh clone in this
    environment trains), with a warning naming the file. ``threads`` is recorded only: it
    changes the weights at float32 rounding, and every epoch's history records its own.

    Examples
    --------
    >>> env = training_environment("cpu")
    >>> env["device"], env["threads"] == torch.get_num_threads()
    ('cpu', True)
    """
    device = torch.device(device) if device is not None else default_device()
    cuda = device.type == "cuda"
    return {"lock": _lock_hash(), "torch": str(torch.__version__), "device": device.type,
            "threads": None if cuda else torch.get_num_threads(),
            "device_name": torch.cuda.get_device_name(device) if cuda else None}


#: The entries of :func:`training_environment` that must agree for a checkpoint to be reused.
#: Threads are recorded but not among them: they change the weights at float32 rounding only,
#: each epoch's history records its own, and a run may resume at another thread count.
_ENV_KEYS = ("lock", "torch", "device")


def _environment_change(recorded: Any, current: Mapping[str, Any]) -> str:
    """'' when ``recorded`` (a checkpoint's environment) matches ``current``, else in words."""
    if not isinstance(recorded, Mapping):
        return "it records no training environment (written before environments were recorded)"
    moved = [f"{k} {recorded.get(k)!r} -> {current.get(k)!r}" for k in _ENV_KEYS
             if recorded.get(k) != current.get(k)]
    return ", ".join(moved)


def fit(
    spec: ModelSpec,
    data: ImageSplit,
    config: TrainConfig = TrainConfig(),
    *,
    checkpoint: str | Path | None = None,
    device: torch.device | str | None = None,
    progress: bool = True,
    on_epoch_end: Callable[[int], None] | None = None,
    channels_last: bool | None = None,
    still_wanted: Callable[[], bool] | None = None,
    keep_epochs: bool = False,
) -> TrainResult:
    """Train ``spec`` on ``data.x_train`` and report clean test accuracy, resuming if possible.

    Parameters
    ----------
    spec : ModelSpec
        The architecture; its weights are initialised from ``config.seed``.
    data : ImageSplit
        Images (n, C, H, W) with pixels in [0, 1] and integer labels.
    config : TrainConfig
        Epochs, batch size, learning rate (AdamW, cosine decay to 0 per step), weight decay,
        seed (initialisation and the per-epoch shuffling).
    checkpoint : path, optional
        Where to write the state after every epoch (atomically). If it exists, training resumes
        from it; if it holds a finished run, no training happens. Use
        :func:`topolip.nets.checkpoints.checkpoint_path`.
    device : torch.device or str, optional
        Default :func:`default_device`. On CUDA the forward pass runs under bfloat16 autocast
        (mixed precision); on the CPU in float32.
    progress : bool, default=True
        Show a progress bar over the epochs.
    on_epoch_end : callable, optional
        Called with the finished epoch number after its checkpoint is written (tests use it to
        interrupt a run).
    still_wanted : callable, optional
        Called with no argument after each epoch, before its checkpoint is written, and before
        the final one; when it returns False the run stops there, writes nothing more and
        raises :class:`TaskAbandoned` (a Dask task passes
        :func:`topolip.tasks.task_still_wanted`, False once its client or scheduler
        is gone). Default: always wanted.
    channels_last : bool, optional
        Train (and evaluate) in ``channels_last`` memory format; default
        :func:`prefers_channels_last` (the conv stack on the CPU). The same numbers up to
        float32 rounding, so a checkpoint resumes in either format; the returned model stays
        in that format.
    keep_epochs : bool, default=False
        Also keep every epoch's weights beside the checkpoint
        (:func:`topolip.nets.checkpoints.save_epoch`, written before the epoch's checkpoint, so
        a resumed run has them all); needs ``checkpoint``. A finished run is not retrained
        for them.

    Returns
    -------
    TrainResult

    Raises
    ------
    ValueError
        If ``keep_epochs`` is set without ``checkpoint``; if the checkpoint belongs to another
        spec, configuration or data set, cannot be read, or fails its integrity checks
        (checksum, finite weights, possible epoch); the message names the file. Stale
        ``*.tmp`` files of an interrupted write are removed first.
    """
    if keep_epochs and checkpoint is None:
        raise ValueError("keep_epochs needs a checkpoint: the epochs' weights are kept beside it")
    device = torch.device(device) if device is not None else default_device()
    torch.manual_seed(config.seed)
    model = spec.build().to(device)
    cl = prefers_channels_last(spec.arch, device) if channels_last is None else bool(channels_last)
    if cl:  # before the optimizer; load_state_dict copies a checkpoint into this format
        model = model.to(memory_format=torch.channels_last)
    opt = torch.optim.AdamW(model.parameters(), lr=config.lr, weight_decay=config.weight_decay)
    fit_idx, val_idx = validation_split(len(data.y_train), config.val_size)
    x_fit, y_fit = data.x_train[fit_idx], data.y_train[fit_idx]
    x_val, y_val = data.x_train[val_idx], data.y_train[val_idx]
    n = len(y_fit)
    steps_per_epoch = math.ceil(n / config.batch_size)
    total = steps_per_epoch * config.epochs
    warmup = round(total * config.warmup)

    def lr_factor(step: int) -> float:
        if step < warmup:
            return (step + 1) / warmup
        return 0.5 * (1 + math.cos(math.pi * min(step - warmup, total - warmup)
                                   / max(total - warmup, 1)))

    sched = torch.optim.lr_scheduler.LambdaLR(opt, lr_factor)
    identity = run_identity(spec, config, data)
    environment = training_environment(device)
    history: list[dict[str, float]] = []
    best: dict[str, Any] | None = None
    start_epoch = 0
    ckpt = Path(checkpoint) if checkpoint is not None else None
    if ckpt is not None:
        remove_stale_temporaries(ckpt)
    state = read_checkpoint(ckpt) if ckpt is not None and ckpt.exists() else None
    if state is not None and state["identity"] != identity:
        raise ValueError(
            f"checkpoint {ckpt} belongs to another run ({state['identity']}); delete it or "
            "use topolip.nets.checkpoints.checkpoint_path to name checkpoints by their parameters"
        )
    retrained = _environment_change(state.get("environment"), environment) if state else ""
    if retrained:  # trained elsewhere: not what this environment trains; start again
        import warnings

        warnings.warn(f"checkpoint {ckpt} was trained in another environment ({retrained}); "
                      "retraining it", RuntimeWarning, stacklevel=2)
        state = None
    if state is not None and state["final"] is not None:  # a finished run: its chosen epoch
        load_weights(ckpt, model, state["model"])
        model.eval()
        final = state["final"]
        return TrainResult(model=model, spec=spec, config=config,
                           history=copy.deepcopy(list(state["history"])),
                           test_accuracy=float(state["test_accuracy"]), device=str(device),
                           train_accuracy=final["train_accuracy"],
                           val_accuracy=final["val_accuracy"], best_epoch=final["best_epoch"],
                           resumed_from_epoch=config.epochs, environment=environment)
    if state is not None:
        load_weights(ckpt, model, state["model"])
        try:
            opt.load_state_dict(state["optimizer"])
            sched.load_state_dict(state["scheduler"])
        except (KeyError, ValueError, RuntimeError) as exc:
            raise checkpoint_error(ckpt, f"its optimizer state does not fit ({exc})") from None
        history = list(state["history"])
        best = state["best"]
        start_epoch = int(state["epoch"])
    use_amp = device.type == "cuda"
    loss_fn = nn.CrossEntropyLoss()
    bar = tqdm(range(start_epoch, config.epochs), desc=f"train {spec.arch} seed {config.seed}",
               disable=not progress, initial=start_epoch, total=config.epochs)
    for epoch in bar:
        model.train()
        t0 = time.perf_counter()
        gen = torch.Generator().manual_seed(config.seed * 100_003 + epoch)
        order = torch.randperm(n, generator=gen)
        x_epoch = _augment(x_fit, config, gen) if config.augments else x_fit
        loss_sum, correct = 0.0, 0
        for s in range(0, n, config.batch_size):
            idx = order[s:s + config.batch_size]
            xb, yb = _to_format(x_epoch[idx].to(device), cl), y_fit[idx].to(device)
            with torch.autocast(device_type="cuda", dtype=torch.bfloat16, enabled=use_amp):
                logits = model(xb)
                loss = loss_fn(logits.float(), yb)
            if not torch.isfinite(loss):
                raise FloatingPointError(
                    f"training loss became {loss.item()} at epoch {epoch + 1}; lower lr "
                    f"(now {config.lr})")
            opt.zero_grad(set_to_none=True)
            loss.backward()
            opt.step()
            sched.step()
            loss_sum += loss.item() * len(idx)
            correct += int((logits.argmax(1) == yb).sum())
        val_acc = accuracy(model, x_val, y_val) if len(y_val) else None
        history.append({"epoch": epoch + 1, "loss": loss_sum / n, "train_accuracy": correct / n,
                        "val_accuracy": val_acc, "lr": sched.get_last_lr()[0],
                        "seconds": time.perf_counter() - t0,
                        "threads": torch.get_num_threads()})
        if val_acc is not None and (best is None or val_acc >= best["val_accuracy"]):
            best = {"epoch": epoch + 1, "val_accuracy": val_acc,
                    "model": copy.deepcopy(model.state_dict())}
        bar.set_postfix(loss=f"{loss_sum / n:.3f}", acc=f"{correct / n:.3f}",
                        **({} if val_acc is None else {"val": f"{val_acc:.3f}"}))
        _abandon_if_unwanted(still_wanted, spec, epoch + 1)
        if keep_epochs:  # before the checkpoint: a run resumed after epoch k has 1..k kept
            save_epoch(ckpt, epoch + 1, identity, model.state_dict(), val_acc)
        if ckpt is not None:
            save_checkpoint(ckpt, {"format": FORMAT, "identity": identity, "epoch": epoch + 1,
                                   "model": model.state_dict(), "optimizer": opt.state_dict(),
                                   "scheduler": sched.state_dict(), "history": history,
                                   "test_accuracy": None, "environment": environment, "best": best,
                                   "final": None})
        if on_epoch_end is not None:
            on_epoch_end(epoch + 1)
    if best is not None:  # the epoch chosen on the validation images
        model.load_state_dict(best["model"])
    best_epoch = best["epoch"] if best is not None else config.epochs
    model.eval()
    test_acc = accuracy(model, data.x_test, data.y_test)
    final = {"train_accuracy": accuracy(model, x_fit, y_fit),
             "val_accuracy": best["val_accuracy"] if best is not None else None,
             "best_epoch": best_epoch}
    _abandon_if_unwanted(still_wanted, spec, config.epochs)
    if ckpt is not None:  # the finished run keeps the chosen epoch's weights only
        save_checkpoint(ckpt, {"format": FORMAT, "identity": identity, "epoch": config.epochs,
                               "model": model.state_dict(), "optimizer": opt.state_dict(),
                               "scheduler": sched.state_dict(), "history": history,
                               "test_accuracy": test_acc, "environment": environment, "best": None,
                               "final": final})
    return TrainResult(model=model, spec=spec, config=config, history=copy.deepcopy(history),
                       test_accuracy=test_acc, device=str(device), **final,
                       resumed_from_epoch=start_epoch, environment=environment,
                       retrained=retrained)


def load_trained(path: str | Path, *, device: torch.device | str | None = None) -> TrainResult:
    """Rebuild the finished run saved at ``path`` by :func:`fit`, in eval mode.

    Raises
    ------
    FileNotFoundError
        If ``path`` does not exist (run the train notebook first).
    ValueError
        Naming the file, if it is not a finished topolip checkpoint, or fails a check of
        :func:`topolip.nets.checkpoints.read_checkpoint`: missing keys, a checksum mismatch (a
        flipped bit), NaN/inf weights, an epoch the run cannot have reached, weights of the
        wrong shape for the model it names.
    """
    path = Path(path)
    if not path.exists():
        raise FileNotFoundError(f"no checkpoint at {path}; run the train notebook (01_train) first")
    state = read_checkpoint(path)
    if state["test_accuracy"] is None:
        raise ValueError(f"{path} holds an unfinished run (epoch {state['epoch']}); resume it "
                         "with topolip.nets.train.fit")
    spec = ModelSpec(state["identity"]["spec"]["arch"], state["identity"]["spec"]["params"])
    config = TrainConfig(**state["identity"]["config"])
    device = torch.device(device) if device is not None else default_device()
    try:
        model = spec.build()
    except (TypeError, ValueError) as exc:
        raise checkpoint_error(path, f"it names a model that cannot be built ({exc})") from None
    load_weights(path, model, state["model"])
    model.to(device).eval()
    return TrainResult(model=model, spec=spec, config=config, history=list(state["history"]),
                       test_accuracy=float(state["test_accuracy"]), device=str(device),
                       **state["final"], environment=state.get("environment"))
