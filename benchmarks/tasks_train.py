"""01's trainings (quick profile, 1 seed x 4 architectures, 3 epochs): serial against Dask.

One run times, one after the other on the same machine, the same four trainings

- **serial·T**: in this process, torch at its default thread count ``T`` (the cores);
- **serial·1**: in this process, torch at one thread;
- **local**: a two-worker :func:`topolip.tasks.local_cluster` (one torch thread each), the
  cluster's start-up timed apart;

and prints the wall times, the ratios serial/local, and whether the test accuracies of
serial·1 and local agree (they must: the same thread count gives the same numbers). The load
average before and after is printed: time on a quiet machine.

Usage: python benchmarks/tasks_train.py [--epochs 3] [--workers 2]
"""

from __future__ import annotations

import argparse
import os
import tempfile
import time

import torch

from topolip.experiments.per_model import train_models
from topolip.nets.data import load_dataset
from topolip.nets.run_spec import TrainConfig, spec_for
from topolip.pipeline.params import load_params
from topolip.roster import arch_names
from topolip.tasks import TaskRunner, local_cluster

ARCHS = list(arch_names())


def _train(jobs, data, runner=None):
    with tempfile.TemporaryDirectory() as tmp:
        t0 = time.perf_counter()
        res = train_models(jobs, data, results_dir=tmp, runner=runner)
        return time.perf_counter() - t0, [r["test_accuracy"] for r in res]


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--epochs", type=int, default=3)
    parser.add_argument("--workers", type=int, default=2)
    args = parser.parse_args()
    p, _ = load_params("quick")
    data = load_dataset(p["dataset"], n_train=p["n_train"], n_test=p["n_test"],
                        seed=p["split_seed"])
    jobs = [(spec_for(a, p[a], data),
             TrainConfig(epochs=args.epochs, batch_size=p["batch_size"], lr=p["lr"],
                         weight_decay=p["weight_decay"], seed=0)) for a in ARCHS]
    print(f"load average before: {os.getloadavg()[0]:.2f}; {len(jobs)} trainings of "
          f"{args.epochs} epochs on {len(data.x_train)} images")
    default = torch.get_num_threads()
    serial_t, _ = _train(jobs, data)
    torch.set_num_threads(1)
    serial_1, acc_1 = _train(jobs, data)
    torch.set_num_threads(default)
    t0 = time.perf_counter()
    cluster = local_cluster(args.workers)
    start = time.perf_counter() - t0
    with cluster, TaskRunner(cluster.scheduler_address, progress=False) as runner:
        local, acc_local = _train(jobs, data, runner)
    print(f"{'path':22s} {'wall s':>8s} {'/ local':>8s}")
    print(f"{f'serial, {default} threads':22s} {serial_t:8.1f} {serial_t / local:7.2f}x")
    print(f"{'serial, 1 thread':22s} {serial_1:8.1f} {serial_1 / local:7.2f}x")
    print(f"{f'local, {args.workers} x 1 thread':22s} {local:8.1f} {1:7.2f}x   "
          f"(+ {start:.1f} s cluster start-up, once per chain)")
    print(f"test accuracies serial·1 == local: {acc_1 == acc_local} ({acc_local})")
    print(f"load average after: {os.getloadavg()[0]:.2f}")


if __name__ == "__main__":
    main()
