"""Coverage of a world model by a task set: every write tool carried out, every refusal group asked for; the
questions, requests no tool serves, conditional requests (per pair of heading write and sibling, '<tool>|<other>',
the branch taken: 'holds' or 'otherwise') and tasks whose record is left unsaid (the agent must ask first).

A generic task records each refused request's reason, the tool's own words (`pipeline.explore.kit.REFUSE_NOTE`),
so a refusal is matched to its group by the group's message pattern.
"""

from __future__ import annotations

from collections.abc import Iterable

from pipeline.dataset import Task, branches
from pipeline.explore.kit import pattern_regex, refusal_of
from pipeline.explore.model import WorldModel

ASKED = ("precondition", "unauthorized")
"""The refusal categories tasks ask for (a made-up id's 'not_found' is no request a customer makes)."""


def coverage(model: WorldModel, tasks: Iterable[Task], unreproduced: dict[str, str] | None = None) -> dict:
    """Per write tool: tasks carrying it out, and per refusal group the tasks asking for it; the totals; the tasks
    a top-up aimed at a gap ('top_up': gap → task id) and the gaps it could not fill, with why (`unreproduced`,
    from `pipeline.authoring.templates.GenerationResult`)."""
    done: dict[str, int] = dict.fromkeys(model.writes, 0)
    refused = {w: {g.name: 0 for g in m.refusals if g.category in ASKED} for w, m in model.writes.items()}
    regexes = {w: [(g.name, pattern_regex(g.pattern)) for g in m.refusals if g.category in ASKED]
               for w, m in model.writes.items()}  # fmt: skip
    kinds = {"question": 0, "unservable": 0}
    conditional: dict[str, dict[str, int]] = {}
    underspecified = 0
    topped: dict[str, str] = {}
    for task in tasks:
        if "top_up" in task.provenance.dials:
            topped[str(task.provenance.dials["top_up"])] = task.id
        underspecified += bool(task.provenance.dials.get("underspecified"))
        for i, req in enumerate(task.user_script.requests):
            pair = branches(req.intent)
            if pair is None:
                continue
            taken = next((a.name for a in task.gold_actions if a.request == i and a.name in pair), None)
            cell = conditional.setdefault("|".join(pair), {"holds": 0, "otherwise": 0})
            cell["holds" if taken == pair[0] else "otherwise"] += 1
        for action in task.gold_actions:
            if action.name in done:
                done[action.name] += 1
        reasons = iter(refusal_of(task.user_script.goal))
        for req in task.user_script.requests:
            kind = req.intent.partition(":")[0] if ":" in req.intent else None
            if branches(req.intent) is not None:
                continue
            if kind in kinds:
                kinds[kind] += 1
                if kind == "unservable":
                    next(reasons, "")
                continue
            if req.expect != "refused" or req.intent not in regexes:
                continue
            reason = next(reasons, "")
            group = next((name for name, rx in regexes[req.intent] if rx.match(reason)), None)
            if group is not None:
                refused[req.intent][group] += 1
    groups = [(w, g) for w, gs in refused.items() for g in gs]
    return {
        "writes": {w: {"done": n, "refusals": refused[w]} for w, n in done.items()},
        "writes_covered": f"{sum(n > 0 for n in done.values())}/{len(done)}",
        "refusals_covered": f"{sum(refused[w][g] > 0 for w, g in groups)}/{len(groups)}",
        "questions": kinds["question"],
        "unservable": kinds["unservable"],
        "conditional": conditional,
        "underspecified": underspecified,
        "unexplored": sorted(model.unexplored),
        "top_up": topped,
        "unreproduced": dict(unreproduced or {}),
    }
