"""ExecuTorch programs (.pte) in the commands: ``run``, ``inspect``, ``check`` and ``bench``
take a .pte where they take a converted module, and ``convert --format pte`` writes one.

A .pte is known by its name or by ExecuTorch's file identifier (``ET`` at byte 4), without
importing ExecuTorch. Reading one needs the ``executorch`` extra; a file that is no program,
or whose NNAPI blob does not read, is ``BAD_FILE``; a program ExecuTorch cannot load (the
backend missing, a device the blob names absent, a feature level the NNAPI library lacks)
is ``RUN_FAILED``, with NnapiBackend's own message.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from ._errors import CliError, ExitCode, bad_file, usage
from ._inputs import InputSpec, with_dtype

PTE_SUFFIX = ".pte"
_INSTALL = "pip install '.[torch,executorch]' -c constraints.txt (README: \"ExecuTorch\")"


def is_pte_path(path: str) -> bool:
    """A .pte by its name, or by ExecuTorch's file identifier whatever its name."""
    if path.endswith(PTE_SUFFIX):
        return True
    try:
        with open(path, "rb") as f:
            head = f.read(8)
    except OSError:
        return False
    return head[4:6] == b"ET"


def read_program(path: str) -> bytes:
    """The bytes of a .pte (one-line errors for a file that cannot be read)."""
    p = Path(path)
    try:
        return p.read_bytes()
    except FileNotFoundError:
        raise bad_file(f"program {path}: no such file") from None
    except IsADirectoryError:
        raise bad_file(f"program {path}: is a directory, not a file") from None
    except OSError as e:
        raise bad_file(f"program {path}: {e.strerror or e}") from None


def _executorch() -> Any:
    """The .pte reader, or a one-line error when ExecuTorch is not installed."""
    try:
        from ..convert.executorch import pte_file
    except ImportError as e:
        raise CliError(f"reading a .pte needs ExecuTorch, which is not installed ({e})",
                       ExitCode.RUN_FAILED, _INSTALL) from None
    return pte_file


def pte_info(path: str) -> Any:
    """What the .pte holds (``PteInfo``), without running it."""
    pte_file = _executorch()
    try:
        return pte_file.read_pte(read_program(path))
    except pte_file.PteError as e:
        raise bad_file(f"program {path}: {e}") from None


def load_pte(path: str) -> Any:
    """The .pte loaded into ExecuTorch's runtime with NnapiBackend (``PteModule``)."""
    pte_file = _executorch()
    data = read_program(path)
    try:
        pte_file.read_pte(data)
    except pte_file.PteError as e:
        raise bad_file(f"program {path}: {e}") from None
    from ..convert.executorch.native_build import BuildError

    try:
        return pte_file.PteModule(data)
    except (pte_file.PteError, BuildError) as e:
        raise CliError(f"program {path}: {e}", ExitCode.RUN_FAILED) from None


def input_specs(info: Any) -> list[InputSpec]:
    """What the program takes, as ``--input`` specs."""
    return [with_dtype(InputSpec(tuple(t.shape)), t.dtype) for t in info.inputs]


def check_pte_inputs(module: Any, inputs: tuple) -> None:
    """Inputs the program does not take are a usage error naming the input."""
    from ..convert.executorch.pte_file import PteError

    try:
        module.check_inputs(inputs)
    except PteError as e:
        raise usage(str(e), "check the --input shapes and dtypes, or the input files")\
            from None


def output_leaves(module: Any, out: Any) -> list[tuple[str, Any]]:
    """The outputs with their names (their place in what the model returns)."""
    from torch.utils._pytree import tree_leaves

    from ..convert.executorch.outputs import leaf_paths

    leaves = tree_leaves(out)
    return list(zip(leaf_paths(module.info.structure, len(leaves)), leaves, strict=True))


def no_torchscript_options(args: Any, *names: str) -> None:
    """Options that apply to converted TorchScript modules only are a usage error."""
    for name in names:
        if getattr(args, name.lstrip("-").replace("-", "_"), None):
            raise usage(f"{name} applies to converted TorchScript modules, not to a .pte",
                        "a .pte runs through ExecuTorch's runtime with NnapiBackend")


__all__ = ["PTE_SUFFIX", "check_pte_inputs", "input_specs", "is_pte_path", "load_pte",
           "no_torchscript_options", "output_leaves", "pte_info", "read_program"]
