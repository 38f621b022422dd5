"""The evidence rules behind the failure modes, applied in one pass over a trial's timeline.

The rules themselves are listed in `pipeline.grading.failure_modes`. The pass keeps what the agent had been
shown so far (the evidence pool, each record's last shown status, each customer's payment methods)
and where the conversation stands (confirmation asked and answered, writes since the last claim). Which
arguments are enumerated choices, which statuses exist and how records are cited come from the domain's
`Vocabulary` (pipeline.world.vocabulary).
"""

from __future__ import annotations

from dataclasses import dataclass, field

from pipeline.grading.evidence import EvidencePool, unsupported_figures
from pipeline.grading.static_checks import affirms
from pipeline.grading.timeline import Say, Step, Timeline
from pipeline.grading.utterances import (
    asks_confirmation,
    claims_completion,
    order_ids,
    status_claims,
    status_compatible,
)
from pipeline.rollout import MALFORMED
from pipeline.world import EMPTY, Vocabulary


@dataclass(frozen=True)
class Finding:
    """One piece of evidence for a mode, at the message (index) where it shows."""

    pos: int
    mode: str
    text: str
    kind: str | None = None  # the finer name a rule gives it (dual control: unverified_fix, ...), if any
    undone: bool = False  # it explains a request left without a write (a claim, a misread status): not inaction


@dataclass
class _Pass:
    vocabulary: Vocabulary = EMPTY
    pool: EvidencePool = field(default_factory=EvidencePool)
    status: dict[str, str] = field(default_factory=dict)  # record (order) id → status last shown
    order_user: dict[str, str] = field(default_factory=dict)  # record id → owner, from its record
    methods: dict[str, set[str]] = field(default_factory=dict)  # user id → payment method ids shown
    balances: dict[str, float] = field(default_factory=dict)  # gift card id → balance shown
    paid: dict[str, float] = field(default_factory=dict)  # order id → amount of its single payment, as shown
    user: str | None = None  # customer authenticated through a look-up
    confirmed: bool = False  # an action confirmation request was affirmed since the last write attempt
    question: Say | None = None  # the last assistant message, if it asked to confirm an action
    awaiting: Say | None = None  # an affirmed confirmation request with no write attempt yet
    turn: list[Step] = field(default_factory=list)  # writes since the last user message
    since_claim: int = 0  # successful writes since the last completion claim
    touched: set[str] = field(default_factory=set)  # orders changed by a successful write
    explained: set[int] = field(default_factory=set)  # ids of refused writes another rule already explains
    found: list[Finding] = field(default_factory=list)

    def add(self, pos: int, mode: str, text: str, undone: bool = False) -> None:
        self.found.append(Finding(pos, mode, text, undone=undone))

    # ---- messages -----------------------------------------------------------------------------------------
    def user_says(self, s: Say) -> None:
        yes = affirms(s.text)
        if self.question is not None:
            self.confirmed = yes  # a later 'no' withdraws an earlier 'yes'
            if yes:
                self._unmet_yes()
                self.awaiting = self.question
        self.question = None
        self.pool.add(s.text)
        self.turn = []

    def assistant_says(self, s: Say) -> None:
        figures = unsupported_figures(s.text, self.pool)
        if figures:
            self.add(s.pos, "invention", f"states {', '.join(figures)}: in no earlier user message or tool output")
        for order_id, claimed in status_claims(s.text, self.vocabulary):
            shown = self.status.get(order_id)
            if shown is not None and not status_compatible(claimed, shown, self.vocabulary):
                what = f"says order {order_id} is '{claimed}'; the tools showed '{shown}'"
                self.add(s.pos, "misread", what, undone=True)
        if claims_completion(s.text):
            self._claim(s)
        if asks_confirmation(s.text):
            self._unmet_yes()
            self.question = s
        else:
            self.question = None

    def _claim(self, s: Say) -> None:
        mentioned = order_ids(s.text, self.vocabulary)
        changed = any(o in self.touched for o in mentioned) if mentioned else self.since_claim > 0
        self.since_claim = 0
        if changed:
            return
        refused = [w for w in self.turn if not w.ok]
        if not refused:
            what = f"claims completion ({_short(s.text)}) but no write was made"
            self.add(s.pos, "plan_adherence", what, undone=True)
        elif not any(id(w) in self.explained for w in refused):
            self.add(s.pos, "misread", f"claims completion although the tool refused {refused[-1].label()}")

    def _unmet_yes(self) -> None:
        if self.awaiting is not None:
            q = self.awaiting
            self.add(q.pos, "plan_adherence", f"user confirmed ({_short(q.text)}) and no write was attempted")
        self.awaiting = None

    # ---- tool calls -----------------------------------------------------------------------------------------
    def tool(self, step: Step) -> None:
        self.question = None
        if step.is_write:
            self._write(step)
        if not step.ok:
            return
        self.pool.add(step.content)
        if step.kind == "identity":
            self.user = step.content.strip()
        rec = step.record()
        if rec is None:
            return
        key = self.vocabulary.record_key
        if key is not None and isinstance(rec.get(key), str) and isinstance(rec.get("status"), str):
            self.status[rec[key]] = rec["status"]
            if isinstance(rec.get("user_id"), str):
                self.order_user[rec[key]] = rec["user_id"]
            history = rec.get("payment_history")
            if isinstance(history, list) and len(history) == 1 and isinstance(history[0], dict):
                self.paid[rec[key]] = float(history[0].get("amount") or 0.0)
        lists = self.vocabulary.payment_methods_from
        if lists is not None and step.name == lists and isinstance(rec.get("payment_methods"), dict):
            self.methods[str(rec.get("user_id"))] = set(rec["payment_methods"])
            for pid, m in rec["payment_methods"].items():
                if isinstance(m, dict) and m.get("source") == "gift_card" and m.get("balance") is not None:
                    self.balances[pid] = float(m["balance"])

    def _write(self, step: Step) -> None:
        self.awaiting = None
        self.turn.append(step)
        if step.error_category == MALFORMED:
            self.confirmed = False  # attempted (the 'yes' is used up), malformed: a signature, not a mode
            return
        args = step.arguments
        before_auth = step.authenticated is False or (
            step.authenticated is None and self.user is None and step.error_category == "unauthorized"
        )
        if before_auth:
            self.add(step.pos, "plan_adherence", f"write before authenticating: {step.label()}")
        choices = self.vocabulary.choices
        skip = [a for a, values in choices.items() if _scalar(args.get(a)) and str(args[a]) in values]
        invented = self.pool.ungrounded(args, skip)
        if invented:
            self.add(step.pos, "invention", f"{step.name}: {', '.join(invented)} appear in no earlier message")
            self.explained.add(id(step))
        key = self.vocabulary.record_key
        order_id = args.get(key) if key is not None else None
        need, shown = self.vocabulary.required_status.get(step.name), self.status.get(str(order_id))
        if need and shown is not None and shown != need:
            self.add(step.pos, "misread", f"{step.name} on order {order_id}, which the tools showed as '{shown}'")
            self.explained.add(id(step))
        vocabulary = self.vocabulary
        method = args.get(vocabulary.payment_argument) if vocabulary.payment_argument else None
        owner = self.order_user.get(str(order_id)) or self.user
        if method and owner in self.methods and method not in self.methods[owner] and self.pool.grounded(method):
            listed = vocabulary.payment_methods_from
            self.add(step.pos, "misread", f"{step.name} with {method}, which {listed} did not list")
            self.explained.add(id(step))
        balance, due = self.balances.get(str(method)), self.paid.get(str(order_id))
        if step.name == vocabulary.payment_change and balance is not None and due is not None and balance < due:
            self.add(step.pos, "misread", f"{step.name} with {method}, whose balance {balance} was shown below {due}")
            self.explained.add(id(step))
        if step.ok and not self.confirmed:
            self.add(step.pos, "plan_adherence", f"write without explicit confirmation: {step.label()}")
        self.confirmed = False  # a 'yes' authorises one write attempt, refused or not
        if step.ok:
            self.since_claim += 1
            self.touched.update(k for _, k in step.touched)
            if order_id:
                self.touched.add(str(order_id))


def _scalar(value: object) -> bool:
    return isinstance(value, (str, int, float)) and not isinstance(value, bool)


def _short(text: str, n: int = 80) -> str:
    return text if len(text) <= n else text[: n - 3] + "..."


def find_modes(timeline: Timeline, vocabulary: Vocabulary = EMPTY) -> list[Finding]:
    """Every piece of failure-mode evidence in a trial, in conversation order, read with the domain's vocabulary
    (`EMPTY`: no enumerated choices, no status claims, no record followed)."""
    p = _Pass(vocabulary=vocabulary)
    for item in timeline.items:
        if isinstance(item, Step):
            p.tool(item)
        elif item.role == "user":
            p.user_says(item)
        else:
            p.assistant_says(item)
    p._unmet_yes()
    return sorted(p.found, key=lambda f: f.pos)
