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

import json
import logging
import time
from typing import Any

from agents_vm.client.turns import TurnInterrupted, Turns, transcript
from agents_vm.loop.core import Core
from agents_vm.loop.modes import ModeChoice, select_mode
from agents_vm.loop.phases import Drain, Phases
from agents_vm.loop.reflex import _thread_of
from agents_vm.model.prompting import (
    fn_name,
    function_specs,
    offered,
    step_prompt,
    system_prompt,
    task_prompt,
)

logger = logging.getLogger("agents_vm.loop.cognitive")


#: Broker tools the model reaches through one of the loop's own tools instead.
INDIRECT_TOOLS = frozenset({"agent.update_handler"})


class CognitiveLoop(Phases, Turns, Core):
    """Takes tasks one at a time and runs each in the mode its query calls for (seed 000 §8):
    Normal (read-only tools, one turn) or Super (the full loop with a plan) — with ``[roles]``,
    the full loop is the Dreamer → Actuator runtime (``core``, ``reflex``)."""

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

    def run_task(self, task: dict[str, Any]) -> dict[str, Any]:
        task_id = task["task_id"]
        payload = task.get("payload") or {}
        query = payload.get("query") if isinstance(payload, dict) else None
        thread = _thread_of(task)
        if self.config.roles and thread and self.memory.clarification_peek(thread):
            choice = ModeChoice("super", "the answer to a question this agent asked")
        elif self.config.modes and isinstance(query, str):
            choice = select_mode(query, channel=str(payload.get("channel", "text")))
        else:
            choice = ModeChoice("super", "the full loop")
        logger.info("task=%s mode=%s (%s)", task_id, choice.mode, choice.reason)
        self.mode = choice.mode
        self.model = self.config.modes.get(choice.mode, self.config.llm.model)
        if choice.mode == "external":
            self.broker.fail(task_id, f"not for this agent: {choice.reason}")
            return {"status": "failed", "mode": "external"}
        self._tools = {
            fn_name(t["tool_id"]): t
            for t in self.broker.tools()
            if t["tool_id"] not in INDIRECT_TOOLS
        }
        if not hasattr(self, "_steered"):
            self._steered = {}
        turn_id = self.ledger_turn(task, self.memory, str(query or task_prompt(task)))
        try:
            if choice.mode == "normal":
                result = self._run_normal(task, str(query), choice.reason)
                self._record_turn(task_id, turn_id, str(result.get("answer", "")))
                return result
            if self.config.roles:
                return self._run_core(task, turn_id)
            return self._run_super(task, turn_id)
        except TurnInterrupted:
            # A newer message ended this turn; its task was cancelled and a new one opened.
            logger.info("task %s: turn %s interrupted by a newer message", task_id, turn_id)
            self.memory.task_state_save(task_id, status="cancelled")
            return {"status": "interrupted"}

    def _record_turn(self, task_id: str, turn_id: str | None, answer: str) -> None:
        calls = [c["call_id"] for c in self.memory.calls(task_id) if c.get("call_id")]
        turn = self.turn_done(turn_id, answer, calls)
        if turn:
            self.maybe_compact(
                turn,
                self.config.compact_after_turns,
                self.config.compact_keep_turns,
                lambda previous, folded: self._summarise(task_id, previous, folded),
            )

    def _summarise(self, task_id: str, previous: str, folded: list[dict[str, Any]]) -> str:
        """The model's summary of a thread's older turns (and of the summary before them)."""
        prompt = (
            "Summarise this conversation for your own later reference: who asked what, what "
            "was decided and done, what is still open. Be brief and factual.\n\n"
            + (f"Summary so far:\n{previous}\n\n" if previous else "")
            + transcript(folded)
        )
        reply = self._chat(task_id, [{"role": "user", "content": prompt}], [])
        return str(reply.get("content") or "(no summary)")

    def _run_super(self, task: dict[str, Any], turn_id: str | None) -> dict[str, Any]:
        task_id = task["task_id"]
        state = self.memory.task_state(task_id)
        messages = self.memory.messages(task_id)
        if state is None or not messages:
            logger.info("phase=ingest task=%s", task_id)
            context = self.broker.context(task_id)
            context["proven_plans"] = self._dream(task)
            self.memory.task_state_save(task_id, status="in_progress")
            for message in (
                {"role": "system", "content": system_prompt(self.config.agent_id, context)},
                {"role": "user", "content": task_prompt(task)},
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
            for said in self.steering(turn_id):  # the person wrote again while we worked
                message = {"role": "user", "content": said}
                self._append(task_id, message)
                messages.append(message)
            step = self._current_step(plan, done_steps)
            logger.info("phase=decide task=%s step=%s", task_id, step.id if step else "-")
            reply = self._chat(task_id, messages, offered(self._tools, plan, step))
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
                if following is not None:
                    self._plan_report("step_started", task_id, plan, step=following)
                nudge = f"Review of step {step.id}: {review}. " + (
                    step_prompt(following)
                    if following
                    else "All steps are done. Reply with a short final summary."
                )
                message = {"role": "user", "content": nudge}
                self._append(task_id, message)
                messages.append(message)
                continue
            result = self._finish(task_id, task, plan, done_steps, reply.get("content") or "")
            self._record_turn(task_id, turn_id, str(result.get("summary", "")))
            return result
        reason = f"gave up after {self.config.max_model_turns} model turns"
        if plan is not None:
            self._plan_report("plan_failed", task_id, plan, status="failed", detail=reason)
        self.broker.fail(task_id, reason)
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
            {"role": "system", "content": system_prompt(self.config.agent_id, context)},
            {"role": "user", "content": query},
        ]
        logger.info("phase=decide task=%s", task_id)
        reply = self._chat(task_id, messages, function_specs(read_only))
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
