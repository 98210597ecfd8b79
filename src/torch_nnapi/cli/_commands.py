"""The registry of ``torch-nnapi`` subcommands; each lives in its own module of this package."""

from __future__ import annotations

import argparse
import functools
import warnings
from dataclasses import dataclass
from typing import Callable

# PyTorch 2.13 deprecates TorchScript (tracing, scripting, freezing, saving and loading, the
# lite interpreter), which is what PyTorch Mobile's NNAPI runtime runs: a user of torch-nnapi
# can do nothing about these warnings.
TORCHSCRIPT_DEPRECATIONS = (
    r"`torch\.jit\.((trace|script)(_method)?|freeze|save|load)` is deprecated",
    r"Lite Interpreter is deprecated",
)


@dataclass(frozen=True)
class Command:
    name: str
    help: str
    configure: Callable[[argparse.ArgumentParser], None]
    run: Callable[[argparse.Namespace], int]


COMMANDS: dict[str, Command] = {}


def command(name: str, help: str, configure: Callable[[argparse.ArgumentParser], None], *,
            torchscript: bool = False):
    """Registers the decorated ``run(args) -> exit code`` as subcommand ``name``. A command
    using TorchScript (``torchscript``) runs with TorchScript's deprecation warnings ignored,
    and only those."""

    def wrap(run: Callable[[argparse.Namespace], int]):
        COMMANDS[name] = Command(name, help, configure,
                                 _without_torchscript_deprecations(run) if torchscript else run)
        return run

    return wrap


def _without_torchscript_deprecations(run: Callable[[argparse.Namespace], int]):
    @functools.wraps(run)
    def quiet_run(args: argparse.Namespace) -> int:
        with warnings.catch_warnings():
            for message in TORCHSCRIPT_DEPRECATIONS:
                warnings.filterwarnings("ignore", message=message, category=DeprecationWarning)
            return run(args)

    return quiet_run
