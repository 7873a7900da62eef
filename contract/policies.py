"""The policy contract: :class:`PolicyContract`, the tests every policy on every platform
configuration it runs on must pass.

A policy written outside this package gets the whole contract by subclassing it unchanged, in
a module pytest collects::

    from tiersweep.contract.policies import PolicyContract

    class TestMyPolicyOnNodes(PolicyContract):
        policy = "my_policy"            # its registry name
        policy_params = {"depth": 2}
        platform = "nodes"              # a registered platform kind
        platform_params = {"tiers": 2}

The base class is not named ``Test*``, so pytest collects only the subclasses. Every run goes
through the real path (:func:`~tiersweep.core.spec.plan_run` and
:func:`~tiersweep.core.simulate.assemble`, as :func:`~tiersweep.core.simulate.simulate` runs),
audited after every policy pass and checked afterwards against what the run recorded, never
against the plug-in's own bookkeeping.

Workloads: the small, hand-made corner cases of
:data:`~tiersweep.contract.workloads.SMALL_WORKLOADS` (written for 10 units and scaled to the
platform's job capacity), a lone job, a synthetic model workload (for determinism, which needs
no file) and a slice of the KTH-SP2 log (skipped with the reason when the log is absent;
:attr:`PolicyContract.trace` or the ``TIERSWEEP_TRACES`` environment variable say where it is).

Policy- or platform-specific promises are added by overriding :meth:`PolicyContract.audit`
(called after every pass) and :meth:`PolicyContract.check_run` (called after every run); a
test that does not apply to a plug-in is switched off by setting it to None in the subclass.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any, ClassVar

import pytest

from ..core.capabilities import missing_members
from ..core.engine import Engine
from ..core.platforms import PLATFORMS
from ..core.platforms.base import BasePlatform
from ..core.policies import POLICIES
from ..core.simulate import simulate
from ..core.spec import policy_runs_on, validate_platform, validate_spec
from .audit import ContractRun, default_per_unit, idle_platform, platform_section, run_spec
from .checks import assert_records_identical, assert_run_contract, class_key, fresh_interpreter_digests, records_digest
from .workloads import KTH_TRACE, RULES, SMALL_WORKLOADS, small_workload_spec, trace_path

__all__ = ["PolicyContract"]


class PolicyContract:
    """Contract tests of one policy on one platform configuration; subclass it as ``Test...``.

    Class attributes a subclass sets:
        policy: The policy's registry name.
        policy_params: Its spec parameters.
        platform: The platform kind.
        platform_params: Its spec parameters (a size left unset comes from the workload, as
            in a run: :data:`SMALL_CAPACITY` units for the small workloads, the log's for the trace).
        workload_params: Workload spec keys for every run (e.g. ``bandwidth`` demands).
        trace_params: Workload spec keys for the trace slice only (e.g. a ``load`` to reach).
        may_reject: Whether the policy may turn jobs away (admission control); when False,
            every job must finish.
        trace: The KTH-SP2 log, or its folder (default: see :func:`trace_path`).
        trace_jobs: Jobs in the trace slice of the default run.
        long_trace_jobs: Jobs in the slow trace slice.
        determinism_jobs: Jobs of the synthetic workload of the determinism tests.
        seed: The runs' seed.
    """

    policy: ClassVar[str] = ""
    policy_params: ClassVar[Mapping[str, Any]] = {}
    platform: ClassVar[str] = "nodes"
    platform_params: ClassVar[Mapping[str, Any]] = {}
    workload_params: ClassVar[Mapping[str, Any]] = {}
    trace_params: ClassVar[Mapping[str, Any]] = {}
    may_reject: ClassVar[bool] = False
    trace: ClassVar[str | None] = None
    trace_jobs: ClassVar[int] = 250
    long_trace_jobs: ClassVar[int] = 3000
    determinism_jobs: ClassVar[int] = 150
    seed: ClassVar[int] = 1

    # -- hooks for policy- or platform-specific promises ---------------------------------------
    def audit(self, sim: Engine) -> None:
        """Called after every pass of every contract run, after the generic checks."""

    def check_run(self, run: ContractRun) -> None:
        """Called after every contract run, after the generic checks."""

    def per_unit(self, platform: BasePlatform) -> int:
        """Processes one unit of a tier holds at most (see :func:`default_per_unit`)."""
        return default_per_unit(platform)

    # -- building runs ---------------------------------------------------------------------------
    def platform_section(self) -> dict[str, Any]:
        """The ``platform`` section of this class's specs."""
        return platform_section(self.platform, self.platform_params)

    def policy_section(self) -> dict[str, Any]:
        """The ``policy`` section of this class's specs."""
        return {"name": self.policy, **self.policy_params}

    def _spec(self, workload: Mapping[str, Any]) -> dict[str, Any]:
        platform, policy = self.platform_section(), self.policy_section()
        return {"seed": self.seed, "workload": workload, "platform": platform, "policy": policy}

    def run(self, spec: Mapping[str, Any]) -> ContractRun:
        """Run ``spec`` audited, and check the contract and this class's own promises on it."""
        run = run_spec(spec, per_unit=self.per_unit, extra_audit=self.audit)
        assert_run_contract(run, may_reject=self.may_reject)
        self.check_run(run)
        return run

    def small_spec(
        self, folder: Path, name: str, rows: Sequence[Sequence[float]], rules: Mapping[str, str], *, scale: bool = True
    ) -> dict[str, Any]:
        """The spec running small workload ``rows`` under workload ``rules``."""
        workload = {**self.workload_params, **rules}
        return small_workload_spec(
            folder, name, rows, self.platform_section(), self.policy_section(), workload, scale=scale, seed=self.seed
        )

    def trace_spec(self, jobs: int, rules: Mapping[str, str]) -> dict[str, Any]:
        """The spec running the first ``jobs`` jobs of the KTH-SP2 log under ``rules``."""
        path = trace_path(KTH_TRACE, self.trace)
        workload = {**self.workload_params, **self.trace_params, **rules, "trace": str(path), "jobs": jobs}
        return self._spec(workload)

    def determinism_spec(self) -> dict[str, Any]:
        """A synthetic workload (random sizes, runtimes and CPU usage from the seed): no file needed."""
        workload = {**self.workload_params, "model": "lublin03", "jobs": self.determinism_jobs, "load": 0.95}
        return self._spec(workload)

    def determinism_digest(self) -> str:
        """:func:`records_digest` of :meth:`determinism_spec`'s run (what a fresh interpreter compares)."""
        return records_digest(simulate(self.determinism_spec()).jobs)

    # -- the tests ----------------------------------------------------------------------------------
    def test_the_pair_is_valid(self):
        """The configuration offers everything the policy requires, by the spec and at run time."""
        assert self.policy in POLICIES, f"policy {self.policy!r} is not registered"
        assert self.platform in PLATFORMS, f"platform {self.platform!r} is not registered"
        checked = validate_platform(platform_section(self.platform, self.platform_params))
        assert policy_runs_on(self.policy, self.platform, checked)
        assert policy_runs_on(self.policy, self.platform)
        validate_spec(self._spec({"trace": "unread.swf"}))

    def test_required_members_exist_on_the_platform(self):
        """Every member of every capability the policy requires exists on a platform instance."""
        platform = idle_platform(self.platform, self.platform_params, self.seed)
        requires = POLICIES[self.policy].requires
        assert requires <= platform.capabilities, f"missing {sorted(requires - platform.capabilities)}"
        missing = [(c, m) for c, m in missing_members(platform) if not c or c in requires]
        assert not missing, f"platform {self.platform!r} lacks (capability, member) {missing}"

    @pytest.mark.parametrize("rules", sorted(RULES))
    @pytest.mark.parametrize("workload", sorted(SMALL_WORKLOADS))
    def test_small_workloads_keep_the_contract(self, tmp_path_factory, workload, rules):
        """The contract on each small corner case under each workload rule."""
        spec = self.small_spec(tmp_path_factory.getbasetemp(), workload, SMALL_WORKLOADS[workload], RULES[rules])
        run = self.run(spec)
        assert len(run.jobs) == len(SMALL_WORKLOADS[workload])

    def test_a_lone_job_starts_at_once(self, tmp_path_factory):
        """Hand-checked: a one-process job arriving to an idle platform with nothing queued
        starts at its submission; so does one arriving after the first finished."""
        rows = [(0, 100, 1, 100), (1000, 50, 1, 60)]
        run = self.run(self.small_spec(tmp_path_factory.getbasetemp(), "lone", rows, {}, scale=False))
        assert [job.start_time for job in run.jobs] == [0, 1000]
        assert run.jobs[0].finish_time >= 100 and run.jobs[1].finish_time >= 1050

    @pytest.mark.parametrize("rules", ["kill", "extend", "exact"])
    def test_a_trace_slice_keeps_the_contract(self, rules):
        """The contract on the first :attr:`trace_jobs` jobs of KTH-SP2."""
        run = self.run(self.trace_spec(self.trace_jobs, RULES[rules]))
        assert len(run.jobs) > 0

    @pytest.mark.slow
    @pytest.mark.parametrize("rules", ["kill", "extend", "exact"])
    def test_a_long_trace_slice_keeps_the_contract(self, rules):
        """The contract on the first :attr:`long_trace_jobs` jobs of KTH-SP2."""
        self.run(self.trace_spec(self.long_trace_jobs, RULES[rules]))

    def test_the_same_seed_gives_the_same_records(self):
        """Twice in this process, and through ``simulate``: bit-identical per-job records."""
        spec = self.determinism_spec()
        first = run_spec(spec, per_unit=self.per_unit)
        assert_run_contract(first, may_reject=self.may_reject)
        second = simulate(spec).jobs
        assert_records_identical(first.records, second, "audited run vs simulate")
        assert records_digest(second) == self.determinism_digest()

    @pytest.mark.slow
    def test_the_same_seed_gives_the_same_records_in_a_fresh_interpreter(self):
        """A freshly started interpreter (another hash seed) computes the same digest."""
        theirs = fresh_interpreter_digests([type(self)])
        assert theirs[class_key(type(self))] == self.determinism_digest()
