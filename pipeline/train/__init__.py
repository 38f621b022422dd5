"""Training: the embedded default model (tokenizer, model, checkpoints), SFT and GRPO through TRL."""
