"""Building-block distributions shared by the workload models (MODELS.md section 1.5)."""

from __future__ import annotations

import math

__all__ = ["gammainc"]


def gammainc(shape: float, x: float) -> float:
    """The regularised lower incomplete gamma function P(shape, x) = G(x; shape, scale 1).

    Series expansion for ``x < shape + 1``, Lentz's continued fraction otherwise (Numerical
    Recipes, section 6.2), to about 1e-14 relative. Written here because the simulator core
    depends on numpy alone.
    """
    if shape <= 0:
        raise ValueError(f"shape must be positive, got {shape}")
    if x <= 0:
        return 0.0
    log_prefactor = shape * math.log(x) - x - math.lgamma(shape)
    if x < shape + 1:
        term = total = 1.0 / shape
        a = shape
        for _ in range(10_000):
            a += 1
            term *= x / a
            total += term
            if abs(term) < abs(total) * 1e-16:
                break
        return min(1.0, total * math.exp(log_prefactor))
    tiny = 1e-300
    b = x + 1 - shape
    c = 1 / tiny
    d = 1 / b
    h = d
    for i in range(1, 10_000):
        an = -i * (i - shape)
        b += 2
        d = an * d + b
        d = tiny if abs(d) < tiny else d
        c = b + an / c
        c = tiny if abs(c) < tiny else c
        d = 1 / d
        delta = d * c
        h *= delta
        if abs(delta - 1) < 1e-16:
            break
    return max(0.0, 1.0 - math.exp(log_prefactor) * h)
