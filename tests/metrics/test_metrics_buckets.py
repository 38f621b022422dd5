"""Consistency buckets per task and as shares."""

from __future__ import annotations

import pytest

from pipeline.metrics import MetricsInputError, bucket_of, bucket_shares, consistency_buckets


def test_buckets_per_task_skip_infrastructure_errors():
    results = {
        "all": [True, True, None, True],
        "flip": [True, False, True],
        "none": [False, None, False],
        "lost_pass": [None, True],  # the one valid trial passed
    }
    assert consistency_buckets(results) == {"all": "always", "flip": "flipping", "none": "never", "lost_pass": "always"}
    shares = bucket_shares(results)
    assert shares == {"always": 0.5, "flipping": 0.25, "never": 0.25}
    assert sum(shares.values()) == 1.0


def test_shares_always_have_every_bucket():
    assert bucket_shares({"a": [False, False]}) == {"always": 0.0, "flipping": 0.0, "never": 1.0}


def test_bucket_errors_name_the_task_or_value():
    with pytest.raises(MetricsInputError, match=r"task 'gone' has no valid trials"):
        consistency_buckets({"ok": [True], "gone": [None, None]})
    with pytest.raises(MetricsInputError, match="empty task set"):
        bucket_shares({})
    with pytest.raises(MetricsInputError, match="n=0"):
        bucket_of(0, 0)
    with pytest.raises(MetricsInputError, match="c=4"):
        bucket_of(4, 3)
