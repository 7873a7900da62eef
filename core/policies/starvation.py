"""Starvation thresholds on the XFactor (paper 002; Srinivasan et al. 2002)."""

from __future__ import annotations

from typing import TYPE_CHECKING

from ..metrics import bounded_slowdown
from ..params import Param, number_or

if TYPE_CHECKING:
    from ..jobs import Job

__all__ = ["xfactor", "StarvationThreshold", "XFACTOR_THRESHOLD"]

#: The ``xfactor_threshold`` spec key of the policies with a starvation threshold.
XFACTOR_THRESHOLD = Param(
    number_or("adaptive", minimum=1.0),
    default="adaptive",
    doc="starvation threshold: a number >= 1, or adaptive = max(10, mean bounded slowdown)",
)


def xfactor(job: Job, now: float, estimate: float | None = None) -> float:
    """The expansion factor ``(wait + estimate) / estimate`` of a waiting job.

    The estimate (by default the job's, i.e. the requested time; a policy planning with
    predictions passes its own) is floored at 1 s so that zero-length estimates give a
    finite value.
    """
    estimate = max(job.estimate if estimate is None else estimate, 1.0)
    return (now - job.submit_time + estimate) / estimate


class StarvationThreshold:
    """A fixed threshold, or the adaptive ``max(10, mean bounded slowdown of completed jobs)``
    of paper 002, eq. 3.

    Args:
        threshold: A number, or ``"adaptive"``.
    """

    __slots__ = ("adaptive", "fixed", "_bsld_sum", "_completed")

    def __init__(self, threshold: float | str = "adaptive") -> None:
        self.adaptive = threshold == "adaptive"
        self.fixed: float | None = None if self.adaptive else float(threshold)
        self._bsld_sum = 0.0
        self._completed = 0

    @property
    def value(self) -> float:
        """The threshold in force now."""
        fixed = self.fixed
        if fixed is not None:  # exactly when the threshold is not adaptive
            return fixed
        mean = self._bsld_sum / self._completed if self._completed else 0.0
        return max(10.0, mean)

    def completed(self, job: Job) -> None:
        """Count a finished job towards the adaptive mean."""
        self._bsld_sum += bounded_slowdown(job.finish_time - job.submit_time, job.runtime)
        self._completed += 1

    def starved(self, job: Job, now: float, estimate: float | None = None) -> bool:
        """Whether ``job``'s XFactor (on ``estimate``, by default its own) has reached the
        threshold."""
        return xfactor(job, now, estimate) >= self.value
