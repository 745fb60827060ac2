"""The loop latch (seed 004; docs/channels.md "Yielding the turn"), a stage of the pipeline.

The latch: each call an agent makes counts in Redis (one round trip: a Lua script increments
the count and keeps when counting began). Past ``RABS_LOOP_LATCH_CALLS`` calls, the broker looks
for input that arrived since counting began: if there is some, counting starts again; if there is
none, the agent is running on its own with nothing new to act on, and its calls are denied
``loop_latched`` until new input arrives or it yields — the first denial is the turn boundary
(audited like every decision, and ``loop:latched`` in the event log).
"""

from __future__ import annotations

from datetime import UTC, datetime
from typing import Any

from django.conf import settings
from django.core.cache import cache

from brainframe.events import LoopLatched, emit
from brainframe.services.work.loop import loop_traffic

# KEYS[1]: the agent's counter; ARGV[1]: now (epoch seconds). Returns {count, since}.
_COUNT = """
local n = redis.call('HINCRBY', KEYS[1], 'n', 1)
if n == 1 then redis.call('HSET', KEYS[1], 'since', ARGV[1]) end
redis.call('EXPIRE', KEYS[1], 86400)
return {n, redis.call('HGET', KEYS[1], 'since')}
"""
_script: Any = None


def _key(agent_id: str) -> str:
    return str(cache.make_key(f"loop:calls:{agent_id}"))


def latch_count(agent_id: str) -> tuple[int, datetime]:
    """Count one call of the agent: (calls since counting began, when it began)."""
    global _script
    client = cache.redis()  # type: ignore[attr-defined]
    if _script is None:
        _script = client.register_script(_COUNT)
    now = datetime.now(UTC)
    count, since = _script(keys=[_key(agent_id)], args=[now.timestamp()], client=client)
    return int(count), datetime.fromtimestamp(float(since), UTC)


def latch_reset(agent_id: str) -> None:
    """New input: counting begins again (with the agent's next call)."""
    cache.redis().delete(_key(agent_id))  # type: ignore[attr-defined]


def latch_check(agent_id: str) -> str:
    """Count a call; "" when it may go on, else why the latch stops the loop."""
    limit = int(settings.RABS_LOOP_LATCH_CALLS)
    if limit <= 0:
        return ""
    count, since = latch_count(agent_id)
    if count <= limit:
        return ""
    if loop_traffic(agent_id=agent_id, since=since, limit=1):
        latch_reset(agent_id)
        latch_count(agent_id)  # this call is the first of the new count
        return ""
    if count == limit + 1:  # the first call past the limit: the turn boundary
        emit(LoopLatched(agent_id=agent_id, calls=count - 1, limit=limit))
    return (
        f"{count - 1} calls since {since:%H:%M:%S} UTC with no new input (the loop latch is "
        f"{limit}): end the turn with loop.yield_turn and wait for new traffic"
    )
