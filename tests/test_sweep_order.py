"""Sweep order and ETA: costliest cells first, a time left from expected costs, and a bar
that keeps time while long cells run.

In grid order the slowest cells (consolidation at high load) would run last, and a time left
read from the cells done so far would say 11 s when 27 s remain. A bar drawn only when a cell
finished stood at ``0/2 [00:00, ? left]`` for the whole of a cluster-scale cell.
"""

from __future__ import annotations

import os
import random
import re

import pandas as pd
import pytest

from conftest import trace_path
from sweep_helpers import small_config
from tiersweep.core.compiled_path import PURE_PYTHON_ENV
from tiersweep.core.simulate import assemble
from tiersweep.core.spec import plan_run
from tiersweep.sweep.cells import flatten
from tiersweep.sweep.config import expand, parse_sweep_config
from tiersweep.sweep.driver import run_sweep
from tiersweep.sweep.estimate import (
    Eta,
    cell_points,
    columns_read,
    expected_costs,
    formula_cost,
    policy_costs,
    processes_per_job,
)
from tiersweep.sweep.store import read_table

CURIE = "CEA-Curie-2011-2.1-cln.swf.gz"


def _computed_order(root) -> list[tuple[str, float]]:
    runs = read_table(root / "runs", latest_only=False).to_pandas().sort_values("written_at", kind="stable")
    return list(zip(runs["policy.name"], runs["workload.load"]))


def test_the_costliest_cells_run_first(tmp_path, monkeypatch):
    # Grid order is easy before amcbf and 0.6 before 0.9: the reverse of their cost. (One
    # cell per batch, so that each cell's row has its own write time.)
    monkeypatch.setattr("tiersweep.sweep.runner.BATCH_SECONDS", 1e-9)
    config = small_config(seeds=1)
    assert [(c.spec["policy"]["name"], c.spec["workload"]["load"]) for c in expand(config)][0] == ("easy", 0.6)
    run_sweep(config, tmp_path, backend="serial", progress=False)
    order = _computed_order(tmp_path / "small")
    assert order[0] == ("amcbf", 0.9)
    assert order == [("amcbf", 0.9), ("amcbf", 0.6), ("easy", 0.9), ("easy", 0.6)]


def test_the_formula_ranks_consolidation_and_load_above_easy():
    cells = expand(small_config(seeds=1))
    cost = {(c.spec["policy"]["name"], c.spec["workload"]["load"]): formula_cost(c.spec) for c in cells}
    assert cost["amcbf", 0.6] > cost["easy", 0.9] > cost["easy", 0.6]
    assert cost["amcbf", 0.9] > cost["amcbf", 0.6]


def test_stored_wall_times_of_the_same_point_take_precedence(tmp_path):
    # Runs of seed 1 are stored; the cells of seeds 2 and 3 are expected to take what their
    # point's stored runs took, whatever the formula says.
    first = small_config(seeds=[1])
    run_sweep(first, tmp_path, backend="serial", progress=False)
    stored = read_table(tmp_path / "small" / "runs").to_pandas()
    stored.loc[stored["policy.name"] == "easy", "wall_seconds"] = 50.0  # an easy point made slow
    later = expand(small_config(seeds=[2, 3]))
    costs = expected_costs(later, stored)
    for cell, cost in zip(later, costs):
        point = stored[
            (stored["policy.name"] == cell.spec["policy"]["name"])
            & (stored["workload.load"] == cell.spec["workload"]["load"])
        ]
        assert cost == point["wall_seconds"].median()
    assert max(costs) == 50.0


def test_points_never_run_are_scaled_to_seconds_by_those_that_were(tmp_path):
    run_sweep(
        small_config(grid={"policy.name": ["easy", "amcbf"], "workload.load": [0.6]}, seeds=1),
        tmp_path,
        backend="serial",
        progress=False,
    )
    stored = read_table(tmp_path / "small" / "runs").to_pandas()
    ran = {
        c.cell_id: c.spec
        for c in expand(small_config(grid={"policy.name": ["easy", "amcbf"], "workload.load": [0.6]}, seeds=1))
    }
    scale = pd.Series(
        [wall / formula_cost(ran[cell]) for cell, wall in zip(stored["cell_id"], stored["wall_seconds"])]
    ).median()
    new = expand(small_config(grid={"policy.name": ["easy", "amcbf"], "workload.load": [0.9]}, seeds=1))
    costs = expected_costs(new, stored)
    assert costs == [formula_cost(c.spec) * scale for c in new]
    # amcbf's cost against easy's is their policies' declared costs per job and per process
    # (both scaled by one measured factor, so the ratio holds up to the rounding of its products)
    (easy_job, easy_process), (amcbf_job, amcbf_process) = (policy_costs(name) for name in ("easy", "amcbf"))
    sizes = processes_per_job(flatten(new[1].spec))
    assert easy_process == 0.0 and sizes > 1.0
    ratio = (amcbf_job + amcbf_process * sizes) / easy_job
    assert costs[1] / costs[0] == pytest.approx(ratio, rel=1e-12)


def test_the_estimate_reads_a_few_columns_of_the_store_and_gets_the_same_costs(tmp_path):
    # The whole runs table (every metric, every spec key) is large on a large folder: the
    # driver reads only the columns the cost estimate uses.
    run_sweep(small_config(seeds=[1]), tmp_path, backend="serial", progress=False)
    later = expand(small_config(seeds=[2]))
    whole = read_table(tmp_path / "small" / "runs", latest_only=False)
    few = read_table(tmp_path / "small" / "runs", latest_only=False, columns=columns_read(later))
    assert {"status", "wall_seconds", "policy.name", "workload.load"} <= set(few.column_names)
    assert "mean_wait" in whole.column_names and "mean_wait" not in few.column_names
    assert few.num_columns < whole.num_columns / 2 and few.num_rows == whole.num_rows
    assert expected_costs(later, few.to_pandas()) == expected_costs(later, whole.to_pandas())


def test_the_eta_weighs_cells_by_expected_cost():
    # Four cells, one ten times the others, finished first (costliest first) after 5 s: the
    # three left are expected to take 3 x 0.5 s. From cell counts it would be 3 x 5 s.
    now = [0.0]
    eta = Eta([10, 1, 1, 1], clock=lambda: now[0])
    assert eta.remaining_seconds() is None and eta.text() == "?"
    now[0] = 5.0
    eta.finished(10)
    assert eta.remaining_seconds() == 1.5
    now[0] = 5.5
    eta.finished(1)
    assert abs(eta.remaining_seconds() - 2 * 5.5 / 11) < 1e-12
    now[0] = 200.0
    assert eta.text() == "36s"
    eta.finished(1)
    eta.finished(1)
    assert eta.remaining_seconds() == 0.0


def test_the_eta_expects_a_point_s_other_seeds_to_take_what_its_first_took():
    # Two points of three seeds, each cell expected to cost 1. Point A's cells take 1 s, point
    # B's 5 s (the formula is a compromise: CEA-Curie's AMCBF and KEASY cells were off by 2x
    # against each other). Serially, after A's three and B's first (8 s), 10 s are left; from
    # the expected costs alone the time left was 2 x 8 / 4 = 4 s until the sweep's end.
    now = [0.0]
    eta = Eta([1.0] * 6, clock=lambda: now[0], points=["A"] * 3 + ["B"] * 3)
    for _ in range(3):
        now[0] += 1.0
        eta.finished(1.0, point="A", wall=1.0)
    assert eta.remaining_seconds() == pytest.approx(3.0)  # (B's cells not yet measured: as A's)
    now[0] += 5.0
    eta.finished(1.0, point="B", wall=5.0)
    assert eta.remaining_seconds() == pytest.approx(10.0)
    # Two workers: the sweep's time passes at half the cells' wall time, and so does the time left.
    now = [0.0]
    eta = Eta([1.0] * 4, clock=lambda: now[0], points=["A", "A", "B", "B"])
    now[0] = 2.5
    eta.finished(1.0, point="A", wall=5.0)
    eta.finished(1.0, point="B", wall=1.0)
    assert eta.remaining_seconds() == pytest.approx((5.0 + 1.0) * 2.5 / 6.0)
    eta.finished(1.0, point="A", wall=5.0)
    eta.finished(1.0, point="B", wall=1.0)
    assert eta.remaining_seconds() == 0.0


def test_the_eta_s_running_sums_equal_the_time_left_computed_point_by_point():
    """The ETA keeps the measured points' sums as tasks finish (a sweep of many single-seed
    points asks it after every batch). Checked against the definition, recomputed from scratch:
    a measured point's tasks left at its mean wall time, every other task at its cost times the
    ratio of wall time to cost of all finished tasks, at the ratio of elapsed to wall time."""
    rng = random.Random(5)
    points = [rng.randrange(40) for _ in range(400)]
    costs = [rng.uniform(0.5, 5.0) for _ in points]
    now = [0.0]
    eta = Eta(costs, clock=lambda: now[0], points=points)
    order = list(range(len(points)))
    rng.shuffle(order)
    walls: dict[int, float] = {}
    for step, task in enumerate(order[:-1]):
        now[0] += rng.uniform(0.1, 2.0)
        wall = rng.uniform(0.2, 9.0) if step % 7 else None  # (now and then a task without a wall time)
        eta.finished(costs[task], point=points[task], wall=wall)
        walls[task] = costs[task] if wall is None else wall
        finished = set(walls)
        per_cost = sum(walls.values()) / sum(costs[t] for t in finished)
        left = 0.0
        for point in set(points):
            tasks_left = [t for t in range(len(points)) if points[t] == point and t not in finished]
            timed = [t for t in finished if points[t] == point and not (order.index(t) % 7 == 0)]
            if timed:
                left += len(tasks_left) * sum(walls[t] for t in timed) / len(timed)
            else:
                left += sum(costs[t] for t in tasks_left) * per_cost
        expected = max(0.0, left * now[0] / sum(walls.values()))
        assert eta.remaining_seconds() == pytest.approx(expected, rel=1e-9, abs=1e-9), step


def test_the_sweep_tells_its_eta_each_cell_s_point_and_wall_time(tmp_path, monkeypatch):
    calls = []

    class Recording(Eta):
        def finished(self, cost, *, point=None, wall=None):
            calls.append((point, wall))
            super().finished(cost, point=point, wall=wall)

    monkeypatch.setattr("tiersweep.sweep.driver.Eta", Recording)
    config = small_config(seeds=2)
    run_sweep(config, tmp_path, backend="serial", progress=False)
    rows = read_table(tmp_path / "small" / "runs").to_pandas()
    assert sorted(wall for _, wall in calls) == sorted(rows["wall_seconds"])
    # Two seeds of each point: each point twice, and the points are the grid's.
    points = [point for point, _ in calls]
    assert sorted(points) == sorted(cell_points(expand(config))) and len(set(points)) == len(rows) / 2


def test_the_eta_starts_when_the_work_does():
    now = [100.0]
    eta = Eta([1, 1], clock=lambda: now[0])
    now[0] = 104.0  # backend start-up
    eta.restart()
    now[0] = 105.0
    eta.finished(1)
    assert eta.remaining_seconds() == 1.0
    now[0] = 105.0 + 3600 * 2
    assert eta.text() == "2h00m"


def test_the_bar_keeps_time_while_a_long_cell_runs(tmp_path, capsys, monkeypatch):
    """On a backend that runs cells elsewhere, the bar is drawn again while no cell finishes,
    its elapsed time going on (it was drawn only when a cell finished, so it stood at 00:00)."""
    monkeypatch.setattr("tiersweep.sweep.runner.BAR_REFRESH_SECONDS", 0.2)
    # One cell of a second or more in a worker process (its start-up alone takes most of one).
    raw = {
        "name": "long",
        "base": {
            "workload": {"model": "lublin03", "jobs": 4000, "load": 0.8},
            "platform": {"nodes": 93312, "tiers": 2},
            "policy": {"name": "amcbf"},
        },
        "grid": {},
        "seeds": 1,
    }
    capsys.readouterr()
    outcome = run_sweep(parse_sweep_config(raw), tmp_path, backend="process", backend_options={"workers": 1})
    assert outcome.computed == 1 and outcome.failed == 0
    drawn = capsys.readouterr().err
    waiting = re.findall(r"0/1 \[(\d\d):(\d\d)", drawn)
    assert len(waiting) >= 3, f"the bar was drawn {len(waiting)} time(s) before the cell finished: {drawn!r}"
    assert max(60 * int(m) + int(s) for m, s in waiting) >= 1, drawn
    assert "1/1 [" in drawn


def _measured_against_expected(raw: dict, tmp_path, attempts: int = 2) -> dict[tuple, float]:
    """Run the cells of ``raw`` serially (best of ``attempts``); per grid point, measured wall
    time over expected cost (unnamed units: only the spread between points means anything)."""
    config = parse_sweep_config(raw)
    cells = expand(config)
    walls: dict[str, float] = {}
    for attempt in range(attempts):
        run_sweep(config, tmp_path / str(attempt), backend="serial", progress=False)
        rows = read_table(tmp_path / str(attempt) / config.name / "runs").to_pandas()
        assert (rows["status"] == "ok").all()
        for cell_id, wall in zip(rows["cell_id"], rows["wall_seconds"]):
            walls[cell_id] = min(walls.get(cell_id, float("inf")), float(wall))
    axes = list(raw["grid"])
    return {
        tuple(flatten(cell.spec)[axis] for axis in axes): walls[cell.cell_id] / cost
        for cell, cost in zip(cells, expected_costs(cells))
    }


def _spread(ratios: dict[tuple, float]) -> float:
    return max(ratios.values()) / min(ratios.values())


def test_expected_costs_weigh_the_policies_as_the_path_in_use_runs_them(tmp_path):
    # The quickstart's cells: on the compiled path AMBF and AMCBF take about what EASY and FCFS
    # take (0.4-0.6 s each), but were expected to take ten times as long; the bar's time left,
    # read once the consolidation cells (submitted first) had finished, said 9 % of the work
    # was left when half of it was.
    base = {"workload": {"model": "feitelson96", "jobs": 5000}, "platform": {"nodes": 320, "tiers": 2}}
    raw = {"name": "policies", "base": base, "grid": {"policy.name": ["fcfs", "easy", "ambf", "amcbf"]}}
    ratios = _measured_against_expected(raw, tmp_path)
    assert _spread(ratios) < 4.0, ratios


def test_expected_costs_grow_with_the_processes_a_machine_size_gives_the_jobs(tmp_path):
    # A machine-size study: Lublin's job sizes grow with the machine, and with them the work of
    # the policies that place process by process (AMCBF here), not EASY's. The cost counted
    # jobs only: the same for 1,000 and 93,312 nodes, where AMCBF's cell took some 10-20 times
    # as long on the larger machine.
    base = {"workload": {"model": "lublin03", "jobs": 1000, "load": 0.8}, "platform": {"tiers": 2}}
    grid = {"platform.nodes": [1000, 93_312], "policy.name": ["easy", "amcbf"]}
    raw = {"name": "machines", "base": base, "grid": grid}
    if os.environ.get(PURE_PYTHON_ENV, "") not in ("", "0"):
        raw["base"]["workload"]["jobs"] = 200  # (the Python reference takes 5 ms per job there)
    ratios = _measured_against_expected(raw, tmp_path)
    for policy in ("easy", "amcbf"):
        small, large = ratios[1000, policy], ratios[93_312, policy]
        assert 0.25 < large / small < 4.0, ratios


@pytest.mark.slow
def test_expected_costs_weigh_the_policies_on_a_large_real_log(tmp_path):
    # The shipped cluster-scale study's policies on its log (configs/curie_consolidation.yaml,
    # first 50,000 CEA-Curie jobs on 93,312 nodes x 2: compiled, EASY about 2 s, KEASY 18,
    # AMCBF 29). Its jobs are far wider than Lublin's but restarted far less often: a cost per
    # process fitted to Lublin's machine-size runs alone expected AMCBF to take 14 times too long.
    base = {"workload": {"trace": str(trace_path(CURIE)), "jobs": 50_000}, "platform": {"tiers": 2}}
    raw = {"name": "curie", "base": base, "grid": {"policy.name": ["easy", "keasy", "amcbf"]}}
    ratios = _measured_against_expected(raw, tmp_path, attempts=1)
    assert _spread(ratios) < 4.0, ratios


@pytest.mark.parametrize(
    "workload, nodes",
    [({"trace": "KTH-SP2-1996-2.1-cln.swf.gz"}, None), ({"model": "lublin03", "jobs": 20_000}, 10_000)],
)
def test_the_processes_per_job_expected_are_those_the_run_reads(workload, nodes):
    if "trace" in workload:
        workload = {**workload, "trace": str(trace_path(workload["trace"]))}
    spec = {"workload": workload, "platform": {"tiers": 2, "nodes": nodes}, "policy": {"name": "amcbf"}}
    # (A model's sizes are heavy-tailed: the mean of 20,000 Lublin jobs varies by some 20 % from
    # seed to seed, so the runs of three seeds are the reference.)
    cells = expand(parse_sweep_config({"name": "sizes", "base": spec, "seeds": [1, 2, 3]}))
    jobs = [job for cell in cells for job in assemble(plan_run(cell.spec)).workload.jobs]
    read = sum(job.size for job in jobs) / len(jobs)
    assert processes_per_job(flatten(cells[0].spec)) == pytest.approx(read, rel=0.25)


def test_an_estimate_of_a_workload_that_cannot_be_read_is_one_process_per_job(tmp_path):
    # (The cell's own run says what is wrong; an estimate never stops a sweep.)
    missing = {"workload.trace": str(tmp_path / "gone.swf"), "workload.jobs": 100}
    assert processes_per_job(missing) == 1.0
    assert processes_per_job({"workload.model": "lublin03", "workload.params": '{"no_such": 1}'}) == 1.0


def test_a_calibrated_eta_says_the_time_left_before_the_first_cell_finishes():
    # Costs in seconds (stored runs calibrated them): 60 s of cells on two workers, 30 s left
    # from the start, standing until a cell finishes; then calibrated by it as before.
    now = [0.0]
    eta = Eta([10.0, 20.0, 30.0], clock=lambda: now[0], seconds_per_cost=1.0)
    uncalibrated = Eta([10.0, 20.0, 30.0], clock=lambda: now[0])
    eta.restart(2)
    uncalibrated.restart(2)
    assert eta.remaining_seconds() == 30.0 and eta.text() == "30s"
    assert uncalibrated.remaining_seconds() is None
    now[0] = 12.0
    assert eta.text() == "30s"
    now[0] = 15.0
    eta.finished(30.0, wall=30.0)
    uncalibrated.finished(30.0, wall=30.0)
    assert eta.remaining_seconds() == uncalibrated.remaining_seconds() == pytest.approx(30.0 * 15.0 / 30.0)


def test_a_sweep_with_stored_runs_shows_its_time_left_from_the_start(tmp_path, capsys):
    # The second seed of each point: its first seed's stored wall time is what it is expected
    # to take, so the bar's first drawing has a time left (it said "?" until a cell finished).
    run_sweep(small_config(seeds=[1]), tmp_path, backend="serial", progress=False)
    capsys.readouterr()
    run_sweep(small_config(seeds=[1, 2]), tmp_path, backend="serial")
    drawn = capsys.readouterr().err
    first = re.search(r"0/4 \[[\d:]+, ([^\]]*)\]", drawn)
    assert first and re.fullmatch(r"\d+s left", first.group(1)), drawn
    run_sweep(small_config(name="fresh"), tmp_path, backend="serial")
    drawn = capsys.readouterr().err
    assert re.search(r"0/8 \[[\d:]+, \? left\]", drawn), drawn
