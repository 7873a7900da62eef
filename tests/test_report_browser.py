"""The report page in a real headless browser: every figure loads (no broken image), the
summary table is there, and the page renders to a screenshot that is not blank.

Needs a Chromium (``chromium``, ``chromium-browser`` or ``google-chrome``; ``.ci/run`` installs
Debian's) and skips, saying so, without one. The page's own state is read back through a copy
of ``index.html`` in the same folder with a script that, once the page has loaded, writes the
number of images, of broken ones and of summary rows into an element; ``--dump-dom`` prints
the page after its scripts ran.
"""

from __future__ import annotations

import copy
import os
import re
import shutil
import subprocess
from pathlib import Path

import pytest

from tiersweep.analysis.report import write_report
from tiersweep.sweep.config import parse_sweep_config
from tiersweep.sweep.driver import run_sweep

BROWSERS = ("chromium", "chromium-browser", "google-chrome")
#: A small real sweep with per-job records, so that the page has Gantt charts too.
SWEEP = {
    "name": "browser",
    "base": {"workload": {"model": "jann97", "jobs": 300}, "platform": {"nodes": 64, "tiers": 2}},
    "grid": {"policy.name": ["fcfs", "easy", "amcbf"], "workload.load": [0.6, 0.9]},
    "seeds": 2,
}
#: Counts what the browser made of the page, once everything has loaded.
CHECK = """
<script>
window.addEventListener("load", function () {
  var images = Array.from(document.images);
  var broken = images.filter(function (img) { return !img.complete || img.naturalWidth === 0; });
  var table = document.getElementById("summary");
  var out = document.createElement("div");
  out.id = "browser-check";
  out.textContent = "images=" + images.length + " broken=" + broken.length +
    " summary_rows=" + (table ? table.tBodies[0].rows.length : -1) +
    " broken_src=" + broken.map(function (img) { return img.getAttribute("src"); }).join(",");
  document.body.appendChild(out);
});
</script>
"""


def browser() -> str:
    """The path of a Chromium; skip the test (saying why) when there is none."""
    for name in BROWSERS:
        path = shutil.which(name)
        if path:
            return path
    pytest.skip(f"no headless browser: none of {', '.join(BROWSERS)} is on PATH (.ci/run installs Debian's chromium)")


def run_browser(binary: str, page: Path, profile: Path, *args: str) -> subprocess.CompletedProcess:
    """Chromium, headless, on the file ``page``; a fresh profile, no sandbox (CI runs as root)."""
    command = [
        binary,
        "--headless",
        "--no-sandbox",
        "--disable-gpu",
        "--disable-dev-shm-usage",
        "--hide-scrollbars",
        "--no-first-run",
        f"--user-data-dir={profile}",
        *args,
        page.resolve().as_uri(),
    ]
    env = {**os.environ, "HOME": str(profile)}  # nothing of the user's own profile is touched
    return subprocess.run(command, capture_output=True, text=True, timeout=60, env=env, check=False)


def checked(binary: str, page: Path, profile: Path) -> dict[str, str]:
    """What the check script found in ``page`` (a copy with the script is written beside it)."""
    probe = page.with_name(f"check_{page.name}")
    probe.write_text(page.read_text(encoding="utf-8").replace("</body>", CHECK + "</body>"), encoding="utf-8")
    result = run_browser(binary, probe, profile, "--virtual-time-budget=10000", "--dump-dom")
    found = re.search(r'<div id="browser-check">([^<]*)</div>', result.stdout)
    assert found, f"the check did not run: exit {result.returncode}\n{result.stderr[-2000:]}"
    return dict(item.split("=", 1) for item in found.group(1).split(" "))


@pytest.fixture(scope="module")
def report(tmp_path_factory) -> Path:
    """The report of :data:`SWEEP` (skipped at once, before any sweep, without a browser)."""
    browser()
    out = tmp_path_factory.mktemp("browser")
    outcome = run_sweep(parse_sweep_config(copy.deepcopy(SWEEP)), out, backend="serial", with_jobs=True, progress=False)
    assert outcome.failed == 0
    return write_report(out / SWEEP["name"], out / "report")


@pytest.mark.slow
def test_every_figure_loads_and_the_summary_table_is_there(report, tmp_path):
    binary = browser()
    found = checked(binary, report, tmp_path / "profile")
    # A figure per metric axis, and a Gantt chart and VMs-held chart per policy.
    assert int(found["images"]) >= 1 + 2 * 3, found
    assert found["broken"] == "0", f"broken images: {found['broken_src']}"
    assert found["summary_rows"] == "6", found  # 3 policies x 2 loads
    # The check can fail: a page with a missing figure is caught.
    damaged = report.with_name("damaged.html")
    damaged.write_text(
        report.read_text(encoding="utf-8").replace("</body>", "<img src='figures/missing.png'></body>"),
        encoding="utf-8",
    )
    found = checked(binary, damaged, tmp_path / "profile")
    assert found["broken"] == "1" and found["broken_src"] == "figures/missing.png", found


def test_the_page_renders_to_a_screenshot_that_is_not_blank(report, tmp_path):
    import matplotlib.image
    import numpy as np

    binary = browser()
    shot = tmp_path / "report.png"
    result = run_browser(
        binary,
        report,
        tmp_path / "profile",
        f"--screenshot={shot}",
        "--window-size=1280,4000",
        "--virtual-time-budget=10000",
    )
    assert shot.is_file(), f"no screenshot: exit {result.returncode}\n{result.stderr[-2000:]}"
    pixels = matplotlib.image.imread(shot)[..., :3]
    assert pixels.shape[:2] == (4000, 1280)
    # Text, the table and the figures: far from one flat colour, and ink well down the page
    # (the figures below the table), not just in a header.
    assert float(np.std(pixels)) > 0.05
    rows_with_ink = np.flatnonzero((pixels < 0.5).any(axis=(1, 2)))
    assert len(rows_with_ink) > 1000 and rows_with_ink.max() > 2000
