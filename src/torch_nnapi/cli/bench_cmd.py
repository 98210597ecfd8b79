"""``torch-nnapi bench``: where a converted module's time goes.

Latency through PyTorch's NNAPI runtime on torch-nnapi's libneuralnetworks.so (compile time,
first run, median and 90th percentile), with ``--original`` also eager PyTorch's latency on
the original model and the ratio; then a host-runtime profile: time per NNAPI operation
type and the slowest operations with their operand shapes. Inputs as for ``run``: input
files, bundled, ``--input`` shapes, or the converted shapes. ``--report FILE.html`` also
writes the report as one self-contained page with the time per operation plotted.
For a partitioned module (``convert --fallback``) also each NNAPI region timed alone and
the CPU nodes timed alone. ``--generate IDS`` times a greedy generation of a saved
``Generator`` (convert/torchscript/generate.py) instead: time to first token, tokens per
second and NNAPI executions per token, with ``--original`` against the original's.
"""

from __future__ import annotations

import argparse
from collections.abc import Callable

from ..nnapi.errors import counted
from ._commands import add_threads_option, command
from ._devices import add_device_option, device_profiles, plans_json, plans_of_module, render_plans
from ._errors import CliError, ExitCode, bad_file, usage
from ._inputs import add_input_options
from ._loading import (
    check_input_count,
    load_converted,
    load_model,
    output_path,
    print_report,
)
from ._progress import Progress
from ._pte import is_pte_path
from ._pte_commands import bench_pte


def _configure(p: argparse.ArgumentParser) -> None:
    p.add_argument("module", help="a module saved by torch-nnapi convert, or a .pte (run"
                                  " by ExecuTorch with NnapiBackend)")
    p.add_argument("--original", metavar="MODEL",
                   help="the original model (TorchScript or pickled nn.Module), timed in eager"
                        " PyTorch on the same inputs")
    add_input_options(p, default_help="; without --input or --input-file: the bundled"
                                      " inputs, else the converted shapes")
    p.add_argument("--runs", type=int, default=20, metavar="N",
                   help="timed runs (default: %(default)s)")
    add_threads_option(p)  # applied by bench_module for the measurement only
    p.add_argument("--quantized-engine", default="qnnpack", metavar="ENGINE",
                   help="PyTorch's quantized kernels for timing a quantized original"
                        " (default: %(default)s, as on mobile and in check; 'default' keeps"
                        " PyTorch's)")
    p.add_argument("--profile-runs", type=int, default=3, metavar="N",
                   help="host-runtime profile runs, 0 for none (default: %(default)s)")
    p.add_argument("--top", type=int, default=10, metavar="N",
                   help="how many of the slowest operations to list (default: %(default)s)")
    p.add_argument("--report", metavar="FILE.html",
                   help="also write the report as one self-contained HTML page")
    p.add_argument("--json", action="store_true", help="machine-readable output")
    add_device_option(p)  # with --device, each of Android's steps is also timed on the host
    p.add_argument("--generate", metavar="IDS",
                   help="time a greedy generation instead: MODULE (and --original) is a saved"
                        " torch_nnapi Generator, IDS the prompt's token ids (1,7,3,9)")
    p.add_argument("--new-tokens", type=int, default=32, metavar="N",
                   help="tokens each timed generation makes (default: %(default)s)")


@command("bench", "time a converted module on PyTorch's NNAPI runtime (and the original in"
         " eager PyTorch) and profile where the time goes per NNAPI operation", _configure,
         torchscript=True)
def run(args: argparse.Namespace) -> int:
    if is_pte_path(args.module) and args.runs >= 1:
        return bench_pte(args)
    from ..convert.tools.bench import OriginalMismatch, bench_module
    from .run_cmd import check_inputs, converted_inputs, running

    for name, value, least in (("--runs", args.runs, 1), ("--profile-runs", args.profile_runs,
                                                          0), ("--top", args.top, 0),
                               ("--threads", args.threads or 1, 1)):
        if value < least:
            raise usage(f"{name} must be at least {least}")
    import torch

    engines = torch.backends.quantized.supported_engines
    if args.quantized_engine not in ("default", *engines):
        raise usage(f"--quantized-engine {args.quantized_engine!r} is not available in this"
                    f" PyTorch (it has {', '.join(engines)})")
    profiles = device_profiles(args)
    if args.generate is not None:
        return _bench_generation(args)
    if args.report:
        output_path(args.report, args.module)
    with Progress("bench") as progress:
        progress.step("loading")
        module = load_converted(args.module)
        original = _original(args.original) if args.original else None
        inputs, source = converted_inputs(module, args)
        check_inputs(module, inputs)
        if original is not None:
            check_input_count(original, len(inputs), "inputs")
        timed_original = None if original is None else _naming(original, args.original)
        with running("torch NNAPI runtime"):
            try:
                report = bench_module(module, inputs, runs=args.runs, threads=args.threads,
                                      original=timed_original,
                                      profile_runs=args.profile_runs,
                                      engine=None if args.quantized_engine == "default"
                                      else args.quantized_engine, progress=progress.step)
            except OriginalMismatch as e:
                raise bad_file(f"original {args.original}: {e}: not the model {args.module}"
                               " was converted from") from None
        plans = _device_plans(module, inputs, profiles, args, progress.step)
    from ._html import bench_page

    data = dict(report.to_json(args.top), input_source=source,
                device_plans=plans_json(plans)) if args.json else None
    print_report(data, [] if args.json else render(report, source, args.top)
                 + render_plans(plans), args.json,
                 args.report, lambda: bench_page(report, args.module))
    return int(ExitCode.OK)


def _original(path: str) -> Callable[..., object]:
    """The original model as eager PyTorch runs it (a .pt2's module)."""
    import torch

    model = load_model(path, "original")
    if isinstance(model, torch.export.ExportedProgram):
        return model.module()
    if isinstance(model, torch.nn.Module):
        model.eval()
    return model


def _naming(model: Callable[..., object], path: str) -> Callable[..., object]:
    """``model``, whose failures name it rather than the NNAPI side."""
    from ..convert.errors import one_line

    def call(*inputs: object) -> object:
        try:
            return model(*inputs)
        except MemoryError:
            raise
        except Exception as e:  # noqa: BLE001 - whatever the original raises
            raise CliError(f"the original {path} failed to run (eager PyTorch): {one_line(e)}",
                           ExitCode.RUN_FAILED) from None

    call.__wrapped__ = model  # type: ignore[attr-defined]  # what bench inspects for its engine
    return call


def _device_plans(module, inputs, profiles, args, step) -> list:
    """``--device``: Android's plan on those drivers, each step timed on the host runtime
    (a partitioned module's regions are planned, not timed)."""
    if not profiles:
        return []
    from ..convert.fallback.run import is_partitioned
    from ..convert.tools.device_plan import timed_on_host

    step("planning and timing the devices' steps")
    plans = plans_of_module(module, profiles, args.preference, tuple(inputs))
    if is_partitioned(module):
        return plans
    return [timed_on_host(plans[0], module, inputs, max(args.profile_runs, 1))]


def _bench_generation(args: argparse.Namespace) -> int:
    """``--generate``: time to first token and tokens per second, against ``--original``."""
    import torch

    from ..convert.tools.generation import executions_per_step, time_generation

    try:
        prompt = torch.tensor([int(t) for t in args.generate.split(",")])
    except ValueError:
        raise usage(f"--generate {args.generate!r}: token ids separated by commas") from None
    if args.new_tokens < 2:
        raise usage("--new-tokens must be at least 2")
    timed = {"converted": load_model(args.module, "module")}
    if args.original:
        timed["eager"] = load_model(args.original, "original")
    report: dict[str, object] = {"prompt": len(prompt), "new_tokens": args.new_tokens}
    lines = [f"generation: a prompt of {counted(len(prompt), 'token')},"
             f" {counted(args.new_tokens, 'new token')}"]
    for name, generator in timed.items():
        step = getattr(generator, "step", None)
        if not isinstance(step, torch.nn.Module):
            raise usage(f"{name} module: not a Generator (it has no step module)")
        try:
            timing = time_generation(generator, prompt, args.new_tokens, args.runs)
        except (RuntimeError, ValueError, torch.jit.Error) as e:  # Error: raised in TorchScript
            raise usage(f"{name} module: the generation failed:"
                        f" {str(e).strip().splitlines()[-1]}") from None
        executions = executions_per_step(step)
        report[name] = dict(timing.to_json(), nnapi_executions_per_token=executions)
        lines.append(f"  {name}: first token {_ms(timing.first_token)},"
                     f" {timing.tokens_per_second:.1f} tokens/s"
                     + (f", {executions} NNAPI executions per token" if executions else ""))
    if "eager" in report:
        converted, eager = report["converted"], report["eager"]
        assert isinstance(converted, dict) and isinstance(eager, dict)
        report["first_token_ratio"] = converted["first_token"] / eager["first_token"]
        report["tokens_per_second_ratio"] = \
            converted["tokens_per_second"] / eager["tokens_per_second"]
        lines.append(f"NNAPI / eager: first token {report['first_token_ratio']:.2f}x the time,"
                     f" {report['tokens_per_second_ratio']:.2f}x the tokens per second")
    print_report(report if args.json else None, [] if args.json else lines, args.json,
                 None, lambda: "")
    return int(ExitCode.OK)


def _ms(seconds: float) -> str:
    return f"{seconds * 1e3:.2f} ms"


def render(report, source: str = "", top: int = 10) -> list[str]:
    lines = [f"inputs{f' ({source})' if source else ''}: "
             + ", ".join(f"{i['shape']} {i['dtype']}" for i in report.inputs)
             + (f"; threads {report.threads}" if report.threads else "")]
    first, latency, parts = report.first_call, report.latency, report.parts
    n = latency.nnapi
    lines.append(f"{report.backend}:")
    lines.append(f"  compile {_ms(first.compile_seconds)}"
                 + (" (first use in this process: includes importing the runtime)"
                    if first.first_use else "")
                 + f", first run {_ms(first.run_seconds)}")
    lines.append(f"  {counted(len(n.seconds), 'run')}: median {_ms(n.median)}, p90 {_ms(n.p90)},"
                 f" min {_ms(n.minimum)}")
    if latency.pools_contend and latency.single_thread is not None:
        one = latency.single_thread
        threads = f"{report.threads} threads" if report.threads else "several threads"
        lines.append(f"warning: on NNAPI, {threads} ran slower than one"
                     f" ({_ms(n.median)} against {_ms(one.median)} on one thread): thread pools"
                     " are competing for the cores (another busy process, or PyTorch's OpenMP"
                     " threads spinning: set OMP_WAIT_POLICY=PASSIVE); try --threads 1")
    if parts.regions:
        total = sum(r.latency.median for r in parts.regions)
        lines.append(f"  NNAPI regions alone: median {_ms(total)} in {len(parts.regions)}"
                     " region" + ("s" if len(parts.regions) != 1 else ""))
        for r in parts.regions:
            inside = (f" {r.name}," if r.name else "") + (
                f" {r.executions:g} executions per run," if r.executions != 1 else "")
            lines.append(f"    region {r.index}:{inside} median {_ms(r.latency.median)}"
                         f" ({r.operations} operations)")
        lines.append(f"  CPU nodes alone: median {_ms(parts.cpu.median)}")
    if latency.eager is not None:
        e = latency.eager
        engine = f", quantized engine {report.quantized_engine}" if report.quantized_engine \
            else ""
        lines.append(f"eager PyTorch (original{engine}): median {_ms(e.median)},"
                     f" p90 {_ms(e.p90)}, min {_ms(e.minimum)}")
        lines.append(f"NNAPI / eager: no ratio: {latency.refusal}" if latency.ratio is None
                     else f"NNAPI / eager: {latency.ratio:.2f}x (both on"
                          f" {e.threads} thread{'s' if e.threads != 1 else ''})")
        for o in report.output_errors:
            value = f"{o['error']:g} quanta" if o["unit"] == "quanta" else \
                f"{o['error']:.2g} relative"
            lines.append(f"output {o['output']} against eager: max error {value}")
    p = report.profile
    if p is not None:
        lines.append(f"host runtime profile (median of {p.runs} runs): {_ms(p.wall_seconds)}"
                     f" per run, {_ms(p.total)} in {counted(len(p.operations), 'operation')}")
        lines.append(_outside_line(report))
        lines.append(f"  {'operation type':28} {'total':>10} {'share':>7} {'count':>6}")
        for t in p.by_type:
            lines.append(f"  {t.type:28} {_ms(t.seconds):>10} {t.share:>7.1%} {t.count:>6}")
        if top > 0:
            lines.append("  slowest operations:")
            lines.append(f"  {'#':>5} {'operation':24} {'time':>10} {'share':>7}  operands")
            for op in p.slowest(top):
                operands = ", ".join(op.inputs) + " -> " + ", ".join(op.outputs)
                kind = op.data_type.replace("TENSOR_", "").lower()
                where = f"r{op.region}:" if op.region >= 0 else ""  # region, if several
                lines.append(f"  {where + str(op.index):>5} {op.type:24} {_ms(op.seconds):>10}"
                             f" {op.share:>7.1%}  {kind} {operands}")
    return lines


def _outside_line(report) -> str:
    """What runs outside the host runtime: the NNAPI median against the host runtime's own
    unprofiled runs, timed beside them."""
    outside, host = report.outside_runtime, report.latency.host
    if outside is None:
        return "  outside the host runtime: not measured (a partitioned module: see the" \
            " regions and CPU nodes alone)"
    if outside < 0:
        return (f"  outside the host runtime: within the noise (the host runtime's own runs"
                f" took {_ms(host.median)}, the NNAPI runs {_ms(report.latency.nnapi.median)})")
    return (f"  outside the host runtime (wrapper module, C API, copies): {_ms(outside)} of"
            f" the NNAPI median (the host runtime's own runs: {_ms(host.median)})")
