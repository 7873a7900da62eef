"""Cells: one run of a sweep, with a canonical spec, a content-addressed id and a seed.

A cell's canonical spec is the validated spec (every default filled in) serialised as JSON with
sorted keys; its ``cell_id`` hashes that text together with the model version (which changes
whenever simulation semantics change) and the digest of the simulator's source
(:func:`tiersweep.core.version.code_digest`), so a stored result is reused exactly when it
would be computed again identically. A trace enters by its content digest instead of its path:
the same log under another path (another checkout, a config read from another folder) is the
same cell, and an edited log is another.
"""

from __future__ import annotations

import hashlib
import json
import os
from collections.abc import Mapping
from dataclasses import dataclass, field
from functools import lru_cache
from typing import Any

import numpy as np

from ..core.plan import RunPlan
from ..core.version import MODEL_VERSION, code_digest

__all__ = ["Cell", "canonical_json", "cell_id", "replicate_seed", "flatten", "file_digest", "trace_digest"]


def canonical_json(spec: Mapping[str, Any]) -> str:
    """The spec as JSON with sorted keys and no whitespace (floats in Python's shortest form)."""
    return json.dumps(spec, sort_keys=True, separators=(",", ":"), allow_nan=True)


@lru_cache(maxsize=64)
def _digest_of(path: str, size: int, mtime_ns: int) -> str:
    sha = hashlib.sha256()
    with open(path, "rb") as handle:
        for chunk in iter(lambda: handle.read(1 << 20), b""):
            sha.update(chunk)
    return sha.hexdigest()


def file_digest(path: str) -> str:
    """SHA-256 of a file's content (cached per path, size and modification time)."""
    stat = os.stat(path)
    return _digest_of(os.path.abspath(path), stat.st_size, stat.st_mtime_ns)


def trace_digest(spec: Mapping[str, Any]) -> str | None:
    """The content digest (SHA-256, hex) of a validated spec's trace, or None when it names no
    trace or none that is a regular file."""
    trace = spec.get("workload", {}).get("trace")
    if trace is not None and os.path.isfile(trace):
        return file_digest(trace)
    return None


_UNSET: Any = object()


def cell_id(spec: Mapping[str, Any], code: str | None = None, trace_sha256: str | None = _UNSET) -> str:
    """The content address of a validated spec: 16 hex digits of SHA-256 over its canonical
    JSON (a readable trace replaced by ``sha256:`` and its content digest), the model version
    and ``code`` (default: this process's :func:`~tiersweep.core.version.code_digest`).

    ``trace_sha256`` gives the trace's digest as already taken (:func:`trace_digest`), so that a
    cell's id and the digest its worker checks the trace against are one reading of the file.
    """
    digest = trace_digest(spec) if trace_sha256 is _UNSET else trace_sha256
    if digest is not None:
        spec = {**spec, "workload": {**spec["workload"], "trace": "sha256:" + digest}}
    material = "\n".join((canonical_json(spec), MODEL_VERSION, code or code_digest()))
    return hashlib.sha256(material.encode("utf-8")).hexdigest()[:16]


def replicate_seed(sweep_seed: int, replicate: int) -> int:
    """The seed of replicate ``replicate`` when a sweep gives a count of seeds.

    It depends on the sweep seed and the replicate index only, never on the policy, the
    platform or execution order, so every policy of a replicate sees the same workload
    (common random numbers, DESIGN section 2).
    """
    state = np.random.SeedSequence(sweep_seed, spawn_key=(replicate,)).generate_state(1, dtype=np.uint32)
    return int(state[0])


def flatten(spec: Mapping[str, Any], prefix: str = "") -> dict[str, Any]:
    """Nested mappings as one level of dotted keys (``{"policy": {"name": "easy"}}`` ->
    ``{"policy.name": "easy"}``); lists stay values."""
    out: dict[str, Any] = {}
    for key, value in spec.items():
        name = f"{prefix}{key}"
        if isinstance(value, Mapping):
            out.update(flatten(value, f"{name}."))
        else:
            out[name] = value
    return out


@dataclass(frozen=True)
class Cell:
    """One run of a sweep.

    Attributes:
        index: Position in the sweep's expansion order (rows are sorted by it).
        cell_id: Content address (see :func:`cell_id`).
        plan: The validated run (see :func:`tiersweep.core.spec.plan_run`): what its worker runs.
        point: The grid values that made this cell (dotted key -> value), seed excluded.
        replicate: Index of its seed in the sweep's list of seeds.
        trace_sha256: The digest of the trace content its id names (None without a trace): the
            worker computes the cell from exactly that content or fails it. Taken from the file
            when not given.
    """

    index: int
    cell_id: str
    plan: RunPlan = field(repr=False)
    point: dict[str, Any]
    replicate: int
    trace_sha256: str | None = field(default=_UNSET, repr=False)

    def __post_init__(self) -> None:
        if self.trace_sha256 is _UNSET:
            object.__setattr__(self, "trace_sha256", trace_digest(self.spec))

    @property
    def spec(self) -> dict[str, Any]:
        """The validated, canonical spec (a new dict: :attr:`RunPlan.spec <tiersweep.core.plan.RunPlan.spec>`)."""
        return self.plan.spec

    @property
    def seed(self) -> int:
        """The run's seed."""
        return self.plan.seed
