"""A lending library written from the walkthrough in docs/domains.md: tables, tools, identity, ownership, policy."""
