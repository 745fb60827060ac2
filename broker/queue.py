"""The broker's background work, by task name (see ``brainframe.queue``)."""

from __future__ import annotations

from brainframe.queue import enqueue

# broker/tasks.py
EXECUTE_APPROVED_CALL = "broker.tasks.execute_approved_call"
NOTIFY_APPROVAL = "broker.tasks.notify_approval"
DELIVER_OUTBOUND = "broker.tasks.deliver_outbound"

__all__ = ["DELIVER_OUTBOUND", "EXECUTE_APPROVED_CALL", "NOTIFY_APPROVAL", "enqueue"]
