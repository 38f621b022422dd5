"""A lending library's front desk: an environment of your own behind the six functions, in plain Python.

Nothing here is agentloop's table format: the state is dicts, the tools are methods. `--domain
examples.library:Library` (or `agentloop env serve --domain examples.library:Library --worlds library-0`) runs
the whole loop on it. World `library-<seed>` is a seeded catalogue and membership.
"""

from __future__ import annotations

import copy
import hashlib
import json
import random

POLICY = """You are the front desk of a lending library. Identify the member by email before anything else.
A member may borrow an available book (at most 3 on loan) and return a book they hold. Do not act for anyone but
the identified member. Confirm before you change anything. Transfer to a human for anything else."""
TABLES = {
    "members": ("member_id", "member_id", {"member_id": "string", "email": "string", "name": "string"}),
    "books": ("book_id", "holder", {"book_id": "string", "title": "string", "status": "string", "holder": "string"}),
}
TOOLS = {  # name: (kind, description, {argument: description})
    "find_member_by_email": ("identity", "Find a member's id by their email.", {"email": "The member's email."}),
    "get_member": ("read", "A member's details and the books they hold.", {"member_id": "The member's id."}),
    "get_book": ("read", "A book's details.", {"book_id": "The book's id."}),
    "borrow_book": ("write", "Lend an available book to the member.", {"member_id": "Who.", "book_id": "What."}),
    "return_book": ("write", "Take back a book the member holds.", {"member_id": "Who.", "book_id": "What."}),
    "transfer_to_human": ("transfer", "Hand the conversation to a librarian.", {"summary": "Why."}),
}


class Refused(Exception):
    pass


def _world(seed: int) -> dict:
    rng = random.Random(seed)
    names = ["Ada", "Ben", "Cleo", "Dev", "Eli", "Fay", "Gus", "Hana"]
    members = {f"m{i}": {"member_id": f"m{i}", "email": f"{n.lower()}@library.test", "name": n}
               for i, n in enumerate(names)}  # fmt: skip
    books = {}
    for i in range(16):
        holder = rng.choice([None, None, *members])
        books[f"b{i}"] = {"book_id": f"b{i}", "title": f"Volume {i}", "status": "on_loan" if holder else "available"}
        if holder:
            books[f"b{i}"]["holder"] = holder
    return {"members": members, "books": books}


class Library:
    def __init__(self, world: str) -> None:
        if not world.startswith("library-") or not world.removeprefix("library-").isdigit():
            raise ValueError(f"unknown world {world!r}: expected library-<seed>")
        self.world, self.base = world, _world(int(world.removeprefix("library-")))
        self.db: dict | None = None

    def get_metadata(self) -> dict:
        tools = [{"type": "function", "function": {"name": n, "description": d, "parameters": {
            "type": "object", "properties": {a: {"type": "string", "description": t} for a, t in args.items()},
            "required": list(args)}}} for n, (_, d, args) in TOOLS.items()]  # fmt: skip
        tables = {t: {"key": k, "owner": o, "record": {"type": "object", "properties": {
            f: {"type": ty} for f, ty in fields.items()}}} for t, (k, o, fields) in TABLES.items()}  # fmt: skip
        digest = hashlib.sha256(json.dumps(self.base, sort_keys=True).encode()).hexdigest()
        return {"domain": "library", "world": self.world, "world_digest": digest, "policy": POLICY, "tools": tools,
                "tool_kinds": {n: k for n, (k, _, _) in TOOLS.items()}, "tables": tables}  # fmt: skip

    def init(self, task=None, *, authenticated_user_id=None) -> dict:
        self.db, self.who, self.log, self.moved = copy.deepcopy(self.base), authenticated_user_id, [], False
        return self.state()

    def run(self, call, side="assistant") -> dict:
        name, args = call["name"], call.get("arguments") or {}
        try:
            if side != "assistant" or name not in TOOLS or set(args) != set(TOOLS[name][2]):
                raise Refused(f"no tool {name} taking {sorted(args)} on the {side} side")
            content, ok = json.dumps(getattr(self, name)(**args)), True
        except Refused as exc:
            content, ok = f"Error: {exc}", False
        self.log.append(
            {"side": side, "name": name, "arguments": args, "result": {"content": content, "error": not ok}}
        )
        return {"content": content, "error": not ok, "category": None if ok else "precondition"}

    def state(self) -> dict:
        changed = {t: {k: r for k, r in self.db[t].items() if self.base[t].get(k) != r} for t in self.db}
        digest = hashlib.sha256(json.dumps(changed, sort_keys=True).encode()).hexdigest()
        return {"world_digest": self.get_metadata()["world_digest"], "changed": changed,
                "authenticated_user_id": self.who, "transferred": self.moved, "hash": digest}  # fmt: skip

    def query_data(self, table, predicate=None) -> dict:
        rows = (self.db or self.base)[table]
        return {k: r for k, r in sorted(rows.items()) if all(r.get(f) == v for f, v in (predicate or {}).items())}

    def reward(self) -> dict:
        return {"reward": float(not any(c["result"]["error"] for c in self.log))}

    def say(self, text, side="assistant") -> None:
        pass

    def calls(self) -> list:
        return list(self.log)

    def close(self) -> None:
        self.db = None

    # ---- the tools ---------------------------------------------------------------------------------------------
    def find_member_by_email(self, email):
        found = [m for m in self.db["members"].values() if m["email"] == email]
        if not found:
            raise Refused(f"no member with email {email}")
        self.who = found[0]["member_id"]
        return self.who

    def get_member(self, member_id):
        member = self._member(member_id)
        return {
            **member,
            "holds": sorted(b["book_id"] for b in self.db["books"].values() if b.get("holder") == member_id),
        }

    def get_book(self, book_id):
        if book_id not in self.db["books"]:
            raise Refused(f"no book {book_id}")
        return self.db["books"][book_id]

    def borrow_book(self, member_id, book_id):
        self._member(member_id)
        book = self.get_book(book_id)
        if book["status"] != "available":
            raise Refused(f"book {book_id} is not available")
        if sum(b.get("holder") == member_id for b in self.db["books"].values()) >= 3:
            raise Refused(f"member {member_id} already holds 3 books")
        book.update(status="on_loan", holder=member_id)
        return book

    def return_book(self, member_id, book_id):
        self._member(member_id)
        book = self.get_book(book_id)
        if book.get("holder") != member_id:
            raise Refused(f"member {member_id} does not hold book {book_id}")
        book["status"] = "available"
        del book["holder"]
        return book

    def transfer_to_human(self, summary):
        self.moved = True
        return "Transferred to a librarian."

    def _member(self, member_id):
        if member_id != self.who:
            raise Refused(f"member {member_id} is not the identified member")
        if member_id not in self.db["members"]:
            raise Refused(f"no member {member_id}")
        return self.db["members"][member_id]
