"""Core (seed 001): the orchestrator that routes each request, and tells the event log.

For a task in the Dreamer → Actuator runtime, Core decides where it goes and emits
``core:route`` (``POST /api/v1/core/events/``) — and ``core:response`` when it comes back:

1. **Persona** (seed 003): Thread → Session → Persona (``personas.route_resolve``) chooses who
   answers; the Dreamer reads that persona's texts first.
2. **A reply to a question**: when a question was asked on this conversation's thread
   (clarify), the parked plan and history resume with the person's answer (target
   ``planner``).
3. **Smart routing**: when the route is smart, the control plane's index (discovery) is asked
   which agent fits the message best; another agent gets it through the governed
   ``agents.delegate`` tool (target ``agent:<id>``), and this task ends "handed over".
4. Otherwise the Dreamer decides: a plan, an action, a question (target ``planner``), or an
   answer straight away (target ``direct``) — the route is emitted once its first decision is
   known (``reflex``).
"""

from __future__ import annotations

import logging
from typing import Any

from agents_vm.loop.reflex import Reflex, _thread_of
from agents_vm.service.personas import route_resolve

logger = logging.getLogger("agents_vm.loop.core")

#: A smart route hands over only to an agent that fits at least this well.
MIN_SMART_SCORE = 0.05


class Core(Reflex):
    def _run_core(self, task: dict[str, Any], turn_id: str | None) -> dict[str, Any]:
        task_id = task["task_id"]
        payload = task.get("payload") if isinstance(task.get("payload"), dict) else {}
        assert isinstance(payload, dict)
        context = payload.get("channel_context") or {}
        self.channel = str(payload.get("channel") or context.get("channel") or "text")
        route = route_resolve(
            personas=self.config.personas,
            routing=self.config.routing,
            thread=payload.get("thread_id"),
            session=payload.get("session"),
            channel=self.channel,
        )
        self.persona = route.persona
        note: dict[str, Any] = {"persona": route.persona.name if route.persona else None}
        logger.info("task=%s route %s", task_id, route.as_dict())
        fresh = not self.memory.messages(task_id)
        thread = _thread_of(task)
        if fresh and thread:
            parked = self.memory.clarification_peek(thread)
            if parked is not None and parked["task_id"] != task_id:
                self._resume(task, parked)
                self.memory.clarification_take(thread)
                self._core_event(
                    "route",
                    task_id,
                    target="planner",
                    reason=f"the person answered the question: {parked['question']}",
                    persona=note["persona"],
                    turn_id=turn_id,
                )
                note["reason"] = "resumed"
                return self._run_reflex(task, turn_id, note)
        if fresh and route.smart:
            text = str(payload.get("query") or payload.get("description") or task.get("title"))
            best = self._best_agent(text)
            if best is not None and best["agent_id"] != self.config.agent_id:
                return self._hand_over(task, turn_id, best, text, route.smart_from, note)
            if best is not None:
                note["reason"] = (
                    f"smart routing ({route.smart_from}): this agent fits best ({best['score']})"
                )
        return self._run_reflex(task, turn_id, note)

    def _resume(self, task: dict[str, Any], parked: dict[str, Any]) -> None:
        """The parked task's history and plan, continued in this task with the answer."""
        task_id, old = task["task_id"], parked["task_id"]
        for message in self.memory.messages(old):
            self._append(task_id, message)
        state = self.memory.task_state(old) or {}
        self.memory.task_state_save(
            task_id,
            status="in_progress",
            plan=state.get("plan"),
            done_steps=list(state.get("done_steps") or []),
        )
        payload = task.get("payload") if isinstance(task.get("payload"), dict) else {}
        answer = (payload or {}).get("query") or (payload or {}).get("description") or ""
        self._append(
            task_id,
            {
                "role": "user",
                "content": f"You asked the person: {parked['question']}\nThey answered: {answer}",
            },
        )
        logger.info("task=%s resumes task %s with the person's answer", task_id, old)

    def _best_agent(self, text: str) -> dict[str, Any] | None:
        """The agent the index ranks first for ``text`` (discovery's ``agents``), if any fits."""
        try:
            found = self.broker.discover(text[:1000], limit=5)
        except Exception as exc:  # the index is down: this agent answers
            logger.warning("smart routing without the index: %s", exc)
            return None
        agents = [a for a in found.get("agents") or [] if a.get("score", 0) >= MIN_SMART_SCORE]
        return max(agents, key=lambda a: a["score"], default=None)

    def _hand_over(
        self,
        task: dict[str, Any],
        turn_id: str | None,
        best: dict[str, Any],
        text: str,
        level: str,
        note: dict[str, Any],
    ) -> dict[str, Any]:
        task_id, worker = task["task_id"], str(best["agent_id"])
        reason = f"smart routing ({level}): {worker} fits this message best (score {best['score']})"
        self._core_event(
            "route",
            task_id,
            target=f"agent:{worker}",
            reason=reason,
            persona=note.get("persona"),
            turn_id=turn_id,
        )
        arguments = {
            "agent_id": worker,
            "title": str(task.get("title") or "A message for you")[:200],
            "instructions": text[:20000],
        }
        outcome = self._broker_call(task_id, None, "agents.delegate", arguments, reason)
        if outcome.get("status") != "executed" or outcome.get("ok") is False:
            # Not handed over: this agent answers after all.
            note["reason"] = f"hand-over to {worker} failed ({outcome.get('status')})"
            return self._run_reflex(task, turn_id, note)
        answer = f"Handed over to {best.get('name') or worker}."
        result = {"status": "handed_over", "routed_to": worker, "delegation": outcome["result"]}
        self._core_event(
            "response",
            task_id,
            target=f"agent:{worker}",
            status="handed_over",
            message=answer,
            persona=note.get("persona"),
            turn_id=turn_id,
        )
        self.broker.complete(task_id, result)
        self.memory.task_state_save(task_id, status="done")
        self._record_turn(task_id, turn_id, answer)
        return result
