"""Agent specs on the command line and in params: one string names a backend and its settings.

oracle                                  the policy-following scripted agent (the domain's, given one)
flawed                                  oracle with planted failure modes (default rates; the domain's)
flawed:invention=0.3,misread=0.1,seed=2 explicit rates per mode (others 0)
hf:PATH[,temperature=T,top_p=P,max_new_tokens=N,seed=S,draft=K,threads=N,device=D,dtype=X,format=F]
                                        a local transformers checkpoint (the embedded default or any causal LM);
                                        device cpu|cuda|cuda:N|auto, dtype auto|fast|float32|bfloat16|float16
                                        (fast: bfloat16 where the CPU or GPU has it, else float32),
                                        format: a chat format name (default: recorded, or read from the template);
                                        draft: tokens guessed per pass with episodes in flight (default 8, 0 off)
llamacpp:PATH[,weights=f32|f16|q8_0,threads=N,context=N,temperature=T,top_p=P,max_new_tokens=N,seed=S,format=F]
                                        a Llama-architecture checkpoint directory run by llama.cpp on the CPU
                                        (exported to GGUF once, cached by its weights' digest); the prompt ids,
                                        parsing and sampling are the hf backend's
openai:MODEL[,temperature=T,top_p=P,max_tokens=N,seed=S,send_seed=0|1]
                                        an OpenAI-compatible endpoint (AGENTLOOP_BASE_URL / OPENAI_BASE_URL,
                                        AGENTLOOP_API_KEY / OPENAI_API_KEY); temperature=none (also top_p,
                                        max_tokens) leaves the setting out of the request, for models that
                                        accept only their default (reasoning models)
vllm:PATH[,temperature=T,...]           a checkpoint in the offline vLLM engine (the `gpu` extra)
program:MODULE:FACTORY[,base_url=URL,model=NAME,turn_timeout=S]
a2a:URL[,base_url=URL,model=NAME,turn_timeout=S]
                                        an agent program that runs its own tool loop: FACTORY (a class or
                                        function) makes one per episode; its tools are its episode's MCP server,
                                        base_url/model the endpoint its model calls go to (`pipeline.programs`)
scripted                                same as oracle
"""

from __future__ import annotations

import hashlib
import importlib
import math
import os
from pathlib import Path
from typing import TYPE_CHECKING, Any

from pydantic import BaseModel, ConfigDict, Field

from pipeline.errors import InputError
from pipeline.rollout import Agent

if TYPE_CHECKING:
    from pipeline.world import Domain

PROGRAM_AGENT = "pipeline.programs.agent:program_agent"
"""The plug-in that makes a `program:` agent: `f(spec)`. Loaded by name when first asked for (as a domain's
generic capabilities are): the agent programs' package sits above this one and is imported only then."""
OMISSIBLE = frozenset({"temperature", "top_p", "max_tokens"})
"""openai settings that `none` leaves out of the request (the endpoint's default then holds)."""
_HF_WORDS = {"device": "device", "dtype": "dtype", "format": "chat_format"}
"""hf settings that are words, not numbers (spec key → HFAgent argument)."""


class UnknownAgentError(InputError, ValueError):
    """An agent spec that names no known backend, or has bad settings."""


class SamplingSettings(BaseModel):
    """How a local checkpoint's replies are drawn: the settings every local engine's spec takes."""

    model_config = ConfigDict(extra="forbid")

    temperature: float = Field(default=0.0, ge=0)
    top_p: float = Field(default=1.0, gt=0, le=1)
    max_new_tokens: int = Field(default=256, ge=1)
    seed: int = Field(default=0, ge=0)


class HFSettings(SamplingSettings):
    """The settings an hf: spec may give, checked before the checkpoint is loaded."""

    draft: int = Field(
        default=8,
        ge=0,
        description="With episodes in flight: draft tokens run per reply and pass, copied from text already seen;"
        " the drawn tokens are the same for any value (0: none).",
    )
    threads: int = Field(
        default=1,
        ge=1,
        description="torch CPU threads (1 suits the embedded default; a 100M+ model prefills faster on more).",
    )


class LlamaCppSettings(SamplingSettings):
    """The settings a llamacpp: spec may give, checked before anything is exported or loaded."""

    threads: int = Field(default=1, ge=1, le=512, description="llama.cpp CPU threads.")
    context: int = Field(default=8192, ge=256, le=1 << 20, description="Tokens the llama.cpp context holds.")


def _settings(spec: str, body: str, omissible: frozenset[str] = frozenset()) -> dict[str, float | None]:
    """key=number settings; a key in `omissible` may also be `none` (None: leave it out of the request)."""
    out: dict[str, float | None] = {}
    for part in filter(None, body.split(",")):
        key, sep, value = part.partition("=")
        if not sep:
            raise UnknownAgentError(f"agent {spec!r}: setting {part!r} must look like key=value")
        if key.strip() in omissible and value.strip().lower() == "none":
            out[key.strip()] = None
            continue
        try:
            number = float(value)
        except ValueError:
            raise UnknownAgentError(f"agent {spec!r}: setting {key!r} must be a number, got {value!r}") from None
        if not math.isfinite(number):
            raise UnknownAgentError(f"agent {spec!r}: setting {key!r} must be a finite number, got {value!r}")
        out[key.strip()] = number
    return out


def _local_settings(
    spec: str, rest: str, word_keys: dict[str, str], model: type[SamplingSettings]
) -> tuple[dict[str, Any], dict[str, Any]]:
    """A local engine's settings after its path: the words (spec key → argument name) and the numbers, checked by
    `model` (an unknown key is refused naming the ones there are)."""
    words: dict[str, Any] = {}
    for part in filter(None, rest.split(",")):
        key, sep, value = part.partition("=")
        if sep and key.strip() in word_keys:
            words[word_keys[key.strip()]] = value.strip()
    settings = _settings(spec, ",".join(p for p in rest.split(",") if p.partition("=")[0].strip() not in word_keys))
    unknown = sorted(set(settings) - set(model.model_fields))
    if unknown:
        known = ", ".join([*model.model_fields, *word_keys])
        raise UnknownAgentError(f"agent {spec!r}: unknown setting(s) {unknown} ({known})")
    return words, _sampling(spec, model, settings).model_dump(exclude_unset=True)


def _whole(spec: str, key: str, value: float) -> int:
    """A setting that must be an integer (a seed, a token count): 3.0 is 3, 2.5 is an error."""
    if value != int(value):
        raise UnknownAgentError(f"agent {spec!r}: setting {key!r} must be a whole number, got {value:g}")
    return int(value)


class FromDomain:
    """Builds a domain's scripted agent from one of its capabilities (a plain object, so it pickles for Ray)."""

    def __init__(self, capability: str, needed_for: str, *args, **kwargs) -> None:
        self.capability, self.needed_for, self.args, self.kwargs = capability, needed_for, args, kwargs

    def __call__(self, domain) -> Agent:
        return domain.require(self.capability, needed_for=self.needed_for)(*self.args, **self.kwargs)


class ByDomain:
    """A scripted agent (the oracle, a flawed agent) that plays each episode with its world's domain's own
    (`Domain.oracle` / `Domain.flaws`); `default` is the one built for the default domain, whose name and
    attributes (`planted`, ...) it shows."""

    def __init__(self, default: Agent, make) -> None:
        self.default, self._make = default, make
        self._agents: dict[str, Agent] = {}
        self.name = default.name

    def start(self, info):
        if info.domain is None:
            return self.default.start(info)
        if info.domain not in self._agents:
            from pipeline.world import resolve_domain

            self._agents[info.domain] = self._make(resolve_domain(info.domain))
        return self._agents[info.domain].start(info)

    def __getattr__(self, name: str):
        if name.startswith("_") or name == "default":
            raise AttributeError(name)
        return getattr(self.default, name)


def by_domain(make: FromDomain) -> ByDomain:
    """`make`'s agent for each episode's domain, the default domain's where an episode names none."""
    from pipeline.world import DEFAULT_DOMAIN, resolve_domain

    return ByDomain(make(resolve_domain(DEFAULT_DOMAIN)), make)


def make_agent(spec: str, domain: Domain | None = None) -> Agent:
    """The agent a spec names. The scripted ones (oracle, flawed) are `domain`'s (its `oracle` and `flaws`
    capabilities) when a domain is given; without one they play each episode with its world's domain's own."""
    kind, _, body = spec.partition(":")
    if kind in ("oracle", "scripted") and not body:
        make = FromDomain("oracle", f"agent {spec!r}")
        return make(domain) if domain is not None else by_domain(make)
    if kind == "flawed":
        from pydantic import ValidationError

        from pipeline.agents.scripted.flaws import default_rates

        settings = _settings(spec, body)
        seed = _whole(spec, "seed", settings.pop("seed", 0) or 0)  # no flaw setting is omissible: never None
        rates = settings or default_rates()
        make = FromDomain("flaws", f"agent {spec!r}", rates, seed=seed)
        try:
            return make(domain) if domain is not None else by_domain(make)
        except ValidationError as exc:
            raise UnknownAgentError(f"agent {spec!r}: {exc.errors()[0]['msg']}") from None
    if kind == "hf" and body:
        from pipeline.agents.backends.hf import HFAgent

        path, _, rest = body.partition(",")
        words, checked = _local_settings(spec, rest, _HF_WORDS, HFSettings)
        from pipeline.agents.backends.loading import check_placement

        try:
            check_placement(words.get("device"), words.get("dtype", "auto"))
        except InputError as exc:
            raise UnknownAgentError(f"agent {spec!r}: {exc}") from None
        if "draft" in checked:
            checked["draft_tokens"] = checked.pop("draft")
        try:
            return HFAgent(path, **checked, **words)
        except (InputError, OSError) as exc:  # no such checkpoint, or not one transformers reads
            raise UnknownAgentError(f"agent {spec!r}: {exc}") from None
    if kind == "llamacpp" and body:
        from pipeline.agents.backends.gguf_export import WEIGHT_TYPES
        from pipeline.agents.backends.llamacpp import LlamaCppAgent

        path, _, rest = body.partition(",")
        words, checked = _local_settings(spec, rest, {"weights": "weights", "format": "chat_format"}, LlamaCppSettings)
        if words.get("weights", "f32") not in WEIGHT_TYPES:
            raise UnknownAgentError(
                f"agent {spec!r}: weights {words['weights']!r}: expected one of {', '.join(WEIGHT_TYPES)}"
            )
        try:
            return LlamaCppAgent(path, **checked, **words)
        except (InputError, OSError) as exc:
            raise UnknownAgentError(f"agent {spec!r}: {exc}") from None
    if kind in ("openai", "vllm") and body:
        target, _, rest = body.partition(",")
        settings = _settings(spec, rest, OMISSIBLE if kind == "openai" else frozenset())
        if kind == "openai":
            from pipeline.agents.backends.openai import OpenAIAgent, SamplingConfig

            if not (os.environ.get("AGENTLOOP_BASE_URL") or os.environ.get("OPENAI_BASE_URL")):
                raise UnknownAgentError(
                    f"agent {spec!r}: no endpoint given: set AGENTLOOP_BASE_URL (or OPENAI_BASE_URL) to the server's"
                    " base URL, e.g. http://127.0.0.1:8000/v1 for `agentloop serve`"
                )

            return OpenAIAgent(target, sampling=_sampling(spec, SamplingConfig, settings))
        from pipeline.agents.backends.vllm import VLLMAgent, VLLMConfig

        return VLLMAgent(target, _sampling(spec, VLLMConfig, settings))
    if kind in ("program", "a2a") and body:  # an agent program, or one served over A2A
        module, _, attribute = PROGRAM_AGENT.partition(":")
        return getattr(importlib.import_module(module), attribute)(spec)
    raise UnknownAgentError(
        f"unknown agent {spec!r}: expected oracle, flawed[:mode=rate,...], hf:PATH, openai:MODEL, vllm:PATH,"
        " program:MODULE:FACTORY or a2a:URL"
    )


def checkpoint_digest(spec: str) -> str | None:
    """sha256 over the files of the local checkpoint directory an hf:/llamacpp:/vllm: spec loads; None for others.

    The spec names a path, not weights: a checkpoint retrained in place keeps its spec, so whatever must tell two
    agents apart (a run journal deciding whether to resume) needs this too. Reads every file once.
    """
    kind, _, body = spec.partition(":")
    if kind not in ("hf", "llamacpp", "vllm") or not body:
        return None
    root = Path(body.partition(",")[0])
    if not root.is_dir():
        return None  # vllm:MODEL names a hub model; a missing hf: path fails where the agent is made
    return directory_digest(root)


def directory_digest(root: Path) -> str:
    """sha256 over every file's relative path and contents under `root` (the same files, the same digest)."""
    digest = hashlib.sha256()
    for path in sorted(p for p in root.rglob("*") if p.is_file()):
        name = path.relative_to(root).as_posix().encode()
        with path.open("rb") as fh:
            digest.update(len(name).to_bytes(8, "big") + name + hashlib.file_digest(fh, "sha256").digest())
    return digest.hexdigest()


def _sampling(spec: str, model: type, settings: dict[str, float | None]):
    """Settings as a pydantic config (integers where the field wants them); errors name the spec."""
    from pydantic import ValidationError

    ints = {k: int(v) if v is not None and v == int(v) else v for k, v in settings.items()}
    try:
        return model(**ints)
    except ValidationError as exc:
        err = exc.errors()[0]
        raise UnknownAgentError(f"agent {spec!r}: {'.'.join(map(str, err['loc']))}: {err['msg']}") from None
