"""LoRA's one type: `train.lora` in params.yaml, `SFTConfig.lora` and `GRPOConfig.lora` (no torch import, so params
load fast); None in those fields means full fine-tuning."""

from __future__ import annotations

from typing import Any

from pydantic import BaseModel, ConfigDict, Field, field_validator, model_validator

MAX_SCALE = 64  # alpha / rank: common recipes use 1 to 4, a few up to 32; beyond this no update stays sane
LORA_TARGETS = ("q_proj", "k_proj", "v_proj", "o_proj", "gate_proj", "up_proj", "down_proj")


class LoraSpec(BaseModel):
    """LoRA through peft: `rank` and `alpha` set the update's size, `target_modules` the linear layers adapted
    (module names as the architecture spells them; the default covers Llama, Qwen2/3, Mistral and Gemma)."""

    model_config = ConfigDict(extra="forbid")

    rank: int = Field(default=16, ge=1, description="Adapter rank.")
    alpha: int = Field(
        default=32,
        ge=1,
        description=f"Adapter scaling numerator (the update is scaled alpha/rank, at most {MAX_SCALE}).",
    )
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

    @model_validator(mode="after")
    def _scale(self) -> LoraSpec:
        if self.alpha > MAX_SCALE * self.rank:
            raise ValueError(
                f"alpha {self.alpha} over rank {self.rank} scales the adapter's update by {self.alpha / self.rank:g};"
                f" the bound is alpha <= {MAX_SCALE} * rank"
            )
        return self

    def peft_config(self) -> Any:
        """The peft LoraConfig these settings describe (SFT and GRPO share it)."""
        from peft import LoraConfig

        return LoraConfig(
            r=self.rank,
            lora_alpha=self.alpha,
            lora_dropout=self.dropout,
            target_modules=list(self.target_modules),
            task_type="CAUSAL_LM",
        )


def peft_config(lora: LoraSpec | None) -> Any:
    """peft's config for `lora`, or None (full fine-tuning)."""
    return None if lora is None else lora.peft_config()


def lora_record(lora: LoraSpec | None) -> dict[str, Any]:
    """LoRA as a checkpoint's training record writes it: {enabled, r, alpha, dropout, target_modules,
    save_adapter}, the record's schema since checkpoints first recorded their training (null LoRA: enabled false
    with the defaults)."""
    spec = lora or LoraSpec()
    return {
        "enabled": lora is not None,
        "r": spec.rank,
        "alpha": spec.alpha,
        "dropout": spec.dropout,
        "target_modules": list(spec.target_modules),
        "save_adapter": spec.save_adapter,
    }
