"""Benchmark: the in-process decision, ours beside the Agent Governance Toolkit's ``govern()``.

    .venv/bin/python bench/pipeline.py [--iterations 20000] [--rounds 20]

**Ours**: Henry asks for ``transport.vehicle.book`` (3 passengers, a free-text purpose). The
call's context is loaded once from the database (tool, governing V-Pol, directive and
constitution predicates); each iteration then runs every stage from tool resolution to the
gate (allowlist, permission tier, JSON Schema validation of the arguments, Guardian threat scan
of the free text, prime-directive predicates, V-Pol rules, constitution, the gate) on a fresh
context: no I/O.

**AGT**: ``agentmesh.governance.govern`` (``agent-governance-toolkit-core``, installed into
``var/bench/agt-venv`` on first use, never into the project's environment) wrapping a no-op
tool with an equivalent policy (the agent's tool allowlist, "more than 8 passengers needs
approval", default deny) and its audit on, called with the same action and arguments, in a
subprocess of the same run.

**Ours with access control** (docs/access.md): the same call in a chain a carer's message
started: the demo ACL policies are tried in order until the family policy (bookings added for
the benchmark) matches and its scopes are checked, and Henry has caps on all three axes (per-call
limits: no counts to read; sequence rules are measured in ``bench/sequence_rules.py``).

**Ours, held work** (docs/access.md, "Authority is derived"): the same call naming no chain,
by Henry holding that carer's task: decided under the limits of the person whose work he holds
(the held work as ``prepare`` reads it; the read itself, one indexed query made only for an agent
with tasks in progress, is timed on its own line).

The four are timed side by side: each round runs ``iterations / rounds`` decisions of each, in
an order that changes every round, so that the machine's slower moments fall on all of them.
Prints p50/p99 per decision for each and the ratios (ours / AGT).
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import time
import uuid
from collections.abc import Callable
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))
os.environ.setdefault("DJANGO_SETTINGS_MODULE", "rabs.settings.base")
# The stages without I/O: the loop latch (a Redis round trip per call, which would also stop a
# loop of 20,000 calls with no new input) is measured with the served stack (broker_load.py).
os.environ["RABS_LOOP_LATCH_CALLS"] = "0"

#: Untimed decisions at the start of each round (each of the four warms its caches again after
#: the others ran).
WARM_PER_ROUND = 200
AGT_VENV = ROOT / "var" / "bench" / "agt-venv"
AGT_PACKAGE = "agent-governance-toolkit-core==5.0.0"
ARGS = {
    "vehicle_id": "hiace-2",
    "driver_id": "ST-031",
    "start": "2026-03-02T09:00:00+10:00",
    "end": "2026-03-02T15:00:00+10:00",
    "purpose": "Community outing to the museum for the Tuesday group; wheelchair access needed.",
    "passengers": 3,
}

AGT_SCRIPT = r"""
import json, statistics, sys, time, warnings
warnings.simplefilter("ignore")
from agentmesh.governance import Policy, govern

policy = Policy.model_validate({
    "name": "scheduling_write",
    "agents": ["henry"],
    "default_action": "deny",
    "rules": [
        {"name": "large-outing", "condition": "args.passengers > 8",
         "action": "require_approval", "priority": 20},
        {"name": "allowlist", "condition":
         "action.type in ['roster.shift.read', 'roster.shift.create', 'transport.vehicle.book']",
         "action": "allow", "priority": 10},
    ],
})

def book(action, args):
    return {"booked": True}

governed = govern(book, policy=policy, agent_id="henry", audit=True)
args = json.loads(sys.argv[1])
WARM = int(sys.argv[2])
for _ in range(2000):
    governed(action={"type": "transport.vehicle.book"}, args=args)
print("ready", flush=True)
for line in sys.stdin:  # a round: WARM decisions, then n timed ones: answer their times (us)
    for _ in range(WARM):
        governed(action={"type": "transport.vehicle.book"}, args=args)
    times = []
    for _ in range(int(line)):
        t = time.perf_counter_ns()
        governed(action={"type": "transport.vehicle.book"}, args=args)
        times.append((time.perf_counter_ns() - t) / 1000)
    print(json.dumps(times), flush=True)
"""


class _Agt:
    """AGT's ``govern()`` in its own interpreter, run a round at a time."""

    def __init__(self) -> None:
        python = AGT_VENV / "bin" / "python"
        if not python.exists():
            print(f"installing {AGT_PACKAGE} into {AGT_VENV} (benchmark only)")
            subprocess.run([sys.executable, "-m", "venv", str(AGT_VENV)], check=True)
            subprocess.run(
                [str(python), "-m", "pip", "install", "--quiet", "--disable-pip-version-check",
                 AGT_PACKAGE],
                check=True,
            )  # fmt: skip
        self.process = subprocess.Popen(
            [str(python), "-c", AGT_SCRIPT, json.dumps(ARGS), str(WARM_PER_ROUND)],
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            text=True,
        )
        assert self.process.stdout is not None and self.process.stdin is not None
        if self.process.stdout.readline().strip() != "ready":
            raise SystemExit("AGT did not start")

    def round(self, n: int) -> list[float]:
        assert self.process.stdout is not None and self.process.stdin is not None
        self.process.stdin.write(f"{n}\n")
        self.process.stdin.flush()
        return list(json.loads(self.process.stdout.readline()))

    def close(self) -> None:
        assert self.process.stdin is not None
        self.process.stdin.close()
        self.process.wait(timeout=30)


def _ours(*, access: bool = False, held: bool = False) -> tuple[Callable[[], str], str]:
    """The decision to time, set up (and warmed), with its outcome."""
    import django

    django.setup()
    from django.core.management import call_command

    from brainframe.models import Agent
    from brainframe.services.access.held import NOTHING_HELD, HeldWork
    from brainframe.services.seed import seed_brainframe
    from broker.pipeline.context import CallContext, CallRequest
    from broker.pipeline.stages import decide
    from broker.services.calls import prepare

    call_command("migrate", verbosity=0)
    seed_brainframe()
    agent = Agent.objects.get(agent_id="henry")
    request = CallRequest(
        tool_id="transport.vehicle.book", arguments=ARGS, reason="book the van for the outing"
    )
    template = prepare(agent=agent, request=request)
    if access:
        # A carer's message started the chain: the demo's ACL (owner, group chat, family) is
        # tried in order, the family policy (with bookings added) matches, its scopes are
        # checked; Henry's caps on all three axes (per call: no counts to read).
        acl = [dict(spec) for spec in template.acl]
        for spec in acl:
            if spec["name"] == "family-access":
                spec["permissions"] = {
                    **spec["permissions"],
                    "tools": [*spec["permissions"]["tools"], "transport.vehicle.book"],
                }
        template.acl = acl
        template.principal = {
            "known": True, "name": "Marco Rossi", "relationship": "carer", "groups": ["carers"],
            "participant_id": "P-1042", "channel": "sms", "sender": "+61400000103",
            "is_group": False, "hour": 10,
        }  # fmt: skip
        template.principal_key = json.dumps(template.principal)  # as prepare reads it
        agent.caps = {
            "capability": {"max_tier": "WRITE_SAFE", "categories": ["operations", "comms"]},
            "autonomy": {"max_level": 3},
            "authority": {"max_amount": 500, "max_records": 50, "max_recipients": 5},
        }
    holding = NOTHING_HELD
    if held and template.principal is not None:
        holding = HeldWork(((template.principal, template.principal_key or ""),))
        template.principal, template.principal_key = None, None

    def once() -> str:
        ctx = CallContext(
            call_id=uuid.uuid4(),
            agent=agent,
            request=request,
            tool=template.tool,
            vpol=template.vpol,
            directives=template.directives,
            constitution=template.constitution,
            acl=template.acl,
            principal=template.principal,
            principal_key=template.principal_key,
            requester_roles=template.requester_roles,
            local_hour=template.local_hour,
            held=holding,
        )
        return str(decide(ctx).outcome)

    outcome = ""
    for _ in range(2000):
        outcome = once()
    return once, outcome


def _round(once: Callable[[], str], n: int) -> list[float]:
    for _ in range(WARM_PER_ROUND):
        once()
    times = []
    for _ in range(n):
        t = time.perf_counter_ns()
        once()
        times.append((time.perf_counter_ns() - t) / 1000)
    return times


def _figures(times: list[float]) -> dict[str, float]:
    times = sorted(times)
    return {"p50": statistics.median(times), "p99": times[int(0.99 * (len(times) - 1))]}


def _held_read(iterations: int) -> dict[str, float]:
    """``held_work`` for an agent with a task in progress: the query prepare adds then."""
    from brainframe.models import Agent, AgentTask
    from brainframe.services.access.held import held_work

    agent = Agent.objects.get(agent_id="henry")
    AgentTask.objects.create(agent=agent, title="bench: held", status="in_progress")
    times = []
    for n in range(iterations + 200):
        t = time.perf_counter_ns()
        held_work(agent)
        if n >= 200:
            times.append((time.perf_counter_ns() - t) / 1000)
    times.sort()
    return {"p50": statistics.median(times), "p99": times[int(0.99 * (len(times) - 1))]}


def main() -> int:
    parser = argparse.ArgumentParser()
    parser.add_argument("--iterations", type=int, default=20_000)
    parser.add_argument("--rounds", type=int, default=20)
    args = parser.parse_args()
    plain, outcome = _ours()
    access, outcome_access = _ours(access=True)
    held, outcome_held = _ours(access=True, held=True)
    agt_process = _Agt()
    # Side by side: the four take turns, a round each (in an order that changes every round),
    # so that a slower minute of the machine falls on all of them alike.
    per_round = max(1, args.iterations // args.rounds)
    runs: dict[str, Callable[[int], list[float]]] = {
        "ours": lambda n: _round(plain, n),
        "access": lambda n: _round(access, n),
        "held": lambda n: _round(held, n),
        "agt": agt_process.round,
    }
    times: dict[str, list[float]] = {name: [] for name in runs}
    names = list(runs)
    for r in range(args.rounds):
        for name in names[r % 4 :] + names[: r % 4]:
            times[name] += runs[name](per_round)
    agt_process.close()
    ours, ours_access, ours_held, agt = (_figures(times[name]) for name in names)
    held_read = _held_read(min(args.iterations, 2000))
    print(f"decision for henry -> transport.vehicle.book: {outcome}")
    print(f"ours (all stages, no I/O): p50 {ours['p50']:.1f} us, p99 {ours['p99']:.1f} us")
    print(
        f"ours + ACL principal + caps ({outcome_access}): p50 {ours_access['p50']:.1f} us, "
        f"p99 {ours_access['p99']:.1f} us"
    )
    print(
        f"ours, no chain named, held work ({outcome_held}): p50 {ours_held['p50']:.1f} us, "
        f"p99 {ours_held['p99']:.1f} us (+ the held-work read: p50 {held_read['p50']:.1f} us, "
        f"p99 {held_read['p99']:.1f} us)"
    )
    print(f"AGT govern() with audit:   p50 {agt['p50']:.1f} us, p99 {agt['p99']:.1f} us")
    print(f"ratio ours/AGT: p50 {ours['p50'] / agt['p50']:.2f}, p99 {ours['p99'] / agt['p99']:.2f}")
    print(
        f"ratio ours with access/AGT: p50 {ours_access['p50'] / agt['p50']:.2f}, "
        f"p99 {ours_access['p99'] / agt['p99']:.2f}"
    )
    print(
        f"ratio ours with held work/AGT: p50 {ours_held['p50'] / agt['p50']:.2f}, "
        f"p99 {ours_held['p99'] / agt['p99']:.2f}"
    )
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
