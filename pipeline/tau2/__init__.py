"""τ²-bench interop: its tasks and results files in, gold-equivalent conversations, its serve-side recipe."""
