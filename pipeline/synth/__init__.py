"""Targeted synthesis: tasks aimed at the cells targeting chose, evolved under coverage, verified by the world,
reworked where they fail, and returned with gold trajectories. The building blocks (kits, drafts, templates,
the world's partition) are `pipeline.authoring`'s."""
