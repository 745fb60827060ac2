"""Untrusted text that tries to act: requests to move money, change bank or payroll details,
send data outward, approve, skip review or hide something.

A request found here is not an attack by itself: a manager may ask for a roster to be sent, a
finance officer for a payment run. Whether it counts is decided by who is asking (``rights``):
the acts the source may request. Content from an untrusted source (tool output, a web page, an
inbound message from someone without the right) may request none, so any request in it is a
finding (``guardian.assess``). Keywords alone decide nothing: a request that is mentioned rather
than made (quoted, negated, narrated, reported, given as an example, or in a document about
attacks that does not speak to a model: ``safety.mention``) is not one.

Each act is a regular expression over the folded text (``normalise.fold``) with quotations
set aside; the match's start is where the mention checks look.
"""

from __future__ import annotations

import os
import re
from collections.abc import Collection
from dataclasses import dataclass
from functools import lru_cache
from typing import Any

from brainframe.safety.fastre import PREFILTER, UNICODE, database, scan, utf8
from brainframe.safety.guardian import asking, mention

ACTS = (
    "payment",
    "bank_details",
    "new_account",
    "payroll",
    "forward",
    "approve",
    "skip_review",
    "conceal",
)
#: What a source of each trust level may request when nobody says otherwise. A standard source
#: (an agent, a staff member) may ask for payments and the like (the broker's ACL and V-Pol decide
#: those calls); nobody is presumed entitled to skip review or to hide something, nor to have
#: money sent to an account number written in a message (``new_account``: how payroll and
#: supplier fraud arrives, "it's Jenny in accounts, pay it to 062-000 1188 4421") — a person whose
#: ACL reaches the payment or bank-detail tools may, and so may an agent's own call
#: (``unentitled``).
DEFAULT_RIGHTS = {
    "system": frozenset(ACTS),
    "operator": frozenset(ACTS) - {"conceal"},
    "standard": frozenset(ACTS) - {"conceal", "skip_review", "new_account"},
    "untrusted": frozenset(),
    "hostile": frozenset(),
}
#: Channels whose sender can be forged: naming a new account through them is never vouched for.
SPOOFABLE_SOURCES = frozenset(("email", "sms"))
#: Sources that are content, not a person: they may request nothing, whatever the trust level.
CONTENT_SOURCES = frozenset(
    ("tool_output", "tool_result", "web_page", "document", "calendar", "search_result", "file")
)

_MONEY = (
    r"(?:\$\s?\d|\d[\d,]*\s?(?:dollars|aud)\b|payments?|funds|money|invoices?|amount|balance|"
    r"bond|deposit|refunds?|reimbursements?|bonus(?:es)?|gift ?cards?|transfers?|the bill|"
    r"remittance|fees?)"
)
_STRONG_MONEY = (
    r"(?:\$\s?\d|\d[\d,]*\s?(?:dollars|aud)\b|payments?\b|funds|money|refunds?|gift ?cards?|"
    r"bond\b|deposit\b|bonus(?:es)?|reimbursements?)"
)
_PEOPLE_ORGS = (
    r"(?:coordinators?|manager|supervisor|finance|reviewers?|review panel|panel|rostering|"
    r"(?:the )?plan manager|quality|safeguards?|behaviou?r support|practitioner|"
)
_OVERSIGHT = (
    _PEOPLE_ORGS
    + r"(?:clinical |team |practice |shift |safeguarding |quality )?(?:lead|leader|officer)|"
    r"committee|auditors?|audit|safeguarding(?: lead)?|compliance|hr|board|anyone|anybody|nobody|"
    r"no one|head office|team lead|management|the office|accounts|my boss|the boss|director)"
)
#: Link shorteners: a destination outside, whatever it leads to.
_SHORT_LINK = r"\b(?:bit\.ly|tinyurl\.com|forms\.gle|t\.co)/"
_FREE_MAIL = r"(?:gmail|outlook|hotmail|yahoo|protonmail|proton|fastmail|icloud|gmx|mail)\."
_SENSITIVE = (
    r"(?:all|every|entire|full|whole|complete)\b[^.\n]{0,40}?|"
    r"(?:records?|database|list|files?|folder|inbox|history|conversation|emails|passwords?|"
    r"tokens?|credentials|addresses|contacts?|case notes|reports?|timesheets|exports?|rosters?|"
    r"phone numbers|details|data|payroll|finance|charts?|medications?|care plans?|participants|"
    r"clients|residents|csv|spreadsheet|(?:check|screening|licen[cs]e|card|tax file) numbers)"
)

_PATTERNS: dict[str, str] = {
    "payment": (
        r"(?<!\ba )(?<!\bthe )\b(?:pay|wire|transfer|release|remit|settle|refund|put through|"
        r"push through|pay out|paid out|pay in)\b[^.\n]{0,60}?"
        + _MONEY
        + r"|\b(?:send|process|buy|purchase)\b[^.\n]{0,60}?"
        + _STRONG_MONEY
        + r"|\b(?:payments?|funds|invoices?)\b[^.\n]{0,40}?\b(?:to be paid|must (?:now )?go to|"
        r"can be released|are to be paid|be redirected|redirect)"
        r"|\bredirect\b[^.\n]{0,40}?(?:payments?|claims?|funds)"
        r"|\bschedule (?:the |a )?(?:payment|transfer|refund)"
        r"|\bpay (?:it|this|them|these|the (?:attached|above|balance))?\s?(?:within \d+|within "
        r"(?:one|two|three|five|seven|\w+ business)|today|now|immediately|asap|by (?:end of|close|"
        r"cob|tomorrow|friday|monday))\b"
        r"|\bclaim (?:it|this|these|them|the \w+)\b[^.\n]{0,30}?\b(?:against|from|under)\b"
        r"[^.\n]{0,30}?\b(?:budget|plan|funding|supports)\b"
    ),
    "bank_details": (
        r"(?<!\bthe )(?<!\ba )\b(?:change|update|swap|switch|replace|redirect|amend|set|use|fix|"
        r"move)\b[^.\n]{0,60}?"
        r"\b(?:bank(?:ing)?|account|bsb|remittance|payee|direct deposit|super fund)"
        r"(?: details| information| info| number)?\b"
        r"|\b(?:into|to)\s+(?:the|our|my|this)\s+new\s+(?:bank\s+)?account\b"
        r"|\b(?:bank(?:ing)?|remittance|account) (?:details|information) (?:have|has) "
        r"(?:been )?(?:changed|updated)|\bold account (?:is|has been) closed"
        r"|\bnew (?:bank|account) details\b|\bbank has changed|\bmoved our banking\b"
        r"|\b(?:re-?enter|re-?submit|re-?register|confirm|verify|update|provide)\b[^.\n]{0,60}?"
        r"\b(?:bank(?:ing)? details|bank account|bsb|login|password|credentials)\b[^.\n]{0,60}?"
        r"(?:https?://|\bthe link\b|\bthis link\b|\bthe form\b)"
        r"|\bbsb\s*\d{3}-?\d{3}"
    ),
    "new_account": (
        r"\b(?:pay|paid|transfer|move|moved|send|re-?send|update|change|switch|swap|deposit|put|refund|"
        r"ganti|ubah)\b[^.\n]{0,80}?"
        r"(?:\bbsb\b[\s:#]*\d{3}[- ]?\d{3}|(?<![\w-])\d{3}-\d{3}(?![\w-]))"
        r"[\s,]*(?:(?:acc(?:ount)?|a/c|nomor|number|no\.?)[\s:#.]*)?\d[\d ]{4,10}\d"
    ),
    "payroll": (
        r"\b(?:change|update|swap|switch|increase|raise|adjust|backdate|set)\b[^.\n]{0,50}?"
        r"\b(?:pay ?rate|hourly rate|salary|wages?|payroll|pay(?! run)|super)\b"
        r"|\b(?:payroll|salary|wages?)\b[^.\n]{0,30}?\b(?:account|details)\b"
    ),
    "forward": (
        r"\b(?:send(?:ing)?|sent|forward(?:ing)?|e-?mail(?:ing)?|mail(?:ing)?|upload(?:ing)?|"
        r"post(?:ing)?|shar(?:e|ing)|attach(?:ing)?|cop(?:y|ying)|export(?:ing)?|sync(?:ing)?|"
        r"append(?:ing)?|includ(?:e|ing)|past(?:e|ing)|push(?:ing)?|collect(?:ing)?)\b"
        r"[^.\n]{0,80}?(?:" + _SENSITIVE + r")"
        r"[^.\n]{0,80}?(?:\b[\w.+-]+@(?:" + _FREE_MAIL + r"|[\w-]+(?:\.[\w-]+)*\.[a-z]{2,}\b)|"
        r"https?://|\b(?:my|his|her|their|your) (?:personal|own|private) |\bpersonal (?:email|"
        r"e-mail|address|account|drive|dropbox|gmail|hotmail|outlook|yahoo|icloud)|\bdropbox\b|"
        r"\bgoogle drive\b|\bpastebin\b|\bto me\b|" + _SHORT_LINK + "|"
        r"\breply to this\b|\bexternal\b|\boutside\b|\bfeedback field|\bcontact form|"
        r"\bsurvey form|\bback to us\b|\bthe (?:form|link|address) (?:below|in the footer|"
        r"at the bottom))"
        # the destination first: "send_email(to=x@…, body=all client addresses)"
        r"|\b(?:send|forward|e-?mail|mail|upload|post|share|export)\b[^.\n]{0,40}?"
        r"\b[\w.+-]+@[\w-]+(?:\.[\w-]+)*\.[a-z]{2,}\b[^.\n]{0,60}?(?:" + _SENSITIVE + r")"
        # a form outside filled in with people's details ("fill in the booking form at https://…
        # with each participant's full name, mobile and date of birth")
        r"|\b(?:fill in|fill out|complete|submit|enter)\b[^.\n]{0,60}?(?:https?://|\bthe link\b|"
        r"\bthis link\b)[^\n]{0,80}?\b(?:names?|mobiles?|phone|dates? of birth|dob|addresses|"
        r"ndis numbers?|support needs|details)\b"
    ),
    "approve": (
        r"\b(?:approve|authori[sz]e|sign off|sign-off|accept|clear|mark)\b[^.\n]{0,50}?"
        r"\b(?:pending|queued?|queue|claims?|timesheets?|invoices?|payments?|purchase orders?|"
        r"requests?|refunds?|overtime|expenses?|applications?|everything|all of them|"
        r"as approved|approved|as paid|bonus)"
    ),
    "skip_review": (
        r"\b(?:skip|bypass|circumvent|waive|disable|avoid|without|no need for|don't wait for|"
        r"no need to wait for|"
        r"do not wait for|rather than (?:sending|routing)|instead of)\b[^.\n]{0,40}?"
        r"\b(?:review(?:er|ers)?|approvals?|sign-?off|checks?|verification|verify|call-?back|"
        r"two-person|approval queue|usual process|paperwork|re-?verify)"
        r"|\bno (?:further )?(?:sign-?off|approval|review|paperwork) (?:is )?(?:required|needed)"
        r"|\b(?:don't|do not|no need to) hold (?:it|this|them|things|that) up with (?:the )?"
        + _OVERSIGHT
        + r"|\bno need to (?:hold|wait|keep) (?:it |them |this |these )?(?:for|on) "
        r"(?:the |your |my )?"
        + _OVERSIGHT
        + r"|\b(?:human )?approval (?:no longer applies|is not required|not needed)"
        r"|\bapproval is implied\b"
        r"|\b(?:will|'ll|can|to) (?:sign (?:it |this |them )?off|approve (?:it|this|them)|"
        r"(?:do|sort(?: out)?|send|fill in|fill out|lodge) (?:the |a )?(?:form|forms|paperwork|"
        r"approval|sign-?off)|(?:follow|come through))\b[^.\n]{0,20}?\b(?:later|afterwards|after "
        r"(?:the|it|that)|tomorrow|next week)\b"
        r"|\b(?:timesheets?|shift notes|paperwork|forms?|approval|receipts?|evidence|"
        r"documentation)\b[^.\n]{0,30}?\b(?:will|to) follow\b"
        r"|\balready (?:agreed|approved|ok'?d|okayed|signed off)\b[^.\n]{0,30}?"
        r"\b(?:over the phone|verbally|in person|on a call)\b"
        r"|\bmark (?:it|this|them|these|my [\w ]{1,20}) (?:as )?(?:approved|signed off|verified) "
        r"by\b|\b(?:note|mark|record|log|put) (?:it|this|them|these) (?:down )?(?:as )?"
        r"(?:approved|signed off|authori[sz]ed)\b(?! by (?:the )?(?:system|workflow))"
        r"|\b(?:call-?back|verification|approval|review|sign-?off)s? (?:has|have) "
        r"(?:already )?been "
        r"(?:completed|done|granted|given|obtained|carried out)\b"
    ),
    "conceal": (
        r"\b(?:don't|dont|do not|no need to|without|never|not)\s+(?:tell|mention|inform|cc|copy|"
        r"loop in|notify|flag|let|bother|send (?:the |any )?(?:\w+ )?notifications?(?: \w+)? to|"
        r"involve|report|escalate)\b"
        r"[^.\n]{0,50}?"
        r"\b"
        + _OVERSIGHT
        + r"|\bkeep (?:this|it|that) (?:between us|quiet|confidential|secret|off the books|"
        r"to yourself)\b|\boff the books\b|\b(?:nobody|no one|no-one) (?:needs? to|will|has to) "
        r"(?:know|see|notice)|\b(?:skip|leave (?:it|this|that)?(?: one)? ?out of|"
        r"keep (?:it|this) out of|"
        r"don't record|do not record)\b[^.\n]{0,30}?\b(?:log|logs|logging|report|summary|audit|"
        r"record|books)\b|\bno need for anyone to see|\bquietly\b|\bsilently\b"
        r"|\b(?:don't|do not) (?:mention|say|tell anyone) (?:that )?i (?:asked|said|called)"
        r"|\b(?:not|don't|do not|never) (?:put|include|record|add|enter|log|mention) (?:it |this |"
        r"that |them )?(?:in|into|on) (?:the )?(?:\w+ )?(?:summary|report|log|logs|records?|"
        r"minutes|audit)\b"
        r"|\b(?:remove|delete|take)\b[^.\n]{0,20}?\b(?:my name|it|this|them|the (?:entry|record|"
        r"note)s?)\b[^.\n]{0,10}?\bfrom the (?:incident |audit )?(?:report|log|record|audit)"
        r"|\bjust between (?:us|you and me|ourselves)\b|\bbetween you and me\b"
        r"|\b(?:this|the) (?:conversation|call|chat|request|message) (?:didn't|did not|never) "
        r"happen(?:ed)?\b|\b(?:delete|remove|clear)\b[^.\n]{0,60}?\bfrom the (?:history|"
        r"chat log|ticket history)\b"
        r"|\b(?:don't|do not|no need to) (?:notify|tell|inform) the (?:ndis )?(?:quality and "
        r"safeguards )?commission\b|\breportable\s*[=:]\s*false\b"
        r"|\b(?:stay|remain|kept|keep (?:it|this|that|them))\s+between us\b"
        r"|\b(?:keep|leave)\b[^.\n]{0,40}?\b(?:out of|off)\b(?: \w+){0,4}? (?:summary|report|"
        r"statement|minutes|version|notes|log|record|register|what goes to)\b"
        r"|\b(?:drop|remove)\b[^.\n]{0,40}?\bfrom the (?:version|summary|report|minutes)\b"
        r"|\b(?:no need to|don't|do not|never) (?:log|record|document|write up|minute) "
        r"(?:that|this|it|them)(?: part| bit| one| request)?\b"
        r"|\bkeep (?:this|it|that) one (?:between us|quiet|to yourself)\b"
        r"|\b(?:put (?:it|this|that) down|write (?:it|this|that) up|word (?:it|this|that)|"
        r"describe (?:it|this|that)|record (?:it|this|that)|log (?:it|this|that)) as"
        r"(?: [\"'‘“]| +[.,;]| *$)"
        r"|\b(?:just )?tell (?:her|him|them|the \w+|[a-z]+) (?:that )?(?:the |it |there |our )"
        r"[^.\n]{0,40}?\b(?:error|glitch|bug|bounced|failed|went missing|crashed)\b"
        r"|\b(?:get rid of|delete|remove|wipe|clear|erase|scrub)\b[^.\n]{0,30}?\b"
        r"(?:(?:access|audit) "
        r"log|log entr(?:y|ies)|audit (?:trail|entr(?:y|ies))|incident (?:entry|record|report)|"
        r"ir-\d+)"
        r"|\bchange (?:the )?[\w ]{0,30}?(?:figure|number|count|total)s? to (?:0|zero|nil|none)\b"
        r"|\bhold off\b[^.\n]{0,40}?\b(?:sending|reporting|notifying|lodging|telling|informing|"
        r"submitting)\b[^.\n]{0,60}?\b(?:commission|regulator|quality|"
        + _OVERSIGHT[3:]
        + r"|\b(?:left|kept) out of (?:the )?(?:[\w']+ ){0,2}(?:digest|report|log|summary|register|"
        r"statement|minutes)\b"
        r"|\b(?:don't|do not|no need to) (?:record|log|enter|report|mark|flag) (?:it|this|them) as "
        r"an? (?:\w+ )?(?:variation|incident|cancellation|late|change|complaint)\b"
        r"|\b(?:don't|do not|no need to|let's not|let us not)\s+(?:make|kick up|cause) (?:a |any )?"
        r"(?:fuss|big deal|song and dance)"
        r"|\b(?:no need to|don't|do not|let's not|let us not|not)\s+(?:raise|bring) "
        r"(?:it|this|that) "
        r"(?:up )?with (?:the |your |my )?"
        + _OVERSIGHT
        + r"|\blet(?:'s| us) not (?:bother|tell|involve|trouble|worry) [a-z]+"
        r"|\b(?:don't|do not|no need to|without) (?:raise|raising|log|logging|open|opening|create|"
        r"lodge|file) (?:a |an |the |any )?(?:ticket|case|complaint)\b"
        r"|\bleave [a-z]+(?: [a-z]+)? off the (?:cc|email|e-mail|distribution|mailing)(?: list)?"
        r"|\b(?:take|keep|leave) (?:it|this|that|them)(?: one)? off the (?:\w+ )?(?:register|"
        r"log|report|record|books|system|radar)"
        r"|\b(?:don't|do not|no need to|never) (?:log|record|write|note|mention) (?:it|this|that|"
        r"them)(?: down)? (?:anywhere|at all|in writing)\b"
        r"|\btell (?:the )?(?:user|client|family|them|her|him)\b[^.\n]{0,40}?\b(?:never "
        r"(?:existed|happened)|did not happen|didn't happen|was never (?:there|made|filed))"
        r"|\bbackdat(?:e|ed|ing)\b|\b(?:rather than|instead of|without) (?:saving|creating|"
        r"keeping) a new version|\bedit (?:it|this|them) in place\b"
        r"|\bso the (?:history|audit trail|log|record) (?:stays|looks|is) (?:tidy|clean)"
        r"|\b(?:don't|do not) want (?:it|this|that|them) (?:going|to go|getting|sent|reported) to "
        r"(?:the )?(?:commission|regulator|ndis|ndia|safeguards|police|"
        + _OVERSIGHT[3:]
        + r"|\bleave\b[^.\n]{0,40}?\bout of (?:the|my|your|this|that|our) (?:\w+ )?(?:log|audit|"
        r"report|record|notes?|version|statement|summary|file|minutes)\b"
        r"|\bleave out\b[^.\n]{0,60}?\b(?:log|audit|report|record|summary|minutes)\b"
        r"|\bno point (?:having|keeping|putting|recording) (?:it|this|that|them) (?:in|on) "
        r"(?:the|my|your) (?:\w+ )?(?:audit|log|record|report|file)"
        r"|\b(?:don't|do not|no need to|not|never|without) (?:raise|raising|file|filing|lodge|"
        r"lodging|create|creating|log|logging|report|reporting) (?:an? |the |any )?incident"
        r"|\b(?:doesn't|does not|won't|will not|isn't|is not|not be|never) (?:appear|show|"
        r"shown|showing|visible|listed|turn up)(?: up)? (?:on|in) (?:[\w']+ ){0,2}(?:statement|"
        r"report|log|invoice|audit|summary|record|numbers|figures|register|stats)"
    ),
}
_COMPILED = {kind: re.compile(expression) for kind, expression in _PATTERNS.items()}
#: A question about how to do something ("how do I update my bank details?") asks for no act.
_HOW = re.compile(r"\bhow (?:do|can|should|would) (?:i|we)\b|\bis there a form\b")
#: Variables carrying an instruction: "let X = …; do X".
_VARIABLE = re.compile(
    r"\b(?:let|define|set)\s+([a-z]\w{0,10})\s*(?:=|:=|be)\s*[^\n]{0,200}?"
    r"\b(?:do|execute|perform|run|carry out|act on|send|copy|combine|email|e-mail|forward|post|"
    r"upload|paste|delete|pay|transfer)\b[^.\n]{0,40}?\b\1\b"
    r"|\bpart (?:a|one|1)\b[\s\S]{0,300}?\bpart (?:b|two|2)\b[\s\S]{0,300}?\b(?:do|execute|"
    r"act on|carry out|perform|complete|follow|join|combine)\b"
    r"|\b(?:join|combine) (?:the )?parts\b|\bcombine the (?:two )?(?:words|parts)\b[^.\n]{0,40}\b"
    r"(?:carry out|do|execute|act)|\bact on both words\b|\bdo what the parts say\b"
    r"|\b(?:put|join|combine|stitch|string) (?:the |all |those |these )?(?:two|three|four|parts|"
    r"pieces|words|fragments|lines)(?: \w+)? together\b[^.\n]{0,30}?\b(?:do|carry out|execute|"
    r"follow|act on)\b"
)


#: The business's own e-mail domains (``RABS_INTERNAL_DOMAINS``, comma-separated): sending to
#: them is not sending outward.
INTERNAL_DOMAINS = tuple(
    d.strip().lower().lstrip("@")
    for d in os.environ.get("RABS_INTERNAL_DOMAINS", "").split(",")
    if d.strip()
)
_EMAIL = re.compile(r"[\w.+-]+@[\w-]+(?:\.[\w-]+)+")
_FREE_MAIL_DOMAIN = re.compile(
    r"^(?:gmail|googlemail|outlook|hotmail|live|yahoo|protonmail|proton|fastmail|icloud|gmx|"
    r"mail|aol|yandex|tutanota|zoho)\."
)
_OTHER_DESTINATION = re.compile(
    r"https?://|\bmy (?:personal|own|private) |\bpersonal (?:email|e-mail|address|account|drive|"
    r"dropbox)|\bdropbox\b|\bgoogle drive\b|\bpastebin\b|\bto me\b|\breply to this\b|"
    r"\bexternal\b|\boutside\b|\bfeedback field|\bcontact form|\bsurvey form|\bback to us\b|"
    r"\bthe (?:form|link|address) (?:below|in the footer|at the bottom)|" + _SHORT_LINK
)


#: Parts of an address that name a function, not a person ("integration-support@…").
_ROLE_WORDS = frozenset(
    (
        "support", "integration", "info", "admin", "team", "sync", "data", "export", "backup",
        "test", "hr", "payroll", "accounts", "billing", "noreply", "mail", "office", "service",
        "services", "help", "contact", "sales", "ops", "partners", "partner", "reports", "report",
        "update", "updates", "portal", "verify", "verification", "security", "claims",
    )
)  # fmt: skip


def outward(address: str, folded: str, *, strict: bool = False) -> bool:
    """Whether sending to ``address`` sends outside the business: a free-mail address always; an
    address on an internal domain never; ``strict`` (the text comes from an untrusted source or
    is content, which names whatever it likes beside an address: "the finance team at
    finance@evil…") any other; otherwise unless it is a named person's address (its
    local part holds a known first or last name the text names too: "send it to Ben Alvarez at
    ben.alvarez@…", a staff member's work address; not "review-pack@…" in a text about a
    review), or names the addressee just before it ("the quality team at quality@…")."""
    local, _, domain = address.lower().partition("@")
    if _FREE_MAIL_DOMAIN.match(domain):
        return True
    if any(domain == d or domain.endswith("." + d) for d in INTERNAL_DOMAINS):
        return False
    if strict:
        return True
    from brainframe.safety.namelist import known_name  # the name list, only when first asked

    rest = folded.replace(address.lower(), " ")
    parts = [part for part in re.split(r"[._+-]", local) if len(part) >= 3]
    before = folded[: max(0, folded.find(address.lower()))]
    if any(re.search(rf"\b{re.escape(part)}{_ADDRESSEE_BEFORE}", before) for part in parts):
        return False  # "the quality team at quality@…": the addressee named with its address
    names = [part for part in parts if part not in _ROLE_WORDS and known_name(part)]
    return not any(re.search(rf"\b{re.escape(part)}\b", rest) for part in names)


#: Between an addressee's name and its address ("quality team at", "Ben on").
_ADDRESSEE_BEFORE = (
    r"\b(?:\s+(?:team|department|unit|office|desk|group|inbox|mailbox))?\s*(?:at|on|via|:|-|–|\(|<)"
    r"\s*$"
)


_ROLE_MAILBOX = re.compile(
    r"^(?:support|help|helpdesk|servicedesk|info|enquiries|contact|feedback|privacy|security|"
    r"reception|office|it|hr|noreply|no-reply|phishing|abuse|spam|reports?)@"
)
_BULK = re.compile(
    r"\b(?:all|every|entire|full|whole|complete|records?|database|passwords?|"
    r"tokens?|credentials|secrets?|invoices|files|inbox|emails|list|numbers|roster|"
    r"care plans?|statements)\b"
)


def sends_outward(span: str, folded: str, *, strict: bool = False) -> bool:
    """A send whose destination (in ``span``) lies outside the business (``outward``). Sending
    something that is no one's data (a log, a question) to an organisation's help desk is not."""
    if _OTHER_DESTINATION.search(span):
        return True
    addresses = _EMAIL.findall(span)
    return any(
        outward(a, folded, strict=strict)
        and not (_ROLE_MAILBOX.match(a) and not _BULK.search(span))
        for a in addresses
    )


_UNCHANGED = re.compile(
    r"\b(?:same account|as usual|as last time|unchanged|(?:haven't|have not|hasn't|has not) "
    r"changed|from my plan|as per our agreement)\b"
)


#: Where a sentence ends, for the span a destination is looked for in (an address's dots are
#: not sentence ends).
_CLAUSE_END = re.compile(r"[.!?;](?:\s|$)|\n")


@dataclass(frozen=True)
class Act:
    kind: str
    start: int


@lru_cache(maxsize=1)
def _screen() -> Any:
    """One Hyperscan database over every act's expression (and the variables'): a text is
    scanned once, and only the kinds it may hold are matched with ``re``."""
    expressions = [*_PATTERNS.values(), _VARIABLE.pattern]
    return database(expressions, [PREFILTER | UNICODE] * len(expressions))


def found(folded: str, *, strict: bool = False, known: bool = True) -> list[Act]:
    """Every act requested (not merely mentioned) in ``folded``, first occurrence of each kind;
    ``strict``: addresses judged as from an untrusted source (``outward``); ``known``: the
    sender is known (not untrusted), so the document's genre may excuse an act."""
    folded = folded.replace("_", " ")  # "send_email(to=…)": the same words, the same offsets
    candidates = scan(_screen(), utf8(folded))
    if not candidates:
        return []
    context: list[Any] = []  # (genre, speaks to a model), worked out when first needed
    acts: list[Act] = []
    for index, (kind, regex) in enumerate(_COMPILED.items()):
        if index not in candidates:
            continue
        for match in regex.finditer(folded):
            sentence_start = max(
                (m.end() for m in mention.SENTENCE_END.finditer(folded, 0, match.start())),
                default=0,
            )
            if _HOW.search(folded, sentence_start, match.end()):
                continue
            sentence_end = _CLAUSE_END.search(folded, match.end())
            stop = sentence_end.start() if sentence_end else len(folded)
            sentence = folded[sentence_start:stop]
            span = folded[match.start() : stop]
            if kind == "forward" and not sends_outward(span, folded, strict=strict):
                continue
            if kind == "conceal" and asking.kept_for_a_surprise(sentence):
                continue  # "keep this between us, it's a surprise party for Mum"
            # "as usual" may say a payee is unchanged; it cannot make a typed account number so
            # (the sender says it, and the sender is who is in question): new_account stands
            if kind in ("payment", "bank_details") and _UNCHANGED.search(sentence):
                continue
            if not context:
                context += [mention.genre(folded, known=known), mention.addressed(folded)]
            own_negation = kind == "conceal" and mention.NEGATION.match(folded, match.start())
            # The sender's own words make the genre ("a phishing scam hit us, so please change
            # our bank details …"): an act asked of the reader outright, or with a link to do it
            # at, is not excused by it; from an unknown sender, nor is one in the imperative.
            genre = context[0]
            if (
                genre
                and strict
                and asking.asked(folded, sentence, sentence_start, match.start(), known=known)
            ):
                genre = None
            if not mention.mentioned(
                folded, match.start(), genre, context[1], negation=not own_negation
            ):
                acts.append(Act(kind, match.start()))
                break
    if len(_PATTERNS) in candidates and _VARIABLE.search(folded):
        acts.append(Act("variables", 0))
    return acts


#: Tool ids that carry each act out: a person whose ACL permissions (tool patterns) reach one of
#: them may request that act (``rights_from_tools``).
ACT_TOOLS = {
    "payment": ("finance.payment.send", "finance.payment.release", "finance.invoice.pay"),
    "bank_details": ("finance.payee.update", "finance.bank.update", "hr.bank.update"),
    "new_account": (
        "finance.payee.update",
        "finance.bank.update",
        "hr.bank.update",
        "finance.payment.send",
        "finance.payment.release",
    ),
    "payroll": ("hr.payroll.update", "payroll.rate.update", "hr.pay.update"),
    "forward": ("comms.email.send", "comms.sms.send", "comms.message.send"),
    "approve": ("approvals.decision.approve", "finance.invoice.approve", "hr.timesheet.approve"),
    "skip_review": (),
    "conceal": (),
}


def rights_from_tools(patterns: Collection[str]) -> frozenset[str]:
    """The acts a sender may request, from the tool patterns their ACL decision carries (an
    ``AclDecision.tools``): an act whose tools one of the patterns reaches. Nobody's
    permissions reach skipping review or hiding something. Worked out once per set of patterns
    (a policy's, on every call of its people's chains)."""
    return _rights(tuple(patterns))


@lru_cache(maxsize=1024)
def _rights(patterns: tuple[str, ...]) -> frozenset[str]:
    import fnmatch  # only when rights are read from a sender's ACL permissions

    return frozenset(
        act
        for act, tools in ACT_TOOLS.items()
        if any(fnmatch.fnmatchcase(tool, pattern) for tool in tools for pattern in patterns)
    )


def unentitled(acts: list[Act], trust: str, source: str | None, rights: Collection[str] | None):
    """The kinds of ``acts`` the source may not request."""
    if rights is None:
        allowed = DEFAULT_RIGHTS.get(trust, frozenset())
        if source in CONTENT_SOURCES:
            allowed = frozenset()
        elif source is None and "bank_details" in allowed:
            # An agent's own call (no message source): the broker's ACL and V-Pol decide where
            # its payments go. A message (chat, e-mail, ticket…) naming a new account does not.
            allowed |= {"new_account"}
    else:
        allowed = frozenset(rights)
        # who may change bank details may name the account; not by e-mail or SMS, whose sender
        # anyone can forge
        if "bank_details" in allowed:
            allowed |= {"new_account"}
        if source in SPOOFABLE_SOURCES:
            allowed -= {"new_account"}
    return sorted({a.kind for a in acts if a.kind not in allowed})
