"""Synthetic workload models (MODELS.md): seeded, pure generators of SWF records.

Each model module exposes ``NAME``, ``PRESETS`` (preset name -> parameter dict),
``DEFAULT_PRESET`` and ``generate(jobs, *, seed, machine_size, preset, load_scale, max_size,
**overrides) -> ModelOutput``. A generator is a pure function of its arguments: the same
arguments give the same records in any process. Its records go through the same workload
rules as a trace's (:func:`tiersweep.core.workloads.rules.jobs_from_records`).
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

import numpy as np

__all__ = ["ModelOutput", "MODEL_NAMES", "model_module", "generate", "check_parameters"]


@dataclass(frozen=True)
class ModelOutput:
    """What a generator returns.

    Attributes:
        records: ``float64`` array ``(n, 18)`` of SWF fields, in submit order, job numbers
            1..n, times rounded to whole seconds as they would be written.
        header: SWF header ``Key: value`` pairs (model, preset, seed, load_scale, MaxNodes, ...).
    """

    records: np.ndarray
    header: Mapping[str, str]


#: Registered models, by spec name (``workload.model``).
MODEL_NAMES = ("lublin03", "jann97", "feitelson96")


def model_module(name: str) -> Any:
    """The module implementing model ``name`` (imported on first use)."""
    if name == "lublin03":
        from . import lublin

        return lublin
    if name == "jann97":
        from . import jann

        return jann
    if name == "feitelson96":
        from . import feitelson

        return feitelson
    raise ValueError(f"unknown model {name!r}; valid choices: {', '.join(MODEL_NAMES)}")


def generate(
    model: str,
    jobs: int,
    *,
    seed: int,
    machine_size: int,
    preset: str | None = None,
    load_scale: float = 1.0,
    max_size: int | None = None,
    **overrides: Any,
) -> ModelOutput:
    """Generate ``jobs`` jobs of ``model`` (see the model modules for presets and overrides)."""
    module = model_module(model)
    return module.generate(
        jobs,
        seed=seed,
        machine_size=machine_size,
        preset=preset or module.DEFAULT_PRESET,
        load_scale=load_scale,
        max_size=max_size,
        **overrides,
    )


def check_parameters(
    model: str,
    preset: str,
    overrides: Mapping[str, Any],
    *,
    machine_size: int | None = None,
    max_size: int | None = None,
) -> None:
    """Raise ValueError (or SpecError) if ``overrides`` are not valid parameters of ``model``'s
    ``preset`` (on a machine of ``machine_size`` nodes, if known): the check a generator makes,
    made before anything runs. A model whose parameters do not depend on the machine needs no
    ``check_parameters`` of its own: building its parameter dict is the check."""
    module = model_module(model)
    if hasattr(module, "check_parameters"):
        module.check_parameters(preset, overrides, machine_size=machine_size, max_size=max_size)
    else:
        module.parameters(preset, **overrides)
