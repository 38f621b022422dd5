"""A pydantic-ai agent: `--agent program:examples.programs.pydantic_ai_program:PydanticAIProgram`."""

from pydantic_ai import Agent
from pydantic_ai.mcp import MCPToolset
from pydantic_ai.models.openai import OpenAIChatModel
from pydantic_ai.providers.openai import OpenAIProvider


class PydanticAIProgram:
    def start(self, episode):
        provider = OpenAIProvider(base_url=episode.model_base_url, api_key="unused")  # the episode's model proxy
        model = OpenAIChatModel(episode.model, provider=provider)
        tools = MCPToolset(episode.mcp_url)  # the episode's tools over MCP
        self.agent, self.history = Agent(model, instructions=episode.policy, toolsets=[tools]), []

    def respond(self, customer_text):
        result = self.agent.run_sync(customer_text, message_history=self.history)
        self.history = result.all_messages()
        return result.output

    def close(self):
        self.history = []
