"""Run specs: plain mappings (usually loaded from YAML), validated with key paths.

A spec has four parts (the workload is a trace, as here, or a synthetic model such as
``workload: {model: feitelson96, jobs: 20000, load: 0.8}``)::

    seed: 1
    workload: {trace: ../shared/traces/KTH-SP2-1996-2.1-cln.swf.gz, jobs: 10000,
               size_field: requested, overrun: kill, estimate: requested}
    platform: {kind: nodes, nodes: 100}
    policy: {name: easy}

:func:`validate_spec` rejects unknown keys and bad values, naming the key path and the valid
choices, and returns a new spec with every default filled in. Relative trace paths are
resolved against the current working directory when the run starts.
"""

from __future__ import annotations

import copy
from typing import Any, Mapping

from .errors import SpecError
from .params import (
    Param,
    any_string,
    boolean,
    cpu_range,
    non_negative_int,
    one_of,
    positive_fraction,
    positive_int,
    positive_number,
    unit_interval,
)
from .platforms import PLATFORM_PARAMS, PLATFORMS
from .policies import COMMON_POLICY_PARAMS, POLICIES, POLICY_PARAMS
from .workloads.bandwidth import check_bandwidth
from .workloads.cpu import DEFAULT_CPU_PRIOR, DEFAULT_CPU_USAGE
from .workloads.models import MODEL_NAMES, model_module
from .workloads.rules import parse_estimate

__all__ = ["validate_spec", "SPEC_SECTIONS", "WORKLOAD_PARAMS", "MODEL_DEFAULT_JOBS", "set_key", "policy_runs_on"]


def _estimate(value: Any) -> str:
    parse_estimate(value)
    return value


def _mapping(value: Any) -> dict[str, Any]:
    if isinstance(value, Mapping) and all(isinstance(k, str) for k in value):
        return dict(value)
    raise ValueError(f"expected a mapping of parameter names to values, got {value!r}")


#: The keys of ``workload``.
WORKLOAD_PARAMS: dict[str, Param] = {
    "trace": Param(any_string, doc="path of an SWF file (plain or gzip); or give a model"),
    "model": Param(one_of(*MODEL_NAMES), doc=f"synthetic workload model: {' | '.join(MODEL_NAMES)}"),
    "preset": Param(any_string, doc="model preset (default: the model's own)"),
    "params": Param(_mapping, doc="model parameter overrides, e.g. {mean_gap: 150}"),
    "jobs": Param(
        positive_int,
        doc="trace: simulate the first N valid jobs; model: generate N (feitelson96 20000, others 10000)",
    ),
    "max_size": Param(
        positive_int,
        doc="model: largest job size (default: 256 within the machine for feitelson96 and jann97, "
        "the machine size for lublin03)",
    ),
    "load": Param(positive_number, doc="target offered load sum(size*runtime)/(nodes*span), reached by scaling gaps"),
    "load_method": Param(
        one_of("auto", "rescale", "model"),
        default="auto",
        doc="rescale all gaps (exact), or the model's own arrival scaling (keeps Lublin's daily cycle; "
        "the only way for feitelson96's repeats); auto: model for feitelson96, else rescale",
    ),
    "size_field": Param(one_of("requested", "allocated"), default="requested", doc="trace: SWF processor field giving the job size"),
    "overrun": Param(one_of("kill", "extend"), default="kill", doc="a job running past its request: kill it there, or let it run"),
    "estimate": Param(_estimate, default="requested", doc="runtime estimate: requested (the runtime when missing), exact or factor:<f>"),
    "lenient": Param(boolean, default=False, doc="trace: skip and count malformed lines instead of failing"),
    "cpu_usage": Param(
        cpu_range,
        default=list(DEFAULT_CPU_USAGE),
        doc="per-process CPU usage of multi-process jobs, U(low, high); single-process jobs use 1.0",
    ),
    "cpu_accuracy": Param(unit_interval, default=1.0, doc="a in [0, 1]: the scheduler sees a*true + (1-a)*prior"),
    "cpu_prior": Param(
        positive_fraction,
        default=DEFAULT_CPU_PRIOR,
        doc="the uninformed CPU-usage guess, in (0, 1]",
    ),
    "bandwidth": Param(
        check_bandwidth,
        default="none",
        doc="per-VM bandwidth demands (Mbps) for network-aware platforms: none | {mean: M, max_mbps: 1000} "
        "(paper 004's normal model around a mean) | {formula: paper, link_mbps: 1000, servers: 54} (as printed)",
    ),
}

_MODEL_ONLY = ("preset", "params", "max_size")
_TRACE_ONLY = ("size_field", "lenient")
#: Jobs generated when a model workload does not say.
MODEL_DEFAULT_JOBS = {"feitelson96": 20_000, "jann97": 10_000, "lublin03": 10_000}


def _validate_workload(given: Any) -> dict[str, Any]:
    out = _section("workload", given, WORKLOAD_PARAMS, {})
    if (out["trace"] is None) == (out["model"] is None):
        raise SpecError("workload: give exactly one of workload.trace (an SWF file) or workload.model")
    if out["trace"] is not None:
        for key in _MODEL_ONLY:
            if given.get(key) is not None:
                raise SpecError(f"workload.{key}: only for model workloads, not with workload.trace")
        if out["load_method"] == "model":
            raise SpecError("workload.load_method: 'model' needs a model workload; a trace can only be rescaled")
        return out
    for key in _TRACE_ONLY:
        if given.get(key) is not None and given[key] != WORKLOAD_PARAMS[key].default:
            raise SpecError(f"workload.{key}: only for trace workloads, not with workload.model")
        out[key] = None  # not applicable
    model = out["model"]
    module = model_module(model)
    if out["preset"] is None:
        out["preset"] = module.DEFAULT_PRESET
    elif out["preset"] not in module.PRESETS:
        raise SpecError(
            f"workload.preset: unknown preset {out['preset']!r} of {model}; valid choices: {', '.join(module.PRESETS)}"
        )
    out["params"] = out["params"] or {}
    if out["jobs"] is None:
        out["jobs"] = MODEL_DEFAULT_JOBS[model]
    return out


#: Top-level keys and the sections.
SPEC_SECTIONS = ("seed", "workload", "platform", "policy")


def _section(path: str, given: Any, params: Mapping[str, Param], fixed: Mapping[str, Any]) -> dict[str, Any]:
    if not isinstance(given, Mapping):
        raise SpecError(f"{path}: expected a mapping, got {given!r}")
    out = dict(fixed)
    for key in given:
        if key in fixed:
            continue
        if key not in params:
            valid = ", ".join(sorted([*fixed, *params]))
            raise SpecError(f"{path}.{key}: unknown key; valid keys: {valid}")
    for key, param in params.items():
        if key in given and given[key] is not None:
            out[key] = param.validate(f"{path}.{key}", given[key])
        else:
            out[key] = param.default
    return out


def validate_spec(spec: Mapping[str, Any]) -> dict[str, Any]:
    """Check ``spec`` and return a copy with every default filled in.

    Raises:
        SpecError: An unknown key or a bad value; the message names the key path (such as
            ``policy.name``) and lists the valid keys or choices.
    """
    if not isinstance(spec, Mapping):
        raise SpecError(f"spec: expected a mapping, got {type(spec).__name__}")
    for key in spec:
        if key not in SPEC_SECTIONS:
            raise SpecError(f"{key}: unknown key; valid keys: {', '.join(SPEC_SECTIONS)}")
    out: dict[str, Any] = {}
    out["seed"] = Param(non_negative_int).validate("seed", spec.get("seed", 0))

    workload = spec.get("workload")
    if workload is None:
        raise SpecError("workload: missing; give workload.trace (an SWF file) or workload.model")
    out["workload"] = _validate_workload(workload)

    platform = spec.get("platform", {"kind": "nodes"})
    kind = platform.get("kind", "nodes") if isinstance(platform, Mapping) else None
    if kind not in PLATFORMS:
        raise SpecError(f"platform.kind: unknown value {kind!r}; valid choices: {', '.join(PLATFORMS)}")
    out["platform"] = _section("platform", platform, PLATFORM_PARAMS[kind], {"kind": kind})

    policy = spec.get("policy", {"name": "easy"})
    name = policy.get("name", "easy") if isinstance(policy, Mapping) else None
    if name not in POLICIES:
        raise SpecError(f"policy.name: unknown value {name!r}; valid choices: {', '.join(POLICIES)}")
    out["policy"] = _section("policy", policy, {**COMMON_POLICY_PARAMS, **POLICY_PARAMS[name]}, {"name": name})
    if not policy_runs_on(name, kind):
        fitting = ", ".join(n for n in POLICIES if policy_runs_on(n, kind))
        raise SpecError(f"policy.name: {name!r} does not run on platform.kind {kind!r}; policies for {kind}: {fitting}")
    return out


def policy_runs_on(name: str, kind: str) -> bool:
    """Whether policy ``name`` runs on platform ``kind``.

    A policy that declares ``platform_kinds`` runs on those kinds only; one that does not runs
    on any platform except those that set ``needs_placement`` (they cannot place a job
    themselves, so only policies written for them can use them).
    """
    kinds = getattr(POLICIES[name], "platform_kinds", None)
    if kinds is not None:
        return kind in kinds
    return not getattr(PLATFORMS[kind], "needs_placement", False)


def set_key(spec: Mapping[str, Any], dotted: str, value: Any) -> dict[str, Any]:
    """Return a deep copy of ``spec`` with ``dotted`` (e.g. ``policy.name``) set to ``value``."""
    out = copy.deepcopy(dict(spec))
    parts = dotted.split(".")
    if not all(parts):
        raise SpecError(f"{dotted}: expected a dotted key such as policy.name")
    node = out
    for i, part in enumerate(parts[:-1]):
        child = node.get(part)
        if child is None:
            child = node[part] = {}
        elif not isinstance(child, dict):
            raise SpecError(f"{'.'.join(parts[: i + 1])}: is a value, not a section; cannot set {dotted}")
        node = child
    node[parts[-1]] = value
    return out
