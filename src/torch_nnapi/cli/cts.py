"""``torch-nnapi cts``: run conformance vectors through the runtime."""

from __future__ import annotations

import argparse
import sys
from collections.abc import Callable
from pathlib import Path
from typing import Any

from ..conformance import VERSIONS, Backend, PythonBackend, discover, run_test
from ._commands import command
from ._errors import ExitCode, bad_file, usage
from ._progress import Progress

# Each makes a backend with its default settings.
BACKENDS: dict[str, Callable[[], Backend[Any]]] = {"python": PythonBackend}


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


def _backends() -> dict[str, Callable[[], Backend[Any]]]:
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
        problem = "not a directory" if args.directory.exists() else "no such directory"
        raise bad_file(f"{args.directory}: {problem}")
    versions = [v.strip() for v in args.versions.split(",") if v.strip()]
    unknown = [v for v in versions if v not in VERSIONS]
    if unknown or not versions:
        raise usage(f"--versions {args.versions!r}: unknown version"
                    f" {', '.join(unknown) or '(none given)'}",
                    f"the versions are {', '.join(VERSIONS)}")
    present = [v for v in versions if (args.directory / v).is_dir()]
    if not present:
        raise bad_file(f"{args.directory}: has no {', '.join(f'{v}/' for v in versions)}"
                       " directory of spec files", "point it at shared/cts")
    backend = _backends()[args.backend]()
    tests = list(discover(args.directory, versions, args.only))
    if not tests:
        what = " matching " + ", ".join(repr(p) for p in args.only) if args.only else ""
        raise usage(f"no test{what} in {args.directory} ({', '.join(present)})",
                    "--only takes shell wildcards on test or spec-file names, e.g."
                    " 'conv2d*'")
    passed = failed = 0
    with Progress("cts") as progress:
        for number, test in enumerate(tests, 1):
            progress.count(number, len(tests), test.id)
            outcome = run_test(test, backend)
            if outcome.passed:
                passed += 1
                if args.verbose:
                    progress.done()
                    print(f"PASS {test.id}")
            else:
                failed += 1
                progress.done()
                print(f"FAIL {test.id}: {outcome.message}")
            sys.stdout.flush()
    print(f"{passed} passed, {failed} failed")
    return int(ExitCode.OK if failed == 0 else ExitCode.MISMATCH)
