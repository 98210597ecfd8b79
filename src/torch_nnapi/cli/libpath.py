"""``torch-nnapi libpath``: where libneuralnetworks.so (the NNAPI C API for Linux) is."""

from __future__ import annotations

import argparse
import os

from ..capi import include_path, library_path
from ._commands import command
from ._errors import bad_file


def _configure(p: argparse.ArgumentParser) -> None:
    what = p.add_mutually_exclusive_group()
    what.add_argument("--dir", action="store_true",
                      help="print its directory (for -L, LD_LIBRARY_PATH)")
    what.add_argument("--include", action="store_true",
                      help="print the directory of its NeuralNetworks.h (for -I)")


@command("libpath", "print the path of libneuralnetworks.so (for LIBNEURALNETWORKS_PATH)",
         _configure)
def run(args: argparse.Namespace) -> int:
    try:
        path = library_path()
    except FileNotFoundError as e:
        raise bad_file(str(e)) from None
    if args.include:
        print(include_path())
    elif args.dir:
        print(os.path.dirname(path))
    else:
        print(path)
    return 0
