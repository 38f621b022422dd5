"""Failure modes: each planted flaw is named for what it is, oracle runs show none, and each evidence rule works."""

from __future__ import annotations

from dataclasses import dataclass

import pytest

from pipeline.dataset.task import Provenance, Request, Task, UserScript
from pipeline.domains.retail.flawed import MODES, FlawConfig, FlawedAgent, FlawedEpisode, _variants
from pipeline.domains.retail.oracle import OracleAgent
from pipeline.domains.retail.tools import WRITE_TOOLS
from pipeline.grading.evidence import EvidencePool, unsupported_figures
from pipeline.grading.failure_modes import FAILURE_MODES, FailureAnalysis, analyze, dominant_mode
from pipeline.grading.grader import grade
from pipeline.grading.mode_recovery import score
from pipeline.grading.mode_rules import Finding, find_modes
from pipeline.grading.timeline import build_timeline
from pipeline.grading.verdict import ComponentResult, Verdict
from pipeline.rollout.runner import run_episode
from pipeline.users.scripted import ScriptedUser
from tests.agents.scripted_helpers import small_tasks, small_world
from tests.grading.grading_helpers import Call, record

MODE_OF = {
    "skip_confirmation": "plan_adherence",
    "no_write": "plan_adherence",
    "write_before_auth": "plan_adherence",
    "fabricate": "invention",
    "refuse": "misread",
    "wrong_write": "misread",
    "wrongful_refusal": "inaction",
    "give_up": "inaction",
    "no_action": "inaction",
}


class Forced:
    """The flawed agent with exactly one chosen flaw on one request."""

    name = "forced"

    def __init__(self, i: int, variant: str) -> None:
        self.flaws = {i: (MODE_OF[variant], variant)}

    def start(self, info):
        return FlawedEpisode(info, self.flaws, seed=0)


# ---- planted flaws and clean runs ---------------------------------------------------------------------------
def test_each_planted_variant_is_named_and_dominant():
    world, seen = small_world(), dict.fromkeys(MODE_OF, 0)
    for task in small_tasks():
        for i, req in enumerate(task.user_script.requests):
            if not any(a.request == i and a.name in WRITE_TOOLS for a in task.gold_actions):
                continue
            n = len(task.user_script.requests)
            for variant in sorted({v for m in MODES for v in _variants(m, i, req, n)}):
                traj = run_episode(world, task, Forced(i, variant), ScriptedUser())
                verdict = grade(world, task, traj)
                a = analyze(task, traj, verdict)
                assert not verdict.passed
                assert a.modes == [MODE_OF[variant]] and a.dominant == MODE_OF[variant], (task.id, variant, a)
                assert a.evidence[MODE_OF[variant]], (task.id, variant)
                seen[variant] += 1
    assert all(n >= 3 for n in seen.values()), seen


def test_oracle_runs_pass_and_show_no_mode_even_when_analyzed_as_failed():
    world = small_world()
    for task in small_tasks():
        traj = run_episode(world, task, OracleAgent(), ScriptedUser())
        verdict = grade(world, task, traj)
        assert verdict.passed, (task.id, verdict.failed_components)
        assert analyze(task, traj, verdict) == FailureAnalysis()
        forced = analyze(task, traj, verdict.model_copy(update={"passed": False}))
        assert forced.modes == [] and forced.dominant is None and forced.evidence == {}, (task.id, forced)
        assert forced.signature == [], (task.id, forced.signature)


def test_recovery_of_planted_modes_on_a_small_run():
    """The fast version of bench/bench_failure_modes.py: 60 tasks × 2 trials at 0.25 per mode."""
    world = small_world()
    agent = FlawedAgent(FlawConfig(rates=dict.fromkeys(MODES, 0.25), seed=11))
    rows = []
    for task in small_tasks()[:60]:
        for trial in range(2):
            traj = run_episode(world, task, agent, ScriptedUser(), trial=trial)
            verdict = grade(world, task, traj)
            a = analyze(task, traj, verdict)
            rows.append((agent.planted(task, trial), a.modes, a.dominant, verdict.passed))
    report = score(rows, FAILURE_MODES)
    for mode, s in report.per_mode.items():
        assert s.planted >= 5, (mode, s)
        assert s.precision >= 0.9 and s.recall >= 0.9, (mode, s)
    assert report.per_mode["inaction"].precision == report.per_mode["inaction"].recall == 1.0
    assert report.dominant_accuracy >= 0.9 and report.false_modes_on_clean == 0


# ---- hand-built trajectories, one per evidence rule ---------------------------------------------------------
@dataclass
class Cust:
    user_id: str
    email: str
    pending: str
    delivered: str
    methods: list[str]
    delivered_items: list[str]


@pytest.fixture(scope="module")
def cust() -> Cust:
    w = small_world()
    for uid, u in sorted(w.db.users.items()):
        by = {w.db.orders[o].status: o for o in sorted(u.orders)}
        if "pending" in by and "delivered" in by and len(u.payment_methods) >= 2:
            d = w.db.orders[by["delivered"]]
            return Cust(
                uid, u.email, by["pending"], by["delivered"], sorted(u.payment_methods), [i.item_id for i in d.items]
            )
    raise LookupError("no customer with a pending and a delivered order")


def _task(*requests: Request) -> Task:
    return Task(
        id="hand",
        world="gen-3",
        user_script=UserScript(goal="g", requests=list(requests)),
        provenance=Provenance(source="curated"),
    )


FAILED = Verdict(task_id="hand", passed=False, components=[ComponentResult(name="state", passed=False)])


def _analyze(steps, *requests: Request, verdict: Verdict = FAILED, termination: str = "user_stop"):
    traj = record(small_world(), "hand", steps).model_copy(update={"termination": termination})
    return analyze(_task(*requests), traj, verdict)


def _auth(c: Cust) -> list:
    return [("user", f"Hi, my email is {c.email}."), Call("find_user_id_by_email", {"email": c.email})]


def _cancel(c: Cust, order: str | None = None) -> Call:
    return Call("cancel_pending_order", {"order_id": order or c.pending, "reason": "no longer needed"})


def _ask(c: Cust, order: str | None = None) -> list:
    o = order or c.pending
    return [
        ("user", f"Please cancel order {o}, I no longer need it."),
        ("agent", f"To confirm, I will cancel order {o}, reason 'no longer needed'. Shall I proceed (yes/no)?"),
        ("user", "Yes, go ahead."),
    ]


def test_clean_confirmed_write_shows_no_mode(cust):
    a = _analyze([*_auth(cust), *_ask(cust), _cancel(cust), ("agent", f"Order {cust.pending} has been cancelled.")])
    assert a.modes == [] and a.dominant is None
    assert a.looked_complete


def test_confirmed_yes_without_write_is_plan_adherence(cust):
    a = _analyze([*_auth(cust), *_ask(cust), ("agent", "All set: your order has been cancelled.")])
    assert a.modes == ["plan_adherence"] and a.dominant == "plan_adherence"
    assert any("no write was attempted" in e for e in a.evidence["plan_adherence"])
    assert any("claims completion" in e for e in a.evidence["plan_adherence"])
    assert not a.looked_complete  # no write happened


def test_completion_claim_with_state_unchanged_is_plan_adherence(cust):
    a = _analyze([*_auth(cust), ("user", f"Cancel {cust.pending}."), ("agent", f"I have cancelled {cust.pending}.")])
    assert a.modes == ["plan_adherence"]
    # the same claim after the write changed that order is fine, even in a later turn
    ok = _analyze(
        [
            *_auth(cust),
            *_ask(cust),
            _cancel(cust),
            ("agent", "Done?"),
            ("user", "Thanks."),
            ("agent", f"To recap: order {cust.pending} has been cancelled."),
        ]
    )
    assert ok.modes == []


def test_write_before_authentication_is_plan_adherence(cust):
    a = _analyze([*_ask(cust), _cancel(cust), *_auth(cust), *_ask(cust), _cancel(cust)])
    assert a.modes == ["plan_adherence"]
    assert any("before authenticating" in e for e in a.evidence["plan_adherence"])
    assert (
        "policy_violation"
        in _analyze(
            [*_ask(cust), _cancel(cust)],
            verdict=Verdict(
                task_id="hand", passed=False, components=[ComponentResult(name="static.authorization", passed=False)]
            ),
        ).signature
    )


def test_write_without_confirmation_is_plan_adherence(cust):
    a = _analyze([*_auth(cust), ("user", f"Cancel order {cust.pending}, no longer needed."), _cancel(cust)])
    assert a.modes == ["plan_adherence"] and "without explicit confirmation" in a.evidence["plan_adherence"][0]
    # a 'yes' that answers a question about details, not a confirmation request, confirms nothing
    b = _analyze(
        [
            *_auth(cust),
            ("agent", "Which items would you like to keep?"),
            ("user", f"Yes, none: cancel {cust.pending}, no longer needed."),
            _cancel(cust),
        ]
    )
    assert b.modes == ["plan_adherence"]
    # one 'yes' authorises one write attempt: after a refused write, the next write needs a new one
    c = _analyze(
        [
            *_auth(cust),
            *_ask(cust, cust.delivered),
            _cancel(cust, cust.delivered),
            ("user", f"Then cancel {cust.pending} instead."),
            _cancel(cust),
        ]
    )
    assert c.modes == ["plan_adherence"] and "without explicit confirmation" in c.evidence["plan_adherence"][-1]


def test_invented_write_argument_is_invention(cust):
    addr = {
        "order_id": cust.pending,
        "address1": "12 Oak Road",
        "address2": "",
        "city": "Austin",
        "state": "TX",
        "country": "USA",
    }
    said = ("user", f"Ship order {cust.pending.lstrip('#')} to 12 oak road, Austin, TX, USA, zip 73301 please.")
    confirm = [("agent", "Shall I change the address of that order (yes/no)?"), ("user", "Yes.")]
    ok = _analyze([*_auth(cust), said, *confirm, Call("modify_pending_order_address", {**addr, "zip": "73301"})])
    assert ok.modes == []  # '#' and letter case normalised away
    bad = _analyze([*_auth(cust), said, *confirm, Call("modify_pending_order_address", {**addr, "zip": "7330"})])
    assert bad.modes == ["invention"] and "zip=7330" in bad.evidence["invention"][0]  # a prefix is not the token


def test_invented_value_in_a_refused_write_is_invention_and_errors_ground_nothing(cust):
    fake = "#W9999999"
    a = _analyze(
        [
            *_auth(cust),
            *_ask(cust),
            Call("get_order_details", {"order_id": fake}),
            _cancel(cust, fake),
            ("agent", "Your order has been cancelled."),
        ]
    )
    assert a.modes == ["invention"] and a.dominant == "invention"
    assert "empty_lookup_unrecovered" in a.signature and "tool_error_unrecovered" in a.signature


def test_stated_figures_need_a_source(cust):
    w = small_world()
    paid = w.db.orders[cust.pending].payment_history[0].amount
    base = [
        *_auth(cust),
        ("user", f"What did I pay for {cust.pending}?"),
        Call("get_order_details", {"order_id": cust.pending}),
    ]
    assert _analyze([*base, ("agent", f"You paid ${paid:,.2f} for it.")]).modes == []
    a = _analyze([*base, ("agent", "You paid $987654.32; tracking number 48213377901.")])
    assert a.modes == ["invention"] and len(a.evidence["invention"]) == 1
    assert "$" in a.evidence["invention"][0] and "48213377901" in a.evidence["invention"][0]


def test_write_against_the_shown_status_is_misread(cust):
    look = Call("get_order_details", {"order_id": cust.delivered})
    a = _analyze([*_auth(cust), look, *_ask(cust, cust.delivered), _cancel(cust, cust.delivered)])
    assert a.modes == ["misread"] and "'delivered'" in a.evidence["misread"][0]
    assert "policy_violation" not in a.signature  # the signature comes from the verdict, which here fails only state
    ret = Call(
        "return_delivered_order_items", {"order_id": cust.pending, "item_ids": [], "payment_method_id": cust.methods[0]}
    )
    b = _analyze(
        [
            *_auth(cust),
            Call("get_order_details", {"order_id": cust.pending}),
            Call("get_user_details", {"user_id": cust.user_id}),
            ret,
        ]
    )
    assert "misread" in b.modes


def test_refund_to_a_method_the_user_does_not_have_is_misread(cust):
    other = next(
        m for uid, u in sorted(small_world().db.users.items()) if uid != cust.user_id for m in sorted(u.payment_methods)
    )
    steps = [
        *_auth(cust),
        Call("get_user_details", {"user_id": cust.user_id}),
        Call("get_order_details", {"order_id": cust.delivered}),
        ("user", f"Return {cust.delivered_items[0]} and refund it to {other}."),
        ("agent", "Shall I return that item (yes/no)?"),
        ("user", "Yes."),
    ]
    ret = {"order_id": cust.delivered, "item_ids": cust.delivered_items[:1]}
    a = _analyze([*steps, Call("return_delivered_order_items", {**ret, "payment_method_id": other})])
    assert a.modes == ["misread"] and "did not list" in a.evidence["misread"][0]
    b = _analyze([*steps, Call("return_delivered_order_items", {**ret, "payment_method_id": "gift_card_0000001"})])
    assert b.modes == ["invention"]  # an id from nowhere is invented, not misread


def test_paying_with_a_gift_card_the_account_shows_short_is_misread():
    w = small_world()
    uid, card, oid = next(
        (uid, pid, oid)
        for uid, u in sorted(w.db.users.items())
        for pid, m in sorted(u.payment_methods.items())
        if m.source == "gift_card"
        for oid in sorted(u.orders)
        if w.db.orders[oid].status == "pending"
        and len(w.db.orders[oid].payment_history) == 1
        and w.db.orders[oid].payment_history[0].amount > (m.balance or 0.0)
    )
    email = w.db.users[uid].email
    steps = [
        ("user", f"Hi, my email is {email}."),
        Call("find_user_id_by_email", {"email": email}),
        Call("get_order_details", {"order_id": oid}),
        Call("get_user_details", {"user_id": uid}),
        ("user", f"Please pay order {oid} with {card}."),
        ("agent", f"To confirm, I will pay order {oid} with {card}. Shall I proceed (yes/no)?"),
        ("user", "Yes."),
    ]
    a = _analyze([*steps, Call("modify_pending_order_payment", {"order_id": oid, "payment_method_id": card})])
    assert a.modes == ["misread"] and "balance" in a.evidence["misread"][0]
    unread = [s for s in steps if not (isinstance(s, Call) and s.name == "get_user_details")]
    b = _analyze([*unread, Call("modify_pending_order_payment", {"order_id": oid, "payment_method_id": card})])
    assert "balance" not in " ".join(b.evidence.get("misread", []))  # a balance never shown cannot be misread


def test_refusal_stating_a_wrong_status_is_misread(cust):
    base = [*_auth(cust), ("user", f"Cancel {cust.pending}."), Call("get_order_details", {"order_id": cust.pending})]
    wrong = _analyze([*base, ("agent", f"I'm sorry, but order {cust.pending} is already 'delivered'.")])
    assert wrong.modes == ["misread"]
    right = _analyze([*base, ("agent", f"Order {cust.pending} is pending, and only delivered orders can be returned.")])
    assert right.modes == []


def test_claim_after_a_refused_grounded_write_is_misread(cust):
    # the delivered order was never looked up, so no shown status explains the refusal
    a = _analyze(
        [
            *_auth(cust),
            *_ask(cust, cust.delivered),
            _cancel(cust, cust.delivered),
            ("agent", f"Order {cust.delivered} has been cancelled."),
        ]
    )
    assert a.modes == ["misread"] and "refused" in a.evidence["misread"][0]


def test_signatures(cust):
    recovered = _analyze(
        [
            ("user", "Hi, I'm lost."),
            Call("find_user_id_by_email", {"email": "no@x.org"}),
            *_auth(cust),
            ("agent", "Found you."),
        ]
    )
    assert recovered.signature == []
    assert _analyze(_auth(cust), termination="turn_limit").signature == ["gave_up"]
    transfer = _analyze([*_auth(cust), Call("transfer_to_human_agents", {"summary": "wants a human"})])
    assert transfer.signature == ["transferred"]
    unhandled = _analyze(_auth(cust), Request(intent="cancel", utterance="u", order_id=cust.pending))
    assert unhandled.signature == ["gave_up"]
    policy = Verdict(
        task_id="hand", passed=False, components=[ComponentResult(name="static.policy_violation", passed=False)]
    )
    assert _analyze(_auth(cust), verdict=policy).signature == ["policy_violation"]


def test_looked_complete_needs_a_successful_write_and_no_final_error(cust):
    done = [*_auth(cust), *_ask(cust), _cancel(cust)]
    assert _analyze([*done, ("agent", "All set: it has been cancelled.")]).looked_complete
    assert not _analyze([*done, ("agent", "I'm sorry, I could not do that.")]).looked_complete
    tail_error = [*done, Call("get_order_details", {"order_id": "#W0"}), ("agent", "All set.")]
    assert not _analyze(tail_error).looked_complete


def test_dominant_is_the_earliest_evidence_with_a_fixed_tie_break():
    found = [Finding(9, "invention", "x"), Finding(4, "plan_adherence", "y"), Finding(4, "misread", "z")]
    assert dominant_mode(found) == "misread"
    assert dominant_mode([Finding(2, "plan_adherence", "a"), Finding(2, "invention", "b")]) == "invention"
    assert dominant_mode([]) is None


def test_passing_and_infrastructure_trials_get_an_empty_analysis(cust):
    traj = record(small_world(), "hand", [*_auth(cust), _cancel(cust)])
    assert analyze(_task(), traj, Verdict(task_id="hand", passed=True)) == FailureAnalysis()
    assert analyze(_task(), traj, Verdict(task_id="hand", passed=False, infra_error=True)) == FailureAnalysis()
    assert find_modes(build_timeline(traj))  # the evidence is there; a passing verdict just does not ask


def test_trajectory_without_a_world_log_gets_the_same_modes(cust):
    steps = [*_ask(cust), _cancel(cust), *_auth(cust), *_ask(cust), _cancel(cust, "#W1234567")]
    traj = record(small_world(), "hand", steps)
    bare = traj.model_copy(update={"world_log": [], "final_changed": {}, "final_hash": ""})
    assert (
        analyze(_task(), traj, FAILED).modes == analyze(_task(), bare, FAILED).modes == ["plan_adherence", "invention"]
    )


def test_provenance_normalisation():
    pool = EvidencePool()
    pool.add('{"order_id": "#W0123456", "amount": 53.550000000000004, "address1": "12  Oak   Road"}')
    pool.add("Use my card credit_card_7654321 please")
    assert pool.grounded("W0123456") and pool.grounded("#w0123456") and pool.grounded("12 oak road")
    assert pool.grounded(["credit_card_7654321", ""]) and not pool.grounded("credit_card_765432")
    assert not pool.grounded("0123456")  # part of the order id token, not a value of its own
    assert unsupported_figures("A refund of $53.55 to credit_card_7654321.", pool) == []
    assert unsupported_figures("A refund of -$53.56 for #W0123457.", pool) == ["$53.56", "#W0123457"]


def test_a_garbled_write_is_an_attempted_malformed_write_not_plan_adherence(cust):
    steps = [*_auth(cust), *_ask(cust), Call("cancel_pending_order", None), ("agent", "Something went wrong.")]
    traj = record(small_world(), "hand", steps)
    event = traj.world_log[-1]
    assert (event["kind"], event["ok"], event["error_category"]) == ("write", False, "malformed_arguments")
    bare = traj.model_copy(update={"world_log": [], "final_changed": {}, "final_hash": ""})
    for t in (traj, bare):
        a = analyze(_task(), t, FAILED)
        assert "plan_adherence" not in a.modes, a.evidence
        assert "malformed_write" in a.signature
    # the same conversation with no call at all still is plan adherence: agreed, then never attempted
    never = _analyze([*_auth(cust), *_ask(cust), ("agent", "Something went wrong.")])
    assert never.modes == ["plan_adherence"] and "malformed_write" not in never.signature
    # a garbled read is no write
    read = _analyze([*_auth(cust), Call("get_order_details", None), ("agent", "Hmm.")])
    assert "malformed_write" not in read.signature
