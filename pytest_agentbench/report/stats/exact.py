"""Pass/fail counts -> exact two-sided p-values: Fisher's test (independent samples), McNemar's (paired).

Both sum exact integer probabilities (Python integers do not overflow), so a p-value is the
correctly rounded float of an exact fraction; they follow scipy's conventions, and tests compare
them with ``scipy.stats.fisher_exact`` and ``scipy.stats.binomtest``.
"""

from __future__ import annotations

from math import comb

# scipy's fisher_exact counts a table as "at least as extreme" when its probability is at most the
# observed one times (1 + 1e-14); the same tolerance, as exact integers: w * 10**14 <= w_obs * (10**14 + 1).
_TIE_SCALE = 10**14


def _check_cells(cells: tuple[int, ...], what: str) -> None:
    if any(isinstance(c, bool) or not isinstance(c, int) or c < 0 for c in cells):
        raise ValueError(f"{what}: expected non-negative integer counts, got {cells!r}")


def fisher_exact_p(passed_a: int, failed_a: int, passed_b: int, failed_b: int) -> float:
    """Two-sided Fisher's exact test of equal pass rates on the table ``[[passed_a, failed_a], [passed_b, failed_b]]``.

    The p-value sums the probabilities of every table with the same margins that is no more likely
    than the observed one (scipy's ``fisher_exact(table).pvalue`` and R's ``fisher.test``).

    Args:
        passed_a: Passes on side A.
        failed_a: Failures on side A.
        passed_b: Passes on side B.
        failed_b: Failures on side B.

    Returns:
        The p-value; 1.0 when a row or a column is empty (nothing to compare), as in scipy.

    Raises:
        ValueError: For negative or non-integer counts.
    """
    _check_cells((passed_a, failed_a, passed_b, failed_b), "Fisher's exact test")
    runs_a, runs_b = passed_a + failed_a, passed_b + failed_b
    passes = passed_a + passed_b
    if 0 in (runs_a, runs_b, passes, failed_a + failed_b):
        return 1.0
    # Weight of the table with x passes on side A: C(runs_a, x) * C(runs_b, passes - x) (hypergeometric).
    low, high = max(0, passes - runs_b), min(runs_a, passes)
    weights = [comb(runs_a, x) * comb(runs_b, passes - x) for x in range(low, high + 1)]
    observed = weights[passed_a - low]
    extreme = sum(w for w in weights if w * _TIE_SCALE <= observed * (_TIE_SCALE + 1))
    return min(1.0, extreme / comb(runs_a + runs_b, passes))


def mcnemar_exact_p(a_only: int, b_only: int) -> float:
    """Two-sided exact McNemar test from the discordant pairs of a paired comparison.

    Only instances where exactly one side passed carry information; under "no difference" each is
    equally likely to favour A or B, so this is the two-sided binomial test of ``b_only`` out of
    ``a_only + b_only`` at p = 1/2 (scipy's ``binomtest(b_only, a_only + b_only).pvalue``).

    Args:
        a_only: Instances only A passed.
        b_only: Instances only B passed.

    Returns:
        The p-value; 1.0 when there is no discordant pair (scipy's binomtest refuses n = 0; no
        discordant pair is no evidence of a difference).

    Raises:
        ValueError: For negative or non-integer counts.
    """
    _check_cells((a_only, b_only), "McNemar's exact test")
    discordant = a_only + b_only
    if discordant == 0:
        return 1.0
    smaller = min(a_only, b_only)
    # Symmetric at p = 1/2: both tails are equal, so the two-sided p is twice the smaller tail.
    tail = sum(comb(discordant, i) for i in range(smaller + 1))
    return min(1.0, 2 * tail / 2**discordant)
