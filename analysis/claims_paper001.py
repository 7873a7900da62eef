"""Paper 001's claims (Delgado et al., shared VMs): the CTC figures of V-E under the text's and
the calibrated allocation, and V-A's VM-max study, as rows of the reproduction table
(:data:`ROWS`); the claims only the unavailable Grid'5000 trace could test (:data:`UNTESTABLE`).
"""

from __future__ import annotations

import pandas as pd

from .claim_measures import RUN_COLUMNS, near, shares_ratio, vm_ratio, where
from .claim_rules import Claim, Estimate, Measure, Untestable, Verdict, ok_runs, point_holds, verdict_of

__all__ = ["ROWS", "UNTESTABLE"]

_VM_COLUMNS = (
    *RUN_COLUMNS,
    "workload.trace",
    "workload.load",
    "platform.shares",
    "platform.allocation",
    "policy.selector",
)
_V_E = (
    'V-E, figure 10 (CTC, PCFC and PC-sg): "the makespan is roughly doubled for the heterogeneous VM case. In '
    "terms of efficiency, both algorithms are about 98% for all the homogeneous and 56-58% for the heterogeneous "
    'configurations. The median expansion factors were nearly twice as large in the heterogeneous VM case"'
)
_CTC_SETTING = (
    "the paper's CTC trace run unmodified (IV) on 64 machines x 4 VMs, FCFS with backfilling on EC estimates; the "
    "number of jobs is not stated: ours the first 10,000 jobs of CTC-SP2 (as for its Grid'5000 runs)"
)
_ALLOCATIONS = (
    (
        "fixed_point",
        False,
        'allocation: fixed_point (text, V-D: serial jobs "consume all the compute cycles lost due to the ripple '
        'effect")',
    ),
    ("paper", True, "allocation: paper (calibrated: a one-pass split, chosen because it reproduces the CTC figures)"),
)
_CTC_CLAIMS = (
    (
        "CTC, PC-sg and PCFC-sg, homogeneous shares: efficiency about 98 % (tolerance 0.02)",
        ("efficiency",),
        lambda: near("efficiency", "CTC", "homogeneous", 0.98, 0.02),
    ),
    (
        "CTC, PC-sg and PCFC-sg, heterogeneous shares: efficiency 56-58 % (0.57, tolerance 0.04)",
        ("efficiency",),
        lambda: near("efficiency", "CTC", "heterogeneous", 0.57, 0.04),
    ),
    (
        "CTC, PC-sg and PCFC-sg: heterogeneous shares roughly double the makespan (2x, tolerance 0.5)",
        ("makespan",),
        lambda: shares_ratio("makespan", "CTC", 2.0, 0.5),
    ),
    (
        "CTC, PC-sg and PCFC-sg: heterogeneous shares nearly double the median XF (2x, tolerance 0.5)",
        ("median_xf",),
        lambda: shares_ratio("median_xf", "CTC", 2.0, 0.5),
    ),
)
_V_A = (
    'V-A, figure 7 (serial jobs, heterogeneous shares, PC-g): "we reduce the max parameter of VM_4 [...] to 0.5. '
    "This change (blue squares) has little effect on efficiency [...] A large drop in η occurs when all VMs have "
    'max=0.5 [...] the mean XF in this case is about 40% higher than in the case of unconstrained VMs."'
)
_V_A_SETTING = (
    "the paper filters an unnamed trace to its serial jobs and runs traces unmodified (IV); ours: LPC-EGEE (all "
    "serial), first 10,000 jobs as recorded, heterogeneous shares (1, 1, 2, 4), PC-g"
)
_V_A_COLUMNS = (*RUN_COLUMNS, "workload.trace", "policy.selector", "platform.max", "efficiency", "mean_xf")


def _all_efficient(runs: pd.DataFrame) -> Verdict:
    """Every LPC-EGEE cell (serial jobs only) runs at efficiency 1 (a point claim per cell, deterministic)."""
    rows = ok_runs(runs)
    rows = rows[rows["workload.trace"].map(str).str.contains("LPC")]
    if rows.empty:
        return Verdict("no cells stored", 0, 0, False)
    wins = [point_holds(Estimate("", v, v, v, True), 1.0, 1e-9) for v in rows["efficiency"].astype(float)]
    lowest = rows["efficiency"].min()
    return verdict_of([f"efficiency over {len(rows)} LPC cells (deterministic): min {lowest:.4f}"], wins, "all")


#: Paper 001's rows, in the table's order.
ROWS: list[Claim] = [
    Claim(
        "001",
        text,
        "delgado_vms",
        where("platform.allocation", allocation, build()),
        "point",
        quote=_V_E,
        setting=_CTC_SETTING,
        columns=(*_VM_COLUMNS, *metrics),
        choices=(label,),
        calibrated=calibrated,
    )
    for text, metrics, build in _CTC_CLAIMS
    for allocation, calibrated, label in _ALLOCATIONS
]

_SERIAL = ("none: with serial jobs the two allocations agree",)


def _vmax(text: str, measure: Measure, kind: str = "point") -> Claim:
    """One row of V-A's VM-max study (figure 7)."""
    common = dict(quote=_V_A, setting=_V_A_SETTING, columns=_V_A_COLUMNS, choices=_SERIAL)
    return Claim("001", text, "paper001_vmax", measure, kind, **common)


ROWS += [
    Claim(
        "001",
        "Serial-only workloads run at efficiency 1",
        "delgado_vms",
        _all_efficient,
        "point",
        quote='V-A: "so long as the max parameter of each VM is 1, the efficiency η of the cluster is unity"',
        setting="LPC-EGEE (all serial) standing in for the paper's filtered trace, as recorded and at offered load "
        "1.0 per machine",
        columns=(*RUN_COLUMNS, "workload.trace", "efficiency"),
        choices=_SERIAL,
    ),
    _vmax(
        "VM_4's max at 0.5 has little effect on efficiency (ratio 1, tolerance 0.02)",
        vm_ratio("efficiency", "platform.max", [1.0, 1.0, 1.0, 0.5], 1.0, 1.0, 0.02),
    ),
    _vmax(
        "Every VM's max at 0.5 drops the efficiency (below max 1; 'large' not judged)",
        vm_ratio("efficiency", "platform.max", 0.5, 1.0, 1.0, 0.0, compare_only=True),
        "comparison",
    ),
    _vmax(
        "Every VM's max at 0.5 raises the mean XF by about 40 % (ratio 1.4, tolerance 0.1)",
        vm_ratio("mean_xf", "platform.max", 0.5, 1.0, 1.4, 0.1),
    ),
]


#: Paper 001's claims that no config here can test, each with the reason.
UNTESTABLE: list[Untestable] = [
    Untestable(
        "001",
        "Table I (V-C): U, η, XF_c, XF, XF_90 and makespan of PC-sg, PCFC-sg, EC and PMVM, homogeneous VMs",
        "measured on the first 10,000 jobs of a Grid'5000 trace, which is not available",
    ),
    Untestable(
        "001",
        "Table II (V-D): the same metrics with heterogeneous VMs, PC-g included",
        "measured on the Grid'5000 trace, which is not available",
    ),
    Untestable(
        "001",
        'V-D, figure 9: "The EC, PC-sg and PCFC-sg are more efficient than PC-g and PMVM [...] with PCFC-sg '
        'performing slightly better"',
        "figure 9 is the Grid'5000 trace of Table II, which is not available",
    ),
    Untestable(
        "001",
        "V-B, figure 8: homogeneous makespan 30-40 % lower, average efficiency 89 % against 65 %, median XF more than "
        '30 % lower (PCFC); abstract: "up to 47% average under-utilization [...] reduce this to 35%"',
        "the trace of figure 8 is not named (the CTC figures of V-E are rows)",
    ),
]
