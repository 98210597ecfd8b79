"""``torch-nnapi cts``: run conformance vectors through the runtime."""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

from ..conformance import VERSIONS, PythonBackend, discover, run_test
from ._commands import command

BACKENDS = {"python": PythonBackend}


def _configure(p: argparse.ArgumentParser) -> None:
    p.add_argument("directory", type=Path, help="a directory of V1_0/, V1_1/, ... spec files")
    p.add_argument("--versions", default=",".join(VERSIONS),
                   help="comma-separated versions to run (default: %(default)s)")
    p.add_argument("--only", action="append", default=[], metavar="NAME",
                   help="run only tests or spec files matching NAME (wildcards allowed;"
                        " repeatable)")
    p.add_argument("--backend", choices=sorted(_backends()), default="python",
                   help="python: the runtime's Python API; capi: libneuralnetworks.so")
    p.add_argument("-v", "--verbose", action="store_true", help="also list passing tests")


def _backends() -> dict:
    backends = dict(BACKENDS)
    try:
        from ..capi.cts_backend import CApiBackend
    except ImportError:
        return backends
    backends["capi"] = CApiBackend
    return backends


@command("cts", "run NNAPI conformance vectors (shared/cts JSON format) through the runtime",
         _configure, runs_models=True)
def run(args: argparse.Namespace) -> int:
    if not args.directory.is_dir():
        raise FileNotFoundError(f"{args.directory} is not a directory")
    versions = [v.strip() for v in args.versions.split(",") if v.strip()]
    backend = _backends()[args.backend]()
    passed = failed = 0
    for test in discover(args.directory, versions, args.only):
        outcome = run_test(test, backend)
        if outcome.passed:
            passed += 1
            if args.verbose:
                print(f"PASS {test.id}")
        else:
            failed += 1
            print(f"FAIL {test.id}: {outcome.message}")
        sys.stdout.flush()
    print(f"{passed} passed, {failed} failed")
    return 0 if failed == 0 and passed > 0 else 1
