"""Regenerates the README's tables from the code: ``python tools/update_readme.py``.

Needs the package importable (installed, or PYTHONPATH=src) and, for the CTS column, the
conformance vectors at ../shared/cts11 and ../shared/cts (see tests/conftest.py).
"""

from __future__ import annotations

import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from tests.conformance.cts_cases import cts_tests  # noqa: E402
from tests.conformance.known_failures import KNOWN_FAILURES  # noqa: E402
from torch_nnapi.tables import readme_sections, replace_sections  # noqa: E402


def main() -> int:
    readme = ROOT / "README.md"
    text = readme.read_text()
    updated = replace_sections(text, readme_sections(cts_tests() or None, KNOWN_FAILURES))
    if updated != text:
        readme.write_text(updated)
        print("README.md updated")
    else:
        print("README.md already current")
    return 0


if __name__ == "__main__":
    sys.exit(main())
