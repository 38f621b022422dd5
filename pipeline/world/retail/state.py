"""The retail base world and its episode sessions: the generic copy-on-write tables (pipeline.world.tables) over
the retail schema, with the look-up indexes the retail tools use.
"""

from __future__ import annotations

import json
from pathlib import Path

from pydantic import ValidationError

from pipeline.world.retail.schema import TABLES, Order, Product, RetailDB, User
from pipeline.world.tables import Session as _Session
from pipeline.world.tables import ToolEvent, World, WorldLoadError, canonical_json, sha256_json

__all__ = ["RetailWorld", "Session", "ToolEvent", "WorldLoadError", "canonical_json", "sha256_json"]


class RetailWorld(World):
    """An immutable retail database with look-up indexes and the policy it is served under."""

    def __init__(self, db: RetailDB, policy: str = "", name: str = "retail") -> None:
        from pipeline.world.retail.domain import RETAIL

        super().__init__({t: getattr(db, t) for t in TABLES}, policy=policy, name=name, domain=RETAIL)
        self.db = db
        self.user_by_email = {u.email.lower(): uid for uid, u in db.users.items()}
        self.user_by_name_zip = {
            (u.name.first_name.lower(), u.name.last_name.lower(), u.address.zip): uid for uid, u in db.users.items()
        }
        self.product_by_item = {item_id: pid for pid, p in db.products.items() for item_id in p.variants}

    @classmethod
    def from_dict(cls, data: dict, policy: str = "", name: str = "retail", source: str = "<dict>") -> RetailWorld:
        try:
            db = RetailDB.model_validate(data)
        except ValidationError as exc:
            err = exc.errors()[0]
            where = ".".join(str(p) for p in err["loc"])
            raise WorldLoadError(f"{source}: field {where}: {err['msg']}") from None
        return cls(db, policy=policy, name=name)

    @classmethod
    def from_json(cls, path: str | Path, policy: str = "", name: str | None = None) -> RetailWorld:
        path = Path(path)
        try:
            data = json.loads(path.read_text())
        except FileNotFoundError:
            raise WorldLoadError(f"{path}: file not found") from None
        except json.JSONDecodeError as exc:
            raise WorldLoadError(f"{path}: invalid JSON at line {exc.lineno}: {exc.msg}") from None
        return cls.from_dict(data, policy=policy, name=name or path.parent.name, source=str(path))

    def session(self, authenticated_user_id: str | None = None) -> Session:
        return Session(self, authenticated_user_id=authenticated_user_id)


class Session(_Session):
    """One retail episode's view of a world, with typed look-ups."""

    world: RetailWorld

    def user(self, user_id: str) -> User | None:
        return self.get("users", user_id)  # type: ignore[return-value]

    def order(self, order_id: str) -> Order | None:
        return self.get("orders", order_id)  # type: ignore[return-value]

    def product(self, product_id: str) -> Product | None:
        return self.get("products", product_id)  # type: ignore[return-value]
