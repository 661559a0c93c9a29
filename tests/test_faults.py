"""The fault battery of issue 21: faults lose nothing and hide nothing.

Each case damages, kills or cuts something the way a user or a machine would, and asserts the
promise the README makes ("The cache follows the data", "Running on a cluster"): a damaged
output is never reused, an interrupted run rolls back and says one line, a failure names the
file, model, parameter or address. The chains are synthetic notebooks (a kernel start each,
the tests' tiny parameters), so the battery stays small; the cases that start Dask clusters or
several command-line processes are marked ``slow``.
"""

from __future__ import annotations

import json
import os
import signal
import stat
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import pytest
from test_cifar import cifar_root  # noqa: F401 - the fixture: CIFAR-10's on-disk format

from topolip.pipeline.notebook_cache import DependencyError
from topolip.pipeline.runner import (
    RUN_LOCK,
    OutputsMissing,
    ResultsInUse,
    _RunLock,
    run_chain,
)

ROOT = Path(__file__).resolve().parents[1]
QUIET = {"log": lambda _: None}

# 01_train-like: writes a checkpoint once (reused when present) and a table naming it;
# 02_measure reads the table and writes another, with a sidecar and a figure;
# 03_report reads the measurement.
TRAIN = '''# %% tags=["parameters"]
results_dir = "results/t"
epochs = 1

# %%
import json
from pathlib import Path
from topolip.io import atomic_write_text
out = Path(results_dir)
ckpt = out / "models" / f"m-{epochs}.pt"
if not ckpt.exists():
    atomic_write_text(ckpt, f"weights after {epochs} epochs")
atomic_write_text(out / "tables" / "models.csv", f"arch,checkpoint\\nvit,{ckpt}\\n")
'''

MEASURE = '''# %% tags=["parameters"]
results_dir = "results/t"
n_points = 3
{extra}
# %%
import time
from pathlib import Path
from topolip.io import atomic_write_text
out = Path(results_dir)
rows = (out / "tables" / "models.csv").read_text().splitlines()
atomic_write_text(out / "tables" / "topolip.csv",
                  "arch,value\\n" + "".join(f"vit,{{i * 0.125}}\\n" for i in range(n_points)))
atomic_write_text(out / "tables" / "topolip.json", '{{"n_points": %d}}\\n' % n_points)
atomic_write_text(out / "figures" / "fig-x.png", "png bytes")
marker = Path(results_dir).parent / "sleep"
while marker.exists() and not (Path(results_dir).parent / "go").exists():
    time.sleep(0.2)
'''

REPORT = '''# %% tags=["parameters"]
results_dir = "results/t"

# %%
from pathlib import Path
from topolip.io import atomic_write_text
out = Path(results_dir)
text = (out / "tables" / "topolip.csv").read_text()
atomic_write_text(out / "tables" / "report.csv", "lines\\n%d\\n" % len(text.splitlines()))
'''

DEPS = '''01_train: {reads: [], writes: ["{results_dir}/tables/models.csv"]}
02_measure:
  reads: ["{results_dir}/tables/models.csv"]
  writes: ["{results_dir}/tables/topolip.csv"]
03_report:
  reads: ["{results_dir}/tables/topolip.csv"]
  writes: ["{results_dir}/tables/report.csv"]
'''


def make_chain(root: Path, *, measure_extra: str = "", deps: str = DEPS) -> Path:
    (root / "notebooks").mkdir(parents=True)
    (root / "notebooks/01_train.py").write_text(TRAIN)
    (root / "notebooks/02_measure.py").write_text(MEASURE.format(extra=measure_extra))
    (root / "notebooks/03_report.py").write_text(REPORT)
    (root / "notebooks/dependencies.yml").write_text(deps)
    (root / "data/profiles").mkdir(parents=True)
    (root / "data/profiles/t.yml").write_text("results_dir: results/t\nepochs: 1\nn_points: 3\n")
    return root


@pytest.fixture
def private_tmp(tmp_path, monkeypatch):
    """The runner's roll-back copies go to a temporary folder of this test only."""
    folder = tmp_path / "systmp"
    folder.mkdir()
    monkeypatch.setattr(tempfile, "tempdir", str(folder))
    return folder


def executed(runs):
    return [r.name for r in runs if not r.cached]


PARAMS = {"results_dir": "results/t", "epochs": 1, "n_points": 3}


# --------------------------------------------------------------------------- outputs in the cache


@pytest.mark.parametrize("damage, words", [
    ("digit", "altered: its SHA-256 differs"),
    ("truncate", "truncated:"),
    ("delete", "missing"),
    ("sidecar", "topolip.json (altered"),
    ("figure", "fig-x.png (missing)"),
])
@pytest.mark.usefixtures("private_tmp")
def test_a_damaged_output_reexecutes_its_notebook_and_nothing_reads_it(tmp_path, damage, words):
    root = make_chain(tmp_path / "repo")
    assert executed(run_chain(root, PARAMS, **QUIET)) == ["01_train", "02_measure", "03_report"]
    tables = root / "results/t/tables"
    good = (tables / "topolip.csv").read_bytes()
    if damage == "digit":  # one digit changed, same size
        (tables / "topolip.csv").write_bytes(good.replace(b"0.125", b"0.126"))
    elif damage == "truncate":  # cut to 60%: pandas would read it without a word
        (tables / "topolip.csv").write_bytes(good[:int(len(good) * 0.6)])
    elif damage == "delete":
        (tables / "topolip.csv").unlink()
    elif damage == "sidecar":
        (tables / "topolip.json").write_text('{"n_points": 4}\n')
    else:
        (root / "results/t/figures/fig-x.png").unlink()
    logs: list[str] = []
    dry = run_chain(root, PARAMS, dry_run=True, log=logs.append)
    assert executed(dry) == ["02_measure", "03_report"]  # 03 reads what 02 would rewrite
    assert dry[2].reason.startswith(("input(s) an earlier notebook would rewrite",
                                     "input(s) changed: {results_dir}/tables/topolip.csv"))
    assert dry[1].reason.startswith("output(s) damaged: ") and words in dry[1].reason
    assert any(line.startswith("[topolip] 02_measure: would execute (output(s) damaged")
               for line in logs)
    logs.clear()
    runs = run_chain(root, PARAMS, log=logs.append)
    assert executed(runs)[:1] == ["02_measure"], logs
    # the producer re-executes and writes the original bytes back, so the reader stays cached
    # (its inputs are what it read): it never ran on the damaged file
    assert executed(runs) == ["02_measure"]
    assert (tables / "topolip.csv").read_bytes() == good
    assert any("02_measure: executing (output(s) damaged" in line and words in line
               for line in logs)
    assert executed(run_chain(root, PARAMS, **QUIET)) == []


@pytest.mark.usefixtures("private_tmp")
def test_deleted_checkpoints_or_models_table_reexecute_training(tmp_path):
    root = make_chain(tmp_path / "repo")
    run_chain(root, PARAMS, **QUIET)
    ckpt = root / "results/t/models/m-1.pt"
    ckpt.unlink()  # as a failed load tells the user to
    dry = run_chain(root, PARAMS, dry_run=True, **QUIET)
    assert dry[0].reason == "output(s) damaged: results/t/models/m-1.pt (missing)"
    runs = run_chain(root, PARAMS, **QUIET)
    assert executed(runs) == ["01_train"] and ckpt.read_text() == "weights after 1 epochs"
    (root / "results/t/tables/models.csv").unlink()
    assert executed(run_chain(root, PARAMS, **QUIET)) == ["01_train"]
    assert (root / "results/t/tables/models.csv").exists()


@pytest.mark.usefixtures("private_tmp")
def test_only_refuses_to_read_a_damaged_upstream_table(tmp_path):
    root = make_chain(tmp_path / "repo")
    run_chain(root, PARAMS, **QUIET)
    table = root / "results/t/tables/topolip.csv"
    table.write_text(table.read_text()[:10])
    with pytest.raises(RuntimeError, match=r"03_report reads results/t/tables/topolip.csv "
                                           r"\(truncated: .*written by 02_measure: run "
                                           r"02_measure again first"):
        run_chain(root, PARAMS, only=["03_report"], **QUIET)


@pytest.mark.usefixtures("private_tmp")
def test_a_declared_output_the_notebook_did_not_write_fails_it(tmp_path):
    deps = DEPS.replace('writes: ["{results_dir}/tables/topolip.csv"]',
                        'writes: ["{results_dir}/tables/topolip.csv", '
                        '"{results_dir}/tables/resamples.csv"]')
    root = make_chain(tmp_path / "repo", deps=deps)
    with pytest.raises(OutputsMissing, match=r"notebook 02_measure finished without writing "
                                             r"\{results_dir\}/tables/resamples.csv"):
        run_chain(root, PARAMS, **QUIET)
    tables = root / "results/t/tables"
    assert not (tables / "topolip.csv").exists(), "its other outputs are rolled back"
    assert (tables / "models.csv").exists(), "the earlier notebook's outputs are kept"
    assert not (root / "book/notebooks/02_measure.ipynb").exists()


# --------------------------------------------------------------------------- clear failures


def test_malformed_dependencies_name_file_line_and_column(tmp_path, capsys):
    from topolip.cli import main

    root = make_chain(tmp_path / "repo", deps=DEPS.replace("reads: []", "reads: [}"))
    with pytest.raises(DependencyError, match=r"dependencies.yml is not valid YAML at line 1, "
                                              r"column 20: "):
        run_chain(root, PARAMS, **QUIET)
    (root / "notebooks/dependencies.yml").write_text(
        DEPS.replace("02_measure:\n", "02_measure:\n\t"))
    assert main(["run", "--root", str(root), "--profile", "t"]) == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and "dependencies.yml is not valid YAML at line 3, column 1" in err[0]
    assert "internal error" not in err[0] and "ParserError" not in err[0]


@pytest.mark.parametrize("umask, mode", [(0o022, 0o644), (0o077, 0o600)])
@pytest.mark.usefixtures("private_tmp")
def test_outputs_honour_the_umask(tmp_path, umask, mode):
    import torch

    from topolip.io import atomic_write_bytes, atomic_write_json, atomic_write_text
    from topolip.pipeline.provenance import write_table
    from topolip.schema import Column, TableSchema

    old = os.umask(umask)
    try:
        import pandas as pd

        paths = [atomic_write_text(tmp_path / "a.csv", "x\n"),
                 atomic_write_json(tmp_path / "a.json", {}),
                 atomic_write_bytes(tmp_path / "f.png", b"\x89PNG"),
                 atomic_write_bytes(tmp_path / "f.svg", b"<svg/>"),
                 write_table(pd.DataFrame({"a": [1]}), tmp_path / "t.csv",
                             schema=TableSchema("t", (Column("a", "int"),), "01_train"))]
        from topolip.nets.data.mnist import load_mnist
        from topolip.nets.run_spec import ModelSpec, TrainConfig
        from topolip.nets.train import fit

        data = load_mnist(n_train=40, n_test=20, seed=0)
        fit(ModelSpec("conv_stack", {"num_layers": 1, "channels": 2}), data,
            TrainConfig(epochs=1, batch_size=40), checkpoint=tmp_path / "m.pt", device="cpu",
            progress=False)
        paths += [tmp_path / "t.json", tmp_path / "m.pt"]
        if umask == 0o022:  # a whole (tiny) chain: tables, figure, notebooks
            root = make_chain(tmp_path / "repo")
            run_chain(root, PARAMS, **QUIET)
            paths += [p for p in (root / "results").rglob("*") if p.is_file()]
            paths += list((root / "book/notebooks").glob("*.ipynb"))
        modes = {str(p): oct(stat.S_IMODE(p.stat().st_mode)) for p in paths}
        assert set(modes.values()) == {oct(mode)}, modes
        assert torch.load(tmp_path / "m.pt", weights_only=True)["epoch"] == 1
    finally:
        os.umask(old)


@pytest.mark.usefixtures("private_tmp")
def test_unreachable_scheduler_fails_within_the_timeout_naming_the_address(tmp_path):
    import socket

    from topolip.tasks import Task, TaskRunner

    t0 = time.perf_counter()
    with pytest.raises(RuntimeError, match=r"Dask scheduler tcp://127.0.0.1:1 is unreachable "
                                           r"\(Connection refused; scheduler_timeout 3 s\)"):
        TaskRunner("tcp://127.0.0.1:1", timeout=3, progress=False).map([Task("t", abs, (1,))])
    assert time.perf_counter() - t0 < 3
    # a port that accepts the connection but never speaks Dask: the handshake's deadline
    silent = socket.socket()
    silent.bind(("127.0.0.1", 0))
    silent.listen(8)
    address = f"tcp://127.0.0.1:{silent.getsockname()[1]}"
    t0 = time.perf_counter()
    try:
        with pytest.raises(RuntimeError, match=f"Dask scheduler {address} did not answer within "
                                               "scheduler_timeout 2 s"):
            TaskRunner(address, timeout=2, progress=False).map([Task("t", abs, (1,))])
    finally:
        silent.close()
    assert time.perf_counter() - t0 < 2 + 5  # the deadline, plus Dask's close
    # through the runner: the chain stops before the notebook starts, naming the address
    root = make_chain(tmp_path / "repo", measure_extra='scheduler = "local"\n')
    t0 = time.perf_counter()
    with pytest.raises(RuntimeError, match=r"tcp://127.0.0.1:1 is unreachable .*"
                                           r"scheduler_timeout 2 s"):
        run_chain(root, {**PARAMS, "scheduler": "tcp://127.0.0.1:1", "scheduler_timeout": 2},
                  **QUIET)
    assert not (root / "results/t/tables/topolip.csv").exists()


def test_a_bad_cifar_file_is_named(cifar_root):  # noqa: F811 - the imported fixture
    from torchvision.datasets import CIFAR10

    from topolip.nets.data.cifar import load_cifar10

    root, _ = cifar_root
    folder = root / CIFAR10.base_folder
    batch = folder / "data_batch_2"
    batch.write_bytes(batch.read_bytes()[:1000])  # truncated: fails its md5
    with pytest.raises(ValueError, match=rf"{batch} \(1000 bytes\) fails torchvision's md5 "
                                         r"check: truncated or altered"):
        load_cifar10(root, n_train=10, n_test=10, seed=0)
    # not a pickle at all, with an md5 that matches (a foreign file put in its place)
    import hashlib

    batch.write_bytes(b"this is not a pickle")
    CIFAR10.train_list = [[n, hashlib.md5((folder / n).read_bytes()).hexdigest()]
                          for n, _ in CIFAR10.train_list]
    with pytest.raises(ValueError, match=rf"CIFAR-10 file {batch} cannot be read as a CIFAR-10 "
                                         r"batch \(UnpicklingError"):
        load_cifar10(root, n_train=10, n_test=10, seed=0)


# --------------------------------------------------------------------------- checkpoints


def test_a_checkpoint_of_another_environment_is_retrained(tmp_path, monkeypatch):
    import torch

    import topolip.nets.train as train
    from topolip.nets.data.mnist import load_mnist

    data = load_mnist(n_train=40, n_test=20, seed=0)
    spec = train.ModelSpec("conv_stack", {"num_layers": 1, "channels": 2})
    config = train.TrainConfig(epochs=1, batch_size=40)
    ckpt = tmp_path / "m.pt"
    first = train.fit(spec, data, config, checkpoint=ckpt, device="cpu", progress=False)
    env = torch.load(ckpt, weights_only=True)["environment"]
    assert env == train.training_environment("cpu") == first.environment
    assert set(env) == {"lock", "torch", "device", "threads", "device_name"}
    assert env["torch"] == torch.__version__ and env["threads"] == torch.get_num_threads()
    assert train.fit(spec, data, config, checkpoint=ckpt, device="cpu",
                     progress=False).resumed_from_epoch == 1, "same environment: reused"
    real = train.training_environment
    monkeypatch.setattr(train, "training_environment",
                        lambda device=None: {**real(device), "lock": "0123456789abcdef"})
    with pytest.warns(RuntimeWarning, match=rf"checkpoint {ckpt} was trained in another "
                                            rf"environment \(lock '{env['lock']}' -> "
                                            r"'0123456789abcdef'\); retraining it"):
        again = train.fit(spec, data, config, checkpoint=ckpt, device="cpu", progress=False)
    assert again.resumed_from_epoch == 0 and again.retrained.startswith("lock ")
    assert torch.load(ckpt, weights_only=True)["environment"]["lock"] == "0123456789abcdef"
    assert train.load_trained(ckpt).environment["lock"] == "0123456789abcdef"


# --------------------------------------------------------------------------- one run at a time


@pytest.mark.usefixtures("private_tmp")
def test_a_second_run_on_the_same_results_folder_stops_naming_the_first(tmp_path):
    root = make_chain(tmp_path / "repo")
    other = _RunLock([root / "results/t"], {**PARAMS, "n_points": 4}, dry_run=False)
    try:
        with pytest.raises(ResultsInUse, match=rf"results/t is in use by another topolip run "
                                               rf"\(pid {os.getpid()} on .* since .*, other "
                                               r"parameters\): two runs on one results folder "
                                               r"would mix their tables"):
            run_chain(root, PARAMS, **QUIET)
        assert not (root / "results/t/tables").exists(), "nothing ran"
    finally:
        other.release()
    assert not (root / "results/t" / RUN_LOCK).exists()
    # a lock file left by a killed run (no process holds it) does not block
    (root / "results/t" / RUN_LOCK).write_text('{"pid": 1}\n')
    assert executed(run_chain(root, PARAMS, **QUIET)) == ["01_train", "02_measure", "03_report"]
    assert not (root / "results/t" / RUN_LOCK).exists()


def test_leftovers_of_killed_runs_are_removed_whatever_their_mtime(tmp_path, private_tmp):
    root = make_chain(tmp_path / "repo")
    run_chain(root, PARAMS, **QUIET)
    future = time.time() + 86400 * 365
    tmp = root / "results/t/tables/.topolip.csv.k3j2.tmp"
    tmp.write_text("half a table")
    os.utime(tmp, (future, future))
    stale = private_tmp / "topolip-outputs-dead"
    (stale / "tables").mkdir(parents=True)
    (stale / ".owner").write_text("")  # its owner died: nobody holds the lock
    os.utime(stale, (future, future))
    logs: list[str] = []
    assert executed(run_chain(root, PARAMS, log=logs.append)) == []
    assert not tmp.exists() and not stale.exists()
    assert "[topolip] removed 1 temporary file(s) and 1 roll-back copy left by interrupted " \
           "runs" in logs
    assert not list(private_tmp.glob("topolip-outputs-*")), "no copy of this run is left"


# --------------------------------------------------------------------------- interrupts


def _cli(root: Path, env_tmp: Path, *args: str, session: bool = False) -> subprocess.Popen:
    env = {**os.environ, "PYTHONPATH": str(ROOT), "TMPDIR": str(env_tmp),
           "OMP_NUM_THREADS": "1"}
    return subprocess.Popen([sys.executable, "-m", "topolip.cli", "run", "--root", str(root),
                             "--profile", "t", *args], env=env, stdout=subprocess.PIPE,
                            stderr=subprocess.PIPE, text=True, start_new_session=session)


def _wait_for(path: Path, proc: subprocess.Popen, timeout: float = 120) -> None:
    t0 = time.time()
    while not path.exists():
        assert proc.poll() is None, proc.communicate()
        assert time.time() - t0 < timeout, f"{path} did not appear"
        time.sleep(0.2)


@pytest.mark.slow
def _runner_lines(err: str) -> list[str]:
    """The lines of ``err`` the runner wrote, without what the dying kernel (a child sharing the
    terminal) prints: ipykernel's start-up warning (every kernel, every run), libzmq's abort when
    the signal lands inside its poll, and tornado's report of the control-stream send that fails
    as the kernel's sockets close (both seen in CI, both the kernel's, not the runner's).

    >>> _runner_lines("[IPKernelApp] WARNING | Kernel is running over TCP ...\\n"
    ...               "ERROR:tornado.general:Uncaught exception in ZMQStream callback\\n"
    ...               "Traceback (most recent call last):\\n  File x\\n"
    ...               "zmq.error.ZMQError: Socket operation on non-socket\\ntopolip: done\\n")
    ['topolip: done']
    """
    lines, in_kernel_trace = [], False
    for ln in err.strip().splitlines():
        if ln.startswith("ERROR:tornado.general:Uncaught exception in ZMQStream callback"):
            in_kernel_trace = True
        elif in_kernel_trace:
            in_kernel_trace = not ln.startswith("zmq.error.")
        elif not (ln.startswith("[IPKernelApp] WARNING | Kernel is running over TCP")
                  or (ln.startswith("Assertion failed:") and "signaler.cpp" in ln)):
            lines.append(ln)
    return lines


@pytest.mark.parametrize("how", ["SIGTERM", "SIGINT-group", "SIGKILL"])
def test_an_interrupted_run_rolls_back_says_one_line_and_resumes(tmp_path, how):
    root = make_chain(tmp_path / "repo", measure_extra='scheduler = "local"\nn_workers = 1\n')
    (root / "data/profiles/t.yml").write_text(
        "results_dir: results/t\nepochs: 1\nn_points: 3\nscheduler: local\nn_workers: 1\n")
    systmp = tmp_path / "systmp"
    systmp.mkdir()
    (root / "results").mkdir()
    (root / "results/sleep").write_text("")  # 02_measure waits after writing its tables
    proc = _cli(root, systmp, session=how == "SIGINT-group")
    _wait_for(root / "results/t/figures/fig-x.png", proc)
    assert list(systmp.glob("topolip-outputs-*")), "the roll-back copy exists while it runs"
    if how == "SIGINT-group":  # Ctrl-C: the terminal signals the whole process group
        os.killpg(proc.pid, signal.SIGINT)
    else:
        proc.send_signal(getattr(signal, how))
    out, err = proc.communicate(timeout=120)
    tables = root / "results/t/tables"
    if how == "SIGKILL":
        assert proc.returncode == -9
    else:
        assert proc.returncode == (143 if how == "SIGTERM" else 130), err
        name = how.split("-")[0]
        lines = _runner_lines(err)
        assert lines == [
            f"topolip: 02_measure interrupted by {name}; its partial outputs were rolled back "
            f"(3 file(s)); kept: 01_train and every finished checkpoint; run the same "
            f"`topolip run` command again to resume"], err
        assert "Traceback" not in out + "\n".join(lines)
        assert not (tables / "topolip.csv").exists(), "the unfinished notebook's table"
        assert not (root / "results/t/figures/fig-x.png").exists()
        assert not list(systmp.glob("topolip-outputs-*")), "no roll-back copy left"
    assert (tables / "models.csv").exists()
    assert not (root / "results/t" / RUN_LOCK).exists() or how == "SIGKILL"
    (root / "results/sleep").unlink()
    resumed = _cli(root, systmp)
    out, err = resumed.communicate(timeout=300)
    assert resumed.returncode == 0, err
    assert "01_train: unchanged, cached" in out and "02_measure: executing" in out
    assert not list(systmp.glob("topolip-outputs-*")), "stale copies cleaned by the next run"
    # byte-identical to an uninterrupted run
    clean = make_chain(tmp_path / "clean")
    run_chain(clean, PARAMS, **QUIET)
    for name in ("models.csv", "topolip.csv", "report.csv"):
        assert (tables / name).read_bytes() == (
            clean / "results/t/tables" / name).read_bytes().replace(
            str(clean).encode(), str(root).encode()), name
    assert json.loads((root / "book/notebooks/02_measure.ipynb").read_text())["metadata"][
        "topolip"]["outputs"]


# --------------------------------------------------------------------------- lost workers


def _kill_my_worker_once(marker: str, data) -> int:
    """A task whose first try kills the worker running it (as the OOM killer would)."""
    if not os.path.exists(marker):
        Path(marker).write_text(str(os.getpid()))
        os.kill(os.getpid(), signal.SIGKILL)
    return len(data)


@pytest.mark.slow
def test_a_task_whose_worker_dies_runs_again_on_another(tmp_path):
    from topolip.tasks import Task, TaskRunner

    with TaskRunner("local", n_workers=2, progress=False) as runner:
        data = runner.share(bytes(1000))  # sent to every worker, so it survives one
        results = runner.map([Task("train vit seed 0 (epochs 1)", _kill_my_worker_once,
                                   (str(tmp_path / "killed"), data)),
                              Task("train resnet seed 0 (epochs 1)", len, (data,))])
    assert results == [1000, 1000]
    assert (tmp_path / "killed").exists(), "the first try's worker was killed"


@pytest.mark.slow
def test_a_dying_scheduler_is_reported_with_the_models():
    from topolip.tasks import Task, TaskError, TaskRunner

    code = ("from distributed import LocalCluster; import time; "
            "c = LocalCluster(n_workers=1, processes=False, protocol='tcp://', "
            "dashboard_address=None); "
            "print(c.scheduler_address, flush=True); time.sleep(600)")
    server = subprocess.Popen([sys.executable, "-c", code], stdout=subprocess.PIPE, text=True)
    try:
        address = server.stdout.readline().strip()
        tasks = [Task(f"train vit seed {s} (epochs 1)", time.sleep, (60,)) for s in (0, 1)]
        with TaskRunner(address, timeout=20, progress=False) as runner:
            import threading

            threading.Timer(3, server.kill).start()  # the scheduler dies mid-run
            t0 = time.perf_counter()
            with pytest.raises(TaskError) as err:
                runner.map(tasks)
        assert time.perf_counter() - t0 < 60, "reported, not waited for"
    finally:
        server.kill()
    text = str(err.value)
    assert text.startswith("2 of 2 tasks failed")
    for s in (0, 1):
        assert f"train vit seed {s} (epochs 1): RuntimeError: the connection to the Dask " \
               "scheduler was lost" in text, text


# ------------------------------------------------------------------- full and read-only disks


@pytest.fixture
def small_disk(tmp_path):
    """A 2 MB tmpfs (skipped, with the reason, where this machine cannot mount one)."""
    mount = tmp_path / "disk"
    mount.mkdir()
    done = subprocess.run(["mount", "-t", "tmpfs", "-o", "size=2m", "tmpfs", str(mount)],
                          capture_output=True, text=True)
    if done.returncode != 0:
        pytest.skip(f"cannot mount a small tmpfs here ({done.stderr.strip() or 'not root'})")
    try:
        yield mount
    finally:
        subprocess.run(["umount", "-l", str(mount)], capture_output=True)


@pytest.mark.slow
@pytest.mark.usefixtures("private_tmp")
def test_a_full_disk_fails_cleanly_and_keeps_the_tables(small_disk):
    root = make_chain(small_disk / "repo")
    run_chain(root, PARAMS, **QUIET)
    tables = root / "results/t/tables"
    before = {p.name: p.read_bytes() for p in tables.iterdir()}
    filler = small_disk / "filler"
    fd = os.open(filler, os.O_WRONLY | os.O_CREAT)
    try:  # fill the disk
        while os.write(fd, b"\0" * 4096):
            pass
    except OSError:
        pass
    finally:
        os.close(fd)
    with pytest.raises(Exception, match="No space left on device") as err:
        run_chain(root, {**PARAMS, "n_points": 5}, **QUIET)
    assert "02_measure" in str(err.value) or isinstance(err.value, OSError)
    assert {p.name: p.read_bytes() for p in tables.iterdir()} == before, "tables intact"
    assert not list(root.rglob(".*.tmp"))
    filler.unlink()


@pytest.mark.slow
@pytest.mark.usefixtures("private_tmp")
def test_a_read_only_results_folder_fails_cleanly_and_keeps_the_tables(small_disk):
    root = make_chain(small_disk / "repo")
    run_chain(root, PARAMS, **QUIET)
    tables = root / "results/t/tables"
    before = {p.name: p.read_bytes() for p in tables.iterdir()}
    done = subprocess.run(["mount", "-o", "remount,ro", str(small_disk)], capture_output=True,
                          text=True)
    if done.returncode != 0:  # root ignores file modes: only a read-only mount tests this
        pytest.skip(f"cannot remount the tmpfs read-only here ({done.stderr.strip()})")
    assert executed(run_chain(root, PARAMS, **QUIET)) == [], "a cached chain reads only"
    with pytest.raises(Exception, match="Read-only file system"):
        run_chain(root, {**PARAMS, "n_points": 5}, **QUIET)
    assert {p.name: p.read_bytes() for p in tables.iterdir()} == before


def test_a_resume_right_after_a_kill_removes_the_dead_writers_tmp(tmp_path):
    # README: what a killed run leaves (.tmp files) is removed by the next run, even at once
    from topolip.io import atomic_write_text
    from topolip.nets.checkpoints import remove_stale_temporaries

    dead = subprocess.run([sys.executable, "-c", "import os; print(os.getpid())"],
                          capture_output=True, text=True, check=True)
    pid = int(dead.stdout)
    ckpt = tmp_path / "m.pt"
    left = tmp_path / f".m.pt.{pid}.ab12cd34.tmp"  # a dead writer's, written a moment ago
    left.write_bytes(b"half")
    live = tmp_path / f".m.pt.{os.getpid()}.ef56gh78.tmp"  # a live writer's, fresh: kept
    live.write_bytes(b"half")
    assert remove_stale_temporaries(ckpt) == [left]
    assert live.exists() and not left.exists()
    seen = []
    atomic_write_text(ckpt, "x")  # the temporary's name carries the writer's pid
    import topolip.io as tio
    real = tio.os.replace
    try:
        tio.os.replace = lambda a, b: (seen.append(Path(a).name), real(a, b))[1]
        atomic_write_text(ckpt, "y")
    finally:
        tio.os.replace = real
    assert seen and seen[0].startswith(f".m.pt.{os.getpid()}.") and seen[0].endswith(".tmp")


def test_a_training_nobody_waits_for_stops_without_writing_its_checkpoint(tmp_path):
    from topolip.nets.data.mnist import load_mnist
    from topolip.nets.run_spec import ModelSpec, TrainConfig
    from topolip.nets.train import TaskAbandoned, fit

    data = load_mnist(n_train=40, n_test=20, seed=0)
    asked = []
    with pytest.raises(TaskAbandoned, match="client is gone; no checkpoint written"):
        fit(ModelSpec("conv_stack", {"num_layers": 1, "channels": 2}), data,
            TrainConfig(epochs=2, batch_size=40), checkpoint=tmp_path / "m.pt", device="cpu",
            progress=False, still_wanted=lambda: asked.append(1) and False)
    assert asked and not (tmp_path / "m.pt").exists() and not list(tmp_path.glob("*.tmp"))


def _wait_until_unwanted(path):
    from topolip.tasks import task_still_wanted

    Path(path).write_text("running" if task_still_wanted() else "unwanted at start")
    deadline = time.time() + 20
    while task_still_wanted() and time.time() < deadline:
        time.sleep(0.05)
    Path(path).write_text("stopped" if not task_still_wanted() else "still wanted")


def test_a_task_whose_client_let_go_is_no_longer_wanted(tmp_path):
    from distributed import Client, LocalCluster

    from topolip.tasks import task_still_wanted

    assert task_still_wanted(), "outside a worker (a serial run) a task is wanted"
    note = tmp_path / "note.txt"
    with LocalCluster(n_workers=1, threads_per_worker=1, processes=False,
                      dashboard_address=None) as cluster, Client(cluster) as client:
        fut = client.submit(_wait_until_unwanted, str(note), pure=False)
        deadline = time.time() + 20
        while not note.exists() and time.time() < deadline:
            time.sleep(0.05)
        assert note.read_text() == "running"
        fut.cancel()  # what the scheduler does to the tasks of a client that is gone
        deadline = time.time() + 20
        while note.read_text() == "running" and time.time() < deadline:
            time.sleep(0.05)
    assert note.read_text() == "stopped"
