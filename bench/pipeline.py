"""Benchmark: the in-process decision, ours beside the Agent Governance Toolkit's ``govern()``.

    .venv/bin/python bench/pipeline.py [--iterations 20000]

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
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))
os.environ.setdefault("DJANGO_SETTINGS_MODULE", "rabs.settings.base")
# The stages without I/O: the loop latch (a Redis round trip per call, which would also stop a
# loop of 20,000 calls with no new input) is measured with the served stack (broker_load.py).
os.environ["RABS_LOOP_LATCH_CALLS"] = "0"

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
args = json.loads(sys.argv[2])
n = int(sys.argv[1])
for _ in range(2000):
    governed(action={"type": "transport.vehicle.book"}, args=args)
times = []
for _ in range(n):
    t = time.perf_counter_ns()
    governed(action={"type": "transport.vehicle.book"}, args=args)
    times.append((time.perf_counter_ns() - t) / 1000)
times.sort()
print(json.dumps({"p50": statistics.median(times), "p99": times[int(0.99 * (len(times) - 1))]}))
"""


def _agt(iterations: int) -> dict[str, float]:
    python = AGT_VENV / "bin" / "python"
    if not python.exists():
        print(f"installing {AGT_PACKAGE} into {AGT_VENV} (benchmark only)")
        subprocess.run([sys.executable, "-m", "venv", str(AGT_VENV)], check=True)
        subprocess.run(
            [str(python), "-m", "pip", "install", "--quiet", "--disable-pip-version-check",
             AGT_PACKAGE],
            check=True,
        )  # fmt: skip
    done = subprocess.run(
        [str(python), "-c", AGT_SCRIPT, str(iterations), json.dumps(ARGS)],
        check=True,
        capture_output=True,
        text=True,
    )
    return dict(json.loads(done.stdout.strip().splitlines()[-1]))


def _ours(
    iterations: int, *, access: bool = False, held: bool = False
) -> tuple[dict[str, float], str]:
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
    times = []
    for _ in range(iterations):
        t = time.perf_counter_ns()
        once()
        times.append((time.perf_counter_ns() - t) / 1000)
    times.sort()
    return {"p50": statistics.median(times), "p99": times[int(0.99 * (len(times) - 1))]}, outcome


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
    args = parser.parse_args()
    ours, outcome = _ours(args.iterations)
    ours_access, outcome_access = _ours(args.iterations, access=True)
    ours_held, outcome_held = _ours(args.iterations, access=True, held=True)
    held_read = _held_read(min(args.iterations, 2000))
    agt = _agt(args.iterations)
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
