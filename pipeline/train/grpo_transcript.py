"""One GRPO episode as the token stream the policy was prompted with and sampled, in any chat format.

Token in, token out: turn t's prompt is turn t-1's prompt, the ids the policy sampled, and the tokens the format
renders for what came after (the customer's and the tools' messages, the next assistant header). So every
sampled token is trained on in exactly the context it was sampled in, and its sampling logprob (what TRL's
importance-sampling correction compares with the trainer's) is a logprob of the training sequence.

The text after an assistant turn is found from the format's own rendering. For the codec and prefix-stable templates
(Qwen2.5, Llama 3.1) the conversation up to and including that turn, cut after its end-of-turn token, is a prefix
of the rendering of the conversation that follows, and the rest is that text. A template that re-renders earlier
turns (Qwen3 drops the thinking of turns before the last customer message) gives no such prefix; the turn is then
marked in its content and found in the new rendering, and what follows its end-of-turn tokens is the text added.
The stream itself is never re-rendered: it keeps every turn as sampled, thinking included (what TRL's own
prefix-preserving `qwen3_training` template renders), so a re-rendering template's episode trains on the context
the policy was really given, which from the second customer message on differs from the prompt evaluation
renders (that drops the earlier thinking).
"""

from __future__ import annotations

import re
from collections.abc import Mapping, Sequence
from typing import Any

from pipeline.formats import ChatFormat, ChatFormatError
from pipeline.rollout import Message

MARK = "<<agentloop:turn>>"  # appended to a turn's content to find it in a re-rendered conversation


def turn_end(text: str, stops: Sequence[str]) -> int:
    """Length of an assistant turn's text up to and including its last end-of-turn token."""
    ends = [text.rfind(s) + len(s) for s in stops if s and s in text]
    return max(ends) if ends else len(text)


class Transcript:
    """The stream: `ids` (prompt then completion), and per completion token a mask and a sampling logprob.

    Completion tokens the policy sampled have mask 1 and their logprob; the rest (user and tool messages,
    headers, an end-of-turn token added where the policy hit its token limit) mask 0 and logprob 0.0.
    """

    def __init__(
        self,
        fmt: ChatFormat,
        tokenizer: Any,
        tools: Sequence[Mapping[str, Any]],
        policy: str | None,
        stop_ids: set[int],
        end_id: int,
    ) -> None:
        self.fmt, self.tokenizer, self.tools, self.policy = fmt, tokenizer, tools, policy
        self.stop_ids, self.end_id = stop_ids, end_id
        self.stops = [tokenizer.convert_ids_to_tokens(i) for i in sorted(stop_ids)]
        self.ids: list[int] = []
        self.prompt_len = 0
        self.mask: list[int] = []
        self.logprobs: list[float] = []
        self._said: int | None = None  # index of the last assistant message in the stream

    @property
    def completion(self) -> list[int]:
        return self.ids[self.prompt_len :]

    def _render(self, messages: Sequence[Message], generation: bool) -> str:
        return self.fmt.render(messages, self.tools, self.policy, self.tokenizer, add_generation_prompt=generation)

    def prompt(self, messages: Sequence[Message]) -> list[int]:
        """The stream extended with what follows the last sampled turn: the prompt of the next one."""
        if not self.ids:
            self.ids = list(self.fmt.prompt_ids(messages, self.tools, self.policy, self.tokenizer))
            self.prompt_len = len(self.ids)
            return list(self.ids)
        said = self._said
        if said is None or said >= len(messages) or messages[said].role != "assistant":
            raise ValueError("Transcript.prompt: messages do not extend the conversation the stream was built from")
        env = list(self.tokenizer(self._after(messages, said), add_special_tokens=False)["input_ids"])
        self._extend(env, [0] * len(env), [0.0] * len(env))
        return list(self.ids)

    def _after(self, messages: Sequence[Message], said: int) -> str:
        """The text the format renders after assistant turn `said`, up to the next generation prompt."""
        before = self._render(messages[:said], True)
        upto = self._render(messages[: said + 1], False)
        full = self._render(messages, True)
        end = len(before) + turn_end(upto[len(before) :], self.stops)
        if upto.startswith(before) and full.startswith(upto[:end]):
            return full[end:]
        return self._after_rerendered(messages, said, full)

    def _after_rerendered(self, messages: Sequence[Message], said: int, full: str) -> str:
        """`_after` for a template that re-renders earlier turns: the turn is marked and found in the new
        rendering; the text after as many end-of-turn tokens as the turn renders with is what was added."""
        turn = messages[said]
        marked = [
            *messages[:said],
            turn.model_copy(update={"content": (turn.content or "") + MARK}),
            *messages[said + 1 :],
        ]
        upto = self._render(marked[: said + 1], False)
        now = self._render(marked, True)
        stops = re.compile("|".join(re.escape(s) for s in self.stops if s))
        if upto.count(MARK) == 1 and now.count(MARK) == 1:
            ends = len(stops.findall(upto, upto.index(MARK)))
            found = [m.end() for m in stops.finditer(now, now.index(MARK))]
            if ends and len(found) >= ends and full.endswith(now[found[ends - 1] :]):
                return now[found[ends - 1] :]
        raise ChatFormatError(
            f"format {self.fmt.name!r}: assistant turn {said} cannot be found in the rendering of the conversation"
            " that follows it, so the customer's and tools' tokens after it cannot be told apart"
        )

    def sampled(self, ids: Sequence[int], logprobs: Sequence[float], message_index: int) -> None:
        """Record one assistant turn: the sampled ids and their logprobs (one each), at `message_index`."""
        if len(ids) != len(logprobs):
            raise ValueError(f"{len(ids)} sampled ids but {len(logprobs)} logprobs")
        self._extend(list(ids), [1] * len(ids), [float(x) for x in logprobs])
        if not ids or ids[-1] not in self.stop_ids:  # the turn was cut: its end-of-turn token is not the policy's
            self._extend([self.end_id], [0], [0.0])
        self._said = message_index

    def drop_after(self, length: int) -> None:
        """Forget the stream past `length` tokens (a prompt that will not be answered: the episode ends there)."""
        cut = max(length, self.prompt_len) - self.prompt_len
        self.ids = self.ids[: max(length, self.prompt_len)]
        self.mask, self.logprobs = self.mask[:cut], self.logprobs[:cut]

    def _extend(self, ids: list[int], mask: list[int], logprobs: list[float]) -> None:
        self.ids += ids
        self.mask += mask
        self.logprobs += logprobs
