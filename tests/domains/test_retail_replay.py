"""τ²-bench loader and gold replay: every task replays, hand-checked end states, refusals, isolation, errors."""

from __future__ import annotations

import json
import shutil

import pytest

from pipeline.dataset.replay import replay_gold
from pipeline.digest import sha256_json
from pipeline.domains.retail.policy import POLICY_PATH, load_policy
from pipeline.domains.retail.schema import CANCEL_REASONS, ORDER_STATUSES, dump_record
from pipeline.domains.retail.state import WorldLoadError
from pipeline.domains.retail.tau2 import Tau2FormatError, convert_task
from pipeline.domains.retail.tools import TRANSFER_MESSAGE, WRITE_TOOLS
from pipeline.domains.retail.worlds import load_tau2_domain, replay_domain, write_replay

# Gold calls our tools refuse; each is one τ²-bench refuses too (item id passed as a product id, a wrong email,
# a wrong zip, an order id that does not exist, an exchange on a pending order, a gift card short of balance).
EXPECTED_FAILED = {
    "2": ["get_product_details"],
    "3": ["get_product_details"],
    "4": ["get_product_details"],
    "35": ["find_user_id_by_email"],
    "37": ["find_user_id_by_email"],
    "38": ["find_user_id_by_email"],
    "39": ["find_user_id_by_name_zip"],
    "46": ["get_order_details", "get_order_details"],
    "47": ["get_order_details", "get_order_details"],
    "54": ["find_user_id_by_email"],
    "55": ["find_user_id_by_email"],
    "64": ["exchange_delivered_order_items"],
    "67": ["find_user_id_by_name_zip", "find_user_id_by_name_zip"],
    "68": ["find_user_id_by_name_zip"],
    "105": ["exchange_delivered_order_items"],
}
MODIFY_ITEMS_TASKS = ["20", "21", "36", "37", "100"]


@pytest.fixture(scope="module")
def domain(tau2_dir):
    return load_tau2_domain(tau2_dir)


@pytest.fixture(scope="module")
def replayed(domain):
    return {line["task_id"]: line for line in replay_domain(domain)}


@pytest.fixture(scope="module")
def raw_db(tau2_dir):
    return json.loads((tau2_dir / "db.json").read_text())


def _gold(domain, task_id: str, tool: str) -> dict:
    return next(a.arguments for a in domain.task(task_id).gold_actions if a.name == tool)


# ---- loading ---------------------------------------------------------------------------------------------------
def test_loads_all_tasks_splits_and_policy(domain, tau2_dir):
    assert domain.world.name == "tau2_retail"
    assert len(domain.tasks) == 114
    assert {k: len(v) for k, v in domain.splits.items()} == {"train": 74, "test": 40, "base": 114}
    assert domain.policy == (tau2_dir / "policy.md").read_text() == domain.world.policy
    assert all(t.world == "tau2_retail" and t.provenance.source == "tau2" for t in domain.tasks)


def test_every_task_has_its_customer(domain):
    """Each task gets a customer, and every order or user its gold actions name belongs to that customer."""
    db = domain.world.db
    for task in domain.tasks:
        assert task.customer_user_id in db.users, task.id
        for action in task.gold_actions:
            order = db.orders.get(action.arguments.get("order_id", ""))
            if order is not None:
                assert order.user_id == task.customer_user_id, (task.id, action)
            if "user_id" in action.arguments:
                assert action.arguments["user_id"] == task.customer_user_id, (task.id, action)
    # tasks without a revealing gold action: inferred from the stated name + zip or user id
    assert domain.task("24").customer_user_id == "sofia_hernandez_5364"
    assert domain.task("50").customer_user_id == "chen_smith_8425"
    assert domain.task("57").customer_user_id == "ivan_hernandez_6923"


def test_user_script_fields(domain, tau2_dir):
    raw = {t["id"]: t for t in json.loads((tau2_dir / "tasks.json").read_text())}
    t0 = domain.task("0")
    ins = raw["0"]["user_scenario"]["instructions"]
    assert t0.user_script.goal == ins["reason_for_call"]
    for part in ins.values():
        assert part in t0.user_script.instructions
    assert (t0.user_script.known.first_name, t0.user_script.known.last_name, t0.user_script.known.zip) == (
        "Yusuf",
        "Rossi",
        "19122",
    )
    assert t0.user_script.messes.forgot_email
    assert [a.name for a in t0.gold_actions][-1] == "exchange_delivered_order_items"
    t36 = domain.task("36")
    assert t36.user_script.known.email == "daikisanchez1479@example.com"  # the (wrong) one the customer states
    assert not t36.user_script.messes.forgot_email
    assert domain.task("39").user_script.known.zip == "32169"  # two zips mentioned: the one on file
    with_assertions = [t for t in domain.tasks if raw[t.id]["evaluation_criteria"].get("nl_assertions")]
    assert with_assertions and all(
        t.rubric == raw[t.id]["evaluation_criteria"]["nl_assertions"] for t in with_assertions
    )


def test_convert_task_without_world():
    raw = {
        "id": "x1",
        "user_scenario": {"persona": "Calm.", "instructions": "Change your address. You are jo_doe_1234."},
        "evaluation_criteria": {"actions": [{"name": "get_user_details", "arguments": {"user_id": "jo_doe_1234"}}]},
    }
    task = convert_task(raw)
    assert task.customer_user_id == "jo_doe_1234"
    assert task.world == "tau2_retail" and task.rubric == []
    assert task.user_script.goal.startswith("Change your address")
    assert task.user_script.instructions.startswith("Persona:\nCalm.")
    assert convert_task({**raw, "evaluation_criteria": None}).gold_actions == []


# ---- replay ----------------------------------------------------------------------------------------------------
def test_all_tasks_replay(replayed, domain):
    assert list(replayed) == [t.id for t in domain.tasks]
    for line in replayed.values():
        assert set(line) == {"task_id", "changed", "failed_actions"}
        assert set(line["changed"]) == {"orders", "users", "products"}
    failed = {tid: line["failed_actions"] for tid, line in replayed.items() if line["failed_actions"]}
    assert failed == EXPECTED_FAILED
    refused_writes = {tid for tid, names in failed.items() if any(n in WRITE_TOOLS for n in names)}
    assert refused_writes == {"64", "105"}


def test_refusals_are_for_the_right_reason(domain):
    categories = {}
    for tid in EXPECTED_FAILED:
        session = replay_gold(domain.world, domain.task(tid))
        categories[tid] = {e.error_category for e in session.log if not e.ok}
    assert all(categories[t] == {"not_found"} for t in EXPECTED_FAILED if t not in ("64", "105"))
    assert categories["64"] == categories["105"] == {"precondition"}
    s64 = replay_gold(domain.world, domain.task("64"))
    assert "pending" in next(e.error for e in s64.log if not e.ok)
    s105 = replay_gold(domain.world, domain.task("105"))
    assert "gift card" in next(e.error for e in s105.log if not e.ok)


def test_changed_holds_only_differing_records(replayed, raw_db, domain):
    n_changed = 0
    for tid, line in replayed.items():
        written = set()
        for event in replay_gold(domain.world, domain.task(tid)).log:
            if event.ok:
                written |= {tuple(t) for t in event.touched}
        for table, records in line["changed"].items():
            for key, record in records.items():
                assert record != raw_db[table][key], (tid, table, key)
                assert (table, key) in written, (tid, table, key)
                n_changed += 1
    assert n_changed > 100
    assert replayed["67"]["changed"] == {"orders": {}, "users": {}, "products": {}}  # look-ups only


def test_cancel_refunds_gift_card_at_once(replayed, raw_db):
    order = replayed["88"]["changed"]["orders"]["#W8835847"]
    assert order["status"] == "cancelled" and order["cancel_reason"] == "ordered by mistake"
    assert order["payment_history"] == raw_db["orders"]["#W8835847"]["payment_history"] + [
        {"transaction_type": "refund", "amount": 689.97, "payment_method_id": "gift_card_2652153"}
    ]
    user_id = raw_db["orders"]["#W8835847"]["user_id"]
    card = replayed["88"]["changed"]["users"][user_id]["payment_methods"]["gift_card_2652153"]
    assert card["balance"] == round(19.0 + 689.97, 2)
    # two cancels on one gift card in task 32: both refunds credited
    users = replayed["32"]["changed"]["users"]
    (user,) = users.values()
    assert user["payment_methods"]["gift_card_7711863"]["balance"] == round(round(44.0 + 109.27, 2) + 397.26, 2)


def test_exchange_sorts_items_and_prices_the_difference(replayed, raw_db, domain):
    args = _gold(domain, "0", "exchange_delivered_order_items")
    order = replayed["0"]["changed"]["orders"][args["order_id"]]
    base = raw_db["orders"][args["order_id"]]
    assert order["status"] == "exchange requested"
    assert order["exchange_items"] == sorted(args["item_ids"])
    assert order["exchange_new_items"] == sorted(args["new_item_ids"])
    assert order["exchange_payment_method_id"] == args["payment_method_id"]
    old_prices = {i["item_id"]: (i["product_id"], i["price"]) for i in base["items"]}
    diff = 0.0
    for old, new in zip(args["item_ids"], args["new_item_ids"], strict=True):
        product_id, price = old_prices[old]
        diff += raw_db["products"][product_id]["variants"][new]["price"] - price
    assert order["exchange_price_difference"] == round(diff, 2)
    assert order["items"] == base["items"] and order["payment_history"] == base["payment_history"]
    assert replayed["0"]["changed"]["users"] == {}


@pytest.mark.parametrize("task_id", MODIFY_ITEMS_TASKS)
def test_modify_items_gives_each_item_its_own_variant(task_id, replayed, raw_db, domain):
    args = _gold(domain, task_id, "modify_pending_order_items")
    order = replayed[task_id]["changed"]["orders"][args["order_id"]]
    assert order["status"] == "pending (item modified)"
    items = {i["item_id"]: i for i in order["items"]}
    variants = []
    for new in args["new_item_ids"]:
        variant = raw_db["products"][items[new]["product_id"]]["variants"][new]
        assert (items[new]["price"], items[new]["options"]) == (variant["price"], variant["options"])
        variants.append(variant)
    # the upstream defect (every item gets the last variant's price/options) would give a different state here
    assert len({(v["price"], json.dumps(v["options"])) for v in variants}) > 1
    base_items = {i["item_id"]: i for i in raw_db["orders"][args["order_id"]]["items"]}
    diff = sum(
        items[n]["price"] - base_items[o]["price"] for o, n in zip(args["item_ids"], args["new_item_ids"], strict=True)
    )
    extra = order["payment_history"][len(raw_db["orders"][args["order_id"]]["payment_history"]) :]
    assert len(extra) == 1 and extra[0]["payment_method_id"] == args["payment_method_id"]
    assert extra[0]["transaction_type"] == ("payment" if diff > 0 else "refund")
    assert extra[0]["amount"] == abs(diff)  # unrounded, summed in call order: exactly τ²-bench's float


def test_gift_card_pays_item_difference(replayed, raw_db):
    """Task 20 pays the modify-items difference with a gift card: its balance goes down by exactly that."""
    order = replayed["20"]["changed"]["orders"]["#W9911714"]
    paid = order["payment_history"][-1]["amount"]
    user_id = order["user_id"]
    before = raw_db["users"][user_id]["payment_methods"]["gift_card_4332117"]["balance"]
    after = replayed["20"]["changed"]["users"][user_id]["payment_methods"]["gift_card_4332117"]["balance"]
    assert after == round(before - paid, 2)


def test_replay_is_deterministic_and_base_untouched(tau2_dir, domain, raw_db, tmp_path):
    before = sha256_json(domain.world.to_dict())
    first = replay_domain(domain)
    second = replay_domain(domain)
    assert first == second
    assert sha256_json(domain.world.to_dict()) == before == domain.world.fingerprint
    assert domain.world.to_dict() == raw_db
    a, b = tmp_path / "a.jsonl", tmp_path / "b" / "b.jsonl"
    assert write_replay(tau2_dir, a) == first
    write_replay(domain, b)
    assert a.read_bytes() == b.read_bytes()
    assert [json.loads(line) for line in a.read_text().splitlines()] == first
    assert sorted(p.name for p in tmp_path.iterdir()) == ["a.jsonl", "b"]  # no temp file left behind


def test_write_replay_leaves_old_file_on_failure(tmp_path):
    out = tmp_path / "out.jsonl"
    out.write_text("previous\n")
    with pytest.raises(Tau2FormatError):
        write_replay(tmp_path / "missing", out)
    assert out.read_text() == "previous\n"


# ---- loader errors name the file (and field) --------------------------------------------------------------------
@pytest.fixture
def domain_copy(tau2_dir, tmp_path):
    d = tmp_path / "dom"
    d.mkdir()
    (d / "db.json").symlink_to(tau2_dir / "db.json")
    shutil.copy(tau2_dir / "policy.md", d / "policy.md")
    tasks = json.loads((tau2_dir / "tasks.json").read_text())[:3]
    (d / "tasks.json").write_text(json.dumps(tasks))
    return d


def test_small_copy_loads(domain_copy):
    dom = load_tau2_domain(domain_copy, name="copy")
    assert dom.world.name == "copy" and [t.id for t in dom.tasks] == ["0", "1", "2"] and dom.splits == {}


@pytest.mark.parametrize("missing", ["tasks.json", "policy.md", "db.json"])
def test_missing_file_named(domain_copy, missing):
    (domain_copy / missing).unlink()
    with pytest.raises(WorldLoadError, match=missing.replace(".", r"\.")):
        load_tau2_domain(domain_copy)


def test_invalid_json_named(domain_copy):
    (domain_copy / "tasks.json").write_text("[{")
    with pytest.raises(Tau2FormatError, match=r"tasks\.json: invalid JSON"):
        load_tau2_domain(domain_copy)


def test_invalid_task_names_file_and_field(domain_copy):
    tasks = json.loads((domain_copy / "tasks.json").read_text())
    del tasks[1]["user_scenario"]["instructions"]["reason_for_call"]
    (domain_copy / "tasks.json").write_text(json.dumps(tasks))
    with pytest.raises(Tau2FormatError, match=r"tasks\.json: task \[1\] \(id '1'\): field user_scenario\.instructions"):
        load_tau2_domain(domain_copy)
    tasks[1] = {"id": "1"}
    (domain_copy / "tasks.json").write_text(json.dumps(tasks))
    with pytest.raises(Tau2FormatError, match=r"field user_scenario: Field required"):
        load_tau2_domain(domain_copy)


def test_bad_splits_named(domain_copy):
    (domain_copy / "split_tasks.json").write_text(json.dumps({"test": ["0", "999"]}))
    with pytest.raises(Tau2FormatError, match=r"split_tasks\.json: field test: unknown task ids \['999'\]"):
        load_tau2_domain(domain_copy)


def test_bad_db_names_file_and_field(domain_copy, tau2_dir):
    db = json.loads((tau2_dir / "db.json").read_text())
    first = next(iter(db["orders"]))
    db["orders"][first]["status"] = "lost"
    (domain_copy / "db.json").unlink()
    (domain_copy / "db.json").write_text(json.dumps(db))
    with pytest.raises(WorldLoadError, match=rf"db\.json: field orders\.{first}\.status"):
        load_tau2_domain(domain_copy)


# ---- our policy document ---------------------------------------------------------------------------------------
def test_policy_document_states_the_rules_the_tools_enforce():
    text = load_policy()
    assert POLICY_PATH.name == "policy.md" and text == POLICY_PATH.read_text()
    assert TRANSFER_MESSAGE in text
    assert all(f'"{reason}"' in text for reason in CANCEL_REASONS)
    assert all(f"`{status}`" in text for status in ORDER_STATUSES)
    for rule in ("email", "zip code", '"yes"', "one tool call at a time", "only once per order", "gift card"):
        assert rule in text, rule


def test_dump_matches_base_for_unchanged_records(domain, raw_db):
    """The `changed` records use τ²-bench field names: an untouched record dumps exactly as db.json has it."""
    order_id = next(iter(raw_db["orders"]))
    assert dump_record(domain.world.db.orders[order_id]) == raw_db["orders"][order_id]


def test_cancel_after_payment_change_refunds_only_the_new_method(domain):
    """Not in any gold sequence, so not pinned by τ²-bench: each method is refunded what it still holds."""
    from pipeline.domains.retail.tools import execute

    order_id = "#W4923227"  # task 40's order: one credit-card payment of 321.18
    session = domain.world.session(authenticated_user_id=domain.world.db.orders[order_id].user_id)
    assert execute(
        session, "modify_pending_order_payment", {"order_id": order_id, "payment_method_id": "credit_card_8897086"}
    ).ok
    assert execute(session, "cancel_pending_order", {"order_id": order_id, "reason": "no longer needed"}).ok
    history = [(p.transaction_type, p.amount, p.payment_method_id) for p in session.order(order_id).payment_history]
    assert history == [
        ("payment", 321.18, "credit_card_8554680"),
        ("payment", 321.18, "credit_card_8897086"),
        ("refund", 321.18, "credit_card_8554680"),
        ("refund", 321.18, "credit_card_8897086"),
    ]
