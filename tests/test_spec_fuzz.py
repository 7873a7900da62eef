"""Bad input generated with hypothesis: spec files, run specs, sweep and tuning configs.

Whatever a user writes, loading and validating it ends in a result or a ``tiersweep`` error
(:class:`~tiersweep.core.errors.TiersweepError`, which the command line prints as one line),
never another exception. The generators mix the real keys of every section with adversarial
values (infinities, huge and negative numbers, text where numbers belong, nested containers)
and damaged YAML text.
"""

from __future__ import annotations

import math

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from tiersweep.core.engine import ENGINE_PARAMS
from tiersweep.core.errors import TiersweepError
from tiersweep.core.platforms import PLATFORMS
from tiersweep.core.policies import POLICIES
from tiersweep.core.spec import WORKLOAD_PARAMS, validate_spec
from tiersweep.sweep.config import MAX_CELLS, expand, parse_sweep_config
from tiersweep.sweep.specfile import load_spec_file
from tiersweep.sweep.tune_config import parse_tune_config

FUZZ = settings(
    max_examples=300, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture, HealthCheck.too_slow]
)

PLATFORM_KEYS = sorted({*ENGINE_PARAMS, "kind", *(k for cls in PLATFORMS.values() for k in cls.params)})
POLICY_KEYS = sorted({"name", *(k for cls in POLICIES.values() for k in cls.params)})

#: Values a new user might write, right or wrong.
SCALARS = st.one_of(
    st.none(),
    st.booleans(),
    st.integers(-3, 70),
    st.integers(min_value=-(2**70), max_value=2**70),
    st.floats(allow_nan=True, allow_infinity=True),
    st.sampled_from(
        [
            "easy",
            "fcfs",
            "amcbf",
            "nodes",
            "fat_tree",
            "shared_vms",
            "jann97",
            "feitelson96",
            "lublin03",
            "requested",
            "kill",
            "adaptive",
            "factor:2",
            "factor:-1",
            "",
            "1_000",
            "１０",
            ".inf",
            "none",
        ]
    ),
    st.text(max_size=8),
)
VALUES = st.recursive(
    SCALARS,
    lambda inner: st.lists(inner, max_size=3) | st.dictionaries(st.text(max_size=5), inner, max_size=3),
    max_leaves=6,
)


def _section(keys: list[str]) -> st.SearchStrategy:
    return st.dictionaries(st.sampled_from(keys) | st.text(max_size=6), VALUES, max_size=4)


SPECS = st.fixed_dictionaries(
    {},
    optional={
        "seed": VALUES,
        "workload": _section(sorted(WORKLOAD_PARAMS)) | VALUES,
        "platform": _section(PLATFORM_KEYS) | VALUES,
        "policy": _section(POLICY_KEYS) | VALUES,
    },
)
DOTTED = st.sampled_from(
    [f"workload.{k}" for k in WORKLOAD_PARAMS]
    + [f"platform.{k}" for k in PLATFORM_KEYS]
    + [f"policy.{k}" for k in POLICY_KEYS]
    + ["seed", "policy.migration_cost", "nothing.here", "workload", "policy..name", ""]
)


def _settles(call) -> None:
    """Run ``call``: a result or a TiersweepError are both fine; anything else fails the test."""
    try:
        call()
    except TiersweepError:
        pass


@FUZZ
@given(spec=SPECS)
def test_any_run_spec_validates_or_is_a_spec_error(spec):
    _settles(lambda: validate_spec(spec))


@FUZZ
@given(
    base=SPECS,
    grid=st.dictionaries(DOTTED, st.lists(VALUES, max_size=3) | VALUES, max_size=3),
    seeds=VALUES,
    exclude=st.lists(st.dictionaries(DOTTED, VALUES, max_size=2), max_size=2) | VALUES,
    name=st.sampled_from(["s", "", "a/b", "ok-name"]) | VALUES,
)
@pytest.mark.slow
def test_any_sweep_config_parses_and_expands_or_is_a_spec_error(base, grid, seeds, exclude, name):
    raw = {"name": name, "base": base, "grid": grid, "seeds": seeds, "exclude": exclude}

    def parse_and_expand():
        config = parse_sweep_config(raw)
        cells = expand(config)
        assert 0 < len(cells) <= MAX_CELLS

    _settles(parse_and_expand)


@FUZZ
@given(
    base=SPECS,
    params=st.dictionaries(
        DOTTED,
        st.dictionaries(st.sampled_from(["low", "high", "log", "type", "choices", "x"]), VALUES, max_size=3) | VALUES,
        max_size=2,
    ),
    objective=st.dictionaries(
        st.sampled_from(["mean_bsld", "mean_wait", "nothing"]) | st.text(max_size=4), VALUES, max_size=2
    )
    | VALUES,
    seeds=VALUES,
    trials=VALUES,
    extra=st.dictionaries(st.sampled_from(["variants", "sampler", "study", "parallel", "seed"]), VALUES, max_size=2),
)
@pytest.mark.slow
def test_any_tuning_config_parses_or_is_a_spec_error(base, params, objective, seeds, trials, extra):
    raw = {
        "name": "t",
        "base": base,
        "params": params,
        "objective": objective,
        "seeds": seeds,
        "trials": trials,
        **extra,
    }
    _settles(lambda: parse_tune_config(raw))


#: YAML's punctuation and the characters that trip parsers, for damaged spec text.
YAML_TEXT = st.text(
    alphabet=st.sampled_from(list("ab01:-[]{},&*!|>'\"#%@`?\n\t .~<=") + ["１", "\r", "\x00", "é"]), max_size=80
)


@FUZZ
@given(
    text=YAML_TEXT | st.binary(max_size=60).map(lambda b: b.decode("latin-1")),
    suffix=st.sampled_from([".yaml", ".json"]),
)
def test_any_spec_file_loads_as_a_mapping_or_is_a_spec_error(tmp_path_factory, text, suffix):
    path = tmp_path_factory.mktemp("spec") / f"spec{suffix}"
    path.write_bytes(text.encode("utf-8", errors="surrogateescape"))
    try:
        spec = load_spec_file(path)
    except TiersweepError as error:
        assert str(error).startswith(str(path)), error
        return
    assert isinstance(spec, dict)
    _settles(lambda: validate_spec(spec))


@pytest.mark.parametrize(
    "value", [math.inf, -math.inf, math.nan, 2**80, 1e12, -1, "1_000", "１０", [1], {"a": 1}, True]
)
@pytest.mark.parametrize(
    "key",
    ["workload.jobs", "platform.nodes", "platform.tiers", "seed", "policy.bg_threshold", "platform.migration_cost"],
)
def test_each_numeric_key_refuses_each_bad_or_absurd_number_naming_the_key(key, value):
    # (An absurd count passed validation and then exhausted memory when the run started.)
    from tiersweep.core.spec import set_key

    if key in ("seed", "platform.migration_cost") and value == 1e12:
        pytest.skip("a legitimate value of this key")
    if key == "platform.migration_cost" and value == 2**80:
        pytest.skip("a legitimate (if odd) value of this key")
    spec = set_key({"workload": {"model": "jann97"}, "policy": {"name": "smcbf"}, "platform": {"tiers": 2}}, key, value)
    with pytest.raises(TiersweepError) as error:
        validate_spec(spec)
    assert str(error.value).startswith(key + ":"), error.value
