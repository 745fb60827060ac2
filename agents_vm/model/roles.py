"""Seed 002's model roles: the **Dreamer** thinks in plain language, the **Actuator** translates.

- ``Dreamer.dream(system, history)``: reads the assembled context (persona, constraints of the
  current step, tools in words, the history in words) and writes what to do next — a plan, one
  action, a question for the person, or the final answer — in plain language. It is never given
  function tools and never shown JSON; if it writes JSON anyway, it is told to say it again in
  words (``DREAM_RETRIES`` times), then the dream is refused (``DreamRefused``).
- ``Actuator.fire(dream, tools)``: turns **one** dream into **one** structured tool call. It sees
  a fixed instruction and that dream only — never the history, the constraints or earlier
  results — and must answer with a call (``tool_choice: required``); an answer without one is
  ``ActuatorMiss``.

Both are model aliases in the control plane's gateway (``/llm/v1``; staff choose which model
fills ``dreamer`` and ``actuator``), so any OpenAI-compatible model can play either role.
"""

from __future__ import annotations

import json
import logging
import re
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

logger = logging.getLogger("agents_vm.model.roles")

DREAM_RETRIES = 1

DREAMER_RULES = (
    "You are the Dreamer: you think and decide, in plain language. Never write JSON, code or "
    "markup; another model turns your words into actions. Each time, say exactly one of:\n"
    "- a PLAN for a task of several steps: the goal, then numbered steps, each with what it "
    "achieves, the tool it uses and the steps it depends on;\n"
    "- the ONE next action: the tool, every value it needs, and why;\n"
    "- that the current step is DONE, with a one-line summary;\n"
    "- a QUESTION for the person, when the request is ambiguous and guessing could do harm;\n"
    "- the FINAL ANSWER for the person, when everything is done or nothing needs doing."
)
ACTUATOR_RULES = (
    "You are the Actuator. Translate the instruction into exactly one call of one of the "
    "functions given, with the values the instruction states. Do not reason, add or change "
    "anything; do not answer in words."
)

# A dream that is (or carries) JSON: an object or array, or a fenced block of it.
_JSONISH = re.compile(r"```\s*(json)?\s*[\[{]|\{\s*\"[^\"]+\"\s*:")


class DreamRefused(Exception):
    """The Dreamer kept writing JSON instead of words."""


class ActuatorMiss(Exception):
    """The Actuator answered without a tool call (or with several)."""


@dataclass(frozen=True)
class ToolCall:
    """One structured call the Actuator produced."""

    name: str
    arguments: dict[str, Any]
    raw_arguments: str


def looks_like_json(text: str) -> bool:
    """Whether a dream carries JSON (the Dreamer must write words)."""
    if _JSONISH.search(text):
        return True
    stripped = text.strip()
    if stripped[:1] in "[{":
        try:
            json.loads(stripped)
            return True
        except ValueError:
            return False
    return False


Usage = Callable[[str, Any], None]


class Dreamer:
    def __init__(self, llm: Any, model: str, *, on_usage: Usage | None = None) -> None:
        self.llm, self.model, self.on_usage = llm, model, on_usage

    def dream(self, system: str, history: list[dict[str, str]]) -> str:
        messages: list[dict[str, str]] = [
            {"role": "system", "content": f"{DREAMER_RULES}\n\n{system}"},
            *history,
        ]
        for attempt in range(DREAM_RETRIES + 1):
            response = self.llm.chat.completions.create(model=self.model, messages=messages)
            if self.on_usage is not None:
                self.on_usage(self.model, response.usage)
            text = (response.choices[0].message.content or "").strip()
            if text and not looks_like_json(text):
                return text
            logger.warning("dreamer wrote %s (attempt %d)", "JSON" if text else "nothing", attempt)
            messages = [
                *messages,
                {"role": "assistant", "content": "(an answer that was not plain language)"},
                {
                    "role": "user",
                    "content": "Say that again in plain sentences, without JSON or code.",
                },
            ]
        raise DreamRefused("the Dreamer did not answer in plain language")


class Actuator:
    def __init__(self, llm: Any, model: str, *, on_usage: Usage | None = None) -> None:
        self.llm, self.model, self.on_usage = llm, model, on_usage

    def fire(self, dream: str, tools: list[dict[str, Any]]) -> ToolCall:
        """One dream → one call. The Actuator's whole input is the rule and this dream."""
        response = self.llm.chat.completions.create(
            model=self.model,
            messages=[
                {"role": "system", "content": ACTUATOR_RULES},
                {"role": "user", "content": dream},
            ],
            tools=tools,
            tool_choice="required",
        )
        if self.on_usage is not None:
            self.on_usage(self.model, response.usage)
        calls = response.choices[0].message.tool_calls or []
        if len(calls) != 1:
            raise ActuatorMiss(f"expected one tool call, got {len(calls)}")
        call = calls[0]
        raw = call.function.arguments or "{}"
        try:
            arguments = json.loads(raw)
        except json.JSONDecodeError as exc:
            raise ActuatorMiss("the call's arguments are not JSON") from exc
        if not isinstance(arguments, dict):
            raise ActuatorMiss("the call's arguments are not an object")
        return ToolCall(call.function.name, arguments, raw)
