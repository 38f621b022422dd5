"""`MeasureConfig`: one measure run's settings, which are also params.yaml's `measure` section.

`agentloop measure` parses its options into it, the measure and remeasure stages take the `measure` section as it
is and fill in the run's inputs (`LOOP_INPUTS`) from the other sections, and a library call builds one directly.
The class's defaults are a library call's and the command's (trials run in this process, the agent's own
sampling); the loop's section defaults to the committed params.yaml (`loop_measure_config`: Ray, temperature 0.7).
"""

from __future__ import annotations

from pathlib import Path
from typing import Annotated, Literal

from pydantic import BaseModel, BeforeValidator, ConfigDict, Field

from pipeline.digest import sha256_json
from pipeline.grading import VerdictName
from pipeline.metrics import PriceTable
from pipeline.rollout import Limits

# A path written in YAML is text; params.yaml is validated strictly, so the text is turned into a Path first.
PathText = Annotated[Path, BeforeValidator(lambda v: Path(v) if isinstance(v, str) else v)]

LOOP_INPUTS = {
    "world": "world.eval_world",
    "domain": "world.domain",
    "agent": "the baseline's or the candidate's checkpoint",
    "limits": "gate.limits",
    "verdict": "gate.verdict",
}
"""The fields the loop's stages set from elsewhere (params.yaml's `measure` section may not): where each comes from."""

SAMPLED_BACKENDS = ("hf", "vllm")


def sampled(spec: str, temperature: float | None) -> str:
    """A checkpoint agent's spec with the measuring protocol's sampling temperature (other agents unchanged)."""
    if temperature is None or not spec.startswith(tuple(f"{b}:" for b in SAMPLED_BACKENDS)) or "temperature=" in spec:
        return spec
    return f"{spec},temperature={temperature:g}"


class MeasureConfig(BaseModel):
    model_config = ConfigDict(extra="forbid")

    world: str | None = Field(
        default=None,
        description="World reference (gen-<seed>[-PxUxO] or a domain directory); a run needs one (the loop:"
        " world.eval_world).",
    )
    domain: str | None = Field(
        default=None, description="Domain name or module:attribute (None: found from the world reference)."
    )
    tasks: PathText | None = Field(
        default=None,
        description="Held-out tasks.jsonl; a run needs one. In params.yaml: a tasks.jsonl to measure instead of the"
        " generated held-out tasks (e.g. from `agentloop tasks import-tau2`); world.eval_world must then be the"
        " world those tasks run in, and target, gate and report read the same file.",
    )
    agent: str = Field(
        default="oracle",
        description="Agent spec: oracle, flawed[:mode=rate,...], hf:PATH, openai:MODEL, vllm:PATH,"
        " program:MODULE:FACTORY (an agent program; the loop: the baseline's or the candidate's checkpoint).",
    )
    trials: int = Field(default=4, ge=1, description="Trials per task (the k of pass^k); remeasure uses the same.")
    k: int | None = Field(default=None, ge=1, description="Largest k reported for pass@k / pass^k (default: trials).")
    seed: int = Field(default=0, description="Run seed; each trial's seed derives from it, the task and the trial.")
    limits: Limits = Field(default_factory=Limits)
    resamples: int = Field(default=1000, ge=1, description="Bootstrap resamples for intervals.")
    prices: PriceTable | None = Field(
        default=None,
        description="Prices ({currency, models: {MODEL: {prompt_per_million, completion_per_million,"
        " cached_prompt_per_million, per_compute_second}}}) by agent name or model (`gpt-x` prices openai:gpt-x);"
        " an agent the table does not name, or no table, is unpriced: cost 0 with `cost.priced` false, and tokens"
        " per success in its place.",
    )
    max_tasks: int | None = Field(default=None, ge=1, description="Use only the first N tasks (quick runs).")
    user: str = Field(
        default="scripted",
        description="User simulator: scripted, llm:MODEL[,...] or tau2-llm:MODEL[@BASE_URL][,temperature=T,"
        "max_tokens=N,seed=S] (τ²-bench's conventions; see pipeline/users/registry.py).",
    )
    judge: str | None = Field(default=None, description="Optional judge: llm:MODEL (None: off).")
    executor: Literal["serial", "ray"] = Field(default="serial", description="Where trials run: serial, or ray.")
    ray_address: str | None = Field(
        default=None,
        description="With executor ray (measure, remeasure and curate's probes): an existing Ray cluster to connect"
        " to, HOST:PORT (its head node's GCS port), ray://HOST:PORT or auto; the workers then fill the cluster's"
        " CPUs over all its nodes. None: $RAY_ADDRESS if set, else a local Ray instance the run starts.",
    )
    workers: int | None = Field(
        default=None, ge=1, description="Ray worker actors (None: one per CPU of the cluster, all its nodes)."
    )
    retries: int = Field(default=2, ge=0, description="Reruns of a trial lost to an infrastructure error.")
    concurrency: int = Field(
        default=16,
        ge=1,
        description="Episodes in flight per worker, their agent steps batched (one forward pass for hf, concurrent"
        " requests for openai); the verdicts are the same for any value, only the time changes.",
    )
    temperature: float | None = Field(
        default=None,
        ge=0,
        description="Sampling temperature of checkpoint agents (hf, vllm) whose spec sets none (the loop: also of"
        " curate's probes); None = the backend's default (greedy for hf). Sampling is what makes pass^k differ"
        " from pass^1.",
    )
    verdict: VerdictName = Field(
        default="strict", description="Verdict metrics.json and per_task.csv count passes by: strict or tau2."
    )

    def agent_spec(self) -> str:
        """The agent the run measures: `agent`, sampled at `temperature` when it is a checkpoint."""
        return sampled(self.agent, self.temperature)

    def fingerprint(self, tasks: list) -> str:
        """What decides the trials' results; a journal is resumed only under the same fingerprint."""
        from pipeline.agents import checkpoint_digest

        keep = {"world", "agent", "user", "judge", "trials", "seed", "limits"}
        agent = self.agent_spec()
        return sha256_json(
            {
                **self.model_dump(mode="json", include=keep | ({"domain"} if self.domain else set())),
                "agent": agent,
                "checkpoint": checkpoint_digest(agent),  # a checkpoint retrained in place is another agent
                "tasks": [t.model_dump(mode="json") for t in tasks],
            }
        )[:16]


def loop_measure_config() -> MeasureConfig:
    """The loop's measuring protocol, as the committed params.yaml sets it: trials on Ray workers, checkpoint
    agents sampled at temperature 0.7."""
    return MeasureConfig(executor="ray", temperature=0.7)
