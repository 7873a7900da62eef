"""reproducible_dot: the correctly rounded sum of the products, the same whatever the order of
the terms (numpy.dot's depends on the BLAS threads and CPU kernel; see test_determinism's
test_metrics_do_not_depend_on_the_number_of_blas_threads for the run that showed it)."""

from __future__ import annotations

from fractions import Fraction

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from tiersweep.core.sums import reproducible_dot
from tiersweep.core.workloads.offered_load import offered_load

finite = st.floats(min_value=-1e12, max_value=1e12, allow_nan=False, allow_infinity=False)


def exact_sum_of_rounded_products(a, b) -> float:
    """Each product rounded to float64 (as IEEE multiplication does), then summed exactly
    in rationals and rounded once."""
    return float(sum((Fraction(float(x) * float(y)) for x, y in zip(a, b, strict=True)), Fraction(0)))


@settings(max_examples=200, deadline=None)
@given(st.lists(st.tuples(finite, finite), min_size=0, max_size=60))
def test_the_sum_is_the_exact_sum_of_the_rounded_products_rounded_once(pairs):
    a = np.array([x for x, _ in pairs], dtype=np.float64)
    b = np.array([y for _, y in pairs], dtype=np.float64)
    assert reproducible_dot(a, b) == exact_sum_of_rounded_products(a, b)


def test_the_order_of_the_terms_does_not_change_a_bit():
    rng = np.random.default_rng(7)
    a = rng.lognormal(0, 3, 50_000) * rng.choice([-1.0, 1.0], 50_000)
    b = rng.lognormal(5, 2, 50_000)
    first = reproducible_dot(a, b)
    for _ in range(3):
        order = rng.permutation(len(a))
        assert reproducible_dot(a[order], b[order]).hex() == first.hex()
    # Cancellation: the exact answer survives where a running sum would lose it.
    assert reproducible_dot([1e16, 1.0, -1e16], [1.0, 1.0, 1.0]) == 1.0


def test_integer_inputs_and_empty_ones():
    assert reproducible_dot([3, 4], [5, 6]) == 39.0
    assert reproducible_dot([], []) == 0.0
    for short in ([1.0, 2.0], [1.0]):  # (no broadcasting of a single value either)
        with pytest.raises(ValueError, match="shapes"):
            reproducible_dot(short, [1.0, 2.0, 3.0])


def test_non_finite_terms_give_what_numpy_dot_gives():
    inf, nan = float("inf"), float("nan")
    assert reproducible_dot([1.0, inf], [1.0, 2.0]) == inf
    assert np.isnan(reproducible_dot([inf, inf], [1.0, -1.0]))  # (math.fsum alone raises here)
    assert np.isnan(reproducible_dot([1.0, nan], [1.0, 1.0]))
    assert np.isnan(reproducible_dot([0.0], [inf]))


def test_offered_load_divides_the_correctly_rounded_work():
    """The work of a generated workload (whole sizes, fractional runtimes) is the sum of its
    products rounded once, whichever machine computes it (numpy.dot on two BLAS threads was
    a bit off here)."""
    rng = np.random.default_rng(6)  # (on 2 BLAS threads numpy.dot missed by one bit here)
    n = 30_000  # (long enough for a BLAS library to split the sum among threads)
    submit = np.cumsum(rng.exponential(300.0, n))
    size = rng.integers(1, 93_312, n)
    runtime = rng.lognormal(7.0, 2.0, n)
    span = float(submit.max() - submit.min())
    work = exact_sum_of_rounded_products(size, runtime)
    assert offered_load(submit, size, runtime, 93_312) == work / (93_312 * span)
