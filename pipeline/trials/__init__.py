"""Trials: an agent played k times on each task against a simulated customer, each trial graded from the state
it leaves; in threads on one machine (`executor`), many episodes in flight (`batch`), or on a Ray cluster
(`ray_executor`), with finished trials kept so an interrupted run resumes (`resume`)."""
