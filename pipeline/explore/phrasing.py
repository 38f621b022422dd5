"""How the scripted customer speaks a domain that declares no phrasing: from its tools alone.

Identity: asked for what an identity tool takes (its argument names, in words: 'email', 'user id'), the customer
says each value they know; without their email (the 'forgot_email' mess) they say so, then offer what else an
identity tool takes. A question naming a write argument ('which zip') is answered with that detail of the
request; 'which one is this about' with the record's id.
"""

from __future__ import annotations

import re
from typing import Any

from pipeline.explore.speech import speak, spoken, words
from pipeline.users import FORGOT
from pipeline.users.phrasing import Phrasing
from pipeline.world import ToolRegistry


def generic_phrasing(tools: ToolRegistry) -> Phrasing:
    identity = [list(tools[n].args_model.model_fields) for n in tools.tools if tools[n].kind == "identity"]
    args = sorted({a for n in tools.of_kind("write") for a in tools[n].args_model.model_fields})
    topics: dict[str, re.Pattern[str]] = {a: re.compile(rf"\b{re.escape(a.replace('_', ' '))}\b") for a in args}
    topics["record_id"] = re.compile(r"which one|which record|\bits id\b")

    def answer(episode: Any, t: str) -> Any:
        known = episode.script.known.stated()
        forgot = episode.script.messes.forgot_email
        asked = [a for group in identity for a in group if a.replace("_", " ") in t]
        if not asked:
            return None
        if forgot and "email" in asked and not episode.said_forgot:
            episode.said_forgot = True
            others = next((g for g in identity if "email" not in g and all(known.get(a) for a in g)), None)
            more = " ".join(_state(a, known[a]) for a in others) if others else ""
            return episode._reply(f"{FORGOT} {more}".strip())
        usable = next((g for g in identity if all(known.get(a) for a in g) and not (forgot and "email" in g)), [])
        said = [_state(a, known[a]) for a in usable]
        return episode._reply(" ".join(said) if said else "I'm sorry, I don't know that.")

    return Phrasing(topics=topics, record_topic="record_id", record_answer="It's {x}.", identity=answer, speak=spoken)


def _state(arg: str, value: Any) -> str:
    return f"My {words(arg)} is {speak(value)}."
