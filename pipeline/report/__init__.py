"""The report: one self-contained HTML page explaining a candidate against its baseline, plots included."""

from __future__ import annotations

from typing import TYPE_CHECKING

from pipeline.lazy import lazy_exports

if TYPE_CHECKING:
    from pipeline.report.build import build_report
    from pipeline.report.history import HISTORY_PLOT
    from pipeline.report.inputs import ReportInputError

__all__ = ["HISTORY_PLOT", "ReportInputError", "build_report"]

_LAZY = {
    "HISTORY_PLOT": "pipeline.report.history",
    "ReportInputError": "pipeline.report.inputs",
    "build_report": "pipeline.report.build",
}
"""Exports imported when first used: their modules need matplotlib."""

__getattr__ = lazy_exports(__name__, _LAZY)
