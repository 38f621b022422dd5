"""Verification of a candidate task, by the world and by running it, never by trusting its author.

0. new: not identical to a task already accepted;
1. gold replay: every gold action succeeds and every forbidden write is refused where it is asked for;
2. policy: the gold end state keeps the static rules (legal status changes, money ceilings,
   authorization, no policy-refused writes, tool budget);
3. solvable: the domain's oracle agent solves it against the scripted user (run_episode + grade) on each trial;
4. discriminative (when the targeted mode can be planted): the domain's flawed agent with that mode fails it;
5. optionally, the judge cascade (executability, validity, policy).
The first failing step is the diagnosis, which tells the rework what to change.
"""

from __future__ import annotations

import logging
from dataclasses import dataclass, field
from typing import Literal

from pydantic import BaseModel, ConfigDict, Field

from pipeline.authoring import gold_problems
from pipeline.curate import task_key
from pipeline.dataset import Task, replay_actions
from pipeline.grading import StaticInput, check_authorization, check_policy_violations, check_tool_budget, grade
from pipeline.rollout import InfrastructureError, Limits, Trajectory, run_episode
from pipeline.synth.candidate import Candidate
from pipeline.synth.judge import JudgeCascade
from pipeline.users import ScriptedUser
from pipeline.world import World

log = logging.getLogger(__name__)
Kind = Literal[
    "ok",
    "no_fit",
    "duplicate",
    "gold_refused",
    "forbidden_allowed",
    "static_violation",
    "oracle_failed",
    "flaw_undetected",
    "judge_rejected",
]
# after the domain's invariants (Domain.invariants)
GOLD_CHECKS = (
    check_authorization,
    check_policy_violations,
    check_tool_budget,
)


class VerifyConfig(BaseModel):
    model_config = ConfigDict(extra="forbid")

    oracle_trials: int = Field(default=1, ge=1, description="Trials (personas) the oracle must pass.")
    flaw_check: bool = Field(default=True, description="Require the flawed agent with the targeted mode to fail.")
    flaw_seed: int = Field(default=0, description="Seed of the flawed agent used for the discrimination check.")
    limits: Limits = Field(default_factory=Limits)


@dataclass
class Verification:
    kind: Kind
    details: list[str] = field(default_factory=list)
    trajectory: Trajectory | None = None  # the oracle's passing trajectory (trial 0)
    flaw: str = "off"  # detected | undetected | not_plantable | off
    judge: str = "off"  # passed | rejected:<stage> | unavailable | off

    @property
    def ok(self) -> bool:
        return self.kind == "ok"


class Verifier:
    """Runs the checks above with the world's domain's scripted agents (its `oracle` and `flaws` capabilities)
    and its scripted customer (in the domain's `user_phrasing`, else the default wording)."""

    def __init__(self, world: World, config: VerifyConfig | None = None, judge: JudgeCascade | None = None):
        self.world = world
        self.config = config or VerifyConfig()
        self.judge = judge
        domain = world.domain
        self.oracle = domain.require("oracle", needed_for="verifying synthesized tasks")()
        self.flaws = domain.require("flaws", needed_for="the flaw check") if self.config.flaw_check else None
        self.user = ScriptedUser(phrasing=domain.capability("user_phrasing"))
        self.accepted: set[str] = set()  # content keys of tasks already accepted (see `accept`)

    def accept(self, task: Task) -> None:
        """Remember an accepted task, so that an identical one is diagnosed as a duplicate."""
        self.accepted.add(task_key(task))

    def __call__(self, cand: Candidate) -> Verification:
        task, cfg = cand.task, self.config
        if task is None:
            return Verification("no_fit", ["no customer of the world fits this spec"])
        if task_key(task) in self.accepted:
            return Verification("duplicate", ["same customer, requests and gold actions as an accepted task"])
        problems = gold_problems(self.world, task, cand.drafts)
        if problems:
            return Verification(problems[0][0], [f"{k}: {d}" for k, d in problems])  # type: ignore[arg-type]
        session = replay_actions(self.world, task.gold_actions)
        inp = StaticInput(
            self.world, [e.to_dict() for e in session.log], session.changed(), max_tool_calls=cfg.limits.max_tool_calls
        )
        checks = [inv.check for inv in self.world.domain.invariants()] + list(GOLD_CHECKS)
        static = [d for check in checks for d in check(inp).details]
        if static:
            return Verification("static_violation", static)
        traj = None
        for trial in range(cfg.oracle_trials):
            t = run_episode(self.world, task, self.oracle, self.user, trial=trial, limits=cfg.limits)
            v = grade(self.world, task, t, cfg.limits)
            if not v.passed:
                why = [f"trial {trial}: {c}" for c in v.failed_components] + v.diagnostics[:3]
                return Verification("oracle_failed", why or [f"trial {trial}: {t.termination}"], t)
            traj = traj or t
        out = Verification("ok", trajectory=traj, flaw=self._flaw(cand, task))
        if out.flaw == "undetected":
            return Verification("flaw_undetected", [f"flawed agent ({cand.spec.mode}) passes it"], traj, out.flaw)
        if self.judge is not None:
            try:
                stage = self.judge.first_rejection(task, self.world.policy)
            except InfrastructureError as exc:
                log.warning("judge unavailable for %s: %s", task.id, exc)
                out.judge = "unavailable"
                return out
            if stage is not None:
                return Verification(
                    "judge_rejected", [f"{stage[0]}: {stage[1]}"], traj, out.flaw, f"rejected:{stage[0]}"
                )
            out.judge = "passed"
        return out

    def _flaw(self, cand: Candidate, task: Task) -> str:
        if not self.config.flaw_check or self.flaws is None:  # flaws is set whenever the check is on
            return "off"
        agent = self.flaws({cand.spec.mode: 1.0}, seed=self.config.flaw_seed)
        if not agent.planted(task, 0):
            return "not_plantable"
        t = run_episode(self.world, task, agent, self.user, trial=0, limits=self.config.limits)
        return "undetected" if grade(self.world, task, t, self.config.limits).passed else "detected"
