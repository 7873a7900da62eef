"""The environment of a worker process: BLAS libraries run one thread.

A BLAS call (``numpy.dot``, ``@``) is answered by OpenBLAS with a pool of threads, one per CPU,
that burn CPU time waking up: in a sweep every CPU already runs a worker, so those threads would
take their time from the other workers. The simulator itself calls none (its sums are exact,
``core/sums.py``, so that its results do not depend on BLAS threads), but a plug-in's code may.
A worker therefore gets one BLAS thread: through the environment its numpy reads when it loads
(:data:`BLAS_ENV`, given to Ray's workers as their runtime environment), and through
:func:`pin_blas_threads` for a library already loaded (a process-pool worker imports numpy
before its initializer runs).
"""

from __future__ import annotations

import os

__all__ = ["BLAS_ENV", "pin_blas_threads", "blas_threads", "ready_worker"]

#: The variables the BLAS builds numpy uses read for their thread count (OpenBLAS, OpenMP, MKL).
BLAS_ENV = {"OPENBLAS_NUM_THREADS": "1", "OMP_NUM_THREADS": "1", "MKL_NUM_THREADS": "1"}


def pin_blas_threads() -> None:
    """Give this process's BLAS one thread, now and for the libraries it loads later (a worker
    process's: the driver's own threads are not touched)."""
    from threadpoolctl import threadpool_limits

    os.environ.update(BLAS_ENV)
    threadpool_limits(limits=1, user_api="blas")


def blas_threads() -> int:
    """The most threads a BLAS library loaded in this process may use (numpy loaded first)."""
    import numpy  # noqa: F401 - the BLAS numpy links is what the workers use
    from threadpoolctl import threadpool_info

    return max((info["num_threads"] for info in threadpool_info() if info["user_api"] == "blas"), default=1)


def ready_worker() -> str:
    """Load what a worker needs to compute cells (the simulator and its code digest), so that
    its first cell does not pay for it; the worker's host name."""
    from ..core.version import code_digest
    from . import batch  # noqa: F401 - the import is the point

    code_digest()
    return os.uname().nodename
