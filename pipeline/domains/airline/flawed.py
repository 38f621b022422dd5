"""The airline flawed agent: the airline oracle with failure modes planted at known rates (the ground truth for
the failure-mode classifier on airline), planted the way retail's are (`pipeline.domains.retail.flawed`): a hash of
(seed, task id, trial, mode) decides, at most one mode per request, only on a request with a gold write.

- plan_adherence: writes without asking for confirmation / never issues the write after the customer's yes but
  says it is done / cancels before identifying the customer (the tool refuses; it then identifies them and
  carries on).
- invention: one write argument replaced by a plausible value nobody said or showed (a reservation id, a payment
  method id, a date of birth, a certificate amount), then it claims success.
- inaction: on a request the policy allows, refuses with no reason / transfers to a human agent (last request
  only) / acknowledges and moves on (`pipeline.agents.scripted.inaction`).
- misread: misreads a tool's output, writes what the tools then refuse, and reports success anyway: the total
  of a booking computed from another cabin's prices in the search result; a flight change that lists only the
  changed segment of the reservation's itinerary; bags counted from zero instead of the reservation's count; a
  passenger list of the wrong length.
"""

from __future__ import annotations

import json
import random
import re
import string

from pipeline.agents import (
    INACTION,
    MODES,
    FlawConfig,
    InactionEpisode,
    PlantingAgent,
    Steps,
    appears_in,
    inaction_variants,
)
from pipeline.agents import unit as _unit
from pipeline.dataset import Action, Request, Task
from pipeline.domains.airline import phrases as A
from pipeline.domains.airline.oracle import AirlineOracle, AirlineOracleEpisode
from pipeline.domains.airline.schema import CABINS
from pipeline.domains.airline.vocabulary import WRITE_INTENTS
from pipeline.rollout import EpisodeInfo

__all__ = ["MODES", "AirlineFlawedAgent", "FlawConfig", "plan"]
_ADD = re.compile(r"^(\d+) \+ (\d+)$")


def _added(task: Task, i: int) -> tuple[int, int] | None:
    """(bags on the reservation, bags added) from the request's gold `calculate`, for a bag update."""
    for a in task.gold_actions:
        m = _ADD.match(str(a.arguments.get("expression", ""))) if a.request == i else None
        if m:
            return int(m.group(1)), int(m.group(2))
    return None


def _variants(mode: str, i: int, req: Request, write: Action, task: Task) -> list[str]:
    if mode == INACTION:
        return inaction_variants(i, len(task.user_script.requests))
    if mode == "plan_adherence":
        return ["skip_confirmation", "no_write", *(["write_before_auth"] if i == 0 and req.intent == "cancel" else [])]
    if mode == "invention":
        return ["fabricate"]
    if write.name == "book_reservation":
        return ["wrong_total"]
    if write.name == "update_reservation_flights" and len(write.arguments["flights"]) > 1:
        return ["drop_segments"]
    if write.name == "update_reservation_baggages":
        counts = _added(task, i)
        return ["bags_from_zero"] if counts and counts[0] > counts[1] else []
    return ["passenger_count"] if write.name == "update_reservation_passengers" else []


def plan(config: FlawConfig, task: Task, trial: int) -> dict[int, tuple[str, str]]:
    """Request index → (mode, variant) planted in this trial."""
    writes = {a.request: a for a in task.gold_actions if a.name in WRITE_INTENTS and a.request is not None}
    requests = task.user_script.requests
    out: dict[int, tuple[str, str]] = {}
    for mode in MODES:
        if _unit(config.seed, task.id, trial, mode) >= config.rate(mode):
            continue
        fits = [
            i
            for i in sorted(writes)
            if i not in out and i < len(requests) and _variants(mode, i, requests[i], writes[i], task)
        ]
        if not fits:
            continue
        i = fits[int(_unit(config.seed, task.id, trial, mode, "where") * len(fits))]
        options = _variants(mode, i, requests[i], writes[i], task)
        out[i] = (mode, options[int(_unit(config.seed, task.id, trial, mode, "how") * len(options))])
    return out


class AirlineFlawedEpisode(InactionEpisode, AirlineOracleEpisode):
    transfer_tool = "transfer_to_human_agents"

    def __init__(self, info: EpisodeInfo, flaws: dict[int, tuple[str, str]], seed: int) -> None:
        self.flaws = flaws
        self.rng = random.Random(f"{seed}:{info.task.id}:{info.trial}:values")
        self.searched: list[dict] = []
        super().__init__(info)

    def _flaw(self, i: int) -> str | None:
        return self.flaws.get(i, (None, None))[1]

    # ---- plan adherence: cancel before identifying the customer ------------------------------------------------
    def _run(self) -> Steps:
        reqs = self.script.requests
        if self._flaw(0) != "write_before_auth":
            yield from super()._run()
            return
        req, write = reqs[0], self._write(0)
        assert write is not None  # this flaw is planted only on a request with a write
        details = yield from self._say(A.ask_details(req.intent, A.TOPICS.get(req.intent, [])))
        ok = yield from self._confirm(0, req, write)
        if ok:
            yield from self._call(write.name, dict(write.arguments))  # refused: nobody is identified yet
        yield from self._authenticate(A.ASK_USER_ID_FIRST)
        yield from self._handle(0, req, details=details)
        for i, r in enumerate(reqs[1:], start=1):
            yield from self._handle(i, r)

    def _read(self, a: Action) -> Steps:
        yield from super()._read(a)
        result = self.messages[-1]
        if a.name == "search_direct_flight" and not result.error:
            self.searched += json.loads(result.content or "[]")

    # ---- the write itself ---------------------------------------------------------------------------------------
    def _confirm(self, i: int, req: Request, write: Action) -> Steps:
        if self._flaw(i) == "skip_confirmation":
            return True
        return (yield from super()._confirm(i, req, write))

    def _perform(self, i: int, req: Request, write: Action) -> Steps:
        flaw = self._flaw(i)
        if flaw in (None, "skip_confirmation", "write_before_auth"):
            return (yield from super()._perform(i, req, write))
        if flaw != "no_write":
            action = yield from self._flawed(flaw, write)
            yield from self._call(action.name, dict(action.arguments))
        yield from self._finish(self._claim(req))

    def _claim(self, req: Request) -> str:
        what = A.VERBS[req.intent] + (f" {req.record_id}" if req.record_id and req.intent != "book" else "")
        return f"All set: I have completed the request to {what}. {A.ANYTHING_ELSE}"

    def _flawed(self, flaw: str, write: Action) -> Steps:
        args = json.loads(json.dumps(write.arguments))
        if flaw == "fabricate":
            return self._fabricate(write.name, args)
        if flaw == "wrong_total":  # another cabin's prices, as the search result lists them, computed by the tool
            other = next(c for c in CABINS if c != args["cabin"])
            prices = [self._price(f["flight_number"], f["date"], other) for f in args["flights"]]
            n, nonfree = len(args["passengers"]), args["nonfree_baggages"]
            expr = f"({' + '.join(map(str, prices))}) * {n}" + (f" + 50 * {nonfree}" if nonfree else "")
            expr += f" + 30 * {n}" if args["insurance"] == "yes" else ""
            result = yield from self._call("calculate", {"expression": expr})
            amount = float(result.content or 0)
            args["payment_methods"] = [
                {**args["payment_methods"][0], "amount": int(amount) if amount.is_integer() else amount}
            ]
        elif flaw == "drop_segments":
            changed = [f for f in args["flights"] if (f["flight_number"], f["date"]) not in self._kept(args)]
            args["flights"] = changed or args["flights"][:1]
        elif flaw == "bags_from_zero":
            counts = _added(self.task, self._request_of(write))
            assert counts is not None  # planned only where the request's gold adds bags
            before, added = counts
            args["total_baggages"] = added
        elif flaw == "passenger_count":
            res = self.reservations.get(args["reservation_id"], {})
            old = res.get("passengers", [])
            args["passengers"] = args["passengers"][:-1] if len(args["passengers"]) > 1 else [*args["passengers"], *old]
        return Action(name=write.name, arguments=args, request=write.request)

    def _request_of(self, write: Action) -> int:
        return write.request if write.request is not None else 0

    def _kept(self, args: dict) -> set[tuple[str, str]]:
        res = self.reservations.get(args["reservation_id"], {})
        return {(f["flight_number"], f["date"]) for f in res.get("flights", [])}

    def _price(self, number: str, day: str, cabin: str):
        found = next((f for f in self.searched if f["flight_number"] == number and f["date"] == day), None)
        return found["prices"][cabin] if found else 0

    def _fabricate(self, name: str, args: dict) -> Action:
        """Replace one argument by a plausible value that nobody in the conversation has said or shown."""
        texts = [m.content or "" for m in self.messages] + [json.dumps(args)]
        while True:
            if name == "cancel_reservation":
                value: object = "".join(self.rng.choices(string.ascii_uppercase + string.digits, k=6))
                key, probe = "reservation_id", value
            elif name == "update_reservation_passengers":
                value = f"19{self.rng.randrange(40, 99)}-0{self.rng.randrange(1, 9)}-1{self.rng.randrange(0, 9)}"
                key, probe = "passengers", value
            elif name == "send_certificate":
                value = self.rng.randrange(101, 999)
                key, probe = "amount", str(value)
            else:
                value = f"credit_card_{self.rng.randrange(10**7):07d}"
                key, probe = "payment_id", value
            if appears_in(probe, texts):
                continue
            if key == "passengers":
                args["passengers"] = [*args["passengers"][:-1], {**args["passengers"][-1], "dob": value}]
            elif name == "book_reservation":
                args["payment_methods"] = [{**args["payment_methods"][0], "payment_id": value}]
            else:
                args[key] = value
            return Action(name=name, arguments=args)


class AirlineFlawedAgent(PlantingAgent):
    """The airline oracle with flaws planted per `FlawConfig`."""

    oracle = AirlineOracle
    episode = AirlineFlawedEpisode
    plan_flaws = staticmethod(plan)
