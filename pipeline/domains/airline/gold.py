"""Airline's side of τ²-bench gold conversations (`Domain.tau2_gold`): the customer is authenticated by user id,
and the extra write is a certificate sent to them."""

from __future__ import annotations

from typing import Any

from pipeline.dataset import Action, Task
from pipeline.tau2 import by_user_id


class AirlineGold:
    def authentication(self, world: Any, task: Task) -> Action | None:
        return by_user_id(world, task)

    def identity_exchange(self, action: Action) -> list[tuple[str, str]] | None:
        return None

    def extra_write(self, world: Any, user_id: str) -> Action | None:
        return Action(name="send_certificate", arguments={"user_id": user_id, "amount": 50})


GOLD = AirlineGold()
