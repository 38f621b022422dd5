"""The `train.lora` section of params.yaml: a LoRA adapter's shape (no torch import, so params load fast)."""

from __future__ import annotations

from pydantic import BaseModel, ConfigDict, Field, field_validator

LORA_TARGETS = ("q_proj", "k_proj", "v_proj", "o_proj", "gate_proj", "up_proj", "down_proj")


class LoraSpec(BaseModel):
    """LoRA through peft: `rank` and `alpha` set the update's size, `target_modules` the linear layers adapted
    (module names as the architecture spells them; the default covers Llama, Qwen2/3, Mistral and Gemma)."""

    model_config = ConfigDict(extra="forbid")

    rank: int = Field(default=16, ge=1, description="Adapter rank.")
    alpha: int = Field(default=32, ge=1, description="Adapter scaling numerator (the update is scaled alpha/rank).")
    dropout: float = Field(default=0.0, ge=0, lt=1, description="Dropout on the adapter's input.")
    target_modules: list[str] = Field(
        default_factory=lambda: list(LORA_TARGETS), min_length=1, description="Linear layers to adapt, by name."
    )
    save_adapter: bool = Field(
        default=False,
        description="Also write the adapter (peft format) to CHECKPOINT/adapter; the checkpoint itself always holds"
        " the merged weights.",
    )

    @field_validator("target_modules")
    @classmethod
    def _names(cls, v: list[str]) -> list[str]:
        bad = [n for n in v if not n.strip()]
        if bad or len(set(v)) != len(v):
            raise ValueError(f"target_modules must be distinct, non-empty module names (got {v})")
        return v
