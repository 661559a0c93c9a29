"""Training checkpoints on disk: their names, their format and its checks.

:func:`checkpoint_path` names a run's file by what determines it (:func:`run_identity`: the
model spec, the training configuration and the data), so a changed parameter never reuses a
stale checkpoint. :func:`save_checkpoint` writes a state atomically with a SHA-256 checksum of
its content; :func:`read_checkpoint` refuses, naming the file, anything it cannot trust (a
foreign or truncated file, a flipped bit, NaN weights, an epoch the run cannot have reached);
:func:`remove_stale_temporaries` clears what an interrupted write left. A run may also keep
each epoch's weights (:func:`epoch_path`, :func:`save_epoch`, :func:`read_epoch`), which the
accuracy-matched comparison of ``04_robustness`` reads. Training itself, which writes and
resumes them, is :func:`topolip.nets.train.fit`.
"""

from __future__ import annotations

import hashlib
import io
import json
import os
import time
from collections.abc import Mapping
from dataclasses import asdict
from pathlib import Path
from typing import Any

import torch
from torch import nn

from topolip.io import atomic_write
from topolip.nets.data.split import ImageSplit
from topolip.nets.run_spec import ModelSpec, TrainConfig

__all__ = ["FORMAT", "checkpoint_error", "checkpoint_path", "epoch_path", "load_weights",
           "read_checkpoint", "read_epoch", "remove_stale_temporaries", "run_identity",
           "save_checkpoint", "save_epoch"]

#: The checkpoint format (2: a SHA-256 checksum of the state; 3: the best-validation epoch kept).
FORMAT = 3


def _data_tag(data: ImageSplit) -> dict[str, Any]:
    digest = hashlib.sha256()
    for t in (data.x_train, data.y_train, data.x_test, data.y_test):
        digest.update(t.contiguous().numpy().tobytes())
    return {"name": data.name, "n_train": len(data.y_train), "n_test": len(data.y_test),
            "sha256": digest.hexdigest()[:16]}


def run_identity(spec: ModelSpec, config: TrainConfig, data: ImageSplit) -> dict[str, Any]:
    """What names a training run, as a checkpoint stores it: the model spec, the training
    configuration and a tag of the data (name, sizes, a SHA-256 of its tensors). A checkpoint
    whose identity differs belongs to another run (:func:`topolip.nets.train.fit` refuses it).
    """
    return {"spec": spec.to_dict(), "config": asdict(config), "data": _data_tag(data)}


def checkpoint_path(results_dir: str | Path, spec: ModelSpec, config: TrainConfig,
                    data: ImageSplit) -> Path:
    """Checkpoint file of a run: ``{results_dir}/models/{arch}-seed{seed}-{hash}.pt``.

    The hash covers the model spec, the training configuration and the data content, so any
    change of parameters names a new file.

    Examples
    --------
    >>> from topolip.nets.data.mnist import load_mnist
    >>> d = load_mnist(100, 50)
    >>> path = checkpoint_path("results", ModelSpec("vit", {}), TrainConfig(seed=3), d)
    >>> path.parent.as_posix(), path.name.startswith("vit-seed3-"), path.suffix
    ('results/models', True, '.pt')
    """
    key = json.dumps(run_identity(spec, config, data), sort_keys=True)
    h = hashlib.sha256(key.encode()).hexdigest()[:10]
    return Path(results_dir) / "models" / f"{spec.arch}-seed{config.seed}-{h}.pt"


_KEYS = ("format", "identity", "epoch", "model", "optimizer", "scheduler", "history",
         "test_accuracy", "checksum", "best", "final")


def _digest(obj: Any, h) -> None:
    """Feed ``obj`` (nested dicts, lists, tensors, plain values) into the hash ``h``."""
    if isinstance(obj, torch.Tensor):
        t = obj.detach().cpu().contiguous()
        h.update(f"T{t.dtype}{tuple(t.shape)}".encode())
        h.update(t.reshape(-1).view(torch.uint8).numpy().tobytes() if t.numel() else b"")
    elif isinstance(obj, Mapping):
        h.update(b"{")
        for k in sorted(obj, key=str):
            h.update(repr(k).encode())
            _digest(obj[k], h)
        h.update(b"}")
    elif isinstance(obj, list | tuple):
        h.update(b"[")
        for v in obj:
            _digest(v, h)
        h.update(b"]")
    else:
        h.update(repr(obj).encode())


def _checksum(state: Mapping[str, Any]) -> str:
    """SHA-256 of every entry of a checkpoint state except ``checksum`` itself."""
    h = hashlib.sha256()
    _digest({k: v for k, v in state.items() if k != "checksum"}, h)
    return h.hexdigest()


def save_checkpoint(path: Path, state: dict[str, Any]) -> None:
    """Write ``state`` (the keys :func:`read_checkpoint` checks, less ``checksum``) to ``path``
    atomically (:func:`topolip.io.atomic_write`), with the SHA-256 checksum of its content."""
    state = {**state, "checksum": _checksum(state)}
    buf = io.BytesIO()
    torch.save(state, buf)
    atomic_write(path, lambda f: f.write(buf.getvalue()))


def checkpoint_error(path: Path, what: str) -> ValueError:
    """The error for an unusable checkpoint: names ``path``, says ``what`` is wrong and how to
    recover (delete the file to retrain)."""
    return ValueError(f"checkpoint {path} is not usable: {what}; delete the file to retrain "
                      "(the train notebook writes it again)")


def read_checkpoint(path: Path) -> dict[str, Any]:
    """Read and verify a checkpoint: keys, checksum, finite weights, a possible epoch.

    Raises
    ------
    ValueError
        Naming ``path``, for an unreadable or foreign file, a missing key, a checksum that does
        not match (a flipped bit), non-finite weights, or an epoch the run cannot have reached.
    """
    try:
        state = torch.load(path, map_location="cpu", weights_only=True)
    except Exception as exc:  # a truncated or foreign file: say which one
        raise ValueError(f"cannot read checkpoint {path}: {exc}") from exc
    if not isinstance(state, dict) or state.get("format") != FORMAT:
        found = state.get("format") if isinstance(state, dict) else type(state).__name__
        raise ValueError(f"{path} is not a topolip checkpoint of format {FORMAT} (found "
                         f"{found!r}); delete it to retrain")
    missing = [k for k in _KEYS if k not in state]
    if missing:
        raise checkpoint_error(path, f"it lacks the key(s) {missing}")
    if state["checksum"] != _checksum(state):
        raise checkpoint_error(path, "its checksum does not match its content (a damaged file)")
    try:
        config = TrainConfig(**state["identity"]["config"])
        spec = state["identity"]["spec"]
        if not isinstance(spec["arch"], str) or not isinstance(spec["params"], Mapping):
            raise TypeError("spec must hold an arch name and a params mapping")
    except (KeyError, TypeError, ValueError) as exc:
        raise checkpoint_error(path, f"its run identity is malformed ({exc})") from None
    epoch = state["epoch"]
    if (isinstance(epoch, bool) or not isinstance(epoch, int)
            or not 1 <= epoch <= config.epochs):
        raise checkpoint_error(path, f"it claims epoch {epoch!r} of a {config.epochs}-epoch run")
    if not isinstance(state["history"], list) or len(state["history"]) != epoch:
        raise checkpoint_error(path, f"its history has {len(state['history'])} epochs, not {epoch}")
    acc = state["test_accuracy"]
    if acc is not None:
        if epoch != config.epochs:
            raise checkpoint_error(path, f"it is marked finished at epoch {epoch} of "
                                         f"{config.epochs}")
        if not (isinstance(acc, float | int) and 0.0 <= acc <= 1.0):
            raise checkpoint_error(path, f"its test accuracy {acc!r} is not in [0, 1]")
    if (acc is None) != (state["final"] is None):
        raise checkpoint_error(path, "its test accuracy and its final summary disagree on "
                                     "whether the run finished")
    if state["final"] is not None:
        final = state["final"]
        if not isinstance(final, Mapping) or set(final) != {"train_accuracy", "val_accuracy",
                                                             "best_epoch"}:
            raise checkpoint_error(path, f"its final summary {final!r} is malformed")
        if not (isinstance(final["best_epoch"], int) and 1 <= final["best_epoch"] <= epoch):
            raise checkpoint_error(path, f"it names best epoch {final['best_epoch']!r} of {epoch}")
    weights = [("model", state["model"])]
    best = state["best"]
    if best is not None:
        if (not isinstance(best, Mapping) or set(best) != {"epoch", "val_accuracy", "model"}
                or not isinstance(best["epoch"], int) or not 1 <= best["epoch"] <= epoch):
            raise checkpoint_error(path, "its best-validation entry is malformed")
        weights.append(("best-validation model", best["model"]))
    for what, tensors in weights:
        if not isinstance(tensors, Mapping):
            raise checkpoint_error(path, f"its {what} state is not a mapping of tensors")
        for name, t in tensors.items():
            if (isinstance(t, torch.Tensor) and t.is_floating_point()
                    and not torch.isfinite(t).all()):
                raise checkpoint_error(path, f"weight {name!r} of its {what} holds NaN/inf values "
                                       "(a diverged run)")
    return state


def epoch_path(checkpoint: str | Path, epoch: int) -> Path:
    """Where the run of ``checkpoint`` keeps the weights of ``epoch`` (1-based): the folder
    ``<checkpoint stem>.epochs`` beside it.

    >>> epoch_path("results/quick/models/resnet-seed0-abc.pt", 7).as_posix()
    'results/quick/models/resnet-seed0-abc.epochs/epoch-007.pt'
    """
    ckpt = Path(checkpoint)
    return ckpt.with_name(f"{ckpt.stem}.epochs") / f"epoch-{int(epoch):03d}.pt"


def save_epoch(checkpoint: str | Path, epoch: int, identity: Mapping[str, Any],
               model_state: Mapping[str, Any], val_accuracy: float | None) -> Path:
    """Keep the weights after ``epoch`` of the run ``checkpoint`` names (atomically, with a
    checksum, at :func:`epoch_path`); returns that path. What an interrupted write of the
    same file left is removed first (:func:`remove_stale_temporaries`): a resumed run rewrites
    the epoch it was killed in."""
    path = epoch_path(checkpoint, epoch)
    path.parent.mkdir(parents=True, exist_ok=True)
    remove_stale_temporaries(path)
    state = {"format": FORMAT, "identity": dict(identity), "epoch": int(epoch),
             "val_accuracy": val_accuracy, "model": dict(model_state)}
    state["checksum"] = _checksum(state)
    buf = io.BytesIO()
    torch.save(state, buf)
    atomic_write(path, lambda f: f.write(buf.getvalue()))
    return path


def read_epoch(checkpoint: str | Path, epoch: int) -> dict[str, Any]:
    """The weights kept after ``epoch`` of the run ``checkpoint`` names (:func:`save_epoch`):
    a dict with ``epoch``, ``val_accuracy`` and ``model`` (a state dict).

    Raises
    ------
    FileNotFoundError
        If the run kept no weights for that epoch (trained without ``keep_epochs``).
    ValueError
        Naming the file, if it cannot be read, its checksum does not match, it belongs to
        another run than ``checkpoint`` (when that file exists) or another epoch, or a weight
        is not finite.
    """
    path = epoch_path(checkpoint, epoch)
    if not path.exists():
        raise FileNotFoundError(f"no weights of epoch {epoch} kept for {checkpoint} (looked for "
                                f"{path}); train with keep_epochs to keep them")
    try:
        state = torch.load(path, map_location="cpu", weights_only=True)
    except Exception as exc:  # a truncated or foreign file: say which one
        raise ValueError(f"cannot read epoch weights {path}: {exc}") from exc
    keys = {"format", "identity", "epoch", "val_accuracy", "model", "checksum"}
    if not isinstance(state, dict) or set(state) != keys or state["format"] != FORMAT:
        raise checkpoint_error(path, "it is not a topolip epoch snapshot of format "
                                     f"{FORMAT}")
    if state["checksum"] != _checksum(state):
        raise checkpoint_error(path, "its checksum does not match its content (a damaged file)")
    if state["epoch"] != int(epoch):
        raise checkpoint_error(path, f"it holds epoch {state['epoch']!r}, not {epoch}")
    ckpt = Path(checkpoint)
    if ckpt.exists() and read_checkpoint(ckpt)["identity"] != state["identity"]:
        raise checkpoint_error(path, f"it belongs to another run than {ckpt}")
    for name, t in state["model"].items():
        if isinstance(t, torch.Tensor) and t.is_floating_point() and not torch.isfinite(t).all():
            raise checkpoint_error(path, f"weight {name!r} holds NaN/inf values")
    return state


def load_weights(path: Path, model: nn.Module, state: Mapping[str, Any]) -> None:
    """Load the weights ``state`` (read from ``path``) into ``model``.

    Raises
    ------
    ValueError
        Naming ``path``, when the weights do not fit the model (:func:`checkpoint_error`).
    """
    try:
        model.load_state_dict(state)
    except RuntimeError as exc:
        first = str(exc).strip().splitlines()
        raise checkpoint_error(path, "its weights do not fit the model it names: "
                               + " ".join(x.strip() for x in first[:3])) from None


def _writer_alive(tmp: Path, name: str) -> bool | None:
    """Whether the process that named ``tmp`` (``.{name}.{pid}.XXXX.tmp``) still runs on this
    host; None when the name holds no pid (a file of an older writer)."""
    rest = tmp.name[len(f".{name}."):].split(".")
    if len(rest) < 3 or not rest[0].isdigit():
        return None
    try:
        os.kill(int(rest[0]), 0)
    except ProcessLookupError:
        return False
    except (PermissionError, OverflowError, OSError):
        return True  # another user's live process (or a pid we cannot probe): keep it
    return True


def remove_stale_temporaries(path: str | Path, *, older_than_s: float = 60.0) -> list[Path]:
    """Delete temporary files that an interrupted write of ``path`` left behind.

    :func:`topolip.io.atomic_write` writes ``.{name}.{pid}.XXXX.tmp`` next to ``path`` and
    renames it; a process killed in between leaves that file. A temporary whose writer (the
    ``pid`` in its name) no longer runs on this host is removed whatever its age, so a resume
    right after a kill cleans up. Any other (a live writer's, a name without a pid, a writer on
    another host sharing the folder, a reused pid) is removed when not modified for
    ``older_than_s`` seconds or dated more than that in the future (a clock set wrong), so a
    concurrent writer's fresh file is kept.

    Parameters
    ----------
    path : path
        The file whose temporaries are looked for (in its folder).
    older_than_s : float, default=60.0
        Age in seconds past which any temporary is stale.

    Returns
    -------
    list of Path
        The removed temporaries.
    """
    path = Path(path)
    if not path.parent.is_dir():
        return []
    now = time.time()
    removed = []
    for tmp in path.parent.glob(f".{path.name}.*.tmp"):
        try:
            alive = _writer_alive(tmp, path.name)
            old = abs(now - tmp.stat().st_mtime) >= older_than_s  # a future date is stale too
            if alive is False or old:
                tmp.unlink()
                removed.append(tmp)
        except FileNotFoundError:
            pass
    return removed
