"""The ``tiersweep`` command line.

Heavy libraries (pandas, pyarrow, ray, optuna) are imported only inside the subcommands that
need them, so ``tiersweep run`` starts as fast as numpy allows.
"""

from __future__ import annotations

import argparse
import sys
from typing import Sequence

__all__ = ["main", "build_parser"]

_SPEC_HELP = """\
A spec is a YAML mapping with four parts (defaults in brackets):

  seed: 1                                  [0]
  workload:
    trace: ../shared/traces/KTH-SP2-1996-2.1-cln.swf.gz   SWF file, plain or gzip;
                                           relative to the current directory
    jobs: 10000                            first N valid jobs [all]
    size_field: requested | allocated      [requested] SWF field 8, else 5 when -1
    overrun: kill | extend                 [kill] stop a job at its requested time, or not
    estimate: requested | exact | factor:<f>   [requested] runtime the scheduler believes
    lenient: false                         skip and count malformed lines instead of failing
  platform:
    kind: nodes                            [nodes]
    nodes: 100                             [the trace's MaxProcs]
  policy:
    name: fcfs | easy | conservative | selective   [easy]
    xfactor_threshold: adaptive | <number>  (selective only) [adaptive = max(10, mean bsld)]
"""


def build_parser() -> argparse.ArgumentParser:
    """The argument parser of every subcommand."""
    parser = argparse.ArgumentParser(
        prog="tiersweep",
        description="Simulate, sweep and tune parallel-job scheduling on consolidated clusters.",
    )
    sub = parser.add_subparsers(dest="command", metavar="COMMAND", required=True)

    run = sub.add_parser(
        "run",
        help="simulate one run spec and print its metrics",
        description="Simulate one run spec and print its metrics.",
        epilog=_SPEC_HELP,
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

    bench = sub.add_parser(
        "bench",
        help="measure simulator speed on real logs (FCFS and EASY)",
        description="Time FCFS and EASY on the full KTH-SP2, CTC-SP2 and HPC2N logs and print "
        "jobs simulated per second, then time `tiersweep run` as a whole process.",
    )
    bench.add_argument("--traces", default="../shared/traces", help="folder holding the logs [%(default)s]")
    bench.add_argument("--repeat", type=int, default=3, help="runs per measurement; the best is shown [%(default)s]")
    bench.add_argument("--quick", action="store_true", help="KTH-SP2 only")
    return parser


def main(argv: Sequence[str] | None = None) -> int:
    """Entry point of the ``tiersweep`` console script."""
    args = build_parser().parse_args(argv)
    from core.errors import TiersweepError

    try:
        if args.command == "run":
            from .run_command import run_command

            return run_command(args.spec, args.overrides, args.json, args.jobs_out)
        if args.command == "bench":
            from .bench import bench_command

            return bench_command(args.traces, args.repeat, args.quick)
    except TiersweepError as error:
        print(f"tiersweep: error: {error}", file=sys.stderr)
        return 2
    except KeyboardInterrupt:
        print("tiersweep: interrupted", file=sys.stderr)
        return 130
    raise AssertionError(f"unhandled command {args.command}")


if __name__ == "__main__":
    sys.exit(main())
