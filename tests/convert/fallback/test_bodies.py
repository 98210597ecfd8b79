"""Loops and branches on computed values (fallback/bodies.py): the control flow stays in
TorchScript, what NNAPI runs inside the bodies runs there, through PyTorch's NNAPI runtime
on the project's library, and the result matches eager, also saved and reloaded in a fresh
process and in the lite interpreter."""

from __future__ import annotations

import torch

from torch_nnapi.convert.capture.script import capture_script
from torch_nnapi.convert.fallback.bodies import block_params, block_reads, body_examples
from torch_nnapi.convert.fallback.convert import PartitionedConversion
from torch_nnapi.convert.fallback.report import report_of

from .. import control_models as cm
from ..harness import check, check_in_fresh_process, save_for_fresh_process


def seeded(shape: tuple[int, ...], seed: int) -> torch.Tensor:
    return torch.randn(shape, generator=torch.Generator().manual_seed(seed))


def gru_inputs(seed: int, token: int) -> tuple[torch.Tensor, torch.Tensor]:
    return seeded((1, 16), seed), torch.tensor([token])


def converted(model, inputs, run_inputs, **options) -> PartitionedConversion:
    """Converts with the fallback, runs on each of ``run_inputs`` (twice: the second run
    reuses the compilations) and compares with eager."""
    conversion, _ = check(model, inputs, fallback=True,
                          run_inputs=[*run_inputs, *run_inputs], **options)
    assert isinstance(conversion, PartitionedConversion)
    return conversion


def body_operations(conversion: PartitionedConversion) -> list[dict[str, int]]:
    return [{k: n for r in b.report.regions for k, n in r.operations.items()}
            for b in conversion.report.bodies]


def test_greedy_gru_decoder_runs_its_step_on_nnapi_and_stops_at_the_end_token():
    model = cm.scripted(cm.GreedyGru())
    runs = [gru_inputs(0, 0), gru_inputs(0, 1), gru_inputs(1, 0), gru_inputs(2, 1)]
    lengths = {model(*x).shape[1] for x in runs}
    assert len(lengths) > 1 and 10 in lengths  # some break early, one runs to the end
    conversion = converted(model, gru_inputs(0, 1), runs)
    (body,) = conversion.report.bodies
    assert conversion.report.cpu[body.cpu].kind == "prim::Loop"
    assert conversion.regions == []  # everything NNAPI runs is inside the loop
    (step,) = body.report.regions  # embedding, GRU cell, linear, argmax: one execution
    assert {"GATHER", "FULLY_CONNECTED", "ARGMAX"} <= set(step.operations)
    kinds = {c.kind for c in body.report.cpu}
    assert "aten::append" in kinds and "aten::stack" not in kinds
    assert "inside prim::Loop (body)" in "\n".join(conversion.report.render())


def test_a_trip_count_from_the_data_and_a_while_loop():
    model = cm.scripted(cm.DataDependentLoop())
    runs = [(seeded((2, 8), s),) for s in range(4)]
    assert len({int(x.abs().sum()) % 5 for (x,) in runs}) > 1  # different trip counts
    conversion = converted(model, runs[0], runs)
    assert [conversion.report.cpu[b.cpu].kind for b in conversion.report.bodies] == \
        ["prim::Loop", "prim::Loop"]
    first, second = body_operations(conversion)
    assert {"FULLY_CONNECTED", "TANH", "ADD"} <= set(first)
    assert {"MUL", "MEAN"} <= set(second)  # the condition's next value too


def test_nested_branches_on_computed_values():
    """The example takes the outer and the inner ``then``; other data of its kind reaches
    the outer ``else``: those bodies run on NNAPI, and every path matches eager."""
    model = cm.scripted(cm.NestedIfs())
    runs = [(seeded((2, 8), s),) for s in (0, 6, 1, 4)]  # then-then, then-else, else...
    conversion = converted(model, runs[0], runs)
    outer, other = conversion.report.bodies
    assert conversion.report.cpu[outer.cpu].kind == "prim::If"
    assert (outer.cpu, outer.block, other.cpu, other.block) == (outer.cpu, 0, outer.cpu, 1)
    (inner,) = outer.report.bodies
    assert outer.report.cpu[inner.cpu].kind == "prim::If" and inner.block == 0
    assert "LOGISTIC" in inner.report.regions[0].operations
    assert "FULLY_CONNECTED" in other.report.regions[0].operations
    assert conversion.report.region_count == len(conversion.regions) + \
        len(outer.report.regions) + len(inner.report.regions) + len(other.report.regions)


def test_a_cascade_runs_the_large_network_only_when_the_small_one_is_unsure():
    model = cm.scripted(cm.Cascade())
    runs = [(seeded((1, 3, 12, 12), s),) for s in (1, 0, 4, 2)]
    conversion = converted(model, runs[0], runs)
    (small,) = conversion.regions
    assert small.operation_counts["CONV_2D"] == 1
    (large,) = body_operations(conversion)
    assert large["CONV_2D"] == 2


def test_a_body_reading_a_tensor_the_loop_grows_stays_as_compiled():
    model = cm.scripted(cm.GrowingLoop())
    x = seeded((2, 8), 0)
    conversion = converted(model, (x,), [(x,), (seeded((2, 8), 1),)])
    assert conversion.report.bodies == []
    assert "prim::Loop" in [c.kind for c in conversion.report.cpu]


def test_the_policy_applies_inside_the_bodies():
    model = cm.scripted(cm.DataDependentLoop())
    x = seeded((2, 8), 1)
    conversion = converted(model, (x,), [(x,)], fallback_ops=["aten::tanh"])
    first = conversion.report.bodies[0].report
    assert [c.kind for c in first.cpu if c.kind == "aten::tanh"] == ["aten::tanh"]
    assert all("TANH" not in r.operations for r in first.regions)


def test_a_body_reads_its_examples_from_its_first_run():
    model = cm.scripted(cm.GreedyGru())
    captured = capture_script(model, gru_inputs(0, 1))
    (loop,) = [n for n in captured.script.nodes() if n.kind() == "prim::Loop"]
    (block,) = loop.blocks()
    params, (reads, _) = block_params(block), block_reads(block)
    assert [v.type().kind() for v in params] == ["TensorType", "TensorType", "IntType"]
    assert [v.type().kind() for v in reads] == ["ListType"]  # the token list
    (example,) = body_examples(captured.script, [block], captured.examples)
    assert example is not None
    state, token, counter, tokens = example
    assert torch.equal(state, gru_inputs(0, 1)[0]) and token.tolist() == [1]
    assert counter == 0 and isinstance(tokens, list)


def test_the_report_keeps_the_bodies_when_saved():
    model = cm.scripted(cm.Cascade())
    conversion = converted(model, (seeded((1, 3, 12, 12), 1),), [])
    report = report_of(conversion.module)
    assert report is not None and report.bodies and report.region_count == 2
    assert report.render() == conversion.report.render()


def test_saved_modules_run_in_a_fresh_process_and_the_lite_interpreter(tmp_path):
    cases: dict[str, tuple[torch.jit.ScriptModule, tuple[torch.Tensor, ...],
                           list[tuple[torch.Tensor, ...]]]] = {
        "gru": (cm.scripted(cm.GreedyGru()), gru_inputs(0, 1),
                [gru_inputs(0, 0), gru_inputs(1, 0)]),
        "loop": (cm.scripted(cm.DataDependentLoop()), (seeded((2, 8), 0),),
                 [(seeded((2, 8), s),) for s in range(3)]),
        "ifs": (cm.scripted(cm.NestedIfs()), (seeded((2, 8), 0),),
                [(seeded((2, 8), s),) for s in (0, 6, 4)]),
        "cascade": (cm.scripted(cm.Cascade()), (seeded((1, 3, 12, 12), 1),),
                    [(seeded((1, 3, 12, 12), s),) for s in (1, 0)]),
    }
    for name, (model, example, runs) in cases.items():
        module = converted(model, example, runs[:1]).module  # saved after a run
        with torch.no_grad():
            expected = [model(*x) for x in runs]
        save_for_fresh_process(tmp_path, name, module, runs, expected)
    check_in_fresh_process(tmp_path, list(cases))
