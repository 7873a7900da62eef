"""Paper 002's claims (k-tier consolidation and selective reservation) as rows of the
reproduction table (:data:`ROWS`): 3 tiers against 2 under AMCBF and SMCBF on paper 000's
JWorkload setting, selective consolidation against the other two, and selective backfilling
against conservative and EASY on three logs; the claim no config can test (:data:`UNTESTABLE`).
"""

from __future__ import annotations

from .claim_measures import RUN_COLUMNS, all_of, level_ratio, ratio_below, short_traces, where
from .claim_rules import Claim, Measure, Untestable
from .claims_paper000 import LIU_CHOICES, RT_BSLD

__all__ = ["ROWS", "UNTESTABLE"]

_KTIER_SETTING = (
    "the paper's CloudSim runs are not described (workload, sizes, loads); ours: paper 000's JWorkload setting "
    "(Jann 1997 fitted to CTC-SP2, 10,000 jobs, 320 nodes, loads 0.5-1.0), 3 tiers against 2, under AMCBF and SMCBF "
    "(consolidation with the selective reservation of V-B)"
)
_KTIER_COLUMNS = (
    *RUN_COLUMNS,
    "policy.name",
    "workload.load",
    "platform.tiers",
    "mean_response",
    "mean_bsld",
    "utilization",
)
_FIG4_002 = (
    'VI, figure 4: "K-tier architecture shows slightly better performance than 2-tier architecture in terms of '
    'finishing time. In k-tier architecture, the node utilization is better than 2-tier architecture."'
)
_SELECTIVE_COLUMNS = (*RUN_COLUMNS, "policy.name", "workload.trace", "mean_wait", "mean_bsld")

_THIRD_TIER = "a third tier: the second background VM gets what the first leaves (DESIGN 4.1)"
_SMCBF_QUOTE = (
    'Abstract: "There exists two-tier priority based consolidation methods: conservative migration and '
    "consolidation supported backfilling and aggressive [...]. In this paper propose a new scheduling method which "
    'is better than both conservative and aggressive backfilling." (reading: the two consolidation methods)'
)


def _ktier(text: str, measure: Measure, quote: str, choice: str) -> Claim:
    """One row of the k-tier runs (``configs/paper002_ktier.yaml``): paper 000's JWorkload choices and ``choice``."""
    common = dict(setting=_KTIER_SETTING, columns=_KTIER_COLUMNS, choices=(*LIU_CHOICES, choice))
    return Claim("002", text, "paper002_ktier", measure, quote=quote, **common)


#: Paper 002's rows, in the table's order.
ROWS: list[Claim] = [
    _ktier(
        "3 tiers beat 2 tiers on finishing (response) time (AMCBF and SMCBF, every load; 'slightly' not judged)",
        level_ratio("platform.tiers", 3, 2, "mean_response", policies=("amcbf", "smcbf")),
        _FIG4_002,
        _THIRD_TIER,
    ),
    _ktier(
        "3 tiers reach a higher node utilisation than 2 tiers (AMCBF and SMCBF, every load)",
        level_ratio("platform.tiers", 3, 2, "utilization", policies=("amcbf", "smcbf"), worse=True),
        _FIG4_002,
        _THIRD_TIER,
    ),
    _ktier(
        "Selective consolidation (SMCBF) beats CMCBF and AMCBF on response time and bounded slowdown "
        "(2 tiers, every load)",
        where("platform.tiers", 2, all_of(*(ratio_below(("smcbf",), o, RT_BSLD) for o in ("cmcbf", "amcbf")))),
        _SMCBF_QUOTE,
        "smcbf: a job may preempt once its XFactor passes max(10, mean slowdown)",
    ),
    Claim(
        "002",
        "Selective backfilling beats conservative and EASY backfilling on mean wait and bounded slowdown on every log",
        "paper002_selective",
        lambda runs: all_of(
            *(
                ratio_below(("selective",), o, ("mean_wait", "mean_bsld"), by=("workload.trace",))
                for o in ("conservative", "easy")
            )
        )(short_traces(runs)),
        quote='VII: "There is a selective reservation strategy that is superior to both conservative backfilling and '
        'Aggressive backfilling. [...] This reduce the waiting time of the jobs in the queue"',
        setting="the paper gives no workload; ours: the first 10,000 jobs of CTC-SP2, SDSC-SP2 and KTH-SP2 on "
        "dedicated nodes of each log's size, users' requests as estimates, threshold max(10, mean slowdown) "
        "(deterministic: every seed is the same run)",
        columns=_SELECTIVE_COLUMNS,
        choices=("xfactor_threshold: adaptive (text, equation 3)",),
    ),
]


#: Paper 002's claim that no config here can test, and why.
UNTESTABLE: list[Untestable] = [
    Untestable(
        "002",
        'VI: "If there are more than one processing elements for each virtual machine, then the resource '
        'utilization in k-tier architecture is much better"',
        "a VM here runs one process; CloudSim's processing elements per VM have no counterpart and no setting is given",
    ),
]
