"""The synthesis kit of a domain that declares none (`pipeline.explore.generic`'s `synthesis`): its taxonomy from
the tools, its write templates by execution (`pipeline.explore.kit`), its questions and unservable requests
(`pipeline.explore.questions`)."""

from __future__ import annotations

import random
from collections.abc import Iterator
from typing import Any

from pipeline.authoring import Draft, SynthesisKit
from pipeline.dataset import CommunicatedCheck, KnownInfo, Request, Task, TaskCheck
from pipeline.explore import aim as aiming
from pipeline.explore import questions
from pipeline.explore.conditional import Conditional
from pipeline.explore.kit import CONDITIONAL, OTHER, Customer, Grounding, Template, taxonomy_of, unspecified
from pipeline.explore.questions import asked_field
from pipeline.explore.speech import speak
from pipeline.world import ToolRegistry, World


class GenericKit(SynthesisKit):
    """The kit of a domain that declares none: its taxonomy from the tools, its templates by execution."""

    notes = {
        "forgot_email": "You do not remember your email address.",
        "vague_item": "",
        "also_request": "You bring up your last request only after the others are done.",
        "pushback": "When the agent refuses, you push back once.",
        "underspecified": "You do not say which record you mean until the agent asks.",
    }
    underspecify_rate = 0.25

    def __init__(self, tools: ToolRegistry, business: str = "a customer-service desk") -> None:
        self.taxonomy = taxonomy_of(tools)
        self.templates: dict[str, Any] = {
            name: questions.Question(spec.tool, unservable=spec.outcome == "refused") if spec.question else
            Conditional(spec.tool) if name.startswith(CONDITIONAL) else
            Template(spec.tool, "done" if spec.outcome == "done" else "other" if name.endswith(OTHER) else "refused")
            for name, spec in self.taxonomy.items()
        }  # fmt: skip
        self.business = business

    def ground(self, world: World) -> Grounding:
        return Grounding(world)

    def known(self, customer: Customer) -> KnownInfo:
        return customer.known

    def unspecify(self, request: Request) -> Request | None:
        rid = request.record_id
        said = unspecified(request.utterance, rid) if rid else None
        return request.model_copy(update={"utterance": said}) if said else None

    def record_of(self, request: Request) -> str | None:
        return request.record_id

    def checks(self, session: Any, drafts: list[Draft]) -> list[TaskCheck]:
        """A question's answer, read from the gold end state, must be told to the customer."""
        out: list[TaskCheck] = []
        for d in drafts:
            asked = asked_field(d.request)
            if asked is not None and d.request.record_id:
                record = session.get(asked[0], d.request.record_id)
                out.append(CommunicatedCheck(values=[speak(getattr(record, asked[1]))]))  # 1046.0 told as 1046
        return out

    def gaps(self, ground: Any, tasks: list[Task]) -> list[str]:
        """The world model's write tools and refusal groups no task covers (`pipeline.explore.aim`)."""
        return aiming.gaps(ground, tasks)

    def aimed(self, ground: Any, aim: str, rng: random.Random) -> Iterator[tuple[str, Draft]]:
        return aiming.aimed(self.templates, ground, aim, rng)

    def why_not(self, ground: Any, aim: str) -> str:
        return aiming.why_not(ground, aim)
