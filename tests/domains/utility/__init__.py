"""A power, gas and water utility written from docs/domains.md: tables, tools, identity, ownership, policy."""
