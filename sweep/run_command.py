"""``tiersweep run``: one simulation from a YAML spec, summarised as a table or JSON."""

from __future__ import annotations

import contextlib
import json
import math
import sys
from collections.abc import Callable, Iterator
from typing import Any, TextIO

from ..core import simulate
from ..core.capabilities import MOVES
from ..core.compiled_run import run_path_line
from ..core.engine import ENGINE_PARAMS
from ..core.metric_catalogue import TABLE_METRICS, label_of
from ..core.platforms import PLATFORMS
from ..core.policies import POLICIES
from ..core.simulate import RunResult
from .specfile import apply_overrides, load_run_spec

__all__ = ["run_command", "run_progress", "summary_json", "summary_table", "BAR_DELAY"]


def _clean(value: Any) -> Any:
    if isinstance(value, float) and not math.isfinite(value):
        return None
    if isinstance(value, dict):
        return {k: _clean(v) for k, v in value.items()}
    return value


def summary_json(result: RunResult) -> str:
    """One JSON object: every run metric at the top level, plus ``report``, ``spec``,
    ``wall_seconds`` and ``model_version`` (nan becomes null)."""
    payload = {
        **result.metrics,
        "report": result.report,
        "spec": result.spec,
        "wall_seconds": result.wall_seconds,
        "model_version": result.model_version,
    }
    return json.dumps(_clean(payload), sort_keys=False)


def _fmt(value: float) -> str:
    if not math.isfinite(value):
        return "n/a"
    if float(value).is_integer():
        return f"{int(value):,}"
    return f"{value:,.3f}" if abs(value) < 1000 else f"{value:,.0f}"


def _engine_keys_matter(policy: str, metrics: dict[str, Any]) -> bool:
    """Whether the engine's keys of the platform section (:data:`~tiersweep.core.engine.ENGINE_PARAMS`,
    the restore delay of a suspended or moved job) can matter to a run: the policy moves jobs,
    or jobs were suspended and restarted in it."""
    moves = MOVES in POLICIES[policy].requires
    return moves or bool(metrics.get("migrations_per_job", 0.0) > 0)


def summary_table(result: RunResult) -> str:
    """A readable summary: what ran, the metrics, and every workload rule that fired.

    The policy line shows the parameters the policy declares; the platform line shows the
    engine's keys only where they can matter (see :func:`_engine_keys_matter`)."""
    spec = result.spec
    workload, platform, policy = spec["workload"], spec["platform"], spec["policy"]
    declared = POLICIES[policy["name"]].params  # (a validated spec names a registered policy)
    # The policy's own parameters that differ from their defaults (`run --help` lists those):
    # every backfilling run would otherwise spell out EASY++'s keys at their defaults.
    params = ", ".join(
        f"{k}={v}" for k, v in policy.items() if k != "name" and k in declared and v != declared[k].default
    )
    engine_keys = ENGINE_PARAMS if _engine_keys_matter(policy["name"], result.metrics) else {}
    if "nodes" in platform:
        where = f"{platform['kind']}, {platform['nodes']} nodes" + (
            f", {platform['tiers']} tiers" if platform.get("tiers", 1) > 1 else ""
        )
        where += "".join(f", {key.replace('_', ' ')} {platform[key]:g} s" for key in engine_keys)
    else:
        shown = {k: v for k, v in platform.items() if k != "kind" and (k not in ENGINE_PARAMS or k in engine_keys)}
        where = f"{platform['kind']}, " + ", ".join(f"{k}={v}" for k, v in shown.items())
    source = (
        workload["trace"]
        if workload["trace"] is not None
        else f"{workload['model']} ({workload['preset']}), {workload['jobs']:,} jobs"
    )
    lines = [
        f"workload  {source}",
        f"platform  {where}",
        f"policy    {policy['name']}{f' ({params})' if params else ''}, estimate {workload['estimate']}, "
        f"overrun {workload['overrun']}, seed {spec['seed']}",
        "",
    ]
    # The catalogue's rows, then those that say something only on some runs.
    rows = [*TABLE_METRICS]
    rows += [k for k in result.metrics if k.endswith("_share")]
    if result.metrics.get("accept_rate", 1.0) != 1.0:
        rows.insert(1, "accept_rate")
    if result.metrics.get("kills_per_job", 0.0):  # (only keasy kills; zero elsewhere)
        rows += ["kills_per_job", "lost_work"]
    rows += [k for k in PLATFORMS[platform["kind"]].EXTRA_METRICS if k in result.metrics]
    labels = [label_of(key) for key in rows]
    width = max(map(len, labels))
    for key, label in zip(rows, labels):
        lines.append(f"  {label:<{width}}  {_fmt(result.metrics[key]):>16}")
    # Jobs without a user id matter only to predictions from users' histories (every job of a
    # synthetic model has none): said when the policy predicts that way.
    quiet = {"records", "dropped"} | ({"no_user_id"} if policy.get("prediction") != "last2" else set())
    fired = {k: v for k, v in result.report.items() if v and k not in quiet}
    if fired:
        lines.append("")
        lines.append("workload rules: " + ", ".join(f"{k.replace('_', ' ')} {v:,}" for k, v in fired.items()))
    lines.append(f"\nsimulated in {result.wall_seconds:.2f} s")
    lines.append(run_path_line())  # the compiled path or the Python reference: never a silent slowdown
    return "\n".join(lines)


#: Seconds a run goes on before its progress bar shows: most runs end sooner and print none.
BAR_DELAY = 1.0


@contextlib.contextmanager
def run_progress(stream: TextIO) -> Iterator[Callable[[int, int, float], None] | None]:
    """A progress bar of one run's finished jobs on ``stream`` if it is a terminal (None
    otherwise): the callback the engine calls (see :class:`~tiersweep.core.engine.Engine`).
    It shows after :data:`BAR_DELAY` seconds, with the days simulated, and stays above the
    summary with the run's last count (all jobs, or where an interruption stopped it)."""
    if not stream.isatty():
        yield None
        return
    from tqdm import tqdm

    bar = tqdm(unit="job", desc="jobs finished", file=stream, delay=BAR_DELAY, dynamic_ncols=True)

    def update(finished: int, total: int, simulated: float) -> None:
        bar.total = total
        bar.set_postfix_str(f"simulated {simulated / 86400:,.1f} days", refresh=False)
        bar.update(finished - bar.n)

    try:
        yield update
    finally:
        bar.close()


def run_command(spec_path: str, overrides: list[str], as_json: bool, jobs_out: str | None) -> int:
    """Run the spec at ``spec_path`` and print its summary; return the exit status.

    Relative trace paths in the file are taken from its folder, those of ``overrides`` from the
    current directory."""
    spec = apply_overrides(load_run_spec(spec_path), overrides)
    if jobs_out is not None:
        from .jobs_file import JOB_FILE_SUFFIXES
        from .paths import output_file

        output_file(jobs_out, "--jobs-out", JOB_FILE_SUFFIXES)  # (before the run, not after it)
    with run_progress(sys.stderr) as progress:
        result = simulate(spec, progress=progress)
    if jobs_out is not None:
        from .jobs_file import write_job_records

        write_job_records(result.jobs, jobs_out)
    print(summary_json(result) if as_json else summary_table(result))
    return 0
