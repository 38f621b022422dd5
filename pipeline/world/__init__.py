"""The world: records in tables, copy-on-write sessions, the tools that read and write them, and the `Domain`
boundary a world's domain is reached through."""
