"""Retail's flawed agents: the oracle with failure modes planted at known rates, the ground truth for the
classifier.

Whether a mode is planted in a trial is decided by a hash of (seed, task id, trial, mode) (`pipeline.agents.
flaws`), so the same configuration always plants the same flaws and `planted(task, trial)` tells which without
running anything. A mode is planted only on a request that has a gold write, at most one mode per request.

- plan_adherence: skips the confirmation and writes at once / never issues the write after the user's
  yes but says it is done / writes before authenticating (the tool refuses; it then authenticates and
  carries on).
- invention: one write argument replaced by a plausible value that appears nowhere in the conversation
  (an order id, zip code, payment method id, item id), then it claims success.
- inaction: on a request the policy allows, refuses with no reason / transfers to a human agent (last request
  only) / acknowledges and moves on (`pipeline.agents.scripted.inaction`).
- misread: acts as if the order had another status: refuses a legitimate request naming a wrong status,
  or calls the write meant for the other status (a return on a pending order, an exchange on a pending
  one, an item modification on a delivered one).
"""

from __future__ import annotations

import random

from pipeline.agents import (
    INACTION,
    MODES,
    FlawConfig,
    InactionEpisode,
    Mode,
    PlantingAgent,
    Steps,
    appears_in,
    inaction_variants,
)
from pipeline.agents import unit as _unit
from pipeline.agents.scripted import phrases as P
from pipeline.dataset import Action, Request, Task
from pipeline.domains.retail import phrases as R
from pipeline.domains.retail.oracle import OracleAgent, OracleEpisode
from pipeline.domains.retail.tools import WRITE_TOOLS
from pipeline.rollout import EpisodeInfo

__all__ = ["MODES", "FlawConfig", "FlawedAgent", "FlawedEpisode", "Mode", "plan"]
WRONG_WRITE = {
    "cancel": "return_delivered_order_items",
    "modify_items": "exchange_delivered_order_items",
    "exchange": "modify_pending_order_items",
}


def _variants(mode: str, i: int, req: Request, n: int) -> list[str]:
    if mode == INACTION:
        return inaction_variants(i, n)
    if mode == "plan_adherence":
        early = i == 0 and req.intent in ("cancel", "modify_address")
        return ["skip_confirmation", "no_write", *(["write_before_auth"] if early else [])]
    if mode == "invention":
        return ["fabricate"]
    out = ["refuse"] if req.order_id and req.intent != "modify_user_address" else []
    return out + (["wrong_write"] if req.intent in WRONG_WRITE else [])


def plan(config: FlawConfig, task: Task, trial: int) -> dict[int, tuple[str, str]]:
    """Request index → (mode, variant) planted in this trial."""
    writes = sorted({a.request for a in task.gold_actions if a.name in WRITE_TOOLS and a.request is not None})
    requests = task.user_script.requests
    out: dict[int, tuple[str, str]] = {}
    for mode in MODES:
        if _unit(config.seed, task.id, trial, mode) >= config.rate(mode):
            continue
        fits = [
            i for i in writes if i not in out and i < len(requests) and _variants(mode, i, requests[i], len(requests))
        ]
        if not fits:
            continue
        i = fits[int(_unit(config.seed, task.id, trial, mode, "where") * len(fits))]
        options = _variants(mode, i, requests[i], len(requests))
        out[i] = (mode, options[int(_unit(config.seed, task.id, trial, mode, "how") * len(options))])
    return out


class FlawedEpisode(InactionEpisode, OracleEpisode):
    transfer_tool = "transfer_to_human_agents"

    def __init__(self, info: EpisodeInfo, flaws: dict[int, tuple[str, str]], seed: int) -> None:
        self.flaws = flaws
        self.rng = random.Random(f"{seed}:{info.task.id}:{info.trial}:values")
        self.current = -1
        self.target_orders = {
            info.task.user_script.requests[i].order_id for i, (_, v) in flaws.items() if v == "refuse"
        }
        super().__init__(info)

    def _flaw(self, i: int) -> str | None:
        return self.flaws.get(i, (None, None))[1]

    # ---- plan adherence: write before authenticating ----------------------------------------------------------
    def _run(self) -> Steps:
        reqs = self.script.requests
        if self._flaw(0) != "write_before_auth":
            yield from super()._run()
            return
        req, write = reqs[0], self._write(0)
        assert write is not None  # this flaw is planted only on a request with a write
        details = yield from self._say(R.ask_details(req.intent, self._topics(req)))
        ok = yield from self._confirm(0, req, write)
        if ok:
            yield from self._call(write.name, dict(write.arguments))  # refused: nobody is authenticated
        yield from self._authenticate(R.ASK_EMAIL_FIRST)
        yield from self._handle(0, req, details=details, confirmed=False)
        for i, r in enumerate(reqs[1:], start=1):
            yield from self._handle(i, r)

    def _handle(self, i: int, req: Request, details: str | None = None, confirmed: bool = False) -> Steps:
        self.current = i
        yield from super()._handle(i, req, details, confirmed)

    # ---- misread: another status than the tool showed ---------------------------------------------------------
    def _order_status(self, order: dict) -> str:
        if self._flaw(self.current) == "refuse" and order["order_id"] in self.target_orders:
            return "processed"
        return order["status"]

    def _confirm_action(self, i: int, write: Action) -> Action:
        if self._flaw(i) != "wrong_write":
            return write
        a, order = write.arguments, self._order(write.arguments.get("order_id")) or {}
        name = WRONG_WRITE[self.script.requests[i].intent]
        if name == "return_delivered_order_items":
            items = sorted({it["item_id"] for it in order.get("items", [])})
            method = order.get("payment_history", [{}])[0].get("payment_method_id", "")
            return Action(
                name=name,
                arguments={"order_id": a["order_id"], "item_ids": items, "payment_method_id": method},
                request=i,
            )
        return Action(name=name, arguments=dict(a), request=i)

    # ---- the write itself ---------------------------------------------------------------------------------------
    def _confirm(self, i: int, req: Request, write: Action) -> Steps:
        if self._flaw(i) == "skip_confirmation":
            return True
        return (yield from super()._confirm(i, req, write))

    def _write_action(self, i: int, write: Action) -> Action:
        if self._flaw(i) == "wrong_write":
            return self._confirm_action(i, write)
        if self._flaw(i) == "fabricate":
            return self._fabricate(write)
        return write

    def _perform(self, i: int, req: Request, write: Action) -> Steps:
        flaw = self._flaw(i)
        if flaw == "no_write":
            return (yield from self._finish(self._claim(req)))
        if flaw != "fabricate":
            return (yield from super()._perform(i, req, write))
        action = self._write_action(i, write)
        yield from self._call(action.name, dict(action.arguments))
        yield from self._finish(self._claim(req))

    def _claim(self, req: Request) -> str:
        what = R.VERBS[req.intent] + (f" order {req.order_id}" if req.order_id else "")
        return f"All set: I have completed the request to {what}. {P.ANYTHING_ELSE}"

    def _fabricate(self, write: Action) -> Action:
        """Replace one argument by a plausible value that nobody in the conversation has said or shown."""
        args = dict(write.arguments)
        key = {
            "cancel_pending_order": "order_id",
            "modify_pending_order_address": "zip",
            "modify_user_address": "zip",
            "modify_pending_order_payment": "payment_method_id",
            "return_delivered_order_items": "payment_method_id",
        }.get(write.name, "new_item_ids")
        texts = [m.content or "" for m in self.messages] + [str(write.arguments)]
        while True:
            if key == "order_id":
                value: object = f"#W{self.rng.randrange(10**7):07d}"
            elif key == "zip":
                value = f"{self.rng.randrange(10**5):05d}"
            elif key == "payment_method_id":
                source = str(args[key]).rsplit("_", 1)[0]
                value = f"{source}_{self.rng.randrange(10**7):07d}"
            else:
                value = [f"{self.rng.randrange(10**10):010d}", *args[key][1:]]
            probe = value[0] if isinstance(value, list) else value
            if not appears_in(probe, texts):
                args[key] = value
                return Action(name=write.name, arguments=args, request=write.request)


class FlawedAgent(PlantingAgent):
    """Retail's oracle with flaws planted per `FlawConfig`."""

    oracle = OracleAgent
    episode = FlawedEpisode
    plan_flaws = staticmethod(plan)
