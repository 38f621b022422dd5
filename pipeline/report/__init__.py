"""The report: one self-contained HTML page explaining a candidate against its baseline, plots included."""

from pipeline.report.build import build_report
from pipeline.report.inputs import ReportInputError

__all__ = ["ReportInputError", "build_report"]
