"""A time limit on one cell's computation, enforced inside the process that computes it.

A cell that never ends (a bug, a workload the engine cannot finish) would otherwise hold its
worker, and the sweep, forever. :func:`time_limit` interrupts the block it guards with
:class:`CellTimeout` once the limit has passed.

In the main thread the interrupt is ``SIGALRM`` from an interval timer: the main thread is where
a process-pool worker, a Ray worker (Ray runs a task on its worker's main thread) and, with the
serial backend, the driver itself compute cells, and a signal also interrupts a blocking system
call. Signals can only be handled in the main thread, so in any other thread a timer thread
raises the exception in the guarded thread instead (between two bytecodes, so not inside a long
C call). Either way the previous handler and timer are restored when the block ends.

Python swallows an exception raised inside a finaliser (``__del__``) or a gc callback, and the
interrupt can land in one (a gc callback installed by a test library swallowed it once, and the
cell ran to the end). So once the limit has passed, the interrupt repeats every
:data:`REPEAT_SECONDS` until the block has ended.
"""

from __future__ import annotations

import ctypes
import signal
import threading
import time
from collections.abc import Iterator
from contextlib import contextmanager

__all__ = ["REPEAT_SECONDS", "CellTimeout", "time_limit"]

#: How often the interrupt repeats after the limit has passed, until the block ends.
REPEAT_SECONDS = 0.05


class CellTimeout(BaseException):
    """The computation ran past its time limit.

    A ``BaseException``, like ``KeyboardInterrupt``: an ``except Exception`` in the code it
    interrupts must not swallow it and carry on past the limit.
    """


@contextmanager
def time_limit(seconds: float | None) -> Iterator[None]:
    """Raise :class:`CellTimeout` in the block if it runs longer than ``seconds`` (None: no limit).

    The exception may also come out of the block's very end, when the limit passes just as the
    block finishes: the block then did run past its limit.
    """
    if seconds is None:
        yield
    elif threading.current_thread() is threading.main_thread():
        with _by_signal(seconds):
            yield
    else:
        with _by_thread(seconds):
            yield


@contextmanager
def _by_signal(seconds: float) -> Iterator[None]:
    def expire(signum: int, frame: object) -> None:
        raise CellTimeout(seconds)

    previous = signal.signal(signal.SIGALRM, expire)
    started = time.monotonic()
    outer, interval = signal.setitimer(signal.ITIMER_REAL, seconds, REPEAT_SECONDS)
    try:
        yield
    finally:
        try:
            signal.setitimer(signal.ITIMER_REAL, 0)
        finally:  # (even when the alarm interrupts the line above)
            signal.signal(signal.SIGALRM, previous)
            if outer > 0:  # a timer of the caller's, running when the block began: what is left of it
                signal.setitimer(signal.ITIMER_REAL, max(outer - (time.monotonic() - started), 1e-6), interval)


@contextmanager
def _by_thread(seconds: float) -> Iterator[None]:
    target = threading.get_ident()
    lock = threading.Lock()
    ended = threading.Event()

    def expire() -> None:
        if ended.wait(seconds):
            return
        while True:
            with lock:  # (never once the block has ended: the exception would land elsewhere)
                if ended.is_set():
                    return
                ctypes.pythonapi.PyThreadState_SetAsyncExc(ctypes.c_ulong(target), ctypes.py_object(CellTimeout))
            if ended.wait(REPEAT_SECONDS):
                return

    timer = threading.Thread(target=expire, name="cell-time-limit", daemon=True)
    timer.start()
    try:
        yield
    finally:
        with lock:
            ended.set()
