"""``torch-nnapi run``: run a converted module and print its outputs and latency.

Inputs are, in order of preference: real ones from ``--input-file``; random tensors of the
shapes given with ``--input`` (same syntax as ``convert``); the module's bundled inputs;
random tensors of the shapes the model was converted for. Random inputs have the dtype the
model takes (int64 token ids, quint8 at the model's scale) and are seeded: the same every
run. The module runs through PyTorch's NNAPI runtime on torch-nnapi's libneuralnetworks.so,
or with ``--host`` directly on the host runtime. ``--save-outputs out.npz`` writes the
outputs (quantized ones as their integers, with ``_scale`` and ``_zero_point`` entries).
"""

from __future__ import annotations

import argparse
import statistics
import time
from collections.abc import Iterator
from contextlib import contextmanager

from ..nnapi.errors import counted
from ._commands import command
from ._errors import CliError, ExitCode, usage
from ._inputs import (
    InputSpec,
    add_input_options,
    conform,
    example_inputs,
    parse_input,
    read_input_files,
    with_dtype,
)
from ._loading import load_converted, output_path
from ._outputs import named_outputs, save_outputs, summary
from ._pte import is_pte_path
from ._pte_commands import run_pte

_DEFAULT_INPUTS = ("; without --input or --input-file: the bundled inputs, else random"
                   " inputs of the converted shapes (seeded, in the model's dtypes)")


def _configure(p: argparse.ArgumentParser) -> None:
    p.add_argument("module", help="a module saved by torch-nnapi convert, or a .pte")
    add_input_options(p, default_help=_DEFAULT_INPUTS)
    p.add_argument("--host", action="store_true",
                   help="run on the host runtime instead of torch's NNAPI runtime")
    p.add_argument("--repeat", type=int, default=10, metavar="N",
                   help="timed runs (default: %(default)s)")
    p.add_argument("--profile", action="store_true",
                   help="per-operation times (needs --host: the host runtime times them)")
    p.add_argument("--save-outputs", metavar="FILE.npz",
                   help="write the outputs to a NumPy .npz file (output_0, output_1...)")


def model_inputs(module) -> list[InputSpec]:
    """What the converted module takes: shapes (-1: flexible), dtypes, quantization (a
    partitioned module's, from its partition report)."""
    from ..convert.fallback.report import report_of
    from ..convert.tools.host import program_of

    report = report_of(module)
    if report is not None:
        return [with_dtype(InputSpec(tuple(int(d) for d in entry["shape"])), entry["dtype"],
                           float(entry.get("scale", 1.0)), int(entry.get("zero_point", 0)))
                for entry in report.inputs]
    prog = program_of(module)
    names = dict(prog.dtype_names) if hasattr(prog, "dtype_names") else {}
    dtypes = list(prog.input_dtypes) if hasattr(prog, "input_dtypes") else []
    specs = []
    for i, shape in enumerate(prog.input_shapes):
        if i < len(dtypes):
            dtype = names.get(dtypes[i], "float32")
        else:  # artifacts of format 2 record casts only
            dtype = {1: "int64", 2: "float32"}.get(int(prog.input_casts[i]), "float32")
        spec = InputSpec(tuple(int(d) for d in shape))
        if dtype == "quint8":
            spec = with_dtype(spec, dtype, float(prog.input_scales[i]),
                              int(prog.input_zero_points[i]))
        else:
            spec = with_dtype(spec, dtype)
        specs.append(spec)
    return specs


def converted_inputs(module, args: argparse.Namespace) -> tuple[tuple, str]:
    """(inputs, where they come from) for ``run`` and ``bench``; see the module docstring."""
    taken = model_inputs(module)
    if args.input_file:
        specs = [_completed(parse_input(t), taken, i) for i, t in enumerate(args.input)]
        tensors = read_input_files(args.input_file, specs or taken, args.mean, args.std)
        return tuple(conform(tensors, [*specs, *taken[len(specs):]])), "from files"
    if args.mean or args.std:
        raise usage("--mean and --std apply to image input files only")
    if args.input:
        specs = [_completed(parse_input(t), taken, i) for i, t in enumerate(args.input)]
        return example_inputs(specs), "random"
    if hasattr(module, "get_all_bundled_inputs"):
        bundled = module.get_all_bundled_inputs()
        if bundled:
            return tuple(bundled[0]), "bundled"
    if any(d < 0 for s in taken for d in s.shape):
        flexible = ", ".join(f"input {i} {list(s.shape)}" for i, s in enumerate(taken)
                             if any(d < 0 for d in s.shape))
        raise usage(f"the model has flexible dimensions ({flexible}; -1: flexible)",
                    "give the input shapes with --input, e.g. --input 1x3x224x224")
    return example_inputs(taken), "random"


def _completed(spec: InputSpec, taken: list[InputSpec], i: int) -> InputSpec:
    """An ``--input`` without a dtype takes the model's (and its quantization)."""
    if spec.dtype is not None or i >= len(taken):
        return spec
    model = taken[i]
    return with_dtype(spec, model.dtype_or_float, model.scale, model.zero_point)


def check_inputs(module, inputs: tuple) -> None:
    """Inputs the module does not take (count, shape, dtype, quantization) are a usage
    error naming the input, before anything runs."""
    from ..convert.errors import one_line
    from ..convert.fallback.run import is_partitioned
    from ..convert.tools.host import program_of

    hint = "check the --input shapes and dtypes, or the input files"
    if is_partitioned(module):
        _check_partitioned_inputs(model_inputs(module), inputs, hint)
        return
    try:
        program_of(module).check_inputs(list(inputs))
    except Exception as e:  # noqa: BLE001 - TorchScript raises its own error types
        raise usage(one_line(e), hint) from None


def _check_partitioned_inputs(taken: list[InputSpec], inputs: tuple, hint: str) -> None:
    """A partitioned module's inputs against the model's (its regions check what they get
    again when they run)."""
    if len(inputs) != len(taken):
        raise usage(f"expected {counted(len(taken), 'input')}, got {len(inputs)}", hint)
    for i, (x, spec) in enumerate(zip(inputs, taken, strict=True)):
        shape = list(x.shape)
        if len(shape) != len(spec.shape) or any(d >= 0 and d != n
                                                for d, n in zip(spec.shape, shape, strict=True)):
            raise usage(f"input {i} has shape {shape}, the model takes {list(spec.shape)}"
                        " (-1: flexible)", hint)
        dtype = str(x.dtype).replace("torch.", "")
        if dtype != spec.dtype_or_float:
            raise usage(f"input {i} is {dtype}, the model takes {spec.dtype_or_float}", hint)


def run_module(module, inputs, host: bool = False, repeat: int = 1, profile: bool = False):
    """(outputs, per-run seconds, backend name); the first run includes compilation."""
    from ..convert.tools.host import run_on_host

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


@contextmanager
def running(backend: str) -> Iterator[None]:
    """Turns a failure of the model while it runs into a one-line RUN_FAILED error."""
    try:
        yield
    except (CliError, MemoryError):
        raise
    except Exception as e:  # noqa: BLE001 - whatever the runtime raises
        from ..convert.errors import one_line

        raise CliError(f"the model failed to run ({backend}): {one_line(e)}",
                       ExitCode.RUN_FAILED) from None


@command("run", "run a converted module (input files, bundled or random inputs): outputs"
         " and latency", _configure, torchscript=True, runs_models=True)
def run(args: argparse.Namespace) -> int:
    if args.repeat >= 1 and is_pte_path(args.module):
        if args.save_outputs:
            output_path(args.save_outputs, args.module)
        return run_pte(args)
    if args.profile and not args.host:
        raise usage("--profile times each NNAPI operation on the host runtime: add --host",
                    "torch-nnapi bench profiles a module too")
    if args.repeat < 1:
        raise usage("--repeat must be at least 1")
    if args.save_outputs:
        output_path(args.save_outputs, args.module)
    module = load_converted(args.module)
    inputs, source = converted_inputs(module, args)
    check_inputs(module, inputs)
    print(f"inputs ({source}): " + ", ".join(f"{list(x.shape)} {str(x.dtype)[6:]}"
                                            for x in inputs))
    with running("host runtime" if args.host else "torch NNAPI runtime"):
        run_module(module, inputs, args.host, 1)  # compiles: not timed with the runs
        out, times, backend = run_module(module, inputs, args.host, args.repeat, args.profile)
    timings = None
    if args.profile:
        out, timings = out
    outputs, names = named_outputs(out)
    for name, o in zip(names, outputs, strict=True):
        print(f"{name}: {summary(o)}")
    print(f"latency ({backend}, {counted(len(times), 'run')}):"
          f" median {statistics.median(times) * 1e3:.2f} ms, min {min(times) * 1e3:.2f} ms")
    if timings:
        by_op: dict[str, float] = {}
        for t in timings:
            by_op[t.operation] = by_op.get(t.operation, 0.0) + t.seconds
        for name, seconds in sorted(by_op.items(), key=lambda kv: -kv[1])[:10]:
            print(f"  {name:28} {seconds * 1e3:8.2f} ms")
    if args.save_outputs:
        save_outputs(args.save_outputs, outputs, names)
        print(f"saved outputs to {args.save_outputs}")
    return int(ExitCode.OK)
