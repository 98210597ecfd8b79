"""The exit codes of ``torch-nnapi`` and the one-line errors behind them.

Every command ends with one of :class:`ExitCode`. A problem a user can fix (a bad option, a
file that is not a model, inputs the model does not take, a directory that does not exist)
is a :class:`CliError`: ``main`` prints it as one line, plus a hint line when there is one,
never a traceback. Anything else is a bug in torch-nnapi, reported the same way with
``ExitCode.INTERNAL`` (``TORCH_NNAPI_TRACEBACK=1`` prints the traceback too). The README's
exit-code table and ``torch-nnapi --help`` are generated from this enum.
"""

from __future__ import annotations

import enum
import textwrap


class ExitCode(enum.IntEnum):
    """What a command's exit status means; each member's docstring is its documentation."""

    def __new__(cls, value: int, doc: str) -> ExitCode:
        member = int.__new__(cls, value)
        member._value_ = value
        member.__doc__ = doc
        return member

    OK = 0, "success (check: converts, matches PyTorch and fits the target level)"
    CANNOT_CONVERT = 1, ("the model uses operations NNAPI cannot express, or torch.export"
                         " cannot capture it (convert, check, codegen)")
    MISMATCH = 2, ("the converted model does not match PyTorch (check, convert --check,"
                   " demo) or conformance tests fail (cts)")
    TARGET_LEVEL = 3, ("a device of --target-level would reject the model (check, convert"
                       " --target-level)")
    USAGE = 4, ("bad command line: an unknown option, a malformed --input, inputs the model"
                " does not take, options that do not go together, a filter matching no test")
    BAD_FILE = 5, ("a file cannot be read or is not what it should be: missing, not a model,"
                   " truncated or corrupted, a class that cannot be imported, a bad input file")
    CANNOT_WRITE = 6, ("an output cannot be written: missing directory, no permission, or it"
                       " would overwrite the input")
    RUN_FAILED = 7, "the model fails to run (NNAPI or PyTorch reports an error)"
    OUT_OF_MEMORY = 8, "the inputs or the model need more memory than this machine has"
    INTERNAL = 9, "a bug in torch-nnapi (please report it with the command that failed)"
    INTERRUPTED = 130, "interrupted (Ctrl-C)"
    OUTPUT_CLOSED = 141, ("the reader of the output went away (e.g. piped into head); nothing"
                          " is reported, as for a process ended by SIGPIPE")


class CliError(Exception):
    """A problem the user can act on: ``message`` names what and where, ``hint`` (optional)
    says what to do; ``code`` is the exit status."""

    def __init__(self, message: str, code: ExitCode, hint: str | None = None):
        super().__init__(message)
        self.message = message
        self.code = code
        self.hint = hint


def usage(message: str, hint: str | None = None) -> CliError:
    return CliError(message, ExitCode.USAGE, hint)


def bad_file(message: str, hint: str | None = None) -> CliError:
    return CliError(message, ExitCode.BAD_FILE, hint)


def exit_code_table() -> str:
    """The exit codes as a Markdown table (the README's generated section)."""
    rows = ["| Exit code | Meaning |", "|---|---|"]
    rows += [f"| {int(code)} | {code.__doc__} |" for code in ExitCode]
    return "\n".join(rows)


def exit_code_help() -> str:
    """The exit codes for ``--help``, wrapped for a terminal."""
    lines = ["exit codes:"]
    for code in ExitCode:
        lines.append(textwrap.fill(code.__doc__ or "", width=88,
                                   initial_indent=f"  {int(code):>3}  ",
                                   subsequent_indent=" " * 7))
    return "\n".join(lines)
