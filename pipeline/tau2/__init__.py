"""τ²-bench interop: its tasks and results files in, gold-equivalent conversations, its serve-side recipe."""

from pipeline.tau2.gold import by_user_id
from pipeline.tau2.import_run import import_run
from pipeline.tau2.importer import write_import
from pipeline.tau2.lint import CLASSES, lint_directory, write_findings
from pipeline.tau2.replay import write_replay
from pipeline.tau2.submission import build_submission, write_submission

__all__ = [
    "CLASSES",
    "build_submission",
    "by_user_id",
    "import_run",
    "lint_directory",
    "write_findings",
    "write_import",
    "write_replay",
    "write_submission",
]
