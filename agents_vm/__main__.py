"""``python -m agents_vm serve --config FILE``: the agent service (supervisor + loop worker).

``python -m agents_vm worker --config FILE`` is the loop worker the supervisor starts; it is not
meant to be run by hand. ``call`` and ``tools`` send one signed request (``agents_vm.service.cli``).
"""

from __future__ import annotations

import argparse
import dataclasses
import logging
import signal
import sys
import threading

from agents_vm.service import cli
from agents_vm.service.config import ConfigError, load_config


def _logging(name: str) -> None:
    logging.basicConfig(
        level=logging.INFO,
        format=f"%(asctime)s {name} %(levelname)s %(name)s %(message)s",
        stream=sys.stderr,
    )
    logging.getLogger("httpx").setLevel(logging.WARNING)


def worker(config_path: str) -> int:
    stop = threading.Event()
    # SIGTERM from the supervisor: drain (stop at the next safe point, everything persisted).
    signal.signal(signal.SIGTERM, lambda *_: stop.set())
    # The worker's parts load here: the shell commands (call, tools) start without them.
    from openai import OpenAI

    from agents_vm.client.sdk import BrokerClient
    from agents_vm.loop.cognitive import CognitiveLoop
    from agents_vm.loop.handlers import handlers_load
    from agents_vm.memory import AgentMemory

    config = load_config(config_path)
    memory = AgentMemory(config.memory_path, journal_key=config.journal_key)
    # Self-managed handlers (reload_handlers): read once, here, so a change stored through the
    # governed agent.update_handler takes effect after an approved agent.restart_self. The
    # "loop" configuration the agent keeps in its own store wins over the file's [loop].
    handlers = handlers_load(memory.handlers())
    loop = handlers.config("loop")
    if isinstance(loop.get("poll_seconds"), int | float) and 0.1 <= loop["poll_seconds"] <= 300:
        config = dataclasses.replace(config, poll_seconds=float(loop["poll_seconds"]))
    llm = OpenAI(
        base_url=config.llm.base_url,
        api_key=config.llm.api_key,
        timeout=config.llm.timeout,
        max_retries=2,
    )
    with BrokerClient(
        config.broker_url,
        agent_id=config.agent_id,
        secret=config.secret,
        transport=config.transport,
        mcp_token=config.mcp_token,
    ) as broker:
        CognitiveLoop(
            config, memory=memory, broker=broker, llm=llm, stop=stop, handlers=handlers
        ).run_forever()
    memory.close()
    return 0


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m agents_vm")
    sub = parser.add_subparsers(dest="command", required=True)
    for name in ("serve", "worker"):
        sub.add_parser(name).add_argument("--config", required=True)
    cli.add_parsers(sub)
    args = parser.parse_args(argv)
    if args.command in ("call", "tools"):
        return cli.run(args)
    _logging(args.command)
    try:
        if args.command == "worker":
            return worker(args.config)
        # not needed by the worker or the shell commands
        from agents_vm.service.supervisor import Supervisor

        return Supervisor(load_config(args.config)).serve()
    except ConfigError as exc:
        print(f"configuration error: {exc}", file=sys.stderr)
        return 2


if __name__ == "__main__":
    raise SystemExit(main())
