"""01's trainings on the quick profile (1 seed x 4 architectures, 3 epochs): serial or local.

Usage (one JSON line per run; run the modes one after the other, never together)::

    THREADS=2 python benchmarks/tasks_train.py serial   # in-process, torch at THREADS threads
    python benchmarks/tasks_train.py local              # LocalCluster, 2 workers x 1 thread

The local line also gives the cluster's start-up (``cluster_start_s``), the first round trip
(``first_tasks_s``) and its shutdown (``close_s``). The load average before and after is
printed: on a shared machine, compare only runs made under similar load.
"""

import json
import os
import sys
import tempfile
import time

from topolip.data import load_dataset
from topolip.pipeline import load_params
from topolip.tasks import Task, TaskRunner, train_models
from topolip.train import TrainConfig, configure_threads, spec_for

ARCHS = ["vit", "resnet", "attention_stack", "conv_stack"]


def _threads() -> int:
    import torch

    return torch.get_num_threads()


def main(mode: str) -> None:
    p, _ = load_params("quick")
    data = load_dataset(p["dataset"], n_train=p["n_train"], n_test=p["n_test"],
                        seed=p["split_seed"])
    jobs = [(spec_for(a, p[a], data),
             TrainConfig(epochs=3, batch_size=p["batch_size"], lr=p["lr"],
                         weight_decay=p["weight_decay"], seed=0)) for a in ARCHS]
    threads = int(os.environ.get("THREADS", "2")) if mode == "serial" else 1
    out = {"mode": mode, "threads": threads, "load_before": os.getloadavg()}
    with tempfile.TemporaryDirectory() as tmp:
        if mode == "serial":
            configure_threads(threads)
            t0 = time.perf_counter()
            res = train_models(jobs, data, results_dir=tmp)
            out["train_s"] = time.perf_counter() - t0
        else:
            t0 = time.perf_counter()
            runner = TaskRunner("local", n_workers=2, progress=False)
            _ = runner.client  # the cluster and its workers up
            out["cluster_start_s"] = time.perf_counter() - t0
            t1 = time.perf_counter()
            out["worker_threads"] = runner.map([Task("warm", _threads), Task("warm", _threads)])
            out["first_tasks_s"] = time.perf_counter() - t1
            t2 = time.perf_counter()
            res = train_models(jobs, data, results_dir=tmp, runner=runner)
            out["train_s"] = time.perf_counter() - t2
            out["total_s"] = time.perf_counter() - t0
            t3 = time.perf_counter()
            runner.close()
            out["close_s"] = time.perf_counter() - t3
    pairs = list(zip(ARCHS, res, strict=True))
    out["per_model_train_s"] = {a: round(sum(h["seconds"] for h in r["history"]), 2)
                                for a, r in pairs}
    out["test_accuracy"] = {a: r["test_accuracy"] for a, r in pairs}
    out["load_after"] = os.getloadavg()
    print(json.dumps(out))


if __name__ == "__main__":
    main(sys.argv[1])
