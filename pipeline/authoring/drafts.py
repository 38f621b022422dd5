"""What an atomic template returns: one request of one customer, with the actions that serve it.

A template (a domain kit's drafting function) reads the world through its grounding (`SynthesisKit.ground`, the
world's `query` only), so every id, address or price in a draft comes from the world, never from the template.
"""

from __future__ import annotations

from dataclasses import dataclass, field

from pipeline.dataset import Action, Request


@dataclass
class Want:
    """What a harder variant asks of a template; None leaves the choice to the template's rng."""

    items: int | None = None  # items to change or return in one write (1 or 2)


@dataclass
class Draft:
    """One request of one customer, with the actions that serve it.

    `records` are the keys later requests of the same task must not reuse (the kit decides what they are);
    `entities` is the difficulty measure the kit counts (records plus items a request involves)."""

    template: str
    request: Request
    goal: str
    reads: list[Action] = field(default_factory=list)
    write: Action | None = None
    forbidden: Action | None = None  # refusals: the write asked for, which the tools must refuse
    records: tuple[str, ...] = ()
    entities: int = 0


def act(name: str, **arguments) -> Action:
    return Action(name=name, arguments=arguments)
