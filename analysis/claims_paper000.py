"""Paper 000's claims (Liu et al. 2013, consolidation of parallel workloads): figures 3 and 4,
the saturation utilisation of 5.3 and the one-factor studies of 5.4, as rows of the
reproduction table (:data:`ROWS`).

Most rows share one shape (a sentence of 5.3 measured on FWorkload and on JWorkload, with the
same setting, columns and model choices): they are data (:data:`_OBSERVATIONS`,
:data:`_SENSITIVITY`) turned into rows by one constructor, :func:`_row`.
"""

from __future__ import annotations

from collections.abc import Callable

from .claim_measures import (
    RUN_COLUMNS,
    SENSITIVITY_DEFAULTS,
    all_of,
    beats_below,
    fewer_migrations,
    gain_point,
    gain_range,
    gain_shrinks,
    level_ratio,
    ratio_below,
    ratio_below_at,
)
from .claim_rules import Claim, Measure

__all__ = ["ROWS", "RT_BSLD", "LIU_CHOICES"]

#: Paper 000's response time and bounded slowdown (rpt = mean of finish - arrival).
RT_BSLD = ("mean_response", "mean_bsld")
_LIU_COLUMNS = (*RUN_COLUMNS, "policy.name", "workload.load", *RT_BSLD, "utilization", "migrations_per_job")
#: The model choices every paper 000 row depends on (both follow the text).
LIU_CHOICES = (
    "bg_efficiency_scope: job (text, 5.1: 0.428 is a job's mean)",
    "cpu_guess: draw (text: an uninformed estimate is a draw from the usage range)",
)
_LIU_SETTING = (
    "{name}: {model}, 320 two-tier nodes, loads 0.5-1.0, migration cost 20 s, EASY with exact runtimes, "
    "the consolidating schedulers without (as in 5.3)"
)
#: The two workloads of 5.3: name, sweep, figure, model.
_WORKLOADS = (
    (
        "FWorkload",
        "liu2013_fworkload",
        "figure 3",
        "Feitelson 1996 model (constants calibrated to its published statistics), 20,000 jobs",
    ),
    ("JWorkload", "liu2013_jworkload", "figure 4", "Jann 1997 model fitted to CTC-SP2, 10,000 jobs"),
)
_OBS1 = (
    '5.3, observation 1 ({fig}): "Our basic algorithms, CMBF and AMBF, outperform FCFS in big margin but produce '
    "worse response time and bounded slowdown than EASY. [...] our algorithms that consolidate parallel workload, "
    'CMCBF and AMCBF, significantly outperform FCFS, CMBF, AMBF, and EASY on response time and bounded slowdown."'
)
_OBS2 = (
    '5.3, observation 2 ({fig}): "The two consolidation algorithms lead to better node utilization compared to '
    "other algorithms. Compared with EASY, a utilization improvement up to 2.4 and 3.1 percent can be gained in "
    "FWorkload and JWorkload, respectively. And, moreover, the improvements on the saturation CPU utilization are "
    '11 and 16 percent, respectively."'
)
_OBS3 = (
    '5.3, observation 3 ({fig}): "AMBF achieves better performance than CMBF [...] in terms of job response time '
    'and bounded slowdown. [...] AMCBF also shows slightly better performance than CMCBF."'
)
_OBS4 = (
    '5.3, observation 4 ({fig}): "The average number of job migrations in AMCBF is slightly less than that in '
    "CMCBF for both FWorkload and JWorkload. But, AMBF results in significantly less number of job migrations than "
    'CMBF for the two workloads."'
)
_OTHERS = ("fcfs", "easy", "cmbf", "ambf")


def _row(
    text: str,
    sweep: str,
    measure: Measure,
    quote: str,
    setting: str,
    *,
    kind: str = "comparison",
    columns: tuple[str, ...] = _LIU_COLUMNS,
) -> Claim:
    """One paper 000 row: every one depends on :data:`LIU_CHOICES`."""
    return Claim("000", text, sweep, measure, kind, quote=quote, setting=setting, columns=columns, choices=LIU_CHOICES)


#: The sentences of 5.3 read on each workload: the claim ("{name}" is the workload), its
#: observation's quote, and its measure.
_OBSERVATIONS: tuple[tuple[str, str, Callable[[], Measure]], ...] = (
    (
        "CMCBF and AMCBF outperform FCFS, CMBF, AMBF and EASY on response time and bounded slowdown ({name})",
        _OBS1,
        lambda: all_of(*(ratio_below(("cmcbf", "amcbf"), other, RT_BSLD) for other in _OTHERS)),
    ),
    (
        "CMBF and AMBF outperform FCFS on response time and bounded slowdown ({name}; 'big margin' not judged)",
        _OBS1,
        lambda: ratio_below(("cmbf", "ambf"), "fcfs", RT_BSLD),
    ),
    (
        "CMBF and AMBF are worse than EASY on response time and bounded slowdown ({name})",
        _OBS1,
        lambda: ratio_below(("cmbf", "ambf"), "easy", RT_BSLD, worse=True),
    ),
    (
        "CMCBF and AMCBF reach a higher utilisation than FCFS, EASY, CMBF and AMBF ({name})",
        _OBS2,
        lambda: all_of(*(ratio_below(("cmcbf", "amcbf"), other, ("utilization",), worse=True) for other in _OTHERS)),
    ),
    (
        "AMBF beats CMBF on response time and bounded slowdown ({name})",
        _OBS3,
        lambda: ratio_below(("ambf",), "cmbf", RT_BSLD),
    ),
    (
        "AMCBF beats CMCBF (slightly) on response time and bounded slowdown ({name})",
        _OBS3,
        lambda: ratio_below(("amcbf",), "cmcbf", RT_BSLD),
    ),
    ("AMBF needs fewer migrations than CMBF ({name})", _OBS4, lambda: fewer_migrations("ambf", "cmbf")),
    ("AMCBF needs slightly fewer migrations than CMCBF ({name})", _OBS4, lambda: fewer_migrations("amcbf", "cmcbf")),
)


def _observation_rows() -> list[Claim]:
    rows = [
        _row(text.format(name=name), sweep, build(), quote.format(fig=fig), _LIU_SETTING.format(name=name, model=model))
        for name, sweep, fig, model in _WORKLOADS
        for text, quote, build in _OBSERVATIONS
    ]
    name, sweep, fig, model = _WORKLOADS[1]
    rows.append(
        _row(
            "CMBF needs more migrations than AMCBF and CMCBF (JWorkload)",
            sweep,
            all_of(fewer_migrations("amcbf", "cmbf"), fewer_migrations("cmcbf", "cmbf")),
            f'5.3, observation 4 ({fig}): "We note that there are more job migrations in CMBF than in AMCBF '
            'and CMCBF, as shown in the JWorkload results."',
            _LIU_SETTING.format(name=name, model=model),
        )
    )
    return rows


_SAT_COLUMNS = (*RUN_COLUMNS, "policy.name", "workload.load", "utilization")


def _utilisation_rows() -> list[Claim]:
    """Observation 2's figures: "up to 2.4 and 3.1 percent" (range) and the saturation gains
    "11 and 16 percent" (point). Tolerances: the precision the paper prints its figure with
    (2.4 %: 0.05 points; 11 %: 0.5)."""
    ranges = [
        _row(
            f"Utilisation gain of AMCBF over EASY up to {stated:g} % ({name}; tolerance 0.05 points)",
            sweep,
            gain_range("amcbf", "easy", "utilization", stated, 0.05),
            _OBS2.format(fig=fig),
            _LIU_SETTING.format(name=name, model=model),
            kind="range",
            columns=_SAT_COLUMNS,
        )
        for (name, sweep, fig, model), stated in zip(_WORKLOADS, (2.4, 3.1))
    ]
    saturated = "offered load 2 (saturation: the paper does not say how it saturates; ours is twice the capacity)"
    points = [
        _row(
            f"Saturation utilisation gain of AMCBF over EASY: {stated:g} % ({name}, load 2; tolerance 0.5 points)",
            sweep,
            gain_point("amcbf", "easy", "utilization", stated, 0.5, at_load=2.0),
            _OBS2.format(fig=fig),
            _LIU_SETTING.format(name=name, model=model).replace("loads 0.5-1.0", saturated),
            kind="point",
            columns=_SAT_COLUMNS,
        )
        for (name, _, fig, model), sweep, stated in zip(
            _WORKLOADS, ("liu2013_saturation_f", "liu2013_saturation_j"), (11.0, 16.0)
        )
    ]
    return ranges + points


_F_SETTING = _LIU_SETTING.format(name="FWorkload", model=_WORKLOADS[0][3])
_J_SETTING = _LIU_SETTING.format(name="JWorkload", model=_WORKLOADS[1][3])
_SENS_COLUMNS = (*RUN_COLUMNS, "policy.name", "workload.load", "mean_bsld", *SENSITIVITY_DEFAULTS)
_SENS_1 = (
    "5.4, finding 1: \"AMCBF's performance improves as the accuracy of CPU usage estimation increases. And, "
    "moreover, AMCBF performs better than EASY in most cases even without any CPU usage information of parallel "
    'processes."'
)
_SENS_2 = (
    '5.4, finding 2: "The performance of AMCBF degrades as the migration cost increases, but AMCBF bears high '
    "migration cost. For FWorkload, even with a migration cost at 600 seconds (24 percent of the average job "
    'execution time), AMCBF can still outperform EASY in most cases; for JWorkload, the threshold is 360 seconds"'
)
_SENS_3 = (
    '5.4, finding 3: "For FWorkload, if the average CPU usage is less than 95 percent, AMCBF outperforms EASY in '
    'most cases. But for JWorkload, the upper threshold reduces to about 80 percent."'
)
_SENS_3_BENEFIT = (
    '5.4, finding 3: "The benefit gained from consolidation is inversely proportional to the average CPU usage of '
    'parallel processes."'
)
_SENS_NOTE = (
    "; one factor varied, the others at their defaults (20 s, accuracy 1, usage U(0.4, 1.0)); bounded slowdown "
    "(the paper's figures are not in the text)"
)
#: The two halves of the sensitivity study: workload, sweep, setting.
_SENS_SWEEPS = (("FWorkload", "liu2013_sensitivity", _F_SETTING), ("JWorkload", "liu2013_sensitivity_j", _J_SETTING))

#: The findings of 5.4 read on both workloads: the claim ("{name}" is the workload), its quote,
#: its measure.
_SENSITIVITY: tuple[tuple[str, str, Callable[[], Measure]], ...] = (
    (
        "AMCBF improves as CPU-estimate accuracy increases ({name}; accuracy 1 against 0, bounded slowdown, "
        "in most loads)",
        _SENS_1,
        lambda: level_ratio(
            "workload.cpu_accuracy", 1.0, 0.0, "mean_bsld", policies=("amcbf",), scope="most", defaults=True
        ),
    ),
    (
        "Without CPU-usage information AMCBF beats EASY in most cases ({name}; accuracy 0, bounded slowdown)",
        _SENS_1,
        lambda: ratio_below_at("workload.cpu_accuracy", 0.0, "amcbf", "easy", "mean_bsld"),
    ),
    (
        "AMCBF degrades as migration cost increases ({name}; 600 s against 0 s, bounded slowdown, every load)",
        _SENS_2,
        lambda: level_ratio(
            "platform.migration_cost", 600.0, 0.0, "mean_bsld", policies=("amcbf",), worse=True, defaults=True
        ),
    ),
)


def _sens(text: str, sweep: str, measure: Measure, quote: str, setting: str, kind: str = "comparison") -> Claim:
    """One row of the sensitivity study (bounded slowdown, one factor varied)."""
    return _row(text, sweep, measure, quote, setting + _SENS_NOTE, kind=kind, columns=_SENS_COLUMNS)


def _sensitivity_rows() -> list[Claim]:
    rows = [
        _sens(text.format(name=name), sweep, build(), quote, setting)
        for name, sweep, setting in _SENS_SWEEPS
        for text, quote, build in _SENSITIVITY
    ]
    rows.append(
        _sens(
            "At 600 s migration cost AMCBF still beats EASY in most cases (FWorkload, bounded slowdown, loads 0.5-1.0)",
            "liu2013_sensitivity",
            ratio_below_at("platform.migration_cost", 600.0, "amcbf", "easy", "mean_bsld"),
            _SENS_2,
            _F_SETTING,
        )
    )
    rows.append(
        _sens(
            "Migration-cost threshold 360 s: AMCBF beats EASY in most cases at 360 s and below, not beyond "
            "(JWorkload, bounded slowdown; levels 0-600 s)",
            "liu2013_sensitivity_j",
            beats_below("platform.migration_cost", 360.0, "amcbf", "easy", "mean_bsld", inclusive=True),
            _SENS_2,
            _J_SETTING,
            "threshold",
        )
    )
    rows += [
        _sens(
            f"AMCBF's benefit over EASY shrinks as the average CPU usage rises ({name}; mean usage 0.5 against "
            "0.95, bounded slowdown, every load)",
            sweep,
            gain_shrinks("workload.cpu_usage", [0.2, 0.8], [0.9, 1.0], "amcbf", "easy", "mean_bsld"),
            _SENS_3_BENEFIT,
            setting,
        )
        for name, sweep, setting in _SENS_SWEEPS
    ]
    rows.append(
        _sens(
            "For average CPU usage below 95 % AMCBF beats EASY in most cases "
            "(FWorkload, bounded slowdown; per mean usage)",
            "liu2013_sensitivity",
            beats_below("workload.cpu_usage", 0.95, "amcbf", "easy", "mean_bsld"),
            _SENS_3,
            _F_SETTING,
            "threshold",
        )
    )
    rows.append(
        _sens(
            "For average CPU usage below about 80 % AMCBF beats EASY in most cases, and not above "
            "(JWorkload, bounded slowdown; mean usages 0.5, 0.7, 0.9, 0.95: none within 0.05 of 'about 80')",
            "liu2013_sensitivity_j",
            beats_below("workload.cpu_usage", 0.8, "amcbf", "easy", "mean_bsld"),
            _SENS_3,
            _J_SETTING,
            "threshold",
        )
    )
    return rows


#: Paper 000's rows, in the table's order.
ROWS: list[Claim] = [*_observation_rows(), *_utilisation_rows(), *_sensitivity_rows()]
