"""params.yaml: one section per stage, one pydantic model per section; unknown keys fail with their path.

The file is read strictly, because a value that is silently coerced or dropped changes a run without a word:
a key given twice is an error naming it and both lines, an empty file is an error (not the code's defaults),
values are not coerced (`trials: true` is not 1, `trials: "4"` is not 4), and settings that contradict each other
(`gate.k` above `measure.trials`) fail here, before any stage runs. No number may be infinite or NaN (`.inf`,
`.nan`), in any section. A section the file leaves out takes the code's defaults (which equal the committed
params.yaml), and the loader says so: a warning names every defaulted section, and `Params.defaulted` lists them.
"""

from __future__ import annotations

import logging
import math
import re
from pathlib import Path
from typing import TYPE_CHECKING, Annotated, Any, Literal  # noqa: F401

import yaml
from pydantic import (
    Field,
    PrivateAttr,
    ValidationError,
    field_validator,
    model_validator,
)

from pipeline.curate import LOOP_INPUTS as CURATE_INPUTS
from pipeline.curate import CurateConfig, loop_curate_config
from pipeline.errors import InputError
from pipeline.gate import EVAL_TASKS, GateConfig
from pipeline.measure import LOOP_INPUTS, MeasureConfig, loop_measure_config
from pipeline.strict import Strict
from pipeline.synth import SynthConfig
from pipeline.target import TargetConfig
from pipeline.train import INPUTS as SFT_INPUTS
from pipeline.train import SFTConfig

if TYPE_CHECKING:
    from pipeline.embedded import EmbeddedConfig


log = logging.getLogger(__name__)

_GEN = re.compile(r"^gen-(\d+)(-.+)?$")


class LoopParams(Strict):
    iteration: int = Field(default=1, ge=1, description="Loop iteration; > 1 starts from the promoted champion.")


class WorldParams(Strict):
    eval_world: str = Field(default="gen-101", description="Held-out evaluation world (never used for training).")
    train_world: str = Field(
        default="gen-7",
        description="World that synthesized and curated data come from (iteration 1's; see train_world_per_iteration).",
    )
    train_world_per_iteration: bool = Field(
        default=True,
        description="Each iteration synthesizes in a world of its own: a generated train_world gen-<seed>[-size]"
        " becomes gen-<seed + iteration - 1>[-size] (gen-7, gen-8, gen-9, ...), so iteration N trains on fresh"
        " data; the evaluation world and its tasks stay frozen.",
    )
    eval_tasks: int = Field(
        default=EVAL_TASKS, ge=1, le=100_000, description="Frozen held-out tasks (the gate's power needs 200)."
    )
    seed: int = Field(default=0, description="Seed of the held-out task draw.")
    domain: str = Field(
        default="retail",
        description="The domain the worlds belong to: a built-in name (retail, airline) or module:attribute.",
    )


class BaselineParams(Strict):
    source: str = Field(
        default="embedded",
        pattern=r"^(embedded|champion|challenger|[1-9][0-9]*|agent:.+)$",
        description="'embedded' starts from the embedded default (stage `embedded`); 'champion' or 'challenger'"
        " from the registered version behind that alias, a number from that registered version (its files fetched"
        " and checked against the digest registered with them); 'agent:<spec>' uses any agent spec as is (e.g."
        " agent:flawed:invention=0.5 for quick pipeline runs).",
    )

    @field_validator("source", mode="before")
    @classmethod
    def _version_number(cls, v: Any) -> Any:
        """`source: 3` (a YAML number, as `dvc exp run -S baseline.source=3` writes it) names version 3."""
        return str(v) if isinstance(v, int) and not isinstance(v, bool) else v


class TargetParams(Strict):
    budget: int = Field(
        default=200, ge=1, le=100_000, description="Synthesized tasks to make, split across failure modes."
    )
    config: TargetConfig = Field(default_factory=TargetConfig)


LOOP_DIALS = [
    "forgot_email",
    "vague_item",
    "also_request",
    "pushback",
    "chained",
    "refusal",
    "with_write",
    "multi_item",
]
"""The messes and shapes the held-out tasks have ('underspecified' never occurs there)."""


def _loop_synth_config() -> SynthConfig:
    """The loop's synthesis: tasks shaped like the held-out ones (two parts, depth two, their dials), which the tiny
    embedded model learns most from; `agentloop synthesize` keeps SynthConfig's broader defaults."""
    return SynthConfig(max_parts=2, max_depth=2, dials=LOOP_DIALS)


class SynthesizeParams(Strict):
    config: SynthConfig = Field(default_factory=_loop_synth_config)
    anchors: int = Field(
        default=300,
        ge=0,
        description="Untargeted gold trajectories (plain generated tasks, training world) written beside the"
        " targeted data, replayed during training against forgetting.",
    )


class TrainParams(SFTConfig):
    """The train stage's section: the SFT run's `SFTConfig` (its inputs filled by the stage from the loop's
    outputs), and the stage's two choices, what trains (`method`) and on what (`use_curated`)."""

    method: str = Field(
        default="sft",
        pattern=r"^(sft|agent:.+)$",
        description="'sft' fine-tunes the baseline checkpoint; 'agent:<spec>' takes that agent as the candidate"
        " without training (quick pipeline runs and CI checks of the gate).",
    )
    use_curated: bool = Field(default=True, description="Train on synthesized + curated data (else synthesized only).")

    @model_validator(mode="before")
    @classmethod
    def _inputs_are_the_loops(cls, data: Any) -> Any:
        given = [name for name in SFT_INPUTS if isinstance(data, dict) and name in data]
        if given:
            raise ValueError(
                f"{given[0]}: set by the train stage (the baseline checkpoint, the synthesized and curated data),"
                " not in params.yaml"
            )
        return data

    def sft_config(self, **inputs: Any) -> SFTConfig:
        """The SFT run this section describes, with its inputs (`base`, `data`, `anchors`, `tasks`)."""
        return SFTConfig.model_validate({**self.model_dump(exclude={"method", "use_curated", *SFT_INPUTS}), **inputs})


class ReportParams(Strict):
    max_flips: int = Field(default=20, ge=0, description="Flipped tasks shown with before/after diffs.")


class PromoteParams(Strict):
    experiment: str = Field(default="agentloop", min_length=1, description="MLflow experiment name.")
    model_name: str = Field(default="agentloop-agent", min_length=1, description="MLflow registered model name.")
    artifact_location: str | None = Field(
        default=None,
        description="Artifact root of a newly created experiment (a relative path is taken from the repository's"
        " root); default: mlartifacts/ beside a sqlite store, the server's choice otherwise.",
    )
    traces: bool = Field(
        default=True,
        description="Log every graded trial of measure and remeasure as an MLflow trace (conversation, tool calls,"
        " verdict as feedback); false for stores that should not hold conversations.",
    )


def _refuse_loop_inputs(section: str, inputs: dict[str, str], v: Any) -> Any:
    """A section as given, unless it names an input the loop fills in itself (from `inputs[name]`)."""
    given = [name for name in inputs if isinstance(v, dict) and name in v]
    if given:
        raise ValueError(f"{given[0]}: set by the loop from {inputs[given[0]]}, not in the {section} section")
    return v


class Params(Strict):
    loop: LoopParams = Field(default_factory=LoopParams)
    world: WorldParams = Field(default_factory=WorldParams)
    embedded: dict[str, Any] = Field(
        default_factory=dict,
        description="EmbeddedConfig settings (pipeline/embedded/build.py); {} = its defaults (the committed"
        " checkpoint's). A mapping, so that stages without a model read params.yaml without importing torch"
        " (~4 s each); a non-empty section is still validated here, and an unknown key fails with its path.",
    )
    baseline: BaselineParams = Field(default_factory=BaselineParams)
    measure: MeasureConfig = Field(
        default_factory=loop_measure_config,
        description="MeasureConfig (pipeline/measure/config.py) of measure and remeasure; the stages fill in"
        " world, domain, agent, limits and verdict from the other sections.",
    )
    target: TargetParams = Field(default_factory=TargetParams)
    synthesize: SynthesizeParams = Field(default_factory=SynthesizeParams)
    curate: CurateConfig = Field(
        default_factory=loop_curate_config,
        description="CurateConfig (pipeline/curate/config.py) of the curate stage; the stage fills in the pool,"
        " tasks, world, agent, limits and the Ray settings from the loop's outputs and the other sections.",
    )
    train: TrainParams = Field(
        default_factory=TrainParams,
        description="SFTConfig (pipeline/train/sft_config.py) of the train stage, with its method and data choice.",
    )
    gate: GateConfig = Field(default_factory=GateConfig)
    report: ReportParams = Field(default_factory=ReportParams)
    promote: PromoteParams = Field(default_factory=PromoteParams)
    _defaulted: tuple[str, ...] = PrivateAttr(default=())

    @property
    def defaulted(self) -> tuple[str, ...]:
        """The sections the file left out, which took the code's defaults."""
        return self._defaulted

    @field_validator("embedded")
    @classmethod
    def _embedded_fits(cls, v: dict[str, Any]) -> dict[str, Any]:
        if v:  # only then is torch worth importing: {} is the defaults, valid by construction
            from pipeline.embedded import EmbeddedConfig

            try:
                EmbeddedConfig.model_validate(v)
            except ValidationError as exc:
                err = exc.errors()[0]
                raise ValueError(f"{'.'.join(map(str, err['loc']))}: {err['msg']}") from None
        return v

    @field_validator("measure", mode="before")
    @classmethod
    def _measure_inputs_are_the_loops(cls, v: Any) -> Any:
        return _refuse_loop_inputs("measure", LOOP_INPUTS, v)

    @field_validator("curate", mode="before")
    @classmethod
    def _curate_inputs_are_the_loops(cls, v: Any) -> Any:
        return _refuse_loop_inputs("curate", CURATE_INPUTS, v)

    @model_validator(mode="after")
    def _k_fits_the_trials(self) -> Params:
        if self.gate.k > self.measure.trials:
            raise ValueError(
                f"gate.k={self.gate.k} exceeds measure.trials={self.measure.trials}: pass^k needs at least k trials"
                " per task (raise measure.trials or lower gate.k)"
            )
        return self

    @model_validator(mode="after")
    def _train_world_resolves(self) -> Params:
        self.train_world()
        return self

    def train_world(self) -> str:
        """This iteration's training world: `world.train_world`, moved on by the iteration when
        `world.train_world_per_iteration` is set (never onto the evaluation world)."""
        w = self.world
        ref = w.train_world
        if w.train_world_per_iteration and self.loop.iteration > 1:
            m = _GEN.match(ref)
            if m is None:
                raise ValueError(
                    f"world.train_world={ref!r}: world.train_world_per_iteration needs a generated world"
                    " (gen-<seed> or gen-<seed>-<size>) whose seed the iteration can move"
                )
            ref = f"gen-{int(m.group(1)) + self.loop.iteration - 1}{m.group(2) or ''}"
            if ref == w.eval_world:
                raise ValueError(
                    f"iteration {self.loop.iteration} would train in {ref!r}, the evaluation world (world.eval_world):"
                    " choose another world.train_world"
                )
        return ref

    def embedded_config(self) -> EmbeddedConfig:
        """The `embedded` section as the EmbeddedConfig it is (imports torch)."""
        from pipeline.embedded import EmbeddedConfig

        return EmbeddedConfig.model_validate(self.embedded)


class ParamsError(InputError, ValueError):
    """params.yaml that does not fit; the message names the file and the key path."""


class _UniqueKeyLoader(yaml.SafeLoader):
    """The safe loader, refusing a mapping that gives one key twice (plain YAML keeps the last silently)."""

    def construct_mapping(self, node: yaml.MappingNode, deep: bool = False) -> dict:
        seen: dict[Any, int] = {}
        for key_node, _ in node.value:
            key = self.construct_object(key_node, deep=True)
            line = key_node.start_mark.line + 1
            if key in seen:
                raise yaml.constructor.ConstructorError(
                    None, None, f"duplicate key {key!r} (first on line {seen[key]}, again on line {line})"
                )
            seen[key] = line
        return super().construct_mapping(node, deep=deep)


def load_params(path: str | Path = "params.yaml") -> Params:
    path = Path(path)
    try:
        data = yaml.load(path.read_text(), Loader=_UniqueKeyLoader)  # noqa: S506 - a SafeLoader subclass
    except FileNotFoundError:
        raise ParamsError(f"{path}: file not found") from None
    except yaml.constructor.ConstructorError as exc:
        raise ParamsError(f"{path}: {exc.problem}") from None
    except yaml.YAMLError as exc:
        raise ParamsError(f"{path}: invalid YAML: {exc}") from None
    if data is None:
        raise ParamsError(f"{path}: empty file; params.yaml must set the loop's sections (see the committed one)")
    if not isinstance(data, dict):
        raise ParamsError(f"{path}: expected a mapping of sections, got {type(data).__name__}")
    bad = _non_finite(data)
    if bad is not None:
        where, value = bad
        raise ParamsError(f"{path}: {where}: {value} is not a finite number")
    try:
        params = Params.model_validate(data, strict=True)
    except ValidationError as exc:
        err = exc.errors()[0]
        where = ".".join(map(str, err["loc"]))
        raise ParamsError(f"{path}: {where + ': ' if where else ''}{err['msg']}{_hint(err)}") from None
    params._defaulted = tuple(name for name in Params.model_fields if name not in data)
    if params.defaulted:
        log.warning("%s: no section %s: the code's defaults apply", path, ", ".join(params.defaulted))
    return params


def _non_finite(value: Any, where: str = "") -> tuple[str, float] | None:
    """The first infinite or NaN number anywhere in the file, with its key path."""
    if isinstance(value, float) and not math.isfinite(value):
        return where or "(top)", value
    items = value.items() if isinstance(value, dict) else enumerate(value) if isinstance(value, list) else ()
    for key, item in items:
        found = _non_finite(item, f"{where}.{key}" if where else str(key))
        if found is not None:
            return found
    return None


def _hint(err: Any) -> str:
    value = err.get("input")
    if err.get("type") == "float_type" and isinstance(value, str):
        try:
            float(value)
        except ValueError:
            return ""
        return f" (YAML reads {value} as text: write it with a dot and a signed exponent, e.g. 1.0e-3)"
    return f" (got {value!r})" if isinstance(value, bool | str | int | float) else ""
