"""Callables behind the demo business's ``function`` tools (see ``brainframe.demo_data``).

They answer the way the real integrations would (ids, statuses, echoes of what was asked) from
the arguments alone, so the whole governance path can be exercised on a fresh installation.
"""

from __future__ import annotations

import hashlib
import uuid
from datetime import date, timedelta
from typing import Any

from django.core.cache import cache

from .function import ToolFunction


def _ref(prefix: str, call_id: uuid.UUID) -> str:
    return f"{prefix}-{str(call_id)[:8].upper()}"


def _pick(seed: str, options: list[str]) -> str:
    return options[int(hashlib.sha256(seed.encode()).hexdigest(), 16) % len(options)]


def roster_shift_read(args: dict[str, Any], *, call_id: uuid.UUID) -> dict[str, Any]:
    start = date.fromisoformat(args["date_from"])
    end = min(date.fromisoformat(args["date_to"]), start + timedelta(days=13))
    staff = [args["staff_id"]] if args.get("staff_id") else ["ST-014", "ST-027", "ST-031"]
    shifts = []
    day = start
    while day <= end:
        for member in staff:
            shifts.append(
                {
                    "date": day.isoformat(),
                    "staff_id": member,
                    "start": "09:00",
                    "end": "15:00",
                    "service_type": _pick(f"{member}{day}", ["community_access", "personal_care"]),
                }
            )
        day += timedelta(days=1)
    return {"shifts": shifts}


def roster_shift_create(args: dict[str, Any], *, call_id: uuid.UUID) -> dict[str, Any]:
    return {"shift_id": _ref("SH", call_id), "status": "created", **args}


def roster_shift_swap(args: dict[str, Any], *, call_id: uuid.UUID) -> dict[str, Any]:
    return {"shift_id": args["shift_id"], "staff_id": args["to_staff_id"], "status": "swapped"}


def transport_vehicle_availability(args: dict[str, Any], *, call_id: uuid.UUID) -> dict[str, Any]:
    fleet = [
        {"vehicle_id": "VEH-001", "seats": 8, "wheelchair_access": True},
        {"vehicle_id": "VEH-002", "seats": 12, "wheelchair_access": True},
        {"vehicle_id": "VEH-003", "seats": 5, "wheelchair_access": False},
    ]
    if args.get("wheelchair_access"):
        fleet = [v for v in fleet if v["wheelchair_access"]]
    return {"vehicles": fleet}


def transport_vehicle_book(args: dict[str, Any], *, call_id: uuid.UUID) -> dict[str, Any]:
    return {"booking_id": _ref("BK", call_id), "status": "booked", **args}


def facilities_check_log(args: dict[str, Any], *, call_id: uuid.UUID) -> dict[str, Any]:
    return {"check_id": _ref("FC", call_id), "recorded": True, **args}


def participant_profile_read(args: dict[str, Any], *, call_id: uuid.UUID) -> dict[str, Any]:
    pid = args["participant_id"]
    return {
        "participant_id": pid,
        "plan": {"start": "2026-02-01", "end": "2027-01-31", "core_budget_used_pct": 78},
        "goals": ["Build confidence using public transport", "Join a weekly social group"],
        "supports": ["community_access", "transport"],
    }


def comms_email_draft(args: dict[str, Any], *, call_id: uuid.UUID) -> dict[str, Any]:
    return {"draft_id": _ref("DR", call_id), "to": args["to"], "subject": args["subject"]}


def comms_notification_push(args: dict[str, Any], *, call_id: uuid.UUID) -> dict[str, Any]:
    return {"delivered": len(args["staff_ids"]), "urgency": args.get("urgency", "normal")}


def comms_message_classify(args: dict[str, Any], *, call_id: uuid.UUID) -> dict[str, Any]:
    text = args["text"].lower()
    urgent = any(word in text for word in ("urgent", "asap", "fall", "injur", "hospital"))
    return {"urgency": "high" if urgent else "normal", "buckets": []}


def hr_staff_lookup(args: dict[str, Any], *, call_id: uuid.UUID) -> dict[str, Any]:
    return {"matches": [{"staff_id": "ST-014", "role": "support worker", "team": "Bayside"}]}


def hr_kpi_update(args: dict[str, Any], *, call_id: uuid.UUID) -> dict[str, Any]:
    return {"updated": True, **args}


def hr_leave_request(args: dict[str, Any], *, call_id: uuid.UUID) -> dict[str, Any]:
    return {"leave_request_id": _ref("LV", call_id), "status": "lodged"}


def hr_contract_generate(args: dict[str, Any], *, call_id: uuid.UUID) -> dict[str, Any]:
    return {"document_id": _ref("CT", call_id), "template": args["template"]}


def finance_invoice_create(args: dict[str, Any], *, call_id: uuid.UUID) -> dict[str, Any]:
    total = sum(item["quantity"] * item["unit_price"] for item in args["line_items"])
    return {"invoice_id": _ref("INV", call_id), "status": "draft", "total": round(total, 2)}


def finance_billing_adjust(args: dict[str, Any], *, call_id: uuid.UUID) -> dict[str, Any]:
    return {"adjustment_id": _ref("ADJ", call_id), **args}


def data_report_generate(args: dict[str, Any], *, call_id: uuid.UUID) -> dict[str, Any]:
    fmt = args.get("format", "pdf")
    return {"report": args["report"], "file": f"{args['report']}_{args['period']}.{fmt}"}


def system_cache_clear(args: dict[str, Any], *, call_id: uuid.UUID) -> dict[str, Any]:
    cache.delete(f"namespace:{args['namespace']}")
    return {"namespace": args["namespace"], "cleared": True}


def system_job_trigger(args: dict[str, Any], *, call_id: uuid.UUID) -> dict[str, Any]:
    return {"job": args["job"], "queued": True}


def system_config_update(args: dict[str, Any], *, call_id: uuid.UUID) -> dict[str, Any]:
    raise NotImplementedError("configuration changes are made by staff in the admin")


#: The callables by the name tools give in ``handler_config["callable"]``.
CALLABLES: dict[str, ToolFunction] = {
    "roster.shift_read": roster_shift_read,
    "roster.shift_create": roster_shift_create,
    "roster.shift_swap": roster_shift_swap,
    "transport.vehicle_availability": transport_vehicle_availability,
    "transport.vehicle_book": transport_vehicle_book,
    "facilities.check_log": facilities_check_log,
    "participant.profile_read": participant_profile_read,
    "comms.email_draft": comms_email_draft,
    "comms.notification_push": comms_notification_push,
    "comms.message_classify": comms_message_classify,
    "hr.staff_lookup": hr_staff_lookup,
    "hr.kpi_update": hr_kpi_update,
    "hr.leave_request": hr_leave_request,
    "hr.contract_generate": hr_contract_generate,
    "finance.invoice_create": finance_invoice_create,
    "finance.billing_adjust": finance_billing_adjust,
    "data.report_generate": data_report_generate,
    "system.cache_clear": system_cache_clear,
    "system.job_trigger": system_job_trigger,
    "system.config_update": system_config_update,
}
