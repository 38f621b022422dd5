"""Agent programs built with real frameworks, each an `AgentProgram` (`program:examples.programs.MODULE:CLASS`)."""
