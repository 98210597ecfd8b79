"""The PT2E model of ``torch_nnapi.quantize`` lowered with ExecuTorch's XnnpackPartitioner:
XNNPACK's integer kernels beside NNAPI's, on the same quantized model.

``torch_nnapi.quantize`` stores each bias as int32 (scale = input scale x weight scale, as
NNAPI requires), dequantized in the graph. XNNPACK's partitioner takes a linear or
convolution only with a float bias: it leaves those layers to the portable kernels, whose
int8 weights then reach XNNPACK through a transpose it rejects when the program loads
("Failed to create static transpose node": "ExecuTorch could not load the program").
:func:`float_biases` replaces each dequantized int32 constant by its float value, which is
exactly what the PT2E model computes with, so both back-ends run the same model. Shared by
the tests and bench/executorch.py.
"""

from __future__ import annotations

import copy

import torch

_DEQUANTIZE = (torch.ops.quantized_decomposed.dequantize_per_tensor.default,
               torch.ops.quantized_decomposed.dequantize_per_channel.default)


def float_biases(model: torch.fx.GraphModule) -> torch.fx.GraphModule:
    """A copy of the PT2E ``model`` whose dequantized int32 constants (the biases, per tensor
    or per channel) are float constants of the same values."""
    model = copy.deepcopy(model)
    graph = model.graph
    for node in list(graph.nodes):
        source = node.args[0] if node.target in _DEQUANTIZE else None
        if not isinstance(source, torch.fx.Node) \
                or source.op != "get_attr" or getattr(model, str(source.target)).dtype \
                != torch.int32:
            continue
        args = [getattr(model, str(a.target)) if isinstance(a, torch.fx.Node) else a
                for a in node.args]
        name = f"{source.target}_float"
        model.register_buffer(name, node.target(*args))
        with graph.inserting_before(node):
            constant = graph.get_attr(name)
        node.replace_all_uses_with(constant)
        graph.erase_node(node)
    graph.eliminate_dead_code()
    model.recompile()
    return model


def xnnpack_pte(model: torch.nn.Module, x: torch.Tensor) -> bytes:
    """The .pte of ``model`` (a PT2E GraphModule has its biases made float) with
    XnnpackPartitioner; the rest on the portable and quantized kernels."""
    import executorch.kernels.quantized  # noqa: F401 - the quantize/dequantize out variants
    from executorch.backends.xnnpack.partition.xnnpack_partitioner import XnnpackPartitioner
    from executorch.exir import EdgeCompileConfig, to_edge_transform_and_lower

    from torch_nnapi.convert.executorch.pte import exported_program

    if isinstance(model, torch.fx.GraphModule):
        model = float_biases(model)
    edge = to_edge_transform_and_lower(exported_program(model, (x,)),
                                       partitioner=[XnnpackPartitioner()],
                                       compile_config=EdgeCompileConfig(_check_ir_validity=False))
    return bytes(edge.to_executorch().buffer)
