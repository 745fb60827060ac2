"""Describes RABS-HMAC in the OpenAPI schema."""

from __future__ import annotations

from typing import Any

from drf_spectacular.extensions import OpenApiAuthenticationExtension, OpenApiSerializerExtension


class AgentSignatureScheme(OpenApiAuthenticationExtension):
    target_class = "broker.api.authentication.AgentSignatureAuthentication"
    name = "RABS-HMAC"

    def get_security_definition(self, auto_schema: Any) -> dict[str, Any]:
        return {
            "type": "apiKey",
            "in": "header",
            "name": "Authorization",
            "description": (
                "RABS-HMAC agent=<agent_id>,ts=<unix seconds>,nonce=<hex>,sig=<hex>; sig is hex "
                "HMAC-SHA256 under the agent's secret of METHOD\\npath_with_query\\nts\\nnonce\\n"
                "sha256_hex(body)."
            ),
        }


# The answers every agent endpoint can give besides its own: documented once, for all of them.
ERROR_RESPONSES = {
    "400": "Malformed request (code and field name the problem)",
    "401": "Missing or invalid RABS-HMAC signature",
    "403": "Not allowed for this agent",
    "404": "No such thing of this agent's",
    "405": "Method not allowed",
    "406": "Not acceptable",
    "409": "Conflict with the current state",
    "413": "Body too large",
    "415": "Unsupported media type",
    "429": "Rate limit (Retry-After)",
    "503": "A dependency (audit store, queue) is unavailable: nothing was done",
}
ERROR_SCHEMA = {
    "type": "object",
    "properties": {
        "code": {"type": "string"},
        "detail": {"type": "string"},
        "field": {"type": "string"},
        "errors": {"type": "array", "items": {"type": "object"}},
    },
    "required": ["code"],
}


def document_errors(result: dict[str, Any], generator: Any, request: Any, public: Any) -> Any:
    """drf-spectacular postprocessing hook: every operation documents the error answers (with
    the error body) and a JSON body for success answers that had none described."""
    schemas = result.setdefault("components", {}).setdefault("schemas", {})
    schemas.setdefault("BrokerError", ERROR_SCHEMA)
    refusal = schemas.get("ToolCallRefusal", {})
    if "oneOf" in refusal:  # an audited answer carries a code too: either may match, or both
        refusal["anyOf"] = refusal.pop("oneOf")
    if "ToolCallRequest" in schemas:
        # A call starts a chain (origin), joins one (o_tag) or follows a decision
        # (parent_r_tag): at most one of the three, as the broker enforces.
        given = [{"type": "object", "required": [n], "properties": {n: {"not": {"type": "null"}}}}
                 for n in ("origin", "o_tag", "parent_r_tag")]  # fmt: skip
        schemas["ToolCallRequest"]["not"] = {
            "anyOf": [{"allOf": [a, b]} for i, a in enumerate(given) for b in given[i + 1 :]]
        }
    ref = {"$ref": "#/components/schemas/BrokerError"}
    for path, operations in result.get("paths", {}).items():
        if not path.startswith("/api/v1/"):
            continue
        for operation in operations.values():
            if not isinstance(operation, dict) or "responses" not in operation:
                continue
            responses = operation["responses"]
            for code, description in ERROR_RESPONSES.items():
                responses.setdefault(
                    code,
                    {"description": description, "content": {"application/json": {"schema": ref}}},
                )
            for code, response in responses.items():
                if code.startswith("2") and "content" not in response:
                    response["content"] = {"application/json": {"schema": {"type": "object"}}}
    return result


#: OpenAPI links: how an agent goes from one answer to the next request (and how stateful API
#: fuzzing chains real identifiers instead of random ones).
LINKS: dict[tuple[str, str], dict[str, dict[str, Any]]] = {
    ("/api/v1/tool-calls/", "post"): {
        "PollToolCall": {
            "operationId": "v1_tool_calls_retrieve",
            "parameters": {"call_id": "$response.body#/call_id"},
            "description": "Poll the call (its outcome, or its approval while pending).",
        },
    },
    ("/api/v1/tasks/", "get"): {
        "ClaimTask": {
            "operationId": "v1_tasks_claim_create",
            "parameters": {"task_id": "$response.body#/0/task_id"},
            "description": "Claim the first task listed.",
        },
    },
    ("/api/v1/tasks/{task_id}/claim/", "post"): {
        **{
            f"{verb.title()}Task": {
                "operationId": f"v1_tasks_{verb}_create",
                "parameters": {"task_id": "$response.body#/task_id"},
                "description": f"Report {verb} on the claimed task.",
            }
            for verb in ("progress", "complete", "fail")
        },
        "TaskContext": {
            "operationId": "v1_context_retrieve",
            "parameters": {"task_id": "$response.body#/task_id"},
            "description": "The context (notes, directives, observations) for the task.",
        },
    },
}


def declare_links(result: dict[str, Any], generator: Any, request: Any, public: Any) -> Any:
    """drf-spectacular postprocessing hook: the OpenAPI links of ``LINKS`` on the success
    answers of their operations (those present in this schema)."""
    paths = result.get("paths", {})
    known = {
        operation.get("operationId")
        for operations in paths.values()
        for operation in operations.values()
        if isinstance(operation, dict)
    }
    for (path, method), links in LINKS.items():
        operation = paths.get(path, {}).get(method)
        if operation is None:
            continue
        present = {name: link for name, link in links.items() if link["operationId"] in known}
        for code, response in operation.get("responses", {}).items():
            if code in ("200", "201", "202") and present:
                response.setdefault("links", {}).update(present)
    return result


class StrictSerializerSchema(OpenApiSerializerExtension):
    """Strict request bodies say so: no properties beyond the documented ones."""

    target_class = "broker.api.serializers.StrictSerializer"
    match_subclasses = True

    def map_serializer(self, auto_schema: Any, direction: Any) -> Any:
        schema = auto_schema._map_basic_serializer(self.target, direction)
        schema["additionalProperties"] = False
        return schema
