"""Time-weighted statistics of the shared-VM platform: utilisation, efficiency, occupancy.

The platform feeds :meth:`OccupancyStats.advance` with the CPU in use and the number of
occupied machines at every new timestamp; both are constant between events, so the integrals
are exact sums of rectangles.
"""

from __future__ import annotations

import math

import numpy as np

__all__ = ["OccupancyStats", "OCCUPANCY_BINS"]

#: Occupancy ratio bins of the flat utilisation-versus-occupancy metrics: bin ``b`` (10..100)
#: holds the instants when ``(b - 10)% < occupied machines / P <= b%``.
OCCUPANCY_BINS = tuple(range(10, 101, 10))


class OccupancyStats:
    """Integrals over time of the CPU in use, overall and per number of occupied machines.

    Args:
        machines: Number of physical machines P (each of CPU capacity 1).

    Attributes:
        busy_integral: CPU-seconds used so far.
        occupied_integral: Occupied-machine-seconds so far.
        seconds_at: Seconds spent with k = 0..P machines occupied (index k).
        busy_at: CPU-seconds used while k machines were occupied (index k).
    """

    def __init__(self, machines: int) -> None:
        self.machines = machines
        self.first_time = math.nan
        self.last_time = math.nan
        self.busy_integral = 0.0
        self.occupied_integral = 0.0
        self.seconds_at = [0.0] * (machines + 1)
        self.busy_at = [0.0] * (machines + 1)

    def advance(self, now: float, usage: float, occupied: int) -> None:
        """Close the interval since the last call, during which ``usage`` CPU was in use on
        ``occupied`` machines, and open one at ``now``.

        Args:
            now: The new time (seconds); the first call only starts the clock.
            usage: CPU in use over the cluster since the last call (a tiny negative value from
                float drift counts as 0).
            occupied: Machines running at least one task since the last call.
        """
        last = self.last_time
        if last == last:  # not nan
            dt = now - last
            if dt > 0.0:
                usage = usage if usage > 0.0 else 0.0
                self.busy_integral += usage * dt
                self.occupied_integral += occupied * dt
                self.seconds_at[occupied] += dt
                self.busy_at[occupied] += usage * dt
        else:
            self.first_time = now
        self.last_time = now

    def occupancy_profile(self) -> tuple[np.ndarray, np.ndarray]:
        """Seconds spent with k = 0..P machines occupied, and the mean utilisation U then (nan if never)."""
        seconds = np.array(self.seconds_at)
        busy = np.array(self.busy_at)
        with np.errstate(invalid="ignore", divide="ignore"):
            mean_u = np.where(seconds > 0, busy / np.where(seconds > 0, seconds, 1.0) / self.machines, np.nan)
        return seconds, mean_u

    def totals(self, span: float) -> dict[str, float]:
        """``utilization`` (CPU-seconds over P x span), ``occupancy`` (mean fraction of machines
        occupied) and ``efficiency`` (CPU-seconds over occupied-machine-seconds); nan when
        undefined."""
        P = self.machines
        nan = float("nan")
        out: dict[str, float] = {}
        if span > 0:
            out["utilization"] = self.busy_integral / (P * span)
            out["occupancy"] = self.occupied_integral / (P * span)
        else:
            out["utilization"] = out["occupancy"] = nan
        out["efficiency"] = self.busy_integral / self.occupied_integral if self.occupied_integral > 0 else nan
        return out

    def by_occupancy(self, span: float) -> dict[str, float]:
        """``util_at_occ_<b>``: mean U while the occupancy ratio was in ``((b - 10)%, b%]`` (nan
        if never), and ``time_at_occ_<b>``: the fraction of ``span`` spent there, for each
        ``b`` of :data:`OCCUPANCY_BINS`."""
        P = self.machines
        nan = float("nan")
        out: dict[str, float] = {}
        seconds, busy = self.seconds_at, self.busy_at
        for b in OCCUPANCY_BINS:
            low, high = (b - 10) / 100.0, b / 100.0
            t = u = 0.0
            for k in range(1, P + 1):
                ratio = k / P
                if low < ratio <= high:
                    t += seconds[k]
                    u += busy[k]
            out[f"util_at_occ_{b}"] = u / (t * P) if t > 0 else nan
            out[f"time_at_occ_{b}"] = t / span if span > 0 else nan
        return out
