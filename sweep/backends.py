"""Execution backends: where batches of cells run. All call :func:`tiersweep.sweep.batch.run_batch`.

* ``serial``: in the driver's process, one batch at a time (for debugging).
* ``process``: a standard-library process pool, one worker per CPU.
* ``ray`` (default): Ray core tasks on a local Ray started for the run (dashboard off, object
  store capped, one CPU per task) or on an existing cluster (``--address`` or
  ``RAY_ADDRESS``); lost workers are retried (``max_retries``).

:data:`BACKENDS` registers them by name, each with the options it takes (``params``, given as
``--backend-opt KEY=VALUE``); :func:`make_backend` is the one way to build one. A new backend
subclasses :class:`Backend`, declares ``name``, ``doc`` and ``params``, is registered with
``BACKENDS.register`` and is checked by :class:`tiersweep.contract.backends.BackendContract`.

The driver submits batches with :meth:`Backend.submit` (a bounded number in flight) and
collects them as they finish with :meth:`Backend.wait`.
"""

from __future__ import annotations

import logging
import os
import re
from abc import ABC, abstractmethod
from collections.abc import Mapping, Sequence
from concurrent.futures import FIRST_COMPLETED, Future, ProcessPoolExecutor
from concurrent.futures import wait as wait_futures
from typing import Any, ClassVar

from ..core.errors import SpecError, TiersweepError
from ..core.params import Param, any_string, non_negative_int, positive_int
from ..core.registry import Registry
from .batch import failed_outcomes, run_batch
from .reaper import owner_marker, settled, start_reaper
from .records import Outcome, Task
from .redact import redact
from .worker_env import BLAS_ENV, pin_blas_threads, ready_worker

__all__ = [
    "Backend",
    "SerialBackend",
    "ProcessBackend",
    "RayBackend",
    "make_backend",
    "backend_options",
    "parse_backend_options",
    "backends_help",
    "BACKENDS",
]

Tasks = Sequence[Task]
Outcomes = list[Outcome]


class Backend(ABC):
    """Runs batches of cells; subclasses differ only in where.

    Class attributes a subclass declares:
        name: Its registry name (``--backend NAME``).
        doc: One line for ``--help``.
        params: The options its constructor takes as keywords (``--backend-opt KEY=VALUE``),
            each checked by its :class:`~tiersweep.core.params.Param` (``default`` None: the
            constructor's default).

    Attributes:
        workers: How many batches can run at once.
    """

    name: ClassVar[str] = ""
    doc: ClassVar[str] = ""
    params: ClassVar[Mapping[str, Param]] = {}
    workers: int = 1
    #: Notices the backend's start-up printed, kept for the closing summary (see RayBackend).
    notes: list[str] = []

    @abstractmethod
    def submit(self, batch_id: int, tasks: Tasks, with_jobs: bool) -> None:
        """Start running a batch."""

    @abstractmethod
    def wait(self, timeout: float | None = None) -> list[tuple[int, Outcomes]]:
        """Block until at least one submitted batch finishes, or for at most ``timeout``
        seconds (None: no limit); return the finished ones (none if the time ran out)."""

    @abstractmethod
    def pending(self) -> int:
        """Batches submitted and not yet returned by :meth:`wait`."""

    def cancel(self) -> None:
        """Abandon every batch in flight (on interruption)."""

    def close(self) -> None:
        """Release resources."""


class SerialBackend(Backend):
    """Runs each batch in this process when :meth:`wait` asks for it."""

    name = "serial"
    doc = "in this process, one batch at a time (for debugging)"

    def __init__(self) -> None:
        self.workers = 1
        self._queue: list[tuple[int, Tasks, bool]] = []

    def submit(self, batch_id: int, tasks: Tasks, with_jobs: bool) -> None:
        self._queue.append((batch_id, tasks, with_jobs))

    def wait(self, timeout: float | None = None) -> list[tuple[int, Outcomes]]:
        # (The batch runs here, in this process: no timeout can end this wait sooner.)
        batch_id, tasks, with_jobs = self._queue.pop(0)
        return [(batch_id, run_batch(tasks, with_jobs))]

    def pending(self) -> int:
        return len(self._queue)

    def cancel(self) -> None:
        self._queue.clear()


def _start_worker() -> None:
    """Pool workers leave Ctrl-C to the driver (an interrupt inside multiprocessing's queue
    code can leave a lock held and hang the pool's shutdown), and die with it: a driver killed
    outright (SIGKILL, the OOM killer) cannot stop its pool, and its workers would live on.
    Their BLAS runs one thread (:mod:`.worker_env`)."""
    import signal

    signal.signal(signal.SIGINT, signal.SIG_IGN)
    _die_with_parent()
    pin_blas_threads()


def _die_with_parent() -> None:
    """Ask Linux to send this process SIGKILL when its parent exits (``PR_SET_PDEATHSIG``); a
    no-op elsewhere."""
    import ctypes
    import signal
    import sys

    if not sys.platform.startswith("linux"):
        return
    try:
        libc = ctypes.CDLL(None, use_errno=True)
        libc.prctl(1, signal.SIGKILL, 0, 0, 0)  # 1 = PR_SET_PDEATHSIG
    except (OSError, AttributeError):
        return
    if os.getppid() == 1:  # the parent died before the request: follow it now
        os._exit(1)


#: How long a cancelled process pool's manager thread is given to wind down (it takes
#: milliseconds; the bound is for the hang a dead pipe once caused).
_MANAGER_JOIN_SECONDS = 5.0


class ProcessBackend(Backend):
    """A pool of worker processes (``spawn``: fresh interpreters, as Ray workers are).

    A worker that dies (killed, out of memory) breaks a standard pool; the backend then starts
    a new pool and resubmits the batches that were in flight, up to ``max_retries`` times per
    batch, as Ray does.
    """

    name = "process"
    doc = "a pool of worker processes on this machine"
    params = {
        "workers": Param(positive_int, doc="worker processes [one per CPU]"),
        "max_retries": Param(non_negative_int, doc="runs again of a batch whose worker died [3]"),
    }

    def __init__(self, workers: int | None = None, max_retries: int = 3) -> None:
        self.workers = workers or os.cpu_count() or 1
        self.max_retries = max_retries
        self._pool = self._new_pool()
        self._futures: dict[Future, tuple[int, Tasks, bool]] = {}
        self._tries: dict[int, int] = {}
        self._cancelled = False
        self._manager: Any = None  # the pool's manager thread, kept by cancel() for close()

    def _new_pool(self) -> ProcessPoolExecutor:
        import multiprocessing

        return ProcessPoolExecutor(
            self.workers, mp_context=multiprocessing.get_context("spawn"), initializer=_start_worker
        )

    def submit(self, batch_id: int, tasks: Tasks, with_jobs: bool) -> None:
        from concurrent.futures.process import BrokenProcessPool

        try:
            future = self._pool.submit(run_batch, list(tasks), with_jobs)
        except BrokenProcessPool as error:
            # A worker died since the last wait: the pool refuses new work. Hand the batch to
            # the next wait as lost with the pool, which restarts the pool and resubmits it
            # with the other batches in flight (never a new pool here, beside the old one's
            # unfinished futures, which that wait would then resubmit twice).
            future = Future()
            future.set_exception(error)
        self._futures[future] = (batch_id, tasks, with_jobs)

    def wait(self, timeout: float | None = None) -> list[tuple[int, Outcomes]]:
        from concurrent.futures.process import BrokenProcessPool

        done, _ = wait_futures(list(self._futures), timeout=timeout, return_when=FIRST_COMPLETED)
        finished: list[tuple[int, Outcomes]] = []
        lost: list[tuple[int, Tasks, bool]] = []
        for future in done:
            batch_id, tasks, with_jobs = self._futures.pop(future)
            try:
                finished.append((batch_id, future.result()))
            except BrokenProcessPool:
                lost.append((batch_id, tasks, with_jobs))
            except Exception as error:  # noqa: BLE001 - a failing batch fails its cells, not the sweep
                finished.append((batch_id, failed_outcomes(tasks, error)))
        if lost:
            # Every batch still in flight was lost with the pool: run them again on a new one.
            lost += list(self._futures.values())
            self._futures.clear()
            self._pool.shutdown(wait=False, cancel_futures=True)
            self._pool = self._new_pool()
            for batch_id, tasks, with_jobs in lost:
                self._retry_or_fail(batch_id, tasks, with_jobs, finished, "a worker process died")
        return finished

    def _retry_or_fail(self, batch_id: int, tasks: Tasks, with_jobs: bool, finished: list, reason: str) -> None:
        tries = self._tries.get(batch_id, 0) + 1
        self._tries[batch_id] = tries
        if tries > self.max_retries:
            finished.append((batch_id, failed_outcomes(tasks, f"{reason} {tries} times")))
        else:
            self.submit(batch_id, tasks, with_jobs)

    def pending(self) -> int:
        return len(self._futures)

    def cancel(self) -> None:
        # The futures are left to the pool (shutdown's cancel_futures, and BrokenProcessPool
        # for those that were running): a future cancelled here makes the pool's manager
        # thread fail on it ("InvalidStateError: CANCELLED") when it finds its workers gone.
        self._futures.clear()
        # Stop the workers now rather than let them finish batches nobody will store.
        for process in list(getattr(self._pool, "_processes", {}).values()):
            process.terminate()
        self._manager = getattr(self._pool, "_executor_manager_thread", None)
        self._pool.shutdown(wait=False, cancel_futures=True)
        self._cancelled = True

    def close(self) -> None:
        # After a cancel the workers are gone: waiting for the pool's helper threads could block
        # on a pipe no worker reads any more (seen once, under load, as a hung Ctrl-C).
        self._pool.shutdown(wait=not self._cancelled, cancel_futures=True)
        if self._cancelled and self._manager is not None:
            # But give the pool's manager thread a bounded moment to wind down: a program that
            # exits while it closes its wake-up pipe races with the interpreter's exit hook for
            # pools (Python 3.11 writes to the pipe without the lock the thread closes it
            # under), which prints "Exception ignored ... OSError: Bad file descriptor" after
            # "tiersweep: terminated" (1 exit in 6 in a loop of cancel, close and exit).
            self._manager.join(timeout=_MANAGER_JOIN_SECONDS)


class RayBackend(Backend):
    """Ray core tasks, on a local Ray or an existing cluster.

    Args:
        address: An existing cluster (``ray://...`` or ``host:port``), ``auto`` for the one
            started on this machine with ``ray start``, or None for ``RAY_ADDRESS`` if set,
            else a new local Ray with ``num_cpus`` CPUs.
        num_cpus: CPUs of a new local Ray (default: the machine's).
        object_store_mb: Object store cap of a new local Ray.
        max_retries: Retries of a batch whose worker died.
    """

    name = "ray"
    doc = "Ray tasks on a local Ray started for the run, or on an existing cluster"
    params = {
        "address": Param(any_string, doc="an existing cluster (host:port, ray://host:port or auto) [RAY_ADDRESS]"),
        "num_cpus": Param(positive_int, doc="CPUs of a local Ray [the machine's]"),
        "object_store_mb": Param(positive_int, doc="object store of a local Ray, in MiB [512]"),
        "max_retries": Param(non_negative_int, doc="runs again of a batch whose worker died [3]"),
    }

    def __init__(
        self,
        address: str | None = None,
        *,
        num_cpus: int | None = None,
        object_store_mb: int = 512,
        max_retries: int = 3,
    ) -> None:
        import ray

        self._ray = ray
        self._folder: str | None = None
        #: Messages Ray printed while starting, kept off the terminal (see :class:`_RayNotes`).
        self.notes: list[str] = []
        address = address or os.environ.get("RAY_ADDRESS") or None
        if address is not None:
            _check_reachable(address)  # (also when Ray is already up here: a wrong address is still wrong)
        self._started_here = address is None and not ray.is_initialized()
        self._connected_here = not ray.is_initialized()
        self._abandoned = False
        if not ray.is_initialized():
            options: dict[str, Any] = {"ignore_reinit_error": True, "log_to_driver": False}
            if address is None:
                options.update(
                    num_cpus=num_cpus or os.cpu_count() or 1,
                    include_dashboard=False,
                    object_store_memory=object_store_mb * 1024 * 1024,
                    # Ray puts the driver's working directory first on its workers' import
                    # path, unless the job has a working_dir: run from the folder holding a
                    # source tree named ``tiersweep``, workers imported that tree while the
                    # driver ran the installed copy (two simulators under one cell id). An
                    # empty working_dir keeps the workers on the driver's import path.
                    runtime_env={"working_dir": self._empty_folder()},
                    # Ray's start-up INFO lines (the cluster started, the empty working_dir
                    # uploaded) say nothing a sweep's user acts on; warnings still show.
                    logging_level=logging.WARNING,
                )
            else:
                options["address"] = address
            # The local cluster's processes must not outlive this driver, however it ends, even
            # while Ray is still starting: each carries the reaper's marker from its start.
            marker = owner_marker() if self._started_here else None
            self._reaper = start_reaper([], marker) if marker else None
            try:
                with _RayStart(marker, local=self._started_here), _RayNotes() as notes:
                    ray.init(**options)
                self.notes.extend(redact(message) for message in notes.messages)
            except ConnectionError as error:
                raise TiersweepError(
                    redact(
                        f"--address {address}: cannot connect to a Ray cluster there ({error}). If the "
                        "cluster uses token authentication, set RAY_AUTH_MODE=token and RAY_AUTH_TOKEN "
                        "(or RAY_AUTH_TOKEN_PATH) to its token (`ray get-auth-token` on the head node)."
                    )
                ) from None
            except ValueError as error:  # an address Ray cannot use (ray:// without Ray Client)
                raise TiersweepError(redact(f"--address {address}: {error}")) from None
            finally:
                if not ray.is_initialized():
                    self._remove_folder()  # no close() follows a failed start
            if self._reaper is not None:
                settled(self._reaper)
            if self._started_here:
                self.notes.extend(_loopback_check(ray))
        else:
            self._reaper = None
        self.workers = max(1, int(ray.cluster_resources().get("CPU", 1)))
        #: The options of this backend's tasks: one CPU each, retried when their worker dies, on
        #: workers whose BLAS runs one thread (:mod:`.worker_env`).
        self.remote_options: dict[str, Any] = {
            "num_cpus": 1,
            "max_retries": max_retries,
            "retry_exceptions": False,
            "runtime_env": {"env_vars": dict(BLAS_ENV)},
        }
        self._remote = ray.remote(**self.remote_options)(run_batch)
        self._refs: dict[Any, tuple[int, Tasks]] = {}
        try:
            self._warm_up()
        except BaseException:  # (an interrupt while the workers start: stop what was started)
            self.close()
            raise

    def _warm_up(self) -> None:
        """Start a worker per CPU and load the simulator in it now, as part of the backend's
        start: else the first batches wait for their workers' start and imports, several
        seconds that the sweep would count as cell time. A worker that cannot start is left for
        the batches to report (their cells fail with the error)."""
        ray = self._ray
        ready = ray.remote(**{**self.remote_options, "max_retries": 0})(ready_worker)
        refs = [ready.remote() for _ in range(self.workers)]
        done, _ = ray.wait(refs, num_returns=len(refs), timeout=WARM_UP_SECONDS)
        for ref in done:
            try:
                ray.get(ref)
            except Exception:  # noqa: BLE001 - reported by the batches instead
                pass

    def submit(self, batch_id: int, tasks: Tasks, with_jobs: bool) -> None:
        self._refs[self._remote.remote(list(tasks), with_jobs)] = (batch_id, tasks)

    def wait(self, timeout: float | None = None) -> list[tuple[int, Outcomes]]:
        refs = list(self._refs)
        ready, _ = self._ray.wait(refs, num_returns=1, timeout=timeout)
        if not ready:
            return []
        # Every batch finished by now, not just the first: the runner stores them all and refills
        # the workers at once, rather than one batch per round trip.
        ready, _ = self._ray.wait(refs, num_returns=len(refs), timeout=0)
        finished = []
        for ref in ready:
            batch_id, tasks = self._refs.pop(ref)
            try:
                finished.append((batch_id, self._ray.get(ref)))
            except Exception as error:  # noqa: BLE001 - retries exhausted: its cells fail
                finished.append((batch_id, failed_outcomes(tasks, error)))
        return finished

    def pending(self) -> int:
        return len(self._refs)

    def cancel(self) -> None:
        # Nothing is handed to ray.cancel(): it races with the reply of a task that is just
        # finishing, and Ray then aborts this process ("Check failed: ... Tried to complete task
        # that was not pending", exit 1 and a C++ stack dump; seen on a sweep stopped with
        # SIGTERM, and within seconds in a loop of cancels). The batches are abandoned instead,
        # and close() stops them: a local Ray is shut down, a cluster this backend connected to
        # is disconnected from (Ray stops a finished job's tasks); in a Ray session the caller
        # opened, the batches in flight run to their end (one batch: seconds) and are ignored.
        self._refs.clear()
        self._abandoned = True

    def _empty_folder(self) -> str:
        import tempfile

        self._folder = tempfile.mkdtemp(prefix="tiersweep-ray-")
        return self._folder

    def close(self) -> None:
        if self._started_here or (self._abandoned and self._connected_here):
            self._ray.shutdown()
        self._remove_folder()

    def _remove_folder(self) -> None:
        if self._folder is not None:
            import shutil

            shutil.rmtree(self._folder, ignore_errors=True)
            self._folder = None


class _RayNotes:
    """Keeps Ray's start-up notice about token authentication off the terminal and records it.

    Ray 2.59+ turns token authentication on for the local clusters it starts and logs a
    warning saying so on every start; it landed in the middle of every sweep's progress bar.
    A local run needs nothing done about it, so the driver prints it once, in its closing
    summary, instead (the README's Ray section explains it).
    """

    def __init__(self) -> None:
        self.messages: list[str] = []
        self._handlers: list[Any] = []

    def filter(self, record: Any) -> bool:
        """False (drop) for the token-authentication notice, which is recorded."""
        message = record.getMessage()
        if "Token authentication is" in message:
            self.messages.append(message.split(". ")[0].rstrip(".") + " (Ray's default for local clusters)")
            return False
        return True

    def __enter__(self) -> _RayNotes:
        import logging

        self._handlers = [*logging.getLogger("ray").handlers, *logging.getLogger().handlers]
        for handler in self._handlers:
            handler.addFilter(self)
        return self

    def __exit__(self, *exc: object) -> None:
        for handler in self._handlers:
            handler.removeFilter(self)


class _RayStart:
    """The conditions ``ray.init`` runs under: a SIGTERM during it stops the sweep, a local
    cluster listens on loopback only, and its processes carry the reaper's marker.

    * SIGTERM. ``ray.init`` takes several seconds and replaces the SIGTERM handler three times
      on the way (with handlers that call ``sys.exit``, after stopping part of what it started
      or not), and its C++ core installs one that prints a stack dump and aborts (exit 134).
      The C++ one is not installed in this process (Ray's ``RAY_DISABLE_FAILURE_SIGNAL_HANDLER``
      setting, on during the start: a crash of the driver's Ray core then prints no C++ stack;
      Ray's own processes keep theirs); the Python ones cannot be kept out, so a signal is
      noticed through the wakeup file descriptor of :mod:`signal` instead, and once
      ``ray.init`` has returned or failed the caller's handler is put back and given the
      signal (the command line's stops the sweep with exit 143).
    * Loopback. Ray's processes listen on every interface unless the node's address is
      127.0.0.1, and Ray turns a 127.0.0.1 given to ``ray.init`` into the machine's network
      address unless it runs as a single-machine Ray (``ENABLE_RAY_CLUSTER`` off, the default
      on macOS and Windows, from the ``RAY_ENABLE_WINDOWS_OR_OSX_CLUSTER`` setting read at
      import): for a local cluster that setting is off during the start.

    Both settings are Ray's module constants (read when ``ray`` is imported, which may have
    happened before), set here for the start and put back after it.
    """

    def __init__(self, marker: str | None, *, local: bool) -> None:
        self.environment: dict[str, str] = {}
        if marker:
            name, value = marker.split("=", 1)
            self.environment[name] = value
        self.settings = {"RAY_DISABLE_FAILURE_SIGNAL_HANDLER": True}
        if local:
            self.settings["ENABLE_RAY_CLUSTER"] = False
        self._saved_environment: dict[str, str | None] = {}
        self._saved_settings: dict[str, Any] = {}
        self._handler: Any = None
        self._pipe: tuple[int, int] | None = None
        self._wakeup = -1

    def __enter__(self) -> _RayStart:
        import signal
        import threading

        self._saved_environment = {name: os.environ.get(name) for name in self.environment}
        os.environ.update(self.environment)
        from ray._private import ray_constants

        # A Ray without one of them goes on without it (the loopback check reports the effect).
        known = [name for name in self.settings if hasattr(ray_constants, name)]
        self._saved_settings = {name: getattr(ray_constants, name) for name in known}
        for name in known:
            setattr(ray_constants, name, self.settings[name])
        if threading.current_thread() is threading.main_thread():
            self._handler = signal.getsignal(signal.SIGTERM)
            self._pipe = os.pipe()
            for fd in self._pipe:
                os.set_blocking(fd, False)
            self._wakeup = signal.set_wakeup_fd(self._pipe[1], warn_on_full_buffer=False)
        return self

    def __exit__(self, *exc: object) -> None:
        import signal

        for name, value in self._saved_environment.items():
            if value is None:
                os.environ.pop(name, None)
            else:
                os.environ[name] = value
        from ray._private import ray_constants

        for name, value in self._saved_settings.items():
            setattr(ray_constants, name, value)
        if self._pipe is None:
            return
        signal.set_wakeup_fd(self._wakeup)
        if self._handler is not None:  # (None: a handler not set from Python, which cannot be put back)
            signal.signal(signal.SIGTERM, self._handler)
        try:
            received = os.read(self._pipe[0], 4096)
        except BlockingIOError:
            received = b""
        for fd in self._pipe:
            os.close(fd)
        self._pipe = None
        if signal.SIGTERM in received:
            # Raised from here, the caller's exception replaces Ray's SystemExit.
            if callable(self._handler):
                self._handler(signal.SIGTERM, None)
            elif self._handler == signal.SIG_DFL:
                os.kill(os.getpid(), signal.SIGTERM)


def _loopback_check(ray: Any) -> list[str]:
    """A note for the summary when the local Ray Ray started does not listen on loopback only
    (a Ray whose way of choosing the node's address changed)."""
    import ipaddress

    try:
        address = ray.util.get_node_ip_address()
        if ipaddress.ip_address(address).is_loopback:
            return []
    except (ValueError, AttributeError):
        address = "unknown"
    return [f"the local Ray's node address is {address}, not 127.0.0.1: it may be reachable from the network"]


#: The longest a Ray backend's start waits for its workers to load the simulator.
WARM_UP_SECONDS = 120.0

#: Seconds to wait for a cluster's port to accept a connection before giving up on it.
CONNECT_SECONDS = 10.0


def _check_reachable(address: str) -> None:
    """Refuse a ``host:port`` (or ``ray://host:port``) address where nothing listens.

    ``ray.init`` keeps retrying such an address for minutes with no message (a mistyped port
    looked like a hung sweep); one TCP connection answers at once. ``auto`` and other forms
    are left to Ray.
    """
    import socket
    from urllib.parse import urlsplit

    parts = urlsplit(address if "://" in address else f"tcp://{address}")
    try:
        host, port = parts.hostname, parts.port
    except ValueError:  # a port that is not a number
        raise TiersweepError(redact(f"--address {address}: expected host:port, ray://host:port or auto")) from None
    if not host or port is None:
        return
    try:
        socket.create_connection((host, port), timeout=CONNECT_SECONDS).close()
    except OSError as error:
        reason = error.strerror or str(error) or type(error).__name__
        raise TiersweepError(
            redact(
                f"--address {address}: no Ray cluster answers there ({reason}); start one with `ray start --head` "
                f"or give its address (host:port of the head node)"
            )
        ) from None


#: The backends by name, the default (``ray``) first: ``--backend``'s choices, its help and the
#: benchmark's come from here.
BACKENDS: Registry[type[Backend]] = Registry("backend", Backend, "name", reserved=())
for _backend in (RayBackend, ProcessBackend, SerialBackend):
    BACKENDS.register(_backend)


def backend_class(name: str) -> type[Backend]:
    """The backend registered as ``name``.

    Raises:
        TiersweepError: None is; the message lists the valid choices.
    """
    if name not in BACKENDS:
        raise TiersweepError(f"--backend: unknown backend {name!r}; valid choices: {', '.join(BACKENDS)}")
    return BACKENDS[name]


def backend_options(name: str, given: Mapping[str, Any]) -> dict[str, Any]:
    """``given`` options of backend ``name``, each checked against the option it declares.

    Raises:
        TiersweepError: The backend is unknown, takes no option of that key (the message names
            the backend and its options), or a value is not what the option expects.
    """
    cls = backend_class(name)
    checked = {}
    for key, value in given.items():
        if key not in cls.params:
            takes = ", ".join(cls.params) or "none"
            raise TiersweepError(f"--backend-opt {key}: backend {name!r} takes no option {key!r}; its options: {takes}")
        try:
            checked[key] = cls.params[key].validate(f"--backend-opt {key}", value)
        except SpecError as error:
            raise TiersweepError(f"{error} (backend {name!r})") from None
    return checked


_INTEGER = re.compile(r"^[-+]?[0-9]+$")


def parse_backend_options(pairs: Sequence[str], address: str | None = None) -> dict[str, Any]:
    """``--backend-opt KEY=VALUE`` arguments as a mapping; a value of ASCII digits is an
    integer, ``true``/``false`` a boolean, anything else a string. ``address``: ``--address``,
    the same as ``--backend-opt address=...``.

    Raises:
        TiersweepError: An argument is not ``KEY=VALUE``, or a key is given twice.
    """
    options: dict[str, Any] = {}
    given = [*pairs, *([f"address={address}"] if address is not None else [])]
    for text in given:
        key, sep, value = text.partition("=")
        key = key.strip()
        if not sep or not key or not value.strip():
            raise TiersweepError(f"--backend-opt {text!r}: expected KEY=VALUE, such as workers=2")
        if key in options:
            raise TiersweepError(f"--backend-opt {key}: given twice (--address is --backend-opt address=...)")
        value = value.strip()
        options[key] = int(value) if _INTEGER.match(value) else {"true": True, "false": False}.get(value, value)
    return options


def backends_help() -> str:
    """The backends and their options, for ``--help``."""
    lines = ["Backends (--backend NAME; options: --backend-opt KEY=VALUE, repeatable):"]
    for name, cls in BACKENDS.items():
        lines.append(f"  {name}: {cls.doc}")
        lines += [f"    {key}: {param.doc}" for key, param in cls.params.items()]
    return "\n".join(lines)


def make_backend(name: str, options: Mapping[str, Any] | None = None) -> Backend:
    """The backend called ``name``, built with ``options`` (see :func:`backend_options`)."""
    return backend_class(name)(**backend_options(name, options or {}))
