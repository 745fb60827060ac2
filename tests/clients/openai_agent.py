"""An agent written with the OpenAI Agents SDK as its documentation shows, run by the tests in
the SDK's own venv (``make clients``): its model through ``/llm/v1``, its tools through
``/mcp``, every timeout the SDK's default. Prints the run's final output as JSON.

    RABS_URL=http://127.0.0.1:8000 RABS_MCP_TOKEN=rabs_… RABS_LLM_KEY=… python openai_agent.py
"""

import asyncio
import json
import os

from agents import Agent, OpenAIChatCompletionsModel, Runner, set_tracing_disabled
from agents.mcp import MCPServerStreamableHttp
from openai import AsyncOpenAI


async def main() -> None:
    set_tracing_disabled(True)  # traces would go to OpenAI's platform
    url = os.environ["RABS_URL"]
    model = OpenAIChatCompletionsModel(
        model="small-model",
        openai_client=AsyncOpenAI(base_url=f"{url}/llm/v1", api_key=os.environ["RABS_LLM_KEY"]),
    )
    async with MCPServerStreamableHttp(
        name="rabs",
        params={
            "url": f"{url}/mcp",
            "headers": {"Authorization": f"Bearer {os.environ['RABS_MCP_TOKEN']}"},
        },
    ) as rabs:
        agent = Agent(
            name="Henry",
            instructions="Check Monday's roster, then tell the carers the bus is late.",
            model=model,
            mcp_servers=[rabs],
        )
        result = await Runner.run(agent, "The bus is running late on Monday.", max_turns=12)
    print(json.dumps({"final_output": result.final_output}))


asyncio.run(main())
