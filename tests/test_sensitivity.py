"""Sampled designs and sensitivity indices, end to end: a YAML config with ``sample:`` runs
through the real sweep pipeline and store (serial backend), resumes after an interruption,
grows ``n`` by computing only the new points, and gives indices that match an analytic test
function of known indices (Ishigami; a linear function for Morris), computed as a run metric
by a plug-in platform registered for the test."""

from __future__ import annotations

import json
import math
import textwrap
from pathlib import Path

import numpy as np
import pandas as pd
import pytest

from tiersweep.analysis import find_results
from tiersweep.analysis.sensitivity import MetricSensitivity, analyse, compare_rankings
from tiersweep.cli import main
from tiersweep.core.errors import SpecError, TiersweepError
from tiersweep.core.params import Param, non_negative_number, number_in
from tiersweep.core.platforms import PLATFORMS, Nodes, register_platform
from tiersweep.sweep.config import expand, load_sweep_config, parse_sweep_config
from tiersweep.sweep.driver import run_sweep

PI = math.pi
#: Ishigami's (a=7, b=0.1) first-order and total indices (Sobol' & Levitan 1999).
ISHIGAMI_S1 = {"platform.x1": 0.3139, "platform.x2": 0.4424, "platform.x3": 0.0}
ISHIGAMI_ST = {"platform.x1": 0.5576, "platform.x2": 0.4424, "platform.x3": 0.2437}
#: The linear metric's coefficients: its Morris mu_star is |c| x the range, its sigma 0.
LINEAR = {"platform.x1": 3.0, "platform.x2": -2.0, "platform.x3": 0.5}


def ishigami(x1: float, x2: float, x3: float) -> float:
    return math.sin(x1) + 7 * math.sin(x2) ** 2 + 0.1 * x3**4 * math.sin(x1)


class AnalyticNodes(Nodes):
    """``nodes`` whose run metrics include analytic functions of its parameters x1, x2, x3:
    a stand-in simulator of known indices, run by the real pipeline. ``noise`` adds a draw of
    the run's seed (one per seed: common random numbers) to the ``noisy`` metric."""

    kind = "analytic_test"
    _x = Param(number_in(-4.0, 4.0, "a test input"), default=0.0, doc="test input")
    noise = Param(non_negative_number, default=0.0, doc="the spread of the noisy metric's seed draw")
    params = {**Nodes.params, "x1": _x, "x2": _x, "x3": _x, "noise": noise}
    EXTRA_METRICS = ("ishigami", "linear", "noisy", "seed_only")

    def __init__(self, nodes, tiers=1, *, x1=0.0, x2=0.0, x3=0.0, noise=0.0, seed=0, **rest):
        super().__init__(nodes, tiers, seed=seed, **rest)
        linear = sum(c * x for c, x in zip(LINEAR.values(), (x1, x2, x3)))
        self._metrics = {
            "ishigami": ishigami(x1, x2, x3),
            "linear": linear,
            "noisy": linear + noise * seed_draw(seed),
            "seed_only": noise * seed_draw(seed),
        }

    def extra_metrics(self, records, span_start, span_end):
        return dict(self._metrics)


def seed_draw(seed: int) -> float:
    return float(np.random.default_rng(seed).standard_normal())


@pytest.fixture(autouse=True)
def analytic_platform():
    register_platform(AnalyticNodes)
    try:
        yield
    finally:
        PLATFORMS.pop("analytic_test", None)


def config_file(tmp_path, method: str, n: int, seeds: int = 1, extra: str = "", name: str | None = None):
    path = tmp_path / f"{name or method}.yaml"
    path.write_text(
        textwrap.dedent(
            f"""\
            name: {name or method}
            base:
              workload: {{model: jann97, jobs: 2}}
              platform: {{kind: analytic_test, nodes: 4, noise: 1.0}}
            sample:
              method: {method}
              n: {n}
              seed: 3
              params:
                platform.x1: {{low: {-PI!r}, high: {PI!r}}}
                platform.x2: {{low: {-PI!r}, high: {PI!r}}}
                platform.x3: {{low: {-PI!r}, high: {PI!r}}}
            {extra}
            seeds: {seeds}
            """
        )
    )
    return path


@pytest.mark.slow
def test_sobol_indices_of_ishigami_through_the_pipeline_resume_and_growth(tmp_path):
    out = tmp_path / "out"
    config = load_sweep_config(config_file(tmp_path, "sobol", 64))
    assert len(expand(config)) == 64 * 5
    stored = []

    def interrupt(count):
        stored.append(count)
        if count >= 40:
            raise KeyboardInterrupt

    with pytest.raises(KeyboardInterrupt):
        run_sweep(config, out, backend="serial", progress=False, on_batch=interrupt)
    again = run_sweep(config, out, backend="serial", progress=False)
    assert again.stored_before == stored[-1] and again.computed == 320 - stored[-1]
    # Growing n computes only the new base points: the first 64 are the same design points.
    bigger = load_sweep_config(config_file(tmp_path, "sobol", 256))
    grown = run_sweep(bigger, out, backend="serial", progress=False)
    assert grown.stored_before == 320 and grown.computed == 256 * 5 - 320
    result = analyse(out / "sobol", metrics=["ishigami"], resamples=500, confidence=0.99)
    (m,) = result.metrics
    assert m.units == 256
    for key in ISHIGAMI_S1:
        row = m.table.loc[key]
        assert row["S1_low"] <= ISHIGAMI_S1[key] <= row["S1_high"], (key, row.to_dict())
        assert row["ST_low"] <= ISHIGAMI_ST[key] <= row["ST_high"], (key, row.to_dict())
        assert row["ST_high"] - row["ST_low"] < 0.6  # an interval that says something
    assert m.ranking() == ["platform.x1", "platform.x2", "platform.x3"]
    # x3 has no first-order effect: its estimate is within noise of 0 and said so.
    assert any(w.startswith("platform.x3: S1") for w in m.warnings)
    assert set(m.convergence["units"]) == {64, 128, 256}
    assert "one seed per design point" in " ".join(m.warnings)


def linear_shares() -> dict[str, float]:
    """The linear metric's first-order (= total) indices: c_i^2 over their sum (uniform inputs
    of one range)."""
    total = sum(c * c for c in LINEAR.values())
    return {key: c * c / total for key, c in LINEAR.items()}


def test_sobol_study_resumes_grows_and_matches_a_linear_function(tmp_path):
    out = tmp_path / "out"
    config = load_sweep_config(config_file(tmp_path, "sobol", 16, seeds=2))
    assert len(expand(config)) == 16 * 5 * 2

    def interrupt(count):
        if count >= 30:
            raise KeyboardInterrupt

    with pytest.raises(KeyboardInterrupt):
        run_sweep(config, out, backend="serial", progress=False, on_batch=interrupt)
    again = run_sweep(config, out, backend="serial", progress=False)
    assert again.stored_before >= 30 and again.stored_before + again.computed == 160
    grown = run_sweep(
        load_sweep_config(config_file(tmp_path, "sobol", 32, seeds=2)), out, backend="serial", progress=False
    )
    assert (grown.stored_before, grown.computed) == (160, 160)
    result = analyse(out / "sobol", metrics=["linear", "noisy"], resamples=300)
    linear, noisy = result.metrics
    for key, share in linear_shares().items():
        row = linear.table.loc[key]
        assert row["S1_low"] <= share <= row["S1_high"], (key, row.to_dict())
        assert row["ST_low"] <= share <= row["ST_high"], (key, row.to_dict())
    assert linear.table.loc["seed", "ST"] == pytest.approx(0, abs=1e-12)  # the seed moves nothing in this metric
    # The noise is one draw per seed, at every design point alike (common random numbers): its
    # share is the variance over seeds at a point, here known exactly.
    # (The seeds are a sample of workloads: the noise's variance is estimated with ddof=1.)
    z = np.var([seed_draw(s) for s in config.seeds], ddof=1)
    inputs = sum(c * c for c in LINEAR.values()) * (2 * PI) ** 2 / 12
    expected = z / (inputs + z)
    assert noisy.table.loc["seed", "ST"] == pytest.approx(expected, rel=0.35)
    # An additive draw: the seed acts alone, so its first-order share is its total share.
    assert noisy.table.loc["seed", "S1"] == pytest.approx(noisy.table.loc["seed", "ST"])
    assert noisy.table.loc["seed", "ST_low"] <= noisy.table.loc["seed", "ST"] <= noisy.table.loc["seed", "ST_high"]
    assert "sobol design, n=32" in result.text()
    with pytest.raises(TiersweepError, match="second-order indices need sample.second_order: true"):
        analyse(out / "sobol", metrics=["linear"], second_order=True)


def test_morris_screening_on_short_runs_confirmed_at_full_size(tmp_path, capsys):
    out = tmp_path / "out"
    screen = load_sweep_config(config_file(tmp_path, "morris", 10, seeds=3, name="screen"), ["workload.jobs=1"])
    run_sweep(screen, out, backend="serial", progress=False)
    assert run_sweep(screen, out, backend="serial", progress=False).computed == 0  # all stored
    screening = analyse(out / "screen", metrics=["linear", "noisy", "seed_only"], resamples=300)
    linear, noisy, seed_only = screening.metrics
    width = 2 * PI
    for key, c in LINEAR.items():
        # Elementary effects of a linear function are exact: |c| x the range, no spread, and
        # the seed's draw cancels in each step (both ends of a step share the seed).
        for m in (linear, noisy):
            assert m.table.loc[key, "mu_star"] == pytest.approx(abs(c) * width)
            assert m.table.loc[key, "sigma"] == pytest.approx(0, abs=1e-9)
    assert noisy.table.loc["seed", "ST"] > 0 and linear.table.loc["seed", "ST"] == pytest.approx(0, abs=1e-12)
    assert linear.important(0.2) == ["platform.x1", "platform.x2"]
    # A metric the workload draw alone moves: all of its variance is the seed's, none more.
    assert seed_only.table.loc["seed", "ST"] == pytest.approx(1.0)
    assert (seed_only.table.loc[list(LINEAR), "mu_star"] == 0).all()
    full = load_sweep_config(config_file(tmp_path, "sobol", 16, name="full"))
    run_sweep(full, out, backend="serial", progress=False)
    (confirmed,) = analyse(out / "full", metrics=["linear"], resamples=300).metrics
    check = compare_rankings(linear, confirmed)
    assert check.rho == pytest.approx(1.0) and check.low > 0
    assert check.verdict == "the screening ranking holds at full size"
    assert "Spearman rho = 1.000" in check.text()
    # The same from the command line, with the indices written as CSV.
    csv = tmp_path / "indices.csv"
    argv = ["sensitivity", str(out / "full"), "--metric", "linear", "--screening", str(out / "screen")]
    argv += ["--resamples", "50"]
    assert main([*argv, "--csv", str(csv)]) == 0
    printed = capsys.readouterr().out
    assert "the screening ranking holds at full size" in printed and "convergence of ST at 4/8/16 units" in printed
    table = pd.read_csv(csv)
    assert list(table["parameter"]) == [*LINEAR, "seed"] and {"S1", "S1_low", "ST_high"} <= set(table.columns)


def test_latin_first_order_indices(tmp_path):
    out = tmp_path / "out"
    config = load_sweep_config(config_file(tmp_path, "latin", 64, extra="  block: 32"))
    run_sweep(config, out, backend="serial", progress=False)
    (m,) = analyse(out / "latin", metrics=["linear"], resamples=300).metrics
    shares = linear_shares()
    assert m.ranking() == list(shares)
    assert m.table.loc["platform.x1", "S1"] == pytest.approx(shares["platform.x1"], abs=0.15)


@pytest.mark.parametrize("method", ["sobol", "morris", "latin"])
def test_a_design_of_n_points_is_the_start_of_one_of_2n(method):
    raw = {
        "name": "d",
        "base": {},
        "sample": {
            "method": method,
            "n": 8,
            "params": {
                "workload.load": {"low": 0.5, "high": 1.0},
                "platform.nodes": {"low": 2, "high": 64, "log": True, "integer": True},
            },
        },
    }
    if method == "latin":
        raw["sample"]["block"] = 8
    small = parse_sweep_config(raw).design
    big = parse_sweep_config({**raw, "sample": {**raw["sample"], "n": 16}}).design
    assert big.points()[: small.size] == small.points()
    assert all(isinstance(p["platform.nodes"], int) and 2 <= p["platform.nodes"] <= 64 for p in big.points())


LOAD = {"workload.load": {"low": 0, "high": 1}}
LG = {"workload.load": {"low": 0, "high": 1, "lg": True}}
LOG = {"workload.load": {"low": 0, "high": 1, "log": True}}


@pytest.mark.parametrize(
    "sample, message",
    [
        ({"method": "grid", "n": 4, "params": LOAD}, r"^sample.method: expected one of sobol"),
        ({"method": "sobol", "n": 12, "params": LOAD}, r"^sample.n: a Sobol design needs a power of 2 .* give 8 or 16"),
        (
            {"method": "sobol", "n": 8, "params": {"workload.load": {"low": 1, "high": 0}}},
            r"^sample.params.\S+: expected low",
        ),
        (
            {"method": "sobol", "n": 8, "params": {"policy.name": {"low": 0, "high": 1}}},
            r"^sample.params.policy.name: already",
        ),
        ({"method": "morris", "n": 8, "levels": 3, "params": LOAD}, r"^sample.levels: expected an even"),
        ({"method": "sobol", "n": 8, "params": LG}, r"^sample.params.workload.load.lg: unknown key"),
        ({"method": "sobol", "n": 8, "params": LOG}, r"^sample.params.workload.load.low: a log range needs low > 0"),
    ],
)
def test_bad_sample_sections_are_refused_with_the_key_path(sample, message):
    with pytest.raises(SpecError, match=message):
        parse_sweep_config({"name": "d", "base": {}, "grid": {"policy.name": ["easy"]}, "sample": sample})


def test_set_refuses_a_sampled_key(tmp_path):
    with pytest.raises(SpecError, match=r"--set platform.x1: platform.x1 is varied by the config's sample"):
        load_sweep_config(config_file(tmp_path, "sobol", 4), ["platform.x1=1"])


def test_the_report_and_the_notebook_of_a_sampled_design(tmp_path, monkeypatch, capsys):
    from tiersweep.analysis.report import write_report

    out = tmp_path / "results"
    name = "sensitivity_smcbf_screen"  # (the folder the notebook's cell looks for)
    run_sweep(
        load_sweep_config(config_file(tmp_path, "morris", 4, seeds=2, name=name)), out, backend="serial", progress=False
    )
    folder = out / name
    page = write_report(folder).read_text()
    assert "<h2 id='sensitivity'>" in page and "mu_star" in page
    figures = sorted(p.name for p in (folder / "report" / "figures").glob("sensitivity_*.png"))
    kinds, metrics = ("convergence", "indices"), ("mean_bsld", "utilization")
    assert figures == [f"sensitivity_{kind}_{m}.png" for kind in kinds for m in metrics]
    # The sampled parameters are not drawn as curves (their points scatter over all at once).
    assert not list((folder / "report" / "figures").glob("platform_x*"))
    # The notebook's example cell, run from a folder below the results, as Jupyter runs it.
    notebook = Path(__file__).resolve().parents[1] / "analysis" / "notebooks" / "explore.ipynb"
    cells = [c for c in json.loads(notebook.read_text())["cells"] if c["cell_type"] == "code"]
    (cell,) = [c for c in cells if "sensitivity" in "".join(c["source"])]
    monkeypatch.delenv("TIERSWEEP_RESULTS", raising=False)
    below = tmp_path / "analysis" / "notebooks"
    below.mkdir(parents=True)
    monkeypatch.chdir(below)
    namespace: dict = {"find_results": find_results}
    exec(compile("".join(cell["source"]), str(notebook), "exec"), namespace)  # noqa: S102 - the project's own notebook
    assert namespace["screening"].root == str(folder)
    assert "morris design, n=4" in capsys.readouterr().out


@pytest.mark.slow
def test_second_order_indices_of_ishigami(tmp_path):
    # Ishigami's only interaction is x1 x x3: S13 = ST1 - S1 = 0.2437, S12 = S23 = 0.
    out = tmp_path / "out"
    path = config_file(tmp_path, "sobol", 128, extra="  second_order: true")
    run_sweep(load_sweep_config(path), out, backend="serial", progress=False)
    (m,) = analyse(out / "sobol", metrics=["ishigami"], second_order=True, resamples=500, confidence=0.99).metrics
    x1, x2, x3 = LINEAR
    expected = {(x1, x2): 0.0, (x1, x3): 0.2437, (x2, x3): 0.0}
    for row in m.second_order.itertuples():
        assert row.S2_low <= expected[(row.a, row.b)] <= row.S2_high, row


def test_a_sampled_range_the_spec_refuses_is_named_by_its_end(tmp_path):
    config = parse_sweep_config(
        {
            "name": "d",
            "base": {"workload": {"model": "jann97", "jobs": 5}, "platform": {"nodes": 4}},
            "sample": {"method": "sobol", "n": 4, "params": {"platform.migration_cost": {"low": -100, "high": 100}}},
        }
    )
    with pytest.raises(
        SpecError,
        match=r"^sample.params.platform.migration_cost.low: -100.0 is not a valid value: "
        r"platform.migration_cost: expected a non-negative number",
    ):
        expand(config)
    # A parameter valid only with the grid's values is checked with them.
    fine = parse_sweep_config(
        {
            "name": "d",
            "base": {"workload": {"model": "jann97", "jobs": 5}, "platform": {"nodes": 4, "tiers": 2}},
            "grid": {"policy.name": ["smcbf"]},
            "sample": {"method": "sobol", "n": 4, "params": {"policy.bg_threshold": {"low": 0.5, "high": 1.0}}},
        }
    )
    assert len(expand(fine)) == 4 * 2  # (with one parameter AB_1 is B: the same cell, stored once)


@pytest.mark.parametrize("method, n", [("morris", 4), ("sobol", 4)])
def test_a_study_too_small_says_by_how_much_and_which_n_would_do(tmp_path, method, n):
    # The warning used to give the limits alone ("more than 0.05 ... wider than 0.2"), which
    # for Morris are shares of the largest mu_star, not the metric's units the table shows.
    out = tmp_path / "out"
    config = load_sweep_config(config_file(tmp_path, method, n, seeds=2))
    run_sweep(config, out, backend="serial", progress=False)
    (m,) = analyse(out / method, metrics=["ishigami"], resamples=200).metrics
    assert not m.converged
    (warning,) = [w for w in m.warnings if "look too small" in w]
    # The figures, recomputed from the convergence table the result carries.
    c = m.convergence[m.convergence["index"] == m.score].set_index(["units", "parameter"])
    full, half = c.xs(n, level="units"), c.xs(n // 2, level="units")
    scale = full["estimate"].abs().max() if method == "morris" else 1.0
    moved = ((full["estimate"] - half["estimate"]).abs() / scale).sort_values()
    width = ((full["high"] - full["low"]) / scale).sort_values()
    share = " of the largest mu_star" if method == "morris" else ""
    assert f"{m.score} of {moved.index[-1]} moved by {moved.iloc[-1]:.3g}{share} between n/2 and n" in warning
    assert f"the widest interval, {width.index[-1]}'s, is {width.iloc[-1]:.3g}{share} wide" in warning
    wanted = max(2 * n, math.ceil(n * (width.iloc[-1] / 0.2) ** 2))
    if method == "sobol":
        wanted = 2 ** math.ceil(math.log2(wanted))
    assert warning.endswith(f"try sample.n: {wanted}") and wanted > n


def _screen(points: dict[str, float], replicates: np.ndarray) -> MetricSensitivity:
    """A Morris result of the given mu_star estimates and bootstrap replicates (no run)."""
    table = pd.DataFrame({"mu_star": points})
    return MetricSensitivity(
        "m", "morris", {}, 10, 2, table, None, pd.DataFrame(), [], False, replicates, confidence=0.9
    )


def test_a_screening_drops_a_parameter_only_where_its_interval_says_it_is_small():
    # a leads (100). b's estimate is 5% of a's, but its replicates spread to 20%: within noise of
    # the cut, kept. c's are 1-3%: dropped. (The old rule cut the point estimates: b dropped.)
    rng = np.random.default_rng(0)
    a = rng.uniform(90, 110, 1000)
    b = rng.uniform(0, 20, 1000)
    c = rng.uniform(1, 3, 1000)
    m = _screen({"a": 100.0, "b": 5.0, "c": 2.0}, np.stack([a, b, c], axis=1))
    shares = m.upper_shares()
    # The upper end of a 90% interval of each replicate's share of its largest, computed here
    # directly: the expanded percentile interval of 10 units reads the 1 - P(Z > z) percentile,
    # z = sqrt(10/9) x t(0.95; 9 df).
    from scipy import stats

    upper = 1 - stats.norm.sf(math.sqrt(10 / 9) * stats.t.ppf(0.95, 9))
    assert shares["b"] == pytest.approx(np.quantile(b / np.maximum(a, np.maximum(b, c)), upper))
    assert 0.1 < shares["b"] < 0.25 and shares["c"] < 0.04 and shares["a"] == 1.0
    assert m.important(0.1) == ["a", "b"]
    # Replicates as tight as the estimates: the point estimates decide, as before.
    tight = _screen({"a": 100.0, "b": 5.0, "c": 2.0}, np.tile([100.0, 5.0, 2.0], (50, 1)))
    assert tight.important(0.1) == ["a"] and tight.important(0.04) == ["a", "b"]


def _coverage(index: str, draw, truth: float, units: int, studies: int = 300) -> float:
    """How often a Morris study's 95% interval for ``index`` holds its true value ``truth``:
    each study has ``units`` trajectories over two parameters and one seed, each step's
    elementary effect an independent ``draw(rng, units)``."""
    from types import SimpleNamespace

    from tiersweep.analysis.sensitivity import _indices

    rng = np.random.default_rng(11)
    design = SimpleNamespace(keys=["a", "b"])
    u = np.zeros((units, 3, 2))
    u[:, 1:, 0] = 0.5  # step 1 moves a by half its range, step 2 then b
    u[:, 2, 1] = 0.5
    held = 0
    for _ in range(studies):
        y = np.zeros((units, 3, 1))
        y[:, 1, 0] = 0.5 * draw(rng, units)
        y[:, 2, 0] = y[:, 1, 0] + 0.5 * draw(rng, units)
        point, bounds, _ = _indices("morris", y, u, design, False, 400, 0.95, rng)
        low, high = bounds[index]
        held += int(np.sum((low <= truth) & (truth <= high)))
    return held / (2 * studies)


@pytest.mark.parametrize(
    "name, draw, sigma, units",
    [
        ("normal, 16 trajectories", lambda rng, n: rng.normal(3.0, 1.0, n), 1.0, 16),
        ("normal, 8 trajectories", lambda rng, n: rng.normal(3.0, 1.0, n), 1.0, 8),
        ("t with 5 degrees, 16 trajectories", lambda rng, n: rng.standard_t(5, n), math.sqrt(5 / 3), 16),
    ],
)
def test_the_interval_of_morris_sigma_holds_the_true_spread_about_as_often_as_it_says(name, draw, sigma, units):
    # A spread's percentile bootstrap interval sits low (a resample with repeats shrinks a
    # spread): in these studies it held sigma 82%, 73% and 72% of the time where it says 95%.
    # Studentised on the log scale: 92%, 92% and 90%.
    assert 0.88 <= _coverage("sigma", draw, sigma, units) <= 0.99


@pytest.mark.parametrize("units", [8, 16])
def test_the_interval_of_morris_mu_star_holds_its_true_value_about_as_often_as_it_says(units):
    # A percentile interval is too narrow with few units: for the mean absolute effect of 8 and
    # 16 trajectories it held it 89% and 91% of the time where it says 95%. The expanded
    # percentile interval (its z widened to sqrt(n/(n-1)) t_{n-1}) holds it 94-95%.
    assert 0.93 <= _coverage("mu_star", lambda rng, n: rng.normal(3.0, 1.0, n), 3.0, units) <= 0.99


def test_the_expanded_percentile_tail_by_hand():
    from scipy import stats

    from tiersweep.analysis.sensitivity import percentile_tail

    # 8 units: z = sqrt(8/7) x t(0.975; 7 df) = 1.0690 x 2.3646 = 2.5279, so a tail of 0.0057.
    assert percentile_tail(0.95, 8) == pytest.approx(stats.norm.sf(math.sqrt(8 / 7) * 2.364624), rel=1e-5)
    assert percentile_tail(0.95, 8) == pytest.approx(0.00574, abs=5e-5)
    # Many units: the plain percentile tail; one unit: nothing to widen by.
    assert percentile_tail(0.95, 10**7) == pytest.approx(0.025, abs=1e-5)
    assert percentile_tail(0.9, 1) == pytest.approx(0.05)
