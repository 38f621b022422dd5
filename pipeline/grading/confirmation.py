"""Did the customer say yes? A reading of one reply to a confirmation request: yes, no, or unclear.

Customers, and the language models that play them, rarely answer "yes" and nothing else: "Sounds good, please
do that", "Absolutely, go ahead", "Yes please — the visa one". A keyword list at the start of the reply fails
those and lets through "Yes, but change the size first". The reading here is structural instead:

- the reply is split into sentences (and dash-separated parts);
- a sentence *consents* when it opens with an affirmative (yes, sure, sounds good, that works, I'm fine with
  that, please proceed, an action imperative like "cancel it") or holds a consent phrase anywhere
  ("… please go ahead");
- a decline or negation (no, don't, not right, I changed my mind), a condition or correction (but, unless,
  instead, actually, first, wait), a counter-question, or a hedge (maybe, let me think) keeps it from being a
  yes; benign negatives ("no problem", "why not") are not negations;
- a compliance word followed by an answer to some other question ("Of course. My email is …") is unclear.

"unclear" is for the judge to settle when one is configured (`check_confirmation`); without one it counts as
not confirmed. The labelled corpus in tests/data/confirmation_replies.jsonl is what the reading is held to.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from typing import Literal

Decision = Literal["yes", "no", "unclear"]


@dataclass(frozen=True)
class Reading:
    """How one reply reads as an answer to a confirmation request, and the rule that decided it."""

    decision: Decision
    why: str

    @property
    def confirmed(self) -> bool:
        return self.decision == "yes"


def _words(*alternatives: str) -> str:
    return "(?:" + "|".join(alternatives) + ")"


_TOKENS = re.compile(r"#{3}[A-Z_-]+#{3}")  # ###STOP### and the other simulator signals
_BENIGN = re.compile(
    r"\b(?:no problem|not a problem|no worries|no rush|no hurry|no need to worry|why not|no doubt|"
    r"no longer need(?:ed)?)\b",
    re.IGNORECASE,
)
_SPLIT = re.compile(r"(?<=[.!?])\s+|\s+-+\s+|;")
_FILLER = re.compile(
    r"^(?:(?:oh|ah|um+|uh+|er+|well|hmm+|hm+|great|wonderful|awesome|cool|lovely|thanks|thank you|thx|ty|"
    r"so|and|then)\b[\s,!.]*)+"
)
_HEAD = re.compile(
    r"^"
    + _words(
        r"y(?:es|eah|ea|ep|up|a)\b",
        r"sure\b",
        r"o\.?k(?:ay)?\b",
        r"k\b",
        r"al(?:l )?right\b",
        r"absolutely\b",
        r"definitely\b",
        r"certainly\b",
        r"indeed\b",
        r"of course\b",
        r"correct\b",
        r"exactly\b",
        r"right\b",
        r"perfect\b",
        r"fine\b",
        r"agreed\b",
        r"affirmative\b",
        r"confirm(?:ed)?\b",
        r"deal\b",
        r"by all means\b",
        r"you got it\b",
        r"got it\b",
        r"understood\b",
        r"i understand\b",
        r"please (?:do|proceed|go|continue|process|make|cancel|return|exchange|modify|change|update|submit)\b",
        r"(?:kindly |you (?:may|can) )?(?:proceed|continue|go ahead|go for it|do (?:it|that|so))\b",
        r"let'?s (?:do|go|proceed)\b",
        r"(?:that |it |this )?(?:sounds|looks) (?:good|great|perfect|right|fine|lovely|correct|ok(?:ay)?)\b",
        r"(?:everything|all|it all|that all) (?:looks|sounds|seems) (?:good|right|correct|fine)\b",
        r"all (?:good|correct|set)\b",
        r"(?:that |this |it )?works(?: for me)?\b",
        r"fine by me\b",
        r"that(?:'?s| is| would be) (?:right|correct|fine|perfect|it|what i want|exactly|acceptable|great|good|"
        r"ok(?:ay)?|lovely|the one|the right|the correct)\b",
        r"i(?:'?d| would) like (?:that|to (?:proceed|go ahead|continue))\b",
        r"i want to (?:proceed|go ahead|continue)\b",
        r"i'?m (?:ok(?:ay)?|fine|good|happy|sure)\b",
        r"i am (?:ok(?:ay)?|fine|good|happy|sure)\b",
        r"i (?:accept|approve|agree|consent|do)\b",
        r"i (?:can |hereby )?confirm\b",
        r"(?:cancel|return|exchange|modify|change|update|process|refund|submit) (?:it|them|that|the \w+)\b",
    )
)
_CONSENT = re.compile(
    r"\b"
    + _words(
        r"go ahead",
        r"proceed",
        r"please do\b",
        r"do it\b",
        r"let'?s do",
        r"go for it",
        r"make the change",
        r"i (?:can |hereby )?confirm",
        r"you have my permission",
        r"(?:is|are|looks|sounds|seems) (?:fine|good|right|correct|great|perfect)",
    )
)
_NEGATION = re.compile(
    r"\b"
    + _words(
        r"no\b",
        r"nope",
        r"nah",
        r"not\b",
        r"never\b",
        r"negative",
        r"don'?t",
        r"do not",
        r"doesn'?t",
        r"does not",
        r"isn'?t",
        r"is not",
        r"can'?t",
        r"cannot",
        r"won'?t",
        r"wouldn'?t",
        r"rather not",
        r"prefer not",
        r"changed? (?:my|of) mind",
        r"never ?mind",
        r"leave (?:it|them|the order)",
        r"i'?ll keep",
        r"keep (?:it|them|the order)\b",
        r"wrong",
        r"incorrect",
        r"stop\b",
        r"scratch that",
        r"hold off",
        r"i'?ll pass",
    )
)
_CONDITION = re.compile(
    r"\b"
    + _words(
        r"but",
        r"however",
        r"though",
        r"except",
        r"unless",
        r"as long as",
        r"only if",
        r"if\b",
        r"instead",
        r"rather",
        r"actually",
        r"first\b(?! of all)",
        r"before (?:that|you|doing)",
        r"wait",
        r"hold on",
        r"hang on",
        r"almost",
        r"not quite",
        r"only\b",
        r"just (?:the|one|a)\b",
        r"on second thought",
    )
)
_HEDGE = re.compile(
    r"\b"
    + _words(
        r"maybe",
        r"perhaps",
        r"possibly",
        r"probably",
        r"not sure",
        r"unsure",
        r"i don'?t know",
        r"let me (?:think|check|look|see|get back|find|confirm with|ask|talk)",
        r"one sec",
        r"think (?:about it|it over)",
        r"give me a (?:moment|minute|second|sec)",
        r"one moment",
        r"i guess",
        r"i suppose",
        r"torn",
        r"still deciding",
        r"need to (?:check|think|ask)",
        r"double-check",
        r"thanks for the (?:info|information|update|explanation)",
        r"happy to help",
    )
    + r"|^(?:hmm+|hm+|um+|uh+|er+)\W*$"
)
_ASIDE = re.compile(r"\b(?:also|as well|too|another|other order|afterwards|after that|once that'?s done|then)\b")
_IDENTITY = re.compile(
    r"\bmy (?:email|name|zip|user id|phone)\b|\bzip(?: code)? is\b|\border (?:id|number) is\b|@|\bit'?s the\b"
)
_ANSWER = re.compile(
    _IDENTITY.pattern + r"|#w\d|\bmy (?:address|order)\b|\bi(?:'?d| would) like\b|\bi want\b|\bi need\b"
)


_COMPLIANCE = re.compile(
    r"(?:of course|certainly|absolutely|sure|right|o\.?k(?:ay)?|al(?:l )?right|indeed|definitely|got it)\W*"
)


def _clean(text: str) -> str:
    text = _TOKENS.sub(" ", text).replace("\u2019", "'").replace("\u2018", "'")
    text = re.sub(r"[\u2014\u2013]", " - ", text).replace("\U0001f44d", " yes. ")
    text = _BENIGN.sub("fine", text.lower())
    return re.sub(r"\s+", " ", text).strip()


def _sentences(text: str) -> list[str]:
    return [s.strip(" ,") for s in _SPLIT.split(text) if s and s.strip(" ,.!")]


def _consents(sentence: str) -> bool:
    body = _FILLER.sub("", sentence).strip(" ,")
    return bool(_HEAD.search(body) or _CONSENT.search(body))


_OPEN_QUESTION = re.compile(
    r"^(?:what|which|where|when|who|whom|whose|how|why)\b"
    r"|^(?:could|can|would|will) you (?:please )?(?:tell|give|provide|share|send|let me know|describe|specify)\b"
)
_ASKS_TO_CONFIRM = re.compile(r"\(yes/no\)|\bconfirm\b|\bproceed\b|\bgo ahead\b|\bshall i\b|\bdo you want\b")


def asks_yes_no(question: str) -> bool:
    """Whether an assistant message asks something a 'yes' can answer, not only 'which …?' / 'what …?'."""
    clean = _clean(question)
    if _ASKS_TO_CONFIRM.search(clean):
        return True
    asked = [_FILLER.sub("", s).strip(" ,") for s in _sentences(clean) if s.endswith("?")]
    return not asked or not all(_OPEN_QUESTION.search(s) for s in asked)


def read_reply(text: str | None, question: str | None = None) -> Reading:
    """Read one customer reply to a confirmation request (see the module docstring for the rules).

    With the `question` it answers: a reply to an open question ("Which items …?") confirms only with an
    explicit consent phrase ("… please go ahead"); its other content is an answer, not a yes.
    """
    reading = _read(text)
    if reading.confirmed and question is not None and not asks_yes_no(question):
        body = _clean(text or "")
        if not any(_CONSENT.search(_FILLER.sub("", s)) for s in _sentences(body)):
            return Reading("unclear", "answers an open question; no explicit consent")
    return reading


def _read(text: str | None) -> Reading:
    clean = _clean(text or "")
    sentences = _sentences(clean)
    if not sentences:
        return Reading("unclear", "empty reply")
    consenting = [s for s in sentences if _consents(s)]
    if consenting and _CONDITION.search(clean):
        return Reading("no", "a yes with a condition or a change")
    if any(_HEDGE.search(s) for s in sentences):
        return Reading("unclear", "hedges")
    if _NEGATION.search(clean):
        return Reading("no", "declines or negates")
    if _CONDITION.search(clean):
        return Reading("no", "asks for a change or to wait")
    first_yes = sentences.index(consenting[0]) if consenting else len(sentences)
    questions = [i for i, s in enumerate(sentences) if s.endswith("?") and not (i > first_yes and _ASIDE.search(s))]
    if questions:
        return Reading("unclear" if consenting else "no", "asks a question back")
    if not consenting:
        return Reading("unclear", "no affirmative")
    others = [s for s in sentences if s not in consenting]
    if others and all(_COMPLIANCE.fullmatch(_FILLER.sub("", s).strip(" ,")) for s in consenting):
        return Reading("unclear", "a compliance word before an answer to another question")
    strong = any(_CONSENT.search(_FILLER.sub("", s)) for s in consenting)
    if not strong and (any(_ANSWER.search(s) for s in others) or any(_IDENTITY.search(s) for s in consenting)):
        return Reading("unclear", "a compliance word before an answer to another question")
    return Reading("yes", "affirms")


def affirms(text: str | None) -> bool:
    """Whether a reply clearly confirms (an unclear reply does not)."""
    return read_reply(text).confirmed
