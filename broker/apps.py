from __future__ import annotations

from datetime import date
from typing import Any

from django.apps import AppConfig


class BrokerConfig(AppConfig):
    """The Tools Broker: the agent API and the decision pipeline."""

    name = "broker"
    verbose_name = "Tools Broker"

    def ready(self) -> None:
        # Handlers, services and the API import models, which cannot be imported before the app
        # registry is ready.
        from brainframe.jobs import job_register
        from brainframe.models import Tool, WebhookSubscription
        from brainframe.services.eventlog.webhooks import webhook_payload_register, webhooks_run
        from brainframe.services.hooks.runner import hook_invoker_register

        from . import checks  # noqa: F401  (registers the sandbox's start-up check)

        # drf-spectacular learns of an extension when its class is defined (RABS-HMAC's).
        from .a2a.face import a2a_push_payload
        from .api import schema  # noqa: F401
        from .audit.checkpoints import checkpoint_write
        from .channels import replies
        from .channels.delivery import deliveries_run
        from .handlers import (
            a2a,
            api,
            demo,
            function,
            native,
            replica,
            runner_register,
            script,
            sql,
            system,
            upstream,
        )
        from .pipeline.outbound import consent_decider_register
        from .services.approvals import approvals_expire, approvals_recover
        from .services.execution import calls_interrupted_seal
        from .services.hook_calls import hook_invoke
        from .services.notifications import digests_send
        from .services.upstreams import upstream_relist_named, upstreams_relist
        from .upstream_client import relister_register

        hook_invoker_register(hook_invoke)
        relister_register(upstream_relist_named)
        runner_register(Tool.HandlerType.FUNCTION, function.run)
        runner_register(Tool.HandlerType.SQL, sql.run)
        runner_register(Tool.HandlerType.API, api.run)
        runner_register(Tool.HandlerType.SCRIPT, script.run)
        runner_register(Tool.HandlerType.MCP, upstream.run)
        runner_register(Tool.HandlerType.A2A, a2a.run)
        function.functions_register(demo.CALLABLES)
        function.functions_register(native.CALLABLES)
        function.functions_register(system.CALLABLES)
        function.functions_register(replies.CALLABLES)
        consent_decider_register(replies.REPLY_TOOL, replies.reply_consent)
        function.functions_register(replica.CALLABLES, configured=True)

        def checkpoint_job(day: date, reason: str = "beat") -> Any:
            written = checkpoint_write(reason=reason)
            return {
                "checkpoint": written.checkpoint.seq if written.checkpoint else None,
                "kept_at_signed_head": written.regressed,
            }

        def expire_approvals(day: date) -> Any:
            return {
                "expired": approvals_expire(),
                "re-enqueued": approvals_recover(),
                "interrupted": calls_interrupted_seal(),
            }

        job_register("expire_approvals", expire_approvals)
        job_register("send_digests", lambda day: {"sent": digests_send()})
        job_register("checkpoint", checkpoint_job)
        job_register("checkpoint_shutdown", lambda day: checkpoint_job(day, "shutdown"))
        job_register("relist_upstreams", lambda day: upstreams_relist())
        job_register(
            "deliver_replies",
            lambda day: {**deliveries_run(), "submitted": replies.replies_sweep()},
        )
        job_register("deliver_webhooks", lambda day: webhooks_run())
        webhook_payload_register(WebhookSubscription.Kind.A2A_PUSH, a2a_push_payload)
