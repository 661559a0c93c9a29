"""The tasks layer (Dask): a scheduler-agnostic task runner and the per-model tasks (train, map
over trained models).
"""

from __future__ import annotations

from topolip.tasks.cluster import (
    DEFAULT_SCHEDULER_TIMEOUT,
    Task,
    TaskError,
    TaskRunner,
    check_scheduler,
    connect_scheduler,
    local_cluster,
    probe_scheduler,
    task_still_wanted,
)
from topolip.tasks.per_model import (
    map_models,
    train_models,
)

__all__ = [
    "DEFAULT_SCHEDULER_TIMEOUT",
    "Task",
    "TaskError",
    "TaskRunner",
    "check_scheduler",
    "connect_scheduler",
    "local_cluster",
    "map_models",
    "probe_scheduler",
    "task_still_wanted",
    "train_models",
]
