"""Paper 003's claims as rows of the reproduction table (:data:`ROWS`): the EASY++ result it
cites (Tsafrir, Etsion and Feitelson 2007), measured on whole logs under the authors'
increments and, beside it, the calibrated extension to the request; its claims that no config
can test (:data:`UNTESTABLE`).
"""

from __future__ import annotations

from .claim_measures import RUN_COLUMNS, easy_pp_beats_easy
from .claim_rules import Claim, Untestable

__all__ = ["ROWS", "UNTESTABLE"]

_EASY_PP_COLUMNS = (*RUN_COLUMNS, "workload.trace", "policy.prediction", "policy.correction", "mean_wait", "mean_bsld")
_EASY_PP_QUOTE = (
    'II (of EASY++): "predictions need to be corrected adaptively if proved wrong. The end result is a '
    "surprisingly simple scheduler we call EASY++ [...] Nevertheless it achieves significant improvements in "
    'performance"'
)
_EASY_PP_SETTING = (
    "the paper names no logs; ours: the whole KTH-SP2, SDSC-SP2, CTC-SP2 and HPC2N logs on dedicated nodes of each "
    "log's size, EASY planning with the users' requests (deterministic: every seed is the same run)"
)

#: EASY++'s corrections of a wrong prediction: the text's (the default) and the calibrated one.
_CORRECTIONS = (
    ("increment", False, "correction: increment (text: the authors' steps, 1 min ... 100 h)"),
    ("request", True, "correction: request (calibrated: chosen because it beats EASY on every log)"),
)
#: Paper 003's rows: EASY++ under the authors' increments and, calibrated, extended to the request.
ROWS: list[Claim] = [
    Claim(
        "003",
        "EASY++ beats EASY on mean wait and bounded slowdown on every log",
        "paper003_easy_pp",
        easy_pp_beats_easy(correction),
        quote=_EASY_PP_QUOTE,
        setting=_EASY_PP_SETTING,
        columns=_EASY_PP_COLUMNS,
        choices=(label,),
        calibrated=calibrated,
    )
    for correction, calibrated, label in _CORRECTIONS
]


#: Paper 003's claims that no config here can test, each with the reason.
UNTESTABLE: list[Untestable] = [
    Untestable(
        "003",
        'Abstract, IV: partitioning nodes into k tiers gives "improved node utilization and responsiveness"',
        "no experiment and no setting: a proposal (the k-tier runs of paper 002 measure the same idea)",
    ),
    Untestable(
        "003",
        'Conclusion: "AMCBF, even without knowing the job execution time, significantly outperforms the commonly '
        'used [EASY]"',
        "restated from paper 000: measured by paper 000's rows, not counted twice",
    ),
]
