"""Training through TRL: SFT and GRPO of any checkpoint (the embedded default or an outside model), each trainer
beside its config; LoRA's one type."""
