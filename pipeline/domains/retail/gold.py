"""Retail's side of τ²-bench gold conversations (`Domain.tau2_gold`): the customer is authenticated by email, or by
name and zip when their account has none, and the extra write is a new default address."""

from __future__ import annotations

from typing import Any

from pipeline.dataset import Action, Task


class RetailGold:
    def authentication(self, world: Any, task: Task) -> Action | None:
        user = world.db.users.get(task.customer_user_id or "")
        if user is None:
            return None
        if user.email:
            return Action(name="find_user_id_by_email", arguments={"email": user.email})
        return Action(
            name="find_user_id_by_name_zip",
            arguments={"first_name": user.name.first_name, "last_name": user.name.last_name, "zip": user.address.zip},
        )

    def identity_exchange(self, action: Action) -> list[tuple[str, str]] | None:
        a = action.arguments
        if action.name == "find_user_id_by_email":
            return [
                ("assistant", "To verify your identity, could you give me the email on your account?"),
                ("user", f"It's {a.get('email')}."),
            ]
        if action.name == "find_user_id_by_name_zip":
            return [
                ("assistant", "To verify your identity, could you give me your name and zip code?"),
                ("user", f"I'm {a.get('first_name')} {a.get('last_name')}, zip {a.get('zip')}."),
            ]
        return None

    def extra_write(self, world: Any, user_id: str) -> Action | None:
        address = {"address1": "1 Extra Street", "address2": "", "city": "Springfield", "state": "IL"}
        return Action(
            name="modify_user_address", arguments={"user_id": user_id, **address, "country": "USA", "zip": "62701"}
        )


GOLD = RetailGold()
