"""ExecuTorch programs: the NNAPI-delegated .pte against the XNNPACK-delegated one,
ExecuTorch's portable kernels and eager PyTorch, float and quantized, in one process.

Each model is lowered three ways with ``to_edge_transform_and_lower``: NnapiPartitioner
(``to_pte``; its regions run on NnapiBackend over torch-nnapi's libneuralnetworks.so, i.e.
the host runtime), XnnpackPartitioner, and no partitioner (the portable kernels). The
quantized variant is the PT2E model of ``torch_nnapi.quantize(..., target_level=4)``, lowered
the same ways (for XNNPACK with its int32 biases made float, as
``tests/convert/executorch/xnnpack.py`` says why). Each .pte runs through ``executorch.runtime``
(the same PteModule as ``torch-nnapi run``); the median of ``--runs`` calls of each, timed in
turn, and the ratio to eager PyTorch in this process; for the quantized variant also the
largest distance of each .pte's output from the PT2E model's, in output quanta (integer
kernels against the PT2E model's float arithmetic between quantize and dequantize).
A variant ExecuTorch cannot lower or load prints why.

    PYTHONPATH=src python3 bench/executorch.py [--runs 30] [--threads 2] [--models cnn,mlp]
"""

from __future__ import annotations

import argparse
import sys
import warnings
from collections.abc import Callable
from functools import partial
from pathlib import Path

import torch

# run as a script, bench/ comes first on the path, and this file would shadow the executorch
# package: the repository's root instead (bench._timing, tests)
_HERE = Path(__file__).resolve().parent
sys.path[:] = [str(_HERE.parent), *(p for p in sys.path if Path(p or ".").resolve() != _HERE)]

from bench._timing import median_time  # noqa: E402
from tests.convert.executorch.cases import Mlp, SmallCnn, output_quantum  # noqa: E402
from tests.convert.executorch.xnnpack import xnnpack_pte  # noqa: E402
from torch_nnapi.convert.tools.threads import num_threads  # noqa: E402

MODELS: dict[str, Callable[[], tuple[torch.nn.Module, torch.Tensor]]] = {
    "cnn": lambda: (SmallCnn().eval(), torch.randn(1, 3, 64, 64)),
    "mlp": lambda: (Mlp().eval(), torch.randn(16, 32)),
}
VARIANTS = ("nnapi", "xnnpack", "portable")


def lowered(variant: str, model: torch.nn.Module, x: torch.Tensor, level: int | None
            ) -> bytes:
    """The .pte of ``model`` with ``variant``'s partitioner."""
    from executorch.exir import EdgeCompileConfig, to_edge_transform_and_lower

    from torch_nnapi.convert.executorch.pte import exported_program, to_pte

    if variant == "nnapi":
        return to_pte(model, (x,), **({} if level is None else {"target_level": level}))
    if variant == "xnnpack":
        return xnnpack_pte(model, x)
    import executorch.kernels.quantized  # noqa: F401 - the quantize/dequantize out variants

    edge = to_edge_transform_and_lower(exported_program(model, (x,)),
                                       compile_config=EdgeCompileConfig(_check_ir_validity=False))
    return bytes(edge.to_executorch().buffer)


def measure(name: str, quantized: bool, runs: int) -> list[str]:
    """One line per variant: its median, its ratio to eager and, quantized, its largest
    distance from the PT2E model in output quanta."""
    from torch_nnapi import quantize
    from torch_nnapi.convert.executorch.pte_file import PteModule

    torch.manual_seed(0)
    model, x = MODELS[name]()
    level = None
    if quantized:
        model, level = quantize(model, (x,), target_level=4), 4
    with torch.no_grad():
        eager = median_time(lambda: model(x), runs)
        expected = model(x)
    label = f"{name}{' int8' if quantized else ''}"
    lines = [f"{label:10} {'eager':9} {eager * 1e3:9.3f} ms {1.0:7.2f}x"]
    for variant in VARIANTS:
        try:
            module = PteModule(lowered(variant, model, x, level))
            seconds = median_time(partial(module, x), runs)
            got = module(x)
        except Exception as e:  # noqa: BLE001 - reported, the other variants go on
            why = next((s for s in str(e).splitlines() if s.strip()), type(e).__name__)
            lines.append(f"{label:10} {variant:9} n/a ({why[:90]})")
            continue
        quanta = float((got - expected).abs().max()) / output_quantum(model) \
            if isinstance(model, torch.fx.GraphModule) else None
        lines.append(f"{label:10} {variant:9} {seconds * 1e3:9.3f} ms"
                     f" {seconds / eager:7.2f}x" + ("" if quanta is None else f" {quanta:7.2f}"))
    return lines


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--runs", type=int, default=30)
    parser.add_argument("--threads", type=int, default=2)
    parser.add_argument("--models", default=",".join(MODELS))
    args = parser.parse_args()
    warnings.filterwarnings("ignore")
    names = [n for n in args.models.split(",") if n]
    unknown = [n for n in names if n not in MODELS]
    if unknown:
        parser.error(f"unknown models {', '.join(unknown)} (there are {', '.join(MODELS)})")
    print(f"{args.threads} threads, median of {args.runs} runs; ratio: over eager PyTorch")
    print(f"{'model':10} {'runs on':9} {'median':>12} {'ratio':>8} {'quanta':>7}"
          "  (quantized: largest distance from the PT2E model, in output quanta)")
    with num_threads(args.threads):
        for name in names:
            for quantized in (False, True):
                for line in measure(name, quantized, args.runs):
                    print(line, flush=True)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
