"""Where a converted module's time goes (``torch-nnapi bench``).

* Latency through PyTorch's NNAPI runtime (``torch.classes._nnapi.Compilation``, on
  torch-nnapi's libneuralnetworks.so): compilation, the first run, then the median and 90th
  percentile of timed runs; optionally eager PyTorch on the original model, for the ratio.
* A profile on the host runtime (the same NNAPI model, executed operation by operation):
  time per NNAPI operation type, and the slowest operations with their operand shapes.
* For a partitioned module (``fallback=True``): each NNAPI region timed alone on the inputs
  the module gives it, and the CPU nodes timed alone on the regions' outputs; the profile
  covers every region. Regions inside loops and branches are timed where they run, each
  execution within whole runs of the module (``fallback/run.py``'s ``run_inlined``),
  summed per region and run; the CPU nodes are then the rest of each run.
"""

from __future__ import annotations

import functools
import statistics
import sys
import time
from collections import defaultdict
from collections.abc import Callable, Sequence
from dataclasses import asdict, dataclass, field
from typing import Any

import torch

from ...nnapi.model import Lifetime, Model
from ...runtime.threads import get_num_threads
from ..capture.script import quantized_engine
from ..fallback.run import (
    InlinedProgram,
    InlinedRegion,
    Trace,
    cpu_program,
    has_bodies,
    inlined_program,
    is_partitioned,
    region_programs,
    run_apart,
    run_inlined,
)
from ..outputs import leaves_of
from .check import loaded_nnapi_library, tensor_error
from .host import model_for, program_of
from .threads import num_threads
from .timing import Latency, quiet_pools, refusal, time_calls


@dataclass
class OperationTime:
    index: int
    type: str
    seconds: float  # median over the profiled runs
    share: float  # of the sum over all operations
    inputs: list[str]  # tensor operands: "1x56x56x24", "const 24x1x1x144"
    outputs: list[str]
    data_type: str  # the first input's operand type
    region: int = -1  # in a partitioned module, the region it belongs to


@dataclass
class TypeTime:
    type: str
    seconds: float
    share: float
    count: int


@dataclass
class HostProfile:
    runs: int
    wall_seconds: float  # median wall time of a whole run (executor overhead included)
    operations: list[OperationTime]
    by_type: list[TypeTime]

    @property
    def total(self) -> float:
        return sum(op.seconds for op in self.operations)

    def slowest(self, count: int = 10) -> list[OperationTime]:
        return sorted(self.operations, key=lambda op: -op.seconds)[:count]


@dataclass
class RegionTime:
    """One region of a partitioned module, timed alone on the inputs the module gives it;
    a region inside a loop or branch (``name``: ``body_0.region_0``), its ``executions``
    per run of the module summed (their mean count per run)."""

    index: int
    operations: int
    latency: Latency
    name: str = ""
    executions: float = 1.0


@dataclass(kw_only=True)
class FirstCall:
    """The module's first call: its NNAPI compilation, then its first run."""

    compile_seconds: float = 0.0
    run_seconds: float = 0.0
    # the library's first use in this process, whose compile time includes importing its
    # Python side (the runtime and its kernels)
    first_use: bool = False


@dataclass(kw_only=True)
class Latencies:
    """Timed runs of the converted module, and of the original in eager PyTorch."""

    nnapi: Latency | None = None
    # With several threads, a few runs on one thread: more threads should never be slower.
    single_thread: Latency | None = None
    eager: Latency | None = None
    # the host runtime's own unprofiled runs of the NNAPI model (one NNAPI model only)
    host: Latency | None = None

    @property
    def refusal(self) -> str:
        """Why the NNAPI / eager ratio is not given (empty: it is, or there is no eager)."""
        if self.nnapi is None or self.eager is None:
            return ""
        return refusal({"NNAPI": self.nnapi, "eager": self.eager})

    @property
    def ratio(self) -> float | None:
        """NNAPI median latency / eager median latency (above 1: NNAPI is slower); None when
        either side's measurement was contended or the sides ran under different thread
        counts."""
        if self.nnapi is None or self.eager is None or not self.eager.median or self.refusal:
            return None
        return self.nnapi.median / self.eager.median

    @property
    def pools_contend(self) -> bool:
        """True when several threads ran slower than one: thread pools (ours, PyTorch's,
        NumPy's BLAS, another process's) are competing for the cores."""
        if self.nnapi is None or self.single_thread is None:
            return False
        return self.nnapi.median > CONTENTION_MARGIN * self.single_thread.median


@dataclass(kw_only=True)
class PartTimes:
    """A partitioned module's parts timed alone (empty for one NNAPI model)."""

    regions: list[RegionTime] = field(default_factory=list)
    cpu: Latency | None = None  # the CPU nodes alone


@dataclass(kw_only=True)
class BenchReport:
    inputs: list[dict[str, Any]]  # per input: shape, dtype
    threads: int | None
    backend: str = ""
    quantized_engine: str = ""  # PyTorch's engine for a quantized original ("": not one)
    first_call: FirstCall = field(default_factory=FirstCall)
    latency: Latencies = field(default_factory=Latencies)
    output_errors: list[dict[str, Any]] = field(default_factory=list)  # output, error, unit
    profile: HostProfile | None = None
    parts: PartTimes = field(default_factory=PartTimes)

    @property
    def outside_runtime(self) -> float | None:
        """Median NNAPI latency minus the median of the host runtime's own unprofiled runs
        (timed beside them, as many): what the wrapper module, PyTorch's NNAPI runtime, the C
        API and its copies add; noisy, so it can come out negative."""
        nnapi, host = self.latency.nnapi, self.latency.host
        if nnapi is None or host is None:
            return None
        return nnapi.median - host.median

    def to_json(self, slowest: int = 10) -> dict[str, Any]:
        first, latency = self.first_call, self.latency
        data: dict[str, Any] = {
            "inputs": self.inputs, "threads": self.threads, "backend": self.backend,
            "compile_ms": first.compile_seconds * 1e3,
            "first_run_ms": first.run_seconds * 1e3, "first_use": first.first_use,
            "nnapi": latency.nnapi.to_json() if latency.nnapi else None,
            "eager": latency.eager.to_json() if latency.eager else None,
            "ratio": latency.ratio, "ratio_refused": latency.refusal or None,
            "quantized_engine": self.quantized_engine or None,
            "host_runtime": latency.host.to_json() if latency.host else None,
            "output_errors": self.output_errors,
            "single_thread": latency.single_thread.to_json() if latency.single_thread
            else None,
            "pools_contend": latency.pools_contend,
            "outside_runtime_ms": None if self.outside_runtime is None
            else self.outside_runtime * 1e3}
        if self.parts.regions:
            data["regions"] = [{"region": r.index, "name": r.name or f"region_{r.index}",
                                "operations": r.operations, "executions": r.executions,
                                **r.latency.to_json()} for r in self.parts.regions]
            data["cpu"] = self.parts.cpu.to_json() if self.parts.cpu else None
        if self.profile is not None:
            p = self.profile
            data["host_profile"] = {
                "runs": p.runs, "wall_ms": p.wall_seconds * 1e3, "operations_ms": p.total * 1e3,
                "by_type": [dict(asdict(t), ms=t.seconds * 1e3) for t in p.by_type],
                "slowest": [dict(asdict(op), ms=op.seconds * 1e3) for op in p.slowest(slowest)],
            }
        return data


# ------------------------------------------------------------------------------ pieces


# Several threads slower than one by more than this factor: the pools contend.
class OriginalMismatch(ValueError):
    """The original's outputs are not the converted module's: it is not the model the
    module was converted from."""


def _compare_outputs(actual: object, expected: object) -> list[dict[str, Any]]:
    """Each output's error against the original's (:class:`OriginalMismatch` when their
    count or shapes differ)."""
    actual_leaves, expected_leaves = leaves_of(actual), leaves_of(expected)
    if len(actual_leaves) != len(expected_leaves):
        raise OriginalMismatch(f"it returns {len(expected_leaves)} output tensor(s), the"
                               f" converted module {len(actual_leaves)}")
    errors = []
    for i, (a, e) in enumerate(zip(actual_leaves, expected_leaves, strict=True)):
        if tuple(a.shape) != tuple(e.shape):
            raise OriginalMismatch(f"its output {i} has shape {list(e.shape)}, the converted"
                                   f" module's {list(a.shape)}")
        error, unit = tensor_error(a, e)
        errors.append({"output": i, "error": error, "unit": unit})
    return errors


CONTENTION_MARGIN = 1.1
def first_run(module: torch.jit.ScriptModule, inputs: Sequence[torch.Tensor]
              ) -> tuple[float, float]:
    """(compile seconds, first-run seconds) of a converted module on PyTorch's NNAPI
    runtime: its compilation is dropped, redone, then the module runs once."""
    program = program_of(module)
    program.reset()
    start = time.perf_counter()
    program.init(list(inputs))
    compiled = time.perf_counter()
    module(*inputs)
    return compiled - start, time.perf_counter() - compiled


def _first_partitioned_run(module: torch.jit.ScriptModule, inputs: Sequence[torch.Tensor],
                           trace: Trace) -> tuple[float, float]:
    """:func:`first_run` of a partitioned module: every region compiled on what the
    module gives it."""
    compile_seconds = 0.0
    for program, given in zip(region_programs(module), trace.region_inputs, strict=True):
        program.reset()
        start = time.perf_counter()
        program.init(given)
        compile_seconds += time.perf_counter() - start
    start = time.perf_counter()
    module(*inputs)
    return compile_seconds, time.perf_counter() - start


def profile_on_host(module: torch.jit.ScriptModule, inputs: Sequence[torch.Tensor],
                    runs: int = 3) -> HostProfile:
    """Per-operation times of the module's NNAPI model on the host runtime (medians)."""
    return profile_program(program_of(module), inputs, runs)


def profile_program(program: torch.jit.ScriptModule, inputs: Sequence[torch.Tensor], runs: int = 3,
                    region: int = -1) -> HostProfile:
    """:func:`profile_on_host` of one NnapiProgram (region ``region`` of a partitioned
    module)."""
    model, compilation, ready = _on_host(program, inputs)
    per_operation: dict[int, list[float]] = defaultdict(list)
    walls = []
    for _ in range(max(1, runs)):
        start = time.perf_counter()
        result = compilation.run(ready, profile=True)
        walls.append(time.perf_counter() - start)
        for timing in result.timings:
            per_operation[timing.position].append(timing.seconds)
    medians = {k: statistics.median(v) for k, v in per_operation.items()}
    operations = []
    for k, operation in enumerate(model.operations):
        seconds = medians.get(k, 0.0)
        operations.append(OperationTime(
            k, operation.type.name, seconds, 0.0,
            [_operand(model, compilation.shapes, i) for i in operation.inputs
             if _is_tensor(model, i)],
            [_operand(model, compilation.shapes, o) for o in operation.outputs],
            model.operands[operation.inputs[0]].type.name if operation.inputs else "", region))
    return _profile(len(walls), statistics.median(walls), operations)


def _on_host(program: torch.jit.ScriptModule, inputs: Sequence[torch.Tensor]
             ) -> tuple[Model, Any, list[Any]]:
    """The program's NNAPI model, compiled on the host runtime, and its inputs as arrays."""
    from ...runtime import Compilation

    model = model_for(program, list(inputs))
    compilation = Compilation(model, preference=int(program.compilation_preference))
    ready = [x.int_repr().numpy() if x.is_quantized else x.numpy()
             for x in program.prepare_inputs(list(inputs))]
    return model, compilation, ready


def _profile(runs: int, wall: float, operations: list[OperationTime]) -> HostProfile:
    """A profile of these operations: shares of their total, times by type."""
    total = sum(op.seconds for op in operations) or 1e-30
    for op in operations:
        op.share = op.seconds / total
    grouped: dict[str, list[OperationTime]] = defaultdict(list)
    for op in operations:
        grouped[op.type].append(op)
    by_type = sorted((TypeTime(name, sum(o.seconds for o in ops),
                               sum(o.seconds for o in ops) / total, len(ops))
                      for name, ops in grouped.items()), key=lambda t: -t.seconds)
    return HostProfile(runs, wall, operations, by_type)


def _is_tensor(model: Model, index: int) -> bool:
    operand = model.operands[index]
    return not operand.info.is_scalar and operand.lifetime is not Lifetime.NO_VALUE


def _operand(model: Model, shapes: Sequence[Sequence[int]] | None, index: int) -> str:
    operand = model.operands[index]
    shape = shapes[index] if shapes is not None else operand.dimensions
    dims = "x".join(str(int(d)) for d in shape) or "scalar"
    return f"const {dims}" if operand.lifetime is Lifetime.CONSTANT else dims


# ------------------------------------------------------------------------------ the bench


def bench_module(module: torch.jit.ScriptModule, inputs: Sequence[torch.Tensor], *,
                 runs: int = 20, threads: int | None = None,
                 original: Callable[..., object] | None = None, profile_runs: int = 3,
                 engine: str | None = None,
                 progress: Callable[[str], None] | None = None) -> BenchReport:
    """Latency of a converted module on PyTorch's NNAPI runtime (and of ``original`` in
    eager PyTorch when given, a quantized one with PyTorch's quantized ``engine``, None: its
    default), and its host-runtime profile (``profile_runs=0``: none). Each side is timed on
    the same thread count with the other's pool quiet (timing.quiet_pools). ``progress`` is
    told each step."""
    step = progress or (lambda text: None)
    inputs = tuple(inputs)
    report = BenchReport(
        inputs=[{"shape": list(x.shape), "dtype": str(x.dtype).replace("torch.", "")}
                for x in inputs], threads=threads)
    first, latency = report.first_call, report.latency
    first.first_use = "torch_nnapi.capi.bridge" not in sys.modules
    partitioned = is_partitioned(module)
    if partitioned and has_bodies(module):
        return _bench_inlined(module, inputs, report, runs=runs, original=original,
                              profile_runs=profile_runs, engine=engine, step=step)
    count = threads or get_num_threads()
    # the converted module's own TorchScript is glue, unless CPU nodes run in it
    nnapi_pools = functools.partial(quiet_pools, count,
                                    torch_threads=count if partitioned else 1)
    with num_threads(threads), torch.no_grad():
        step("compiling")
        if partitioned:
            trace = run_apart(module, inputs, lambda program, given: program(given))
            first.compile_seconds, first.run_seconds = _first_partitioned_run(
                module, inputs, trace)
        else:
            first.compile_seconds, first.run_seconds = first_run(module, inputs)
        library = loaded_nnapi_library()
        report.backend = "PyTorch's NNAPI runtime" + (f" ({library})" if library else "")
        step(f"timing {runs} runs on NNAPI")
        with nnapi_pools():
            latency.nnapi = time_calls(lambda: module(*inputs), runs, side="nnapi")
            if not partitioned:
                _, compilation, ready = _on_host(program_of(module), inputs)
                latency.host = time_calls(lambda: compilation.run(ready), runs)
        latency.nnapi.threads = count
        if count > 1:
            step("timing a few runs on one thread")
            with quiet_pools(1):
                latency.single_thread = time_calls(lambda: module(*inputs), max(3, runs // 2))
        if partitioned:
            with nnapi_pools():
                report.parts = _time_apart(module, inputs, trace, runs)
        if original is not None:
            _time_original(module, inputs, report, runs=runs, original=original, engine=engine,
                           step=step)
        if profile_runs > 0:
            step(f"profiling {profile_runs} runs on the host runtime")
        if profile_runs > 0 and partitioned:
            calls = zip(region_programs(module), trace.region_inputs, strict=True)
            profiles = [profile_program(program, given, profile_runs, k)
                        for k, (program, given) in enumerate(calls)]
            report.profile = _profile(profile_runs, sum(p.wall_seconds for p in profiles),
                                      [op for p in profiles for op in p.operations])
        elif profile_runs > 0:
            report.profile = profile_on_host(module, inputs, profile_runs)
    return report


def uses_quantized_kernels(model: Callable[..., object]) -> bool:
    """Whether eager ``model`` runs PyTorch's quantized kernels (whose engine then matters):
    quantized modules, or quantized ops in a TorchScript graph (seen through a wrapper that
    sets ``__wrapped__``)."""
    model = getattr(model, "__wrapped__", model)
    if isinstance(model, torch.jit.ScriptModule):
        try:
            graph = str(model.inlined_graph)
        except (AttributeError, RuntimeError):
            return False
        return "quantized::" in graph or "aten::quantize_per_" in graph
    if isinstance(model, torch.nn.Module):
        return any(".quantized" in type(m).__module__ for m in model.modules())
    return False


def _time_original(module: torch.jit.ScriptModule, inputs: tuple[torch.Tensor, ...],
                   report: BenchReport, *, runs: int, original: Callable[..., object],
                   engine: str | None, step: Callable[[str], None]) -> None:
    """The original in eager PyTorch, on the NNAPI side's thread count with that side's
    pools quiet, with PyTorch's quantized ``engine``; and the outputs compared."""
    step(f"timing {runs} runs of the original in eager PyTorch")
    count = report.threads or get_num_threads()
    with quantized_engine(engine), quiet_pools(count):
        if uses_quantized_kernels(original):
            report.quantized_engine = torch.backends.quantized.engine
        expected = original(*inputs)
        report.latency.eager = time_calls(lambda: original(*inputs), runs, side="eager")
    report.latency.eager.threads = count
    report.output_errors += _compare_outputs(module(*inputs), expected)


def _bench_inlined(module: torch.jit.ScriptModule, inputs: tuple[torch.Tensor, ...],
                   report: BenchReport, *, runs: int, original: Callable[..., object] | None,
                   profile_runs: int, engine: str | None, step: Callable[[str], None]
                   ) -> BenchReport:
    """:func:`bench_module` of a module with regions inside loops and branches."""
    count = report.threads or get_num_threads()
    with num_threads(report.threads), torch.no_grad():
        step("compiling")
        inlined = inlined_program(module)
        run_inlined(inlined, inputs, lambda region, given: region.program(given))
        first = report.first_call
        for region in inlined.regions:
            if region.calls:  # a region no branch reached on these inputs stays as loaded
                region.program.reset()
                start = time.perf_counter()
                region.program.init(region.calls[0])
                first.compile_seconds += time.perf_counter() - start
        start = time.perf_counter()
        module(*inputs)
        first.run_seconds = time.perf_counter() - start
        library = loaded_nnapi_library()
        report.backend = "PyTorch's NNAPI runtime" + (f" ({library})" if library else "")
        step(f"timing {runs} runs on NNAPI")
        # CPU nodes run in the module's TorchScript: its pool keeps the thread count
        with quiet_pools(count, torch_threads=count):
            report.latency.nnapi = time_calls(lambda: module(*inputs), runs, side="nnapi")
            report.parts = _time_inlined(inlined, inputs, runs)
        report.latency.nnapi.threads = count
        if original is not None:
            _time_original(module, inputs, report, runs=runs, original=original, engine=engine,
                           step=step)
        reached = [(k, r) for k, r in enumerate(inlined.regions) if r.calls]
        if profile_runs > 0 and reached:
            step(f"profiling {profile_runs} runs on the host runtime")
            profiles = [profile_program(r.program, r.calls[0], profile_runs, k)
                        for k, r in reached]
            report.profile = _profile(profile_runs, sum(p.wall_seconds for p in profiles),
                                      [op for p in profiles for op in p.operations])
    return report


def _time_inlined(inlined: InlinedProgram, inputs: tuple[torch.Tensor, ...], runs: int
                  ) -> PartTimes:
    """Each region's executions timed within ``runs`` whole runs, summed per run; the CPU
    nodes: the rest of each run."""
    spent = [[0.0] * len(inlined.regions) for _ in range(max(1, runs))]
    position = {id(region): k for k, region in enumerate(inlined.regions)}
    walls = []
    for run in spent:
        for region in inlined.regions:
            region.calls.clear()

        def timed(region: InlinedRegion, given: list[torch.Tensor], run: list[float] = run
                  ) -> list[torch.Tensor]:
            start = time.perf_counter()
            outputs: list[torch.Tensor] = region.program(given)
            run[position[id(region)]] += time.perf_counter() - start
            return outputs

        start = time.perf_counter()
        run_inlined(inlined, inputs, timed)
        walls.append(time.perf_counter() - start)
    parts = PartTimes()
    for k, region in enumerate(inlined.regions):
        if not region.calls:
            continue
        operations = len(model_for(region.program, region.calls[0]).operations)
        parts.regions.append(RegionTime(k, operations, Latency([run[k] for run in spent]),
                                        region.name, len(region.calls)))
    parts.cpu = Latency([wall - sum(run) for wall, run in zip(walls, spent, strict=True)])
    return parts


def _time_apart(module: torch.jit.ScriptModule, inputs: tuple[torch.Tensor, ...],
                trace: Trace, runs: int) -> PartTimes:
    """Each region alone on what the module gives it; the CPU nodes alone on the regions'
    outputs."""
    parts = PartTimes()
    calls = zip(region_programs(module), trace.region_inputs, strict=True)
    for k, (program, given) in enumerate(calls):
        operations = len(model_for(program, given).operations)
        parts.regions.append(RegionTime(k, operations,
                                        time_calls(functools.partial(program, given), runs)))
    cpu = cpu_program(module)
    parts.cpu = time_calls(lambda: cpu(*inputs, *trace.region_outputs), runs)
    return parts


__all__ = ["BenchReport", "FirstCall", "HostProfile", "Latencies", "Latency", "OperationTime",
           "PartTimes", "RegionTime", "TypeTime", "bench_module", "first_run",
           "profile_on_host", "profile_program", "time_calls", "uses_quantized_kernels"]
