"""Bad command-line arguments, generated for every option of every command.

The commands and their options are read from the argument parser itself
(:func:`tiersweep.cli.build_parser`), so an option added later is fuzzed without a change here.
Each option is given values of every class that has broken the command line before: numbers
too long for Python's integer parser, overflowing, infinite, NaN, denormal, negative, zero and
absurdly large numbers, empty and non-UTF-8 text, full-width digits, and paths to a missing
file, a folder, a FIFO or a place under a file; ``--set`` gets the same values for numeric spec
keys and model parameters. The command runs in this process (``main(argv)``), under a time
limit, and its outcome is classified:

* **clear**: a non-zero exit with one error line naming what is wrong, no traceback;
* **accepted**: exit 0, which is right only for values the option takes (a seed of 0, a
  results folder that does not exist yet); an accepted value the option must refuse is
  **silently wrong**;
* **traceback**: an exception escaped, or a multi-line error;
* **hang**: the time limit passed.

The default run tries a hypothesis sample of the cases; ``pytest -m slow`` tries every case
and prints the tally (as does ``python tests/test_cli_fuzz.py``).
"""

from __future__ import annotations

import argparse
import contextlib
import io
import math
import os
import signal
import sys
import traceback
from collections import Counter
from dataclasses import dataclass
from pathlib import Path

import pytest
import yaml
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from tiersweep.cli import build_parser, main, plain_number, whole_number

# -- the commands, as the parser declares them ----------------------------------------------------


def commands(parser: argparse.ArgumentParser | None = None, prefix: str = "") -> dict[str, argparse.ArgumentParser]:
    """Every leaf command (``run``, ``workload generate``...) and its parser."""
    parser = parser or build_parser()
    found: dict[str, argparse.ArgumentParser] = {}
    for action in parser._actions:
        if isinstance(action, argparse._SubParsersAction):
            for name, sub in action.choices.items():
                found.update(commands(sub, f"{prefix}{name} "))
            return found
    found[prefix.strip()] = parser
    return found


def value_actions(parser: argparse.ArgumentParser) -> list[argparse.Action]:
    """The arguments of ``parser`` that take a value (positionals and options, not flags)."""
    return [a for a in parser._actions if a.nargs != 0 and not isinstance(a, argparse._HelpAction)]


def flag_actions(parser: argparse.ArgumentParser) -> list[argparse.Action]:
    """The flags of ``parser`` (options that take no value), help aside."""
    return [a for a in parser._actions if a.nargs == 0 and not isinstance(a, argparse._HelpAction)]


def name_of(action: argparse.Action) -> str:
    """``--out`` for an option, ``SPEC.yaml`` (its metavar) for a positional."""
    return action.option_strings[-1] if action.option_strings else (action.metavar or action.dest)


# -- the bad values -------------------------------------------------------------------------------

#: Values of the number classes, by class.
NUMBERS = {
    "digits past the int parser": "9" * 5000,
    "overflowing float": "1e309",
    "nan": "nan",
    "minus infinity": "-inf",
    "denormal": "5e-324",
    "negative": "-1",
    "zero": "0",
    "absurd": "1000000000000",
    "fraction": "1.5",
    "full-width digits": "１０",
    "empty": "",
    "not UTF-8": "\udcff\udcfe",
}
#: Path classes (filled in by :func:`make_world`, which makes the files).
PATHS = ("missing file", "folder", "fifo", "under a file", "empty path")

#: Spec keys a ``--set`` of run, sweep, tune and describe gets bad numbers for (the base specs
#: below have a two-tier nodes platform and AMCBF, so each key applies).
SET_KEYS = (
    "seed",
    "workload.jobs",
    "workload.load",
    "workload.max_size",
    "workload.cpu_accuracy",
    "workload.cpu_prior",
    "platform.nodes",
    "platform.tiers",
    "platform.migration_cost",
    "policy.bg_threshold",
)
#: The numeric parameters of ``workload generate``'s model (feitelson96: the model whose
#: parameters are plain numbers), each given bad numbers through ``--set``.
MODEL_PARAMS = ("b1", "b2", "size_exponent", "m_s", "m_l", "c0", "c1", "r_max", "zipf_exponent", "mean_gap")

#: Values each option rightly takes (anything else it must refuse): (command, option) ->
#: value classes. ``--set KEY`` is written as the option ``--set KEY``.
#: Names a file or folder may have: numbers are names too (a folder called "nan" is fine).
NAMES = set(NUMBERS) - {"empty", "not UTF-8"}
MAY_ACCEPT: dict[tuple[str, str], set[str]] = {
    ("workload generate", "--seed"): {"zero", "absurd"},
    ("workload generate", "--load"): {"fraction"},
    ("sweep", "--max-cells"): {"absurd"},  # (a cap: more cells than the sweep has is all of them)
    ("sweep", "--cell-timeout"): {"zero", "fraction", "absurd"},  # (0: no limit; any limit of 1 ms or more)
    ("sweep", "--out"): NAMES | {"missing file", "folder"},  # (made, or used as it is)
    ("tune", "--out"): NAMES | {"missing file", "folder"},
    ("report", "--out"): NAMES | {"missing file", "folder"},
    ("workload generate", "--out"): NAMES | {"missing file"},  # (a new file)
    **{(c, "--set seed"): {"zero", "absurd"} for c in ("run", "sweep", "tune", "workload describe")},
    **{
        (c, "--set platform.migration_cost"): {"zero", "absurd", "fraction", "denormal"}
        for c in ("run", "sweep", "tune", "workload describe")
    },
    **{(c, "--set workload.load"): {"fraction"} for c in ("run", "sweep", "tune", "workload describe")},
    **{(c, "--set workload.cpu_accuracy"): {"zero", "denormal"} for c in ("run", "sweep", "tune", "workload describe")},
    **{(c, "--set workload.cpu_prior"): {"denormal"} for c in ("run", "sweep", "tune", "workload describe")},
    **{(c, "--set policy.bg_threshold"): {"zero", "denormal"} for c in ("run", "sweep", "tune", "workload describe")},
    # Weights and exponents of the size and repeat distributions: any positive (or, for the
    # exponents of p(n) and the sizes, any finite) number is a distribution.
    **{
        ("workload generate", f"--set {p}"): {"zero", "negative", "fraction", "denormal", "absurd"}
        for p in ("size_exponent",)
    },
    **{("workload generate", f"--set {p}"): {"zero", "negative", "fraction", "denormal"} for p in ("c0", "c1")},
    **{("workload generate", f"--set {p}"): {"fraction", "denormal", "absurd"} for p in ("b1", "b2", "zipf_exponent")},
    **{("workload generate", f"--set {p}"): {"fraction"} for p in ("m_s", "m_l", "mean_gap")},
}
#: Classes whose refusal is fixed in another part of the code base (special files read as
#: traces, Optuna storage URLs): counted, and tolerated here if they still fail.
ELSEWHERE: dict[tuple[str, str], set[str]] = {
    ("tune", "--storage"): set(PATHS) | set(NUMBERS),
    ("workload describe", "F.swf|SPEC.yaml|MODEL"): {"fifo"},  # (read as an SWF trace)
}


@dataclass(frozen=True)
class Case:
    """One command line: ``command`` with ``option`` given a value of class ``kind``."""

    command: str
    option: str
    kind: str

    def __str__(self) -> str:
        return f"{self.command} {self.option} <{self.kind}>"


@dataclass
class World:
    """The files the commands run on, made once: specs, configs, a results folder, the paths
    of each path class, and each command's base command line (valid, and quick)."""

    root: Path
    paths: dict[str, str]
    base: dict[str, list[str]]


def make_world(root: Path) -> World:
    """Write the small inputs of every command under ``root`` and run the sweep a report reads."""
    model = {"model": "jann97", "jobs": 40}
    platform = {"nodes": 16, "tiers": 2}
    spec = root / "spec.yaml"
    spec.write_text(yaml.safe_dump({"workload": model, "platform": platform, "policy": {"name": "amcbf"}}))
    sweep = root / "sweep.yaml"
    sweep.write_text(
        yaml.safe_dump(
            {"name": "s", "base": {"workload": model, "platform": platform, "policy": {"name": "amcbf"}}, "seeds": 1}
        )
    )
    tune = root / "tune.yaml"
    tune.write_text(
        yaml.safe_dump(
            {
                "name": "t",
                "base": {"workload": {**model, "jobs": 30}, "platform": platform, "policy": {"name": "amcbf"}},
                "params": {"platform.migration_cost": {"low": 0, "high": 50}},
                "objective": {"mean_bsld": "minimize"},
                "seeds": 1,
                "trials": 1,
                "sampler": {"name": "random", "seed": 0},
            }
        )
    )
    sampled = root / "sampled.yaml"
    sampled.write_text(
        yaml.safe_dump(
            {
                "name": "m",
                "base": {"workload": {**model, "jobs": 10}, "platform": platform, "policy": {"name": "amcbf"}},
                "sample": {"method": "morris", "n": 2, "params": {"workload.load": {"low": 0.5, "high": 1.0}}},
                "seeds": 1,
            }
        )
    )
    results = root / "results"
    with contextlib.redirect_stdout(io.StringIO()), contextlib.redirect_stderr(io.StringIO()):
        assert main(["sweep", str(sweep), "--backend", "serial", "--out", str(results)]) == 0
        assert main(["sweep", str(sampled), "--backend", "serial", "--out", str(results)]) == 0
    swf = root / "log.swf"
    with contextlib.redirect_stdout(io.StringIO()):
        assert main(["workload", "generate", "jann97", "--jobs", "30", "--out", str(swf)]) == 0
    afile = root / "afile"
    afile.write_text("x")
    (root / "folder").mkdir()
    (root / "cwd").mkdir()  # (the commands run from here)
    fifo = root / "fifo"
    os.mkfifo(fifo)
    paths = {
        "missing file": str(root / "new" / "thing"),
        "folder": str(root / "folder"),
        "fifo": str(fifo),
        "under a file": str(afile / "x"),
        "empty path": "",
    }
    out = str(root / "out")
    base = {
        "run": ["run", str(spec)],
        "sweep": ["sweep", str(sweep), "--backend", "serial", "--out", out],
        "tune": ["tune", str(tune), "--backend", "serial", "--no-plots", "--out", out],
        "report": ["report", str(results / "s"), "--out", str(root / "report")],
        "compact": ["compact", str(results / "s")],
        "sensitivity": ["sensitivity", str(results / "m"), "--resamples", "20", "--metric", "mean_bsld"],
        "workload generate": ["workload", "generate", "feitelson96", "--jobs", "30", "--out", str(root / "gen.swf")],
        "workload describe": ["workload", "describe", str(spec)],
        "bench": ["bench", "--traces", str(root / "folder")],
    }
    return World(root, paths, base)


def all_cases() -> list[Case]:
    """Every (command, option, value class) the parser's options give."""
    cases = []
    for command, parser in commands().items():
        for action in value_actions(parser):
            option = name_of(action)
            if action.dest == "overrides":
                keys = (
                    [f"--set {p}" for p in MODEL_PARAMS]
                    if command == "workload generate"
                    else [f"--set {k}" for k in SET_KEYS]
                )
                cases += [Case(command, key, kind) for key in keys for kind in NUMBERS]
                continue
            cases += [Case(command, option, kind) for kind in [*NUMBERS, *PATHS]]
    return cases


def argv_of(case: Case, world: World) -> list[str]:
    """The command line of ``case``: the command's base line with the one value replaced or added."""
    value = world.paths.get(case.kind, NUMBERS.get(case.kind))
    argv = list(world.base[case.command])
    if case.option.startswith("--set "):
        return [*argv, "--set", f"{case.option[6:]}={value}"]
    parser = commands()[case.command]
    action = next(a for a in value_actions(parser) if name_of(a) == case.option)
    if action.option_strings:
        if case.option in argv:  # replace the base line's own value
            argv[argv.index(case.option) + 1] = value
            return argv
        return [*argv, case.option, value]
    # A positional: the base line's first positional after the command words.
    words = len(case.command.split())
    positionals = [
        i for i in range(words, len(argv)) if not argv[i].startswith("-") and not argv[i - 1].startswith("-")
    ]
    index = positionals[[a for a in value_actions(parser) if not a.option_strings].index(action)]
    argv[index] = value
    return argv


# -- running one command line ---------------------------------------------------------------------


class _Hang(Exception):
    """The time limit of one command line passed."""


def outcome(argv: list[str], cwd: Path, limit: int = 30) -> tuple[str, str]:
    """Run ``argv`` in this process from folder ``cwd`` (relative output lands there); return
    (``clear`` | ``accepted`` | ``traceback`` | ``hang``, what it wrote to stderr)."""

    def expire(signum: int, frame: object) -> None:
        raise _Hang()

    err = io.StringIO()
    previous = signal.signal(signal.SIGALRM, expire)
    signal.alarm(limit)
    code: object = None
    try:
        with contextlib.chdir(cwd), contextlib.redirect_stdout(io.StringIO()), contextlib.redirect_stderr(err):
            code = main(argv)
    except SystemExit as exit_:
        code = exit_.code
    except _Hang:
        return "hang", err.getvalue()
    except BaseException as error:  # noqa: BLE001 (any escaping exception is the finding)
        return "traceback", err.getvalue() + "".join(traceback.format_exception(error))[-2000:]
    finally:
        signal.alarm(0)
        signal.signal(signal.SIGALRM, previous)
    text = err.getvalue()
    if code == 0:
        return "accepted", text
    errors = [line for line in text.splitlines() if "error:" in line]
    if "Traceback" in text or len(errors) != 1 or len(errors[0]) > 400 or not text.strip().endswith(errors[0].strip()):
        return "traceback", text
    return "clear", text


def verdict(case: Case, world: World) -> tuple[str, str]:
    """The outcome of ``case``, with an accepted value the option must refuse called
    ``silently wrong``."""
    found, text = outcome(argv_of(case, world), world.root / "cwd")
    if found == "accepted" and case.kind not in MAY_ACCEPT.get((case.command, case.option), set()):
        return "silently wrong", text
    return found, text


def elsewhere(case: Case) -> bool:
    """Whether ``case`` is a class another part of the code base refuses."""
    return case.kind in ELSEWHERE.get((case.command, case.option), set())


@pytest.fixture(scope="module")
def world(tmp_path_factory) -> World:
    return make_world(tmp_path_factory.mktemp("cli_fuzz"))


CASES = all_cases()


def test_every_option_of_every_command_is_fuzzed():
    # The cases come from the parser: every command and every option that takes a value.
    covered = {(c.command, c.option.split()[0]) for c in CASES}
    for command, parser in commands().items():
        for action in value_actions(parser):
            assert (command, name_of(action)) in covered
    assert {"run", "sweep", "tune", "report", "compact", "workload generate", "workload describe", "bench"} <= set(
        commands()
    )


@settings(
    max_examples=40,
    deadline=None,
    derandomize=True,
    suppress_health_check=[HealthCheck.function_scoped_fixture, HealthCheck.too_slow],
)
@given(case=st.sampled_from(CASES))
def test_a_bad_argument_is_a_one_line_error(world, case):
    found, text = verdict(case, world)
    if elsewhere(case) and found not in ("clear", "accepted"):
        pytest.xfail(f"refused in another part of the code base: {case}")
    assert found in ("clear", "accepted"), f"{case}: {found}\n{text}"
    assert found != "silently wrong"


# -- argument types, on any text ------------------------------------------------------------------

TEXT = (
    st.text(max_size=40)
    | st.integers(-(2**70), 2**70).map(str)
    | st.integers(1, 6000).map(lambda digits: "7" * digits)
    | st.sampled_from(list(NUMBERS.values()))
)


@settings(max_examples=200, deadline=None)
@given(text=TEXT, minimum=st.integers(0, 2), maximum=st.none() | st.integers(2, 10**6))
def test_a_whole_number_argument_is_in_range_or_a_short_error(text, minimum, maximum):
    parse = whole_number(minimum, maximum)
    try:
        value = parse(text)
    except argparse.ArgumentTypeError as error:
        assert len(str(error)) < 200 and "\n" not in str(error)
        return
    assert isinstance(value, int) and minimum <= value and (maximum is None or value <= maximum)


@settings(max_examples=200, deadline=None)
@given(text=TEXT | st.floats().map(repr) | st.integers(300, 400).map(lambda digits: "9" * digits + ".5e1"))
def test_a_decimal_argument_is_finite_or_a_short_error(text):
    try:
        value = plain_number(text)
    except argparse.ArgumentTypeError as error:
        assert len(str(error)) < 200 and "\n" not in str(error)
        return
    assert math.isfinite(value)


# -- options that mean nothing with the others given -----------------------------------------------


def inapplicable_lines(world: World) -> list[tuple[list[str], str]]:
    """Command lines with an option the rest of the line makes meaningless, and the option."""
    lines = []
    for command, parser in commands().items():
        options = {name_of(a): a for a in parser._actions}
        if "--address" in options and "--backend" in options:  # (every command with both)
            for backend in options["--backend"].choices:
                if backend != "ray":
                    argv = list(world.base[command])
                    argv[argv.index("--backend") + 1] = backend
                    lines.append(([*argv, "--address", "auto"], "--address"))
    bench = ["bench"]
    lines += [
        ([*world.base["sweep"], "--dry-run", "--max-cells", "2"], "--max-cells"),
        ([*bench, "--scale", "--sweep", "serial"], "--scale"),
        ([*bench, "--scale", "--repeat", "2"], "--repeat"),
        ([*bench, "--sweep", "serial", "--repeat", "2"], "--repeat"),
        ([*bench, "--sweep", "serial", "--quick"], "--quick"),
        ([*bench, "--sweep", "serial", "--traces", str(world.root)], "--traces"),
        ([*bench, "--reference", "x.py"], "--reference"),
    ]
    return lines


def test_an_option_that_means_nothing_here_is_refused_naming_it(world):
    lines = inapplicable_lines(world)
    assert sum(option == "--address" for _, option in lines) == 4  # sweep and tune, serial and process
    for argv, option in lines:
        found, text = outcome(argv, world.root / "cwd")
        assert found == "clear", f"{argv}: {found}\n{text}"
        assert text.startswith(f"tiersweep: error: {option}"), text


# -- sizes whose product exhausts memory ------------------------------------------------------------


@pytest.mark.parametrize(
    ("platform", "policy"),
    [
        ({"nodes": 10_000_000, "tiers": 64}, "amcbf"),
        ({"kind": "shared_vms", "machines": 10_000_000, "vms": 4096}, "vm_backfill"),
        ({"kind": "gang", "nodes": 10_000_000, "mpl": 8}, "bgs"),
    ],
    ids=["nodes x tiers", "machines x vms", "gang nodes x mpl"],
)
def test_a_machine_too_large_for_memory_is_refused_before_it_is_built(tmp_path, platform, policy):
    # Each key is within its own bounds; their product is hundreds of millions of VMs, which
    # would take memory until none is left if the machine were built.
    import time

    spec = tmp_path / "spec.yaml"
    spec.write_text(
        yaml.safe_dump({"workload": {"model": "jann97", "jobs": 10}, "platform": platform, "policy": {"name": policy}})
    )
    started = time.perf_counter()
    found, text = outcome(["run", str(spec)], tmp_path)
    assert found == "clear", text
    assert text.startswith("tiersweep: error: platform: ") and "VMs" in text and "more than the 20,000,000" in text, (
        text
    )
    assert time.perf_counter() - started < 10


def test_a_large_fat_tree_is_not_refused_for_its_slots(tmp_path):
    # Its slots are counted per server: 2 billion of them take no more memory than 8 per server.
    spec = tmp_path / "spec.yaml"
    spec.write_text(
        yaml.safe_dump(
            {
                "workload": {"model": "jann97", "jobs": 10},
                "platform": {"kind": "fat_tree", "k": 128, "slots": 4096},
                "policy": {"name": "bw_fcfs"},
            }
        )
    )
    assert outcome(["run", str(spec)], tmp_path) == ("accepted", "")


def tally(world: World, cases: list[Case] = CASES) -> tuple[Counter, list[str]]:
    """Every case's verdict counted, and one line per defect."""
    counts: Counter = Counter()
    defects = []
    for case in cases:
        found, text = verdict(case, world)
        counts[found] += 1
        if found not in ("clear", "accepted"):
            tail = text.strip().splitlines()[-1:] or [""]
            defects.append(f"{found:>15}  {case}{'  (elsewhere)' if elsewhere(case) else ''}: {tail[0][:160]}")
    return counts, defects


def format_tally(counts: Counter) -> str:
    """``tried N: clear errors a, accepted b, tracebacks c, silently wrong d, hangs e``."""
    return (
        f"tried {sum(counts.values())}: clear errors {counts['clear']}, accepted {counts['accepted']}, "
        f"tracebacks {counts['traceback']}, silently wrong {counts['silently wrong']}, hangs {counts['hang']}"
    )


@pytest.mark.slow
def test_every_bad_argument_is_a_one_line_error(world):
    counts, defects = tally(world)
    print("\n" + format_tally(counts))
    print("\n".join(defects))
    mine = [d for d in defects if not d.endswith("(elsewhere)") and "(elsewhere):" not in d]
    assert not mine, "\n".join(mine)


if __name__ == "__main__":
    import tempfile

    with tempfile.TemporaryDirectory() as folder:
        counts, defects = tally(make_world(Path(folder)))
    print("\n".join(defects))
    print(format_tally(counts))
    sys.exit(0)
