"""The README stays true: generated tables are current and CI runs the README's commands."""

from __future__ import annotations

import re

import pytest

from torch_nnapi.tables import MARKER, readme_sections

from .conformance.cts_cases import cts_tests
from .conformance.known_failures import KNOWN_FAILURES
from .conftest import CTS_MISSING_REASON, PROJECT_ROOT, cts_root

README = PROJECT_ROOT / "README.md"


def test_generated_tables_are_current():
    root = cts_root()
    if root is None:
        pytest.skip(CTS_MISSING_REASON)
    text = README.read_text()
    present = {m.group("name"): m.group(3) for m in MARKER.finditer(text)}
    expected = readme_sections(cts_tests(), KNOWN_FAILURES)
    assert set(expected) <= set(present), "README lacks generated sections"
    for name, body in expected.items():
        assert present[name].rstrip() == body.rstrip(), (
            f"README section {name!r} is stale: run `python tools/update_readme.py`")


def test_ci_runs_the_readme_commands():
    text = README.read_text()
    blocks = re.findall(r"^    (\S.*)$", text.split("## Quick start", 1)[1].split("\n## ", 1)[0],
                        re.M)
    ci = (PROJECT_ROOT / ".ci" / "run").read_text()
    assert blocks, "README quick start has no commands"
    ci_lines = {line.strip() for line in ci.splitlines()}
    for command in blocks:
        assert command.strip() in ci_lines, f".ci/run does not run the README command {command!r}"


def test_every_benchmark_script_is_documented():
    """Each script in bench/ is listed in the README's Speed section, with what it measures."""
    speed = README.read_text().split("\n## Speed", 1)[1].split("\n## ", 1)[0]
    scripts = sorted(p.name for p in (PROJECT_ROOT / "bench").glob("[!_]*.py"))
    assert scripts, "bench/ has no scripts"
    missing = [name for name in scripts if f"python bench/{name}" not in speed]
    assert not missing, f"README's Speed section does not list {missing}"
