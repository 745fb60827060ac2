"""OpenTelemetry export: a span per decision and per execution, counters of what happened.

Off unless configured (``OTEL_EXPORTER_OTLP_ENDPOINT``, e.g. ``http://collector:4318``: spans
and metrics go there over OTLP/HTTP, batched, off the request path). When off, each hook below
costs one attribute test.

- ``rabs.decision`` span per tool call decided, from the request's arrival to its audit write:
  ``rabs.agent``, ``rabs.tool``, ``rabs.decision``, ``rabs.code``, ``rabs.vpol``, ``rabs.r_tag``,
  ``rabs.o_tag``, ``rabs.call_id``, ``rabs.face``, ``rabs.latency_ms``.
- ``rabs.execution`` span per handler run: the same call attributes, ``rabs.outcome``,
  ``rabs.duration_ms``.
- Counters: ``rabs.decisions`` (by ``rabs.decision``), ``rabs.denials`` (by ``rabs.code``),
  ``rabs.approvals`` (by ``rabs.event``: created, decided, escalated, expired), ``rabs.threats``
  (by ``rabs.action``), from the events as they are published.

The audit stays the record; these are for the operator's dashboards and traces (the event log
and its sinks carry the hash-chain evidence).
"""

from __future__ import annotations

import logging
import time
from typing import Any

log = logging.getLogger(__name__)


class _Telemetry:
    def __init__(self, tracer: Any, meter: Any) -> None:
        self.tracer = tracer
        self.decisions = meter.create_counter("rabs.decisions", description="Tool calls decided")
        self.denials = meter.create_counter("rabs.denials", description="Tool calls refused")
        self.approvals = meter.create_counter("rabs.approvals", description="Approval events")
        self.threats = meter.create_counter("rabs.threats", description="Threats detected")


_active: _Telemetry | None = None
_providers: list[Any] = []


def telemetry_on() -> bool:
    return _active is not None


def telemetry_configure(
    *, span_processor: Any = None, metric_reader: Any = None, service_name: str = "rabs"
) -> None:
    """Turn export on with these (tests: in-memory ones), or off with neither. The SDK is
    imported inside: a process that never turns export on does not load it."""
    global _active
    for provider in _providers:
        provider.shutdown()
    _providers.clear()
    if span_processor is None and metric_reader is None:
        _active = None
        return
    from opentelemetry.sdk.metrics import MeterProvider
    from opentelemetry.sdk.resources import Resource
    from opentelemetry.sdk.trace import TracerProvider

    resource = Resource.create({"service.name": service_name})
    tracer_provider = TracerProvider(resource=resource)
    if span_processor is not None:
        tracer_provider.add_span_processor(span_processor)
    meter_provider = MeterProvider(
        resource=resource, metric_readers=[metric_reader] if metric_reader is not None else []
    )
    _providers.extend([tracer_provider, meter_provider])
    _active = _Telemetry(
        tracer_provider.get_tracer("rabs.broker"), meter_provider.get_meter("rabs.broker")
    )


def telemetry_flush() -> None:
    """Send what is batched now (at shutdown; tests)."""
    for provider in _providers:
        provider.force_flush()


def telemetry_from_settings(endpoint: str, service_name: str = "rabs") -> None:
    """OTLP/HTTP export to ``endpoint`` (the collector's base URL), batched. The exporters are
    imported inside, only when export is configured."""
    if not endpoint:
        return
    from opentelemetry.exporter.otlp.proto.http.metric_exporter import OTLPMetricExporter
    from opentelemetry.exporter.otlp.proto.http.trace_exporter import OTLPSpanExporter
    from opentelemetry.sdk.metrics.export import PeriodicExportingMetricReader
    from opentelemetry.sdk.trace.export import BatchSpanProcessor

    base = endpoint.rstrip("/")
    telemetry_configure(
        span_processor=BatchSpanProcessor(OTLPSpanExporter(endpoint=f"{base}/v1/traces")),
        metric_reader=PeriodicExportingMetricReader(
            OTLPMetricExporter(endpoint=f"{base}/v1/metrics"), export_interval_millis=15_000
        ),
        service_name=service_name,
    )
    log.info("OpenTelemetry export to %s", base)


def now_ns() -> int:
    return time.time_ns()


def _call_attributes(call: Any) -> dict[str, Any]:
    return {
        "rabs.call_id": str(call.id),
        "rabs.agent": call.agent_id,
        "rabs.tool": call.requested_tool_id,
        "rabs.decision": call.decision,
        "rabs.code": call.decision_code,
        "rabs.vpol": str(call.vpol_id) if call.vpol_id else "",
        "rabs.r_tag": str(call.r_tag_id) if call.r_tag_id else "",
        "rabs.o_tag": str(call.o_tag_id) if call.o_tag_id else "",
        "rabs.face": call.face,
    }


def decision_observed(call: Any, started_ns: int) -> None:
    """The ``rabs.decision`` span of a recorded call (started at the request's arrival)."""
    active = _active
    if active is None:
        return
    try:
        ended = time.time_ns()
        attributes = _call_attributes(call)
        attributes["rabs.latency_ms"] = round((ended - started_ns) / 1e6, 3)
        active.tracer.start_span("rabs.decision", start_time=started_ns, attributes=attributes).end(
            end_time=ended
        )
        active.decisions.add(1, {"rabs.decision": call.decision})
    except Exception:  # telemetry never fails a call
        log.warning("could not record the decision span", exc_info=True)


def execution_observed(call: Any) -> None:
    """The ``rabs.execution`` span of a call whose outcome was just written."""
    active = _active
    if active is None or call.duration_ms is None:
        return
    try:
        ended = time.time_ns()
        attributes = _call_attributes(call)
        attributes["rabs.outcome"] = call.outcome
        attributes["rabs.duration_ms"] = call.duration_ms
        active.tracer.start_span(
            "rabs.execution",
            start_time=ended - int(call.duration_ms) * 1_000_000,
            attributes=attributes,
        ).end(end_time=ended)
    except Exception:
        log.warning("could not record the execution span", exc_info=True)


def events_observed(events: tuple[Any, ...]) -> None:
    """Counters from events as they are published (denials, approvals, threats)."""
    active = _active
    if active is None:
        return
    for event in events:
        family, _, short = event.NAME.partition(":")
        if event.NAME in ("governance:call_blocked", "governance:rule_violated"):
            active.denials.add(1, {"rabs.code": event.code})
        elif family == "approval":
            active.approvals.add(1, {"rabs.event": short})
        elif event.NAME == "security:threat_detected":
            active.threats.add(1, {"rabs.action": event.action})
