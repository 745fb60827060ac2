"""Benchmark: writing turns to the agents ledger, and reading a long conversation on the board.

    .venv/bin/python bench/ledger.py [--turns 1000] [--thread-turns 1000] [--views 100]

In a database of its own (``rabs_bench_ledger``, migrated at start and dropped at the end).

- **floor**: one committed single-row INSERT, the same number of times: what any durable write
  costs on this machine in this run.
- **append**: a turn with 5 tool calls appended whole (``turn_append``: query, a note, the 5
  call ids checked as the agent's own, the answer, sealed with its Merkle hash, its event kept:
  two statements); and as the agent service writes it while it works: ``turn_begin`` (the turn
  and its query), then ``turn_finish`` (the answer, the calls, the seal). ``--turns`` turns each,
  one thread, one at a time; p50 / p95 / p99.
- **inbound**: an SMS through ``message_receive`` (events ledger row, O-Tag, Guardian, session,
  turn, task), for the same count.
- **view**: a thread of ``--thread-turns`` turns (2 messages and 5 tool calls each, the calls
  real audit rows), then ``GET /board/conversations/<thread>/`` (the latest page of 50, as the
  board opens it) and page 1, ``--views`` times each, through Django's test client, signed in.
"""

from __future__ import annotations

import argparse
import os
import statistics
import sys
import time
import uuid
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))
os.environ.setdefault("DJANGO_SETTINGS_MODULE", "rabs.settings.base")
os.environ.setdefault("RABS_INDEX_ON_COMMIT", "false")
BENCH_DB = "rabs_bench_ledger"


def _pct(values: list[float], q: float) -> float:
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, int(q * len(ordered)))]


def _line(label: str, values: list[float]) -> None:
    print(
        f"  {label:34} p50 {statistics.median(values):7.3f}  p95 {_pct(values, 0.95):7.3f}"
        f"  p99 {_pct(values, 0.99):7.3f} ms"
    )


def _calls(agent: Any, n: int) -> list[uuid.UUID]:
    """``n`` real audited calls of ``agent`` (a read tool, executed)."""
    from broker.pipeline.context import CallRequest
    from broker.services.calls import tool_call_submit

    ids = []
    for i in range(n):
        answer = tool_call_submit(
            agent=agent,
            request=CallRequest(
                tool_id="roster.shift.read",
                arguments={"date_from": "2026-03-02", "date_to": f"2026-03-0{2 + i % 7}"},
                reason="benchmark lookup",
            ),
        )
        ids.append(uuid.UUID(answer.body["call_id"]))
    return ids


def floor(n: int) -> None:
    """What one committed single-row INSERT costs on this machine in the same run: the floor
    under any durable write."""
    from django.db import connection

    with connection.cursor() as cursor:
        cursor.execute("CREATE TABLE IF NOT EXISTS bench_floor (id bigserial, note text)")
    times: list[float] = []
    for i in range(n + 50):
        started = time.perf_counter()
        with connection.cursor() as cursor:
            cursor.execute("INSERT INTO bench_floor (note) VALUES (%s)", ["x"])
        if i >= 50:
            times.append((time.perf_counter() - started) * 1000)
    print(f"the floor: one committed single-row INSERT (autocommit), {n}:")
    _line("INSERT + commit", times)


def append(turns: int) -> None:
    from brainframe.models import Agent, Tool
    from brainframe.services.ledger.conversations import turn_append, turn_begin, turn_finish

    Tool.objects.filter(tool_id="roster.shift.read").update(execution_mode="auto")
    agent = Agent.objects.get(agent_id="henry")
    calls = _calls(agent, 5)
    appended: list[float] = []
    thread = None
    for i in range(turns + 50):
        started = time.perf_counter()
        turn = turn_append(
            agent=agent,
            text=f"question {i}",
            notes=["looked it up"],
            answer=f"answer {i}",
            tool_calls=calls,
            thread_id=thread,
            title="bench",
        )
        if i >= 50:
            appended.append((time.perf_counter() - started) * 1000)
        thread = turn.thread_id
    print(f"a turn with 5 tool calls appended whole, {turns} turns in one thread:")
    _line("turn_append", appended)
    opened: list[float] = []
    finished: list[float] = []
    whole: list[float] = []
    thread = None
    for i in range(turns + 50):
        started = time.perf_counter()
        turn = turn_begin(agent=agent, text=f"question {i}", thread_id=thread, title="bench")
        middle = time.perf_counter()
        turn_finish(turn_id=turn.pk, agent=agent, answer=f"answer {i}", tool_calls=calls)
        ended = time.perf_counter()
        thread = turn.thread_id
        if i >= 50:  # warm-up
            opened.append((middle - started) * 1000)
            finished.append((ended - middle) * 1000)
            whole.append((ended - started) * 1000)
    print(f"a turn with 5 tool calls written as the agent works, {turns} turns:")
    _line("open (turn + query message)", opened)
    _line("complete (answer, 5 calls, seal)", finished)
    _line("whole turn", whole)


def inbound(messages: int) -> None:
    from brainframe.models import Agent, ChannelAdapter, ChannelIdentity, Person
    from brainframe.services.ledger.channels import token_hash
    from brainframe.services.ledger.conversations import message_receive

    reggie = Agent.objects.get(agent_id="reggie")
    adapter = ChannelAdapter.objects.create(
        name="bench-sms", channel="sms", agent=reggie, token_hash=token_hash("x" * 20)
    )
    times: list[float] = []
    for i in range(messages + 50):
        person = Person.objects.create(name=f"Caller {i}", relationship="family")
        number = f"+61499{i:06d}"  # clear of the demo people's numbers
        ChannelIdentity.objects.create(person=person, channel="sms", address=number)
        started = time.perf_counter()
        message_receive(
            adapter, {"message_id": f"bench-{i}", "from": number, "body": "Is Friday still on?"}
        )
        if i >= 50:
            times.append((time.perf_counter() - started) * 1000)
    print(f"an inbound SMS (events ledger, O-Tag, Guardian, session, turn, task), {messages}:")
    _line("message_receive", times)


def view(thread_turns: int, views: int) -> None:
    from django.contrib.auth import get_user_model
    from django.db import connection
    from django.test import Client

    from brainframe.models import Agent, Thread
    from brainframe.services.ledger.conversations import turn_begin, turn_finish

    agent = Agent.objects.get(agent_id="henry")
    calls = _calls(agent, 5)
    started = time.perf_counter()
    turn = turn_begin(agent=agent, text="question 0", title="a long conversation")
    thread_id = turn.thread_id
    turn_finish(turn_id=turn.pk, agent=agent, answer="answer 0", tool_calls=calls)
    for i in range(1, thread_turns):
        turn = turn_begin(agent=agent, text=f"question {i}", thread_id=thread_id)
        turn_finish(turn_id=turn.pk, agent=agent, answer=f"answer {i}", tool_calls=calls)
    print(
        f"a thread of {Thread.objects.get(pk=thread_id).turns_count} turns written in "
        f"{time.perf_counter() - started:.1f} s"
    )
    with connection.cursor() as cursor:
        cursor.execute("ANALYZE")
    user = get_user_model().objects.create_superuser("bench-viewer", "b@x.test", "x")
    client = Client()
    client.force_login(user)
    for label, path in (
        ("latest page (50 turns)", f"/board/conversations/{thread_id}/"),
        ("first page (50 turns)", f"/board/conversations/{thread_id}/?page=1"),
    ):
        times: list[float] = []
        for i in range(views + 5):
            t0 = time.perf_counter()
            response = client.get(path)
            elapsed = (time.perf_counter() - t0) * 1000
            assert response.status_code == 200, response.status_code
            if i >= 5:
                times.append(elapsed)
        size = len(response.content) // 1024
        print(f"GET the conversation view, {views} times ({size} KB):")
        _line(label, times)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--turns", type=int, default=1000)
    parser.add_argument("--thread-turns", type=int, default=1000)
    parser.add_argument("--views", type=int, default=100)
    args = parser.parse_args()
    import django

    django.setup()
    from django.test.utils import setup_test_environment

    from bench.common.db import throwaway_database

    setup_test_environment()  # the test client's hosts
    with throwaway_database(BENCH_DB):
        from brainframe.services.seed import seed_brainframe

        seed_brainframe()
        floor(args.turns)
        append(args.turns)
        inbound(args.turns)
        view(args.thread_turns, args.views)


if __name__ == "__main__":
    main()
