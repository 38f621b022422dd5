"""τ²-bench airline as a domain: flights with per-date status, seats and prices; users with payment methods,
saved passengers and membership; reservations. Named `airline` in `world.domain`."""
