"""KEASY and REASY (core/policies/two_tier_easy.py) and the engine's ``Kill`` decision.

Worked examples from the sources' own descriptions, computed by hand. Paper 002 (II.F): KEASY
"is capable of dispatching a job to run in background VMs while it is not qualified for
backfilling according to EASY"; the source's deploy function (Liu et al. 2012, Algorithm 2)
kills a background job that is to run in the foreground when its own foreground VMs are not
all idle, and starts it again, from zero, on other nodes. Paper 002 (II.G), REASY: "job
kill is not allowed ... once a job is deployed onto background VMs of a set of processors, its
run is pinned onto this set of processors. Only all the foreground VMs of this set of
processors are available can this job run in the foreground. ... if a reservation is being
made for a job running in the background tier, the shadow time is the last termination time
of the jobs running in its foreground VMs; the extra foreground VMs are the ones now idle and
no process of the job is running in their background VMs."

Setting of every example: four nodes P0-P3 with two tiers, ``fg_overhead: 0`` and
``bg_efficiency: 1``, every process using half a CPU (estimated = true), exact estimates. So a
background process under a busy foreground still has the half CPU it needs: every job runs at
rate 1 in either tier, and every time below is a sum of runtimes.

Example 1 (jobs A, B, X; index = position):

==== ====== ==== ======= ======================================================================
job  submit size runtime
==== ====== ==== ======= ======================================================================
A    0      2    100     starts at 0 on P0, P1 (the idle foreground VMs, ties by node id)
B    0      1    30      starts at 0 on P2
X    0      2    200     one foreground VM idle (P3): X is the head, its reservation EASY's
                         (shadow 30, when B's end frees a second VM; extra 0); meanwhile it
                         starts in background VMs, by the foreground load ascending: P3
                         (idle, 0), then P0 (A's 0.5; ties by node id): X on (P3, P0), at
                         rate 1.
==== ====== ==== ======= ======================================================================

At 30, X's reservation comes due: B ends, and P2 and P3 are idle in the foreground, enough for
X, but P0's foreground (A) is not. KEASY kills X (30 s of work lost: 30 s x 2 processes x 0.5 = 30 CPU-seconds) and
starts it again from zero on P2, P3: it ends at 30 + 200 = 230. REASY cannot deploy X: it stays
pinned; its reservation has shadow 100 (A, the only job in the foreground VMs of P3, P0, ends
then) and extra 1 (P2: idle, and no process of X under it; P3 is idle but X runs under it).
At 100 A ends: X's foreground VMs are all idle and it is switched up on its own nodes (a free
priority swap, no migration), with 100 s of work done: it ends at 200.

Example 2 adds, at 30, Y (2 processes, 500 s), Z (1, 500 s) and W (1, 70 s). REASY at 30
(reservation of X: shadow 100, extra 1): Y would end at 530 > 100 and needs 2 > 1 extra VMs:
not backfilled; Z ends at 530 but fits the extra VM: it starts on P2 (not on X's P3); W ends at
100 = the shadow: it starts on the idle P3. Y then starts in the background on the eligible
nodes P1, P2 (under A and Z). At 100 A and W end: X moves up (ends at 200); Y's foreground VMs
are P1 (idle) and P2 (Z, ending at 530): Y is the head, pinned, shadow 530, extra 0 (P0 and P3
are X's now, P1 is Y's own). Y runs on in the background and ends at 30 + 500 = 530, with Z.
KEASY at 30 kills X as in example 1 and starts it on P2, P3; Y is the head (nothing idle: no
backfill) and W, Y, Z (shortest first) start in the background on P0, then P1, P2, then P3. At
100 A and W end; Y, first by arrival, fits the two idle foreground VMs (P0, P1) but its own P2
is under X: killed after 70 s (70 CPU-seconds) and started again on P0, P1: it ends at 600. Z
(under X on P3) is switched up on P3 at 230, when X ends, and ends at 30 + 500 = 530.
"""

from __future__ import annotations

import math

import pytest

from helpers import make_jobs
from tiersweep.contract.audit import run_spec
from tiersweep.contract.checks import assert_records_identical, assert_run_contract
from tiersweep.contract.policies import PolicyContract
from tiersweep.core.decisions import Kill, Start
from tiersweep.core.engine import Engine
from tiersweep.core.errors import PolicyError
from tiersweep.core.jobs import QUEUED
from tiersweep.core.metrics import job_records, metric_names, run_metrics
from tiersweep.core.platforms import Nodes
from tiersweep.core.policies import POLICIES, BasePolicy, make_policy
from tiersweep.core.policies.backfill import Easy
from tiersweep.core.policies.two_tier_easy import Reservation
from tiersweep.core.simulate import simulate

P0, P1, P2, P3 = range(4)
FG, BG = 0, 1
A, B, X, Y, Z, W = range(6)

#: Example 1: (submit, runtime, size, requested).
EXAMPLE1 = [(0, 100, 2, 100), (0, 30, 1, 30), (0, 200, 2, 200)]
#: Example 2: example 1 plus Y, Z and W at 30.
EXAMPLE2 = EXAMPLE1 + [(30, 500, 2, 500), (30, 500, 1, 500), (30, 70, 1, 70)]


def recording(name: str) -> BasePolicy:
    """Policy ``name`` that also keeps the reservation of every pass, by time."""

    class Recording(POLICIES[name]):  # type: ignore[misc, valid-type]
        def setup(self, sim):
            super().setup(sim)
            self.reservations: dict[float, Reservation | None] = {}

        def decide(self, sim):
            yield from super().decide(sim)
            self.reservations[sim.now] = self.reservation

    return Recording()


def run_example(name: str, rows, *, migration_cost: float = 0.0):
    """Run ``rows`` on the four two-tier nodes of the examples; return (jobs, engine, policy)."""
    jobs = make_jobs(rows, 4, estimate="exact")
    for job in jobs:
        job.set_cpu([0.5] * job.size, None, 0.5 * job.size)
    policy = recording(name)
    engine = Engine(
        jobs,
        Nodes(4, 2, fg_overhead=0.0, bg_efficiency=1.0),
        policy,
        migration_cost=migration_cost,
        record_segments=True,
    )
    engine.run()
    return jobs, engine, policy


def stays(engine: Engine, index: int) -> list[tuple[int, float, float, tuple[int, ...], str]]:
    """Job ``index``'s stays on VMs: (tier, from, to, nodes, how it ended), in time order."""
    job_id = engine.jobs[index].job_id
    found = [(tier, begin, end, nodes, how) for jid, tier, begin, end, nodes, how in engine.segments if jid == job_id]
    return sorted(found, key=lambda stay: (stay[1], stay[2]))


def metrics_of(jobs, engine: Engine) -> dict[str, float]:
    return run_metrics(job_records(jobs), 4, engine.overflow_seconds, kills=engine.kills, lost_work=engine.lost_work)


# -- example 1 ------------------------------------------------------------------------------------


def test_keasy_kills_a_background_job_and_starts_it_again_from_zero():
    jobs, engine, policy = run_example("keasy", EXAMPLE1)
    assert stays(engine, X) == [(BG, 0.0, 30.0, (P3, P0), "kill"), (FG, 30.0, 230.0, (P2, P3), "finish")]
    assert [(j.start_time, j.finish_time) for j in jobs] == [(0, 100), (0, 30), (0, 230)]
    x = jobs[X]
    assert x.last_start_time == 30 and x.migrations == 0  # a restart from zero restores nothing
    assert x.tier_time == [200.0, 30.0]
    assert (engine.kills, dict(engine.kills_by_job), engine.lost_progress, engine.lost_work) == (
        1,
        {X: 1},
        {X: 30.0},
        30.0,
    )
    metrics = metrics_of(jobs, engine)
    assert metrics["kills_per_job"] == 1 / 3
    assert metrics["lost_work"] == 30.0
    # Busy CPU-seconds: A 2 x 0.5 x 100, B 0.5 x 30, X 1.0 x 200 and the 30 discarded, over
    # 4 nodes x 230 s.
    assert metrics["utilization"] == pytest.approx((100 + 15 + 200 + 30) / (4 * 230))
    assert metrics["migrations_per_job"] == 0


def test_reasy_pins_the_background_job_and_switches_it_up_when_its_foreground_frees():
    jobs, engine, policy = run_example("reasy", EXAMPLE1)
    # Two foreground VMs idle from 30 (P2, P3), but X moves up only when A leaves P0 at 100.
    assert stays(engine, X) == [(BG, 0.0, 100.0, (P3, P0), "move"), (FG, 100.0, 200.0, (P3, P0), "finish")]
    assert [(j.start_time, j.finish_time) for j in jobs] == [(0, 100), (0, 30), (0, 200)]
    assert jobs[X].migrations == 0 and jobs[X].tier_time == [100.0, 100.0]
    assert engine.kills == 0 and engine.lost_work == 0.0
    assert policy.reservations[0] == Reservation(X, 30.0, 0, None)  # queued: EASY's own
    assert policy.reservations[30] == Reservation(X, 100.0, 1, (P3, P0))
    assert policy.reservations[100] is None  # nothing left blocked
    metrics = metrics_of(jobs, engine)
    assert (metrics["kills_per_job"], metrics["lost_work"]) == (0.0, 0.0)


def test_a_kill_restarts_at_no_migration_cost():
    # With migration_cost 20 the REASY swap costs nothing (same nodes), and the KEASY restart
    # from zero has nothing to restore: the schedules are those above.
    jobs, engine, _ = run_example("keasy", EXAMPLE1, migration_cost=20)
    assert jobs[X].finish_time == 230 and jobs[X].migrations == 0
    jobs, engine, _ = run_example("reasy", EXAMPLE1, migration_cost=20)
    assert jobs[X].finish_time == 200 and jobs[X].migrations == 0


# -- example 2 ------------------------------------------------------------------------------------


def test_reasy_reservation_for_a_background_job_uses_its_foreground_vms():
    jobs, engine, policy = run_example("reasy", EXAMPLE2)
    assert policy.reservations[30] == Reservation(X, 100.0, 1, (P3, P0))
    assert stays(engine, Z) == [(FG, 30.0, 530.0, (P2,), "finish")]  # the extra VM
    assert stays(engine, W) == [(FG, 30.0, 100.0, (P3,), "finish")]  # ends by the shadow
    assert stays(engine, Y) == [(BG, 30.0, 530.0, (P1, P2), "finish")]  # not backfilled
    assert stays(engine, X) == [(BG, 0.0, 100.0, (P3, P0), "move"), (FG, 100.0, 200.0, (P3, P0), "finish")]
    assert policy.reservations[100] == Reservation(Y, 530.0, 0, (P1, P2))
    assert policy.reservations[200] == Reservation(Y, 530.0, 2, (P1, P2))  # X gone: P0, P3 idle
    assert [(j.start_time, j.finish_time) for j in jobs] == [
        (0, 100),
        (0, 30),
        (0, 200),
        (30, 530),
        (30, 530),
        (30, 100),
    ]
    assert engine.kills == 0


def test_keasy_kills_each_background_job_that_must_move_elsewhere():
    jobs, engine, policy = run_example("keasy", EXAMPLE2)
    assert stays(engine, W) == [(BG, 30.0, 100.0, (P0,), "finish")]
    assert stays(engine, Y) == [(BG, 30.0, 100.0, (P1, P2), "kill"), (FG, 100.0, 600.0, (P0, P1), "finish")]
    assert stays(engine, Z) == [(BG, 30.0, 230.0, (P3,), "move"), (FG, 230.0, 530.0, (P3,), "finish")]
    assert policy.reservations[30] == Reservation(Y, 100.0, 0, None)  # EASY's, on any VMs
    assert (engine.kills, dict(engine.kills_by_job), engine.lost_progress) == (2, {X: 1, Y: 1}, {X: 30.0, Y: 70.0})
    metrics = metrics_of(jobs, engine)
    assert metrics["kills_per_job"] == 2 / 6
    assert metrics["lost_work"] == 30.0 + 70.0
    # Each job's own count, in its per-job record.
    kills = job_records(jobs, engine.kills_by_job)["kills"]
    assert [int(kills[i]) for i in range(len(jobs))] == [1 if i in (X, Y) else 0 for i in range(len(jobs))]


# -- the Kill decision ----------------------------------------------------------------------------


class Scripted(BasePolicy):
    """Starts queued jobs in queue order while they fit; at the times in ``kills``, first kills
    the running jobs named there and records the queue's order right after each kill."""

    name = "scripted-kills"

    def __init__(self, kills):
        self.kills = kills
        self.queue_after_kill: list[list[int]] = []

    def decide(self, sim):
        for index in self.kills.get(sim.now, ()):
            yield Kill(sim.jobs[index])
            self.queue_after_kill.append(list(sim.queue))
        for job in list(sim.queue.values()):
            if job.size > sim.platform.free_count():
                return
            yield Start(job)


def test_kill_discards_progress_and_requeues_the_job_in_its_place():
    # 10 nodes. A (10 nodes, 100 s) runs from 0; B (5 nodes) arrives at 10, when A is killed:
    # A is back in the queue ahead of B (it arrived first), restarts at once from zero with no
    # restore (migration cost 20 notwithstanding) and ends at 110; B then runs 110-115.
    jobs = make_jobs([(0, 100, 10, 100), (10, 5, 5, 5)], 10)
    policy = Scripted({10: [0]})
    engine = Engine(jobs, Nodes(10), policy, migration_cost=20, record_segments=True)
    engine.run()
    assert policy.queue_after_kill == [[0, 1]]
    a, b = jobs
    assert (a.start_time, a.last_start_time, a.finish_time, a.migrations) == (0, 10, 110, 0)
    assert (b.start_time, b.finish_time) == (110, 115)
    assert (engine.kills, engine.lost_progress, engine.lost_work) == (1, {0: 10.0}, 100.0)  # 10 s x 10 CPUs
    assert [s[5] for s in engine.segments if s[0] == a.job_id] == ["kill", "finish"]


def test_killing_a_job_that_is_not_running_is_a_policy_error():
    class KillQueued(BasePolicy):
        name = "kill-queued"

        def decide(self, sim):
            for job in list(sim.queue.values()):
                yield Kill(job)

    with pytest.raises(PolicyError, match=r"kill-queued.*cannot kill job 1: it is not running"):
        Engine(make_jobs([(0, 10, 1, 10)], 2), Nodes(2), KillQueued()).run()


def test_every_policy_reports_no_kills_where_nothing_is_killed():
    assert {"kills_per_job", "lost_work"} <= set(metric_names(1))
    jobs = make_jobs([(0, 10, 1, 10), (1, 10, 2, 10)], 2)
    engine = Engine(jobs, Nodes(2), make_policy("easy"))
    engine.run()
    metrics = run_metrics(job_records(jobs), 2, kills=engine.kills, lost_work=engine.lost_work)
    assert (metrics["kills_per_job"], metrics["lost_work"]) == (0.0, 0.0)
    assert run_metrics(job_records(jobs), 2) == metrics


# -- the family -----------------------------------------------------------------------------------


def test_both_are_easy_with_a_background_step():
    for name in ("keasy", "reasy"):
        cls = POLICIES[name]
        assert issubclass(cls, Easy)
        assert set(cls.params) == {"bg_threshold"}
    assert POLICIES["keasy"].may_kill and not POLICIES["reasy"].may_kill


def test_one_tier_is_a_spec_error():
    from tiersweep.core.errors import SpecError
    from tiersweep.core.spec import validate_spec

    for name in ("keasy", "reasy"):
        with pytest.raises(SpecError, match="tiers"):
            validate_spec(
                {
                    "workload": {"trace": "unread.swf"},
                    "platform": {"kind": "nodes", "tiers": 1},
                    "policy": {"name": name},
                }
            )


# -- real log --------------------------------------------------------------------------------------


def kth_spec(kth_path, name: str, jobs: int = 2000, tiers: int = 2) -> dict:
    return {
        "seed": 1,
        "workload": {"trace": str(kth_path), "jobs": jobs},
        "platform": {"kind": "nodes", "tiers": tiers},
        "policy": {"name": name},
    }


def test_reasy_never_kills_on_kth_and_keasy_does(kth_path):
    # The first 2,000 KTH-SP2 jobs on 100 two-tier nodes, audited after every pass.
    reasy = run_spec(kth_spec(kth_path, "reasy"))
    assert_run_contract(reasy)
    assert reasy.engine.kills == 0 and reasy.engine.lost_work == 0.0
    assert not any(how == "kill" for *_, how in reasy.engine.segments)
    metrics = run_metrics(
        reasy.records, 100, reasy.engine.overflow_seconds, kills=reasy.engine.kills, lost_work=reasy.engine.lost_work
    )
    assert metrics["kills_per_job"] == 0.0
    assert (reasy.records["tier1_duration"] > 0).sum() > 100  # the background tier was used
    assert sum(reasy.policy.moves.values()) > 0  # and jobs were switched up from it
    # KEASY on the same jobs kills, and the contract (work discarded included) still holds.
    keasy = run_spec(kth_spec(kth_path, "keasy"))
    assert_run_contract(keasy)
    assert keasy.engine.kills > 0 and keasy.engine.lost_work > 0
    assert sum(keasy.policy.kills.values()) == keasy.engine.kills
    lost = sum(keasy.engine.lost_progress.get(j.index, 0.0) * j.cpu_sum for j in keasy.jobs)
    assert lost == pytest.approx(keasy.engine.lost_work)


def test_runs_are_deterministic(kth_path):
    for name in ("keasy", "reasy"):
        spec = kth_spec(kth_path, name, jobs=500, tiers=3)
        assert_records_identical(simulate(spec).jobs, simulate(spec).jobs, name)


def test_simulate_reports_the_new_metrics_for_every_policy(kth_path):
    for name in ("easy", "amcbf", "reasy"):
        metrics = simulate(kth_spec(kth_path, name, jobs=300)).metrics
        assert (metrics["kills_per_job"], metrics["lost_work"]) == (0.0, 0.0), name


def test_simulate_reports_keasy_kills(kth_path):
    result = simulate(kth_spec(kth_path, "keasy", jobs=2000))
    metrics = result.metrics
    assert metrics["kills_per_job"] > 0 and metrics["lost_work"] > 0
    # The per-job records say which jobs were killed, and how often: together, the metric.
    kills = result.jobs["kills"]
    assert kills.dtype.kind == "i" and kills.min() == 0 and kills.max() >= 1
    assert kills.sum() == pytest.approx(metrics["kills_per_job"] * metrics["jobs"])
    assert (simulate(kth_spec(kth_path, "reasy", jobs=2000)).jobs["kills"] == 0).all()


def test_tiersweep_run_prints_the_new_metrics(tmp_path, kth_path, capsys):
    import json

    from tiersweep.cli import main

    spec = tmp_path / "spec.yaml"
    spec.write_text(
        f"seed: 1\nworkload: {{trace: '{kth_path}', jobs: 300}}\nplatform: {{tiers: 2}}\npolicy: {{name: reasy}}\n"
    )
    assert main(["run", str(spec), "--json"]) == 0
    out = json.loads(capsys.readouterr().out)
    assert out["kills_per_job"] == 0.0 and out["lost_work"] == 0.0
    assert out["spec"]["policy"] == {"name": "reasy", "bg_threshold": 0.96}


def test_a_sweep_stores_the_new_metrics(tmp_path):
    pytest.importorskip("pyarrow")
    from sweep_helpers import small_config
    from tiersweep.sweep.driver import run_sweep
    from tiersweep.sweep.store import read_table

    config = small_config("kills", grid={"policy.name": ["keasy", "reasy", "easy"], "workload.load": [0.9]}, seeds=1)
    outcome = run_sweep(config, tmp_path, backend="serial", progress=False)
    assert not outcome.failed
    runs = read_table(tmp_path / "kills" / "runs").to_pandas()
    assert {"kills_per_job", "lost_work"} <= set(runs.columns)
    assert len(runs) == 3 and (runs["status"] == "ok").all()
    assert runs.set_index("policy.name").loc["reasy", "kills_per_job"] == 0.0


# -- the contract, with REASY's own promise -------------------------------------------------------------


class TestReasyNeverKillsInTheContractRuns(PolicyContract):
    """Every contract run of REASY (small corner cases, KTH-SP2 slices, a synthetic model) on
    two tiers: no kill, and nothing suspended or moved but background jobs switched up on
    their own nodes."""

    policy = "reasy"
    platform_params = {"tiers": 2, "migration_cost": 20.0}

    def check_run(self, run):
        super().check_run(run)
        assert run.engine.kills == 0 and not any(run.policy.suspensions.values())
        for job_id, _tier, _, _, _nodes, how in run.engine.segments:
            assert how in ("finish", "move"), (job_id, how)
        assert all(job.migrations == 0 for job in run.jobs)

    def audit(self, sim):
        super().audit(sim)
        reservation = sim.policy.reservation
        if reservation is not None and reservation.pinned is not None:
            head = sim.jobs[reservation.job]
            assert head.state != QUEUED and head.tier > 0 and tuple(map(int, head.nodes)) == reservation.pinned
            assert not math.isnan(reservation.shadow) and reservation.shadow > sim.now


def test_pinned_reservations_occur_on_kth(kth_path):
    # The audit above is not vacuous: REASY makes reservations for background jobs on KTH-SP2.
    pinned: list[Reservation] = []
    run = run_spec(
        kth_spec(kth_path, "reasy"),
        policy_mixins=(PinnedCounter,),
        configure_policy=lambda p: setattr(p, "pinned_seen", pinned),
    )
    assert run.engine.kills == 0
    assert len(pinned) > 0


class PinnedCounter:
    """Policy mixin: collects the reservations made for background jobs."""

    pinned_seen: list

    def decide(self, sim):
        yield from super().decide(sim)
        if self.reservation is not None and self.reservation.pinned is not None:
            self.pinned_seen.append(self.reservation)
