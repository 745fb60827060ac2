"""The phases of the cognitive loop (seed 000): what each step of a task does, whatever the mode.

Review a plan step, finish and learn, dispatch the model's tool calls (the loop's own tools and
the broker's, each broker call once per idempotency key), await a reviewer, talk to the model.
The loop itself (``loop``) decides the mode and drives these phases.
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

from agents_vm.client.sdk import BrokerClient, Outcome, PendingApproval
from agents_vm.loop.handlers import HandlerError, Handlers, handler_check
from agents_vm.memory import AgentMemory
from agents_vm.model.plan import Plan, PlanError, Step, plan_id, plan_validate
from agents_vm.model.prompting import outcome_dict, step_prompt
from agents_vm.service.config import Config

logger = logging.getLogger("agents_vm.loop.cognitive")

_FILENAME = re.compile(r"^[\w][\w.-]{0,120}$")


class Drain(Exception):
    """The supervisor asked the worker to stop: leave the task where it stands (persisted)."""


def _key(*parts: Any) -> str:
    digest = hashlib.sha256(json.dumps(parts, sort_keys=True).encode()).digest()
    return str(uuid.UUID(bytes=digest[:16]))


class Phases:
    """One agent's phases over its memory, broker and model."""

    def __init__(
        self,
        config: Config,
        *,
        memory: AgentMemory,
        broker: BrokerClient,
        llm: Any,
        stop: threading.Event,
        handlers: Handlers | None = None,
    ) -> None:
        self.config = config
        #: The handlers this worker started with (a change takes effect in the next worker).
        self.handlers = handlers or Handlers()
        self._contexts: dict[str, dict[str, Any]] = {}
        self.memory = memory
        self.broker = broker
        self.llm = llm
        self.stop = stop
        self.started = time.monotonic()
        self.mode = "super"
        self.model = config.llm.model
        self._tools: dict[str, dict[str, Any]] = {}  # function name → broker tool

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

    def _dream(self, task: dict[str, Any]) -> list[dict[str, Any]]:
        """Dreamer: before planning, look for this agent's proven plans for a goal like the task's
        (``GET /api/v1/discover/``), to offer the model as a starting point. Best effort."""
        logger.info("phase=dream task=%s", task.get("task_id"))
        try:
            found = self.broker.discover(str(task.get("title", ""))[:1000], limit=3)
        except Exception as exc:
            logger.warning("discovery failed: %s", exc)
            return []
        return [p for p in found.get("plans", []) if p.get("outcome") == "finished"]

    def _plan_report(
        self,
        event: str,
        task_id: str,
        plan: Plan,
        *,
        step: Step | None = None,
        status: str = "",
        detail: str = "",
        steps: list[dict[str, Any]] | None = None,
    ) -> None:
        """Tell the control plane (its event log: ``planner:*``) what the planner did. Best
        effort: the task does not fail for a report the broker could not take."""
        try:
            self.broker.plan_event(
                event,
                plan_id=plan_id(task_id, plan),
                task_id=task_id,
                goal=plan.goal,
                step=step.id if step else None,
                tool_id=",".join(step.tools)[:200] if step else None,
                status=status,
                detail=detail,
                steps=steps,
            )
        except Exception as exc:
            logger.warning("planner report %s failed: %s", event, exc)

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
        self._plan_report(
            "step_finished",
            task_id,
            plan,
            step=step,
            status="achieved" if achieved else "not_achieved",
            detail=summary,
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

    def _dispatch(
        self,
        task_id: str,
        step: Step | None,
        call: dict[str, Any],
        plan: Plan | None,
        done_steps: list[str],
        why: str | None = None,
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
            self._plan_report(
                "plan_saved", task_id, new_plan, steps=[st.as_dict() for st in new_plan.steps]
            )
            if following is not None:
                self._plan_report("step_started", task_id, new_plan, step=following)
            return {
                "status": "plan_saved",
                "order": [s.id for s in new_plan.steps],
                "next": step_prompt(following) if following else "nothing left to do",
            }, new_plan
        if name == "record_observation":
            return self._once(task_id, step_id, "observation.record", args, self._observe), plan
        if name == "write_deliverable":
            return self._once(task_id, step_id, "deliverable.upload", args, self._deliver), plan
        if name == "update_handler":
            return self._update_handler(task_id, step_id, args, why), plan
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
        own = ((tool.get("input_schema") or {}).get("properties") or {}).keys()
        if why is not None:  # the Dreamer's words are the R-Tag's why; the arguments are the tool's
            reason: Any = why
        elif "reason" in own:  # the tool takes a reason of its own: it is the call's why as well
            reason = args.get("reason")
        else:
            reason = args.pop("reason", None)
        if not isinstance(reason, str) or not reason.strip():
            return {"status": "error", "detail": "every call needs a reason"}, plan
        return self._broker_call(task_id, step_id, tool["tool_id"], args, reason), plan

    def _update_handler(
        self, task_id: str, step_id: str | None, args: dict[str, Any], why: str | None = None
    ) -> dict[str, Any]:
        """A change to one of the agent's own handlers: checked here, decided by the broker
        (``agent.update_handler``, a reviewer's call), stored once it executed; it takes effect
        in the next worker."""
        handler = str(args.get("name", ""))
        try:
            record = handler_check(handler, args.get("config"), args.get("code"))
        except HandlerError as exc:
            return {"status": "error", "detail": str(exc)}
        reason = str(why or args.get("reason") or f"change my {handler} handler")
        arguments: dict[str, Any] = {"name": handler}
        if args.get("config") is not None:
            arguments["config"] = args["config"]
        if args.get("code") is not None:
            arguments["code"] = args["code"]
        result = self._broker_call(task_id, step_id, "agent.update_handler", arguments, reason)
        if result.get("status") != "executed" or result.get("ok") is False:
            return result
        self.memory.handler_set(handler, record)
        return {
            "status": "saved",
            "handler": handler,
            "takes_effect": "after agent.restart_self",
        }

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

    def _append(self, task_id: str, message: dict[str, Any]) -> None:
        self.memory.append_message(task_id, message)
