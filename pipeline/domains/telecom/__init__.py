"""The telecom domain (τ²-bench telecom): a carrier's database on the agent's side, the customer's phone on theirs."""
