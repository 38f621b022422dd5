"""Measurements the loop trusts: pass@k / pass^k estimators and their task-set means, consistency buckets,
clustered bootstrap intervals (plain and paired), pass^k split by a task's expected outcome (act / refuse), cost
per success, pass figures per task template and the cost / reliability Pareto frontier.

Everything here is a pure function of outcomes (True / False, None for a trial lost to infrastructure) and
numbers; bad input raises MetricsInputError naming the offending task or value.
"""

from pipeline.metrics.aggregate import (
    Outcome,
    Results,
    count_outcomes,
    mean_pass_at_k,
    mean_pass_hat_k,
    pass_curve,
    per_task_pass_at_k,
    per_task_pass_hat_k,
    task_counts,
)
from pipeline.metrics.buckets import BUCKETS, Bucket, bucket_of, bucket_shares, consistency_buckets
from pipeline.metrics.cost import CostSummary, Price, PriceTable, cost_summary
from pipeline.metrics.errors import MetricsInputError
from pipeline.metrics.headline import IterationHeadline, headline, pct, pp
from pipeline.metrics.intervals import (
    Interval,
    bootstrap,
    bootstrap_draws,
    paired_bootstrap,
    paired_bootstrap_draws,
    percentile_interval,
    resample_tasks,
    task_clusters,
)
from pipeline.metrics.pareto import dominates, pareto_frontier
from pipeline.metrics.passk import check_counts, pass_at_k, pass_hat_k
from pipeline.metrics.split import ExpectedSplit, expected_split
from pipeline.metrics.summary import DIFF_KINDS, MeasureSummary, TrialRecord, summarize
from pipeline.metrics.templates import NO_TEMPLATE, TemplateFigures, by_template

__all__ = [
    "BUCKETS",
    "Bucket",
    "CostSummary",
    "DIFF_KINDS",
    "ExpectedSplit",
    "Interval",
    "IterationHeadline",
    "MeasureSummary",
    "MetricsInputError",
    "NO_TEMPLATE",
    "Outcome",
    "Price",
    "PriceTable",
    "Results",
    "TemplateFigures",
    "TrialRecord",
    "bootstrap",
    "bootstrap_draws",
    "bucket_of",
    "bucket_shares",
    "by_template",
    "check_counts",
    "consistency_buckets",
    "cost_summary",
    "count_outcomes",
    "dominates",
    "expected_split",
    "headline",
    "mean_pass_at_k",
    "mean_pass_hat_k",
    "paired_bootstrap",
    "paired_bootstrap_draws",
    "pareto_frontier",
    "pass_at_k",
    "pass_curve",
    "pass_hat_k",
    "pct",
    "per_task_pass_at_k",
    "per_task_pass_hat_k",
    "percentile_interval",
    "pp",
    "resample_tasks",
    "summarize",
    "task_clusters",
    "task_counts",
]
