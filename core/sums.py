"""Sums whose result is the same on every machine: what a stored result may be computed with.

``numpy.dot`` hands a dot product to the BLAS library numpy links, and its result depends on
that library's threads and CPU kernel: OpenBLAS splits a long product among its threads (one per
CPU unless told otherwise) and adds the parts in another order, and picks per CPU a kernel with
its own accumulators. A run in a sweep worker (one BLAS thread) and the same run in a notebook,
or on another machine, then store values that differ in their last bits, and a run is no longer
a pure function of its spec and code. :func:`reproducible_dot` rounds the sum once, exactly
(``math.fsum``), so that neither the order of the terms nor the machine changes it.
"""

from __future__ import annotations

import math

import numpy as np
from numpy.typing import ArrayLike

__all__ = ["reproducible_dot"]


def reproducible_dot(a: ArrayLike, b: ArrayLike) -> float:
    """The sum of ``a * b`` (as float64), correctly rounded: each product is rounded as IEEE
    multiplication rounds it, and their sum is rounded once (``math.fsum``), whatever the
    order, the machine or the BLAS library (``numpy.dot``'s result depends on all three)."""
    left, right = np.asarray(a, dtype=np.float64), np.asarray(b, dtype=np.float64)
    if left.shape != right.shape:
        raise ValueError(f"reproducible_dot: shapes {left.shape} and {right.shape} differ")
    with np.errstate(invalid="ignore"):  # (0 * inf and inf - inf are nan, silently, as in numpy.dot)
        products = np.multiply(left, right).ravel()
        if not np.isfinite(products).all():
            # nan, or an infinity: the same whatever the order (math.fsum would raise on inf - inf).
            return float(np.sum(products))
    return math.fsum(products.tolist())
