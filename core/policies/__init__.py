"""Scheduling policies, registered by name.

Add a policy by writing its module, importing it here and adding it to :data:`POLICIES` with
the parameters it accepts; the spec validator and ``--help`` pick it up from there.
"""

from __future__ import annotations

from ..errors import SpecError
from ..params import Param, number_or
from .backfill import Backfill, Conservative, Easy, Fcfs, Selective
from .base import BasePolicy, Decision, Start, Suspend

__all__ = ["POLICIES", "POLICY_PARAMS", "make_policy", "BasePolicy", "Decision", "Start", "Suspend", "Backfill"]

#: Policy classes by registry name.
POLICIES: dict[str, type[BasePolicy]] = {
    "fcfs": Fcfs,
    "easy": Easy,
    "conservative": Conservative,
    "selective": Selective,
}

#: The spec keys each policy accepts besides ``name``, passed to its constructor.
POLICY_PARAMS: dict[str, dict[str, Param]] = {
    "fcfs": {},
    "easy": {},
    "conservative": {},
    "selective": {
        "xfactor_threshold": Param(
            number_or("adaptive", minimum=1.0),
            default="adaptive",
            doc="starvation threshold: a number >= 1, or adaptive = max(10, mean bounded slowdown)",
        ),
    },
}


def make_policy(name: str, **params: object) -> BasePolicy:
    """Instantiate the policy registered as ``name`` with validated ``params``."""
    try:
        cls = POLICIES[name]
    except KeyError:
        raise SpecError(f"policy.name: unknown policy {name!r}; valid choices: {', '.join(POLICIES)}") from None
    return cls(**params)
