"""Optional language-model roles in task making, through any OpenAI-compatible endpoint (`--llm openai:MODEL@URL`).

Two roles, and nothing either says joins the data unless the environment verifies it:

- phrase: the model restates a request as a person would. The new wording is kept only when it still names
  the record and every value the plain wording stated (or, stating none, at least a third of its content words:
  a model that answers every request with the same greeting says none of them), is not a wording the model already gave
  another request, and the domain's oracle, talking with the scripted
  customer who now speaks it, still reaches the gold end state (graded from the state); otherwise the plain
  wording stays and the rejection is counted.
- propose (an evolution): the model, shown a task's customer, their records, what they already asked and the
  write tools, proposes one more request (a tool, its arguments, the customer's words) as JSON. It is appended
  to the task (its write after the task's gold; depth + 1, the task as parent), and the evolved task is kept only
  when its gold replays in a fresh session (every call succeeds, the new write changes the end state, the
  domain's invariants hold) and the oracle solves it; a proposal that cannot be read, names an unknown tool,
  or whose gold fails is dropped and counted by reason.

The endpoint is the project's one client (`pipeline.endpoint.client.ChatClient`); its retries and deadlines hold,
set as for every endpoint (`AGENTLOOP_TIMEOUT_S`, `AGENTLOOP_DEADLINE_S`, ...). A reply is read for JSON with a
bound on its nesting (`pipeline.jsondepth`): a deeper one counts as unreadable.
"""

from __future__ import annotations

import json
import logging
import random
import re
from collections import Counter
from dataclasses import dataclass, field
from typing import Any

from pipeline import jsondepth
from pipeline.authoring import Draft, act
from pipeline.dataset import Request, Task, replay_actions
from pipeline.endpoint import ChatClient, EndpointConfig
from pipeline.errors import InputError
from pipeline.explore.kit import breaks_invariants, say, words
from pipeline.explore.speech import pieces
from pipeline.world import World, dump_record

log = logging.getLogger(__name__)
PREFIX = "openai:"
MAX_UTTERANCE = 400
RECORDS_SHOWN = 6
MIN_CONTENT_KEPT = 1 / 3  # share of the plain wording's content words a rewording must keep
CONTENT_WORD = re.compile(r"[a-z][a-z'-]{3,}")
FILLER = (
    "about after again also been before could from have hello just like need please some than thank thanks that"
    " them then there these they this today want what when which will with would your you're"
)
COMMON_WORDS = frozenset(FILLER.split())


class LLMSpecError(InputError, ValueError):
    """An `--llm` value that is not `openai:MODEL@URL`."""


@dataclass(frozen=True)
class LLMSpec:
    model: str
    base_url: str

    @classmethod
    def parse(cls, spec: str) -> LLMSpec:
        """`openai:MODEL@URL` (URL up to /v1, e.g. http://127.0.0.1:8000/v1)."""
        model, at, url = spec.removeprefix(PREFIX).partition("@")
        if not spec.startswith(PREFIX) or not at or not model or not url.startswith(("http://", "https://")):
            raise LLMSpecError(
                f"--llm {spec!r}: expected openai:MODEL@URL, e.g. openai:smollm2@http://127.0.0.1:8000/v1"
            )
        return cls(model, url.rstrip("/"))


@dataclass
class LLMReport:
    """What the model offered and what the environment kept."""

    phrased: int = 0
    phrasing_rejected: Counter = field(default_factory=Counter)
    proposed: int = 0
    verified: int = 0
    dropped: Counter = field(default_factory=Counter)

    def to_dict(self) -> dict[str, Any]:
        return {
            "phrased": self.phrased,
            "phrasing_rejected": dict(self.phrasing_rejected),
            "proposed": self.proposed,
            "verified": self.verified,
            "dropped": dict(self.dropped),
        }


def first_json(text: str) -> dict | None:
    """The first JSON object in a reply (in a code fence or not); None when there is none. A value nested deeper
    than `pipeline.jsondepth.MAX_DEPTH` is not read (json's parser would recurse until Python's limit stops it)."""
    for m in re.finditer(r"\{", text):
        try:
            obj, _ = jsondepth.raw_decode(text, m.start())
        except json.JSONDecodeError as exc:
            if "nested deeper" in exc.msg:
                log.info("LLM reply nests deeper than %d levels; not read as JSON", jsondepth.MAX_DEPTH)
                return None
            continue
        if isinstance(obj, dict):
            return obj
    return None


class LLMRoles:
    def __init__(self, spec: LLMSpec, client: ChatClient | None = None, max_tokens: int = 160, seed: int = 0):
        self.spec, self.max_tokens, self.seed = spec, max_tokens, seed
        self.client = client or ChatClient(EndpointConfig.from_env(base_url=spec.base_url))
        self.report = LLMReport()
        self.wordings: dict[str, str] = {}  # a rewording given → the plain wording it was given for

    def _ask(self, system: str, user: str) -> str:
        body = {"model": self.spec.model, "max_tokens": self.max_tokens, "temperature": 0.7, "seed": self.seed,
                "messages": [{"role": "system", "content": system}, {"role": "user", "content": user}]}  # fmt: skip
        return str(self.client.complete(body).message.get("content") or "")

    # ---- phrase ----------------------------------------------------------------------------------------------
    def phrase(self, world: World, task: Task) -> Task:
        """The task with its first request in the model's words where they pass the checks; else unchanged."""
        req = task.user_script.requests[0]
        text = self._ask(
            "You rewrite a customer's request to a customer-service agent the way a person would say it. Keep "
            "every id, name and value exactly as written. Reply with the rewritten request only.",
            req.utterance,
        )
        text = text.strip().strip('"').strip()
        why = phrasing_problem(req, text)
        if why is None and self.wordings.setdefault(text, req.utterance) != req.utterance:
            why = "repeated"  # the same words for two different requests stand for neither
        candidate = task
        if why is None:
            requests = [req.model_copy(update={"utterance": text}), *task.user_script.requests[1:]]
            script = task.user_script.model_copy(update={"requests": requests})
            candidate = task.model_copy(update={"user_script": script})
            why = None if oracle_solves(world, candidate) else "oracle_failed"
        if why is not None:
            self.report.phrasing_rejected[why] += 1
            log.info("LLM rewording of %s rejected (%s), the plain wording kept: %s", task.id, why, text[:200])
            return task
        self.report.phrased += 1
        return candidate

    # ---- propose ---------------------------------------------------------------------------------------------
    def propose(self, world: World, parent: Task, task_id: str, rng: random.Random) -> Task | None:
        """An evolution of `parent`: one more request of the same customer's, proposed by the model, appended to
        the task; None (counted) when the evolved task does not verify."""
        self.report.proposed += 1
        domain, user_id = world.domain, parent.customer_user_id or ""
        writes = sorted(domain.tools.of_kind("write"))
        records = customer_records(world, user_id, rng)
        tools = "\n".join(f"- {w}({', '.join(domain.tools[w].args_model.model_fields)}): "
                          f"{domain.tools[w].description.splitlines()[0]}" for w in writes)  # fmt: skip
        asked = " ".join(r.utterance for r in parent.user_script.requests)
        reply = self._ask(
            "You invent one more realistic request a customer could make of a customer-service agent. Answer "
            'with one JSON object only: {"tool": <tool name>, "arguments": {<argument>: <value>}, "request": '
            "<what the customer says>}.",
            f"Tools that change records:\n{tools}\n\nThe customer's records:\n{records}\n\n"
            f"The customer has already asked: {asked}",
        )
        why, draft = self._draft(world, user_id, first_json(reply))
        if draft is not None:
            task, why = self._evolve(world, parent, draft, task_id)
            if task is not None:
                self.report.verified += 1
                return task
        self.report.dropped[why] += 1
        log.info("LLM proposal for %s dropped (%s): %s", parent.id, why, reply[:200])
        return None

    def _draft(self, world: World, user_id: str, proposal: dict | None) -> tuple[str, Draft | None]:
        if proposal is None:
            return "unparseable", None
        tool, args = proposal.get("tool"), proposal.get("arguments")
        if not isinstance(tool, str) or tool not in world.domain.tools.of_kind("write"):
            return "unknown_tool", None
        if not isinstance(args, dict):
            return "bad_arguments", None
        try:
            world.domain.tools[tool].args_model.model_validate(args)
        except Exception:  # noqa: BLE001 - any validation failure drops the proposal
            return "bad_arguments", None
        if breaks_invariants(world, tool, user_id, args):
            return "breaks_invariants", None
        said = proposal.get("request")
        utterance = said.strip() if isinstance(said, str) and said.strip() else ""
        described = ", ".join(f"{words(k)} {say(v)}" for k, v in args.items())
        if not utterance or any(say(v) not in utterance for v in args.values() if v != user_id):
            utterance = f"I'd like you to {words(tool)}, with {described}."  # the values said, so none is invented
        record = next((v for k, v in args.items() if isinstance(v, str) and k != "user_id" and v in utterance), None)
        details = {k: say(v) for k, v in args.items() if v != record and v is not None}
        request = Request(intent=tool, utterance=utterance[:MAX_UTTERANCE], record_id=record, details=details)
        goal = f"{words(tool).capitalize()} ({described})."
        return "", Draft("llm__" + tool, request, goal, [], act(tool, **args), None, (record or tool,), 1)

    def _evolve(self, world: World, parent: Task, draft: Draft, task_id: str) -> tuple[Task | None, str]:
        task = chained(parent, draft, task_id)
        session = replay_actions(world, task.gold_actions)
        refused = next((e for e in session.log if not e.ok), None)
        if refused is not None:
            return None, "gold_refused"
        if session.changed() == replay_actions(world, parent.gold_actions).changed():
            return None, "no_change"
        if not oracle_solves(world, task):
            return None, "oracle_failed"
        return task, ""


def chained(parent: Task, draft: Draft, task_id: str) -> Task:
    """`parent` with the draft's request after its own: the write appended to the gold, the goal extended."""
    n = len(parent.user_script.requests)
    script = parent.user_script.model_copy(
        update={
            "requests": [*parent.user_script.requests, draft.request],
            "goal": f"{parent.user_script.goal} Then: {draft.goal}",
        }  # fmt: skip
    )
    gold = [*parent.gold_actions, *(a.model_copy(update={"request": n}) for a in (*draft.reads, draft.write) if a)]
    checks = [c for c in parent.checks if c.kind != "no_writes"]  # the evolved task writes
    prov = parent.provenance
    dials = {**prov.dials, "llm": "evolved", "requests": n + 1}
    provenance = prov.model_copy(update={"dials": dials, "depth": prov.depth + 1, "parent": parent.id})
    return parent.model_copy(update={"id": task_id, "user_script": script, "gold_actions": gold, "checks": checks,
                                     "provenance": provenance})  # fmt: skip


def phrasing_problem(req: Request, text: str) -> str | None:
    """Why a rewording cannot stand for the request: empty, too long, or a value the plain wording said lost."""
    if not text:
        return "empty"
    if len(text) > MAX_UTTERANCE:
        return "too_long"
    if text == req.utterance:
        return "unchanged"
    said = [req.about, *(x for v in req.details.values() for x in pieces(v))]  # a list's items one by one
    stated = [v for v in said if v and v in req.utterance]
    if any(v not in text for v in stated):
        return "value_lost"
    content = content_words(req.utterance)
    if not stated and content and len(content & content_words(text)) < MIN_CONTENT_KEPT * len(content):
        return "content_lost"  # no value to hold it to: its words must carry over
    return None


def content_words(text: str) -> set[str]:
    """The words of four letters or more that carry a request's content (common filler words left out), each by
    its first four letters ('bills' and 'bill', 'returned' and 'return' are one word)."""
    return {w[:4] for w in CONTENT_WORD.findall(text.lower()) if w not in COMMON_WORDS}


def customer_records(world: World, user_id: str, rng: random.Random) -> str:
    """The customer's own records, a few per table, as JSON lines."""
    lines = []
    for table in world.table_names:
        own = [r for r in world.query(table) if world.domain.owner(table, r) == user_id]
        for r in rng.sample(own, min(RECORDS_SHOWN, len(own))):
            lines.append(f"{table}: {json.dumps(dump_record(r))[:400]}")
    return "\n".join(lines)


def oracle_solves(world: World, task: Task) -> bool:
    """The domain's oracle, with the scripted customer, reaches the task's gold end state (graded from state)."""
    from pipeline.grading import grade
    from pipeline.rollout import run_episode
    from pipeline.users import ScriptedUser

    oracle = world.domain.require("oracle", needed_for="verify LLM-made tasks")()
    return grade(world, task, run_episode(world, task, oracle, ScriptedUser())).passed


def with_llm(world: World, tasks: list[Task], roles: LLMRoles, proposals: int, seed: int = 0) -> list[Task]:
    """The tasks phrased by the model where verified, then up to `proposals` verified evolutions of them (one
    more request of the same customer's, so a partitioned world's split holds)."""
    out = [roles.phrase(world, t) for t in tasks]
    parents = [t for t in out if t.customer_user_id]
    rng = random.Random(f"llm:{world.name}:{seed}")
    for i in range(proposals if parents else 0):
        task = roles.propose(world, rng.choice(parents), f"{world.name}-s{seed}-llm{i:03d}", rng)
        if task is not None:
            out.append(task)
    return out
