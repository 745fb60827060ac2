"""Files an agent places in its outbox for a task."""

from __future__ import annotations

import hashlib
from pathlib import PurePath

from django.conf import settings
from django.core.files.uploadedfile import SimpleUploadedFile, UploadedFile
from django.db import transaction

from brainframe.models import Agent, AgentTask, Deliverable, ToolCall


class DeliverableRejected(Exception):
    def __init__(self, status: int, code: str, detail: str) -> None:
        super().__init__(detail)
        self.status, self.code, self.detail = status, code, detail


def deliverable_store(*, agent: Agent, task: AgentTask | None, upload: UploadedFile) -> Deliverable:
    """Store an uploaded file after checking its size and type against the limits in settings."""
    if upload.size is None or upload.size > settings.RABS_DELIVERABLE_MAX_BYTES:
        raise DeliverableRejected(
            413,
            "file_too_large",
            f"deliverables are limited to {settings.RABS_DELIVERABLE_MAX_BYTES} bytes",
        )
    name = PurePath(upload.name or "").name
    extension = PurePath(name).suffix.lower().lstrip(".")
    allowed = settings.RABS_DELIVERABLE_TYPES
    if extension not in allowed:
        raise DeliverableRejected(
            415,
            "file_type_not_allowed",
            f".{extension or '(none)'} files are not accepted; "
            f"allowed: {', '.join(sorted(allowed))}",
        )
    digest = hashlib.sha256()
    for chunk in upload.chunks():
        digest.update(chunk)
    upload.seek(0)
    return Deliverable.objects.create(
        agent=agent,
        task=task,
        file=upload,
        filename=name[:200],
        content_type=allowed[extension],
        size_bytes=upload.size,
        sha256=digest.hexdigest(),
    )


def deliverables_from_call(*, call_id: object, files: dict[str, bytes]) -> list[dict[str, object]]:
    """The files a sandboxed script left in its workspace (``keep_outputs``), stored as the calling
    agent's deliverables for the call's task, each through the same checks as an upload. All or
    none: one refused file stores nothing."""
    call = ToolCall.objects.select_related("agent", "task").get(pk=call_id)
    kept: list[dict[str, object]] = []
    with transaction.atomic():
        for name, data in sorted(files.items()):
            upload = SimpleUploadedFile(PurePath(name).name, data)
            stored = deliverable_store(agent=call.agent, task=call.task, upload=upload)
            kept.append(
                {"id": str(stored.id), "filename": stored.filename, "sha256": stored.sha256}
            )
    return kept
