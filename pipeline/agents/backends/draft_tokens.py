"""Draft tokens for draft-and-verify decoding: guesses of what a reply will say next, copied from text already seen.

A tool-using agent's replies repeat what it has read (ids, emails, item names from tool outputs) and what it has
said before (the same phrasings and call skeletons every episode). So the next few tokens are often a copy: of
the conversation itself, after the last `ORDER` tokens (the most recent earlier occurrence), or else of a
reply generated earlier by the same decoder with the same last `ORDER` tokens. The decoder runs the drafts
through the model in one pass with the token before them and keeps those the episode's own sampling would have
drawn anyway (`pipeline.agents.backends.hf_batch`), so drafts change how fast a reply comes, never which tokens it has.
"""

from __future__ import annotations

ORDER = 3
"""Tokens a draft is keyed on. With earlier replies as the fallback, the embedded baseline's replies in flight carried
2.24 drawn tokens a pass (80 trials; docs/experiments.md, 2026-12-04)."""
MAX_REMEMBERED = 200_000
"""Keys of earlier replies kept; the table starts over past that (a decoder serving a very long run)."""


class SeenText:
    """One reply's context (its prompt, then the tokens drawn so far), indexed by every `ORDER`-token key."""

    def __init__(self, ids: list[int]) -> None:
        self.ids: list[int] = []
        self.after: dict[tuple[int, ...], int] = {}  # key -> position just after its latest occurrence
        self.extend(ids)

    def extend(self, tokens: list[int]) -> None:
        ids = self.ids
        for token in tokens:
            if len(ids) >= ORDER:
                self.after[tuple(ids[-ORDER:])] = len(ids)
            ids.append(token)

    def copy(self, limit: int) -> list[int]:
        """Up to `limit` tokens that followed the latest earlier occurrence of the last `ORDER` tokens."""
        if len(self.ids) < ORDER:
            return []
        at = self.after.get(tuple(self.ids[-ORDER:]))
        return [] if at is None else self.ids[at : at + limit]


class Drafter:
    """Drafts for the replies of one decoder: copies from each reply's context, else from earlier replies."""

    def __init__(self, tokens: int) -> None:
        self.tokens = tokens
        self.earlier: dict[tuple[int, ...], list[int]] = {}

    def draft(self, seen: SeenText, limit: int) -> list[int]:
        """At most `min(self.tokens, limit)` draft tokens to follow `seen`."""
        limit = min(self.tokens, limit)
        if limit <= 0 or len(seen.ids) < ORDER:
            return []
        return seen.copy(limit) or self.earlier.get(tuple(seen.ids[-ORDER:]), [])[:limit]

    def learn(self, seen: SeenText, start: int) -> None:
        """Remember a finished reply: `seen.ids[start:]` are its tokens, keyed by the tokens before each."""
        if self.tokens <= 0:
            return
        if len(self.earlier) > MAX_REMEMBERED:
            self.earlier.clear()
        ids = seen.ids
        for i in range(max(start, ORDER), len(ids)):
            self.earlier[tuple(ids[i - ORDER : i])] = ids[i : i + self.tokens]
