import json

import pytest

from pipeline.dataset import Action, Provenance, Task, TaskFileError, UserScript, read_tasks, write_tasks


def _task(i: int) -> Task:
    return Task(
        id=f"t{i}",
        world="gen-0",
        user_script=UserScript(goal="cancel an order"),
        gold_actions=[Action(name="find_user_id_by_email", arguments={"email": "a@example.com"})],
        provenance=Provenance(source="synthesized", template="cancel"),
    )


def test_round_trip(tmp_path):
    path = tmp_path / "tasks.jsonl"
    assert write_tasks(path, [_task(1), _task(2)]) == 2
    back = read_tasks(path)
    assert [t.id for t in back] == ["t1", "t2"]
    assert back[0] == _task(1)


def test_error_names_line_and_field(tmp_path):
    path = tmp_path / "tasks.jsonl"
    good = _task(1).model_dump_json()
    bad = json.loads(_task(2).model_dump_json())
    bad["provenance"]["source"] = "made-up"
    path.write_text(good + "\n" + json.dumps(bad) + "\n")
    with pytest.raises(TaskFileError, match=r"tasks.jsonl:2: field provenance.source"):
        read_tasks(path)


def test_unknown_field_rejected(tmp_path):
    path = tmp_path / "tasks.jsonl"
    bad = json.loads(_task(1).model_dump_json())
    bad["user_script"]["mood"] = "grumpy"
    path.write_text(json.dumps(bad) + "\n")
    with pytest.raises(TaskFileError, match=r":1: field user_script.mood"):
        read_tasks(path)


def test_bad_json_and_duplicates_and_missing(tmp_path):
    path = tmp_path / "tasks.jsonl"
    path.write_text(_task(1).model_dump_json() + "\n{not json\n")
    with pytest.raises(TaskFileError, match=r":2: invalid JSON"):
        read_tasks(path)
    path.write_text(_task(1).model_dump_json() + "\n\n" + _task(1).model_dump_json() + "\n")
    with pytest.raises(TaskFileError, match=r":3: field id: duplicate task id 't1' \(first on line 1\)"):
        read_tasks(path)
    with pytest.raises(TaskFileError, match="file not found"):
        read_tasks(tmp_path / "nope.jsonl")


def test_check_discriminator(tmp_path):
    data = json.loads(_task(1).model_dump_json())
    data["checks"] = [{"kind": "order_status", "order_id": "#W1", "status": "cancelled"}, {"kind": "no_writes"}]
    task = Task.model_validate(data)
    assert [c.kind for c in task.checks] == ["order_status", "no_writes"]
    data["checks"] = [{"kind": "vibes"}]
    path = tmp_path / "t.jsonl"
    path.write_text(json.dumps(data) + "\n")
    with pytest.raises(TaskFileError, match=r":1: field checks.0"):
        read_tasks(path)
