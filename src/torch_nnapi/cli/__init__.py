"""The ``torch-nnapi`` command line.

Every error reaches the user as one line (plus a hint line when there is one) and a
documented exit code (``_errors.ExitCode``), never as a traceback.
"""

from __future__ import annotations

import argparse
import importlib
import os
import pkgutil
import sys
import traceback
from collections.abc import Sequence
from typing import NoReturn

from .. import __version__
from ..nnapi.errors import NnapiError, OutOfMemoryError
from ._commands import COMMANDS, ENVIRONMENT_HELP, add_threads_option, apply_threads
from ._errors import CliError, ExitCode, exit_code_help, usage
from ._errors import exit_code_table as exit_code_table  # public: the README's table

TRACEBACK_VARIABLE = "TORCH_NNAPI_TRACEBACK"


class ArgumentParser(argparse.ArgumentParser):
    """argparse's parser whose errors are usage errors (exit 4, not argparse's 2, which
    means "does not match" here)."""

    def error(self, message: str) -> NoReturn:
        raise usage(message, f"see {self.prog} --help")


def _load_commands() -> None:
    for info in pkgutil.iter_modules(__path__):
        if not info.name.startswith("_"):
            importlib.import_module(f"{__name__}.{info.name}")


def build_parser() -> argparse.ArgumentParser:
    _load_commands()
    epilog = exit_code_help() + "\n\n" + ENVIRONMENT_HELP
    parser = ArgumentParser(
        prog="torch-nnapi", epilog=epilog, formatter_class=argparse.RawDescriptionHelpFormatter,
        description="Convert PyTorch models to Android NNAPI and run them on Linux.")
    parser.add_argument("--version", action="version", version=_version())
    sub = parser.add_subparsers(dest="command", metavar="COMMAND", required=True)
    for name in sorted(COMMANDS):
        cmd = COMMANDS[name]
        p = sub.add_parser(name, help=cmd.help, description=cmd.help, epilog=epilog,
                           formatter_class=argparse.RawDescriptionHelpFormatter)
        cmd.configure(p)
        if cmd.runs_models:
            add_threads_option(p)
        p.set_defaults(_run=cmd.run, _command=cmd)
    return parser


def _version() -> str:
    from importlib import metadata

    try:
        torch_version = metadata.version("torch")
    except metadata.PackageNotFoundError:
        torch_version = "not installed"
    return f"torch-nnapi {__version__} (Python {sys.version.split()[0]}, torch {torch_version})"


def _report(command: str | None, message: str, hint: str | None = None) -> None:
    prefix = f"torch-nnapi {command}" if command else "torch-nnapi"
    print(f"{prefix}: error: {message}", file=sys.stderr)
    if hint:
        print(f"hint: {hint}", file=sys.stderr)


def _command_in(argv: Sequence[str]) -> str | None:
    """The subcommand named on the command line, for messages before parsing succeeds."""
    return next((a for a in argv if a in COMMANDS), None)


def main(argv: Sequence[str] | None = None) -> int:
    # PyTorch's C++ warnings ("[W ...]" lines) are not for the command's users; the
    # environment is read when torch is first imported, which the commands do lazily.
    os.environ.setdefault("TORCH_CPP_LOG_LEVEL", "ERROR")
    argv = list(sys.argv[1:] if argv is None else argv)
    command = None
    try:
        args = build_parser().parse_args(argv)
        command = args.command
        apply_threads(args._command, args)
        return int(args._run(args) or 0)
    except SystemExit as e:  # --help, --version
        return int(e.code or 0) if isinstance(e.code, int) else 0
    except CliError as e:
        name = command or _command_in(argv)
        hint = e.hint
        if name and hint == "see torch-nnapi --help":  # argparse's top parser reported it
            hint = f"see torch-nnapi {name} --help"
        _report(name, e.message, hint)
        return int(e.code)
    except KeyboardInterrupt:
        _report(command, "interrupted")
        return int(ExitCode.INTERRUPTED)
    except BrokenPipeError:
        # Whoever reads the output stopped (`| head`): not an error to report. Later writes,
        # including the interpreter's final flush of stdout, go nowhere instead of failing.
        os.dup2(os.open(os.devnull, os.O_WRONLY), sys.stdout.fileno())
        return int(ExitCode.OUTPUT_CLOSED)
    except (MemoryError, OutOfMemoryError) as e:
        _report(command, f"out of memory ({e})" if str(e) else "out of memory",
                "give smaller inputs")
        return int(ExitCode.OUT_OF_MEMORY)
    except NnapiError as e:
        _report(command, f"NNAPI {e.code.name}: {e}")
        return int(ExitCode.RUN_FAILED)
    except Exception as e:  # noqa: BLE001 - a bug: still one line, and how to see more
        from ..convert.errors import one_line

        if os.environ.get(TRACEBACK_VARIABLE):
            traceback.print_exc()
        _report(command, f"internal error: {type(e).__name__}: {one_line(e)}",
                f"this is a bug in torch-nnapi; please report it ({TRACEBACK_VARIABLE}=1"
                " shows the traceback)")
        return int(ExitCode.INTERNAL)
