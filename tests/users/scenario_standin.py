"""A stand-in for a chat model playing a τ²-bench customer: it answers from the scenario in its system prompt,
by rules, so tests of the LLM user run offline against a real OpenAI-compatible HTTP endpoint."""

from __future__ import annotations

import re

from tests.agents.fake_openai import Reply, completion

_SECTION = re.compile(r"^([A-Z][A-Za-z ]+):\n(.*?)(?=\n\n[A-Z][A-Za-z ]+:\n|\Z)", re.S | re.M)
_NAME = re.compile(r"You are ([A-Z][a-z]+) ([A-Z][a-z]+)")
_ZIP = re.compile(r"\b(\d{5})\b")
_EMAIL = re.compile(r"[\w.+-]+@[\w-]+(?:\.[\w-]+)+")


def sections(system: str) -> dict[str, str]:
    scenario = system.split("<scenario>\n", 1)[1].split("\n</scenario>", 1)[0]
    return {m.group(1): m.group(2).strip() for m in _SECTION.finditer(scenario)}


def scenario_reply(body: dict) -> Reply:
    """The customer's next line: the reason for the call first, identity when asked, then the stop signal."""
    messages = body["messages"]
    sc = sections(messages[0]["content"])
    known, unknown = sc.get("Known info", ""), sc.get("Unknown info", "") or ""
    agent = messages[-1]["content"].lower()
    if len(messages) == 2:
        reason = sc.get("Reason for call", "I need some help.").split(".")[0]
        return completion(re.sub(r"^You\b", "I", reason) + ".")
    if "transfer" in agent:
        return completion("Okay, I'll wait. ###TRANSFER###")
    if "email" in agent:
        email = _EMAIL.search(known)
        if email and "email" not in unknown.lower():
            return completion(f"It's {email.group(0)}.")
        return completion("I don't remember my email address, sorry.")
    if "name" in agent and "zip" in agent:
        name, zip_code = _NAME.search(known), _ZIP.search(known)
        if name and zip_code:
            return completion(f"I'm {name.group(1)} {name.group(2)}, zip code {zip_code.group(1)}.")
        return completion("I can't say. ###OUT-OF-SCOPE###")
    return completion("Thanks, that's all I needed. ###STOP###")
