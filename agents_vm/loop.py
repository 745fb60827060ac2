"""The cognitive loop: Ingest → Decide → Execute → Review → Learn, one task at a time.

- **Ingest**: resume a task this agent already has in progress, or claim the next To Do one;
  load standing notes, the prime-directives preamble and the relevant observations
  (``GET /api/v1/context/?task_id=…``) into the system prompt.
- **Decide**: the model reasons over the conversation. For a multi-step task it saves a plan with
  ``save_plan`` (goal; steps with intent, tools and dependencies), validated as a DAG and run in
  topological order, one step at a time. Every tool call carries the model's stated ``reason``,
  which becomes the call's R-Tag reason in the broker.
- **Execute**: the broker's tools are offered to the model as function tools (only the current
  step's tools while a plan runs). A denial's code and reason go back to the model, which may
  save a new plan; a pending approval is awaited within ``approval_wait_seconds``.
- **Review**: when the model ends a step, the step's calls are checked: it is achieved if one of
  them executed; the outcome is recorded and reported as task progress.
- **Learn**: observations the model records go to the context buckets; deliverables it writes go
  to the outbox and are uploaded; the task's summary goes to the encrypted journal; then the task
  is completed.

Everything the loop does is persisted in ``agent_memory.db`` before it moves on: the
conversation, the plan and finished steps, and every broker call with its idempotency key
(derived from the task, step, tool and arguments). A restarted worker replays the same
conversation and gets the same outcomes (from its own record, or from the broker's idempotent
replay), so no call ever runs twice.
"""

from __future__ import annotations

import hashlib
import json
import logging
import re
import threading
import time
import uuid
from pathlib import Path
from typing import Any

from .config import Config
from .memory import AgentMemory
from .modes import ModeChoice, select_mode
from .plan import SAVE_PLAN_SCHEMA, Plan, PlanError, Step, plan_validate
from .sdk import (
    BrokerClient,
    Denied,
    Executed,
    Expired,
    InvalidArguments,
    Outcome,
    PendingApproval,
    Rejected,
)

logger = logging.getLogger("agents_vm.loop")

REASON_PROPERTY = {
    "type": "string",
    "description": "Why you are making this call, in one sentence (recorded in the audit).",
}
LOCAL_TOOLS: dict[str, dict[str, Any]] = {
    "save_plan": {
        "description": "Save (or replace) the plan for a multi-step task: the goal and its "
        "steps, each with its intent, the tools it uses and the steps it depends on.",
        "parameters": SAVE_PLAN_SCHEMA,
    },
    "record_observation": {
        "description": "Record something worth remembering about an entity (organisational "
        "memory). Leave bucket out to let the bucket checker choose.",
        "parameters": {
            "type": "object",
            "properties": {
                "bucket": {"type": "string"},
                "entity": {"type": "string"},
                "pattern_type": {"type": "string", "description": "e.g. recurring_issue"},
                "observation": {"type": "string"},
                "severity": {"type": "integer", "minimum": 1, "maximum": 5},
            },
            "required": ["entity", "pattern_type", "observation"],
        },
    },
    "write_deliverable": {
        "description": "Write a file for the task's requester; it is uploaded as a deliverable.",
        "parameters": {
            "type": "object",
            "properties": {"filename": {"type": "string"}, "content": {"type": "string"}},
            "required": ["filename", "content"],
        },
    },
    "remember_preference": {
        "description": "Remember a person's preference in the agent's private memory.",
        "parameters": {
            "type": "object",
            "properties": {"key": {"type": "string"}, "value": {"type": "string"}},
            "required": ["key", "value"],
        },
    },
}
_SAFE_NAME = re.compile(r"[^a-zA-Z0-9_-]")
_FILENAME = re.compile(r"^[\w][\w.-]{0,120}$")


class Drain(Exception):
    """The supervisor asked the worker to stop: leave the task where it stands (persisted)."""


def _key(*parts: Any) -> str:
    digest = hashlib.sha256(json.dumps(parts, sort_keys=True).encode()).digest()
    return str(uuid.UUID(bytes=digest[:16]))


def outcome_dict(outcome: Outcome) -> dict[str, Any]:
    """What the model is told about a call."""
    if isinstance(outcome, Executed):
        return {"status": "executed", "ok": outcome.ok, "result": outcome.result}
    if isinstance(outcome, Denied):
        return {"status": "denied", "code": outcome.code, "reason": outcome.detail}
    if isinstance(outcome, InvalidArguments):
        return {"status": "invalid_arguments", "errors": outcome.errors}
    if isinstance(outcome, Rejected):
        return {"status": "rejected", "reason": outcome.reason}
    if isinstance(outcome, Expired):
        return {"status": "expired"}
    if isinstance(outcome, PendingApproval):
        return {"status": "pending_approval", "call_id": outcome.call_id}
    return {"status": "unknown"}


class CognitiveLoop:
    def __init__(
        self,
        config: Config,
        *,
        memory: AgentMemory,
        broker: BrokerClient,
        llm: Any,
        stop: threading.Event,
    ) -> None:
        self.config = config
        self.memory = memory
        self.broker = broker
        self.llm = llm
        self.stop = stop
        self.started = time.monotonic()
        self.mode = "super"
        self.model = config.llm.model
        self._tools: dict[str, dict[str, Any]] = {}  # function name → broker tool

    # --- the outer loop ----------------------------------------------------------------------

    def run_forever(self) -> None:
        while not self.stop.is_set():
            try:
                task = self.next_task()
            except Exception as exc:  # broker unreachable: say so, wait, try again
                logger.warning("cannot reach the broker: %s", exc)
                self.stop.wait(self.config.poll_seconds)
                continue
            self._heartbeat("active" if task else "idle")
            if task is None:
                self.stop.wait(self.config.poll_seconds)
                continue
            try:
                self.run_task(task)
            except Drain:
                logger.info("draining: task %s stays in progress", task["task_id"])
                return
        logger.info("stopped")

    def _heartbeat(self, status: str) -> None:
        try:
            self.broker.heartbeat(status, int(time.monotonic() - self.started))
        except Exception as exc:  # the broker may be down for a moment; the loop goes on
            logger.warning("heartbeat failed: %s", exc)

    def next_task(self) -> dict[str, Any] | None:
        """A task already in progress (a resumed worker), else the next To Do task, claimed."""
        in_progress = self.broker.tasks("in_progress")
        if in_progress:
            return in_progress[0]
        for task in self.broker.tasks("todo"):
            try:
                return self.broker.claim(task["task_id"])
            except Exception as exc:  # claimed meanwhile, or cancelled: try the next
                logger.info("could not claim %s: %s", task["task_id"], exc)
        return None

    # --- one task ----------------------------------------------------------------------------

    def run_task(self, task: dict[str, Any]) -> dict[str, Any]:
        task_id = task["task_id"]
        payload = task.get("payload") or {}
        query = payload.get("query") if isinstance(payload, dict) else None
        if self.config.modes and isinstance(query, str):
            choice = select_mode(query, channel=str(payload.get("channel", "text")))
        else:
            choice = ModeChoice("super", "the full loop")
        logger.info("task=%s mode=%s (%s)", task_id, choice.mode, choice.reason)
        self.mode = choice.mode
        self.model = self.config.modes.get(choice.mode, self.config.llm.model)
        if choice.mode == "external":
            self.broker.fail(task_id, f"not for this agent: {choice.reason}")
            return {"status": "failed", "mode": "external"}
        self._tools = {self._fn_name(t["tool_id"]): t for t in self.broker.tools()}
        if choice.mode == "normal":
            return self._run_normal(task, str(query), choice.reason)
        state = self.memory.task_state(task_id)
        messages = self.memory.messages(task_id)
        if state is None or not messages:
            logger.info("phase=ingest task=%s", task_id)
            context = self.broker.context(task_id)
            self.memory.task_state_save(task_id, status="in_progress")
            for message in (
                {"role": "system", "content": self._system_prompt(context)},
                {"role": "user", "content": self._task_prompt(task)},
            ):
                self._append(task_id, message)
            messages = self.memory.messages(task_id)
            state = self.memory.task_state(task_id)
        else:
            logger.info("phase=ingest task=%s resumed after %d messages", task_id, len(messages))
        assert state is not None
        plan = self._plan(state)
        done_steps: list[str] = list(state["done_steps"])

        # A worker stopped between the model's tool calls and their answers: answer them first
        # (each call's idempotency key makes a repeat a replay, never a second execution).
        answered = {m.get("tool_call_id") for m in messages if m.get("role") == "tool"}
        last = messages[-1] if messages else {}
        for call in last.get("tool_calls") or []:
            if call["id"] not in answered:
                step = self._current_step(plan, done_steps)
                result, plan = self._dispatch(task_id, step, call, plan, done_steps)
                tool_message = {
                    "role": "tool",
                    "tool_call_id": call["id"],
                    "content": json.dumps(result, default=str),
                }
                self._append(task_id, tool_message)
                messages.append(tool_message)

        for _turn in range(self.config.max_model_turns):
            if self.stop.is_set():
                raise Drain
            step = self._current_step(plan, done_steps)
            logger.info("phase=decide task=%s step=%s", task_id, step.id if step else "-")
            reply = self._chat(task_id, messages, self._offered(plan, step))
            self._append(task_id, reply)
            messages.append(reply)
            calls = reply.get("tool_calls") or []
            if calls:
                for call in calls:
                    if self.stop.is_set():
                        raise Drain
                    result, plan = self._dispatch(task_id, step, call, plan, done_steps)
                    tool_message = {
                        "role": "tool",
                        "tool_call_id": call["id"],
                        "content": json.dumps(result, default=str),
                    }
                    self._append(task_id, tool_message)
                    messages.append(tool_message)
                continue
            # The model ended its turn: review the step, or finish the task.
            if plan is not None and step is not None:
                review = self._review(task_id, step, plan, done_steps)
                done_steps.append(step.id)
                self.memory.task_state_save(task_id, status="in_progress", done_steps=done_steps)
                following = self._current_step(plan, done_steps)
                nudge = f"Review of step {step.id}: {review}. " + (
                    self._step_prompt(following)
                    if following
                    else "All steps are done. Reply with a short final summary."
                )
                message = {"role": "user", "content": nudge}
                self._append(task_id, message)
                messages.append(message)
                continue
            return self._finish(task_id, task, plan, done_steps, reply.get("content") or "")
        self.broker.fail(task_id, f"gave up after {self.config.max_model_turns} model turns")
        self.memory.task_state_save(task_id, status="failed")
        self._report_usage(task_id)
        return {"status": "failed"}

    def _run_normal(self, task: dict[str, Any], query: str, why: str) -> dict[str, Any]:
        """Normal mode: read-only tools and one turn (one round of lookups, then the answer)."""
        task_id = task["task_id"]
        logger.info("phase=ingest task=%s normal mode", task_id)
        context = self.broker.context(task_id)
        read_only = {n: t for n, t in self._tools.items() if t.get("risk_level") == "read"}
        messages: list[dict[str, Any]] = [
            {"role": "system", "content": self._system_prompt(context)},
            {"role": "user", "content": query},
        ]
        logger.info("phase=decide task=%s", task_id)
        reply = self._chat(task_id, messages, self._function_specs(read_only))
        messages.append(reply)
        calls = []
        for call in reply.get("tool_calls") or []:
            tool = read_only.get(call["function"]["name"])
            try:
                args = json.loads(call["function"].get("arguments") or "{}")
            except json.JSONDecodeError:
                args = None
            if tool is None or not isinstance(args, dict):
                result: dict[str, Any] = {"status": "error", "detail": "read-only lookups only"}
            else:
                logger.info("phase=execute task=%s tool=%s", task_id, tool["tool_id"])
                reason = str(args.pop("reason", "") or f"look-up for: {query[:200]}")
                result = self._broker_call(task_id, None, tool["tool_id"], args, reason)
                calls.append({"tool_id": tool["tool_id"], "status": result["status"]})
            messages.append(
                {"role": "tool", "tool_call_id": call["id"], "content": json.dumps(result)}
            )
        if calls or reply.get("tool_calls"):
            reply = self._chat(task_id, messages, [])
        answer = reply.get("content") or ""
        logger.info("phase=learn task=%s", task_id)
        result = {"mode": "normal", "why": why, "answer": answer, "calls": calls}
        self.broker.complete(task_id, result)
        self.memory.task_state_save(task_id, status="done")
        self._report_usage(task_id)
        return result

    def _report_usage(self, task_id: str) -> None:
        usage = self.memory.usage(task_id)
        if not usage:
            return
        try:
            self.broker.usage(
                mode=self.mode,
                model=usage["model"],
                prompt_tokens=usage["prompt_tokens"],
                completion_tokens=usage["completion_tokens"],
                model_calls=usage["model_calls"],
                task_id=task_id,
            )
        except Exception as exc:  # the cost record is not worth failing the task for
            logger.warning("usage report failed: %s", exc)

    # --- phases ------------------------------------------------------------------------------

    def _review(self, task_id: str, step: Step, plan: Plan, done_steps: list[str]) -> str:
        logger.info("phase=review task=%s step=%s", task_id, step.id)
        broker_ids = {t["tool_id"] for t in self._tools.values()}
        broker_calls = [
            c
            for c in self.memory.calls(task_id)
            if c["step_id"] == step.id and c["tool_id"] in broker_ids
        ]
        executed = [c for c in broker_calls if c["status"] == "executed"]
        achieved = bool(executed) or not step.tools
        summary = (
            f"{'achieved' if achieved else 'NOT achieved'} "
            f"({len(executed)} of {len(broker_calls)} calls executed)"
        )
        progress = int(100 * (len(done_steps) + 1) / max(1, len(plan.steps)))
        try:
            self.broker.progress(task_id, min(progress, 99), f"step {step.id}: {summary}")
        except Exception as exc:
            logger.warning("progress report failed: %s", exc)
        return summary

    def _finish(
        self,
        task_id: str,
        task: dict[str, Any],
        plan: Plan | None,
        done_steps: list[str],
        summary: str,
    ) -> dict[str, Any]:
        logger.info("phase=learn task=%s", task_id)
        calls = self.memory.calls(task_id)
        self.memory.journal_write(
            f"Task {task.get('title', task_id)}: {summary} "
            f"({len(calls)} actions, steps done: {', '.join(done_steps) or '-'})"
        )
        result = {
            "summary": summary,
            "plan": plan.as_dict() if plan else None,
            "steps_done": done_steps,
            "calls": [
                {"tool_id": c["tool_id"], "call_id": c["call_id"], "status": c["status"]}
                for c in calls
            ],
        }
        self.broker.complete(task_id, result)
        self.memory.task_state_save(task_id, status="done")
        self._report_usage(task_id)
        self.memory.prune(self.config.conversation_max_age_days)
        logger.info("task %s complete", task_id)
        return result

    # --- dispatching the model's tool calls ---------------------------------------------------

    def _dispatch(
        self,
        task_id: str,
        step: Step | None,
        call: dict[str, Any],
        plan: Plan | None,
        done_steps: list[str],
    ) -> tuple[dict[str, Any], Plan | None]:
        name = call["function"]["name"]
        try:
            args = json.loads(call["function"].get("arguments") or "{}")
        except json.JSONDecodeError:
            return {"status": "error", "detail": "arguments are not valid JSON"}, plan
        if not isinstance(args, dict):
            return {"status": "error", "detail": "arguments must be an object"}, plan
        step_id = step.id if step else None
        logger.info("phase=execute task=%s step=%s tool=%s", task_id, step_id, name)
        if name == "save_plan":
            try:
                new_plan = plan_validate(
                    args, known_tools=[t["tool_id"] for t in self._tools.values()]
                )
            except PlanError as exc:
                return {"status": "plan_refused", "problems": exc.problems}, plan
            kept = [s for s in done_steps if s in {st.id for st in new_plan.steps}]
            done_steps[:] = kept
            self.memory.task_state_save(
                task_id, status="in_progress", plan=new_plan.as_dict(), done_steps=kept
            )
            following = self._current_step(new_plan, kept)
            return {
                "status": "plan_saved",
                "order": [s.id for s in new_plan.steps],
                "next": self._step_prompt(following) if following else "nothing left to do",
            }, new_plan
        if name == "record_observation":
            return self._once(task_id, step_id, "observation.record", args, self._observe), plan
        if name == "write_deliverable":
            return self._once(task_id, step_id, "deliverable.upload", args, self._deliver), plan
        if name == "remember_preference":
            self.memory.preference_set(str(args.get("key", "")), str(args.get("value", "")))
            return {"status": "remembered"}, plan
        tool = self._tools.get(name)
        if tool is None:
            return {"status": "error", "detail": f"no tool named {name}"}, plan
        if step is not None and tool["tool_id"] not in step.tools:
            return {
                "status": "error",
                "detail": f"{tool['tool_id']} is not part of step {step.id}; "
                "save a new plan to change the steps",
            }, plan
        reason = args.pop("reason", None)
        if not isinstance(reason, str) or not reason.strip():
            return {"status": "error", "detail": "every call needs a reason"}, plan
        return self._broker_call(task_id, step_id, tool["tool_id"], args, reason), plan

    def _broker_call(
        self, task_id: str, step_id: str | None, tool_id: str, args: dict[str, Any], reason: str
    ) -> dict[str, Any]:
        key = _key(self.config.agent_id, task_id, step_id, tool_id, args)
        known = self.memory.call_get(key)
        if known and known["status"] not in ("pending_approval", "sent"):
            logger.info("call %s already %s: not calling again", tool_id, known["status"])
            return dict(known["outcome"])
        if known and known["status"] == "pending_approval":
            outcome: Outcome = self._await(known["call_id"])
        else:
            self.memory.call_save(
                key,
                task_id=task_id,
                step_id=step_id,
                tool_id=tool_id,
                call_id=None,
                status="sent",
                outcome={},
            )
            # The same key on a retry or after a restart: the broker answers as the first time.
            outcome = self.broker.call_tool(
                tool_id, args, reason=reason, task_id=task_id, idempotency_key=key
            )
            if isinstance(outcome, PendingApproval):
                self._save_outcome(key, task_id, step_id, tool_id, outcome)
                outcome = self._await(outcome.call_id)
        self._save_outcome(key, task_id, step_id, tool_id, outcome)
        return outcome_dict(outcome)

    def _save_outcome(
        self, key: str, task_id: str, step_id: str | None, tool_id: str, outcome: Outcome
    ) -> None:
        result = outcome_dict(outcome)
        self.memory.call_save(
            key,
            task_id=task_id,
            step_id=step_id,
            tool_id=tool_id,
            call_id=getattr(outcome, "call_id", None),
            status=result["status"],
            outcome=result,
        )

    def _await(self, call_id: str) -> Outcome:
        """Poll a pending call with backoff, within the bound; a stop request drains."""
        deadline = time.monotonic() + self.config.approval_wait_seconds
        delay = 0.2
        while True:
            status = self.broker.call_status(call_id)
            if not isinstance(status, PendingApproval) or time.monotonic() >= deadline:
                return status
            if self.stop.wait(min(delay, max(0.0, deadline - time.monotonic()))):
                raise Drain
            delay = min(5.0, delay * 2)

    def _once(
        self,
        task_id: str,
        step_id: str | None,
        action: str,
        args: dict[str, Any],
        run: Any,
    ) -> dict[str, Any]:
        """A non-broker side effect (observation, deliverable) done once per task and input."""
        key = _key(self.config.agent_id, task_id, action, args)
        known = self.memory.call_get(key)
        if known and known["status"] == "done":
            return dict(known["outcome"])
        try:
            result = {"status": "done", **run(task_id, args)}
        except Exception as exc:
            return {"status": "error", "detail": str(exc)[:300]}
        self.memory.call_save(
            key,
            task_id=task_id,
            step_id=step_id,
            tool_id=action,
            call_id=None,
            status="done",
            outcome=result,
        )
        return result

    def _observe(self, task_id: str, args: dict[str, Any]) -> dict[str, Any]:
        fields = ("bucket", "entity", "pattern_type", "observation", "severity")
        return self.broker.observe(**{k: args[k] for k in fields if k in args})

    def _deliver(self, task_id: str, args: dict[str, Any]) -> dict[str, Any]:
        filename = str(args.get("filename", ""))
        if not _FILENAME.match(filename):
            raise ValueError("filename: letters, digits, dot, dash and underscore only")
        content = str(args.get("content", "")).encode()
        folder = self.config.outbox / task_id
        folder.mkdir(parents=True, exist_ok=True)
        path: Path = folder / filename
        path.write_bytes(content)
        uploaded = self.broker.upload(filename, content, task_id=task_id)
        return {"deliverable_id": uploaded.get("id"), "path": str(path)}

    # --- the model ---------------------------------------------------------------------------

    def _chat(
        self, task_id: str, messages: list[dict[str, Any]], tools: list[dict[str, Any]]
    ) -> dict[str, Any]:
        kwargs: dict[str, Any] = {"model": self.model, "messages": messages}
        if tools:
            kwargs["tools"] = tools
        response = self.llm.chat.completions.create(**kwargs)
        if response.usage is not None:
            self.memory.usage_add(
                task_id,
                model=self.model,
                prompt=response.usage.prompt_tokens,
                completion=response.usage.completion_tokens,
            )
        message = response.choices[0].message
        out: dict[str, Any] = {"role": "assistant", "content": message.content or ""}
        if message.tool_calls:
            out["tool_calls"] = [
                {
                    "id": c.id,
                    "type": "function",
                    "function": {"name": c.function.name, "arguments": c.function.arguments},
                }
                for c in message.tool_calls
            ]
        return out

    def _offered(self, plan: Plan | None, step: Step | None) -> list[dict[str, Any]]:
        """Function tools for this turn: the step's broker tools while a plan runs."""
        specs = [
            {"type": "function", "function": {"name": name, **spec}}
            for name, spec in LOCAL_TOOLS.items()
        ]
        offered = {
            name: tool
            for name, tool in self._tools.items()
            if plan is None or (step is not None and tool["tool_id"] in step.tools)
        }
        return specs + self._function_specs(offered)

    @staticmethod
    def _function_specs(tools: dict[str, dict[str, Any]]) -> list[dict[str, Any]]:
        """Broker tools as function tools, each with a required ``reason``."""
        specs = []
        for name, tool in tools.items():
            schema = dict(tool.get("input_schema") or {"type": "object"})
            schema["properties"] = {**schema.get("properties", {}), "reason": REASON_PROPERTY}
            schema["required"] = [*schema.get("required", []), "reason"]
            specs.append(
                {
                    "type": "function",
                    "function": {
                        "name": name,
                        "description": f"{tool['tool_id']}: {tool.get('description', '')}",
                        "parameters": schema,
                    },
                }
            )
        return specs

    @staticmethod
    def _fn_name(tool_id: str) -> str:
        return _SAFE_NAME.sub("_", tool_id)[:64]

    def _plan(self, state: dict[str, Any]) -> Plan | None:
        if not state.get("plan"):
            return None
        known = [t["tool_id"] for t in self._tools.values()]
        return plan_validate(state["plan"], known_tools=known)

    @staticmethod
    def _current_step(plan: Plan | None, done_steps: list[str]) -> Step | None:
        if plan is None:
            return None
        return next((s for s in plan.steps if s.id not in done_steps), None)

    @staticmethod
    def _step_prompt(step: Step) -> str:
        return (
            f"Now step {step.id}: {step.intent}. Tools for this step: "
            f"{', '.join(step.tools) or 'none'}. When the step is done, reply without a tool call."
        )

    def _system_prompt(self, context: dict[str, Any]) -> str:
        lines = [context.get("directives_preamble", ""), "", f"You are {self.config.agent_id}."]
        notes = context.get("notes") or []
        if notes:
            lines += ["Standing notes:", *[f"- {n['content']}" for n in notes]]
        observations = context.get("observations") or []
        if observations:
            lines += [
                "What the organisation knows that may matter:",
                *[f"- [{o['bucket']}] {o['entity']}: {o['observation']}" for o in observations],
            ]
        lines += [
            "",
            "For a task with more than one step, first call save_plan. Every tool call needs a "
            "reason. If a call is denied, read the reason and change the plan.",
        ]
        return "\n".join(lines)

    @staticmethod
    def _task_prompt(task: dict[str, Any]) -> str:
        payload = task.get("payload") or {}
        details = json.dumps(payload, default=str) if payload else ""
        return f"Task: {task.get('title', '')}\n{details}".strip()

    def _append(self, task_id: str, message: dict[str, Any]) -> None:
        self.memory.append_message(task_id, message)
