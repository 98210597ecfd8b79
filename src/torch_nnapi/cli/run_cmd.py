"""``torch-nnapi run``: run a converted module and print its outputs and latency.

Inputs are the module's bundled inputs when it has some, else random tensors of the shapes
given with ``--input`` (same syntax as ``convert``), else of the shapes the model was
converted for. The module runs through PyTorch's NNAPI runtime on torch-nnapi's
libneuralnetworks.so, or with ``--host`` directly on the host runtime.
"""

from __future__ import annotations

import argparse
import statistics
import time

from ._commands import command


def _configure(p: argparse.ArgumentParser) -> None:
    p.add_argument("module", help="a module saved by torch-nnapi convert")
    p.add_argument("--input", action="append", default=[], metavar="SPEC",
                   help="input shape (see convert); default: bundled inputs or the converted"
                        " shapes")
    p.add_argument("--host", action="store_true",
                   help="run on the host runtime instead of torch's NNAPI runtime")
    p.add_argument("--repeat", type=int, default=10, help="timed runs (default: %(default)s)")
    p.add_argument("--profile", action="store_true",
                   help="per-operation times (host runtime)")


def _inputs(module, texts):
    from .convert_cmd import example_inputs, parse_input

    if texts:
        return example_inputs([parse_input(t) for t in texts]), "random"
    if hasattr(module, "get_all_bundled_inputs"):
        bundled = module.get_all_bundled_inputs()
        if bundled:
            return tuple(bundled[0]), "bundled"
    from ..convert.host import program_of

    prog = program_of(module)
    shapes = [list(s) for s in prog.input_shapes]
    if any(d < 0 for s in shapes for d in s):
        raise ValueError("the model has flexible dimensions: give input shapes with --input")
    import torch

    g = torch.Generator().manual_seed(0)
    inputs = []
    for shape, cast in zip(shapes, prog.input_casts):
        if cast == 1:
            inputs.append(torch.randint(0, 10, shape, generator=g))
        else:
            inputs.append(torch.randn(shape, generator=g))
    return tuple(inputs), "random"


def run_module(module, inputs, host: bool = False, repeat: int = 1, profile: bool = False):
    """(outputs, per-run seconds, backend name); the first run includes compilation."""
    from ..convert.host import run_on_host

    backend = "host runtime"
    if not host:
        try:
            import torch_nnapi

            torch_nnapi.library_path()
            backend = "torch NNAPI runtime"
        except Exception:  # noqa: BLE001 - without the C library, fall back to the host
            host = True
    times, out = [], None
    for _ in range(max(repeat, 1)):
        start = time.perf_counter()
        out = run_on_host(module, *inputs, profile=profile) if host else module(*inputs)
        times.append(time.perf_counter() - start)
    return out, times, backend


@command("run", "run a converted module (bundled or random inputs): outputs and latency",
         _configure, torchscript=True, runs_models=True)
def run(args: argparse.Namespace) -> int:
    import torch

    module = torch.jit.load(args.module)
    inputs, source = _inputs(module, args.input)
    print(f"inputs ({source}): " + ", ".join(f"{list(x.shape)} {str(x.dtype)[6:]}"
                                            for x in inputs))
    first, _, backend = run_module(module, inputs, args.host, 1)
    out, times, _ = run_module(module, inputs, args.host, args.repeat, args.profile)
    timings = None
    if args.profile and args.host:
        out, timings = out
    outputs = list(out) if isinstance(out, (tuple, list)) else [out]
    for i, o in enumerate(outputs):
        values = o.dequantize() if o.is_quantized else o
        flat = values.reshape(-1)
        head = ", ".join(f"{v:.4g}" if values.is_floating_point() else str(int(v))
                         for v in flat[:6].tolist())
        stats = ""
        if values.is_floating_point() and flat.numel():
            stats = (f" min {flat.min().item():.4g} max {flat.max().item():.4g}"
                     f" mean {flat.mean().item():.4g}")
        print(f"output {i}: {list(o.shape)} {str(o.dtype)[6:]} [{head}"
              f"{', ...' if flat.numel() > 6 else ''}]{stats}")
    print(f"latency ({backend}, {len(times)} runs): median {statistics.median(times) * 1e3:.2f}"
          f" ms, min {min(times) * 1e3:.2f} ms")
    if timings:
        by_op: dict[str, float] = {}
        for t in timings:
            by_op[t.operation] = by_op.get(t.operation, 0.0) + t.seconds
        for name, seconds in sorted(by_op.items(), key=lambda kv: -kv[1])[:10]:
            print(f"  {name:28} {seconds * 1e3:8.2f} ms")
    del first
    return 0
