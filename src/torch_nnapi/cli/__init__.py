"""The ``torch-nnapi`` command line."""

from __future__ import annotations

import argparse
import importlib
import pkgutil
import sys

from ..nnapi.errors import NnapiError
from ._commands import COMMANDS, add_threads_option, apply_threads


def _load_commands() -> None:
    for info in pkgutil.iter_modules(__path__):
        if not info.name.startswith("_"):
            importlib.import_module(f"{__name__}.{info.name}")


def build_parser() -> argparse.ArgumentParser:
    _load_commands()
    parser = argparse.ArgumentParser(
        prog="torch-nnapi",
        description="Convert PyTorch models to Android NNAPI and run them on Linux.")
    sub = parser.add_subparsers(dest="command", metavar="COMMAND", required=True)
    for name in sorted(COMMANDS):
        cmd = COMMANDS[name]
        p = sub.add_parser(name, help=cmd.help, description=cmd.help)
        cmd.configure(p)
        if cmd.runs_models:
            add_threads_option(p)
        p.set_defaults(_run=cmd.run, _command=cmd)
    return parser


def main(argv: list[str] | None = None) -> int:
    args = build_parser().parse_args(argv)
    try:
        apply_threads(args._command, args)
        return int(args._run(args) or 0)
    except NnapiError as e:
        print(f"torch-nnapi {args.command}: error: {e}", file=sys.stderr)
        return 1
    except (FileNotFoundError, ValueError) as e:
        print(f"torch-nnapi {args.command}: error: {e}", file=sys.stderr)
        return 1
