"""The run plan: a spec validated once, immutable, and everything a run is assembled from.

:func:`tiersweep.core.spec.plan_run` is the one way to make one from a spec;
:func:`tiersweep.core.simulate.assemble` the one way to build a run from one. Nothing checks
a plan's sections again: the platform and policy classes are constructed from them as they are.
"""

from __future__ import annotations

import copy
from collections.abc import Mapping
from dataclasses import dataclass, replace
from types import MappingProxyType
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from .workloads.models import CheckedModel

__all__ = ["RunPlan"]


def _read_only(section: Mapping[str, Any]) -> Mapping[str, Any]:
    return MappingProxyType(copy.deepcopy(dict(section)))


@dataclass(frozen=True)
class RunPlan:
    """A validated run: every default filled in, the sections split by who takes them.

    Attributes:
        seed: The run's seed.
        workload: The ``workload`` section.
        platform_kind: The platform's registry kind.
        platform: The platform's own parameters (its constructor's keywords).
        engine: The keys of the ``platform`` section the engine takes
            (:data:`tiersweep.core.engine.ENGINE_PARAMS`), its constructor's keywords.
        policy_name: The policy's registry name.
        policy: The policy's parameters (its constructor's keywords).
        model: A model workload's parameters, checked for the machine (what its generator draws
            from); None for a trace. Not part of :attr:`spec`: the workload section says them.

    The mappings are read-only; :meth:`with_nodes` and :meth:`with_trace` return new plans.
    """

    seed: int
    workload: Mapping[str, Any]
    platform_kind: str
    platform: Mapping[str, Any]
    engine: Mapping[str, Any]
    policy_name: str
    policy: Mapping[str, Any]
    model: CheckedModel | None = None

    def __post_init__(self) -> None:
        for name in ("workload", "platform", "engine", "policy"):
            object.__setattr__(self, name, _read_only(getattr(self, name)))

    def __reduce__(self) -> tuple[Any, ...]:
        # (read-only mappings do not pickle: a plan crosses to worker processes as plain dicts)
        sections = (dict(self.workload), dict(self.platform), dict(self.engine), dict(self.policy))
        return _rebuilt, (self.seed, self.platform_kind, self.policy_name, *sections, self.model)

    @property
    def spec(self) -> dict[str, Any]:
        """The plan as a spec (a new, plain nested dict): what :func:`~tiersweep.core.spec.validate_spec`
        returns, what a result records and what a sweep cell's id hashes."""
        return {
            "seed": self.seed,
            "workload": copy.deepcopy(dict(self.workload)),
            "platform": {
                "kind": self.platform_kind,
                **copy.deepcopy(dict(self.engine)),
                **copy.deepcopy(dict(self.platform)),
            },
            "policy": {"name": self.policy_name, **copy.deepcopy(dict(self.policy))},
        }

    def with_nodes(self, nodes: int) -> RunPlan:
        """This plan with the machine size ``nodes`` (a platform sized by ``nodes`` only; the
        size a trace's header gives when the spec left it unset)."""
        if "nodes" not in self.platform:
            return self
        return replace(self, platform={**self.platform, "nodes": nodes})

    def with_trace(self, path: str) -> RunPlan:
        """This plan reading its trace at ``path`` (the same file named another way)."""
        return replace(self, workload={**self.workload, "trace": path})


def _rebuilt(seed, kind, name, workload, platform, engine, policy, model) -> RunPlan:  # noqa: ANN001 - see __reduce__
    return RunPlan(seed, workload, kind, platform, engine, name, policy, model)
