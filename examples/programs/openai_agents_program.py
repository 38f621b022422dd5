"""An OpenAI Agents SDK agent: `--agent program:examples.programs.openai_agents_program:OpenAIAgentsProgram`."""

import asyncio

from agents import Agent, OpenAIChatCompletionsModel, Runner, set_tracing_disabled
from agents.mcp import MCPServerStreamableHttp
from openai import AsyncOpenAI

set_tracing_disabled(True)  # offline: no traces leave the machine


class OpenAIAgentsProgram:
    def start(self, episode):
        self.episode, self.items, self.loop = episode, [], asyncio.new_event_loop()
        client = AsyncOpenAI(base_url=episode.model_base_url, api_key="unused")  # the episode's model proxy
        self.model = OpenAIChatCompletionsModel(model=episode.model, openai_client=client)

    async def turn(self, text):
        async with MCPServerStreamableHttp({"url": self.episode.mcp_url}) as tools:  # the episode's tools
            agent = Agent("support", instructions=self.episode.policy, model=self.model, mcp_servers=[tools])
            result = await Runner.run(agent, [*self.items, {"role": "user", "content": text}], max_turns=12)
        self.items = result.to_input_list()
        return str(result.final_output or "")

    def respond(self, customer_text):
        return self.loop.run_until_complete(self.turn(customer_text))

    def close(self):
        self.loop.close()
