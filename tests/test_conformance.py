"""The shipped contract (:mod:`tiersweep.contract`) for every valid (policy, platform) pair.

The test classes are generated from the registries: every registered policy is crossed with
every registered platform configuration below, and a class is made for each pair
:func:`~tiersweep.core.spec.policy_runs_on` accepts, so a newly registered policy or platform
gets the whole contract without a line here (a platform without configurations here runs
with its defaults). Policy- and platform-specific promises that hold on every run (FCFS
order; the consolidating policies' background threshold and dispatch guarantees; the fat
tree's reference hose model) are added to the generated classes as mixins.

Also here: every invalid pair is a one-line spec error naming the policy, the platform and the
missing capability; the generated classes cover every valid pair, every embedder and both
share presets; all their determinism digests agree with a fresh interpreter's; and the
contract catches broken plug-ins (it is not vacuous).
"""

from __future__ import annotations

import re
from collections.abc import Iterator, Mapping
from typing import Any

import numpy as np
import pytest

from test_contract import audit_consolidation
from test_fat_tree_contract import assert_state_matches
from tiersweep.contract.checks import class_key, fresh_interpreter_digests
from tiersweep.contract.platforms import PlatformContract
from tiersweep.contract.policies import PolicyContract
from tiersweep.core.capabilities import EMBEDDING, TIERS
from tiersweep.core.engine import Engine
from tiersweep.core.errors import SpecError
from tiersweep.core.platforms import PLATFORMS, Nodes, make_platform
from tiersweep.core.platforms.embedders import EMBEDDERS
from tiersweep.core.platforms.fat_tree import quantize
from tiersweep.core.policies import POLICIES, Consolidation, make_policy
from tiersweep.core.policies.vm_backfill import SELECTORS
from tiersweep.core.spec import policy_runs_on, validate_platform, validate_spec

# -- configurations ------------------------------------------------------------------------------

#: Platform configurations by kind: (label, platform params, workload params, trace-only
#: workload params). ``nodes`` leaves its size to the workload (10 for the small cases, the
#: log's 100 for KTH-SP2); 25 machines of 4 shared VMs hold KTH's largest jobs; a k = 4 tree of
#: 8-slot servers (128 slots) with demands around 100 Mbps keeps links binding, and KTH's
#: arrivals are compressed to a load of 0.9 so that jobs queue there.
CONFIGS: dict[str, list[tuple[str, dict[str, Any], dict[str, Any], dict[str, Any]]]] = {
    "nodes": [(f"tiers{t}", {"tiers": t, "migration_cost": 20.0}, {}, {}) for t in (1, 2, 3)],
    "shared_vms": [
        (shares, {"machines": 25, "vms": 4, "shares": shares}, {}, {}) for shares in ("homogeneous", "heterogeneous")
    ],
    "fat_tree": [("k4", {"k": 4, "slots": 8, "link_mbps": 1000.0}, {"bandwidth": {"mean": 100}}, {"load": 0.9})],
}

_OTHER_EMBEDDERS = [name for name in EMBEDDERS if name != "adaba"]


def policy_variants(name: str, kind: str, label: str, position: int) -> list[dict[str, Any]]:
    """Policy parameters to run ``name`` with on one configuration: the defaults, plus, for
    the embedding policies, one other embedder each (in turn, so every embedder runs), and for
    ``vm_backfill`` on shared VMs, half of the selectors on each share preset, and for the
    policies that take runtime predictions, EASY++ (``last2`` predictions, shortest first)."""
    variants: list[dict[str, Any]] = [{}]
    if "prediction" in POLICIES[name].params:
        variants.append({"prediction": "last2", "order": "spf"})
    if EMBEDDING in POLICIES[name].requires and "embedder" in POLICIES[name].params:
        variants.append({"embedder": _OTHER_EMBEDDERS[position % len(_OTHER_EMBEDDERS)]})
    if name == "vm_backfill" and kind == "shared_vms":
        default = POLICIES[name].params["selector"].default
        others = [s for s in SELECTORS if s != default]
        half = others[: (len(others) + 1) // 2] if label == "homogeneous" else others[(len(others) + 1) // 2 :]
        variants += [{"selector": s} for s in half]
    return variants


# -- policy- and platform-specific promises ------------------------------------------------------------


class FcfsOrder:
    """FCFS starts jobs in queue order."""

    def check_run(self, run):
        super().check_run(run)
        assert (np.diff(run.records["start_time"]) >= 0).all(), "fcfs started a job before one ahead of it"


class ConsolidationPromises:
    """The consolidating policies' background threshold and dispatch guarantees, every pass."""

    def audit(self, sim):
        super().audit(sim)
        audit_consolidation(sim)


class HoseModel:
    """The fat tree's residuals are exactly what the running jobs' placements take (checked
    with the brute-force reference hose model), every pass."""

    def audit(self, sim):
        super().audit(sim)
        running = list(sim.running.values())
        assert_state_matches(sim.platform, [(j.nodes, j.size, quantize(j.bandwidth)) for j in running])


def mixins_for(name: str, kind: str) -> tuple[type, ...]:
    """The promise mixins of policy ``name`` on ``kind``."""
    found: list[type] = []
    if name == "fcfs":
        found.append(FcfsOrder)
    if issubclass(POLICIES[name], Consolidation) and kind == "nodes":
        found.append(ConsolidationPromises)
    if kind == "fat_tree":
        found.append(HoseModel)
    return tuple(found)


# -- generating the classes -------------------------------------------------------------------------


def _ident(*parts: str) -> str:
    return "_".join(re.sub(r"\W+", "_", part) for part in parts if part)


def _checked(kind: str, params: Mapping[str, Any]) -> dict[str, Any]:
    return validate_platform({"kind": kind, **params})


def valid_pairs() -> Iterator[tuple[str, dict[str, Any], str, str, dict[str, Any], dict[str, Any], dict[str, Any]]]:
    """``(policy, policy params, kind, label, platform params, workload params, trace params)``
    for every registered policy on every configuration of every registered platform it runs on."""
    position = 0
    for name in POLICIES:
        for kind in PLATFORMS:
            for label, params, workload, trace in CONFIGS.get(kind, [("defaults", {}, {}, {})]):
                if not policy_runs_on(name, kind, _checked(kind, params)):
                    continue
                for variant in policy_variants(name, kind, label, position):
                    yield name, variant, kind, label, params, workload, trace
                position += 1


#: Jobs in the slow trace slice of a policy on the shared-VM platform.
SHARED_VM_LONG_TRACE_JOBS = 1500

POLICY_CLASSES: list[type[PolicyContract]] = []
for _name, _variant, _kind, _label, _params, _workload, _trace in valid_pairs():
    _cls = type(
        "TestPolicy_" + _ident(_name, *(str(v) for v in _variant.values()), "on", _kind, _label),
        (*mixins_for(_name, _kind), PolicyContract),
        {
            "policy": _name,
            "policy_params": _variant,
            "platform": _kind,
            "platform_params": _params,
            "workload_params": _workload,
            "trace_params": _trace,
            # The embedding policies turn away jobs their embedder can never place.
            "may_reject": EMBEDDING in POLICIES[_name].requires,
            # The shared-VM platform settles its allocation at every event, which makes its
            # slow slice the costliest by far (conservative: a minute each on a busy machine);
            # half the slice keeps the slow run within its budget and still spans full queues.
            "long_trace_jobs": SHARED_VM_LONG_TRACE_JOBS if _kind == "shared_vms" else PolicyContract.long_trace_jobs,
            "__module__": __name__,
        },
    )
    globals()[_cls.__name__] = _cls
    POLICY_CLASSES.append(_cls)

PLATFORM_CLASSES: list[type[PlatformContract]] = []
for _kind in PLATFORMS:
    for _label, _params, _workload, _ in CONFIGS.get(_kind, [("defaults", {}, {}, {})]):
        _cls = type(
            "TestPlatform_" + _ident(_kind, _label),
            (PlatformContract,),
            {"platform": _kind, "platform_params": _params, "workload_params": _workload, "__module__": __name__},
        )
        globals()[_cls.__name__] = _cls
        PLATFORM_CLASSES.append(_cls)


# -- coverage of the generated classes -----------------------------------------------------------------


def test_every_valid_pair_has_a_contract_class():
    covered = {(cls.policy, cls.platform) for cls in POLICY_CLASSES}
    expected = {(name, kind) for name in POLICIES for kind in PLATFORMS if policy_runs_on(name, kind)}
    assert covered == expected
    assert {cls.platform for cls in PLATFORM_CLASSES} == set(PLATFORMS)
    assert len({cls.__name__ for cls in POLICY_CLASSES}) == len(POLICY_CLASSES)


def test_the_configurations_cover_tiers_shares_embedders_and_selectors():
    on_nodes = {(cls.policy, cls.platform_params["tiers"]) for cls in POLICY_CLASSES if cls.platform == "nodes"}
    for name in POLICIES:
        if policy_runs_on(name, "nodes"):
            wanted = {2, 3} if TIERS in POLICIES[name].requires else {1, 2, 3}
            assert {t for n, t in on_nodes if n == name} == wanted, name
    shares = {(cls.policy, cls.platform_params["shares"]) for cls in POLICY_CLASSES if cls.platform == "shared_vms"}
    for name in POLICIES:
        if policy_runs_on(name, "shared_vms"):
            assert {s for n, s in shares if n == name} == {"homogeneous", "heterogeneous"}, name
    embedders = {cls.policy_params.get("embedder", "adaba") for cls in POLICY_CLASSES if cls.platform == "fat_tree"}
    assert embedders == set(EMBEDDERS)
    selectors = {
        cls.policy_params.get("selector", "pc-sg")
        for cls in POLICY_CLASSES
        if cls.policy == "vm_backfill" and cls.platform == "shared_vms"
    }
    assert selectors == set(SELECTORS)


# -- invalid pairs -------------------------------------------------------------------------------------


def invalid_pairs() -> Iterator[tuple[str, str, dict[str, Any]]]:
    """Every pair no configuration of the kind runs, and tier-requiring policies on one tier."""
    for name in POLICIES:
        for kind in PLATFORMS:
            if not policy_runs_on(name, kind):
                yield name, kind, {}
        if TIERS in POLICIES[name].requires and policy_runs_on(name, "nodes"):
            yield name, "nodes", {"tiers": 1}


@pytest.mark.parametrize(("name", "kind", "params"), list(invalid_pairs()))
def test_an_invalid_pair_is_a_one_line_spec_error(name, kind, params):
    spec = {"workload": {"trace": "unread.swf"}, "platform": {"kind": kind, **params}, "policy": {"name": name}}
    missing = POLICIES[name].requires - PLATFORMS[kind].capabilities_of(_checked(kind, params))
    assert missing
    with pytest.raises(SpecError) as info:
        validate_spec(spec)
    message = str(info.value)
    assert "\n" not in message and repr(name) in message and repr(kind) in message
    for capability in missing:
        assert repr(capability) in message, (capability, message)
    # The engine refuses the pair too, with the same kind of message.
    platform_params = {"nodes": 10, **params} if kind == "nodes" else params
    with pytest.raises(SpecError) as info:
        Engine([], make_platform(kind, platform_params), make_policy(name))
    message = str(info.value)
    assert "\n" not in message and repr(name) in message and repr(kind) in message
    assert all(repr(c) in message for c in missing)


def test_there_are_invalid_pairs_to_check():
    assert len(list(invalid_pairs())) >= len(POLICIES)


# -- determinism across processes, all classes at once ------------------------------------------------


def test_every_pair_gives_the_same_digest_in_a_fresh_interpreter():
    # One child for every class (each class's own fresh-interpreter test is slow).
    theirs = fresh_interpreter_digests(POLICY_CLASSES)
    for cls in POLICY_CLASSES:
        assert theirs[class_key(cls)] == cls().determinism_digest(), cls.__name__


# -- the contract has teeth ----------------------------------------------------------------------------


class _EasyOnNodes(PolicyContract):
    policy = "easy"
    platform_params = {"tiers": 1}


class _NodesPlatform(PlatformContract):
    platform = "nodes"


def test_the_contract_catches_a_platform_that_frees_nothing(monkeypatch, tmp_path_factory):
    monkeypatch.setattr(Nodes, "release", lambda self, job: None)
    with pytest.raises(AssertionError):
        _EasyOnNodes().test_small_workloads_keep_the_contract(tmp_path_factory, "backfill-mix", "kill")
    with pytest.raises(AssertionError, match="release"):
        _NodesPlatform().test_check_start_has_no_side_effect_and_agrees_with_start(tmp_path_factory)


def test_the_contract_catches_a_check_start_with_a_side_effect(monkeypatch, tmp_path_factory):
    original = Nodes.check_start

    def meddling(self, job, tier, nodes):
        self.probed = getattr(self, "probed", 0) + 1  # a visible change
        return original(self, job, tier, nodes)

    monkeypatch.setattr(Nodes, "check_start", meddling)
    with pytest.raises(AssertionError, match="check_start changed the platform"):
        _NodesPlatform().test_check_start_has_no_side_effect_and_agrees_with_start(tmp_path_factory)


def test_the_contract_catches_a_job_finishing_before_its_work_is_done(monkeypatch, tmp_path_factory):
    original = Engine._schedule_finish

    def hasty(self, job):
        job.progress = min(job.runtime, job.progress + 1.0)  # one second of work for free
        original(self, job)

    monkeypatch.setattr(Engine, "_schedule_finish", hasty)
    with pytest.raises(AssertionError, match="work|runtime"):
        _EasyOnNodes().test_small_workloads_keep_the_contract(tmp_path_factory, "backfill-mix", "kill")


def test_the_contract_catches_a_policy_that_turns_jobs_away(monkeypatch, tmp_path_factory):
    from tiersweep.core.decisions import Reject
    from tiersweep.core.policies.backfill import Easy

    original = Easy.decide

    def rejecting(self, sim):
        for job in list(sim.queue.values()):
            if job.job_id == 2 and job.start_time != job.start_time:
                yield Reject(job)
        yield from original(self, sim)

    monkeypatch.setattr(Easy, "decide", rejecting)
    with pytest.raises(AssertionError, match="turned away"):
        _EasyOnNodes().test_small_workloads_keep_the_contract(tmp_path_factory, "backfill-mix", "kill")


def test_the_contract_catches_a_platform_miscounting_its_free_units(monkeypatch, tmp_path_factory):
    # One unit more reported free whenever a job runs: the audit's free-count check fires.
    original = Nodes.free_count
    monkeypatch.setattr(
        Nodes,
        "free_count",
        lambda self, tier=0: original(self, tier) + (-1 in self.vm_job and len(set(self.vm_job)) > 1),
    )
    with pytest.raises(AssertionError, match="free"):
        _EasyOnNodes().test_small_workloads_keep_the_contract(tmp_path_factory, "same-submit", "kill")
