"""topolip.tasks (cluster, per_model): the chain's trainings and per-model measurements as Dask
tasks.

One two-worker LocalCluster serves the module (it starts once, a few seconds); every result is
compared with the serial run at the same thread setting (one torch thread), bit for bit.
"""

from __future__ import annotations

import sys

import cloudpickle
import pandas as pd
import pytest
import torch

from topolip.experiments.per_model import map_models, train_models
from topolip.nets.data.split import ImageSplit
from topolip.nets.run_spec import ModelSpec, TrainConfig, spec_for
from topolip.nets.train import accuracy, configure_threads
from topolip.tasks import Task, TaskError, TaskRunner, check_scheduler

# the workers cannot import this test module: send its functions by value
cloudpickle.register_pickle_by_value(sys.modules[__name__])


@pytest.fixture(scope="module")
def data() -> ImageSplit:
    g = torch.Generator().manual_seed(0)
    return ImageSplit("toy", torch.rand(48, 1, 28, 28, generator=g), torch.arange(48) % 10,
                      torch.rand(24, 1, 28, 28, generator=g), torch.arange(24) % 10)


@pytest.fixture(scope="module")
def cluster():
    with TaskRunner("local", n_workers=2, progress=False) as runner:
        yield runner


@pytest.fixture
def one_thread():
    before = torch.get_num_threads()
    configure_threads(1)  # the workers' setting, for a bitwise comparison
    yield
    torch.set_num_threads(before)


def _jobs(data, seeds=(0, 1)):
    specs = [spec_for("conv_stack", {"num_layers": 2, "channels": 3}, data),
             spec_for("attention_stack", {"num_layers": 1, "num_heads": 1, "hidden_dim": 8,
                                          "patch_size": 7}, data)]
    return [(s, TrainConfig(epochs=2, batch_size=16, lr=0.01, seed=seed))
            for s in specs for seed in seeds]


def _comparable(outs, root):
    """Results without wall-clock seconds, checkpoint paths relative to ``root``."""
    return [{**o, "checkpoint": o["checkpoint"].replace(str(root), ""),
             "history": [{k: v for k, v in h.items() if k != "seconds"} for h in o["history"]]}
            for o in outs]


def _probe(model, row, *, x, y):
    with torch.no_grad():
        logits = model(x)
    return pd.DataFrame({"accuracy": [accuracy(model, x, y)],
                         "logit_sum": [float(logits.double().sum())],
                         "row_seed": [row["seed"]]})


def test_check_scheduler():
    assert check_scheduler("local") == "local"
    assert check_scheduler("serial") == "serial"
    assert check_scheduler("tls://10.1.2.3:8786") == "tls://10.1.2.3:8786"
    for bad in ("", "cluster", "tcp://", None, 8786):
        with pytest.raises(ValueError, match="scheduler must be"):
            check_scheduler(bad)
    with pytest.raises(ValueError, match="n_workers"):
        TaskRunner("local", n_workers=0)


def test_serial_results_in_order_and_failures_together():
    def boom(i):
        raise ValueError(f"bad {i}")

    tasks = [Task("a", abs, (-1,)), Task("b fails", boom, (2,)), Task("c", abs, (-3,)),
             Task("d fails", boom, (4,))]
    with pytest.raises(TaskError) as info:
        TaskRunner("serial", progress=False).map(tasks)
    err = info.value
    assert [name for name, _, _ in err.failures] == ["b fails", "d fails"]
    assert "2 of 4 tasks failed" in str(err)
    assert "b fails: ValueError: bad 2" in str(err) and "d fails: ValueError: bad 4" in str(err)
    assert isinstance(err.__cause__, ValueError) and str(err.__cause__) == "bad 2"
    assert TaskRunner("serial", progress=False).map(tasks[::2]) == [1, 3]


@pytest.mark.usefixtures("one_thread")
def test_local_cluster_equals_serial(tmp_path, data, cluster):
    jobs = _jobs(data)
    serial = train_models(jobs, data, results_dir=tmp_path / "serial")
    local = train_models(jobs, data, results_dir=tmp_path / "local", runner=cluster)
    assert [o["resumed_from_epoch"] for o in local] == [0] * len(jobs)
    assert _comparable(local, tmp_path / "local") == _comparable(serial, tmp_path / "serial")
    assert len({o["checkpoint"] for o in local}) == len(jobs)

    models = pd.DataFrame({"arch": [s.arch for s, _ in jobs], "seed": [c.seed for _, c in jobs],
                           "checkpoint": [o["checkpoint"] for o in local]})
    x, y = data.x_test[:12], data.y_test[:12]
    got = map_models(models, _probe, runner=cluster, x=x, y=y)
    want = map_models(models, _probe, x=x, y=y)
    pd.testing.assert_frame_equal(got, want)
    assert got.columns.tolist()[:2] == ["arch", "seed"]
    assert got["seed"].tolist() == got["row_seed"].tolist() == [0, 1, 0, 1]  # table order


def test_failed_task_named_others_kept_and_rerun_resumes(tmp_path, data, cluster):
    jobs = _jobs(data, seeds=(0,))
    broken = (ModelSpec("conv_stack", {**jobs[0][0].params, "num_layers": -1}),
              TrainConfig(epochs=2, batch_size=16, lr=0.01, seed=7))
    with pytest.raises(TaskError) as info:
        train_models([jobs[0], broken, jobs[1]], data, results_dir=tmp_path, runner=cluster)
    (name, exc, _), = info.value.failures
    assert name.startswith("train conv_stack seed 7 (num_layers=-1, channels=3;")
    assert "epochs 2, batch 16, lr 0.01" in name
    assert isinstance(exc, ValueError)
    ckpts = sorted((tmp_path / "models").glob("*.pt"))
    assert [p.name.split("-seed")[0] for p in ckpts] == ["attention_stack", "conv_stack"]
    mtimes = {p: p.stat().st_mtime_ns for p in ckpts}

    again = train_models(jobs, data, results_dir=tmp_path, runner=cluster)
    assert [o["resumed_from_epoch"] for o in again] == [2, 2]  # nothing trained
    assert {p: p.stat().st_mtime_ns for p in ckpts} == mtimes


def test_map_models_checks_its_table():
    with pytest.raises(ValueError, match=r"lacks column\(s\) \['checkpoint'\]"):
        map_models(pd.DataFrame({"arch": ["vit"], "seed": [0]}), _probe)


def test_scheduler_parameters_in_the_schema():
    from topolip.pipeline.param_schema import ParameterError, validate_params

    ok = validate_params({"scheduler": "tcp://10.0.0.5:8786", "n_workers": 3})
    assert ok == {"scheduler": "tcp://10.0.0.5:8786", "n_workers": 3}
    assert validate_params({"n_workers": None}) == {"n_workers": None}
    with pytest.raises(ParameterError, match="scheduler"):
        validate_params({"scheduler": "10.0.0.5:8786"})
    with pytest.raises(ParameterError, match="n_workers"):
        validate_params({"n_workers": 0})


def test_the_chain_cluster_runs_in_the_given_directory_with_one_thread(tmp_path):
    """topolip run's shared cluster: workers in the repository root, one torch thread each."""
    import os

    from distributed import Client

    from topolip.tasks import local_cluster

    with local_cluster(2, cwd=tmp_path) as cluster, Client(cluster) as client:
        assert set(client.run(os.getcwd).values()) == {str(tmp_path.resolve())}
        threads = client.run(lambda: __import__("torch").get_num_threads())
        assert set(threads.values()) == {1} and len(threads) == 2
        # a worker whose heartbeat fails while the chain stops logs nothing a user reads;
        # its other errors still pass
        kept = client.run(_worker_keeps, "Failed to communicate with scheduler during heartbeat.")
        assert set(kept.values()) == {False}
        assert set(client.run(_worker_keeps, "Compute Failed").values()) == {True}
    with pytest.raises(ValueError, match="n_workers"):
        local_cluster(0)


def _worker_keeps(message: str) -> bool:
    """Whether the worker's ``distributed.worker`` logger lets an ERROR record through."""
    import logging

    record = logging.LogRecord("distributed.worker", logging.ERROR, __file__, 0, message,
                               None, None)
    return bool(logging.getLogger("distributed.worker").filter(record))
