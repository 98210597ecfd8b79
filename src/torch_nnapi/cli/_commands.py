"""The registry of ``torch-nnapi`` subcommands; each lives in its own module of this package."""

from __future__ import annotations

import argparse
from dataclasses import dataclass
from typing import Callable


@dataclass(frozen=True)
class Command:
    name: str
    help: str
    configure: Callable[[argparse.ArgumentParser], None]
    run: Callable[[argparse.Namespace], int]


COMMANDS: dict[str, Command] = {}


def command(name: str, help: str, configure: Callable[[argparse.ArgumentParser], None]):
    """Registers the decorated ``run(args) -> exit code`` as subcommand ``name``."""

    def wrap(run: Callable[[argparse.Namespace], int]):
        COMMANDS[name] = Command(name, help, configure, run)
        return run

    return wrap
