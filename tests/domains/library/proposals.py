"""What a stand-in model proposes for the library domain: one more request the shown member can have granted."""

from __future__ import annotations

import json


def library_proposal(prompt: str, new_email: str = "reader.new@library.example") -> dict:
    """One of the shown member's loans returned, else their email changed to `new_email`."""
    shown: dict[str, list] = {}
    for line in prompt.splitlines():
        table, _, record = line.partition(": ")
        if table in ("members", "loans"):
            shown.setdefault(table, []).append(json.loads(record))
    loan = next((x["loan_id"] for x in shown.get("loans", []) if x["status"] != "returned"), None)
    if loan:
        return {"tool": "return_loan", "arguments": {"loan_id": loan}, "request": f"I brought back loan {loan}."}
    member = shown["members"][0]["member_id"]
    return {"tool": "update_member_email", "arguments": {"member_id": member, "email": new_email},
            "request": f"Please change my email to {new_email}."}  # fmt: skip
