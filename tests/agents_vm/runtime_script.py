"""The scripted Dreamer and Actuator of the runtime's end-to-end test (test_runtime.py): each
decides only from what it is sent, as the roles' model servers answer it."""

from __future__ import annotations

import re
from typing import Any

DAYS = {"Monday": "2026-03-02", "Friday": "2026-03-06"}
HANDLER_CODE = "def handle(text, context):\n    return text + ' (Henry, operations)'\n"


def _window(day: str) -> dict[str, str]:
    return {"start": f"{DAYS[day]}T09:00:00+10:00", "end": f"{DAYS[day]}T15:00:00+10:00"}


# --- the Dreamer: plain language, decided by where the task stands ------------------------------


def dreamer(messages: list[dict[str, Any]], tools: list[dict[str, Any]]) -> dict[str, Any]:
    assert not tools, "the Dreamer is never offered function tools"
    system, task, last = messages[0]["content"], messages[1]["content"], messages[-1]["content"]
    if "Task: Say hello" in task:
        return {"content": "FINAL ANSWER: Hello from Henry."}
    if "Task: Arrange Monday's community outing" in task:
        if "Now: step" not in system and "Every step is done" not in system:
            return {
                "content": "PLAN. Goal: Monday's outing for P-1042 is arranged and the carer "
                "knows. Step s1: find an accessible vehicle, using "
                "transport.vehicle.availability. Step s2: book the vehicle and driver, using "
                "transport.vehicle.book, after s1. Step s3: text the carer, using comms.sms.send, "
                "after s2."
            }
        if "Every step is done" in system:
            return {"content": "FINAL ANSWER: Monday's outing is booked and the carer knows."}
        step = re.search(r"Now: step (s\d)", system)
        assert step, system[-300:]
        if "was carried out" in last:
            return {"content": f"Step {step.group(1)} is DONE."}
        return {
            "content": {
                "s1": "Look for an accessible vehicle free on Monday from 9 to 3, using "
                "transport.vehicle.availability.",
                "s2": "Book Hiace 2 with driver ST-031 for the community outing, 3 passengers, "
                "on Monday from 9 to 3, using transport.vehicle.book.",
                "s3": "Text the carer on +61 400 000 001 that Monday's outing is booked, using "
                "comms.sms.send.",
            }[step.group(1)]
        }
    if "Could you book the van" in task:
        if "transport.vehicle.book was carried out" in last:
            return {"content": "FINAL ANSWER: The van is booked for Friday for 3 people."}
        if "They answered: Friday" in last:
            return {
                "content": "Book Hiace 2 with driver ST-031 for the community outing, 3 "
                "passengers, on Friday from 9 to 3, using transport.vehicle.book."
            }
        return {"content": "QUESTION: Which day is the outing, and how many people are going?"}
    if "Task: Sign your answers" in task:
        if "agent.restart_self was carried out" in last:
            return {"content": "FINAL ANSWER: From now on my answers are signed."}
        if "update handler: saved" in last:
            return {
                "content": "Ask for a restart of my worker so the new answer handler takes "
                "effect, using agent.restart_self."
            }
        return {
            "content": "Change my answer handler so every answer ends with my sign-off, using "
            "update_handler."
        }
    return {"content": "FINAL ANSWER: I did this myself, which I should not have."}


# --- the Actuator: one dream in, one call out ----------------------------------------------------

PLAN_STEP = re.compile(r"Step (s\d): ([^,]+), using ([a-z._]+)(?:, after (s\d))?")


def actuator(messages: list[dict[str, Any]], tools: list[dict[str, Any]]) -> dict[str, Any]:
    assert [m["role"] for m in messages] == ["system", "user"], "the Actuator saw more"
    dream = messages[1]["content"]
    offered = {t["function"]["name"] for t in tools}

    def call(function: str, /, **arguments: Any) -> dict[str, Any]:
        assert function in offered, f"{function} not offered: {sorted(offered)}"
        return {"tool_calls": [{"name": function, "arguments": arguments}]}

    if dream.startswith("PLAN"):
        goal = dream.split("Goal: ", 1)[1].split(". Step", 1)[0]
        steps = [
            {"id": sid, "intent": what, "tools": [tool.rstrip(".")], "depends_on": [d] if d else []}
            for sid, what, tool, d in PLAN_STEP.findall(dream)
        ]
        return call("save_plan", goal=goal, steps=steps)
    if dream.startswith("FINAL ANSWER: "):
        return call("finish", answer=dream.removeprefix("FINAL ANSWER: "))
    if dream.startswith("QUESTION: "):
        return call("ask_person", question=dream.removeprefix("QUESTION: "))
    if "is DONE" in dream:
        return call("step_done", summary=dream)
    day = "Friday" if "Friday" in dream else "Monday"
    if "transport.vehicle.availability" in dream:
        return call("transport_vehicle_availability", wheelchair_access=True, **_window(day))
    if "transport.vehicle.book" in dream:
        return call(
            "transport_vehicle_book", vehicle_id="hiace-2", driver_id="ST-031",
            purpose="community outing", passengers=3, **_window(day),
        )  # fmt: skip
    if "comms.sms.send" in dream:
        return call("comms_sms_send", to="+61 400 000 001", message="Monday's outing is booked.")
    if "update_handler" in dream:
        return call("update_handler", name="answer", code=HANDLER_CODE)
    if "agent.restart_self" in dream:
        return call("agent_restart_self", reason="a new answer handler")
    return {"content": "no call"}
