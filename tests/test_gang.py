"""Gang scheduling: the ``gang`` platform (an Ousterhout matrix whose rows take turns) and the
``gs``, ``bgs`` and ``mgs`` policies.

* The fluid rate model by hand: two and three rows, one row without switch cost, and an
  exact round robin (slice by slice, written out here) that ends every job within one cycle
  of the fluid finish time, as the platform's docstring promises.
* With one row, ``gs`` is ``fcfs`` and ``bgs`` is ``easy``, record for record, on the first
  5,000 jobs of KTH-SP2 and CTC-SP2.
* Counting free columns and tracking column ids give the same schedules.
* ``bgs`` backfills each row with EASY at the guaranteed rate; ``mgs`` makes room for the
  head and empties rows, by hand, with its migrations counted (a move onto the same columns
  is a change of time slot: free, not a migration).
* ``mgs`` never overfills a row or a cell, on random small workloads (hypothesis), under the
  shipped contract's audit plus a check of the platform's own occupancy.
* Spec errors, ``tiersweep run`` and a sweep.
"""

from __future__ import annotations

import json

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from conftest import trace_path
from helpers import make_jobs
from tiersweep.cli import main
from tiersweep.contract.audit import run_spec
from tiersweep.contract.checks import assert_records_identical, assert_run_contract
from tiersweep.contract.workloads import small_workload_spec
from tiersweep.core import simulate
from tiersweep.core.engine import Engine
from tiersweep.core.errors import SpecError
from tiersweep.core.platforms import make_platform
from tiersweep.core.platforms.gang import Gang
from tiersweep.core.policies import make_policy
from tiersweep.core.spec import validate_spec

KTH = "KTH-SP2-1996-2.1-cln.swf.gz"
CTC = "CTC-SP2-1996-3.1-cln.swf.gz"


def run(rows, policy, *, nodes=10, mpl=2, quantum=8.0, switch_cost=1.0, migration_cost=0.0, record=True, **params):
    """Run ``(submit, runtime, size, requested)`` rows on a gang matrix; return the jobs, the
    engine and the rates every job was seen at after each pass (``{job_id: [(time, rate)]}``)."""
    jobs = make_jobs(rows, nodes)
    seen: dict[int, list[tuple[float, float]]] = {}

    def observe(sim):
        for job in sim.running.values():
            history = seen.setdefault(job.job_id, [])
            if not history or history[-1][1] != job.rate:
                history.append((sim.now, job.rate))

    platform = Gang(nodes, mpl, quantum=quantum, switch_cost=switch_cost)
    engine = Engine(
        jobs,
        platform,
        make_policy(policy, **params),
        migration_cost=migration_cost,
        observer=observe,
        record_segments=record,
    )
    engine.run()
    return jobs, engine, seen


def finishes(jobs):
    return [job.finish_time for job in jobs]


# -- the rate model ------------------------------------------------------------------------------


def test_two_rows_hand_computed():
    # quantum 8 s, switch 1 s: a busy row works 7/8 of its slices; with two busy rows each job
    # runs at (7/8) / 2 = 7/16 = 0.4375 (exact in binary, so finish times compare exactly).
    # A and B take the whole machine (10 columns): A in row 0, B in row 1, both at 7/16.
    #   A: 70 s of work / (7/16) = 160 s              -> finishes at 160
    # C (40 s in) fits in no row and waits for one: it starts in row 0 when A ends at 160.
    #   B at 160: 160 x 7/16 = 70 s done; C: 35 / (7/16) = 80 s -> finishes at 240
    #   B at 240: 70 + 80 x 7/16 = 105 done, 35 left, alone at rate 1 -> finishes at 275
    jobs, _, seen = run([(0, 70, 10, 70), (0, 140, 10, 140), (40, 35, 10, 35)], "gs")
    assert [job.tier for job in jobs] == [0, 1, 0]
    assert [job.start_time for job in jobs] == [0.0, 0.0, 160.0]
    assert finishes(jobs) == [160.0, 275.0, 240.0]
    assert seen[1] == [(0.0, 0.4375)]
    assert seen[2] == [(0.0, 0.4375), (240.0, 1.0)]
    assert seen[3] == [(160.0, 0.4375)]


def test_three_rows_hand_computed():
    # quantum 4 s, switch 1 s: 3/4 of a slice is work. Three busy rows: 0.75 / 3 = 0.25 each.
    #   A: 25 / 0.25 = 100                                    -> finishes at 100
    # Two busy rows from 100: 0.75 / 2 = 0.375. B and C have done 25 each.
    #   B: 55 - 25 = 30 left / 0.375 = 80                     -> finishes at 180
    # C alone from 180 (rate 1): 25 + 80 x 0.375 = 55 done, 20 left -> finishes at 200
    rows = [(0, 25, 10, 25), (0, 55, 10, 55), (0, 75, 10, 75)]
    jobs, _, seen = run(rows, "gs", mpl=3, quantum=4.0, switch_cost=1.0)
    assert finishes(jobs) == [100.0, 180.0, 200.0]
    assert seen[3] == [(0.0, 0.25), (100.0, 0.375), (180.0, 1.0)]


def test_one_busy_row_switches_nothing():
    # Two rows, but the jobs fit side by side in row 0: one busy row, no switch, rate 1.
    jobs, _, seen = run([(0, 100, 4, 100), (0, 50, 6, 50)], "gs", switch_cost=7.0)
    assert [job.tier for job in jobs] == [0, 0]
    assert finishes(jobs) == [100.0, 50.0]
    assert seen == {1: [(0.0, 1.0)], 2: [(0.0, 1.0)]}


def test_the_platform_reports_its_rate_model():
    platform = Gang(10, 4, quantum=8.0, switch_cost=1.0)
    assert platform.rows == platform.tiers == 4
    assert [platform.rate_with(r) for r in range(5)] == [1.0, 1.0, 0.4375, 0.875 / 3, 0.21875]
    assert platform.guaranteed_rate == 0.21875
    assert platform.capacity == 10 and [platform.free_count(r) for r in range(4)] == [10] * 4


def round_robin_finishes(works: list[float], quantum: float, switch_cost: float) -> list[float]:
    """Exact round robin of whole-machine jobs, one per row, all present at 0: rows take turns
    a slice each; a slice's first ``switch_cost`` seconds are the switch into it when more
    than one row is busy; a row whose job ends mid-slice hands over at once."""
    left = list(works)
    done = [0.0] * len(works)
    now = 0.0
    while any(w > 0 for w in left):
        for row, work in enumerate(left):
            if work <= 0:
                continue
            busy = sum(w > 0 for w in left)
            if busy == 1:
                now += work
            else:
                now += switch_cost
                work = min(work, quantum - switch_cost)
                now += work
            left[row] -= work
            if left[row] <= 1e-9:
                left[row] = 0.0
                done[row] = now
    return done


@pytest.mark.parametrize("mpl", [2, 3, 4])
def test_the_fluid_model_ends_jobs_within_one_cycle_of_round_robin(mpl):
    quantum, switch_cost = 10.0, 0.5
    works = [float(w) for w in (95, 333, 1000, 2718)[:mpl]]
    jobs, _, _ = run([(0, w, 10, w) for w in works], "gs", mpl=mpl, quantum=quantum, switch_cost=switch_cost)
    fluid = finishes(jobs)
    exact = round_robin_finishes(works, quantum, switch_cost)
    for f, e in zip(fluid, exact):
        assert abs(f - e) < mpl * quantum, (fluid, exact)


# -- one row is the backfilling family ---------------------------------------------------------------


@pytest.mark.parametrize("log", [KTH, CTC])
@pytest.mark.parametrize(("gang_policy", "twin"), [("gs", "fcfs"), ("bgs", "easy")])
def test_one_row_is_fcfs_and_easy_exactly_on_real_logs(log, gang_policy, twin):
    workload = {"trace": str(trace_path(log)), "jobs": 5000}
    # The default quantum and switch cost: with one row there is never a switch.
    gang = simulate({"workload": workload, "platform": {"kind": "gang", "mpl": 1}, "policy": {"name": gang_policy}})
    nodes = simulate({"workload": workload, "platform": {"kind": "nodes"}, "policy": {"name": twin}})
    assert gang.spec["platform"]["nodes"] == nodes.spec["platform"]["nodes"]  # the log's MaxProcs
    assert_records_identical(gang.jobs, nodes.jobs, f"{gang_policy} with mpl 1 vs {twin} on {log}")
    assert np.isfinite(gang.jobs["finish_time"]).all() and len(gang.jobs["finish_time"]) == 5000


@pytest.mark.parametrize("policy", ["gs", "bgs"])
@pytest.mark.parametrize("mpl", [2, 3])
def test_counting_free_columns_gives_the_same_schedules_as_tracking_them(policy, mpl):
    spec = {
        "workload": {"trace": str(trace_path(KTH)), "jobs": 2000},
        "platform": {"kind": "gang", "mpl": mpl},
        "policy": {"name": policy},
    }
    counted = simulate(spec)  # no segments: the platform counts free columns per row
    tracked = simulate(spec, record_segments=True)  # segments name the columns: ids are tracked
    assert_records_identical(counted.jobs, tracked.jobs, f"{policy} with mpl {mpl}")
    assert (counted.jobs["finish_time"] - counted.jobs["start_time"] > counted.jobs["runtime"]).any()  # rows did share


# -- backfilling gang scheduling ----------------------------------------------------------------------


def test_bgs_backfills_each_row_at_the_guaranteed_rate():
    # No switch cost: the guaranteed rate (both rows busy) is 1/2, so a job's estimated
    # duration in a row is twice its estimate. A (6 columns) runs in row 0, B (8) in row 1;
    # C (10) fits in no row and holds a reservation in both: shadow 0 + 1000 / (1/2) = 2000.
    # D (4 columns, estimate 50) fits row 0 now and ends by 2 + 100 = 102 <= 2000: backfilled.
    # E (2 columns, estimate 500) fits only row 1 and ends by 3 + 1000 = 1003 <= 2000: backfilled.
    rows = [(0, 1000, 6, 1000), (0, 1000, 8, 1000), (1, 100, 10, 100), (2, 50, 4, 50), (3, 500, 2, 500)]
    jobs, _, _ = run(rows, "bgs", switch_cost=0.0)
    assert [(job.start_time, job.tier) for job in jobs] == [(0.0, 0), (0.0, 1), (2000.0, 0), (2.0, 0), (3.0, 1)]
    # Both rows stay busy until 2000, so every job ran at 1/2: D by 102, E by 1003.
    assert finishes(jobs) == [2000.0, 2000.0, 2100.0, 102.0, 1003.0]
    # Plain gang scheduling lets C block the queue.
    jobs, _, _ = run(rows, "gs", switch_cost=0.0)
    assert [job.start_time for job in jobs] == [0.0, 0.0, 2000.0, 2000.0, 2000.0]


def test_bgs_does_not_backfill_past_the_head_in_any_row():
    # As above, but E's estimate of 1000 stretches to 2000 at the guaranteed rate: it would end
    # at 2003, after C's shadow in row 1, and row 1 has no extra columns at the shadow.
    rows = [(0, 1000, 6, 1000), (0, 1000, 8, 1000), (1, 100, 10, 100), (3, 1000, 2, 1000)]
    jobs, _, _ = run(rows, "bgs", switch_cost=0.0)
    assert [job.start_time for job in jobs] == [0.0, 0.0, 2000.0, 2000.0]


# -- migration gang scheduling --------------------------------------------------------------------------


def test_mgs_empties_a_row_by_migrating_a_job():
    # No switch cost; migration cost 20 s. A (6) and C (2, columns 6-7) in row 0, B (8,
    # columns 0-7) in row 1: two busy rows, rate 1/2 each.
    #   A: 100 / (1/2) = 200                                              -> finishes at 200
    # At 200 row 0 holds only C, which fits in row 1's free columns 8-9 (its own, 6-7, are
    # B's there): it migrates (restoring until 220) and row 0 is idle: one busy row, rate 1.
    #   B: 100 done at 200, 900 left at rate 1                            -> finishes at 1100
    #   C: 100 done at 200, restoring until 220, 900 left at rate 1       -> finishes at 1120
    jobs, engine, seen = run(
        [(0, 100, 6, 100), (0, 1000, 8, 1000), (0, 1000, 2, 1000)], "mgs", switch_cost=0.0, migration_cost=20.0
    )
    assert finishes(jobs) == [200.0, 1100.0, 1120.0]
    assert [job.migrations for job in jobs] == [0, 0, 1]
    assert jobs[2].tier_time == [200.0, 920.0]
    assert seen[3] == [(0.0, 0.5), (200.0, 0.0), (220.0, 1.0)]
    moved = [s for s in engine.segments if s[0] == 3]
    assert moved == [(3, 0, 0.0, 200.0, (6, 7), "move"), (3, 1, 200.0, 1120.0, (8, 9), "finish")]


def test_mgs_moves_a_job_onto_its_own_columns_for_free():
    # As above, but B takes columns 0-5 only: C's columns 6-7 are free in row 1, so the move is
    # a change of time slot, not a migration: no restore, no count.
    #   B and C: 100 done at 200, 900 left at rate 1 -> both finish at 1100
    jobs, engine, _ = run(
        [(0, 100, 6, 100), (0, 1000, 6, 1000), (0, 1000, 2, 1000)], "mgs", switch_cost=0.0, migration_cost=20.0
    )
    assert finishes(jobs) == [200.0, 1100.0, 1100.0]
    assert [job.migrations for job in jobs] == [0, 0, 0]
    assert [s for s in engine.segments if s[0] == 3] == [
        (3, 0, 0.0, 200.0, (6, 7), "move"),
        (3, 1, 200.0, 1100.0, (6, 7), "finish"),
    ]


def test_mgs_makes_room_for_the_head():
    # A (4, columns 0-3) and C (2, columns 4-5) in row 0; B (8, columns 0-7) in row 1. D (6)
    # arrives at 10: row 0 has 4 free, row 1 has 2. Row 0, the emptier, gets it once C moves
    # to row 1's columns 8-9 (a migration: restoring until 30). All at rate 1/2 (two busy rows).
    #   A: 5 done at 10, 95 left / (1/2)                  -> finishes at 200
    #   D: 100 / (1/2) from 10                            -> finishes at 210; row 0 idle, rate 1
    #   B: 5 + 200 x 1/2 = 105 at 210, 895 at rate 1      -> finishes at 1105
    #   C: 5 at 10, restoring to 30, 5 + 180 x 1/2 = 95 at 210, 905 at rate 1 -> finishes at 1115
    rows = [(0, 100, 4, 100), (0, 1000, 8, 1000), (0, 1000, 2, 1000), (10, 100, 6, 100)]
    jobs, engine, _ = run(rows, "mgs", switch_cost=0.0, migration_cost=20.0)
    assert [(job.start_time, job.tier) for job in jobs] == [(0.0, 0), (0.0, 1), (0.0, 1), (10.0, 0)]
    assert finishes(jobs) == [200.0, 1105.0, 1115.0, 210.0]
    assert [job.migrations for job in jobs] == [0, 0, 1, 0]
    assert sorted(engine.segments[-1][4]) == [8, 9] and engine.segments[-1][0] == 3
    # Without migrations D waits for a row: gs starts it at 200, when A's row has room.
    jobs, _, _ = run(rows, "gs", switch_cost=0.0, migration_cost=20.0)
    assert jobs[3].start_time == 200.0


def test_mgs_without_compaction_leaves_rows_as_they_are():
    jobs, _, _ = run(
        [(0, 100, 6, 100), (0, 1000, 8, 1000), (0, 1000, 2, 1000)],
        "mgs",
        switch_cost=0.0,
        migration_cost=20.0,
        compact=False,
    )
    assert [job.migrations for job in jobs] == [0, 0, 0]
    # C stays in row 0: two busy rows to the end, so B and C run at 1/2 throughout.
    assert finishes(jobs) == [200.0, 2000.0, 2000.0]


def test_best_fit_packs_the_fullest_row():
    # Rows 0 (A, 3 columns) and 1 (B, 8 columns) are busy; C (2) fits both: first fit takes
    # row 0, best fit row 1 (fewest free columns left).
    rows = [(0, 100, 3, 100), (0, 100, 8, 100), (1, 10, 2, 10)]
    first, _, _ = run(rows, "gs")
    best, _, _ = run(rows, "gs", packing="best")
    assert [job.tier for job in first] == [0, 1, 0]
    assert [job.tier for job in best] == [0, 1, 1]


# -- mgs never overfills a row --------------------------------------------------------------------------


def _cells_agree(sim):
    """The platform's occupancy is exactly what the running jobs hold, cell by cell."""
    platform = sim.platform
    held = {}
    for job in sim.running.values():
        for column in job.nodes:
            assert (job.tier, column) not in held, f"cell (row {job.tier}, column {column}) held twice"
            held[job.tier, column] = job.index
    for row in range(platform.rows):
        for column in range(platform.capacity):
            assert platform.occupant(column, row) == held.get((row, column), -1)
        assert platform.free_count(row) == platform.capacity - sum(1 for r, _ in held if r == row)
    assert platform.busy_rows == len({row for row, _ in held})


workload_rows = st.lists(
    st.tuples(
        st.integers(0, 200),  # submit gap
        st.integers(0, 300),  # runtime
        st.integers(1, 10),  # size
        st.sampled_from([0.5, 1.0, 2.0]),  # request / runtime
    ),
    min_size=1,
    max_size=14,
)


@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(
    rows=workload_rows,
    mpl=st.integers(2, 4),
    migration_cost=st.sampled_from([0.0, 5.0, 20.0]),
    packing=st.sampled_from(["first", "best"]),
    compact=st.booleans(),
)
def test_mgs_never_overfills_a_row(tmp_path_factory, rows, mpl, migration_cost, packing, compact):
    submit = 0
    table = []
    for gap, runtime, size, ratio in rows:
        submit += gap
        table.append((submit, runtime, size, max(1, round(runtime * ratio))))
    platform = {
        "kind": "gang",
        "nodes": 10,
        "mpl": mpl,
        "quantum": 8.0,
        "switch_cost": 1.0,
        "migration_cost": migration_cost,
    }
    policy = {"name": "mgs", "packing": packing, "compact": compact}
    spec = small_workload_spec(tmp_path_factory.getbasetemp(), "mgs-random", table, platform, policy, scale=False)
    result = run_spec(spec, extra_audit=_cells_agree)
    assert_run_contract(result)  # per row and per cell capacity, work, lifecycle
    # Every move onto other columns is one migration; onto the same columns (another time
    # slot only), none. A job's stays are recorded in order; mgs never suspends.
    stays: dict[int, list[tuple[int, ...]]] = {}
    for job_id, _, _, _, nodes, _ in result.engine.segments:
        stays.setdefault(job_id, []).append(nodes)
    for job in result.jobs:
        columns = stays[job.job_id]
        assert result.policy.moves[job.index] == len(columns) - 1
        assert job.migrations == sum(before != after for before, after in zip(columns, columns[1:]))


def test_mgs_moves_jobs_on_a_real_log():
    spec = {
        "workload": {"trace": str(trace_path(KTH)), "jobs": 400},
        "platform": {"kind": "gang", "mpl": 3},
        "policy": {"name": "mgs"},
    }
    result = run_spec(spec, extra_audit=_cells_agree)
    assert_run_contract(result)
    assert result.records["migrations"].sum() > 0
    assert sum(result.policy.moves.values()) >= result.records["migrations"].sum()


# -- specs, the command line, sweeps --------------------------------------------------------------------


def test_spec_errors_name_the_key():
    base = {"workload": {"trace": "unread.swf"}, "policy": {"name": "gs"}}
    with pytest.raises(SpecError, match=r"^platform.switch_cost: 10 s is not less than the quantum \(10 s\)"):
        validate_spec({**base, "platform": {"kind": "gang", "switch_cost": 10}})
    with pytest.raises(SpecError, match=r"^platform.mpl: expected an integer from 1 to 64"):
        validate_spec({**base, "platform": {"kind": "gang", "mpl": 0}})
    with pytest.raises(SpecError, match=r"policy 'gs' needs 'rows' .* platform 'nodes'"):
        validate_spec({**base, "platform": {"kind": "nodes"}})
    with pytest.raises(SpecError, match=r"policy 'cmbf' needs 'node_vms' .* platform 'gang'"):
        validate_spec({**base, "platform": {"kind": "gang"}, "policy": {"name": "cmbf"}})
    # A platform built without a size can be inspected but not run.
    unsized = make_platform("gang", {})
    with pytest.raises(SpecError, match=r"^platform.nodes: "):
        Engine([], unsized, make_policy("gs"))


def test_tiersweep_run_on_gang(tmp_path, capsys):
    spec = tmp_path / "gang.yaml"
    spec.write_text(
        f"seed: 1\nworkload: {{trace: '{trace_path(KTH)}', jobs: 500}}\n"
        "platform: {kind: gang, mpl: 3, quantum: 30, switch_cost: 0.3}\npolicy: {name: bgs}\n"
    )
    assert main(["run", str(spec), "--json"]) == 0
    out = json.loads(capsys.readouterr().out)
    assert out["jobs"] == 500 and out["spec"]["platform"]["nodes"] == 100
    assert {"tier0_share", "tier1_share", "tier2_share"} <= set(out)
    assert main(["run", str(spec), "--json", "--set", "policy.name=mgs"]) == 0
    assert json.loads(capsys.readouterr().out)["migrations_per_job"] > 0


def test_a_sweep_over_policies_and_rows(tmp_path):
    from tiersweep.sweep.config import parse_sweep_config
    from tiersweep.sweep.driver import run_sweep
    from tiersweep.sweep.store import read_jobs, read_table

    config = parse_sweep_config(
        {
            "name": "gang",
            "base": {"workload": {"model": "jann97", "jobs": 300}, "platform": {"kind": "gang", "nodes": 64}},
            "grid": {"policy.name": ["gs", "bgs", "mgs"], "platform.mpl": [1, 2]},
            "seeds": 1,
        }
    )
    outcome = run_sweep(config, tmp_path, backend="serial", with_jobs=True, progress=False)
    assert (outcome.computed, outcome.failed) == (6, 0)
    runs = read_table(tmp_path / "gang" / "runs").to_pandas()
    assert set(runs["status"]) == {"ok"} and sorted(runs["platform.mpl"]) == [1, 1, 1, 2, 2, 2]
    # Row 1's share is stored for two rows and empty for one.
    assert runs.loc[runs["platform.mpl"] == 2, "tier1_share"].gt(0).all()
    assert runs.loc[runs["platform.mpl"] == 1, "tier1_share"].isna().all()
    jobs = read_jobs(tmp_path / "gang").to_pandas()
    assert len(jobs) == 6 * 300 and jobs["tier1_duration"].gt(0).any()
