"""The retail base world and its episode sessions: the generic copy-on-write tables (pipeline.world.tables) over
the retail schema, with the look-up indexes the retail tools use.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import TYPE_CHECKING

from pydantic import ValidationError

from pipeline.domains.retail.schema import TABLES, Order, Product, RetailDB, User
from pipeline.world import Session as _Session
from pipeline.world import ToolEvent, World, WorldLoadError

if TYPE_CHECKING:
    from pipeline.world import Domain

__all__ = ["RetailWorld", "Session", "ToolEvent", "WorldLoadError"]


class RetailWorld(World):
    """An immutable retail database with look-up indexes and the policy it is served under; `domain` is the retail
    `Domain` (`pipeline.domains.retail.domain.RETAIL`), handed in by what makes the world."""

    def __init__(self, db: RetailDB, policy: str = "", name: str = "retail", *, domain: Domain) -> None:
        super().__init__({t: getattr(db, t) for t in TABLES}, policy=policy, name=name, domain=domain)
        self.db = db
        self.user_by_email = _unique_index(name, "email", {uid: email_key(u.email) for uid, u in db.users.items()})
        self.user_by_name_zip = _unique_index(
            name,
            "name + zip",
            {uid: name_zip_key(u.name.first_name, u.name.last_name, u.address.zip) for uid, u in db.users.items()},
        )
        self.product_by_item = {item_id: pid for pid, p in db.products.items() for item_id in p.variants}

    @classmethod
    def from_dict(
        cls, data: dict, policy: str = "", name: str = "retail", source: str = "<dict>", *, domain: Domain
    ) -> RetailWorld:
        try:
            db = RetailDB.model_validate(data)
        except ValidationError as exc:
            err = exc.errors()[0]
            where = ".".join(str(p) for p in err["loc"])
            raise WorldLoadError(f"{source}: field {where}: {err['msg']}") from None
        try:
            return cls(db, policy=policy, name=name, domain=domain)
        except WorldLoadError as exc:
            raise WorldLoadError(f"{source}: {exc}") from None

    @classmethod
    def from_json(cls, path: str | Path, policy: str = "", name: str | None = None, *, domain: Domain) -> RetailWorld:
        path = Path(path)
        try:
            data = json.loads(path.read_text())
        except FileNotFoundError:
            raise WorldLoadError(f"{path}: file not found") from None
        except json.JSONDecodeError as exc:
            raise WorldLoadError(f"{path}: invalid JSON at line {exc.lineno}: {exc.msg}") from None
        return cls.from_dict(data, policy=policy, name=name or path.parent.name, source=str(path), domain=domain)

    def session(self, authenticated_user_id: str | None = None) -> Session:
        return Session(self, authenticated_user_id=authenticated_user_id)


def email_key(email: str) -> str:
    """How an email identifies a customer: case and surrounding spaces do not count."""
    return email.strip().lower()


def name_zip_key(first_name: str, last_name: str, zip_code: str) -> tuple[str, str, str]:
    """How name + zip identifies a customer: case and surrounding spaces do not count."""
    return (first_name.strip().lower(), last_name.strip().lower(), zip_code.strip())


def _unique_index(world: str, what: str, keys: dict[str, object]) -> dict:
    """key → user id; two customers under one key would let one authenticate as the other, so the world is refused."""
    index: dict = {}
    for uid, key in keys.items():
        if key in index:
            shown = key if isinstance(key, str) else " ".join(key)  # type: ignore[arg-type]
            raise WorldLoadError(
                f"world {world!r}: users {index[key]!r} and {uid!r} share the {what} {shown!r}; a customer must be"
                f" identified by their {what} alone"
            )
        index[key] = uid
    return index


class Session(_Session):
    """One retail episode's view of a world, with typed look-ups."""

    world: RetailWorld

    def user(self, user_id: str) -> User | None:
        return self.get("users", user_id)

    def order(self, order_id: str) -> Order | None:
        return self.get("orders", order_id)

    def product(self, product_id: str) -> Product | None:
        return self.get("products", product_id)
