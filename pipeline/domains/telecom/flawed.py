"""The telecom flawed agent: the telecom oracle with the failure modes dual control adds planted at known rates (the
ground truth for the failure-mode classifier on telecom). A hash of (seed, task id, trial, mode) decides, as for
retail and airline (`pipeline.agents.scripted.flaws`); at most one mode per trial, only in a task the workflow
can fix (not one
whose gold is a transfer). Besides the three dual control adds, two of the modes every domain has, on the
carrier's side (a task whose gold changes the account: roaming enabled, data refuelled):

- plan_adherence: it changes the account without asking the customer first.
- invention: it changes the account on a line id nobody said or showed (the tool refuses; it carries on).
- inaction: it does not take the case up: refuses with no reason, transfers to a human agent, or acknowledges and
  leaves it there, before looking anything up (`pipeline.agents.scripted.inaction`).

- unverified_fix: once it has read the customer's line, it says the issue is resolved before anything was done
  or checked on the phone; told it still does not work, it transfers.
- skipped_step: it never asks for one step of the workflow the task needs on the phone (turning airplane mode
  off, reseating the SIM, resetting the APN, the reboot after it, mobile data, Data Saver, the VPN, Wi-Fi Calling,
  the messaging app's permissions), carries on with the rest, and transfers when the check still fails.
- wrong_instruction: before saying the issue is resolved, it asks the customer for a change that breaks what the
  task needs (airplane mode on; for mobile data and MMS also mobile data off or a 2G network mode).

Each planted mode is counted with the mode the loop targets it falls under (`PARENT`: plan adherence, misread).
"""

from __future__ import annotations

import random

from pipeline.agents import (
    DUAL_CONTROL_MODES,
    INACTION,
    FlawConfig,
    PlantingAgent,
    Steps,
    appears_in,
    inaction_variants,
    not_acting,
)
from pipeline.agents import unit as _unit
from pipeline.dataset import Task
from pipeline.domains.telecom.oracle import TelecomOracle, TelecomOracleEpisode
from pipeline.grading import PARENT
from pipeline.rollout import EpisodeInfo

__all__ = ["DUAL_CONTROL_MODES", "FlawConfig", "TelecomFlawedAgent", "plan"]
PLANTED = ("plan_adherence", "invention", INACTION, *DUAL_CONTROL_MODES)
CARRIER_WRITES = ("enable_roaming", "refuel_data")
SKIPPABLE = (
    "toggle_airplane_mode",
    "reseat_sim_card",
    "reset_apn_settings",
    "reboot_device",
    "toggle_data",
    "toggle_data_saver_mode",
    "disconnect_vpn",
    "toggle_wifi_calling",
    "grant_app_permission",
)
WRONG = {
    "airplane_on": "Please turn on airplane mode.",
    "data_off": "Please turn off mobile data.",
    "network_2g": "Please set your preferred network mode to 2G only.",
}
CLAIM = "I have refreshed your line on our side, so your issue should be resolved now."


def _wants_data(task: Task) -> bool:
    goal = (task.user_script.goal or "").lower()
    return any(w in goal for w in ("mms", "picture", "mobile data", "internet", "speed"))


def _variants(mode: str, task: Task) -> list[str]:
    if any(a.name == "transfer_to_human_agents" for a in task.gold_actions):
        return []
    if mode == INACTION:  # on a task that needs a change, on either side
        acts = any(a.requestor == "user" or not a.name.startswith("get_") for a in task.gold_actions)
        return inaction_variants(0, 1) if acts else []
    if mode in ("plan_adherence", "invention"):
        writes = [a.name for a in task.gold_actions if a.requestor != "user" and a.name in CARRIER_WRITES]
        return ["skip_confirmation" if mode == "plan_adherence" else "fabricate"] if writes else []
    if mode == "unverified_fix":
        return ["claim_early"]
    if mode == "skipped_step":
        names = {a.name for a in task.gold_actions if a.requestor == "user"}
        if "reset_apn_settings" not in names:  # a reboot is then one network search among others
            names.discard("reboot_device")
        return [s for s in SKIPPABLE if s in names]
    if mode == "wrong_instruction":
        return list(WRONG) if _wants_data(task) else ["airplane_on"]
    return []


def plan(config: FlawConfig, task: Task, trial: int) -> dict[int, tuple[str, str]]:
    """{0: (mode, variant)} when a mode is planted in this trial; the first of the modes (in an order the hash
    shuffles) whose rate the coin falls under and that fits the task."""
    order = sorted(PLANTED, key=lambda m: _unit(config.seed, task.id, trial, m, "order"))
    for mode in order:
        if _unit(config.seed, task.id, trial, mode) >= config.rate(mode):
            continue
        options = _variants(mode, task)
        if options:
            return {0: (mode, options[int(_unit(config.seed, task.id, trial, mode, "how") * len(options))])}
    return {}


class _Transferred(Exception):
    """The flawed episode has handed the conversation to a human agent: nothing more to say."""


class TelecomFlawedEpisode(TelecomOracleEpisode):
    def __init__(self, info: EpisodeInfo, flaws: dict[int, tuple[str, str]], seed: int) -> None:
        planted: tuple[str | None, str | None] = flaws.get(0, (None, None))
        self.mode, self.variant = planted
        self.claimed = False
        self.rng = random.Random(f"{seed}:{info.task.id}:{info.trial}:values")
        super().__init__(info)

    def _run(self) -> Steps:
        if self.mode == INACTION and self.variant is not None:
            return (yield from not_acting(self, self.variant, "transfer_to_human_agents"))
        try:
            yield from super()._run()
        except _Transferred:
            return

    def _ask(self, tool: str, text: str | None = None) -> Steps:
        if self.mode == "unverified_fix" and not self.claimed:
            self.claimed = True
            yield from self._say(CLAIM)
            yield from self._transfer("The customer reports the issue persists.")
            raise _Transferred
        if self.mode == "skipped_step" and tool == self.variant:
            return ""
        return (yield from super()._ask(tool, text))

    def _write(self, name: str, arguments: dict, what: str) -> Steps:
        if self.variant == "skip_confirmation" and name in CARRIER_WRITES:
            result = yield from self._call(name, arguments)
            yield from self._say("I have updated your account.")
            return not result.error
        if self.variant == "fabricate" and name in CARRIER_WRITES:
            arguments = {**arguments, "line_id": self._invented_line()}
        return (yield from super()._write(name, arguments, what))

    def _invented_line(self) -> str:
        texts = [m.content or "" for m in self.messages]
        while True:
            line = f"L{self.rng.randrange(2000, 9999)}"
            if not appears_in(line, texts):
                return line

    def _resolved(self) -> Steps:
        if self.mode == "wrong_instruction" and self.variant is not None:
            yield from super()._ask("", WRONG[self.variant])
        return (yield from super()._resolved())


class TelecomFlawedAgent(PlantingAgent):
    """The telecom oracle with flaws planted per `FlawConfig`; `planted` names a dual-control mode with the mode it
    falls under."""

    oracle = TelecomOracle
    episode = TelecomFlawedEpisode
    plan_flaws = staticmethod(plan)

    def planted(self, task: Task, trial: int) -> list[str]:
        modes = {mode for mode, _ in self.plan_flaws(self.config, task, trial).values()}
        return sorted(modes | {PARENT[m] for m in modes if m in PARENT})
