"""A digest of everything a run stores, over every contract pair's runs: the per-job records,
the run metrics, the workload report and the segments of each class's synthetic workload and
of a slice of the KTH-SP2 log (under each overrun rule).

A refactoring that must leave schedules and stored results unchanged prints the same digest
before and after: ``python tests/golden_digest.py`` from the project root (the traces beside it).
"""

from __future__ import annotations

import hashlib
import json
import math
import sys
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parent))

from test_conformance import POLICY_CLASSES  # noqa: E402
from tiersweep.core.simulate import simulate  # noqa: E402


def _value(value):
    if isinstance(value, float) and math.isnan(value):
        return "nan"
    if isinstance(value, (float, np.floating)):
        return float(value).hex()
    return repr(value)


def run_digest(spec) -> str:
    """SHA-256 of one run: job columns (name, dtype, bytes), metrics, report, segments, spec."""
    result = simulate(spec, record_segments=True)
    sha = hashlib.sha256()
    for column in sorted(result.jobs):
        values = np.ascontiguousarray(result.jobs[column])
        sha.update(f"{column}|{values.dtype.str}|{values.shape}|".encode() + values.tobytes())
    sha.update(json.dumps({k: _value(v) for k, v in sorted(result.metrics.items())}).encode())
    sha.update(json.dumps(result.report, sort_keys=True).encode())
    sha.update(repr(result.segments).encode())
    sha.update(json.dumps(result.spec, sort_keys=True, default=repr).encode())
    return sha.hexdigest()


def main() -> None:
    import os

    os.environ.setdefault("TIERSWEEP_TRACES", str(Path(__file__).resolve().parents[1].parent / "shared" / "traces"))
    total = hashlib.sha256()
    for cls in POLICY_CLASSES:
        contract = cls()
        specs = [contract.determinism_spec()]
        specs += [contract.trace_spec(200, rules) for rules in ({"overrun": "kill"}, {"overrun": "extend"})]
        for spec in specs:
            digest = run_digest(spec)
            total.update(digest.encode())
            print(cls.__name__, digest[:16], flush=True)
    # An old spelling of a moved key, through the alias.
    old = {
        "seed": 3,
        "workload": {"model": "lublin03", "jobs": 120, "load": 0.9},
        "platform": {"kind": "nodes", "nodes": 64, "tiers": 2},
        "policy": {"name": "amcbf", "migration_cost": 120},
    }
    total.update(run_digest(old).encode())
    print(f"{len(POLICY_CLASSES)} classes; total {total.hexdigest()}")


if __name__ == "__main__":
    main()
