"""Reading model files and writing results for the commands, with one-line errors.

A model file is a TorchScript archive (``torch.jit.save``), a whole ``nn.Module`` pickled
with ``torch.save``, or an ``ExportedProgram`` saved by ``torch.export.save`` (``.pt2``).
Anything else (a text file renamed ``.pt``, a truncated or corrupted archive, a state dict,
a pickle whose class cannot be imported) is a :class:`CliError` with ``ExitCode.BAD_FILE``
naming the file and the reason. Pickled modules are unpickled with the current directory on
the import path, as ``python -m`` would have it. A file naming torchvision gets torchvision's
operators defined first when its compiled extension cannot load here
(``convert.tools.torchvision_ops``).
"""

from __future__ import annotations

import importlib.util
import json
import logging
import os
import re
import sys
import zipfile
from collections.abc import Callable, Iterator, Sequence
from contextlib import contextmanager
from pathlib import Path
from typing import Any

from ..convert.errors import one_line
from ..nnapi.errors import counted
from ._errors import CliError, ExitCode, bad_file, usage

_PICKLE_PROTOCOL = 0x80  # the first byte of a binary pickle (torch.save's legacy format)
_SEARCHED_SIZE = 1 << 24  # an archive's members larger than this are weights


def _readable(path: str, what: str) -> Path:
    p = Path(path)
    if not p.exists():
        raise bad_file(f"{what} {path}: no such file")
    if p.is_dir():
        raise bad_file(f"{what} {path}: is a directory, not a file")
    if not os.access(p, os.R_OK):
        raise bad_file(f"{what} {path}: permission denied")
    return p


def _is_torchscript(names: Sequence[str]) -> bool:
    return any(n.endswith("/constants.pkl") or "/code/" in n for n in names)


def _is_exported_program(names: Sequence[str]) -> bool:
    return any(n.endswith("/models/model.json") for n in names)


def _archive_names(p: Path, where: str) -> list[str] | None:
    """The file names in a zip archive (None: not one), after checking every member's CRC:
    PyTorch's loaders can abort the process on corrupted contents instead of raising."""
    try:
        if not zipfile.is_zipfile(p):
            return None
        with zipfile.ZipFile(p) as archive:
            damaged = archive.testzip()
            names = archive.namelist()
    except Exception as e:  # noqa: BLE001 - zipfile raises many kinds on corrupted data
        raise bad_file(f"{where}: a corrupted archive ({one_line(e)})") from None
    if damaged is not None:
        raise bad_file(f"{where}: a corrupted archive ({damaged} fails its checksum)")
    return names


def _mentions(p: Path, needle: bytes) -> bool:
    """Whether the file holds ``needle`` (a module's name: a pickled class, a scripted or
    exported call of its operators). An archive's members are searched decompressed (the
    code of a TorchScript archive is deflated), its tensor data skipped."""
    if zipfile.is_zipfile(p):
        with zipfile.ZipFile(p) as archive:
            return any(needle in archive.read(info)
                       for info in archive.infolist()
                       if "/data/" not in info.filename and info.file_size < _SEARCHED_SIZE)
    with open(p, "rb") as f:
        tail = b""
        while chunk := f.read(_SEARCHED_SIZE):
            if needle in tail + chunk:
                return True
            tail = chunk[-len(needle):]
    return False


def _prepare_torchvision(p: Path, what: str) -> None:
    from ..convert.tools.torchvision_ops import (
        TorchvisionUnavailable,
        ensure_torchvision_operators,
    )

    if "torchvision" in sys.modules or not _mentions(p, b"torchvision"):
        return
    try:
        ensure_torchvision_operators()
    except TorchvisionUnavailable:
        raise bad_file(f"{what} {p}: uses torchvision, which is not installed",
                       "pip install torchvision -c constraints.txt") from None
    except Exception as e:  # noqa: BLE001 - importing torchvision can fail in many ways
        raise bad_file(f"{what} {p}: uses torchvision, which cannot be imported here"
                       f" ({one_line(e)})") from None


def _missing_torchvision_operator(error: object, p: Path, what: str) -> CliError | None:
    """The error for a file using a torchvision operator this machine cannot provide (only
    torchvision's compiled extension has it, and it does not load beside this torch)."""
    from ..convert.tools.torchvision_ops import DEFINED

    found = re.search(r"torchvision::(\w+)", str(error))
    if found is None or found.group(1) in DEFINED:
        return None
    return bad_file(f"{what} {p}: uses torchvision::{found.group(1)}, which only torchvision's"
                    " compiled extension provides, and it does not load beside this torch",
                    "install a torchvision built for this torch, or save the model without"
                    " that operator")


def load_model(path: str, what: str = "model"):
    """A TorchScript module or a pickled nn.Module from ``path`` (see the module docstring)."""
    import torch

    p = _readable(path, what)
    with open(p, "rb") as f:
        head = f.read(4)
    names = _archive_names(p, f"{what} {path}")
    _prepare_torchvision(p, what)
    if names is not None:
        if _is_torchscript(names):
            return _load_torchscript(p, what)
        if _is_exported_program(names):
            return _load_exported_program(p, what)
        model = _unpickle(p, what)
    elif head.startswith(b"PK"):
        raise bad_file(f"{what} {path}: a truncated or corrupted archive (its directory is"
                       " missing)")
    elif head[:1] == bytes([_PICKLE_PROTOCOL]):
        model = _unpickle(p, what)
    else:
        raise bad_file(f"{what} {path}: not a PyTorch model file (neither TorchScript nor a"
                       " pickled nn.Module)",
                       "save the model with torch.jit.save(torch.jit.script(model), PATH) or"
                       " torch.save(model, PATH)")
    if not isinstance(model, torch.nn.Module):
        hint = ("a state_dict holds weights only: save the whole model (torch.save(model,"
                " PATH)) or a TorchScript module") if isinstance(model, dict) else None
        raise bad_file(f"{what} {path}: holds a Python {type(model).__name__}, not a model", hint)
    return model


def _load_torchscript(p: Path, what: str):
    import torch

    try:
        return torch.jit.load(str(p), map_location="cpu")
    except Exception as e:  # noqa: BLE001 - any loading failure is the file's
        raise _missing_torchvision_operator(e, p, what) or bad_file(
            f"{what} {p}: a TorchScript archive that cannot be loaded, truncated"
            f" or corrupted ({one_line(e)})") from None


class _Collected(logging.Handler):
    """Keeps the log records of a load: PyTorch logs a failed deserialization's cause as
    warnings (with tracebacks) and raises an error pointing at them."""

    def __init__(self) -> None:
        super().__init__(logging.DEBUG)
        self.messages: list[str] = []

    def emit(self, record: logging.LogRecord) -> None:
        self.messages.append(record.getMessage())
        if record.exc_info and record.exc_info[1] is not None:
            self.messages.append(str(record.exc_info[1]))


@contextmanager
def _collecting(logger_name: str) -> Iterator[_Collected]:
    """The logger's records go to the returned handler instead of the terminal."""
    logger = logging.getLogger(logger_name)
    handler = _Collected()
    handlers, propagate = logger.handlers, logger.propagate
    logger.handlers, logger.propagate = [handler], False  # PyTorch gives some their own
    try:
        yield handler
    finally:
        logger.handlers, logger.propagate = handlers, propagate


def _register_quantize_ops(p: Path) -> None:
    """The quantize/dequantize operators a PT2E-quantized program calls are registered by
    the modules defining them, which loading does not import."""
    import torch.ao.quantization.fx._decomposed  # noqa: F401 - registers quantized_decomposed

    if _mentions(p, b"torchao") and importlib.util.find_spec("torchao") is not None:
        with _collecting("torchao"), _collecting("torch.utils._pytree"):
            import torchao.quantization.quant_primitives  # noqa: F401 - registers torchao ops


def _unresolved_operator(messages: list[str]) -> str | None:
    for message in messages:
        found = re.search(r"failed to resolve (\S+) to an operator", message)
        if found:
            return found.group(1).removeprefix("torch.ops.")
    return None


def _load_exported_program(p: Path, what: str):
    import torch

    _register_quantize_ops(p)
    with _collecting("torch.export") as log:
        try:
            return torch.export.load(str(p))
        except Exception as e:  # noqa: BLE001 - any loading failure is the file's
            operator = _unresolved_operator(log.messages)
            if operator is None:
                raise _missing_torchvision_operator(e, p, what) or bad_file(
                    f"{what} {p}: an exported program (torch.export.save) that cannot be"
                    f" loaded ({one_line(e)})") from None
            raise _missing_torchvision_operator(operator.replace(".", "::", 1), p, what) or \
                bad_file(f"{what} {p}: uses operator {operator}, which is not registered"
                         " here", "import the library defining it before loading, or export"
                         " the model without it") from None


def _unpickle(p: Path, what: str) -> Any:
    import torch

    added = os.getcwd() not in sys.path
    if added:  # as `python -m` has it: classes defined next to the user are importable
        sys.path.insert(0, os.getcwd())
    try:
        return torch.load(str(p), map_location="cpu", weights_only=False)
    except (ModuleNotFoundError, AttributeError, ImportError) as e:
        raise bad_file(f"{what} {p}: pickles a class that cannot be imported here"
                       f" ({one_line(e)})",
                       "run torch-nnapi from the directory of the module defining the class,"
                       " add it to PYTHONPATH, or save a TorchScript module with"
                       " torch.jit.save") from None
    except Exception as e:  # noqa: BLE001 - any unpickling failure is the file's
        raise _missing_torchvision_operator(e, p, what) or bad_file(
            f"{what} {p}: not a readable PyTorch file, truncated or corrupted"
            f" ({one_line(e)})") from None
    finally:
        if added and os.getcwd() in sys.path:
            sys.path.remove(os.getcwd())


def load_converted(path: str):
    """A module saved by ``torch-nnapi convert``, with its weights (every region's, for a
    partitioned one) checked."""
    from ..convert.fallback.run import is_partitioned, region_programs
    from ..convert.tools.host import program_of

    module = load_model(path, "module")
    try:
        programs = region_programs(module) if is_partitioned(module) else [program_of(module)]
    except ValueError:
        raise bad_file(f"module {path}: not converted by torch-nnapi (it has no NNAPI"
                       " program)", f"convert it first: torch-nnapi convert {path} -o"
                       " OUTPUT --input SHAPE") from None
    try:
        for program in programs:
            program.check_weights()
    except Exception as e:  # noqa: BLE001 - TorchScript raises its own error types
        raise bad_file(f"module {path}: {one_line(e)}",
                       "the file was modified after conversion: convert the model again")\
            from None
    return module


def input_names(model) -> list[str] | None:
    """The names of the model's forward inputs (None when it takes any number)."""
    import inspect

    import torch

    if isinstance(model, torch.export.ExportedProgram):
        return list(model.graph_signature.user_inputs)

    forward = getattr(model, "forward", None)
    if forward is None:
        return None
    schema = getattr(forward, "schema", None)
    if schema is not None:
        return [a.name for a in schema.arguments[1:]]
    try:
        parameters = inspect.signature(forward).parameters.values()
    except (TypeError, ValueError):
        return None
    if any(p.kind in (p.VAR_POSITIONAL, p.VAR_KEYWORD) for p in parameters):
        return None
    return [p.name for p in parameters if p.default is p.empty]


def stored_examples(model) -> tuple | None:
    """The example inputs a ``.pt2`` carries (``torch.export.save`` keeps those it was
    exported with); None for other models, or when they are not positional tensors."""
    import torch

    if not isinstance(model, torch.export.ExportedProgram):
        return None
    stored = getattr(model, "example_inputs", None)
    if not stored:
        return None
    args, kwargs = stored
    if kwargs or not args or not all(isinstance(x, torch.Tensor) for x in args):
        return None
    return tuple(args)


def check_input_count(model, count: int, what: str = "--input") -> None:
    names = input_names(model)
    if names is not None and len(names) != count:
        raise usage(f"the model takes {counted(len(names), 'input')}"
                    f" ({', '.join(names) or 'none'}), got {count} {what}",
                    f"give one {what} per model input")


def run_eagerly(model, examples: tuple):
    """The model's outputs on the examples; a model that does not take them is a usage
    error naming the shapes."""
    import torch

    if isinstance(model, torch.export.ExportedProgram):
        model = model.module()
    try:
        with torch.no_grad():
            return model(*[x.clone() for x in examples])
    except MemoryError:
        raise
    except Exception as e:  # noqa: BLE001 - whatever the model raises
        shapes = ", ".join(f"{list(x.shape)} {str(x.dtype).replace('torch.', '')}"
                           for x in examples)
        raise usage(f"the model fails on inputs {shapes}: {one_line(e)}",
                    "check the --input shapes and dtypes") from None


def output_path(path: str, *inputs: str) -> Path:
    """Checks an output can be written before the work to produce it is done."""
    p = Path(path)
    if p.is_dir():
        raise CliError(f"output {path}: is a directory", ExitCode.CANNOT_WRITE,
                       "give a file name")
    parent = p.parent if str(p.parent) else Path(".")
    if not parent.is_dir():
        raise CliError(f"output {path}: directory {parent} does not exist",
                       ExitCode.CANNOT_WRITE)
    if not os.access(parent, os.W_OK) or (p.exists() and not os.access(p, os.W_OK)):
        raise CliError(f"output {path}: permission denied", ExitCode.CANNOT_WRITE)
    for source in inputs:
        if source and Path(source).exists() and p.exists() and os.path.samefile(source, p):
            raise CliError(f"output {path}: is the input file; it would be overwritten",
                           ExitCode.CANNOT_WRITE, "give another output name")
    return p


@contextmanager
def writing(path: str) -> Iterator[None]:
    """Turns a failure to write ``path`` (an OSError, or PyTorch's RuntimeError when it
    cannot open the file) into a one-line CliError."""
    try:
        yield
    except OSError as e:
        raise CliError(f"output {path}: {e.strerror or e}", ExitCode.CANNOT_WRITE) from None
    except RuntimeError as e:
        if "cannot be opened" not in str(e) and "Parent directory" not in str(e):
            raise
        raise CliError(f"output {path}: {one_line(e)}", ExitCode.CANNOT_WRITE) from None


def print_report(data: object, lines: list[str], as_json: bool, html_path: str | None,
                 html_page: Callable[[], str]) -> None:
    """Prints a command's report as JSON or text lines and writes its HTML page to
    ``html_path`` when one is given (``check`` and ``bench`` share this ending)."""
    if as_json:
        print(json.dumps(data, indent=1, default=str))
    else:
        print("\n".join(lines))
    if html_path:
        with writing(html_path), open(html_path, "w") as f:
            f.write(html_page())
        if not as_json:
            print(f"report: {html_path}")
