"""The registry of ``torch-nnapi`` subcommands; each lives in its own module of this package."""

from __future__ import annotations

import argparse
import functools
import warnings
from collections.abc import Callable
from dataclasses import dataclass

# PyTorch 2.13 deprecates TorchScript (tracing, scripting, freezing, saving and loading, the
# lite interpreter), which is what PyTorch Mobile's NNAPI runtime runs, and the quantization
# that makes the quantized models it runs: a user of torch-nnapi can do nothing about these
# warnings (pyproject.toml filters the same ones in the tests).
TORCHSCRIPT_DEPRECATIONS = (
    r"`torch\.jit\.((trace|script)(_method)?|freeze|save|load)` is deprecated",
    r"Lite Interpreter is deprecated",
)
QUANTIZATION_DEPRECATIONS = (
    (r"torch\.ao\.quantization is deprecated", DeprecationWarning),
    (r"torch\.quantize_per_tensor, torch\.quantize_per_channel and other", UserWarning),
)

ENVIRONMENT_HELP = """environment:
  TORCH_NNAPI_NUM_THREADS  threads of the host runtime's kernels (default: the available
                           cores; --threads overrides it)
  TORCH_NNAPI_KERNELS      the host runtime's kernels: native (default) or reference
  LIBNEURALNETWORKS_PATH   the libneuralnetworks.so PyTorch's NNAPI runtime loads (default:
                           torch-nnapi's own, printed by torch-nnapi libpath)
  TORCH_NNAPI_PYTHON       the Python that libneuralnetworks.so starts in a C program
                           (default: the one of the environment it is installed in)
  TORCH_NNAPI_LIBPYTHON    that Python's shared library (default: found beside it)
  TORCH_NNAPI_TRACEBACK    1: print the traceback of an internal error"""


@dataclass(frozen=True)
class Command:
    name: str
    help: str
    configure: Callable[[argparse.ArgumentParser], None]
    run: Callable[[argparse.Namespace], int]
    # Runs models: gets --threads, applied before the command runs.
    runs_models: bool = False
    torchscript: bool = False


COMMANDS: dict[str, Command] = {}


def command(name: str, help: str, configure: Callable[[argparse.ArgumentParser], None], *,
            torchscript: bool = False, runs_models: bool = False):
    """Registers the decorated ``run(args) -> exit code`` as subcommand ``name``. A command
    using TorchScript (``torchscript``) runs with PyTorch's deprecation warnings of
    TorchScript and quantization ignored, and only those. A command that runs models
    (``runs_models``) takes ``--threads``."""

    def wrap(run: Callable[[argparse.Namespace], int]):
        COMMANDS[name] = Command(name, help, configure,
                                 _without_torchscript_deprecations(run) if torchscript else run,
                                 runs_models, torchscript)
        return run

    return wrap


def _thread_count(text: str) -> int:
    if not text.isdigit() or int(text) < 1:
        raise argparse.ArgumentTypeError(f"must be a whole number of at least 1, got {text!r}")
    return int(text)


def add_threads_option(p: argparse.ArgumentParser) -> None:
    p.add_argument("--threads", type=_thread_count, default=None, metavar="T",
                   help="threads for the host runtime's kernels, NumPy's BLAS and (commands"
                        " using it) PyTorch"
                        " (default: TORCH_NNAPI_NUM_THREADS, else the available cores)")


def apply_threads(cmd: Command, args: argparse.Namespace) -> None:
    """Sets ``--threads`` for the command: PyTorch's too when the command uses it."""
    threads = getattr(args, "threads", None)
    if not cmd.runs_models or threads is None:
        return
    if cmd.torchscript:
        from ..convert.tools.threads import set_num_threads
    else:
        from ..runtime.threads import set_num_threads
    set_num_threads(threads)


def _without_torchscript_deprecations(run: Callable[[argparse.Namespace], int]):
    @functools.wraps(run)
    def quiet_run(args: argparse.Namespace) -> int:
        with warnings.catch_warnings():
            for message in TORCHSCRIPT_DEPRECATIONS:
                warnings.filterwarnings("ignore", message=message, category=DeprecationWarning)
            for message, category in QUANTIZATION_DEPRECATIONS:
                warnings.filterwarnings("ignore", message=message, category=category)
            return run(args)

    return quiet_run
