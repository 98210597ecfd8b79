"""ExecuTorch with bounded dynamic sizes: what a new input size costs on NnapiBackend.

Each model is exported with one ``torch.export.Dim(..., max=N)`` and lowered with
``to_pte``; its .pte runs through ``executorch.runtime`` in this process. For each size:
the first execution (NnapiBackend resolves the size programs, builds and compiles the model
for that size) and the median of ``--runs`` later ones (the cached compilation), each as a
ratio to the median execution at the example's size (compiled at load), measured here.

    PYTHONPATH=src python3 bench/executorch_dynamic.py [--runs 20]
"""

from __future__ import annotations

import argparse
import sys
import time
import warnings
from collections.abc import Callable
from pathlib import Path
from typing import Any

import torch

# run as a script, bench/ comes first on the path and would shadow the executorch package
_HERE = Path(__file__).resolve().parent
sys.path[:] = [str(_HERE.parent), *(p for p in sys.path if Path(p or ".").resolve() != _HERE)]

from bench._timing import median_time  # noqa: E402
from tests.convert.executorch.cases import Mlp  # noqa: E402

Case = tuple[torch.nn.Module, tuple[int, ...], int, int, list[int]]


def encoder() -> torch.nn.Module:
    layer = torch.nn.TransformerEncoderLayer(32, 4, 64, dropout=0.0, batch_first=True)
    return torch.nn.TransformerEncoder(layer, 1, enable_nested_tensor=False)


# model, example shape, dynamic dimension, its maximum, the sizes tried
MODELS: dict[str, Callable[[], Case]] = {
    "mlp": lambda: (Mlp().eval(), (4, 32), 0, 64, [16, 64]),
    "encoder": lambda: (encoder().eval(), (2, 8, 32), 1, 64, [32, 64]),
}


def executing(method: Any, x: torch.Tensor) -> Callable[[], object]:
    return lambda: method.execute([x])


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--runs", type=int, default=20)
    args = parser.parse_args()
    warnings.filterwarnings("ignore")
    from executorch.runtime import Runtime

    import torch_nnapi.executorch as nnapi_et

    nnapi_et.load_backend()
    for name, make in MODELS.items():
        model, example, dim, maximum, sizes = make()
        program = torch.export.export(model, (torch.randn(example),), dynamic_shapes=(
            {dim: torch.export.Dim("size", max=maximum)},))
        loaded = Runtime.get().load_program(nnapi_et.to_pte(program))
        method = loaded.load_method("forward")
        x = torch.randn(example)
        baseline = median_time(executing(method, x), args.runs)
        print(f"{name}: at the example's size {list(example)}: {baseline * 1e3:.3f} ms")
        for size in sizes:
            shape = list(example)
            shape[dim] = size
            y = torch.randn(shape)
            start = time.perf_counter()
            method.execute([y])
            first = time.perf_counter() - start
            cached = median_time(executing(method, y), args.runs)
            print(f"  {shape}: first run {first / baseline:.1f}x (compiles), later runs"
                  f" {cached / baseline:.2f}x the example's")


if __name__ == "__main__":
    main()
