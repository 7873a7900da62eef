"""The ``tiersweep`` command line: the one module that joins ``core``, ``sweep`` and ``analysis``
(dependencies otherwise point one way, ``analysis -> sweep -> core``).

Heavy libraries (pandas, pyarrow, ray, optuna) are imported only inside the subcommands that
need them, so ``tiersweep run`` starts as fast as numpy allows.
"""

from __future__ import annotations

import argparse
import math
import re
import sys
from collections.abc import Callable, Sequence

__all__ = ["main", "build_parser", "whole_number", "plain_number", "quoted", "shortened"]


#: The longest value an argument error quotes in full (a value of thousands of characters would
#: bury the message).
_QUOTED = 60


#: The most digits a whole-number argument may have (more than any count or seed needs).
_MAX_DIGITS = 30


def quoted(text: str) -> str:
    """``text`` as an error message quotes it: its repr, cut to :data:`_QUOTED` characters."""
    shown = repr(text)
    return shown if len(shown) <= _QUOTED else f"{shown[: _QUOTED - 12]}... ({len(text):,} characters)"


def whole_number(minimum: int, maximum: int | None = None, why: str = "") -> Callable[[str], int]:
    """An argument type: a whole number from ``minimum`` to ``maximum`` (``why`` says what the
    upper bound protects), in ASCII digits.

    Python's ``int`` also takes ``1_000`` and full-width or other Unicode digits, fails with a
    message about ``sys.set_int_max_str_digits`` past 4,300 digits, and a negative
    ``--max-cells`` or ``--trials`` would quietly mean something else; each is refused here,
    naming the value and what was expected.
    """
    expected = (
        f"a whole number of at least {minimum:,}"
        if maximum is None
        else (f"a whole number from {minimum:,} to {maximum:,}" + (f" ({why})" if why else ""))
    )

    def parse(text: str) -> int:
        if not re.fullmatch(r"[-+]?[0-9]+", text.strip()):
            raise argparse.ArgumentTypeError(f"expected {expected}, got {quoted(text)}")
        digits = len(text.strip().lstrip("+-").lstrip("0"))
        if digits > _MAX_DIGITS:  # (before int(), which refuses thousands of digits, or is slow)
            raise argparse.ArgumentTypeError(
                f"expected {expected} (at most {_MAX_DIGITS} digits), got {digits:,} digits"
            )
        value = int(text)
        if value < minimum or (maximum is not None and value > maximum):
            raise argparse.ArgumentTypeError(f"expected {expected}, got {quoted(text)}")
        return value

    parse.__name__ = "whole number"
    return parse


def plain_number(text: str) -> float:
    """An argument type: a finite decimal number in ASCII (``0.8``, ``1e-3``); ``1e309``, which
    Python reads as infinity, is refused with the rest."""
    if (
        len(text) > 100
        or not re.fullmatch(r"[-+]?(?:[0-9]+\.?[0-9]*|\.[0-9]+)(?:[eE][-+]?[0-9]+)?", text.strip())
        or not math.isfinite(float(text))
    ):
        raise argparse.ArgumentTypeError(f"expected a finite decimal number such as 0.8, got {quoted(text)}")
    return float(text)


def spec_help() -> str:
    """Every spec key with its default and meaning, generated from the declared parameters."""
    from .core.capabilities import CAPABILITIES
    from .core.engine import ENGINE_PARAMS
    from .core.platforms import PLATFORMS
    from .core.policies import POLICIES
    from .core.spec import KEY_ALIASES, WORKLOAD_PARAMS, policy_runs_on

    def block(params, indent="    "):
        return [f"{indent}{key}: {p.doc} [{p.default}]" for key, p in params.items()]

    lines = ["A spec is a YAML mapping (defaults in brackets):", "", "  seed: the run's seed [0]", "  workload:"]
    lines += block(WORKLOAD_PARAMS)
    lines.append(f"  platform:  (kind: {' | '.join(PLATFORMS)} [nodes])")
    lines += block(ENGINE_PARAMS)
    for old, new in KEY_ALIASES.items():
        lines.append(f"    ({old}, where older specs and grids give it, means {new})")
    for kind, cls in PLATFORMS.items():
        lines.append(f"    kind: {kind}  (offers: {', '.join(sorted(cls.CAPABILITIES))})")
        lines += block(cls.params, "      ")
    lines.append(f"  policy:  (name: {' | '.join(POLICIES)} [easy])")
    for name, cls in POLICIES.items():
        kinds = [kind for kind in PLATFORMS if policy_runs_on(name, kind)]
        needs = f"needs {', '.join(sorted(cls.requires))}; " if cls.requires else ""
        lines.append(f"    name: {name}  ({needs}runs on {', '.join(kinds) or 'no registered platform'})")
        lines += block(cls.params, "      ")
    lines += ["", "Platform capabilities (a policy runs on a platform that offers all it needs):"]
    lines += [f"  {name}: {meaning}" for name, meaning in CAPABILITIES.items()]
    lines += [
        "",
        "Relative trace paths in a spec or config file are taken from the file's folder (so it runs",
        "from any directory); those given with --set, from the current directory. Example:",
        "  policy: {name: amcbf, bg_threshold: 0.96}",
        "  platform: {kind: nodes, nodes: 320, tiers: 2, migration_cost: 20}",
    ]
    return "\n".join(lines)


#: ``tiersweep bench``'s defaults (given here, not to the parser, so that an option given
#: where it means nothing can be told from one left out).
BENCH_TRACE_FOLDER = "../shared/traces"
BENCH_REPEAT = 3
BENCH_REFERENCE = "../shared/bench/textbook_easy.py"


def inapplicable(args: argparse.Namespace) -> str | None:
    """Why an option given means nothing with the others given (the backend, the benchmark
    chosen), or None. Accepting such an option without a word lets a user believe it acted:
    a sweep on the serial backend "on" the cluster of ``--address``, a sweep benchmark run
    "with" ``--repeat 10``."""
    command = args.command
    if command in ("sweep", "tune") and args.address is not None:
        from .sweep.backends import BACKENDS

        connecting = [name for name, cls in BACKENDS.items() if "address" in cls.params]
        if args.backend not in connecting:
            return (
                f"--address {args.address}: only --backend {' or '.join(connecting)} connects to a cluster, "
                f"not --backend {args.backend}"
            )
    if command == "sweep" and args.dry_run and args.max_cells is not None:
        return "--max-cells: --dry-run lists every cell and computes none; give one of them"
    if command == "bench":
        if args.scale and args.sweep is not None:
            return "--scale and --sweep are two different benchmarks; give one of them"
        chosen = "--scale" if args.scale else "--sweep" if args.sweep is not None else None
        unused = {
            "--scale": ("--repeat",),
            "--sweep": ("--traces", "--repeat", "--quick", "--reference"),
            None: ("--reference",),
        }[chosen]
        for option in unused:
            if getattr(args, option[2:]) not in (None, False):
                taken = f"the {chosen} benchmark does not take it" if chosen else "only --scale takes it"
                return f"{option}: {taken}"
    return None


#: The longest word an error message shows whole: a value of thousands of characters (a
#: number, a generated name) is cut, so that the error stays one readable line, while the path
#: of a real file (results folders and temporary folders nest deep) is shown whole.
_LONGEST_WORD = 300


def shortened(message: str) -> str:
    """``message`` with each word longer than :data:`_LONGEST_WORD` characters cut to its start
    and its length."""
    return re.sub(
        rf"\S{{{_LONGEST_WORD + 1},}}", lambda word: f"{word[0][:40]}... ({len(word[0]):,} characters)", message
    )


def check_text(parser: argparse.ArgumentParser, args: argparse.Namespace) -> str | None:
    """Why a text argument cannot be used, or None: an empty value (which a command would take
    for "not given" and use the default), or text that is not UTF-8 (a file name of other
    bytes: results and reports record names as UTF-8, and would fail once the work is done)."""
    names = {}
    stack = [parser]
    while stack:
        for action in stack.pop()._actions:
            if isinstance(action, argparse._SubParsersAction):
                stack.extend(action.choices.values())
            else:
                names.setdefault(action.dest, action.option_strings[-1] if action.option_strings else action.metavar)
    for dest, value in vars(args).items():
        for text in value if isinstance(value, list) else [value]:
            if not isinstance(text, str):
                continue
            if not text:
                return f"{names.get(dest, dest)}: expected a value, got an empty one"
            try:
                text.encode("utf-8")
            except UnicodeEncodeError as error:
                byte = ord(text[error.start]) & 0xFF
                return f"{names.get(dest, dest)} {quoted(text)}: not UTF-8 text (byte 0x{byte:02x}); use UTF-8 names"
    return None


class _Parser(argparse.ArgumentParser):
    """An argument parser whose epilog may be a function, called only when help is shown (the
    spec keys' help is generated from every registered plug-in: no run should pay for it), and
    whose errors cut over-long values (:func:`shortened`)."""

    def error(self, message: str):  # type: ignore[override]
        super().error(shortened(message))

    #: Text shown after the epilog as written (not rewrapped), made only when help is shown.
    help_tail: Callable[[], str] | None = None

    def format_help(self) -> str:
        if callable(self.epilog):
            self.epilog = self.epilog()
        text = super().format_help()
        return text if self.help_tail is None else f"{text}\n{self.help_tail()}\n"


class _BackendNames:
    """``--backend``'s choices: the registered backends, looked up only when a name is checked
    or the choices are shown (the registry imports the sweep machinery, which a run does not need)."""

    def _names(self) -> list[str]:
        from .sweep.backends import BACKENDS

        return list(BACKENDS)

    def __contains__(self, name: object) -> bool:
        return name in self._names()

    def __iter__(self):
        return iter(self._names())


def _backends_help() -> str:
    from .sweep.backends import backends_help

    return backends_help()


def _add_backend_arguments(parser: argparse.ArgumentParser) -> None:
    """``--backend``, ``--backend-opt`` and ``--address`` of the commands that run cells."""
    parser.add_argument(
        "--backend",
        choices=_BackendNames(),
        default="ray",
        metavar="NAME",
        help="where cells run (see below) [%(default)s]",
    )
    parser.add_argument(
        "--backend-opt",
        dest="backend_opts",
        action="append",
        default=[],
        metavar="KEY=VALUE",
        help="an option of the backend, e.g. --backend-opt workers=2 (repeatable; see below)",
    )
    parser.add_argument(
        "--address", help="an existing Ray cluster (host:port, ray://..., or auto): --backend-opt address=..."
    )
    parser.help_tail = _backends_help


def _backend_options(args: argparse.Namespace) -> dict:
    """The checked options of ``args.backend`` from ``--backend-opt`` and ``--address``."""
    from .sweep.backends import backend_options, parse_backend_options

    return backend_options(args.backend, parse_backend_options(args.backend_opts, args.address))


def build_parser() -> argparse.ArgumentParser:
    """The argument parser of every subcommand."""
    parser = _Parser(
        prog="tiersweep",
        description="Simulate, sweep and tune parallel-job scheduling on consolidated clusters.",
    )
    sub = parser.add_subparsers(dest="command", metavar="COMMAND", required=True)

    run = sub.add_parser(
        "run",
        help="simulate one run spec and print its metrics",
        description="Simulate one run spec and print its metrics.",
        epilog=spec_help,
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    run.add_argument("spec", metavar="SPEC.yaml", help="the run spec")
    run.add_argument(
        "--set",
        dest="overrides",
        action="append",
        default=[],
        metavar="KEY=VALUE",
        help="override a spec key, e.g. --set policy.name=fcfs --set workload.jobs=5000 (repeatable)",
    )
    run.add_argument("--json", action="store_true", help="print one JSON object instead of a table")
    run.add_argument(
        "--jobs-out",
        metavar="FILE",
        help="write one row per job to FILE.csv or FILE.parquet (times in the trace's time base)",
    )

    sweep = sub.add_parser(
        "sweep",
        help="run a grid of specs in parallel into a Parquet store",
        description="Run every cell of a sweep config (a base spec x a grid of spec keys x seeds) that the "
        "store does not hold yet, in parallel, writing OUT/NAME/runs (and jobs with --jobs) as Parquet. "
        "Re-running resumes; cells already stored are never computed twice.",
        epilog="Config keys: name, base (a run spec), grid (dotted spec key -> list), zip (list of groups of "
        "keys that vary together), exclude (list of {key: value(s)} rules), seeds (a count or a list), "
        "seed (the sweep seed a count derives from), cell_timeout (seconds; 0: none). Relative trace paths in the "
        "config are taken from "
        "its folder, those of --set from the current directory. An existing Ray cluster: --address or "
        "RAY_ADDRESS; with token authentication set RAY_AUTH_MODE=token and RAY_AUTH_TOKEN (from "
        "`ray get-auth-token`).",
    )
    sweep.add_argument("config", metavar="CONFIG.yaml", help="the sweep config")
    sweep.add_argument(
        "--set",
        dest="overrides",
        action="append",
        default=[],
        metavar="KEY=VALUE",
        help="override a key of the config's base spec, e.g. --set workload.jobs=2000 (repeatable; "
        "a key the grid varies is refused: change the grid instead)",
    )
    sweep.add_argument("--out", default="results", help="results folder [%(default)s]")
    _add_backend_arguments(sweep)
    sweep.add_argument("--jobs", dest="with_jobs", action="store_true", help="also store per-job records (large)")
    sweep.add_argument("--force", action="store_true", help="recompute cells already stored")
    sweep.add_argument("--retry-failed", action="store_true", help="recompute cells stored as failed")
    sweep.add_argument("--max-cells", type=whole_number(1), metavar="N", help="compute at most N cells in this run")
    sweep.add_argument(
        "--cell-timeout",
        type=plain_number,
        metavar="SECONDS",
        help="stop a cell after SECONDS and store it as failed (0: no limit) [the config's cell_timeout, else "
        "20 x the cell's expected time, at least 60 s]",
    )
    sweep.add_argument(
        "--dry-run",
        action="store_true",
        help="list the cells and which are stored, and the CPU time those to compute are expected to take "
        "(once some cells of the sweep are stored); compute nothing",
    )

    tune = sub.add_parser(
        "tune",
        help="tune policy thresholds (or any numeric spec key) with Optuna",
        description="Run or continue an Optuna study over spec keys of a tuning config; each trial's cells "
        "(seeds x variants) run as sweep cells on the backend and are stored like a sweep's. Prints the best "
        "parameters (or the Pareto front) beside the default-parameter baseline; with a 'check: {seeds: N}' "
        "section, runs the best and the defaults again on N fresh seeds and says whether the best is better "
        "there (paired ratio, 95% interval on the log scale). Writes OUT/NAME/trials and plots.",
    )
    tune.add_argument("config", metavar="CONFIG.yaml", help="the tuning config")
    tune.add_argument(
        "--set",
        dest="overrides",
        action="append",
        default=[],
        metavar="KEY=VALUE",
        help="override a key of the config's base spec, e.g. --set workload.load=0.9 (repeatable; "
        "a tuned key or one the variants set is refused)",
    )
    tune.add_argument("--out", default="results", help="results folder [%(default)s]")
    tune.add_argument(
        "--trials",
        type=whole_number(1, 1_000_000, "a longer study would run for years"),
        help="finished trials to reach [the config's]",
    )
    tune.add_argument(
        "--storage", help="Optuna storage URL (sqlite:///..., postgresql://..., journal:PATH) [OUT/NAME/study.db]"
    )
    _add_backend_arguments(tune)
    tune.add_argument("--no-plots", action="store_true", help="skip the PNG plots")

    report = sub.add_parser(
        "report",
        help="figures and an HTML page from a results folder",
        description="Write every figure the data of a sweep (or tuning) results folder supports, and an "
        "index.html with the summary table (95% intervals over seeds), the config, versions and provenance.",
    )
    report.add_argument("root", metavar="OUT/NAME", help="a sweep's results folder")
    report.add_argument("--out", help="where to write the report [OUT/NAME/report]")
    report.add_argument(
        "--window",
        metavar="START:END",
        help="the part of each run the Gantt and VMs-held charts show, in seconds of simulated time "
        "(0:86400; either end may be left out) [the whole run]",
    )
    report.add_argument(
        "--gantt-at",
        metavar="KEY=VALUE",
        action="append",
        help="chart the runs with this grid value or seed (workload.load=0.9, seed=2; repeatable), one per "
        "policy [the first grid point and seed]",
    )

    sensitivity = sub.add_parser(
        "sensitivity",
        help="Sobol or Morris indices of a sampled design, with intervals",
        description="Per metric: first-order and total Sobol indices (or Morris mu* and sigma) of a sweep whose "
        "config has a 'sample:' section, each with a bootstrap interval, the seed's share of the variance, a "
        "convergence check (n/4, n/2, n) and warnings.",
    )
    sensitivity.add_argument("root", metavar="OUT/NAME", help="a sampled design's results folder")
    sensitivity.add_argument(
        "--metric", action="append", dest="metrics", help="a run metric (repeatable) [mean_bsld, utilization]"
    )
    sensitivity.add_argument("--second-order", action="store_true", help="also second-order Sobol indices")
    sensitivity.add_argument(
        "--resamples",
        type=whole_number(10, 100_000, "each resample recomputes every index"),
        default=1000,
        help="bootstrap resamples per interval [%(default)s]",
    )
    sensitivity.add_argument(
        "--screening", metavar="OUT/NAME", help="a Morris screening's results folder: check that its ranking holds here"
    )
    sensitivity.add_argument("--csv", help="also write the indices to this CSV file")

    compact_parser = sub.add_parser(
        "compact",
        help="merge a sweep's small Parquet files",
        description="Merge the part files of OUT/NAME/runs and jobs.",
    )
    compact_parser.add_argument("root", metavar="OUT/NAME", help="a sweep's results folder")

    workload = sub.add_parser(
        "workload",
        help="generate synthetic workloads or describe a workload",
        description="Generate synthetic workloads (Lublin 2003, Jann 1997, Feitelson 1996) as SWF, "
        "or describe an SWF file or a spec's workload.",
    )
    wsub = workload.add_subparsers(dest="workload_command", metavar="ACTION", required=True)
    gen = wsub.add_parser(
        "generate",
        help="write a model workload as SWF",
        description="Generate a model workload and write it as SWF (gzip when OUT ends in .gz).",
    )
    gen.add_argument("model", choices=["feitelson96", "jann97", "lublin03"], help="the model")
    gen.add_argument("--out", required=True, metavar="F.swf", help="destination file")
    gen.add_argument("--jobs", type=whole_number(1), help="number of jobs [feitelson96 20000, others 10000]")
    gen.add_argument("--load", type=plain_number, help="target offered load (e.g. 0.8), reached by scaling gaps")
    gen.add_argument("--seed", type=whole_number(0), default=0, help="seed [%(default)s]")
    gen.add_argument("--preset", help="model preset [the model's default]")
    gen.add_argument("--nodes", type=whole_number(1), default=320, help="machine size P [%(default)s]")
    gen.add_argument("--max-size", type=whole_number(1), help="largest job size [256]")
    gen.add_argument(
        "--set",
        dest="overrides",
        action="append",
        default=[],
        metavar="PARAM=VALUE",
        help="override a model parameter, e.g. --set mean_gap=150 (repeatable)",
    )
    desc = wsub.add_parser(
        "describe",
        help="statistics of an SWF file, a spec's workload or a model's",
        description="Print jobs, machine size, size mix (serial share, powers of two), runtime "
        "mean/median/CV, inter-arrival mean and offered load of an SWF file, a spec's workload, or a "
        "model's workload (e.g. `tiersweep workload describe lublin03 --set workload.jobs=5000`).",
    )
    desc.add_argument(
        "path", metavar="F.swf|SPEC.yaml|MODEL", help="an SWF file (plain or gzip), a run spec, or a model name"
    )
    desc.add_argument(
        "--set",
        dest="overrides",
        action="append",
        default=[],
        metavar="KEY=VALUE",
        help="override a spec key of a spec or model, e.g. --set workload.load=0.8; workload.model "
        "replaces a spec's trace (repeatable)",
    )
    desc.add_argument("--json", action="store_true", help="print one JSON object")
    desc.add_argument("--plot", metavar="F.png", help="also write a plot: sizes, runtimes, arrivals by hour")

    bench = sub.add_parser(
        "bench",
        help="measure simulator speed: EASY on real logs, the tiered policies at cluster scale",
        description="Time FCFS and EASY on the full KTH-SP2, CTC-SP2 and HPC2N logs and print "
        "jobs simulated per second, then time `tiersweep run` as a whole process; with --scale, "
        "the consolidation policies, KEASY and REASY at cluster scale instead (ratios to EASY, "
        "peak memory, the compiled or Python path); with --sweep, a sweep's per-cell overhead.",
    )
    bench.add_argument("--traces", help=f"folder holding the logs [{BENCH_TRACE_FOLDER}]")
    bench.add_argument(
        "--repeat",
        type=whole_number(1, 100, "each repeat runs every measurement again"),
        help=f"runs per measurement; the best is shown [{BENCH_REPEAT}]",
    )
    bench.add_argument("--quick", action="store_true", help="KTH-SP2 only")
    bench.add_argument(
        "--scale",
        action="store_true",
        help="instead: the cluster-scale cases (CEA-Curie, Lublin up to 1M jobs on 10,000 nodes, the tiered policies "
        "/ EASY), as ratios to the bare textbook loop or to EASY measured in the same run, with peak memory (long: "
        "each case runs in its own process, up to 15 minutes of its own CPU time each; with --quick, only the small "
        "cases)",
    )
    bench.add_argument(
        "--reference",
        help=f"the bare textbook EASY loop that --scale compares with [{BENCH_REFERENCE}]",
    )
    bench.add_argument(
        "--sweep",
        nargs="*",
        choices=_BackendNames(),
        metavar="BACKEND",
        help="instead: time a 60-cell sweep (about 1 s per cell) and 200 tiny cells on these backends, with "
        "the per-cell overhead of each against serial, which always runs first [serial ray]",
    )
    return parser


def main(argv: Sequence[str] | None = None) -> int:
    """Entry point of the ``tiersweep`` console script (``argv`` None: the process's own
    arguments, and the process exits when this returns)."""
    if argv is None:
        _terminate_like_interrupt()
    status = _main(argv)
    if argv is None:
        # The process ends next, and its last act would be a full collection walking every
        # object still alive (numpy's modules, a run's jobs): a twentieth of a small run's
        # time, to free memory the operating system takes back anyway. Freezing them skips it.
        import gc

        gc.freeze()
    return status


class Terminated(KeyboardInterrupt):
    """SIGTERM, handled as Ctrl-C is (a sweep stops its workers and keeps what it stored)."""


#: Set when SIGTERM arrived (a library waiting in C code may re-raise the interrupt as a plain
#: KeyboardInterrupt, so the exception's class alone does not say which signal it was).
_TERMINATED: list[bool] = []


def _terminate_like_interrupt() -> None:
    """Turn SIGTERM into :class:`Terminated` for the program's own process (the default would
    end it on the spot, leaving its workers and, with Ray, a stack dump)."""
    import signal

    def terminated(number: int, frame: object) -> None:
        _TERMINATED.append(True)
        raise Terminated()

    signal.signal(signal.SIGTERM, terminated)


def _main(argv: Sequence[str] | None) -> int:
    parser = build_parser()
    args = parser.parse_args(argv)
    from .core.errors import TiersweepError

    try:
        refused = check_text(parser, args) or inapplicable(args)
        if refused is not None:
            raise TiersweepError(refused)
        if args.command == "run":
            from .sweep.run_command import run_command

            return run_command(args.spec, args.overrides, args.json, args.jobs_out)
        if args.command == "sweep":
            from .sweep.sweep_command import sweep_command

            return sweep_command(
                args.config,
                out=args.out,
                backend=args.backend,
                backend_options=_backend_options(args),
                with_jobs=args.with_jobs,
                force=args.force,
                retry_failed=args.retry_failed,
                max_cells=args.max_cells,
                cell_timeout=args.cell_timeout,
                dry_run=args.dry_run,
                overrides=args.overrides,
            )
        if args.command == "tune":
            from .analysis.tune_check import held_out_lines
            from .analysis.tune_plots import write_tuning_plots
            from .sweep.tune_command import tune_command

            return tune_command(
                args.config,
                out=args.out,
                trials=args.trials,
                storage=args.storage,
                backend=args.backend,
                backend_options=_backend_options(args),
                plots=None if args.no_plots else write_tuning_plots,
                overrides=args.overrides,
                check_lines=held_out_lines,
            )
        if args.command == "report":
            from .analysis.report import parse_assignments, parse_window, write_report

            try:
                page = write_report(
                    args.root,
                    args.out,
                    window=parse_window(args.window),
                    gantt_at=parse_assignments(args.gantt_at),
                    on_warning=lambda text: print(f"tiersweep: {text}", file=sys.stderr),
                )
            except FileNotFoundError as error:
                raise TiersweepError(str(error)) from None
            print(f"report: {page}")
            return 0
        if args.command == "sensitivity":
            from .analysis.sensitivity_command import sensitivity_command

            return sensitivity_command(
                args.root,
                args.metrics,
                second_order=args.second_order,
                resamples=args.resamples,
                screening=args.screening,
                csv=args.csv,
            )
        if args.command == "compact":
            from .sweep.sweep_command import compact_command

            return compact_command(args.root)
        if args.command == "workload":
            from .sweep.workload_command import describe_command, generate_command

            if args.workload_command == "generate":
                return generate_command(
                    args.model,
                    args.out,
                    jobs=args.jobs,
                    load=args.load,
                    seed=args.seed,
                    preset=args.preset,
                    nodes=args.nodes,
                    max_size=args.max_size,
                    overrides=args.overrides,
                )
            return describe_command(args.path, args.overrides, args.json, args.plot)
        if args.command == "bench":
            from .sweep.bench import bench_command, sweep_bench_command

            traces = args.traces or BENCH_TRACE_FOLDER
            if args.scale:
                from .sweep.scale_bench import scale_bench_command

                return scale_bench_command(traces, args.reference or BENCH_REFERENCE, args.quick)

            if args.sweep is not None:
                return sweep_bench_command(args.sweep or ["serial", "ray"])
            return bench_command(traces, args.repeat or BENCH_REPEAT, args.quick)
    except TiersweepError as error:
        print(f"tiersweep: error: {shortened(str(error))}", file=sys.stderr)
        return 2
    except KeyboardInterrupt as interrupt:
        if isinstance(interrupt, Terminated) or _TERMINATED:
            print("tiersweep: terminated", file=sys.stderr)
            return 143  # 128 + SIGTERM, as a shell reports it
        print("tiersweep: interrupted", file=sys.stderr)
        return 130
    except BrokenPipeError:
        # The reader went away (e.g. `| head`): not an error of ours. Point stdout at devnull
        # so the interpreter's final flush does not complain again. (Before OSError, which
        # BrokenPipeError is.)
        import os

        os.dup2(os.open(os.devnull, os.O_WRONLY), sys.stdout.fileno())
        return 0
    except OSError as error:
        import errno

        if error.errno in (errno.ENOSPC, errno.EDQUOT):
            # A batch is stored only once all its files are written, so a full disk loses no
            # stored cell and leaves nothing half-stored: the run can simply be repeated.
            where = f" writing {error.filename}" if error.filename else ""
            print(
                f"tiersweep: error: no space left on the device{where}; the cells stored so far are whole, "
                "the batch being written is not stored: free some space and run the same command again",
                file=sys.stderr,
            )
            return 2
        if error.filename is None:
            raise
        # A file the user named or a folder the run writes to cannot be used (read-only, no
        # permission, a file where a folder belongs): the file and the reason say it all.
        print(f"tiersweep: error: {shortened(f'{error.filename}: {error.strerror or error}')}", file=sys.stderr)
        return 2
    raise AssertionError(f"unhandled command {args.command}")


if __name__ == "__main__":
    sys.exit(main())
