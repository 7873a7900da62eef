"""FWorkload (Feitelson 1996, calibrated preset): MODELS.md sections 4.2-4.5.

Analytic checks use typed-in targets from MODELS.md 4.2 (not values recomputed by the code
under test); sampled checks use fixed seeds and tolerances of a few standard errors computed
from the model's own moments. The 30-workload Monte-Carlo envelope and the million-run checks
are marked ``slow``.
"""

from __future__ import annotations

import math

import numpy as np
import pytest
from scipy import stats

from tiersweep.core.workloads import models
from tiersweep.core.workloads.models import feitelson as F
from tiersweep.core.workloads.offered_load import offered_load, scale_for_load
from tiersweep.core.workloads.rules import jobs_from_records
from tiersweep.core.workloads.swf import read_swf, write_swf

P = 320
SUBMIT, RUNTIME, ALLOCATED, REQUESTED, PRECEDING, THINK = 1, 3, 4, 7, 16, 17
POWERS = [2**k for k in range(9)]  # 1, 2, ..., 256

# MODELS.md 4.5, mean and sd over 30 workloads of 20,000 runs, default preset, P = 320.
ENVELOPE = {
    "p1": (0.262, 0.009),
    "pow2": (0.871, 0.008),
    "mean_size": (5.69, 0.37),
    "mean_runtime": (2420.0, 120.0),
    "median_runtime": (191.0, 6.0),
    "runtime_cv": (2.85, 0.09),
    "first_fraction": (0.558, 0.009),
    "mean_gap": (129.8, 1.0),
    "load": (0.77, 0.13),
    "load_f2": (0.39, 0.07),
}
DEFAULT_SEEDS = range(5)


def _gen(jobs: int, seed: int, **kwargs) -> np.ndarray:
    return F.generate(jobs, seed=seed, machine_size=P, **kwargs).records


def _is_pow2(n: np.ndarray) -> np.ndarray:
    n = n.astype(np.int64)
    return (n & (n - 1)) == 0


def _statistics(records: np.ndarray) -> dict[str, float]:
    size, runtime, submit = records[:, REQUESTED], records[:, RUNTIME], records[:, SUBMIT]
    first = records[:, PRECEDING] == -1
    parallel = size > 1
    return {
        "p1": float(np.mean(size == 1)),
        "pow2": float(np.mean(_is_pow2(size[parallel]))),
        "mean_size": float(size.mean()),
        "mean_runtime": float(runtime.mean()),
        "median_runtime": float(np.median(runtime)),
        "runtime_cv": float(runtime.std() / runtime.mean()),
        "first_fraction": float(first.mean()),
        "mean_gap": float(np.diff(submit[first]).mean()),
        "load": offered_load(submit, size, runtime, P),
    }


def _envelope_rows(seeds) -> list[dict[str, float]]:
    rows = []
    for seed in seeds:
        row = _statistics(_gen(20_000, seed))
        f2 = _gen(20_000, seed, load_scale=2.0)
        row["load_f2"] = offered_load(f2[:, SUBMIT], f2[:, REQUESTED], f2[:, RUNTIME], P)
        rows.append(row)
    return rows


def _chains(records: np.ndarray) -> np.ndarray:
    """Row index of each row's first run, following the field-17 links."""
    root = np.arange(len(records))
    previous = records[:, PRECEDING].astype(np.int64)
    for i in np.flatnonzero(previous > 0).tolist():
        root[i] = root[previous[i] - 1]
    return root


def _complete_chain_lengths(records: np.ndarray, r_max: int = 100) -> np.ndarray:
    """Observed R of the chains that cannot have been cut by the stop after N runs.

    Runs are emitted in submit order, so every run due before the last submit was emitted: a
    chain whose run r_max would be due before it is complete. The selection depends only on
    the chain's first submit and runtime, which are independent of R, so the lengths are an
    unbiased sample of R.
    """
    lengths = _first_run_chain_lengths(records, r_max)
    return lengths[lengths >= 0]


def _first_run_chain_lengths(records: np.ndarray, r_max: int = 100) -> np.ndarray:
    """Chain length per first run in submit order, -1 where the chain may have been cut."""
    first = np.flatnonzero(records[:, PRECEDING] == -1)
    lengths = np.bincount(_chains(records), minlength=len(records))[first]
    complete = records[first, SUBMIT] + (r_max - 1) * records[first, RUNTIME] < records[:, SUBMIT].max()
    return np.where(complete, lengths, -1)


def _unround_runtimes(runtime: np.ndarray, rng: np.random.Generator) -> np.ndarray:
    """Undo the rounding for a KS test: stored r >= 2 came from S in [r-0.5, r+0.5), stored 1
    from S in [0, 1.5); spread uniformly within (density varies < 1 % over a second)."""
    u = rng.random(len(runtime))
    return np.where(runtime == 1, 1.5 * u, runtime - 0.5 + u)


def _hyperexp_cdf(n: int, params=None):
    params = F.parameters() if params is None else params
    p = float(F.long_probability(params, n))
    m_s, m_l = params["m_s"], params["m_l"]
    return lambda x: p * (1 - np.exp(-np.asarray(x) / m_l)) + (1 - p) * (1 - np.exp(-np.asarray(x) / m_s))


@pytest.fixture(scope="module")
def big() -> np.ndarray:
    """200,000 runs (~111,000 first runs): the sampled distribution checks."""
    return _gen(200_000, 7)


@pytest.fixture(scope="module")
def first_runs(big) -> np.ndarray:
    return big[big[:, PRECEDING] == -1]


@pytest.fixture(scope="module")
def envelope_rows() -> list[dict[str, float]]:
    return _envelope_rows(DEFAULT_SEEDS)


# ---------------------------------------------------------------------------------------------
# Sizes


def test_size_pmf_matches_calibration_targets():
    pmf = F.size_pmf(F.parameters(), 256)
    n = np.arange(1, 257)
    assert pmf.shape == (256,) and pmf.sum() == pytest.approx(1.0, abs=1e-12)
    assert pmf[0] == pytest.approx(0.26, abs=5e-5)
    assert pmf[np.array(POWERS[1:]) - 1].sum() / (1 - pmf[0]) == pytest.approx(0.87, abs=5e-5)
    assert pmf @ n == pytest.approx(5.717, abs=5e-4)
    assert pmf @ ((n - 1) / 255) == pytest.approx(0.01850, abs=5e-6)
    assert pmf[:19].sum() == pytest.approx(0.957, abs=5e-4)
    typed = {1: 0.2600, 2: 0.4163, 3: 0.0197, 4: 0.1472, 5: 0.0091, 8: 0.0520, 16: 0.0184,
             32: 0.0065, 64: 0.0023, 128: 0.0008, 256: 0.0003}  # fmt: skip
    for size, value in typed.items():
        assert round(float(pmf[size - 1]), 4) == value, size


def test_size_pmf_untouched_base_matches_spec():
    """b1 = 1, b2 = 1 is the plain n^-1.5 harmonic (MODELS.md 4.2 table, last row)."""
    for max_size, p1, pow2_incl, mean in ((256, 0.4020, 0.6218, 12.29), (128, 0.4105, 0.6349, 8.71)):
        pmf = F.size_pmf(F.parameters(b1=1.0, b2=1.0), max_size)
        assert pmf[0] == pytest.approx(p1, abs=5e-4)
        assert pmf[np.array([p for p in POWERS if p <= max_size]) - 1].sum() == pytest.approx(pow2_incl, abs=5e-4)
        assert pmf @ np.arange(1, max_size + 1) == pytest.approx(mean, abs=5e-3)
    base = F.size_pmf(F.parameters(b1=1.0, b2=1.0), 256)
    assert base[1:][~_is_pow2(np.arange(2, 257))].sum() / (1 - base[0]) == pytest.approx(1 - 0.368, abs=5e-4)


def test_each_power_of_two_above_its_neighbours():
    pmf = F.size_pmf(F.parameters(), 256)
    for size in POWERS[1:]:
        assert pmf[size - 1] > pmf[size - 2], size  # n - 1
        if size < 256:
            assert pmf[size - 1] > pmf[size], size  # n + 1


def test_sampled_sizes_chi_square(first_runs):
    size = first_runs[:, REQUESTED].astype(np.int64)
    assert size.min() >= 1 and size.max() <= 256
    pmf = F.size_pmf(F.parameters(), 256)
    observed = np.bincount(size, minlength=257)[1:]
    expected = pmf * len(size)
    # Pool sizes with expected count < 5 into one cell.
    small = expected < 5
    obs = np.append(observed[~small], observed[small].sum())
    exp = np.append(expected[~small], expected[small].sum())
    result = stats.chisquare(obs, exp)
    assert result.pvalue > 1e-3, result
    # Sampled counts keep each power-of-two peak (where counts are large enough to tell).
    for s in (2, 4, 8, 16, 32):
        assert observed[s - 1] > observed[s - 2] and observed[s - 1] > observed[s], s


# ---------------------------------------------------------------------------------------------
# Runtimes


def _class_moments(params, lo: int, hi: int) -> tuple[float, float]:
    """Analytic E[S | lo <= n <= hi] and sd under the size pmf."""
    pmf = F.size_pmf(params, 256)[lo - 1 : hi]
    pmf = pmf / pmf.sum()
    p = F.long_probability(params, np.arange(lo, hi + 1))
    m1 = params["m_s"] + (params["m_l"] - params["m_s"]) * (pmf @ p)
    m2 = 2 * (pmf @ (p * params["m_l"] ** 2 + (1 - p) * params["m_s"] ** 2))
    return float(m1), math.sqrt(m2 - m1**2)


def test_runtime_analytic_moments():
    params = F.parameters()
    assert F.mean_runtime(params) == pytest.approx(2500.0, abs=0.5)
    m1, sd = _class_moments(params, 1, 256)
    assert m1 == pytest.approx(2500.0, abs=0.5)
    assert sd / m1 == pytest.approx(2.83, abs=0.005)
    # E[S | n] = m_s + (m_l - m_s) p(n): 2,435 s at n = 1 up to 5,975 s at n = 256.
    conditional = params["m_s"] + (params["m_l"] - params["m_s"]) * F.long_probability(params, np.arange(1, 257))
    assert conditional[0] == pytest.approx(2435, abs=1)
    assert conditional[-1] == pytest.approx(5975, abs=1)
    assert np.all(np.diff(conditional) > 0)
    assert F.long_probability(params, 1) == pytest.approx(0.1894, abs=5e-5)
    assert F.long_probability(params, 256) == pytest.approx(0.4894, abs=5e-5)
    # E[n S] = 18,494 against E[n] E[S] = 14,294.
    pmf, n = F.size_pmf(params, 256), np.arange(1, 257)
    assert pmf @ (n * conditional) == pytest.approx(18494, abs=1)


SIZE_CLASSES = ((1, 1), (2, 2), (3, 4), (5, 16), (17, 64), (65, 256))


def test_runtime_mean_by_size_class(first_runs):
    params = F.parameters()
    size, runtime = first_runs[:, REQUESTED], first_runs[:, RUNTIME]
    means = []
    for lo, hi in SIZE_CLASSES:
        chosen = runtime[(size >= lo) & (size <= hi)]
        m1, sd = _class_moments(params, lo, hi)
        se = sd / math.sqrt(len(chosen))
        assert abs(chosen.mean() - m1) < 4 * se, (lo, hi, chosen.mean(), m1, se)
        means.append(m1)
    assert np.all(np.diff(means) > 0)  # the analytic class means rise with size
    # Per-job mean runtime over first runs: 2,500 s.
    m1, sd = _class_moments(params, 1, 256)
    assert abs(runtime.mean() - m1) < 4 * sd / math.sqrt(len(runtime))
    assert runtime.std() / runtime.mean() > 1


def test_runtime_ks_given_size(first_runs):
    rng = np.random.default_rng(0)
    size, runtime = first_runs[:, REQUESTED], first_runs[:, RUNTIME]
    assert runtime.min() >= 1 and np.all(runtime == np.rint(runtime))
    for n in (1, 2, 4, 8):
        sample = _unround_runtimes(runtime[size == n], rng)
        assert stats.kstest(sample, _hyperexp_cdf(n)).pvalue > 1e-3, n
    # Power check: the n = 2 runtimes are not a plain exponential of the same mean.
    sample = _unround_runtimes(runtime[size == 2], rng)
    assert stats.kstest(sample, "expon", args=(0, sample.mean())).pvalue < 1e-6


# ---------------------------------------------------------------------------------------------
# Repetitions


def test_repeat_pmf_analytic():
    pmf = F.repeat_pmf(F.parameters())
    r = np.arange(1, 101)
    assert pmf.shape == (100,)
    assert pmf[0] == pytest.approx(0.7458, abs=5e-5)
    assert pmf @ r == pytest.approx(1.7995, abs=5e-5)
    assert 1 / (pmf @ r) == pytest.approx(0.556, abs=5e-4)  # share of first runs
    for r_max, mean in ((10, 1.509), (1000, 1.900)):
        other = F.repeat_pmf(F.parameters(r_max=r_max))
        assert other @ np.arange(1, r_max + 1) == pytest.approx(mean, abs=5e-4)


def test_repeat_counts_sampled(big):
    lengths = _complete_chain_lengths(big)
    assert len(lengths) > 50_000
    pmf = F.repeat_pmf(F.parameters())
    r = np.arange(1, 101)
    mean, var = pmf @ r, pmf @ r**2 - (pmf @ r) ** 2
    assert lengths.min() >= 1 and lengths.max() <= 100
    assert abs(np.mean(lengths == 1) - pmf[0]) < 4 * math.sqrt(pmf[0] * (1 - pmf[0]) / len(lengths))
    assert abs(lengths.mean() - mean) < 4 * math.sqrt(var / len(lengths))


def test_repeats_share_size_and_runtime_and_chain_exactly(big):
    records = big
    previous = records[:, PRECEDING]
    first = previous == -1
    assert np.all(records[first, THINK] == -1)
    repeat = np.flatnonzero(~first)
    assert len(repeat) > 0 and np.all(records[repeat, THINK] == 0)
    ref = previous[repeat].astype(np.int64) - 1
    assert np.all(previous[repeat] == np.rint(previous[repeat]))
    assert np.all((ref >= 0) & (ref < repeat))  # an earlier line
    assert np.all(records[ref, 0] == previous[repeat])
    for col in (REQUESTED, ALLOCATED, RUNTIME):
        assert np.array_equal(records[ref, col], records[repeat, col])
    assert np.array_equal(records[ref, SUBMIT] + records[ref, RUNTIME], records[repeat, SUBMIT])
    assert len(np.unique(ref)) == len(ref)  # each run has at most one successor


def test_record_fields(big):
    records = big
    assert records.shape == (200_000, 18) and records.dtype == np.float64
    assert np.array_equal(records[:, 0], np.arange(1, 200_001))
    submit = records[:, SUBMIT]
    assert np.all(submit == np.rint(submit)) and submit[0] > 0 and np.all(np.diff(submit) >= 0)
    assert np.all(records[:, RUNTIME] >= 1) and np.all(records[:, RUNTIME] == np.rint(records[:, RUNTIME]))
    assert np.array_equal(records[:, ALLOCATED], records[:, REQUESTED])
    assert np.all(records[:, 10] == 1) and np.all(records[:, 14] == -1)
    for col in (2, 5, 6, 8, 9, 11, 12, 13, 15):
        assert np.all(records[:, col] == -1), col
    jobs, report = jobs_from_records(records[:2000], capacity=P)
    assert len(jobs) == 2000 and report.dropped == 0 and report.reordered == 0 and report.size_fallback == 0


# ---------------------------------------------------------------------------------------------
# Arrivals


def test_first_run_gaps_exponential(first_runs):
    gaps = np.diff(first_runs[:, SUBMIT])
    n = len(gaps)
    # Rounded submits: spread each gap over its second before the KS test.
    jittered = gaps + np.random.default_rng(1).random(n) - 0.5
    assert stats.kstest(jittered, "expon", args=(0, 130.0)).pvalue > 1e-3
    assert abs(gaps.mean() - 130.0) < 4 * 130.0 / math.sqrt(n)
    assert gaps.std() / gaps.mean() == pytest.approx(1.0, abs=0.03)
    # No daily cycle: first runs fall uniformly over the hours of the day.
    hours = (first_runs[:, SUBMIT] // 3600 % 24).astype(np.int64)
    assert stats.chisquare(np.bincount(hours, minlength=24)).pvalue > 1e-3


# ---------------------------------------------------------------------------------------------
# Monte-Carlo envelopes and the published figure


def test_envelopes_default_seeds(envelope_rows):
    for seed, row in zip(DEFAULT_SEEDS, envelope_rows):
        for key, (mean, sd) in ENVELOPE.items():
            assert abs(row[key] - mean) <= 3 * sd, (seed, key, row[key], mean, sd)
    # The average over the seeds: within 3 sd of the difference of two means.
    k = len(envelope_rows)
    for key, (mean, sd) in ENVELOPE.items():
        average = np.mean([row[key] for row in envelope_rows])
        assert abs(average - mean) <= 3 * sd * math.sqrt(1 / k + 1 / 30), (key, average, mean)


def test_published_mean_runtime(envelope_rows):
    """Liu et al. 2013: 600 s is "24 percent of the average job execution time" (~2,500 s,
    i.e. 2,449-2,553 s for a percentage rounded to an integer)."""
    assert 600 / 0.245 <= F.mean_runtime(F.parameters()) <= 600 / 0.235
    for row in envelope_rows:  # mean over runs: 2,420 +- 120 (cut chains of long jobs)
        assert abs(row["mean_runtime"] - 2420) <= 3 * 120
    average = np.mean([row["mean_runtime"] for row in envelope_rows])
    assert abs(average - 2500) <= 0.08 * 2500


# ---------------------------------------------------------------------------------------------
# load_scale, determinism, round trip


def test_load_scale_changes_only_first_run_gaps():
    one, two = _gen(20_000, 3), _gen(20_000, 3, load_scale=2.0)
    a, b = one[one[:, PRECEDING] == -1], two[two[:, PRECEDING] == -1]
    k = min(len(a), len(b))
    assert k > 10_000
    for col in (REQUESTED, RUNTIME):  # the k-th first run is the same job
        assert np.array_equal(a[:k, col], b[:k, col])
    # Gaps are scaled before rounding: |rint(2t) - 2 rint(t)| <= 1.
    assert np.all(np.abs(b[:k, SUBMIT] - 2 * a[:k, SUBMIT]) <= 1)
    # Repeat counts: chains complete in both workloads (-1: possibly cut) have the same length.
    length_one, length_two = _first_run_chain_lengths(one)[:k], _first_run_chain_lengths(two)[:k]
    both = (length_one >= 0) & (length_two >= 0)
    assert both.sum() > 5_000
    assert np.array_equal(length_one[both], length_two[both])
    load_one = offered_load(one[:, SUBMIT], one[:, REQUESTED], one[:, RUNTIME], P)
    load_two = offered_load(two[:, SUBMIT], two[:, REQUESTED], two[:, RUNTIME], P)
    assert load_two < load_one


def test_scale_for_load_reaches_a_target():
    """target_load use: root-find f on the sample; the jobs do not move with f."""

    def load_of(f: float) -> float:
        records = _gen(20_000, 3, load_scale=f)
        return offered_load(records[:, SUBMIT], records[:, REQUESTED], records[:, RUNTIME], P)

    f = scale_for_load(load_of, 0.5)
    assert load_of(f) == pytest.approx(0.5, rel=1e-3)
    assert f > 1


def test_fewer_jobs_is_a_prefix():
    """Job i's draws depend only on (seed, i), and the merge is sequential."""
    assert np.array_equal(_gen(3_000, 11), _gen(10_000, 11)[:3_000])


def test_deterministic_and_seed_dependent():
    first, again = F.generate(5_000, seed=42, machine_size=P), F.generate(5_000, seed=42, machine_size=P)
    assert np.array_equal(first.records, again.records) and dict(first.header) == dict(again.header)
    assert not np.array_equal(first.records, _gen(5_000, 43))
    via_registry = models.generate("feitelson96", 5_000, seed=42, machine_size=P)
    assert np.array_equal(via_registry.records, first.records)


def test_swf_round_trip_and_header(tmp_path):
    out = F.generate(3_000, seed=5, machine_size=P, load_scale=1.5)
    path = tmp_path / "feitelson.swf"
    write_swf(path, out.records, out.header)
    log = read_swf(path)
    assert np.array_equal(log.records, out.records)
    assert {k: log.header[k] for k in out.header} == dict(out.header)
    header = out.header
    assert header["Version"] == "2" and header["MaxJobs"] == header["MaxRecords"] == "3000"
    assert header["MaxNodes"] == "320" and header["Model"] == "feitelson96"
    assert header["Preset"] == "calibrated" and header["Seed"] == "5" and float(header["LoadScale"]) == 1.5
    assert header["MaxSize"] == "256" and header["RepeatMode"] == "open_approx"
    assert "Acknowledge" in header and "Information" in header


# ---------------------------------------------------------------------------------------------
# Parameters and errors


def test_module_interface():
    assert F.NAME == "feitelson96" and F.DEFAULT_PRESET == "calibrated" and "calibrated" in F.PRESETS
    preset = F.PRESETS["calibrated"]
    assert preset["b1"] == 2.54247 and preset["b2"] == 11.5137 and preset["c0"] == 0.189365
    assert (preset["m_s"], preset["m_l"], preset["c1"], preset["r_max"]) == (200, 12000, 0.3, 100)
    assert (preset["zipf_exponent"], preset["size_exponent"], preset["mean_gap"]) == (2.5, 1.5, 130.0)
    empty = F.generate(0, seed=0, machine_size=P)
    assert empty.records.shape == (0, 18)


def test_unknown_override_names_key_and_lists_valid():
    with pytest.raises(ValueError, match="bogus") as info:
        F.generate(10, seed=0, machine_size=P, bogus=1)
    for key in (
        "b1",
        "b2",
        "m_s",
        "m_l",
        "c0",
        "c1",
        "r_max",
        "zipf_exponent",
        "size_exponent",
        "mean_gap",
        "repeat_mode",
    ):
        assert key in str(info.value)


@pytest.mark.parametrize(
    "kwargs, pattern",
    [
        ({"repeat_mode": "on_completion"}, "simulator support"),
        ({"repeat_mode": "closed"}, "open_approx"),
        ({"preset": "paper"}, "calibrated"),
        ({"max_size": 512}, "machine_size"),
        ({"load_scale": 0.0}, "load_scale"),
        ({"load_scale": math.inf}, "load_scale"),
        ({"m_l": -1.0}, "m_l"),
        ({"r_max": 0}, "r_max"),
        ({"c1": 3.0}, r"p\(n\)"),
    ],
)
def test_invalid_arguments(kwargs, pattern):
    with pytest.raises(ValueError, match=pattern):
        F.generate(10, seed=0, machine_size=P, **kwargs)


def test_overrides_are_not_resolved():
    """Changing m_l without c0 keeps c0 = 0.189365: the mean runtime moves off 2,500 s."""
    params = F.parameters(m_l=20_000.0)
    assert params["c0"] == 0.189365
    assert F.mean_runtime(params) == pytest.approx(200 + 19_800 * (0.189365 + 0.3 * 0.0185), rel=1e-4)
    out = F.generate(2_000, seed=1, machine_size=P, r_max=1, max_size=64)
    assert np.all(out.records[:, PRECEDING] == -1) and out.records[:, REQUESTED].max() <= 64
    assert out.header["MaxSize"] == "64" and "r_max=1" in out.header["Overrides"]
    # Same draws, other size range: the sizes stream is shared, the pmf differs.
    assert F.size_pmf(F.parameters(), 64).sum() == pytest.approx(1.0)


# ---------------------------------------------------------------------------------------------
# Slow: the full envelope and large samples


@pytest.mark.slow
def test_envelopes_thirty_workloads():
    rows = _envelope_rows(range(100, 130))
    for key, (mean, sd) in ENVELOPE.items():
        values = np.array([row[key] for row in rows])
        # Mean over 30 against the published mean over 30: 3 sd of the difference.
        assert abs(values.mean() - mean) <= 3 * sd * math.sqrt(2 / 30), (key, values.mean(), mean)
        # Spread comparable to the envelope's (sd of a 30-sample sd is ~13 %, more for
        # heavy-tailed statistics).
        assert 0.5 * sd <= values.std(ddof=1) <= 1.6 * sd, (key, values.std(ddof=1), sd)
        # Individual workloads within +-3 sd; allow one excursion in 30 for the heavy tails.
        assert np.sum(np.abs(values - mean) > 3 * sd) <= 1, (key, values)


@pytest.mark.slow
def test_runtime_by_size_class_large_sample():
    records = _gen(1_000_000, 17)
    first = records[records[:, PRECEDING] == -1]
    params = F.parameters()
    size, runtime = first[:, REQUESTED], first[:, RUNTIME]
    rows = []
    for lo, hi in SIZE_CLASSES:
        chosen = runtime[(size >= lo) & (size <= hi)]
        m1, sd = _class_moments(params, lo, hi)
        se = sd / math.sqrt(len(chosen))
        assert abs(chosen.mean() - m1) < 4 * se, (lo, hi)
        rows.append((chosen.mean(), se))
    # Large jobs run longer: the 65-256 class is well above the serial jobs.
    (m_small, se_small), (m_large, se_large) = rows[0], rows[-1]
    assert m_large - m_small > 4 * math.hypot(se_small, se_large)
    rng = np.random.default_rng(2)
    for n in (1, 2, 4, 8, 16, 32):
        assert stats.kstest(_unround_runtimes(runtime[size == n], rng), _hyperexp_cdf(n)).pvalue > 1e-3, n


@pytest.mark.slow
def test_repeat_counts_chi_square_large_sample():
    lengths = _complete_chain_lengths(_gen(1_000_000, 19))
    pmf = F.repeat_pmf(F.parameters())
    observed = np.bincount(lengths, minlength=101)[1:]
    expected = pmf * len(lengths)
    small = expected < 5
    obs = np.append(observed[~small], observed[small].sum())
    exp = np.append(expected[~small], expected[small].sum())
    assert stats.chisquare(obs, exp).pvalue > 1e-3
