"""tiersweep's simulator core: deterministic, pure Python and numpy.

The unit of work is :func:`simulate`, which takes a run spec (a plain mapping) and returns a
:class:`RunResult`: it checks the spec once into a :class:`RunPlan` (:func:`plan_run`) and runs
the plan (:func:`run_plan`). This package imports nothing but numpy and the standard library.
"""

from .errors import PolicyError, SpecError, TiersweepError, TraceFormatError
from .plan import RunPlan
from .simulate import RunResult, run_plan, simulate
from .spec import plan_run, validate_spec
from .version import MODEL_VERSION

__all__ = [
    "simulate",
    "RunResult",
    "RunPlan",
    "plan_run",
    "run_plan",
    "validate_spec",
    "MODEL_VERSION",
    "TiersweepError",
    "SpecError",
    "TraceFormatError",
    "PolicyError",
]
