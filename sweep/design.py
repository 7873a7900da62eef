"""Sampled designs: the ``sample:`` section of a sweep config.

::

    sample:
      method: sobol            # sobol (Saltelli's A, B, AB_i matrices), morris (trajectories) or latin
      n: 64                    # sobol: base points (a power of 2); morris: trajectories; latin: points
      seed: 0                  # the design's own seed (the workload seeds are the config's 'seeds')
      second_order: false      # sobol only: also the BA_i matrices, for second-order indices
      levels: 4                # morris only: grid levels per parameter (an even number)
      params:
        workload.load: {low: 0.6, high: 1.0}
        policy.xfactor_threshold: {low: 1, high: 200, log: true}
        platform.nodes: {low: 64, high: 512, integer: true}
        policy.name: {choices: [amcbf, smcbf]}

A design is a list of points in the unit cube, one coordinate per parameter, mapped to spec
values (uniform, log-uniform, rounded to integers, or an index into ``choices``). Each point is
combined with every grid point and every seed, as grid axes are, and becomes a cell like any
other: content-addressed, stored once, resumed after an interruption.

**Prefix stability.** Extending ``n`` computes only the new points: the points of a design of
``n`` are the first points of the same design with a larger ``n``. Sobol designs draw the
scrambled Sobol sequence of ``scipy.stats.qmc`` (2 x parameters dimensions, A then B), whose
first ``n`` points do not depend on how many follow; Morris trajectory ``t`` is drawn from its
own random stream (the design seed and ``t``). A Latin hypercube stratifies each parameter into
``n`` intervals, so no hypercube of ``n`` points is the start of one of ``2n``: a ``latin``
design with ``block: B`` is built in rounds of ``B`` points, each a Latin hypercube of its own
stream, so growing ``n`` by whole rounds keeps every point computed so far; without ``block`` it
is one hypercube of ``n`` points, and another ``n`` is another design.

The analysis (:mod:`tiersweep.analysis.sensitivity`) rebuilds the design from the config that
the results folder's manifest records and finds each design point's runs by its parameter values
(values are rounded to :data:`DIGITS` significant digits, so the stored value is the design's).
"""

from __future__ import annotations

import math
import warnings
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

import numpy as np

from ..core.errors import SpecError, refuse_unknown_keys
from ..core.spec import canonical_key

__all__ = ["Factor", "Design", "parse_design", "METHODS", "DIGITS"]

#: The sampling methods of a ``sample:`` section.
METHODS = ("sobol", "morris", "latin")
#: Significant digits of a sampled number (enough for any simulator input; short in tables).
DIGITS = 10
_KEYS = ("method", "n", "seed", "params", "second_order", "levels", "block")
_FACTOR_KEYS = ("low", "high", "log", "integer", "choices")
#: The most design points (before seeds and grid points) a config may ask for.
MAX_POINTS = 1_000_000


def _round(value: float) -> float:
    return float(f"{value:.{DIGITS}g}")


@dataclass(frozen=True)
class Factor:
    """One sampled parameter: a range (``low``-``high``, uniform or ``log``-uniform, optionally
    rounded to ``integer`` values) or a list of ``choices``."""

    key: str
    low: float | None = None
    high: float | None = None
    log: bool = False
    integer: bool = False
    choices: tuple[Any, ...] | None = None

    def value(self, u: float) -> Any:
        """The spec value at unit coordinate ``u`` in [0, 1]."""
        if self.choices is not None:
            return self.choices[min(int(u * len(self.choices)), len(self.choices) - 1)]
        assert self.low is not None and self.high is not None
        if self.log:
            x = math.exp(math.log(self.low) + u * (math.log(self.high) - math.log(self.low)))
        else:
            x = self.low + u * (self.high - self.low)
        x = min(max(x, self.low), self.high)  # (exp/log rounding must not leave the range)
        return int(round(x)) if self.integer else _round(x)


@dataclass(frozen=True)
class Design:
    """A parsed ``sample:`` section (see the module docstring)."""

    method: str
    n: int
    factors: tuple[Factor, ...]
    seed: int = 0
    second_order: bool = False
    levels: int = 4
    block: int | None = None

    @property
    def keys(self) -> list[str]:
        """The sampled spec keys, in config order."""
        return [f.key for f in self.factors]

    @property
    def group_size(self) -> int:
        """Design points per unit of ``n``: a Sobol base point's block (A, the AB_i, the BA_i
        with second order, B), a Morris trajectory (parameters + 1), or 1 (latin)."""
        d = len(self.factors)
        if self.method == "sobol":
            return 2 * d + 2 if self.second_order else d + 2
        if self.method == "morris":
            return d + 1
        return 1

    @property
    def size(self) -> int:
        """Design points in all."""
        return self.n * self.group_size

    @property
    def delta(self) -> float:
        """A Morris step in unit coordinates: levels / (2 (levels - 1))."""
        return self.levels / (2 * (self.levels - 1))

    def unit_points(self, n: int | None = None) -> np.ndarray:
        """The first ``n`` units (default: all) of the design, shape (n, group_size, parameters),
        in unit coordinates."""
        n = self.n if n is None else n
        d = len(self.factors)
        if self.method == "sobol":
            return self._sobol(n, d)
        if self.method == "morris":
            return np.stack([self._trajectory(t, d) for t in range(n)]) if n else np.zeros((0, d + 1, d))
        return self._latin(n, d)[:, None, :]

    def _sobol(self, n: int, d: int) -> np.ndarray:
        from scipy.stats import qmc

        with warnings.catch_warnings():  # (balance warnings for n not a power of 2: said by parse_design)
            warnings.simplefilter("ignore", UserWarning)
            sequence = qmc.Sobol(d=2 * d, scramble=True, seed=np.random.default_rng(self.seed))
            base = sequence.random(n) if n else np.zeros((0, 2 * d))
        a, b = base[:, :d], base[:, d:]
        rows = [a]
        for i in range(d):  # AB_i: A with column i from B
            ab = a.copy()
            ab[:, i] = b[:, i]
            rows.append(ab)
        if self.second_order:
            for i in range(d):  # BA_i: B with column i from A
                ba = b.copy()
                ba[:, i] = a[:, i]
                rows.append(ba)
        rows.append(b)
        return np.stack(rows, axis=1)

    def _trajectory(self, t: int, d: int) -> np.ndarray:
        """Morris trajectory ``t`` (its own stream: the design seed and ``t``): a start on the
        grid of ``levels`` levels, then one step of +-delta per parameter in random order."""
        rng = np.random.default_rng(np.random.SeedSequence(self.seed, spawn_key=(t,)))
        p = self.levels
        start = rng.integers(0, p // 2, size=d) / (p - 1)  # (start + delta <= 1)
        signs = rng.choice([-1.0, 1.0], size=d)
        x = np.where(signs > 0, start, start + self.delta)
        points = [x.copy()]
        for i in rng.permutation(d):
            x[i] += signs[i] * self.delta
            points.append(x.copy())
        return np.clip(np.array(points), 0.0, 1.0)

    def _latin(self, n: int, d: int) -> np.ndarray:
        from scipy.stats import qmc

        block = self.block or self.n
        parts = []
        for r in range(math.ceil(n / block)):
            stream = np.random.default_rng(np.random.SeedSequence(self.seed, spawn_key=(r,)))
            parts.append(qmc.LatinHypercube(d=d, seed=stream).random(block))
        return np.concatenate(parts)[:n] if parts else np.zeros((0, d))

    def values(self, units: np.ndarray) -> list[dict[str, Any]]:
        """Spec values (key -> value) of unit points (shape (..., parameters)), flattened in order."""
        flat = units.reshape(-1, len(self.factors))
        return [{f.key: f.value(float(u)) for f, u in zip(self.factors, row)} for row in flat]

    def points(self) -> list[dict[str, Any]]:
        """Every design point's spec values, in design order (unit by unit)."""
        return self.values(self.unit_points())


def _number(path: str, value: Any) -> float:
    if isinstance(value, bool) or not isinstance(value, (int, float)) or not math.isfinite(value):
        raise SpecError(f"{path}: expected a finite number, got {value!r}")
    return float(value)


def _flag(path: str, value: Any) -> bool:
    if not isinstance(value, bool):
        raise SpecError(f"{path}: expected true or false, got {value!r}")
    return value


def _factor(path: str, key: str, given: Any) -> Factor:
    if not isinstance(given, Mapping):
        expected = "{low: L, high: H[, log: true][, integer: true]} or {choices: [...]}"
        raise SpecError(f"{path}: expected {expected}, got {given!r}")
    refuse_unknown_keys(given, _FACTOR_KEYS, path)
    if "choices" in given:
        if set(given) != {"choices"}:
            raise SpecError(f"{path}: give either choices or a range (low, high), not both")
        choices = given["choices"]
        if not isinstance(choices, list) or not choices:
            raise SpecError(f"{path}.choices: expected a non-empty list of values, got {choices!r}")
        return Factor(key, choices=tuple(choices))
    if "low" not in given or "high" not in given:
        raise SpecError(f"{path}: expected low and high (or choices)")
    low, high = _number(f"{path}.low", given["low"]), _number(f"{path}.high", given["high"])
    if not low < high:
        raise SpecError(f"{path}: expected low < high, got low={low:g}, high={high:g}")
    log = _flag(f"{path}.log", given.get("log", False))
    if log and low <= 0:
        raise SpecError(f"{path}.low: a log range needs low > 0, got {low:g}")
    return Factor(key, low, high, log, _flag(f"{path}.integer", given.get("integer", False)))


def _count(path: str, value: Any, low: int, high: int) -> int:
    if isinstance(value, bool) or not isinstance(value, int) or not low <= value <= high:
        raise SpecError(f"{path}: expected an integer from {low} to {high:,}, got {value!r}")
    return value


def parse_design(raw: Any, seen: set[str]) -> Design:
    """Validate a ``sample:`` section; ``seen`` holds the grid's keys (a key is a grid axis or
    a sampled parameter, not both).

    Raises:
        SpecError: Naming the key path (``sample.params.KEY.low``, ...) and what was expected.
    """
    if not isinstance(raw, Mapping):
        raise SpecError(f"sample: expected a mapping with method, n and params, got {raw!r}")
    refuse_unknown_keys(raw, _KEYS, "sample")
    method = raw.get("method")
    if method not in METHODS:
        raise SpecError(f"sample.method: expected one of {', '.join(METHODS)}, got {method!r}")
    n = _count("sample.n", raw.get("n"), 1, MAX_POINTS)
    seed = _count("sample.seed", raw.get("seed", 0), 0, 2**63 - 1)
    params = raw.get("params")
    if not isinstance(params, Mapping) or not params:
        raise SpecError("sample.params: expected a mapping of dotted spec keys to {low, high} or {choices}")
    factors = []
    for given_key, given in params.items():
        key = canonical_key(str(given_key))
        path = f"sample.params.{given_key}"
        if key == "seed" or key.startswith("seed."):
            raise SpecError(f"{path}: give seeds with the top-level 'seeds' key, not as a parameter")
        if key in seen:
            raise SpecError(f"{path}: already an axis of the grid; a key is either a grid axis or sampled")
        if any(f.key == key for f in factors):
            raise SpecError(f"{path}: already sampled (as {key})")
        factors.append(_factor(path, key, given))
    second = _flag("sample.second_order", raw.get("second_order", False))
    if second and method != "sobol":
        raise SpecError(f"sample.second_order: only sobol designs have second-order indices (method is {method})")
    if "levels" in raw and method != "morris":
        raise SpecError(f"sample.levels: only morris designs have levels (method is {method})")
    levels = _count("sample.levels", raw.get("levels", 4), 2, 1000)
    if levels % 2:
        raise SpecError(f"sample.levels: expected an even number of levels (each step is half the grid), got {levels}")
    if "block" in raw and method != "latin":
        raise SpecError(f"sample.block: only latin designs are built in blocks (method is {method})")
    block = _count("sample.block", raw["block"], 1, MAX_POINTS) if "block" in raw else None
    if method == "sobol" and n & (n - 1):
        raise SpecError(
            f"sample.n: a Sobol design needs a power of 2 base points (its balance holds for those), got {n}; "
            f"give {1 << (n - 1).bit_length() >> 1 or 1} or {1 << (n - 1).bit_length()}"
        )
    design = Design(method, n, tuple(factors), seed, second, levels, block)
    if design.size > MAX_POINTS:
        raise SpecError(f"sample: {design.size:,} design points, more than {MAX_POINTS:,}; give a smaller n")
    return design
