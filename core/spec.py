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
from collections.abc import Mapping
from typing import Any

from .capabilities import pair_problem
from .engine import ENGINE_PARAMS
from .errors import SpecError, refuse_unknown_keys
from .params import (
    Param,
    Section,
    any_string,
    boolean,
    cpu_range,
    int_in,
    number_in,
    one_of,
    positive_fraction,
    positive_int,
    seed_value,
    unit_interval,
    validate_sections,
)
from .plan import RunPlan
from .platforms import PLATFORMS, platform_class
from .policies import POLICIES, policy_class
from .workloads.bandwidth import check_bandwidth
from .workloads.cpu import DEFAULT_CPU_PRIOR, DEFAULT_CPU_USAGE
from .workloads.models import MODEL_NAMES, model_module
from .workloads.rules import parse_estimate

__all__ = [
    "plan_run",
    "validate_spec",
    "validate_platform",
    "SPEC_SECTIONS",
    "WORKLOAD_PARAMS",
    "MODEL_DEFAULT_JOBS",
    "KEY_ALIASES",
    "canonical_key",
    "set_key",
    "policy_runs_on",
]


def _estimate(value: Any) -> str:
    parse_estimate(value)
    return value


def _mapping(value: Any) -> dict[str, Any]:
    if isinstance(value, Mapping) and all(isinstance(k, str) for k in value):
        return dict(value)
    raise ValueError(f"expected a mapping of parameter names to values, got {value!r}")


#: The most jobs a workload may have (a million take about 1 GB in a run).
MAX_JOBS = 100_000_000

#: The offered loads a workload may be scaled to (arrival gaps are whole seconds: far beyond
#: these, scaling leaves every gap zero or overflows them).
MIN_LOAD, MAX_LOAD = 0.001, 100.0
#: The most VMs (processors x tiers) a platform may have: each VM's state takes about 70
#: bytes, so this is about 1.5 GB; a larger machine would exhaust memory as the run starts.
MAX_VMS = 20_000_000

#: The keys of ``workload``.
WORKLOAD_PARAMS: dict[str, Param] = {
    "trace": Param(any_string, doc="path of an SWF file (plain or gzip); or give a model"),
    "model": Param(one_of(*MODEL_NAMES), doc=f"synthetic workload model: {' | '.join(MODEL_NAMES)}"),
    "preset": Param(any_string, doc="model preset (default: the model's own)"),
    "params": Param(_mapping, doc="model parameter overrides, e.g. {mean_gap: 150}"),
    "jobs": Param(
        int_in(1, MAX_JOBS, "a hundred million jobs need about 100 GB of memory"),
        doc="trace: simulate the first N valid jobs; model: generate N (feitelson96 20000, others 10000)",
    ),
    "max_size": Param(
        positive_int,
        doc="model: largest job size (default: 256 within the machine for feitelson96 and jann97, "
        "the machine size for lublin03)",
    ),
    "load": Param(
        number_in(MIN_LOAD, MAX_LOAD, "gaps scaled further are weeks long, or all zero"),
        doc="target offered load sum(size*runtime)/(nodes*span), reached by scaling gaps",
    ),
    "load_method": Param(
        one_of("auto", "rescale", "model"),
        default="auto",
        doc="rescale all gaps (exact), or the model's own arrival scaling (keeps Lublin's daily cycle; "
        "the only way for feitelson96's repeats); auto: model for feitelson96, else rescale",
    ),
    "size_field": Param(
        one_of("requested", "allocated"), default="requested", doc="trace: SWF processor field giving the job size"
    ),
    "overrun": Param(
        one_of("kill", "extend"), default="kill", doc="a job running past its request: kill it there, or let it run"
    ),
    "estimate": Param(
        _estimate,
        default="requested",
        doc="runtime estimate: requested (the runtime when missing), exact or factor:<f>",
    ),
    "lenient": Param(boolean, default=False, doc="trace: skip and count malformed lines instead of failing"),
    "cpu_usage": Param(
        cpu_range,
        default=list(DEFAULT_CPU_USAGE),
        doc="per-process CPU usage of multi-process jobs, U(low, high); single-process jobs use 1.0",
    ),
    "cpu_accuracy": Param(unit_interval, default=1.0, doc="a in [0, 1]: the scheduler sees a*true + (1-a)*guess"),
    "cpu_guess": Param(
        one_of("draw", "prior"),
        default="draw",
        doc="the uninformed guess: draw (per process, from the usage range; single-process jobs known to use "
        "a whole CPU) or prior (cpu_prior for every process, the first reading: accuracies 0.25-0.75 coincide)",
    ),
    "cpu_prior": Param(
        positive_fraction,
        default=DEFAULT_CPU_PRIOR,
        doc="the fixed uninformed CPU-usage guess of cpu_guess: prior, in (0, 1]",
    ),
    "bandwidth": Param(
        check_bandwidth,
        default="none",
        doc="per-VM bandwidth demands (Mbps) for network-aware platforms: none | {mean: M, max_mbps: 1000} "
        "(paper 004's normal model around a mean) | {formula: paper, link_mbps: 1000, servers: 54, whole_vms: false} "
        "(as printed; whole_vms: MaxB = R / ceil(N / S), every job fits the empty tree)",
    ),
}

#: Workload keys only a model workload takes (beside ``model``), and only a trace takes
#: (beside ``trace``).
MODEL_ONLY_KEYS = ("preset", "params", "max_size")
TRACE_ONLY_KEYS = ("size_field", "lenient")
#: Jobs generated when a model workload does not say.
MODEL_DEFAULT_JOBS = {"feitelson96": 20_000, "jann97": 10_000, "lublin03": 10_000}


def _workload_rule(out: dict[str, Any], given: Mapping[str, Any]) -> None:
    """The workload section's check across its keys: a trace or a model, each with only its own
    keys; a model's preset, parameters and job count filled in."""
    if (out["trace"] is None) == (out["model"] is None):
        raise SpecError("workload: give exactly one of workload.trace (an SWF file) or workload.model")
    if out["trace"] is not None:
        for key in MODEL_ONLY_KEYS:
            if given.get(key) is not None:
                raise SpecError(f"workload.{key}: only for model workloads, not with workload.trace")
        if out["load_method"] == "model":
            raise SpecError("workload.load_method: 'model' needs a model workload; a trace can only be rescaled")
        return
    for key in TRACE_ONLY_KEYS:
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


#: Top-level keys and the sections.
SPEC_SECTIONS = ("seed", "workload", "platform", "policy")


#: Spec keys that moved, by their old dotted name: still accepted where users write them, and
#: stored (and analysed) under the new name: the one table of old spellings. The engine's keys
#: (:data:`~tiersweep.core.engine.ENGINE_PARAMS`) are given in the platform section; older specs
#: gave them in the policy section, which no policy reads.
KEY_ALIASES: dict[str, str] = {f"policy.{key}": f"platform.{key}" for key in ENGINE_PARAMS}


def canonical_key(dotted: str) -> str:
    """The dotted spec key under which ``dotted`` is stored (see :data:`KEY_ALIASES`)."""
    return KEY_ALIASES.get(dotted, dotted)


def _moved_keys(platform: Mapping[str, Any], policy: Mapping[str, Any]) -> tuple[dict[str, Any], dict[str, Any]]:
    """Move the aliased keys (all of them ``policy.*``) into ``platform``; returns copies."""
    platform, policy = dict(platform), dict(policy)
    for old, new in KEY_ALIASES.items():
        key, new_key = old.split(".")[1], new.split(".")[1]
        value = policy.pop(key, None)
        if value is None:
            continue
        if platform.get(new_key) is not None and platform[new_key] != value:
            raise SpecError(f"{old}: {value!r} contradicts {new}: {platform[new_key]!r}; give it once, as {new}")
        platform[new_key] = value
    return platform, policy


def validate_spec(spec: Mapping[str, Any]) -> dict[str, Any]:
    """Check ``spec`` and return a copy with every default filled in: :func:`plan_run`'s plan
    as a spec (:attr:`RunPlan.spec <tiersweep.core.plan.RunPlan.spec>`).

    Raises:
        SpecError: As :func:`plan_run`.
    """
    return plan_run(spec).spec


def validate_platform(section: Any) -> dict[str, Any]:
    """Check a ``platform`` section (its ``kind``, the engine's keys and the kind's own keys)
    and return a copy with every default filled in: ``kind``, then the engine's keys, then the
    platform's own.

    Raises:
        SpecError: An unknown kind or key, a bad value, or a machine too large to hold.
    """
    if not isinstance(section, Mapping):
        raise SpecError(f"platform: expected a mapping, got {section!r}")
    (checked,) = validate_sections([_platform_section(platform_class(section.get("kind", "nodes")), section)])
    return checked


def _platform_section(cls: Any, given: Mapping[str, Any]) -> Section:
    """The ``platform`` section of platform class ``cls`` to check: the engine's keys and the
    kind's own, then the kind's check across them and the machine's size."""
    _refuse_taken_keys(cls, "platform", ENGINE_PARAMS, "the engine takes")

    def rule(out: dict[str, Any], _given: Mapping[str, Any]) -> None:
        cls.check_params(out)
        _check_machine_size(cls, out)

    return Section("platform", given, {**ENGINE_PARAMS, **cls.params}, {"kind": cls.kind}, rule)


def _refuse_taken_keys(cls: Any, family: str, taken: Mapping[str, Any], whose: str) -> None:
    """A plug-in declaring a key that another part of the run takes is a bug, not a bad spec."""
    clash = sorted(set(cls.params) & set(taken))
    if clash:
        raise TypeError(f"{family} {cls.__name__}: parameter {clash[0]!r} clashes with a key {whose}")


def plan_run(spec: Mapping[str, Any]) -> RunPlan:
    """Check ``spec`` once and return its :class:`~tiersweep.core.plan.RunPlan`, every default
    filled in.

    The spec's shape is checked first (its sections, the platform's kind and the policy's name);
    then every section at once against the parameters declared for it
    (:func:`tiersweep.core.params.validate_sections`, the one validation path), in the order seed,
    workload, platform, policy; then the pair against the capabilities the policy requires, and a
    model workload's parameters against the machine. Old spellings of moved keys
    (:data:`KEY_ALIASES`) are accepted and planned under their new names.

    Raises:
        SpecError: An unknown key, a bad value, or a policy the platform cannot run; the
            message names the key path (such as ``policy.name``) and lists the valid keys or
            choices, or names the policy, the platform and the missing capability.
    """
    if not isinstance(spec, Mapping):
        raise SpecError(f"spec: expected a mapping, got {type(spec).__name__}")
    refuse_unknown_keys(spec, SPEC_SECTIONS)
    given_workload = spec.get("workload")
    if given_workload is None:
        raise SpecError("workload: missing; give workload.trace (an SWF file) or workload.model")
    platform = spec.get("platform", {"kind": "nodes"})
    policy = spec.get("policy", {"name": "easy"})
    for section, given in (("platform", platform), ("policy", policy)):
        if not isinstance(given, Mapping):
            raise SpecError(f"{section}: expected a mapping, got {given!r}")
    platform_cls = platform_class(platform.get("kind", "nodes"))
    policy_cls = policy_class(policy.get("name", "easy"))
    moved = {old.split(".")[1]: None for old in KEY_ALIASES}
    _refuse_taken_keys(policy_cls, "policy", moved, "older specs give here for the platform section")
    platform, policy = _moved_keys(platform, policy)
    platform_section = _platform_section(platform_cls, platform)
    seed, workload, checked_platform, checked_policy = validate_sections(
        [
            Section("seed", spec.get("seed", 0), Param(seed_value)),
            Section("workload", given_workload, WORKLOAD_PARAMS, rule=_workload_rule),
            platform_section,
            Section("policy", policy, policy_cls.params, {"name": policy_cls.name}),
        ]
    )
    problem = _pair_problem(policy_cls.name, platform_cls.kind, checked_platform)
    if problem is not None:
        fitting = ", ".join(n for n in POLICIES if _pair_problem(n, platform_cls.kind, checked_platform) is None)
        raise SpecError(f"policy.name: {problem}; policies for this platform: {fitting or 'none'}")
    model = None
    if workload["model"] is not None:
        # Checked here, where the machine is known, not when the cell runs; the run draws from
        # what this returns.
        from .workloads.build import MODEL_DEFAULT_NODES
        from .workloads.models import check_model

        try:
            model = check_model(
                workload["model"],
                workload["preset"],
                workload["params"],
                machine_size=platform_cls.job_capacity(checked_platform) or MODEL_DEFAULT_NODES,
                max_size=workload["max_size"],
            )
        except (TypeError, ValueError) as error:  # SpecError is a ValueError too
            key = "max_size" if workload["max_size"] is not None and not workload["params"] else "params"
            raise SpecError(f"workload.{key}: {error}") from None
    return RunPlan(
        seed=seed,
        workload=workload,
        platform_kind=platform_cls.kind,
        platform={key: checked_platform[key] for key in platform_cls.params},
        engine={key: checked_platform[key] for key in ENGINE_PARAMS},
        policy_name=policy_cls.name,
        policy={key: value for key, value in checked_policy.items() if key != "name"},
        model=model,
    )


def _check_machine_size(platform_cls: Any, params: Mapping[str, Any]) -> None:
    """Refuse a platform of more than :data:`MAX_VMS` VMs before anything allocates them (each
    key alone may be in range while their product exhausts memory)."""
    processors = platform_cls.job_capacity(params)
    if processors is None or not platform_cls.STATE_PER_VM:  # (None: a trace's machine, sized when read)
        return
    tiers = platform_cls.tiers_of(params)
    if processors * tiers > MAX_VMS:
        product = (
            f"{processors:,} processors x {tiers:,} tiers = {processors * tiers:,}" if tiers > 1 else f"{processors:,}"
        )
        given = ", ".join(
            f"{k} {v:,}"
            for k, v in params.items()
            if k != "kind" and isinstance(v, int) and not isinstance(v, bool) and v > 1
        )
        raise SpecError(
            f"platform: {product} VMs ({given}), "
            f"more than the {MAX_VMS:,} a run may hold (each VM's state takes memory); make the platform smaller"
        )


def _pair_problem(name: str, kind: str, platform_params: Mapping[str, Any] | None) -> str | None:
    platform_cls = PLATFORMS[kind]
    if platform_params is None:
        return pair_problem(name, POLICIES[name].requires, repr(kind), platform_cls.CAPABILITIES)
    offers = platform_cls.capabilities_of(platform_params)
    return pair_problem(name, POLICIES[name].requires, platform_cls.label(platform_params), offers)


def policy_runs_on(name: str, kind: str, platform_params: Mapping[str, Any] | None = None) -> bool:
    """Whether policy ``name`` runs on platform ``kind``: with ``platform_params`` (a validated
    platform section), on exactly that configuration; without, on some configuration of the
    kind (e.g. ``amcbf`` on ``nodes`` with ``tiers`` of 2 or more)."""
    return _pair_problem(name, kind, platform_params) is None


def set_key(spec: Mapping[str, Any], dotted: str, value: Any) -> dict[str, Any]:
    """Return a deep copy of ``spec`` with ``dotted`` (e.g. ``policy.name``) set to ``value``.

    A moved key (:data:`KEY_ALIASES`) is set under its new name, and its old name is removed
    from the copy, so that a grid axis or ``--set`` overrides what the base spec says either way.
    """
    out = copy.deepcopy(dict(spec))
    if not all(dotted.split(".")):
        raise SpecError(f"{dotted}: expected a dotted key such as policy.name")
    dotted = canonical_key(dotted)
    for old, new in KEY_ALIASES.items():
        section, key = old.split(".")
        if new == dotted and isinstance(out.get(section), dict):
            out[section].pop(key, None)
    parts = dotted.split(".")
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
