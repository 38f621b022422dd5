"""Drafts are copies of text already seen: the conversation after its last tokens, else an earlier reply."""

from __future__ import annotations

from pipeline.agents.backends.draft_tokens import ORDER, Drafter, SeenText


def test_a_draft_copies_what_followed_the_latest_earlier_occurrence():
    seen = SeenText([1, 2, 3, 4, 5, 9, 1, 2, 3, 6, 7, 8, 1, 2])
    seen.extend([3])  # the last three tokens, 1 2 3, occurred twice before: the later one was followed by 6 7 8
    assert seen.copy(4) == [6, 7, 8, 1]
    assert seen.copy(2) == [6, 7]
    assert SeenText([1, 2, 3]).copy(4) == []  # no earlier occurrence
    assert SeenText([1, 2]).copy(4) == []  # shorter than a key


def test_the_drafter_falls_back_to_earlier_replies_and_respects_its_limits():
    drafter = Drafter(tokens=3)
    reply = SeenText([50, 51, 52, 60, 61, 62, 63, 64])
    drafter.learn(reply, start=3)  # the reply is 60..64, after the prompt 50 51 52
    fresh = SeenText([70, 50, 51, 52])  # nothing to copy in its own context
    assert fresh.copy(3) == []
    assert drafter.draft(fresh, limit=8) == [60, 61, 62]  # the drafter's own width bounds it
    assert drafter.draft(fresh, limit=2) == [60, 61]  # so does the room the reply has left
    assert drafter.draft(SeenText([1, 2, 3]), limit=8) == []
    own = SeenText([50, 51, 52, 7, 50, 51, 52])
    assert drafter.draft(own, limit=8) == [7, 50, 51]  # the conversation itself comes first
    off = Drafter(tokens=0)
    off.learn(reply, start=3)
    assert off.draft(fresh, limit=8) == [] and not off.earlier
    assert ORDER == 3


def test_an_extended_index_is_the_one_built_from_scratch():
    ids = [5, 1, 2, 3, 9, 1, 2, 3, 4, 5, 1, 2, 3, 9, 9, 1, 2]
    for cut in range(len(ids) + 1):
        grown = SeenText(ids[:cut])
        grown.extend(ids[cut:])
        fresh = SeenText(ids)
        assert grown.ids == fresh.ids and grown.after == fresh.after
