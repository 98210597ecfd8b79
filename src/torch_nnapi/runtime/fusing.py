"""Which steps of a compiled model one native runner computes together, found once at compile
time (native kernels only): pairs (registry.register_fusion: a producer whose only reader is
its consumer), planned at the first execution of the compile-time shapes; and groups
(registry.register_group_member): chains of operations, each of whose results is read by
later operations of its group alone, ending in one whose result anything may read, planned
here at once from the compile-time shapes.

Groups grow backwards from each result: an operation joins the group of its readers when all
of them belong to that one group and its result is no model output. So the group's runner,
called where its last operation was, has every input it reads already computed, and nothing
outside the group misses the intermediate results it never makes.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence

from .context import KernelContext
from .registry import fusion_for, group_member_for, group_planner
from .steps import Fusion, Step, prefixed


def find_pairs(steps: Sequence[Step], model_outputs: set[int]) -> None:
    """Pairs each step of one output with the step it can be fused with: one whose only
    output is read by this step alone and is no model output; steps of groups stay out."""
    producers: dict[int, Step] = {}
    readers: dict[int, set[int]] = {}
    for step in steps:
        for i in step.operation.inputs:
            readers.setdefault(i, set()).add(step.position)
        for o in step.operation.outputs:
            producers[o] = step
    for step in steps:
        if len(step.operation.outputs) != 1 or step.fusion is not None or step.fused_away:
            continue
        for i in step.operation.inputs:
            producer = producers.get(i)
            if producer is not None and len(producer.operation.outputs) == 1 and \
                    producer.fusion is None and not producer.fused_away and \
                    i not in model_outputs and readers[i] == {step.position} and \
                    fusion_for(producer.operation.type, step.operation.type) is not None:
                step.fusion = Fusion((producer,), tuple(producer.operation.inputs))
                break


def find_groups(steps: Sequence[Step], model_outputs: set[int],
                context_of: Callable[[Step], KernelContext]) -> None:
    """Forms the group fusions and plans them (``context_of``: a step's context at the
    compile-time shapes). Before the pairs: a row reduction of a product is a group's."""
    planner = group_planner()
    if planner is None:
        return

    def member(step: Step) -> bool:
        predicate = group_member_for(step.operation.type)
        return predicate is not None and step.settled is not None and \
            not any(step.rounded) and predicate(context_of(step))

    for group in _groups(steps, model_outputs, member):
        sink = group[-1]
        try:
            plan = planner([(step.operation, context_of(step)) for step in group])
        except Exception as e:  # noqa: BLE001 - a planner bug must not escape as a crash
            raise prefixed(e, sink.where) from e
        if plan is None or not plan.inputs:
            continue
        sink.fusion = Fusion(tuple(group[:-1]), plan.inputs)
        sink.fused_runner = plan.runner
        for step in group[:-1]:
            step.fused_away = True


def _groups(steps: Sequence[Step], model_outputs: set[int],
            member: Callable[[Step], bool]) -> list[list[Step]]:
    """The groups of two or more member steps, each in model order (its result last)."""
    readers: dict[int, list[Step]] = {}
    for step in steps:
        for i in step.operation.inputs:
            readers.setdefault(i, []).append(step)
    group_of: dict[int, int] = {}  # step position -> the position of its group's last step
    groups: dict[int, list[Step]] = {}
    for step in reversed(steps):
        if not member(step):
            continue
        outputs = step.operation.outputs
        target = None
        if len(outputs) == 1 and outputs[0] not in model_outputs:
            joined = {group_of.get(reader.position) for reader in readers.get(outputs[0], [])}
            if len(joined) == 1:
                target = joined.pop()
        if target is None:
            target = step.position
            groups[target] = []
        group_of[step.position] = target
        groups[target].append(step)
    return [group[::-1] for group in groups.values() if len(group) > 1]
