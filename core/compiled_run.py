"""The compiled whole run: which runs it takes, and running them.

For the consolidation family (CMBF, AMBF, CMCBF, AMCBF, SMCBF), KEASY and REASY on the ``nodes``
platform with any number of tiers, the event loop, the policy's passes and the platform's state run compiled together
(``core/platforms/_tiered_run.pyx``, with its node index ``core/platforms/_ranked.pyx``), then
write their results back into the jobs and the engine, so that the same Python code builds the
job records and metrics. Anything it does not
implement runs the Python loop instead (:func:`why_not`), never a different model.
"""

from __future__ import annotations

import importlib
import itertools
from collections.abc import Sequence
from typing import TYPE_CHECKING, Protocol

from .compiled_path import path_line, why_python
from .errors import PolicyError

if TYPE_CHECKING:
    from .jobs import Job
    from .platforms.base import BasePlatform
    from .policies.base import BasePolicy

__all__ = ["why_not", "run_compiled", "run_path_line", "takes_whole_run", "WHOLE_RUN"]

_MODULE = "tiersweep.core.platforms._tiered_run"
#: The compiled node index the run cimports: the run is taken only where both import.
_INDEX = "tiersweep.core.platforms._ranked"
#: How the run summary names the compiled whole run.
WHOLE_RUN = "compiled whole run"
#: The policies it covers (by registry name; the classes are checked too).
_POLICIES = frozenset({"cmbf", "ambf", "cmcbf", "amcbf", "smcbf", "keasy", "reasy"})
_PLATFORM = "the compiled whole run covers the nodes platform keeping node ids (any number of tiers)"


class WholeRunEngine(Protocol):
    """What this module reads of an engine (:class:`~tiersweep.core.engine.Engine`, which calls
    it from its ``run`` and so is not imported here); the compiled run reads and writes back
    the engine's own state."""

    @property
    def platform(self) -> BasePlatform: ...
    @property
    def policy(self) -> BasePolicy: ...
    @property
    def observer(self) -> object: ...
    @property
    def segments(self) -> object: ...
    @property
    def jobs(self) -> Sequence[Job]: ...

    path: str


def _module():  # noqa: ANN202 (a module or None)
    try:
        importlib.import_module(_INDEX)
        return importlib.import_module(_MODULE)
    except ImportError:
        return None


def _why_not_by_name(policy_name: str, platform_kind: str) -> str | None:
    """What of the build, the policy's name and the platform's kind keeps a run off the
    compiled whole run, or None: all that a spec tells before anything is built."""
    reason = why_python()
    if reason is not None:
        return reason
    if _module() is None:
        return "the compiled whole run is not built"
    if policy_name not in _POLICIES:
        return f"the compiled whole run does not cover policy {policy_name!r}"
    if platform_kind != "nodes":
        return _PLATFORM
    return None


def why_not(engine: WholeRunEngine) -> str | None:
    """Why ``engine`` cannot take the compiled whole run (the Python loop runs it), or None."""
    platform, policy = engine.platform, engine.policy
    # By name first: a run imports the modules of its own policy and platform only.
    reason = _why_not_by_name(policy.name, platform.kind)
    if reason is not None:
        return reason
    from .platforms.nodes import Nodes
    from .policies.consolidation import Ambf, Amcbf, Cmbf, Cmcbf, Consolidation, NodeVms, Smcbf
    from .policies.two_tier_easy import Keasy, Reasy, TieredVms, TwoTierEasy

    # (The isinstance checks narrow the type; the exact types are what the compiled run covers.)
    consolidation = (
        isinstance(policy, Consolidation)
        and type(policy) in (Cmbf, Ambf, Cmcbf, Amcbf, Smcbf)
        and type(policy.resources) is NodeVms
    )
    # KEASY and REASY as they plan by default: on the jobs' own estimates.
    two_tier_easy = (
        isinstance(policy, TwoTierEasy)
        and type(policy) in (Keasy, Reasy)
        and type(policy.resources) is TieredVms
        and policy._plain
    )
    if not (consolidation or two_tier_easy):
        return f"the compiled whole run does not cover policy {policy.name!r}"
    if type(platform) is not Nodes or platform._free is not None:
        return _PLATFORM
    if engine.observer is not None or engine.segments is not None:
        return "an observer or recorded segments need the Python loop"
    if not engine.jobs or any(job.state != 0 for job in itertools.islice(engine.jobs, 1)):
        return "nothing to run"
    return None


def takes_whole_run(policy_name: str, platform_kind: str | None) -> bool:
    """Whether runs of policy ``policy_name`` on a platform of kind ``platform_kind`` (None: the
    default, ``nodes``) take the compiled whole run in this process, as far as a spec tells (a
    run with an observer or recorded segments, or a plug-in's subclass, takes the Python loop):
    what a sweep expects of a cell's cost before it runs."""
    return _why_not_by_name(policy_name, platform_kind or "nodes") is None


#: The path the latest run of this process took (see :func:`run_path_line`).
_latest: list[str] = []


def run_path_line() -> str:
    """:func:`~tiersweep.core.compiled_path.path_line`, and the path the latest run took."""
    if why_python() is not None or not _latest:
        return path_line()  # (the reason is the same for the run)
    return f"{path_line()}; this run: {_latest[-1]}"


def run_compiled(engine: WholeRunEngine) -> bool:
    """Run ``engine`` to its end on the compiled whole run if it can take it (True), else do
    nothing (False). Sets ``engine.path`` to the path taken either way."""
    reason = why_not(engine)
    if reason is not None:
        engine.path = f"python loop ({reason})"
        _latest[:] = [engine.path]
        return False
    from .platforms.nodes import CPU_IDLE_FLOOR

    engine.path = WHOLE_RUN
    _latest[:] = [engine.path]
    left = _module().run(engine, CPU_IDLE_FLOOR)
    if left:
        raise PolicyError(
            f"policy {engine.policy.name!r} stopped with {left} queued or running jobs left and no event pending"
        )
    return True
