"""The TorchScript capture: what it leaves of the modules it freezes and of the caller's."""

from __future__ import annotations

import gc

import torch
from torch import nn

from torch_nnapi.convert.capture.script import capture_script, standalone_function


def _model() -> nn.Module:
    torch.manual_seed(0)
    return nn.Sequential(nn.Conv2d(3, 8, 3), nn.BatchNorm2d(8), nn.ReLU()).eval()


def _weights_alive(model: nn.Module) -> int:
    """How many tensors of the weights' sizes outlive the capture (the model's own are
    parameters and buffers of ``model``, which this leaves out). ``type``, not
    ``isinstance``: the latter reads ``__class__`` of every object, which warns on
    torch.distributed's deprecated aliases."""
    gc.collect()
    own = {id(t) for t in list(model.parameters()) + list(model.buffers())}
    return sum(1 for o in gc.get_objects()
               if issubclass(type(o), torch.Tensor) and id(o) not in own
               and tuple(o.shape) == (8, 3, 3, 3))


def test_a_capture_leaves_no_copy_of_the_weights_behind():
    # PyTorch keeps a frozen module's graph, and the folded weights its constants hold,
    # after the module is gone: the capture empties the graph of the module it froze
    model, x = _model(), torch.randn(1, 3, 8, 8)
    before = _weights_alive(model)
    for _ in range(3):
        captured = capture_script(model, (x,))
        del captured
    assert _weights_alive(model) == before


def test_the_callers_frozen_module_keeps_its_graph():
    model, x = _model(), torch.randn(1, 3, 8, 8)
    frozen = torch.jit.freeze(torch.jit.trace(model, (x,)))
    expected = frozen(x)
    capture_script(frozen, (x,))
    torch.testing.assert_close(frozen(x), expected)


def test_a_standalone_function_runs_its_graph():
    graph = torch._C.parse_ir("graph(%x : Tensor):\n  %y : Tensor = aten::relu(%x)\n"
                              "  return (%y)")
    x = torch.randn(5)
    torch.testing.assert_close(standalone_function("relu", graph)(x), x.relu())
