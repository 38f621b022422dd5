"""`--agent program:MODULE:FACTORY`: an agent program measured like any agent.

The spec names a factory (a class or a function, `module:attribute`, resolved as a domain's is) that makes one
`AgentProgram` (`pipeline.protocol.program`) per episode, and optional settings after a comma:

    program:MODULE:FACTORY[,base_url=URL,model=NAME,turn_timeout=SECONDS,serve=PATH,max_tokens=N]

`base_url` and `model` are the upstream model endpoint the program's model calls go to (`ProgramEpisode
.model_base_url` / `.model`); `turn_timeout` is how long one turn (`respond`, and `start` before the first) may take
(default 300 s); `model_timeout` how long one model call may take before it is an infrastructure failure (default
120 s). `serve=PATH` (instead of `base_url`) has the harness serve the checkpoint PATH itself with
`agentloop serve` (`pipeline.programs.served`; `max_tokens`: its reply length when a call sets none, default 256;
`model`: the served name, default `model`), so the loop can measure a program on the checkpoints it trains.

Each episode registers a live view of its session with the process's episode hub (`pipeline.programs.hub`) and hands
the program its MCP URL; a program's turn is one `act` that returns the reply, its tool calls going through the
runner's `EpisodeTools` (`pipeline.rollout`), which puts them in the trajectory before the reply.

What ends an episode as the agent's failure (`PROGRAM_FAILURES`, named in the trajectory's termination and error and
in the verdict's `program` component): the program raising in its factory, `start` or `respond` (program_crash),
replying with no text (program_empty_reply), not replying within `turn_timeout` (program_timeout); its tool budget
and turn limits end it as `turn_limit`, as for a model agent. What is infrastructure (`InfrastructureError`: the
trial is retried and excluded): the hub not starting, the hub failing while it served one of the episode's calls, and
an infrastructure error the program's own call raised or was raised from (its MCP client finding the server
unreachable, a model endpoint failing). A program past its time is left running in its daemon thread (Python cannot
stop a thread): its episode is unregistered, so its later calls are refused (404), and its `close()` is called.
"""

from __future__ import annotations

import functools
import importlib
import logging
import math
import threading
from collections.abc import Callable
from typing import TYPE_CHECKING, Any

from pipeline.agents.registry import UnknownAgentError
from pipeline.errors import InfrastructureError, InputError
from pipeline.programs.hub import HubError, LiveEpisode, episode_hub
from pipeline.protocol import AgentProgram, ProgramEpisode
from pipeline.rollout import Concurrent, EpisodeInfo, EpisodeTools, Message

if TYPE_CHECKING:
    from pipeline.programs.proxy import EpisodeRecord, ModelProxy

log = logging.getLogger(__name__)
KIND = "program"
A2A = "a2a"
TURN_TIMEOUT_S = 300.0
WORDS = ("base_url", "model", "serve")
NUMBERS = ("turn_timeout", "max_tokens", "model_timeout")
MODEL_TIMEOUT_S = 120.0
SERVED_MODEL = "model"
"""The model name a checkpoint served by the harness (`serve=PATH`) answers to, unless `model=` names another."""


class NotAProgramError(InputError):
    """A program factory made something that is not an `AgentProgram` (the episode ends as program_crash)."""


def _said(exc: BaseException) -> str:
    """An exception as one line: its type and message."""
    text = " ".join(str(exc).split())
    return f"{type(exc).__name__}: {text}" if text else type(exc).__name__


def resolve_factory(spec: str, target: str) -> Callable[[], Any]:
    """The factory `target` (`module:attribute`) names; an `UnknownAgentError` naming the spec otherwise."""
    module_name, sep, attribute = target.partition(":")
    if not sep or not module_name or not attribute:
        raise UnknownAgentError(f"agent {spec!r}: expected program:MODULE:FACTORY (a class or function)")
    try:
        module = importlib.import_module(module_name)
    except ImportError as exc:
        raise UnknownAgentError(f"agent {spec!r}: cannot import module {module_name!r}: {exc}") from None
    except (Exception, SystemExit) as exc:  # the program's own module failed to import
        raise UnknownAgentError(f"agent {spec!r}: importing module {module_name!r} failed: {_said(exc)}") from None
    try:
        factory = getattr(module, attribute)
    except AttributeError:
        raise UnknownAgentError(f"agent {spec!r}: module {module_name!r} has no attribute {attribute!r}") from None
    if not callable(factory):
        raise UnknownAgentError(
            f"agent {spec!r}: {target} is a {type(factory).__name__}, not a class or function making an AgentProgram"
        )
    if isinstance(factory, type):
        missing = [m for m in ("start", "respond", "close") if not callable(getattr(factory, m, None))]
        if missing:
            raise UnknownAgentError(
                f"agent {spec!r}: class {factory.__name__} lacks {', '.join(missing)} of an AgentProgram"
                " (start(episode), respond(text), close())"
            )
    return factory


def _seconds(spec: str, settings: dict[str, str], key: str, default: float) -> float:
    if key not in settings:
        return default
    try:
        value = float(settings[key])
    except ValueError:
        value = math.nan
    if not (math.isfinite(value) and value > 0):
        raise UnknownAgentError(f"agent {spec!r}: {key} must be seconds > 0, got {settings[key]!r}")
    return value


class ProgramAgent:
    """The agent a `program:` spec names; one `ProgramAgentEpisode` per episode. Pickles by its spec (to Ray
    workers), so each process resolves the factory and starts its own hub."""

    def __init__(self, spec: str) -> None:
        kind, _, body = spec.partition(":")
        if kind not in (KIND, A2A) or not body:
            raise UnknownAgentError(
                f"agent {spec!r}: expected program:MODULE:FACTORY[,base_url=URL,model=NAME] or a2a:URL[,...]"
            )
        target, _, rest = body.partition(",")
        settings: dict[str, str] = {}
        for part in filter(None, (p.strip() for p in rest.split(","))):
            key, sep, value = part.partition("=")
            key, value = key.strip(), value.strip()
            if not sep or not value:
                raise UnknownAgentError(f"agent {spec!r}: setting {part!r} must look like key=value")
            if key not in (*WORDS, *NUMBERS):
                known = ", ".join((*WORDS, *NUMBERS))
                raise UnknownAgentError(f"agent {spec!r}: unknown setting {key!r} ({known})")
            settings[key] = value
        base_url = settings.get("base_url")
        if base_url is not None and not base_url.startswith(("http://", "https://")):
            raise UnknownAgentError(f"agent {spec!r}: base_url must be an http(s) URL, got {base_url!r}")
        if base_url is not None and "serve" in settings:
            raise UnknownAgentError(f"agent {spec!r}: give base_url (an endpoint) or serve (a checkpoint), not both")
        max_tokens = settings.get("max_tokens", "256")
        if not max_tokens.isdigit() or int(max_tokens) < 1:
            raise UnknownAgentError(f"agent {spec!r}: max_tokens must be a whole number >= 1, got {max_tokens!r}")
        if "max_tokens" in settings and "serve" not in settings:
            raise UnknownAgentError(f"agent {spec!r}: max_tokens is the served checkpoint's (serve=PATH)")
        self.serve, self.max_tokens = settings.get("serve"), int(max_tokens)
        timeout = _seconds(spec, settings, "turn_timeout", TURN_TIMEOUT_S)
        self.model_timeout_s = _seconds(spec, settings, "model_timeout", MODEL_TIMEOUT_S)
        self.spec, self.target, self.kind = spec, target.strip(), kind
        if kind == A2A:  # an agent served over A2A: one A2A context per episode (pipeline.programs.a2a)
            if not self.target.startswith(("http://", "https://")):
                raise UnknownAgentError(f"agent {spec!r}: expected a2a:URL (an http(s) URL), got {self.target!r}")
            from pipeline.programs.a2a import a2a_program

            self.factory: Callable[[], Any] = functools.partial(a2a_program, self.target)
        else:
            self.factory = resolve_factory(spec, self.target)
        self.base_url, self.model, self.turn_timeout_s = base_url, settings.get("model"), timeout
        if self.serve is not None and self.model is None:
            self.model = SERVED_MODEL
        self.name = f"{kind}:{self.target}"

    @property
    def settings(self) -> dict[str, Any]:
        """What decides this agent, for the run's record."""
        return {
            "kind": self.kind,
            "factory": self.target,
            "base_url": self.base_url,
            "model": self.model,
            "turn_timeout_s": self.turn_timeout_s,
            **({"serve": self.serve, "max_tokens": self.max_tokens} if self.serve is not None else {}),
        }

    def start(self, info: EpisodeInfo) -> ProgramAgentEpisode:
        return ProgramAgentEpisode(self, info)

    def decoder(self) -> Concurrent:
        """Episodes in flight play their programs' turns at once, each in a thread (a turn waits on the program)."""
        return Concurrent()

    def __reduce__(self) -> tuple[Any, tuple[str]]:
        return ProgramAgent, (self.spec,)


class _Turn:
    """One call of the program's (its factory and `start` on the first turn, then `respond`) in a daemon thread."""

    def __init__(self, work: Callable[[], Any]) -> None:
        self.work = work
        self.done = threading.Event()
        self.value: Any = None
        self.error: BaseException | None = None

    def __call__(self) -> None:
        try:
            self.value = self.work()
        except BaseException as exc:  # noqa: BLE001 - handed to the waiting thread
            self.error = exc
        finally:
            self.done.set()

    def run(self, timeout: float, name: str) -> bool:
        """Run it; whether it finished within `timeout` seconds (else it is left running)."""
        threading.Thread(target=self, name=name, daemon=True).start()
        return self.done.wait(timeout)


def _infrastructure(exc: BaseException | None) -> InfrastructureError | None:
    """The infrastructure error `exc` is, or was raised from (its cause or context, exception groups opened)."""
    seen: set[int] = set()
    todo = [exc]
    while todo:
        e = todo.pop()
        if e is None or id(e) in seen:
            continue
        seen.add(id(e))
        if isinstance(e, InfrastructureError):
            return e
        if isinstance(e, BaseExceptionGroup):
            todo += list(e.exceptions)
        todo += [e.__cause__, e.__context__]
    return None


class ProgramAgentEpisode:
    """One episode of an agent program (`OwnToolLoop`: the runner binds its tools, then each `act` is a turn)."""

    def __init__(self, agent: ProgramAgent, info: EpisodeInfo) -> None:
        self.agent, self.info = agent, info
        self.program: AgentProgram | None = None
        self.tools: EpisodeTools | None = None
        self.view: LiveEpisode | None = None
        self.episode_id: str | None = None
        self.mcp_url: str | None = None
        self.proxy: ModelProxy | None = None
        self.served_url: str | None = None
        self._started = False

    def bind_tools(self, tools: EpisodeTools) -> None:
        self.tools = tools
        self.view = LiveEpisode(tools)
        hub = episode_hub()
        self.episode_id = hub.register(self.view)
        self.mcp_url = hub.url(self.episode_id)

    def _begin(self) -> AgentProgram:
        """The episode's program, made and started (the first turn)."""
        program = self.agent.factory()
        if not isinstance(program, AgentProgram):
            raise NotAProgramError(
                f"{self.agent.target} made a {type(program).__name__}, not an AgentProgram"
                " (start(episode), respond(text), close())"
            )
        self.program = program
        scripted = getattr(program, "scripted_from", None)
        if callable(scripted):  # a scripted program (the oracle as a program) reads the task; no other program does
            scripted(self.info)
        assert self.mcp_url is not None and self.episode_id is not None
        base_url = self.agent.base_url
        if self.agent.serve is not None:  # the checkpoint the harness serves (started before the turn's clock)
            base_url = self.served_url
        if base_url is not None:  # the program's model calls go through the episode's proxy, which records them
            from pipeline.programs.proxy import model_proxy

            self.proxy = model_proxy(base_url, timeout=self.agent.model_timeout_s)
            base_url = self.proxy.open(self.episode_id)
        program.start(
            ProgramEpisode(
                mcp_url=self.mcp_url,
                policy=self.info.policy,
                model_base_url=base_url,
                model=self.agent.model,
                task_id=self.info.task.id,
                trial=self.info.trial,
                seed=self.info.seed,
            )
        )
        self._started = True
        return program

    def act(self, messages: list[Message]) -> Message:
        """The program's whole turn on the customer's last message; its reply (empty when the turn failed: the
        failure is reported to the runner through the episode's tools)."""
        if self.tools is None or self.view is None:
            raise HubError("an agent program's episode was not given its tools (run it through the episode runner)")
        text = next((m.content or "" for m in reversed(messages) if m.role == "user"), "")

        def work() -> Any:
            program = self.program if self._started and self.program is not None else self._begin()
            return program.respond(text)

        if self.agent.serve is not None and self.served_url is None:  # a server not starting is infrastructure
            from pipeline.programs.served import served_checkpoint

            assert self.agent.model is not None
            self.served_url = served_checkpoint(self.agent.serve, self.agent.model, self.agent.max_tokens)
        turn = _Turn(work)
        finished = turn.run(self.agent.turn_timeout_s, f"program-{self.info.task.id}-{self.info.trial}")
        hub = episode_hub()
        if self.view.failure is not None:
            raise HubError(f"the episode's MCP server failed: {_said(self.view.failure)}")
        if self.proxy is not None and self.episode_id is not None and self.proxy.failures(self.episode_id):
            raise self._model_record().infrastructure_error() or HubError("the model proxy failed the episode")
        if not finished:
            self.tools.fail(
                "program_timeout", f"no reply within the turn's time limit of {self.agent.turn_timeout_s:g} s"
            )
            return Message(role="assistant", content="")
        if turn.error is not None:
            infra = _infrastructure(turn.error)
            if infra is not None:
                raise infra
            if not hub.alive:
                raise HubError(f"the episode hub stopped during the program's turn: {_said(turn.error)}")
            where = "respond" if self._started else "starting"
            self.tools.fail("program_crash", f"{where}: {_said(turn.error)}")
            return Message(role="assistant", content="")
        reply = turn.value
        if not isinstance(reply, str) or not reply.strip():
            got = "a " + type(reply).__name__ if not isinstance(reply, str) else repr(reply)
            self.tools.fail("program_empty_reply", f"respond returned {got}")
            return Message(role="assistant", content="")
        return Message(role="assistant", content=reply)

    def _model_record(self) -> EpisodeRecord:
        """What the proxy recorded of the episode's model calls, now in the trajectory; the proxy stops serving it."""
        assert self.proxy is not None and self.episode_id is not None
        record = self.proxy.close(self.episode_id)
        self.proxy = None
        if self.tools is not None:
            usage = [call.usage for call in record.calls if call.usage is not None]
            self.tools.record_model_calls(
                [call.model_dump(mode="json") for call in record.calls],
                sum(u.prompt_tokens for u in usage),
                sum(u.completion_tokens for u in usage),
            )
        return record

    def end_episode(self) -> None:
        """Unregister the episode's MCP server and close the program (its errors are logged, never raised)."""
        if self.proxy is not None and self.episode_id is not None:
            self._model_record()
        if self.episode_id is not None:
            episode_hub().unregister(self.episode_id)
            self.episode_id = None
        program, self.program = self.program, None
        if program is None:
            return
        closing = _Turn(program.close)
        if not closing.run(self.agent.turn_timeout_s, "program-close"):
            log.warning("agent program %s: close() did not return in time; left running", self.agent.target)
        elif closing.error is not None:
            log.warning("agent program %s: close() failed: %s", self.agent.target, _said(closing.error))


def with_settings(spec: str, **settings: str | None) -> str:
    """`spec` with settings set (a value) or removed (None): `with_settings(spec, serve="models/c", base_url=None)`."""
    head, *parts = [p.strip() for p in spec.split(",")]
    kept = [p for p in parts if p and p.partition("=")[0].strip() not in settings]
    return ",".join([head, *kept, *(f"{k}={v}" for k, v in settings.items() if v is not None)])


def program_agent(spec: str) -> ProgramAgent:
    """The agent a `program:` spec names (what the agent registry loads by name)."""
    return ProgramAgent(spec)
