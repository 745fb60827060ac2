"""Reading what the model gateway recorded, once it has (a plain answer is recorded after it has
been sent)."""

from __future__ import annotations

import time
from typing import Any

from brainframe.models import LLMRequest


def records(count: int) -> list[LLMRequest]:
    """The gateway's records, once there are ``count`` (a plain answer is recorded after it
    has been sent)."""
    return list(
        wait_for(
            lambda: (
                list(LLMRequest.objects.order_by("id"))
                if LLMRequest.objects.count() >= count
                else None
            )
        )
    )


def wait_for(fetch: Any, seconds: float = 10) -> Any:
    deadline = time.monotonic() + seconds
    while time.monotonic() < deadline:
        found = fetch()
        if found:
            return found
        time.sleep(0.05)
    raise AssertionError("not recorded")
