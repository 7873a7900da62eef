"""The platform contract: :class:`PlatformContract`, the tests every platform configuration
must pass, driven by a simple policy with every answer of the platform probed.

A platform written outside this package gets the whole contract by subclassing it unchanged,
in a module pytest collects::

    from tiersweep.contract.platforms import PlatformContract

    class TestMyPlatform(PlatformContract):
        platform = "my_platform"        # its registry kind
        platform_params = {"size": 8}
"""

from __future__ import annotations

from collections.abc import Mapping
from pathlib import Path
from typing import Any, ClassVar

import pytest

from ..core.capabilities import CAPABILITIES, MOVES, PLACEMENT, TIME_TRACKING, missing_members
from ..core.engine import ENGINE_PARAMS
from ..core.errors import PolicyError
from ..core.jobs import FINISHED, Job
from ..core.params import Param
from ..core.platforms import PLATFORMS, platform_class, register_platform
from ..core.platforms.base import BasePlatform
from ..core.policies import POLICIES
from ..core.spec import policy_runs_on, validate_platform
from .audit import ContractRun, ProbingMixin, Reports, default_per_unit, idle_platform, platform_section, run_spec
from .checks import assert_run_contract
from .workloads import KTH_TRACE, SMALL_CAPACITY, SMALL_WORKLOADS, small_workload_spec, trace_path

__all__ = ["PlatformContract", "driving_policy"]


def driving_policy(kind: str, platform_params: Mapping[str, Any]) -> str:
    """The first registered policy (registration order) that runs on ``kind`` with
    ``platform_params``: simple by convention (FCFS-like policies are registered first)."""
    checked = validate_platform(platform_section(kind, platform_params))
    for name in POLICIES:
        if policy_runs_on(name, kind, checked):
            return name
    raise LookupError(f"no registered policy runs on platform {kind!r} with {dict(platform_params)}")


class PlatformContract:
    """Contract tests of one platform configuration; subclass it as ``Test...``.

    Class attributes a subclass sets:
        platform: The platform kind.
        platform_params: Its spec parameters (a size left unset comes from the workload).
        policy: The policy driving it (default: :func:`driving_policy`).
        policy_params: Its spec parameters.
        workload_params: Workload spec keys for every run.
        trace: The KTH-SP2 log, or its folder (default: see :func:`trace_path`).
        trace_jobs: Jobs in the trace slice.
        seed: The runs' seed.
    """

    platform: ClassVar[str] = ""
    platform_params: ClassVar[Mapping[str, Any]] = {}
    policy: ClassVar[str | None] = None
    policy_params: ClassVar[Mapping[str, Any]] = {}
    workload_params: ClassVar[Mapping[str, Any]] = {}
    trace: ClassVar[str | None] = None
    trace_jobs: ClassVar[int] = 150
    seed: ClassVar[int] = 1

    def per_unit(self, platform: BasePlatform) -> int:
        """Processes one unit of a tier holds at most (see :func:`default_per_unit`)."""
        return default_per_unit(platform)

    def policy_name(self) -> str:
        """The driving policy."""
        return self.policy or driving_policy(self.platform, self.platform_params)

    def instance(self) -> BasePlatform:
        """A fresh instance from :attr:`platform_params` (a missing ``nodes`` size:
        :data:`SMALL_CAPACITY`)."""
        return idle_platform(self.platform, self.platform_params, self.seed)

    def run_probed(self, spec: Mapping[str, Any], *, move: bool = False) -> tuple[ContractRun, list[str], Reports]:
        """Run ``spec`` with the probing policy and the platform's reports checked."""
        probes: list[str] = []
        reports: list[Reports] = []

        def configure(policy: Any) -> None:
            policy.probes, policy.move_each, policy.moved = probes, move, set()

        run = run_spec(
            spec,
            per_unit=self.per_unit,
            policy_mixins=(ProbingMixin,),
            configure_policy=configure,
            prepare_platform=lambda platform: reports.append(Reports(platform)),
        )
        return run, probes, reports[0]

    def specs(self, folder: Path) -> list[dict[str, Any]]:
        """The small workloads as specs for this platform."""
        policy = {"name": self.policy_name(), **self.policy_params}
        return [
            small_workload_spec(
                folder,
                name,
                rows,
                platform_section(self.platform, self.platform_params),
                policy,
                self.workload_params,
                seed=self.seed,
            )
            for name, rows in sorted(SMALL_WORKLOADS.items())
        ]

    # -- the tests ----------------------------------------------------------------------------------
    def test_declarations_are_consistent_and_registered(self):
        """``kind``, ``params`` and ``CAPABILITIES`` are declared, known and registered."""
        cls = platform_class(self.platform)
        assert issubclass(cls, BasePlatform)
        assert isinstance(cls.kind, str) and cls.kind == self.platform and PLATFORMS[cls.kind] is cls
        assert register_platform(cls) is cls  # registering it again changes nothing
        assert PLATFORMS[cls.kind] is cls
        for key, param in cls.params.items():
            assert isinstance(param, Param), f"parameter {key!r} is not a Param"
            assert key not in ENGINE_PARAMS and key != "kind"
            if param.default is not None:
                param.validate(f"platform.{key}", param.default)  # a default passes its own check
        assert isinstance(cls.CAPABILITIES, frozenset)
        unknown = cls.CAPABILITIES - set(CAPABILITIES)
        assert not unknown, f"undeclared capabilities {sorted(unknown)}"
        checked = validate_platform(platform_section(self.platform, self.platform_params))
        assert repr(cls.kind) in cls.label(checked)
        platform = self.instance()
        assert isinstance(platform.capacity, int) and platform.capacity > 0
        assert isinstance(platform.tiers, int) and platform.tiers >= 1

    def test_capabilities_narrow_the_declared_ones(self):
        """``capabilities_of`` the defaults and of these parameters are subsets of
        ``CAPABILITIES``, and the instance offers what ``capabilities_of`` its parameters says."""
        cls = platform_class(self.platform)
        defaults = validate_platform(platform_section(self.platform, {}))
        assert cls.capabilities_of(defaults) <= cls.CAPABILITIES
        checked = validate_platform(platform_section(self.platform, self.platform_params))
        assert cls.capabilities_of(checked) <= cls.CAPABILITIES
        platform = self.instance()
        assert platform.capabilities == cls.capabilities_of(checked)
        assert platform.tracks_time == (TIME_TRACKING in platform.capabilities)

    def test_offered_capabilities_have_their_members(self):
        """Every member of every platform, and of every capability the instance offers, exists
        (the protocols of :mod:`tiersweep.core.capabilities`)."""
        platform = self.instance()
        missing = missing_members(platform)
        assert not missing, f"platform {self.platform!r} lacks (capability, member) {missing}"

    def test_job_capacity_agrees_with_theidle_platform(self):
        """``job_capacity`` is the units an idle instance has free (in tier 0); on a platform
        that places jobs itself, a job of that size can start there and one more cannot."""
        cls = platform_class(self.platform)
        checked = validate_platform(platform_section(self.platform, self.platform_params))
        platform = self.instance()
        capacity = cls.job_capacity(checked)
        if capacity is None:
            capacity = SMALL_CAPACITY  # the size then comes from the workload; instance() used this
        assert platform.free_count(0) == capacity
        for tier in range(platform.tiers):
            assert platform.free_count(tier) == capacity
        if PLACEMENT in platform.capabilities:
            assert platform.check_start(Job(0, 1, 0.0, capacity, 1.0), 0, None) is None
            assert isinstance(platform.check_start(Job(0, 1, 0.0, capacity + 1, 1.0), 0, None), str)

    def test_check_start_has_no_side_effect_and_agrees_with_start(self, tmp_path_factory):
        """Probed before every start the driving policy makes, on every small workload: the
        answers are consistent and change nothing; each start then holds ``size`` units and
        reports a rate in [0, 1]; each release frees them; the platform ends idle."""
        finished = 0
        for spec in self.specs(tmp_path_factory.getbasetemp()):
            run, probes, reports = self.run_probed(spec)
            done = sum(job.state == FINISHED for job in run.jobs)
            assert probes.count("start") == reports.starts >= done
            assert reports.releases == reports.starts
            assert_run_contract(run, may_reject=True)
            finished += done
        assert finished > 0, "the driving policy finished no job: nothing was probed"

    def test_reports_hold_on_a_trace_slice(self):
        """The same checks on the first :attr:`trace_jobs` jobs of KTH-SP2."""
        path = trace_path(KTH_TRACE, self.trace)
        spec = {
            "seed": self.seed,
            "workload": {**self.workload_params, "trace": str(path), "jobs": self.trace_jobs},
            "platform": platform_section(self.platform, self.platform_params),
            "policy": {"name": self.policy_name(), **self.policy_params},
        }
        run, probes, reports = self.run_probed(spec)
        assert reports.releases == reports.starts == probes.count("start") > 0
        assert_run_contract(run, may_reject=True)

    def test_moves_need_the_moves_capability(self, tmp_path_factory):
        """Without ``moves`` the engine refuses a move with PolicyError (``check_move`` says
        why); with it, a move of a job to its own units is accepted and the run keeps the
        contract."""
        spec = self.specs(tmp_path_factory.getbasetemp())[0]
        platform = self.instance()
        if MOVES in platform.capabilities:
            run, probes, reports = self.run_probed(spec, move=True)
            assert "move:True" in probes and "move:False" not in probes
            assert_run_contract(run, may_reject=True)
        else:
            with pytest.raises(PolicyError, match="cannot move job"):
                self.run_probed(spec, move=True)
