"""Demo data for a new installation: a disability-services provider running Henry and Reggie.

Plain data only; ``brainframe.services.seed`` writes it idempotently.
"""

from __future__ import annotations

from typing import Any

from brainframe.choices import ContextBucket as B
from brainframe.choices import DataClass as D
from brainframe.choices import RiskLevel as R
from brainframe.choices import ValidationMode as V

HENRY, REGGIE, TRIAGE = "henry", "reggie", "triage"
REGGIE_VOICE = "reggie-voice"

AGENTS: list[dict[str, Any]] = [
    {
        "agent_id": HENRY,
        "name": "Henry",
        "type": "type_2_sandboxed",
        "role": "operations",
        "status": "idle",
        "config": {
            "vm_api": "127.0.0.1:18080",
            "dashboard": "192.168.77.6:13000",
            # What the index (discovery) matches a message against, for smart routing.
            "description": "Operations: rosters and shifts, transport and vehicle bookings, "
            "outings, staff notifications, billing and reports.",
        },
    },
    {
        "agent_id": REGGIE,
        "name": "Reggie",
        "type": "type_2_sandboxed",
        "role": "reception",
        "status": "idle",
        "config": {
            "vm_api": "127.0.0.1:19090",
            "dashboard": "192.168.77.6:14000",
            "modes": {"normal": "gpt-4o-mini", "super": "gpt-4o", "external": "realtime"},
            "description": "Reception: answers participants, families and carers, looks up "
            "who works when, takes messages, and answers questions about how things stand.",
        },
    },
    {
        "agent_id": REGGIE_VOICE,
        "name": "External Reggie (voice)",
        "type": "type_3_external",
        "role": "reception by phone (LiveKit + realtime model)",
        "status": "idle",
        "config": {"platform": "livekit", "model": "gpt-4o-realtime", "hands_off_to": REGGIE},
    },
    {
        "agent_id": TRIAGE,
        "name": "Inline triage",
        "type": "type_1_native",
        "role": "message triage and summarisation",
        "status": "active",
        "config": {"model": "gpt-4o-mini"},
    },
]

#: The price table (USD; list prices at the time of writing: staff keep them current in the
#: admin). Costs of Reggie's modes and native helpers are computed from it.
MODEL_PRICES: list[dict[str, Any]] = [
    {"model": "gpt-4o-mini", "input_per_million": "0.15", "output_per_million": "0.60"},
    {"model": "gpt-4o", "input_per_million": "2.50", "output_per_million": "10.00"},
    {"model": "o1", "input_per_million": "15.00", "output_per_million": "60.00"},
    {"model": "gpt-4o-realtime", "per_minute": "0.06"},
]


def _obj(required: list[str], **properties: Any) -> dict[str, Any]:
    return {
        "type": "object",
        "required": required,
        "additionalProperties": False,
        "properties": properties,
    }


#: What each demo tool does, in a reviewer's words (the approval card's "What it does"); the
#: description beside each tool below is written for the agents.
REVIEWER_SUMMARIES: dict[str, str] = {
    "db.replica.query": "Reads the read replica (tasks, tool calls, approvals, agents) with the "
    "query shown; changes nothing, and personal details in the answer are hidden.",
    "roster.shift.read": "Reads the roster for the dates given; changes nothing.",
    "roster.shift.create": "Adds a shift to the roster: a support worker booked with a "
    "participant at the time given.",
    "roster.shift.swap": "Moves a rostered shift from one staff member to another; both see the "
    "change on their roster.",
    "transport.vehicle.availability": "Lists the vehicles free in a time window; books nothing.",
    "transport.vehicle.book": "Books a vehicle (and a driver) for a participant's outing; the "
    "vehicle is then taken for that time.",
    "facilities.check.log": "Records a facility or equipment check as done, with its result.",
    "participant.profile.read": "Reads a participant's profile, plan dates and support needs "
    "(personal information).",
    "comms.email.draft": "Writes a draft e-mail; nothing is sent.",
    "comms.email.send": "Sends an e-mail from the organisation's mailbox to the addresses given; "
    "it cannot be recalled.",
    "comms.sms.send": "Sends a text message to the number given; it cannot be recalled.",
    "comms.notification.push": "Shows a notification in the staff app of the staff members given.",
    "comms.message.classify": "Sorts an incoming message by topic and urgency; changes nothing.",
    "native.message.triage": "Sorts an incoming message by urgency and intent; changes nothing.",
    "native.text.classify": "Labels a text with one of the labels given; changes nothing.",
    "native.text.summarise": "Summarises a text; changes nothing.",
    "hr.staff.lookup": "Reads a staff member's role, team and contact details.",
    "hr.kpi.update": "Changes a staff member's KPI score for a review period.",
    "hr.leave.request": "Lodges a leave request for a staff member; their manager sees it.",
    "hr.contract.generate": "Produces an employment contract from the approved template, ready "
    "to be signed.",
    "finance.invoice.create": "Creates a draft invoice for supports delivered; nothing is sent "
    "or charged yet.",
    "finance.payment.reconcile": "Marks invoices as paid by a bank payment in the accounts.",
    "finance.ndis.claim.submit": "Claims payment from the NDIA for the supports listed; money is "
    "requested on the organisation's behalf.",
    "finance.billing.adjust": "Credits or corrects a billed line item; the amount owed changes.",
    "data.report.generate": "Produces a standard report; changes nothing.",
    "data.tool_usage.summary": "Counts the tool calls since a time; changes nothing.",
    "data.export.participants": "Exports participant records, personal information included, "
    "to a file.",
    "system.cache.clear": "Empties one of the application's caches; it fills again as used.",
    "system.job.trigger": "Starts a scheduled job now instead of at its usual time.",
    "system.config.update": "Changes an application setting for everyone.",
}

_DATE = {"type": "string", "format": "date"}
_DATETIME = {"type": "string", "format": "date-time"}
_ID = {"type": "string", "minLength": 1, "maxLength": 64}
_EMAIL_LIST = {"type": "array", "items": {"type": "string", "format": "email"}, "minItems": 1}
_MONEY = {"type": "number", "minimum": 0, "maximum": 1000000}


def _tool(
    tool_id: str,
    description: str,
    category: str,
    risk: str,
    bucket: str,
    data_class: str,
    handler_type: str,
    handler_config: dict[str, Any],
    input_schema: dict[str, Any],
    *,
    agents: tuple[str, ...] = (HENRY,),
    roles: tuple[str, ...] = (),
    validation_mode: str = V.INTERCEPT,
    external: bool = False,
    output_schema: dict[str, Any] | None = None,
    execution_mode: str | None = None,
    permission_tier: str | None = None,
) -> dict[str, Any]:
    return {
        "tool_id": tool_id,
        "description": description,
        "reviewer_summary": REVIEWER_SUMMARIES.get(tool_id, ""),
        "category": category,
        "risk_level": risk,
        "context_bucket": bucket,
        "data_class": data_class,
        "handler_type": handler_type,
        "handler_config": handler_config,
        "input_schema": input_schema,
        "output_schema": output_schema or {"type": "object"},
        # Reading twice changes nothing (shown to MCP clients as idempotentHint).
        "idempotent": risk == R.READ,
        "agent_access": list(agents),
        "role_requirements": list(roles),
        "validation_mode": validation_mode,
        "external_channel": external,
        "execution_mode": execution_mode,
        "permission_tier": permission_tier,
    }


def _fn(name: str, timeout_s: float = 10) -> dict[str, Any]:
    return {"callable": name, "timeout_s": timeout_s}


TOOLS: list[dict[str, Any]] = [
    # --- operations
    _tool(
        "roster.shift.read",
        "Fetch rostered shifts for a date range, optionally for one staff member.",
        "operations",
        R.READ,
        B.ROSTERING_SCHEDULING,
        D.LOGISTICS,
        "function",
        _fn("roster.shift_read"),
        _obj(["date_from", "date_to"], date_from=_DATE, date_to=_DATE, staff_id=_ID),
        agents=(HENRY, REGGIE, REGGIE_VOICE),
        validation_mode=V.MONITOR,
    ),
    _tool(
        "roster.shift.create",
        "Create a shift for a participant with a support worker.",
        "operations",
        R.WRITE,
        B.ROSTERING_SCHEDULING,
        D.LOGISTICS,
        "function",
        _fn("roster.shift_create"),
        _obj(
            ["participant_id", "staff_id", "start", "end", "service_type"],
            participant_id=_ID,
            staff_id=_ID,
            start=_DATETIME,
            end=_DATETIME,
            service_type={"enum": ["community_access", "personal_care", "transport", "respite"]},
            notes={"type": "string", "maxLength": 1000},
        ),
        roles=("rostering_officer", "coordinator"),
    ),
    _tool(
        "roster.shift.swap",
        "Swap two staff members between rostered shifts.",
        "operations",
        R.WRITE,
        B.ROSTERING_SCHEDULING,
        D.LOGISTICS,
        "function",
        _fn("roster.shift_swap"),
        _obj(
            ["shift_id", "from_staff_id", "to_staff_id", "reason"],
            shift_id=_ID,
            from_staff_id=_ID,
            to_staff_id=_ID,
            reason={"type": "string", "minLength": 3, "maxLength": 500},
        ),
        roles=("rostering_officer",),
    ),
    _tool(
        "transport.vehicle.availability",
        "List vehicles free in a time window.",
        "operations",
        R.READ,
        B.TRANSPORTATION,
        D.LOGISTICS,
        "function",
        _fn("transport.vehicle_availability"),
        _obj(
            ["start", "end"], start=_DATETIME, end=_DATETIME, wheelchair_access={"type": "boolean"}
        ),
        agents=(HENRY, REGGIE, REGGIE_VOICE),
        validation_mode=V.MONITOR,
    ),
    _tool(
        "transport.vehicle.book",
        "Book a vehicle and driver for a participant outing.",
        "operations",
        R.WRITE,
        B.TRANSPORTATION,
        D.LOGISTICS,
        "function",
        _fn("transport.vehicle_book"),
        _obj(
            ["vehicle_id", "driver_id", "start", "end", "purpose"],
            vehicle_id=_ID,
            driver_id=_ID,
            start=_DATETIME,
            end=_DATETIME,
            purpose={"type": "string", "maxLength": 300},
            passengers={"type": "integer", "minimum": 1, "maximum": 12},
        ),
    ),
    _tool(
        "facilities.check.log",
        "Record a facility or equipment check (fire doors, hoists, vehicles).",
        "operations",
        R.WRITE,
        B.FACILITIES_ASSETS,
        D.LOGISTICS,
        "function",
        _fn("facilities.check_log"),
        _obj(
            ["asset_id", "result"],
            asset_id=_ID,
            result={"enum": ["pass", "fail", "needs_attention"]},
            notes={"type": "string", "maxLength": 1000},
        ),
    ),
    _tool(
        "participant.profile.read",
        "Read a participant's profile, plan dates and support needs.",
        "operations",
        R.READ,
        B.PARTICIPANT_GOALS,
        D.PII,
        "function",
        _fn("participant.profile_read"),
        _obj(
            ["participant_id"],
            participant_id=_ID,
            sections={"type": "array", "items": {"enum": ["contact", "plan", "goals", "supports"]}},
        ),
        agents=(HENRY, REGGIE),
    ),
    # --- comms
    _tool(
        "comms.email.draft",
        "Draft an e-mail for a human to send or for comms.email.send.",
        "comms",
        R.WRITE,
        B.COMMS_PARTICIPANT_CARER,
        D.PII,
        "function",
        _fn("comms.email_draft"),
        _obj(
            ["to", "subject", "body"],
            to=_EMAIL_LIST,
            cc=_EMAIL_LIST,
            subject={"type": "string", "maxLength": 200},
            body={"type": "string", "maxLength": 20000},
        ),
    ),
    _tool(
        "comms.email.send",
        "Send an e-mail from the organisation's mailbox.",
        "comms",
        R.WRITE,
        B.COMMS_PARTICIPANT_CARER,
        D.PII,
        "api",
        {"url": "http://127.0.0.1:8025/api/send", "method": "POST", "timeout_s": 10},
        _obj(
            ["to", "subject", "body"],
            to=_EMAIL_LIST,
            cc=_EMAIL_LIST,
            subject={"type": "string", "maxLength": 200},
            body={"type": "string", "maxLength": 20000},
            consent_pii={"type": "boolean"},
        ),
        roles=("comms_officer", "coordinator"),
        external=True,
    ),
    _tool(
        "comms.sms.send",
        "Send an SMS to a participant, carer or staff member.",
        "comms",
        R.WRITE,
        B.COMMS_PARTICIPANT_CARER,
        D.PII,
        "api",
        {"url": "http://127.0.0.1:8025/api/sms", "method": "POST", "timeout_s": 10},
        _obj(
            ["to", "message"],
            to={"type": "string", "pattern": r"^\+?[0-9 ]{8,15}$"},
            message={"type": "string", "maxLength": 480},
        ),
        agents=(HENRY, REGGIE),
        external=True,
    ),
    _tool(
        "comms.notification.push",
        "Push an in-app notification to staff.",
        "comms",
        R.WRITE,
        B.COMMS_STAFF,
        D.LOGISTICS,
        "function",
        _fn("comms.notification_push"),
        _obj(
            ["staff_ids", "message"],
            staff_ids={"type": "array", "items": _ID, "minItems": 1, "maxItems": 200},
            message={"type": "string", "maxLength": 500},
            urgency={"enum": ["low", "normal", "high"]},
        ),
        agents=(HENRY, REGGIE),
    ),
    _tool(
        "comms.message.classify",
        "Classify an inbound message into context buckets and urgency.",
        "comms",
        R.READ,
        B.COMMS_PUBLIC_OTHER,
        D.LOGISTICS,
        "function",
        _fn("comms.message_classify"),
        _obj(
            ["text"],
            text={"type": "string", "maxLength": 20000},
            channel={"enum": ["email", "sms", "phone", "web"]},
        ),
        agents=(HENRY, REGGIE, TRIAGE),
        validation_mode=V.MONITOR,
    ),
    # --- Type 1 native helpers: inline LLM calls (the model is an external channel: PII filtered)
    _tool(
        "native.message.triage",
        "Triage an incoming message: urgency, intent, one-line summary, likely buckets.",
        "comms",
        R.READ,
        B.COMMS_PUBLIC_OTHER,
        D.PII,
        "function",
        _fn("native.triage", timeout_s=45),
        _obj(
            ["text"],
            text={"type": "string", "minLength": 1, "maxLength": 20000},
            channel={"enum": ["email", "sms", "phone", "web"]},
            consent_pii={"type": "boolean"},
        ),
        agents=(TRIAGE,),
        validation_mode=V.MONITOR,
        external=True,
        execution_mode="auto",
    ),
    _tool(
        "native.text.classify",
        "Classify a text as exactly one of the given labels.",
        "data",
        R.READ,
        B.DATA_REPORTING,
        D.PII,
        "function",
        _fn("native.classify", timeout_s=45),
        _obj(
            ["text", "labels"],
            text={"type": "string", "minLength": 1, "maxLength": 20000},
            labels={
                "type": "array",
                "minItems": 2,
                "maxItems": 50,
                "items": {"type": "string", "minLength": 1, "maxLength": 60},
            },
            consent_pii={"type": "boolean"},
        ),
        agents=(TRIAGE,),
        validation_mode=V.MONITOR,
        external=True,
        execution_mode="auto",
    ),
    _tool(
        "native.text.summarise",
        "Summarise a text in at most max_words words.",
        "data",
        R.READ,
        B.DATA_REPORTING,
        D.PII,
        "function",
        _fn("native.summarise", timeout_s=45),
        _obj(
            ["text"],
            text={"type": "string", "minLength": 1, "maxLength": 50000},
            max_words={"type": "integer", "minimum": 10, "maximum": 500},
            consent_pii={"type": "boolean"},
        ),
        agents=(TRIAGE,),
        validation_mode=V.MONITOR,
        external=True,
        execution_mode="auto",
    ),
    # --- hr
    _tool(
        "hr.staff.lookup",
        "Look up a staff member's role, team and contact details.",
        "hr",
        R.READ,
        B.STAFF_PERFORMANCE,
        D.PII,
        "function",
        _fn("hr.staff_lookup"),
        _obj(["query"], query={"type": "string", "minLength": 2, "maxLength": 100}),
        agents=(HENRY, REGGIE),
    ),
    _tool(
        "hr.kpi.update",
        "Update a staff member's KPI score for a review period.",
        "hr",
        R.WRITE,
        B.STAFF_PERFORMANCE,
        D.PII,
        "function",
        _fn("hr.kpi_update"),
        _obj(
            ["staff_id", "kpi", "period", "score"],
            staff_id=_ID,
            kpi={"type": "string", "maxLength": 80},
            period={"type": "string", "pattern": r"^\d{4}-(Q[1-4]|\d{2})$"},
            score={"type": "number", "minimum": 0, "maximum": 5},
            comment={"type": "string", "maxLength": 2000},
        ),
        roles=("hr_manager",),
    ),
    _tool(
        "hr.leave.request",
        "Lodge a leave request on a staff member's behalf.",
        "hr",
        R.WRITE,
        B.PAYROLL_ALLIANCE,
        D.PII,
        "function",
        _fn("hr.leave_request"),
        _obj(
            ["staff_id", "leave_type", "date_from", "date_to"],
            staff_id=_ID,
            leave_type={"enum": ["annual", "personal", "carers", "long_service", "unpaid"]},
            date_from=_DATE,
            date_to=_DATE,
        ),
    ),
    _tool(
        "hr.contract.generate",
        "Generate an employment contract from the approved template.",
        "hr",
        R.CRITICAL,
        B.TRAINING_DEVELOPMENT,
        D.PII,
        "function",
        _fn("hr.contract_generate", 30),
        _obj(
            ["staff_id", "template", "start_date"],
            staff_id=_ID,
            template={"enum": ["casual_support_worker", "part_time_coordinator"]},
            start_date=_DATE,
            hourly_rate=_MONEY,
        ),
        roles=("hr_manager",),
        validation_mode=V.STRICT,
    ),
    # --- finance
    _tool(
        "finance.invoice.create",
        "Create a draft invoice for delivered supports.",
        "finance",
        R.WRITE,
        B.BILLING_FINANCE,
        D.FINANCE,
        "function",
        _fn("finance.invoice_create"),
        _obj(
            ["participant_id", "line_items"],
            participant_id=_ID,
            line_items={
                "type": "array",
                "minItems": 1,
                "items": _obj(
                    ["support_item", "quantity", "unit_price"],
                    support_item={"type": "string", "pattern": r"^\d{2}_\d{3}_\d{4}_\d_\d$"},
                    quantity={"type": "number", "exclusiveMinimum": 0},
                    unit_price=_MONEY,
                ),
            },
            amount=_MONEY,
        ),
        roles=("finance_officer",),
    ),
    _tool(
        "finance.payment.reconcile",
        "Match a bank payment to open invoices in Xero.",
        "finance",
        R.CRITICAL,
        B.BILLING_FINANCE,
        D.FINANCE,
        "api",
        {"url": "http://127.0.0.1:8026/xero/reconcile", "method": "POST", "timeout_s": 20},
        _obj(
            ["payment_id", "invoice_ids", "amount"],
            payment_id=_ID,
            invoice_ids={"type": "array", "items": _ID, "minItems": 1},
            amount=_MONEY,
        ),
        roles=("finance_officer",),
    ),
    _tool(
        "finance.ndis.claim.submit",
        "Submit a bulk payment claim to the NDIA.",
        "finance",
        R.CRITICAL,
        B.BILLING_FINANCE,
        D.FINANCE,
        "api",
        {"url": "http://127.0.0.1:8026/ndia/claims", "method": "POST", "timeout_s": 30},
        _obj(["claim_batch_id", "amount"], claim_batch_id=_ID, amount=_MONEY),
        roles=("finance_officer",),
        validation_mode=V.STRICT,
    ),
    _tool(
        "finance.billing.adjust",
        "Adjust a billing line item (credit or correction).",
        "finance",
        R.CRITICAL,
        B.BILLING_FINANCE,
        D.FINANCE,
        "function",
        _fn("finance.billing_adjust"),
        _obj(
            ["invoice_id", "line", "amount", "reason"],
            invoice_id=_ID,
            line={"type": "integer", "minimum": 1},
            amount={"type": "number", "minimum": -100000, "maximum": 100000},
            reason={"type": "string", "minLength": 5, "maxLength": 500},
        ),
        roles=("finance_officer",),
    ),
    # --- data
    _tool(
        "data.report.generate",
        "Generate a standard report (roster coverage, incidents, budget use).",
        "data",
        R.READ,
        B.DATA_REPORTING,
        D.LOGISTICS,
        "function",
        _fn("data.report_generate", 60),
        _obj(
            ["report", "period"],
            report={"enum": ["roster_coverage", "incident_summary", "ndis_budget_use"]},
            period={"type": "string", "pattern": r"^\d{4}-\d{2}$"},
            format={"enum": ["pdf", "xlsx", "csv"]},
        ),
        agents=(HENRY, REGGIE),
        validation_mode=V.MONITOR,
    ),
    _tool(
        "data.tool_usage.summary",
        "Summarise tool calls per tool since a given time.",
        "data",
        R.READ,
        B.DATA_REPORTING,
        D.LOGISTICS,
        "sql",
        {
            "query": (
                "SELECT requested_tool_id AS tool_id, count(*) AS calls "
                "FROM tool_calls WHERE timestamp >= %(since)s "
                "GROUP BY requested_tool_id ORDER BY calls DESC"
            ),
            "params": ["since"],
            "timeout_s": 5,
        },
        _obj(["since"], since=_DATETIME),
        validation_mode=V.MONITOR,
        output_schema={
            "type": "object",
            "required": ["rows"],
            "properties": {"rows": {"type": "array"}},
        },
    ),
    _tool(
        "data.export.participants",
        "Export participant records (contains PII).",
        "data",
        R.CRITICAL,
        B.DATA_REPORTING,
        D.PII,
        "script",
        {"argv": ["python", "-m", "exports.participants"], "cwd": "exports", "timeout_s": 120},
        _obj(["fields"], fields={"type": "array", "items": {"type": "string"}, "minItems": 1}),
        validation_mode=V.STRICT,
    ),
    # --- system
    _tool(
        "system.cache.clear",
        "Clear an application cache namespace.",
        "system",
        R.WRITE,
        B.DATA_REPORTING,
        D.LOGISTICS,
        "function",
        _fn("system.cache_clear"),
        _obj(["namespace"], namespace={"enum": ["reports", "roster", "directory"]}),
    ),
    _tool(
        "system.job.trigger",
        "Trigger a scheduled job now.",
        "system",
        R.CRITICAL,
        B.DATA_REPORTING,
        D.LOGISTICS,
        "function",
        _fn("system.job_trigger"),
        _obj(["job"], job={"enum": ["decay", "alignment", "expire_approvals"]}),
    ),
    _tool(
        "system.config.update",
        "Change an application setting.",
        "system",
        R.CRITICAL,
        B.COMPLIANCE_REGULATORY,
        D.LOGISTICS,
        "function",
        _fn("system.config_update"),
        _obj(["key", "value"], key={"type": "string", "maxLength": 80}, value={}),
        validation_mode=V.STRICT,
        execution_mode="disabled",
    ),
    # --- Super Reggie's read replica (seed 000 §8; docs/agents.md)
    _tool(
        "db.replica.query",
        "Read-only SQL on the read replica (a streaming standby): the views tasks, tool_calls, "
        "approvals and agents; or a named query. Answers are row-capped and PII-filtered.",
        "data",
        R.READ,
        B.DATA_REPORTING,
        D.LOGISTICS,
        "function",
        {
            # The first answer of a process loads the PII filter's model (seconds).
            **_fn("rabs.replica_query", timeout_s=30),
            "row_cap": 200,
            "timeout_ms": 3000,
            "queries": {
                "tasks_by_status": {
                    "description": "How many tasks each agent has in each column.",
                    "sql": "SELECT agent_id, status, count(*) AS tasks FROM tasks "
                    "GROUP BY agent_id, status ORDER BY agent_id, status",
                },
                "calls_since": {
                    "description": "Tool calls since a time, by tool, decision and outcome.",
                    "sql": "SELECT tool_id, decision, outcome, count(*) AS calls FROM tool_calls "
                    "WHERE at >= %(since)s::timestamptz GROUP BY tool_id, decision, outcome "
                    "ORDER BY calls DESC",
                    "params": ["since"],
                },
                "pending_approvals": {
                    "description": "Approvals still waiting, oldest first.",
                    "sql": "SELECT tool_id, agent_id, risk_level, created_at FROM approvals "
                    "WHERE status = 'pending' ORDER BY created_at",
                },
            },
        },
        {
            "type": "object",
            "additionalProperties": False,
            "oneOf": [{"required": ["sql"]}, {"required": ["query"]}],
            "properties": {
                "sql": {"type": "string", "minLength": 1, "maxLength": 4000},
                "query": {"type": "string", "pattern": "^[a-z][a-z0-9_]{0,62}$"},
                "params": {"type": "object"},
                "max_rows": {"type": "integer", "minimum": 1, "maximum": 1000},
            },
        },
        agents=(REGGIE,),
        validation_mode=V.MONITOR,
        execution_mode="auto",
        permission_tier="READ_ONLY",
    )
    | {"modes": ["super"]},
]

VALIDATION_POLICIES: list[dict[str, Any]] = [
    {
        "name": "scheduling_write",
        "description": "Roster and transport changes: long shifts and large groups need a human.",
        "context_bucket": B.ROSTERING_SCHEDULING,
        "tool_patterns": ["roster.*", "transport.*"],
        "enforcement_mode": V.INTERCEPT,
        "priority": 60,
        "rules": [
            {
                "id": "large-outing",
                "when": {"field": "arguments.passengers", "op": "gt", "value": 8},
                "action": "review",
                "reason": "More than 8 passengers needs a coordinator.",
            },
        ],
    },
    {
        "name": "finance_limits",
        "description": "Money movements: amounts above $1,000 go to review, above $10,000 are refused.",
        "context_bucket": B.BILLING_FINANCE,
        "tool_patterns": ["finance.*"],
        "enforcement_mode": V.STRICT,
        "priority": 80,
        "rules": [
            {
                "id": "over-10k",
                "when": {"field": "arguments.amount", "op": "gt", "value": 10000},
                "action": "deny",
                "reason": "Amounts above $10,000 are processed by finance staff.",
            },
            {
                "id": "over-1k",
                "when": {"field": "arguments.amount", "op": "gt", "value": 1000},
                "action": "review",
                "reason": "Amounts above $1,000 need approval.",
            },
        ],
    },
    {
        "name": "external_comms",
        "description": "Messages leaving the organisation: extra recipients need review.",
        "context_bucket": B.COMMS_PARTICIPANT_CARER,
        "tool_patterns": ["comms.email.*", "comms.sms.*"],
        "enforcement_mode": V.INTERCEPT,
        "priority": 70,
        "rules": [
            {
                "id": "cc-recipients",
                "when": {"field": "arguments.cc", "op": "exists"},
                "action": "review",
                "reason": "Copying further recipients needs a human check.",
            },
        ],
    },
    {
        "name": "read_only_default",
        "description": "Reads and reports: logged, never blocked.",
        "context_bucket": B.DATA_REPORTING,
        "tool_patterns": ["*.read", "*.lookup", "*.availability", "data.report.*"],
        "enforcement_mode": V.MONITOR,
        "priority": 10,
        "rules": [],
    },
]

NOTES: list[dict[str, Any]] = [
    {"agent_id": HENRY, "content": "Always CC manager on emails", "priority": 80},
    {"agent_id": HENRY, "content": "Use formal tone for external", "priority": 70},
    {"agent_id": HENRY, "content": "Flag any NDIS budget > 80%", "priority": 90},
    {"agent_id": REGGIE, "content": "Greet callers by their preferred name", "priority": 60},
    {
        "agent_id": REGGIE,
        "content": "Never confirm a participant's address over the phone",
        "priority": 95,
        "note_type": "warning",
    },
]

#: The people agents deal with (docs/ledgers.md): name, relationship, the participant they act
#: for, groups, and their identities (channel, address as stored: +61… numbers).
PEOPLE: list[dict[str, Any]] = [
    {"name": "Ruby Tran", "relationship": "participant", "groups": ["participants"],
     "attributes": {"participant_id": "P-1042"}, "identities": [("sms", "+61400000101")]},
    {"name": "Linh Tran", "relationship": "family", "acts_for": "Ruby Tran",
     "groups": ["families"], "identities": [("sms", "+61400000102"),
                                             ("email", "linh.tran@example.org")]},
    {"name": "Marco Rossi", "relationship": "carer", "acts_for": "Ruby Tran",
     "groups": ["carers"], "identities": [("sms", "+61400000103")]},
    {"name": "Priya Nair", "relationship": "staff", "groups": ["coordinators", "owners"],
     "identities": [("email", "priya.nair@rabs.example"), ("chat", "priya")]},
    {"name": "Hills Bus Co", "relationship": "supplier", "groups": ["suppliers"],
     "identities": [("email", "bookings@hillsbus.example")]},
]  # fmt: skip

#: (agent, title, status, priority, payload) — the board's example Kanban.
TASKS: list[tuple[str, str, str, int, dict[str, Any]]] = [
    (HENRY, "Roster update for week 12", "todo", 70, {"week": "2026-W12"}),
    (HENRY, "Vehicle check: Hiace 2", "todo", 40, {"asset_id": "VEH-002"}),
    (
        HENRY,
        "Email draft: program changes to carers",
        "in_progress",
        60,
        {"program": "Saturday social group"},
    ),
    (HENRY, "KPI review: Q1 support coordinators", "review", 50, {"period": "2026-Q1"}),
    (HENRY, "Shift swap: Mon 14:00 community access", "done", 50, {"shift_id": "SH-4411"}),
    (HENRY, "Report sent: March roster coverage", "done", 30, {"report": "roster_coverage"}),
    (REGGIE, "Call back: carer asking about transport", "todo", 80, {"channel": "phone"}),
    (REGGIE, "Answer web enquiry about respite", "in_progress", 50, {"channel": "web"}),
]

#: (bucket, entity, pattern_type, observation, severity, repeatable, frequency)
OBSERVATIONS: list[tuple[str, str, str, str, int, float, int]] = [
    (
        B.ROSTERING_SCHEDULING,
        "Saturday social group",
        "capacity_trend",
        "Saturday outings regularly need a third support worker after 10 sign-ups.",
        3,
        1.3,
        4,
    ),
    (
        B.TRANSPORTATION,
        "Hiace 2",
        "recurring_issue",
        "Tailgate hoist sticks in cold mornings; allow 10 extra minutes.",
        3,
        1.2,
        3,
    ),
    (
        B.COMMS_PARTICIPANT_CARER,
        "participant P-1042",
        "preference",
        "Prefers SMS reminders the evening before, not phone calls.",
        2,
        1.0,
        2,
    ),
    (
        B.BILLING_FINANCE,
        "participant P-1042",
        "budget_alert",
        "Core supports budget at 78% with four months of plan remaining.",
        4,
        1.0,
        1,
    ),
    (
        B.INCIDENTS_SAFETY,
        "Bayside centre",
        "hazard",
        "Wet floor near the kitchen door after rain; two near-misses reported.",
        5,
        1.5,
        2,
    ),
    (
        B.STAFF_PERFORMANCE,
        "support coordinators",
        "kpi_trend",
        "Progress notes submitted within 24 h improved from 71% to 88% this quarter.",
        2,
        0.8,
        1,
    ),
]

#: Hooks the demo agents proposed (docs/hooks.md). The first two only wake the agent or queue a
#: message, so policy lets them go live at once; the third asks a model, so it waits for staff
#: on the board's Hooks page.
HOOKS: list[tuple[str, dict[str, Any]]] = [
    (
        HENRY,
        {
            "name": "participant fall",
            "description": "A participant message mentioning a fall wakes Henry and escalates.",
            "kind": "deterministic",
            "events": ["inbound:received"],
            "condition": {
                "field": "origin.text",
                "op": "matches",
                "value": r"\b(fell|fall|fallen|falls)\b",
            },
            "effects": [
                {
                    "type": "wake",
                    "title": "Possible fall: check on the participant and escalate to the on-call "
                    "coordinator",
                    "priority": 95,
                    "instructions": "Find who is rostered with the participant today, tell the "
                    "on-call coordinator at once, and record an incident.",
                },
                {
                    "type": "message",
                    "text": "A message mentioned a fall: treat it as urgent (SAFETY_FIRST).",
                },
            ],
        },
    ),
    (
        HENRY,
        {
            "name": "tomorrow's roster gaps",
            "description": "Every weekday at 07:00 Brisbane: check tomorrow's roster for gaps.",
            "kind": "scheduled",
            "schedule": "0 7 * * 1-5",
            "timezone": "Australia/Brisbane",
            "effects": [
                {
                    "type": "wake",
                    "title": "Check tomorrow's roster for unfilled shifts",
                    "priority": 60,
                }
            ],
        },
    ),
    (
        REGGIE,
        {
            "name": "complaint e-mail",
            "description": "An inbound e-mail that sounds like a complaint becomes a task for "
            "the coordinator.",
            "kind": "hybrid",
            "events": ["inbound:received"],
            "condition": {"field": "origin.type", "op": "eq", "value": "email"},
            "prompt": "Does this e-mail sound like a complaint about our service?",
            "effects": [
                {
                    "type": "wake",
                    "title": "Complaint received: create a task for the coordinator",
                    "priority": 80,
                }
            ],
        },
    ),
]
