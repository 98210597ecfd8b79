"""The README and ``--help`` agree: every option documented exists, every option exists in
the documentation, and shell examples quote the ``?`` of flexible dimensions."""

from __future__ import annotations

import argparse
import re

from torch_nnapi.cli import build_parser

from ..conftest import PROJECT_ROOT

README = (PROJECT_ROOT / "README.md").read_text()


def _options() -> dict[str, set[str]]:
    """Every long option, by command ("" for torch-nnapi itself)."""
    parser = build_parser()
    found = {"": {o for a in parser._actions for o in a.option_strings if o.startswith("--")}}
    for action in parser._actions:
        if isinstance(action, argparse._SubParsersAction):
            for name, sub in action.choices.items():
                found[name] = {o for a in sub._actions for o in a.option_strings
                               if o.startswith("--")}
    return found


def test_every_option_is_in_the_readme():
    missing = {f"{command} {option}".strip() for command, options in _options().items()
               for option in options - {"--help"}
               if not re.search(rf"(?<![\w-]){option}(?![\w-])", README)}
    assert not missing, f"README does not document: {sorted(missing)}"


def test_every_option_the_readme_names_exists():
    known = set().union(*_options().values())
    named = set(re.findall(r"(?<![\w-])(--[a-z][a-z0-9-]+)", README))
    not_cli = {"--no-undefined", "--inplace", "--no-deps", "--build", "--gemm", "--library",
               "--out", "--performance", "--quantized"}  # compiler, setup.py, pip, cmake,
    # bench/models.py, bench/generate.py and tools/nnapi_probe.c options
    assert named - known - not_cli == set()


def test_shell_examples_quote_flexible_dimensions():
    for line in README.splitlines():
        if line.startswith("    torch-nnapi") and "?" in line:
            unquoted = re.sub(r"'[^']*'", "", line)
            assert "?" not in unquoted, line
