"""The built-in domains (retail, airline, telecom): plug-ins the world's registry loads by name, each behind
`pipeline.world.domain.Domain`."""
