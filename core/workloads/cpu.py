"""CPU-usage annotation: what each process really uses, and what the scheduler believes.

Paper 000, section 5.2: a single-process job's process uses 100 % of a CPU; each process of a
multi-process job uses ``U(0.4, 1.0)``. The range is a parameter so that the paper's "average
CPU usage" study is one spec key.

What the scheduler believes, with accuracy ``a`` in [0, 1] (section 5.4 studies "the accuracy
of CPU usage information" down to "without any CPU usage information of parallel
processes"), is ``cpu_est = a * cpu_true + (1 - a) * guess``; ``a = 1`` is exact knowledge,
``a = 0`` no information about the process. The uninformed ``guess`` (``cpu_guess``):

* ``draw`` (default): an independent draw from the same ``U(low, high)`` as the truth, one per
  process of a multi-process job, from its own ``"cpu_guess"`` stream. An uninformed
  scheduler's estimates then look like real ones but say nothing about the process; as ``a``
  moves, every estimate moves continuously and their order and threshold crossings change, so
  each accuracy is a different experiment. A single-process job's usage is the workload's rule
  (a whole CPU, section 3), not information about a parallel process: it is known.
* ``prior``: one fixed value for every process, single-process ones included (``cpu_prior``,
  default 0.7, the mean of U(0.4, 1.0)), as DESIGN 4.1 first read it. With the 0.96 threshold
  every estimate of ``a`` below 0.87 stays under it and keeps the truth's order, so accuracies
  0.25 to 0.75 give identical schedules: kept to reproduce earlier results.

Per-process values are drawn lazily. The whole workload's draws are one sequence of the
``"cpu_usage"`` stream (the processes of the multi-process jobs, in workload order); each job
keeps its offset in it, and its per-process lists are materialised on first read by jumping the
stream to that offset (PCG64's ``advance``), giving exactly the values an eager draw gives. A run
that never reads them (dedicated nodes: only ``cpu_sum`` matters) never holds them: on a log
such as CEA-Curie (218 million processes) that is the difference between gigabytes and nothing.
``cpu_sum`` is computed eagerly, in blocks, as the left-to-right sum of the job's draws (the
same bits as summing the list).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

import numpy as np

from ..jobs import Job
from ..rng import stream

__all__ = ["annotate_cpu", "CpuDraws", "DEFAULT_CPU_USAGE", "DEFAULT_CPU_PRIOR"]

#: The U(low, high) range of a multi-process job's per-process CPU usage.
DEFAULT_CPU_USAGE = (0.4, 1.0)
#: The scheduler's uninformed guess of a process's CPU usage.
DEFAULT_CPU_PRIOR = 0.7
#: Draws generated at once while summing (bounds the transient memory: 32 MB).
_BLOCK_DRAWS = 1 << 22
#: Jobs of at least this many processes are summed one by one, where their draws lie.
_CONTIGUOUS_FROM = 256


class CpuDraws:
    """The CPU-usage draws of one workload: where the stream starts, and the mapping to values.

    Args:
        state: The ``"cpu_usage"`` stream's bit-generator state before the first draw.
        usage: ``(low, high)`` of the uniform draws.
        accuracy: ``a`` of ``cpu_est = a * true + (1 - a) * prior``.
        prior: The uninformed guess.
    """

    __slots__ = ("_true", "_guesses", "low", "high", "accuracy", "guess")

    def __init__(
        self,
        state: Mapping[str, Any],
        usage: tuple[float, float],
        accuracy: float,
        prior: float,
        guess_state: Mapping[str, Any] | None = None,
    ) -> None:
        self._true = _Cursor(state)
        #: The uninformed guesses' stream (``cpu_guess: draw``), or None for the fixed prior.
        self._guesses = None if guess_state is None or accuracy == 1.0 else _Cursor(guess_state)
        self.low, self.high = usage
        self.accuracy = accuracy
        self.guess = (1.0 - accuracy) * prior

    def materialize(self, offset: int, size: int) -> tuple[list[float], list[float]]:
        """The true and estimated per-process CPU usage of the job whose draws start at
        ``offset`` (jobs are usually read in workload order, so the cursor mostly moves forward)."""
        true, est = self.materialize_arrays(offset, size)
        values = true.tolist()
        return values, (values if est is true else est.tolist())

    def materialize_arrays(self, offset: int, size: int) -> tuple[np.ndarray, np.ndarray]:
        """:meth:`materialize` as float64 arrays (the same values: each estimate is one
        correctly rounded product and sum, elementwise, as on floats)."""
        true = self._true.uniform(offset, size, self.low, self.high)
        if self.accuracy == 1.0:
            return true, true
        accuracy = self.accuracy
        if self._guesses is not None:
            guesses = self._guesses.uniform(offset, size, self.low, self.high)
            return true, accuracy * true + (1.0 - accuracy) * guesses
        return true, accuracy * true + self.guess


class _Cursor:
    """Uniform draws of one stream read at any offset (jumping with PCG64's ``advance``)."""

    __slots__ = ("_state", "_bits", "_generator", "_position")

    def __init__(self, state: Mapping[str, Any]) -> None:
        self._state = state
        self._bits = np.random.PCG64()
        # numpy types a generator's state as a mapping but PCG64's setter as its own TypedDict.
        self._bits.state = state  # type: ignore[assignment]
        self._generator = np.random.Generator(self._bits)
        self._position = 0  # draws consumed so far

    def uniform(self, offset: int, size: int, low: float, high: float) -> np.ndarray:
        """Draws ``offset .. offset + size`` of the stream, as ``U(low, high)`` values (jobs are
        usually read in workload order, so the cursor mostly moves forward)."""
        if offset < self._position:
            self._bits.state = self._state  # type: ignore[assignment]  # see __init__
            self._position = 0
        if offset > self._position:
            self._bits.advance(offset - self._position)
        values = self._generator.uniform(low, high, size)
        self._position = offset + size
        return values


def _sequential_sums(draws: np.ndarray, sizes: np.ndarray) -> np.ndarray:
    """Per-job left-to-right sums of consecutive runs of ``draws`` (``sizes`` long each).

    numpy's reductions sum pairwise, which can differ from summing the list in the last bit;
    an accumulation is sequential by definition. A job of many processes is accumulated where
    its draws lie (contiguous: no copy), into a reused buffer; jobs of fewer processes are
    gathered by size into one matrix per size and accumulated along its rows, so that they
    cost one vector operation per distinct size rather than one call each.
    """
    out = np.empty(len(sizes))
    if not len(sizes):
        return out
    starts = np.cumsum(sizes) - sizes
    large = sizes >= _CONTIGUOUS_FROM
    if large.any():
        buffer = np.empty(int(sizes[large].max()))
        for job, start, size in zip(np.flatnonzero(large).tolist(), starts[large].tolist(), sizes[large].tolist()):
            out[job] = np.add.accumulate(draws[start : start + size], out=buffer[:size])[-1]
    small = np.flatnonzero(~large)
    order = small[np.argsort(sizes[small], kind="stable")]
    by_size = sizes[order]
    edges = np.concatenate(([0], np.flatnonzero(np.diff(by_size)) + 1, [len(by_size)]))
    for first, last in zip(edges[:-1], edges[1:]):
        if first == last:
            continue  # no small job at all
        members = order[first:last]
        matrix = draws[starts[members][:, None] + np.arange(by_size[first])]
        out[members] = np.cumsum(matrix, axis=1)[:, -1]
    return out


def annotate_cpu(
    jobs: Sequence[Job],
    *,
    seed: int,
    usage: tuple[float, float] = DEFAULT_CPU_USAGE,
    accuracy: float = 1.0,
    prior: float = DEFAULT_CPU_PRIOR,
    guess: str = "draw",
) -> None:
    """Set the CPU usage of every job, in place: ``cpu_sum`` now, the per-process
    ``cpu_true`` and ``cpu_est`` lazily (see the module docstring).

    The draws come from the ``"cpu_usage"`` stream of ``seed`` in workload order, so they
    depend on the seed and the workload alone (never on the policy or platform): every policy
    of a replicate sees the same CPU usage.

    Args:
        jobs: The workload, in queue order.
        seed: The run's seed.
        usage: ``(low, high)`` with ``0 < low <= high <= 1``.
        accuracy: ``a`` in [0, 1].
        prior: The fixed uninformed guess, in (0, 1] (``guess: prior`` only).
        guess: ``draw`` or ``prior``: what stands in for the truth's missing ``1 - a`` (see
            the module docstring).
    """
    low, high = usage
    if not 0 < low <= high <= 1:
        raise ValueError(f"cpu_usage: expected 0 < low <= high <= 1, got {list(usage)}")
    if not 0 <= accuracy <= 1:
        raise ValueError(f"cpu_accuracy: expected a number in [0, 1], got {accuracy}")
    if not 0 < prior <= 1:
        raise ValueError(f"cpu_prior: expected a number in (0, 1], got {prior}")
    if guess not in ("draw", "prior"):
        raise ValueError(f"cpu_guess: expected draw or prior, got {guess!r}")
    rng = stream(seed, "cpu_usage")
    guess_state = stream(seed, "cpu_guess").bit_generator.state if guess == "draw" else None
    draws = CpuDraws(rng.bit_generator.state, (low, high), accuracy, prior, guess_state)
    sizes = np.fromiter((job.size for job in jobs), np.int64, len(jobs))
    # Every single-process job uses one whole CPU: one shared (read-only) list for all of them.
    # With drawn guesses that rule is known (see the module docstring); with the prior it is not.
    single = [1.0]
    single_est = None if accuracy == 1.0 or guess == "draw" else [accuracy * 1.0 + draws.guess]
    for index in np.flatnonzero(sizes == 1).tolist():
        jobs[index].set_cpu(single, single_est, 1.0)
    # The multi-process jobs' draws, in workload order: job i's start at offsets[i] in the stream.
    multi = np.flatnonzero(sizes > 1)
    multi_sizes = sizes[multi]
    ends = np.cumsum(multi_sizes)
    offsets = ends - multi_sizes
    totals = np.empty(len(multi))
    # Sum them block by block (as many whole jobs as fit in _BLOCK_DRAWS draws, at least one).
    first = 0
    while first < len(multi):
        last = max(first + 1, int(np.searchsorted(ends, offsets[first] + _BLOCK_DRAWS, side="right")))
        count = int(ends[last - 1] - offsets[first])
        totals[first:last] = _sequential_sums(rng.uniform(low, high, count), multi_sizes[first:last])
        first = last
    for index, offset, total in zip(multi.tolist(), offsets.tolist(), totals.tolist()):
        jobs[index].set_cpu_draws(draws, offset, total)
