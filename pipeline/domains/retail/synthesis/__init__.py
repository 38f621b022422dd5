"""Retail's synthesis kit (the retail domain's `synthesis()` capability) and its template names."""

from pipeline.authoring import PAIR, expand_cycle
from pipeline.domains.retail.synthesis.atomic import TEMPLATES
from pipeline.domains.retail.synthesis.grounding import Ctx
from pipeline.domains.retail.synthesis.kit import RETAIL_KIT, RetailKit
from pipeline.domains.retail.synthesis.taxonomy import TAXONOMY

ALL_TEMPLATES: tuple[str, ...] = (*TEMPLATES, PAIR)
RETAIL_CYCLE: tuple[str, ...] = tuple(expand_cycle(RETAIL_KIT))
"""The default cycle spelled out with retail's templates."""

__all__ = ["ALL_TEMPLATES", "RETAIL_CYCLE", "RETAIL_KIT", "TAXONOMY", "TEMPLATES", "Ctx", "RetailKit"]
