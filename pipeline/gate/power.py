"""What the gate could have seen: the minimum detectable effect (MDE) on pass^k, and the three outcomes.

The gate promotes when the lower bound of its percentile interval of the pass^k gain clears the margin. Its
bootstrap distribution of the gain is close to normal with standard deviation ``se`` (the spread of the very
paired, template-clustered resamples the interval is taken from), and a true gain shifts that distribution
without widening it much. So a true gain ``d`` is promoted with probability about
Φ((d − margin)/se − z), where z = z_{1 − (1 − confidence)/2} is the one-sided quantile the lower bound sits
at; solving for probability ``power`` gives

    MDE = margin + (z_{1 − (1 − confidence)/2} + z_{power}) · se

(1.96 + 0.84 = 2.80 standard errors over the margin at the defaults): the smallest true gain the gate would
have promoted with probability ``power`` at this evaluation's size and spread.

When the interval straddles the margin, the gate has not shown a gain; whether that is evidence of "no gain
worth having" depends on what it could have seen. If the MDE exceeds margin + min_effect, a gain of
min_effect would likely have gone unseen: the outcome is *inconclusive*, with the task count that would
resolve it. The standard error falls as 1/sqrt(tasks) when new tasks are drawn like the current ones (the
same mix of templates, so the number of template clusters grows with them), so the MDE reaches
margin + min_effect at n · ((MDE − margin) / min_effect)² tasks.

A standard error of zero is no finding: every resample gave the same gain (one task, or every task's paired
difference equal, e.g. all unchanged), so the spread says nothing about what the gate could have seen and the MDE
is not estimated (None). A tie at the margin is then inconclusive, never blocked; a loss below it blocks. A gain
above the margin with zero spread promotes only when so many tasks all moved the same way that chance could hardly
have done it: 0.5^tasks ≤ (1 − confidence)/2, the sign test's bound (6 tasks at 95%); with fewer it is
inconclusive.
"""

from __future__ import annotations

import math
from statistics import NormalDist, pstdev
from typing import Literal

Outcome = Literal["promote", "block", "inconclusive"]
OUTCOMES: tuple[Outcome, ...] = ("promote", "block", "inconclusive")


def z_sum(confidence: float, power: float) -> float:
    """z_{1 − (1 − confidence)/2} + z_{power}: standard errors between the margin and the MDE.

    >>> round(z_sum(0.95, 0.8), 4)
    2.8016
    """
    normal = NormalDist()
    return normal.inv_cdf(1.0 - (1.0 - confidence) / 2.0) + normal.inv_cdf(power)


def standard_error(draws: list[float]) -> float:
    """The spread of the bootstrap draws: the standard error of the statistic they resample."""
    return pstdev(draws) if len(draws) > 1 else 0.0


def mde(se: float, margin: float, confidence: float, power: float) -> float | None:
    """The smallest true gain promoted with probability ``power`` (see the module docstring); None when the
    standard error is 0 (no spread: nothing to say what the gate could have seen).

    >>> round(mde(0.05, 0.0, 0.95, 0.8), 4)
    0.1401
    >>> mde(0.0, 0.0, 0.95, 0.8) is None
    True
    """
    if se <= 0.0:
        return None
    return margin + z_sum(confidence, power) * se


def sign_decisive(tasks: int, confidence: float) -> bool:
    """Whether `tasks` tasks all moving one way is beyond chance at `confidence` (the sign test).

    >>> sign_decisive(5, 0.95), sign_decisive(6, 0.95)
    (False, True)
    """
    return 0.5**tasks <= (1.0 - confidence) / 2.0


def tasks_needed(n_tasks: int, se: float, min_effect: float, confidence: float, power: float) -> int | None:
    """Held-out tasks at which the MDE falls to margin + min_effect (se ∝ 1/sqrt(tasks)); None when se is 0.

    >>> tasks_needed(100, 0.05, 0.10, 0.95, 0.8)  # (2.80 × 0.05 / 0.10)² × 100 = 196.2
    197
    """
    if se <= 0.0:
        return None
    return max(1, math.ceil(n_tasks * (z_sum(confidence, power) * se / min_effect) ** 2 - 1e-9))


def outcome(
    low: float,
    high: float,
    margin: float,
    mde_: float | None,
    min_effect: float,
    regressed: bool,
    decisive: bool = True,
) -> Outcome:
    """promote: the bound clears the margin and nothing got worse. block: something got significantly worse,
    the interval lies at or below the margin, or it straddles the margin although the gate could have seen a
    gain of min_effect. inconclusive: it straddles the margin and the MDE exceeds margin + min_effect; or the
    MDE could not be estimated (None: zero spread) and the interval sits on the margin, or above it by too few
    tasks (`decisive` false, see `sign_decisive`).

    >>> outcome(0.02, 0.2, 0.0, 0.1, 0.1, False), outcome(-0.1, 0.2, 0.0, 0.2, 0.1, False)
    ('promote', 'inconclusive')
    >>> outcome(-0.05, 0.05, 0.0, 0.08, 0.1, False), outcome(-0.1, 0.2, 0.0, 0.2, 0.1, True)
    ('block', 'block')
    >>> outcome(0.0, 0.0, 0.0, None, 0.1, False), outcome(1.0, 1.0, 0.0, None, 0.1, False, decisive=False)
    ('inconclusive', 'inconclusive')
    """
    if regressed:
        return "block"
    if mde_ is None:  # zero spread: every cluster moved alike
        if high < margin:
            return "block"
        return "promote" if low > margin and decisive else "inconclusive"
    if low > margin:
        return "promote"
    if high > margin and mde_ > margin + min_effect:
        return "inconclusive"
    return "block"
