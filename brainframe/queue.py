"""Background work, enqueued by task name.

Tasks import the services they run; services that queue work name the task here instead of
importing it, so no service imports a task that calls it back (no import cycle). Celery's task
registry resolves the name (discovering every app's ``tasks`` module first), and eager mode in tests
works as for ``task.delay``. The names are the tasks' own (``module.function``): a test checks
each is registered.
"""

from __future__ import annotations

from typing import Any

from celery import Task, current_app
from celery.result import AsyncResult

# brainframe's tasks (brainframe/tasks.py)
RUN_SCHEDULED_JOB = "brainframe.tasks.run_scheduled_job"
EMBED_ROWS = "brainframe.tasks.embed_rows_task"
CLASSIFY_ORIGIN = "brainframe.tasks.classify_origin_task"
RECORD_OBSERVATION = "brainframe.tasks.record_observation_task"


def task(name: str) -> Task[Any, Any]:
    """The registered task ``name``. Outside a worker, Celery discovers the apps' ``tasks``
    modules only when asked: the first lookup of a name it does not know asks."""
    if name not in current_app.tasks:
        current_app.loader.import_default_modules()
    return current_app.tasks[name]


def enqueue(name: str, *args: Any) -> AsyncResult[Any]:
    """Queue the task ``name`` with ``args`` (raises what the broker connection raises)."""
    return task(name).delay(*args)
