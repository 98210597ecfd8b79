"""fallback_run: a partitioned module taken apart (host runtime, CPU nodes alone), and
one whose regions sit inside loops and branches, inlined."""

from __future__ import annotations

import torch

from torch_nnapi.convert.api import convert_with_details
from torch_nnapi.convert.fallback.run import (
    cpu_program,
    inlined_program,
    is_partitioned,
    region_programs,
    run_apart,
    run_inlined,
)
from torch_nnapi.convert.tools.host import run_on_host, run_program_on_host

from .. import control_models as cm
from .. import fallback_models as fm
from ..harness import assert_close
from .test_convert import image


def _converted(model, x, **options):
    return convert_with_details(model, x, fallback=True, **options).module


def test_runs_on_the_host_runtime():
    model, x = fm.randomize(fm.Residual(blocks=2)), image()
    module = _converted(model, x)
    with torch.no_grad():
        expected = model(x)
    assert_close(run_on_host(module, x), expected)
    out, timings = run_on_host(module, x, profile=True)
    assert_close(out, expected)
    assert {t.operation for t in timings} >= {"CONV_2D", "ADD"}


def test_taken_apart_each_region_sees_what_the_module_gives_it():
    model, x = fm.randomize(fm.ParallelBranches()), image()
    module = _converted(model, x)
    seen = []

    def run_region(program, tensors):
        seen.append([t.shape for t in tensors])
        return program(tensors)

    trace = run_apart(module, [x], run_region)
    assert len(seen) == len(region_programs(module)) == 2
    assert seen[0] == [x.shape]
    with torch.no_grad():
        assert_close(trace.outputs, model(x))
        returned, *region_inputs = cpu_program(module)(x, *trace.region_outputs)
    assert_close(returned, model(x))
    assert [len(r) for r in region_inputs] == [len(r) for r in trace.region_inputs]


def test_flexible_regions_on_the_host_runtime():
    model = fm.randomize(fm.Classifier())
    module = _converted(model, image(shape=(1, 3, 16, 16)), flexible={0: [2, 3]})
    x = image(3, (1, 3, 24, 8))
    with torch.no_grad():
        assert_close(run_on_host(module, x), model(x))


def test_single_models_are_not_partitioned():
    model = torch.nn.Sequential(fm.conv(3, 4))
    module = convert_with_details(fm.randomize(model), image()).module
    assert not is_partitioned(module)
    outs, _ = run_program_on_host(module.nnapi, [image()])
    with torch.no_grad():
        assert_close(outs[0], model(image()))


def test_saves_after_a_run(tmp_path):
    """Each region's compilation is left out of the file and redone after loading."""
    model, x = fm.randomize(fm.InTheMiddle()), image()
    module = _converted(model, x)
    module(x)
    torch.jit.save(module, str(tmp_path / "m.pt"))
    with torch.no_grad():
        assert_close(torch.jit.load(str(tmp_path / "m.pt"))(x), model(x))


# Regions inside loops and branches (run_inlined): bodies inlined, each region execution seen.

def _seeded(shape, seed):
    return torch.randn(shape, generator=torch.Generator().manual_seed(seed))


def test_nested_branch_regions_run_where_the_branches_take_them():
    model = cm.scripted(cm.NestedIfs())
    runs = [(_seeded((2, 8), s),) for s in (0, 6, 1, 4)]  # then-then, then-else, else...
    module = _converted(model, runs[0])
    program = inlined_program(module)
    names = [r.name for r in program.regions]
    assert "body_0.body_0.region_0" in names and "region_0" in names  # nested, top level
    for x in runs:
        for region in program.regions:
            region.calls.clear()
        out = run_inlined(program, x, lambda region, given: region.program(given))
        assert torch.equal(out, module(*x))
        assert_close(run_on_host(module, *x), model(*x))
        reached = {r.name for r in program.regions if r.calls}
        assert ("body_0.region_0" in reached) != ("body_1.region_0" in reached)  # one branch


def test_loop_regions_run_once_per_iteration_on_the_host_runtime():
    model = cm.scripted(cm.DataDependentLoop())
    for seed in range(3):
        x = (_seeded((2, 8), seed),)
        module = _converted(model, x)
        program = inlined_program(module)
        run_inlined(program, x, lambda region, given: region.program(given))
        (first,) = [r for r in program.regions if r.name == "body_0.region_0"]
        assert len(first.calls) == int(x[0].abs().sum()) % 5 + 1  # the trip count
        out, timings = run_on_host(module, *x, profile=True)
        assert_close(out, model(*x))
        assert sum(t.operation == "FULLY_CONNECTED" for t in timings) == len(first.calls)
