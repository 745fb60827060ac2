"""Why an approval is in front of a reviewer, in plain words, built from the decision recorded
with its call: the gate's code (``decision:<code>`` among the approval's tags), and the findings
behind it — a V-Pol rule and its reason, the Guardian's flag, a directive, a tier, a cap — whose
sources the tags list in order and whose details the call's ``decision_detail`` joins as
``"<source>: <detail>; <source>: <detail>"`` (``pipeline.gate``).

No codes, tags or specification references reach the sentence: a reviewer reads what happened
and what the rule asked for.
"""

from __future__ import annotations

from brainframe.models import ApprovalRequest

_NOT_FINDINGS = ("decision:", "risk:")


def findings(sources: list[str], detail: str) -> list[tuple[str, str]]:
    """``(source, detail)`` of each finding, read back from the joined detail in the order of
    ``sources`` (a source whose text is missing gets an empty detail)."""
    found: list[tuple[str, str]] = []
    rest = detail or ""
    for index, source in enumerate(sources):
        prefix = f"{source}: "
        if not rest.startswith(prefix):
            found.append((source, ""))
            continue
        rest = rest[len(prefix) :]
        following = f"; {sources[index + 1]}: " if index + 1 < len(sources) else None
        if following and following in rest:
            text, rest = rest.split(following, 1)
            rest = f"{sources[index + 1]}: {rest}"
        else:
            text, rest = rest, ""
        found.append((source, text.strip()))
    return found


def _finding_sentence(approval: ApprovalRequest, source: str, detail: str) -> str:
    agent = approval.agent.name
    kind, _, name = source.partition(":")
    if kind == "vpol":
        policy = approval.vpol.name if approval.vpol_id and approval.vpol else "its policy"
        why = detail or "no reason given"
        return f"the validation policy “{policy}” has a rule ({name}) that asks for a review: {why}"
    if kind == "threat":
        risk, _, patterns = detail.partition(": ")
        score = risk.removeprefix("risk ").strip()
        what = f" ({patterns.replace('_', ' ')})" if patterns else ""
        return f"the Guardian flagged the call's text as risky, score {score}{what}"
    if kind == "cap":
        over = f": {detail}" if detail else ""
        return f"{agent} went over its {name} cap{over}; a call over a cap waits for a person"
    if kind == "directive":
        return f"the prime directive {name} asks a senior reviewer to look: {detail}"
    if kind == "constitution":
        return f"the constitution's rule {name} asks for a review: {detail}"
    if kind == "tier":
        return f"the tool needs more trust than {agent} has ({detail})"
    return detail or source


def _level_sentence(approval: ApprovalRequest, code: str) -> str:
    agent, tool = approval.agent.name, approval.tool_id
    return {
        "level_0_review_all": f"Every {tool} call by {agent} waits for a reviewer: at monitoring "
        "level 0 nothing runs until a person approves it.",
        "level_1_sampled": f"Picked at random to be looked at before it runs: at monitoring level "
        f"1 a share of {agent}'s {tool} calls waits for a reviewer, the rest run.",
        "level_2_post_review": "This call has already run: at monitoring level 2 every call is "
        "reviewed afterwards; reject it if it should not have been made.",
        "level_3_spot_check": "This call has already run and was picked at random for a spot "
        "check (monitoring level 3: most calls run unreviewed).",
    }.get(code, "")


def why_here(approval: ApprovalRequest) -> str:
    """One plain sentence (two at most) on why ``approval`` waits for a reviewer. Reads the
    approval's tags, agent, V-Pol and call (select them with it for a page of cards)."""
    tags = list(approval.tags or [])
    code = next((t.removeprefix("decision:") for t in tags if t.startswith("decision:")), "")
    sources = [t for t in tags[3:] if not t.startswith(_NOT_FINDINGS)]
    call = approval.tool_call if approval.tool_call_id else None
    detail = call.decision_detail if call is not None else ""
    sentence = _level_sentence(approval, code)
    if not sentence:
        parts = [_finding_sentence(approval, s, d) for s, d in findings(sources, detail or "")]
        if parts:
            joined = "; and ".join(parts)
            sentence = f"It waits for a reviewer because {joined}."
        else:
            sentence = "It was held for a reviewer by the broker's rules."
        if code == "flagged_strict":
            sentence += " The check is strict, so only a senior reviewer may decide."
    if approval.escalation_count and approval.status == ApprovalRequest.Status.ESCALATED:
        sentence += " A reviewer passed it on to the senior reviewers."
    return sentence
