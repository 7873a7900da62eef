"""The declared boundary between policies and platforms: a policy reads nothing of a platform
but the engine's interface and the members of the capabilities it requires, and the contract
check finds a platform that lacks one of them before any run."""

from __future__ import annotations

import pytest

from helpers import make_jobs
from tiersweep.core.capabilities import MEMBERS, NODE_VMS, PLATFORM_MEMBERS, missing_members
from tiersweep.core.engine import Engine
from tiersweep.core.platforms import Nodes
from tiersweep.core.policies import make_policy
from tiersweep.core.workloads.cpu import annotate_cpu


class Declared:
    """A platform seen only through its declared members: the engine's interface and those of
    the capabilities the policy requires. Anything else is an ``AttributeError``."""

    def __init__(self, platform: Nodes, requires: frozenset[str]) -> None:
        allowed = set(PLATFORM_MEMBERS).union(*(MEMBERS[c] for c in requires))
        object.__setattr__(self, "_platform", platform)
        object.__setattr__(self, "_allowed", allowed)

    def __getattr__(self, name):
        if name not in self._allowed:
            raise AttributeError(f"{name!r} is not a declared member")
        return getattr(self._platform, name)


class VectorNodes(Nodes):
    """Two-tier nodes on the vectorised path (the numpy views) for every job."""

    vector_vms = 0
    vector_from = 1


def _workload():
    rows = [(10.0 * i, 40.0 + (37 * i) % 300, (7 * i) % 23 + 1, 400.0) for i in range(300)]
    jobs = make_jobs(rows, 32)
    annotate_cpu(jobs, seed=3)
    return jobs


@pytest.mark.parametrize("platform_cls", [Nodes, VectorNodes], ids=["lists", "views"])
@pytest.mark.parametrize("name", ["amcbf", "cmcbf", "smcbf", "keasy", "reasy"])
def test_policies_read_only_declared_members(name, platform_cls):
    # A platform offering node_vms with exactly its declared members must run the family to
    # the end: a member read beside them (bulk_from, vm_job_view) would fail mid-run.
    policy = make_policy(name)
    platform = Declared(platform_cls(32, 2, seed=3), policy.requires)
    jobs = _workload()
    Engine(jobs, platform, policy, migration_cost=5.0).run()
    assert all(job.finish_time == job.finish_time for job in jobs)


class Undeclaring(Nodes):
    """Offers node_vms but lacks a member that consolidation reads."""

    def __getattribute__(self, name):
        if name == "vm_job_view":
            raise AttributeError(name)
        return super().__getattribute__(name)


def test_a_platform_lacking_a_declared_member_fails_the_contract_check():
    assert "vm_job_view" in MEMBERS[NODE_VMS] and "bulk_from" in MEMBERS[NODE_VMS]
    assert missing_members(Undeclaring(16, 2)) == [(NODE_VMS, "vm_job_view")]
    assert missing_members(Nodes(16, 2)) == []
