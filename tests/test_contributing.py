"""CONTRIBUTING.md's examples, run as written: every fenced block marked ``python
contributing-example`` runs in a fresh namespace (its own assertions are what it checks), and
whatever it registers is removed afterwards."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

from tiersweep.core.platforms import PLATFORMS
from tiersweep.core.policies import POLICIES
from tiersweep.sweep.backends import BACKENDS

GUIDE = Path(__file__).resolve().parent.parent / "CONTRIBUTING.md"
FENCE = re.compile(r"^```python contributing-example\n(.*?)^```$", re.S | re.M)


def examples() -> list[tuple[str, str]]:
    """Each example block with an id naming the section it stands in."""
    text = GUIDE.read_text(encoding="utf-8")
    found = []
    for match in FENCE.finditer(text):
        headings = re.findall(r"^## (.+)$", text[: match.start()], re.M)
        found.append((headings[-1] if headings else "top", match.group(1)))
    return found


def test_the_guide_has_an_example_for_each_written_section():
    sections = [section for section, _ in examples()]
    assert sections == ["A policy", "A platform", "A metric", "A backend", "A report figure"]


@pytest.mark.parametrize(("section", "code"), examples(), ids=[section for section, _ in examples()])
def test_example_runs_as_written(section, code):
    policies, platforms, backends = set(POLICIES), set(PLATFORMS), set(BACKENDS)
    try:
        exec(compile(code, f"{GUIDE}: {section}", "exec"), {"__name__": "contributing_example"})
    finally:
        for name in set(POLICIES) - policies:
            POLICIES.pop(name)
        for name in set(PLATFORMS) - platforms:
            PLATFORMS.pop(name)
        for name in set(BACKENDS) - backends:
            BACKENDS.pop(name)
