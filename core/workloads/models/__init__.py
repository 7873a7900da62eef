"""Synthetic workload models (MODELS.md): seeded, pure generators of SWF records.

Each model module exposes ``NAME``, ``PRESETS`` (preset name -> parameter dict),
``DEFAULT_PRESET`` and ``generate(jobs, *, seed, machine_size, preset, load_scale, max_size,
**overrides) -> ModelOutput``, which checks its parameters (``checked(preset, overrides, *,
machine_size, max_size)``) and draws from them (``draw(checked, jobs, *, seed, load_scale)``).
A run checks a model's parameters once, as it is planned (:func:`check_model`), and draws from
them (:func:`generate_checked`) as often as its target load needs. A generator is a pure
function of its arguments: the same arguments give the same records in any process. Its
records go through the same workload rules as a trace's (:func:`tiersweep.core.workloads.rules.jobs_from_records`).
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

import numpy as np

__all__ = ["ModelOutput", "CheckedModel", "MODEL_NAMES", "model_module", "generate", "check_model", "generate_checked"]


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


@dataclass(frozen=True)
class CheckedModel:
    """A model's parameters, checked for one machine: everything its generator draws from but
    the seed, the job count and the load scale.

    Attributes:
        model: The model's name (``workload.model``).
        preset: The preset.
        overrides: The parameters given over the preset's.
        machine_size: The machine's size P.
        max_size: The largest job size as given (None: the model's default for the machine).
        params: The model's own checked form of them (what its ``checked`` returns).
    """

    model: str
    preset: str
    overrides: Mapping[str, Any]
    machine_size: int
    max_size: int | None
    params: Any


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


def check_model(
    model: str, preset: str, overrides: Mapping[str, Any], *, machine_size: int, max_size: int | None = None
) -> CheckedModel:
    """Check ``overrides`` of ``model``'s ``preset`` (with ``max_size``) on a machine of
    ``machine_size`` nodes: the check a generator makes, made once, before anything runs.

    Raises:
        ValueError: (or SpecError) A parameter the model does not take, or a bad value.
    """
    module = model_module(model)
    params = module.checked(preset, overrides, machine_size=machine_size, max_size=max_size)
    return CheckedModel(model, preset, dict(overrides), machine_size, max_size, params)


def generate_checked(checked: CheckedModel, jobs: int, *, seed: int, load_scale: float = 1.0) -> ModelOutput:
    """Generate ``jobs`` jobs from ``checked`` parameters (see :func:`check_model`): what
    :func:`generate` returns for the same arguments, without checking them again."""
    return model_module(checked.model).draw(checked, int(jobs), seed=int(seed), load_scale=float(load_scale))
