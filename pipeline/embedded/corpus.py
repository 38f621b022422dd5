"""Training corpora for the embedded default: gold trajectories, and a baseline corpus whose flaws follow situations.

A real agent does not fail at random: a customer who forgot their email invites an invented value, an "oh, can
you also" lets the write after the second "yes" slip, an order in the wrong status gets acted on anyway. The
baseline corpus plants the flawed agent's failure modes on exactly those situations, so the model trained on it
fails there and targeted data (synthesized for those modes) can beat volume. Rates are per situation; whether a
flaw is planted in a (task, trial) is a hash, so the same configuration gives the same corpus.

    forgot_email   invention       one write argument made up (`fabricate`)
    later_request  plan_adherence  a second request ("oh, can you also..." or stated up front): after the
                                   customer's "yes", no write, but "All set"
    wrong_status   misread         the order's shown status ignored (a processed order cancelled, a second
                                   item modification made): the forbidden write is attempted
    gift_card_short misread        the gift card's shown balance ignored: the order is paid with it anyway
"""

from __future__ import annotations

import hashlib
import logging
import re
from collections import Counter
from collections.abc import Iterable, Sequence
from typing import Annotated, Literal, cast, get_args

from pydantic import BaseModel, ConfigDict, Field

from pipeline.agents.scripted import phrases as P
from pipeline.dataset import Action, Request, Task
from pipeline.domains.retail import phrases as R
from pipeline.domains.retail.flawed import MODES, FlawedEpisode
from pipeline.domains.retail.oracle import REQUIRED_STATUS, OracleAgent, OracleEpisode, Steps
from pipeline.domains.retail.schema import CANCEL_REASONS, Order
from pipeline.domains.retail.state import RetailWorld
from pipeline.domains.retail.tools import TOOLS, WRITE_TOOLS
from pipeline.embedded.train_loop import Example
from pipeline.formats import CodecConfig, encode_conversation
from pipeline.grading import grade
from pipeline.rollout import Agent, EpisodeInfo, Limits, Trajectory, run_episode
from pipeline.trials import trial_seed
from pipeline.users import ScriptedUser

log = logging.getLogger(__name__)

Situation = Literal["forgot_email", "later_request", "wrong_status", "gift_card_short"]
SITUATIONS: tuple[Situation, ...] = get_args(Situation)
SITUATION_MODE = {
    "forgot_email": "invention",
    "later_request": "plan_adherence",
    "wrong_status": "misread",
    "gift_card_short": "misread",
}
"""The failure mode each situation invites (and that targeted data for that mode must repair)."""
_VARIANT = {
    "forgot_email": "fabricate",
    "later_request": "no_write",
    "wrong_status": "ignore_status",
    "gift_card_short": "ignore_balance",
}
_MISREAD_INTENTS = ("cancel", "modify_address", "return", "modify_items")
_ADDRESS = re.compile(r"The new address is (?P<body>.+), zip (?P<zip>\d{5})\.")


class SituatedFlaws(BaseModel):
    """Planting rate of each situation's flaw (share of the trials in that situation); same seed, same corpus."""

    model_config = ConfigDict(extra="forbid")

    rates: dict[Situation, Annotated[float, Field(ge=0.0, le=1.0)]] = Field(
        default_factory=lambda: dict.fromkeys(SITUATIONS, 1.0),
        description="Situation → rate: forgot_email (invention), later_request (plan adherence), wrong_status and"
        " gift_card_short (misread).",
    )
    seed: int = Field(default=0, description="Seed of the planting hash.")


def _unit(*parts: object) -> float:
    digest = hashlib.sha256(":".join(str(p) for p in parts).encode()).digest()
    return int.from_bytes(digest[:8], "big") / 2**64


def situations(world: RetailWorld, task: Task) -> dict[int, Situation]:
    """Request index → the flaw-inviting situation it is in (at most one per request)."""
    requests = task.user_script.requests
    writes = {a.request for a in task.gold_actions if a.name in WRITE_TOOLS and a.request is not None}
    out: dict[int, Situation] = {}
    for i, req in enumerate(requests):
        order = world.db.orders.get(req.order_id or "")
        need = REQUIRED_STATUS.get(req.intent)
        mine = order is not None and order.user_id == task.customer_user_id
        if (
            req.expect == "refused"
            and req.intent in _MISREAD_INTENTS
            and mine
            and need
            and cast("Order", order).status != need
        ):
            out[i] = "wrong_status"
        elif (
            req.expect == "refused"
            and mine
            and cast("Order", order).status == need
            and _gift_card_short(world, task, req)
        ):
            out[i] = "gift_card_short"
        elif i not in writes:
            continue
        elif i > 0:
            out[i] = "later_request"
        elif task.user_script.messes.forgot_email and i == min(writes):
            out[i] = "forgot_email"
    return out


def _gift_card_short(world: RetailWorld, task: Task, req: Request) -> bool:
    """A payment change to the customer's gift card whose balance is below what the order was paid."""
    if req.intent != "modify_payment":
        return False
    methods = world.db.users[cast("str", task.customer_user_id)].payment_methods
    paid = world.db.orders[cast("str", req.order_id)].payment_history[0].amount
    said = req.details.get("payment_method", "")
    return any(
        m.source == "gift_card" and (m.balance or 0.0) < paid and R.describe_payment(m, methods) in said
        for m in methods.values()
    )


def plan_situated(world: RetailWorld, config: SituatedFlaws, task: Task, trial: int) -> dict[int, tuple[str, str]]:
    """Request index → (mode, variant) planted in this trial."""
    out = {}
    for i, situation in situations(world, task).items():
        if _unit(config.seed, task.id, trial, situation) < config.rates.get(situation, 0.0):
            out[i] = (SITUATION_MODE[situation], _VARIANT[situation])
    return out


class SituatedFlawedAgent:
    """The oracle, with each situation's flaw planted at the configured rate."""

    def __init__(self, world: RetailWorld, config: SituatedFlaws | None = None) -> None:
        self.world = world
        self.config = config or SituatedFlaws()
        rates = ",".join(f"{s}={r}" for s, r in sorted(self.config.rates.items()))
        self.name = f"situated-flawed({rates},seed={self.config.seed})"
        self._oracle = OracleAgent()

    def planted(self, task: Task, trial: int) -> list[str]:
        """Failure modes planted in this (task, trial)."""
        return sorted({mode for mode, _ in plan_situated(self.world, self.config, task, trial).values()})

    def start(self, info: EpisodeInfo) -> OracleEpisode:
        flaws = plan_situated(self.world, self.config, info.task, info.trial)
        return SituatedEpisode(info, flaws, self.config.seed) if flaws else self._oracle.start(info)


class SituatedEpisode(FlawedEpisode):
    """FlawedEpisode plus the misread of a refusal: acting as if the order had the status the request needs."""

    def _handle(self, i: int, req: Request, details: str | None = None, confirmed: bool = False) -> Steps:
        self.current = i
        if self._flaw(i) == "ignore_balance":
            return (yield from self._pay_anyway(i, req, details))
        if self._flaw(i) != "ignore_status":
            return (yield from OracleEpisode._handle(self, i, req, details, confirmed))
        yield from self._reads(i, req, after_details=False)
        if req.intent == "modify_items":
            return (yield from self._modify_anyway(i, req, details))
        write = self._forbidden(i, req)
        reason = self._check_order(req)
        if write is None or reason is None:  # nothing to attempt: refuse as the oracle does
            self._fact = self._status_fact(req)
            return (yield from self._refuse(reason or P.NO_POLICY_REASON))
        # the status fact names the status the request needs, not the one the tool showed
        self._fact = self._status_fact(req, as_status=REQUIRED_STATUS[req.intent])
        topics = self._topics(req)
        if details is None and topics:
            details = yield from self._say(R.ask_details(req.intent, topics))
        yield from self._go_ahead(i, req, write)

    def _go_ahead(self, i: int, req: Request, write: Action) -> Steps:
        ok = yield from self._confirm(i, req, write)
        if not ok:
            return (yield from self._finish(P.declined()))
        yield from self._perform(i, req, write)

    def _pay_anyway(self, i: int, req: Request, details: str | None) -> Steps:
        """The gift card the customer names is taken to cover the order, whatever balance the account showed."""
        yield from self._reads(i, req, after_details=False)
        self._fact = self._status_fact(req)
        reason = self._check_order(req)
        if reason:
            return (yield from self._refuse(reason))
        if details is None:
            details = yield from self._say(R.ask_details(req.intent, self._topics(req)))
        yield from self._reads(i, req, after_details=True)
        method = self._named_method(details or "")
        if method is None:
            return (yield from self._refuse(self._check_details(req, details or "") or P.NO_POLICY_REASON))
        args = {"order_id": req.order_id, "payment_method_id": method.id}
        yield from self._go_ahead(i, req, Action(name="modify_pending_order_payment", arguments=args, request=i))

    def _modify_anyway(self, i: int, req: Request, details: str | None) -> Steps:
        """A second item modification made as if the order were still 'pending': the products are looked up and
        the change confirmed and attempted (the tool refuses it)."""
        self._fact = self._status_fact(req, as_status=REQUIRED_STATUS[req.intent])
        topics = self._topics(req)
        if details is None and topics:
            details = yield from self._say(R.ask_details(req.intent, topics))
        if self._user() is None and self.user_id:
            yield from self._call("get_user_details", {"user_id": self.user_id})
        said = req.details.get("items", "")
        pairs: list[tuple[str, str]] = []
        for item in (self._order(req.order_id) or {}).get("items", []):
            head = f"{R.describe_item(item['name'], item['options'])}: I'd like it with "
            if head not in said or item["item_id"] in [old for old, _ in pairs]:
                continue
            product = self.seen.get(("get_product_details", item["product_id"]))
            if product is None:
                yield from self._call("get_product_details", {"product_id": item["product_id"]})
                product = self.seen.get(("get_product_details", item["product_id"]), {})
            wanted = [
                vid
                for vid, v in product.get("variants", {}).items()
                if f"{head}{R.describe_options(v['options'])} instead" in said
            ]
            if wanted:
                pairs.append((item["item_id"], wanted[0]))
        method = self._named_method(details or "")
        if not pairs or method is None:
            self._fact = self._status_fact(req)
            return (yield from self._refuse(self._check_order(req) or P.NO_POLICY_REASON))
        args = {
            "order_id": req.order_id,
            "item_ids": [old for old, _ in pairs],
            "new_item_ids": [new for _, new in pairs],
            "payment_method_id": method.id,
        }
        yield from self._go_ahead(i, req, Action(name="modify_pending_order_items", arguments=args, request=i))

    def _forbidden(self, i: int, req: Request) -> Action | None:
        """The write the customer asked for (which the policy, and the tool, refuse for this status)."""
        order = self._order(req.order_id) or {}
        if req.intent == "cancel":
            said = req.details.get("reason", "").lower()
            reason = next((r for r in CANCEL_REASONS if r in said), CANCEL_REASONS[0])
            return Action(
                name="cancel_pending_order", arguments={"order_id": req.order_id, "reason": reason}, request=i
            )
        if req.intent == "modify_address":
            m = _ADDRESS.search(req.details.get("address", ""))
            parts = [p.strip() for p in m.group("body").split(",")] if m else []
            if len(parts) not in (4, 5):
                return None
            a1, *a2, city, state, country = parts
            args = dict(address1=a1, address2=a2[0] if a2 else "", city=city, state=state, country=country)
            return Action(
                name="modify_pending_order_address",
                arguments={"order_id": req.order_id, **args, "zip": cast("re.Match[str]", m)["zip"]},
                request=i,
            )
        said = req.details.get("items", "")
        items = sorted({it["item_id"] for it in order.get("items", []) if f"{it['name']} (" in said})
        method = (order.get("payment_history") or [{}])[0].get("payment_method_id")
        if not items or not method:
            return None
        args = {"order_id": req.order_id, "item_ids": items, "payment_method_id": method}
        return Action(name="return_delivered_order_items", arguments=args, request=i)


# ---- running and encoding -----------------------------------------------------------------------------------
def run_corpus(
    world: RetailWorld,
    tasks: Sequence[Task],
    agent: Agent,
    trials: int = 1,
    seed: int = 0,
    *,
    passing_only: bool = False,
    limits: Limits | None = None,
) -> list[Trajectory]:
    """Episodes of `agent` against the scripted user; `passing_only` keeps the verified ones (gold data)."""
    user = ScriptedUser()
    out: list[Trajectory] = []
    dropped = 0
    for task in tasks:
        for trial in range(trials):
            traj = run_episode(
                world, task, agent, user, trial=trial, seed=trial_seed(seed, task.id, trial), limits=limits
            )
            if passing_only and not grade(world, task, traj, limits=limits).passed:
                dropped += 1
                continue
            out.append(traj)
    if dropped:
        log.warning("run_corpus: %d of %d episodes failed verification and were dropped", dropped, dropped + len(out))
    return out


def encode_trajectories(
    trajectories: Iterable[Trajectory],
    world: RetailWorld,
    tokenizer,
    codec: CodecConfig,
    *,
    call_weight: float = 1.0,
    context_weight: float = 0.0,
) -> list[Example]:
    """Codec-rendered token ids with loss weights: assistant text 1, assistant tool calls `call_weight`, the rest
    of the conversation `context_weight` (0 = the assistant mask SFT trains on)."""
    out = []
    for traj in trajectories:
        enc = encode_conversation(traj.messages, TOOLS.schemas(), world.policy, tokenizer, codec)
        weights = [1.0 if m else context_weight for m in enc.assistant_mask]
        if call_weight != 1.0:
            calls = [bool(m.tool_calls) for m in traj.messages if m.role == "assistant"]
            for (start, end), is_call in zip(enc.assistant_spans(), calls, strict=True):
                if is_call:
                    weights[start:end] = [call_weight] * (end - start)
        out.append(Example(enc.ids, weights))
    return out


def situation_counts(world: RetailWorld, tasks: Iterable[Task]) -> dict[str, int]:
    """How many tasks are in each situation (a task counts once per situation)."""
    counts: Counter[str] = Counter()
    for task in tasks:
        counts.update(set(situations(world, task).values()))
    return {s: counts.get(s, 0) for s in SITUATIONS}


assert set(SITUATION_MODE.values()) <= set(MODES)
