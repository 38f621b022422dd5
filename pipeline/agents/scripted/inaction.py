"""The inaction flaw, planted the same way in any scripted episode: on one request the policy allows, the agent
does not act. It refuses with no reason (wrongful_refusal), transfers to a human agent or, where the domain has no
transfer tool, says it can go no further (give_up, only on the last request), or acknowledges and moves on
(no_action). Nothing is looked up or written for that request.
"""

from __future__ import annotations

from typing import Any

from pipeline.agents.scripted import phrases as P
from pipeline.agents.scripted.flaws import INACTION
from pipeline.agents.scripted.script import Steps


def not_acting(episode: Any, variant: str, transfer_tool: str | None) -> Steps:
    """The planted inaction on the request at hand: what `episode` (a ScriptedEpisode) says and calls instead;
    giving up hands over through `transfer_tool` (the domain's tool of kind "transfer") where there is one."""
    if variant == "wrongful_refusal":
        return (yield from episode._finish(P.WRONGFUL_REFUSAL, P.WRONGFUL_REFUSAL_REASON))
    if variant == "give_up":
        if transfer_tool is not None:
            yield from episode._call(transfer_tool, {"summary": "The customer needs help I will not give."})
            return (yield from episode._say(P.TRANSFERRED))
        return (yield from episode._say(f"{P.GIVING_UP} {P.GOODBYE}"))
    return (yield from episode._finish(P.NOT_ACTING))


class InactionEpisode:
    """Mixin, before a domain's episode class: a request planted with inaction (`self.flaws[i]`) is not acted on;
    every other request is the domain's `_handle`."""

    flaws: dict[int, tuple[str, str]]
    transfer_tool: str | None = None
    """The domain's tool of kind "transfer", which a planted give-up calls; None: it says goodbye instead."""

    def _handle(self, i: int, req: Any, *args: Any, **kwargs: Any) -> Steps:
        mode, variant = self.flaws.get(i, (None, None))
        if mode != INACTION or variant is None:
            return (yield from super()._handle(i, req, *args, **kwargs))  # type: ignore[misc]
        return (yield from not_acting(self, variant, self.transfer_tool))
