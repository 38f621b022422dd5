"""Domain packages beyond the reference retail world (pipeline.domains.retail); each sits behind
pipeline.world.domain.Domain and is named in `world.domain`."""
