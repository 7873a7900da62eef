"""tiersweep's simulator core: deterministic, pure Python and numpy.

The unit of work is :func:`simulate`, which takes a run spec (a plain mapping) and returns a
:class:`RunResult`. This package imports nothing but numpy and the standard library.
"""

from .errors import PolicyError, SpecError, TiersweepError, TraceFormatError
from .simulate import RunResult, simulate
from .spec import validate_spec
from .version import MODEL_VERSION

__all__ = [
    "simulate",
    "RunResult",
    "validate_spec",
    "MODEL_VERSION",
    "TiersweepError",
    "SpecError",
    "TraceFormatError",
    "PolicyError",
]
