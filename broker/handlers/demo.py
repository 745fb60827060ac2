"""Callables behind the demo business's ``function`` tools (see ``brainframe.demo_data``).

They answer the way the real integrations would (ids, statuses, echoes of what was asked) from
the arguments alone, so the whole governance path can be exercised on a fresh installation.
"""

from __future__ import annotations

import hashlib
import uuid
from datetime import date, timedelta
from typing import Any

from .function import register


def _ref(prefix: str, call_id: uuid.UUID) -> str:
    return f"{prefix}-{str(call_id)[:8].upper()}"


def _pick(seed: str, options: list[str]) -> str:
    return options[int(hashlib.sha256(seed.encode()).hexdigest(), 16) % len(options)]


@register("roster.shift_read")
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


@register("roster.shift_create")
def roster_shift_create(args: dict[str, Any], *, call_id: uuid.UUID) -> dict[str, Any]:
    return {"shift_id": _ref("SH", call_id), "status": "created", **args}


@register("roster.shift_swap")
def roster_shift_swap(args: dict[str, Any], *, call_id: uuid.UUID) -> dict[str, Any]:
    return {"shift_id": args["shift_id"], "staff_id": args["to_staff_id"], "status": "swapped"}


@register("transport.vehicle_availability")
def transport_vehicle_availability(args: dict[str, Any], *, call_id: uuid.UUID) -> dict[str, Any]:
    fleet = [
        {"vehicle_id": "VEH-001", "seats": 8, "wheelchair_access": True},
        {"vehicle_id": "VEH-002", "seats": 12, "wheelchair_access": True},
        {"vehicle_id": "VEH-003", "seats": 5, "wheelchair_access": False},
    ]
    if args.get("wheelchair_access"):
        fleet = [v for v in fleet if v["wheelchair_access"]]
    return {"vehicles": fleet}


@register("transport.vehicle_book")
def transport_vehicle_book(args: dict[str, Any], *, call_id: uuid.UUID) -> dict[str, Any]:
    return {"booking_id": _ref("BK", call_id), "status": "booked", **args}


@register("facilities.check_log")
def facilities_check_log(args: dict[str, Any], *, call_id: uuid.UUID) -> dict[str, Any]:
    return {"check_id": _ref("FC", call_id), "recorded": True, **args}


@register("participant.profile_read")
def participant_profile_read(args: dict[str, Any], *, call_id: uuid.UUID) -> dict[str, Any]:
    pid = args["participant_id"]
    return {
        "participant_id": pid,
        "plan": {"start": "2026-02-01", "end": "2027-01-31", "core_budget_used_pct": 78},
        "goals": ["Build confidence using public transport", "Join a weekly social group"],
        "supports": ["community_access", "transport"],
    }


@register("comms.email_draft")
def comms_email_draft(args: dict[str, Any], *, call_id: uuid.UUID) -> dict[str, Any]:
    return {"draft_id": _ref("DR", call_id), "to": args["to"], "subject": args["subject"]}


@register("comms.notification_push")
def comms_notification_push(args: dict[str, Any], *, call_id: uuid.UUID) -> dict[str, Any]:
    return {"delivered": len(args["staff_ids"]), "urgency": args.get("urgency", "normal")}


@register("comms.message_classify")
def comms_message_classify(args: dict[str, Any], *, call_id: uuid.UUID) -> dict[str, Any]:
    text = args["text"].lower()
    urgent = any(word in text for word in ("urgent", "asap", "fall", "injur", "hospital"))
    return {"urgency": "high" if urgent else "normal", "buckets": []}


@register("hr.staff_lookup")
def hr_staff_lookup(args: dict[str, Any], *, call_id: uuid.UUID) -> dict[str, Any]:
    return {"matches": [{"staff_id": "ST-014", "role": "support worker", "team": "Bayside"}]}


@register("hr.kpi_update")
def hr_kpi_update(args: dict[str, Any], *, call_id: uuid.UUID) -> dict[str, Any]:
    return {"updated": True, **args}


@register("hr.leave_request")
def hr_leave_request(args: dict[str, Any], *, call_id: uuid.UUID) -> dict[str, Any]:
    return {"leave_request_id": _ref("LV", call_id), "status": "lodged"}


@register("hr.contract_generate")
def hr_contract_generate(args: dict[str, Any], *, call_id: uuid.UUID) -> dict[str, Any]:
    return {"document_id": _ref("CT", call_id), "template": args["template"]}


@register("finance.invoice_create")
def finance_invoice_create(args: dict[str, Any], *, call_id: uuid.UUID) -> dict[str, Any]:
    total = sum(item["quantity"] * item["unit_price"] for item in args["line_items"])
    return {"invoice_id": _ref("INV", call_id), "status": "draft", "total": round(total, 2)}


@register("finance.billing_adjust")
def finance_billing_adjust(args: dict[str, Any], *, call_id: uuid.UUID) -> dict[str, Any]:
    return {"adjustment_id": _ref("ADJ", call_id), **args}


@register("data.report_generate")
def data_report_generate(args: dict[str, Any], *, call_id: uuid.UUID) -> dict[str, Any]:
    fmt = args.get("format", "pdf")
    return {"report": args["report"], "file": f"{args['report']}_{args['period']}.{fmt}"}


@register("system.cache_clear")
def system_cache_clear(args: dict[str, Any], *, call_id: uuid.UUID) -> dict[str, Any]:
    from django.core.cache import cache

    cache.delete(f"namespace:{args['namespace']}")
    return {"namespace": args["namespace"], "cleared": True}


@register("system.job_trigger")
def system_job_trigger(args: dict[str, Any], *, call_id: uuid.UUID) -> dict[str, Any]:
    return {"job": args["job"], "queued": True}


@register("system.config_update")
def system_config_update(args: dict[str, Any], *, call_id: uuid.UUID) -> dict[str, Any]:
    raise NotImplementedError("configuration changes are made by staff in the admin")
