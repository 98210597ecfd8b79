"""The NNAPI quantizer: a torchao PT2E ``Quantizer`` that annotates what NNAPI runs in 8 bits.

For the target feature level it annotates exactly the ops ``policy.RULES`` lists:

* convolutions and linear layers: activations uint8 asymmetric, weights int8 symmetric per
  tensor (PyTorch's serialized NNAPI format cannot carry per-channel scales), or with
  ``per_channel`` per output channel (TENSOR_QUANT8_SYMM_PER_CHANNEL, level 3, which the
  ExecuTorch back-end carries; transposed convolutions stay per tensor), the bias int32 with
  scale = input scale x weight scale (per channel likewise), as NNAPI requires; a following
  ReLU/ReLU6 shares the output (NNAPI fuses it);
* ADD and MUL of two activations, each input with its own scale (NNAPI requantizes);
* CONCATENATION: before level 3 every input and the output share one scale, as NNAPI then
  requires; from level 3 each has its own;
* pools, clamps, reshapes and other data movement: output quantized like the input;
* sigmoid, softmax, tanh: the output quantization NNAPI fixes (read from the signatures);
* hardswish (HARD_SWISH, level 4): the output observed on its own.

At level 4 activations are int8 (TENSOR_QUANT8_ASYMM_SIGNED, [-128, 127]) instead of uint8;
the weights stay int8 symmetric.

Everything else stays float, and PT2E places the quantize/dequantize pairs around it. At
levels 1 and 2, which have no QUANTIZE, whatever follows a float op stays float too.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import torch
from torch.fx import GraphModule, Node

from ..convert import quant_policy as policy
from ._torchao import (
    Q_ANNOTATION_KEY,
    DerivedQuantizationSpec,
    FakeQuantize,
    FixedQParamsQuantizationSpec,
    HistogramObserver,
    MinMaxObserver,
    MovingAverageMinMaxObserver,
    MovingAveragePerChannelMinMaxObserver,
    ObserverBase,
    ObserverOrFakeQuantizeConstructor,
    PerChannelMinMaxObserver,
    QuantizationAnnotation,
    QuantizationSpec,
    QuantizationSpecBase,
    Quantizer,
    SharedQuantizationSpec,
)

OBSERVERS = ("histogram", "minmax")


def bias_qparams(observers: Sequence[ObserverBase]) -> tuple[torch.Tensor, torch.Tensor]:
    """The int32 bias quantization NNAPI requires: scale = input scale x weight scale (the
    observers of the input and of the weight)."""
    activation, weight = observers
    act_scale, _ = activation.calculate_qparams()
    weight_scale, _ = weight.calculate_qparams()
    scale = (act_scale.double() * weight_scale.double()).float()
    return scale.reshape(-1), torch.zeros_like(scale, dtype=torch.int32).reshape(-1)


class NnapiQuantizer(Quantizer):  # type: ignore[misc]  # torchao has no types
    """Annotates a ``torch.export`` graph for NNAPI of ``target_level`` (1-3: uint8
    activations; 4: int8); ``per_channel``: convolution and linear weights with one scale per
    output channel (level 3 and up)."""

    def __init__(self, target_level: int = 3, *, is_qat: bool = False,
                 observer: str = "histogram", per_channel: bool = False) -> None:
        super().__init__()
        if observer not in OBSERVERS:
            raise ValueError(f"observer must be one of {', '.join(OBSERVERS)}, got {observer!r}")
        self.target_level = int(target_level)
        self.is_qat = is_qat
        self.operand_type = policy.quantized_activation_type(self.target_level)
        self.per_channel = bool(per_channel)
        if self.per_channel and self.target_level < policy.per_channel_level():
            raise ValueError(f"per_channel=True: per-channel weights"
                             f" (TENSOR_QUANT8_SYMM_PER_CHANNEL) need target_level"
                             f" {policy.per_channel_level()} (Android 10) or higher, got"
                             f" target_level={self.target_level}")
        signed = self.operand_type != policy.UINT8
        self.act_dtype, self.act_range = (torch.int8, (-128, 127)) if signed \
            else (torch.uint8, (0, 255))
        self.act_qspec = QuantizationSpec(
            dtype=self.act_dtype, quant_min=self.act_range[0], quant_max=self.act_range[1],
            qscheme=torch.per_tensor_affine,
            observer_or_fake_quant_ctr=self._activation_observer(observer))
        self.weight_qspec = QuantizationSpec(
            dtype=torch.int8, quant_min=-127, quant_max=127,
            qscheme=torch.per_tensor_symmetric,
            observer_or_fake_quant_ctr=self._weight_observer())
        # Output channels are dimension 0 of conv2d's and linear's weights.
        self.channel_weight_qspec = QuantizationSpec(
            dtype=torch.int8, quant_min=-127, quant_max=127,
            qscheme=torch.per_channel_symmetric, ch_axis=0,
            observer_or_fake_quant_ctr=self._channel_weight_observer())

    def _activation_observer(self, observer: str) -> ObserverOrFakeQuantizeConstructor:
        if self.is_qat:
            return FakeQuantize.with_args(observer=MovingAverageMinMaxObserver,
                                          eps=2 ** -12)
        cls = HistogramObserver if observer == "histogram" else MinMaxObserver
        return cls.with_args(eps=2 ** -12)

    def _weight_observer(self) -> ObserverOrFakeQuantizeConstructor:
        if self.is_qat:
            return FakeQuantize.with_args(observer=MovingAverageMinMaxObserver,
                                          qscheme=torch.per_tensor_symmetric, eps=2 ** -12)
        return MinMaxObserver.with_args(qscheme=torch.per_tensor_symmetric, eps=2 ** -12)

    def _channel_weight_observer(self) -> ObserverOrFakeQuantizeConstructor:
        if self.is_qat:
            return FakeQuantize.with_args(observer=MovingAveragePerChannelMinMaxObserver,
                                          qscheme=torch.per_channel_symmetric, ch_axis=0,
                                          eps=2 ** -12)
        return PerChannelMinMaxObserver.with_args(qscheme=torch.per_channel_symmetric,
                                                  ch_axis=0, eps=2 ** -12)

    # ------------------------------------------------------------------ annotation

    def annotate(self, model: GraphModule) -> GraphModule:
        float_nodes: set[Node] = set()  # outputs left float (levels 1-2 keep them so)
        for node in model.graph.nodes:
            if node.op != "call_function" or _annotated(node):
                continue
            found = policy.rule_for(kind_of(node), self.target_level)
            if found is None or not self._can_quantize(node, found, float_nodes):
                float_nodes.add(node)
                continue
            getattr(self, f"_annotate_{found.role}")(node)
        return model

    def _can_quantize(self, node: Node, found: policy.QuantRule, float_nodes: set[Node]) -> bool:
        inputs = _activation_inputs(node, found.role)
        if not inputs or not all(_is_float_tensor(x) for x in inputs):
            return False
        if found.role in ("conv", "linear") and not _is_constant(node.args[1]):
            return False
        if kind_of(node) in ("aten::hardtanh", "aten::hardtanh_") and \
                tuple(node.args[1:3]) not in ((0.0, 6.0), (-1.0, 1.0)):
            return False
        # QUANTIZE, needed to re-enter 8 bits after a float op, came with level 3
        return self.target_level >= 3 or not any(x in float_nodes for x in inputs)

    def _input(self, x: Node) -> QuantizationSpecBase:
        """An input edge keeps the quantization its producer's output has (a fixed one
        included: no requantization between them), else gets its own observer."""
        annotation = x.meta.get(Q_ANNOTATION_KEY)
        if annotation is not None and annotation.output_qspec is not None:
            return SharedQuantizationSpec(x)
        return self.act_qspec

    def _annotate_conv(self, node: Node) -> None:
        args = _args(node)
        x, weight = args[0], args[1]
        bias = args[2] if len(args) > 2 else None
        per_channel = self.per_channel and kind_of(node) != "aten::conv_transpose2d"
        qspecs: dict[Node, QuantizationSpecBase | None] = {
            x: self._input(x),
            weight: self.channel_weight_qspec if per_channel else self.weight_qspec}
        if isinstance(bias, Node):
            qspecs[bias] = DerivedQuantizationSpec(
                derived_from=[(x, node), (weight, node)], derive_qparams_fn=bias_qparams,
                dtype=torch.int32, quant_min=-2 ** 31, quant_max=2 ** 31 - 1,
                qscheme=torch.per_channel_symmetric if per_channel
                else torch.per_tensor_symmetric, ch_axis=0 if per_channel else None)
        _annotate(node, qspecs, None)
        self._annotate_output(node)

    _annotate_linear = _annotate_conv

    def _annotate_binary(self, node: Node) -> None:
        _annotate(node, {x: self._input(x) for x in _args(node)[:2]}, None)
        self._annotate_output(node)

    def _annotate_unary(self, node: Node) -> None:
        x = _args(node)[0]
        _annotate(node, {x: self._input(x)}, self.act_qspec)

    def _annotate_output(self, node: Node) -> None:
        """The output of ``node``, or of the ReLU/ReLU6 NNAPI fuses into it (a batch norm
        between them, in QAT, is folded later)."""
        last = node
        users = list(node.users)
        if len(users) == 1 and kind_of(users[0]) == "aten::batch_norm":
            last = users[0]
            _annotate(last, {}, None)
            users = list(last.users)
        if len(users) == 1 and kind_of(users[0]) in policy.FUSED_ACTIVATIONS \
                and self._fusable(users[0]):
            last = users[0]
            _annotate(last, {}, None)
        last.meta[Q_ANNOTATION_KEY].output_qspec = self.act_qspec

    def _fusable(self, activation: Node) -> bool:
        if kind_of(activation) in ("aten::hardtanh", "aten::hardtanh_"):
            return tuple(activation.args[1:3]) == (0.0, 6.0)
        return True

    def _annotate_cat(self, node: Node) -> None:
        items = [x for x in _args(node)[0] if isinstance(x, Node)]
        if self.target_level >= 3:
            _annotate(node, {x: self._input(x) for x in items}, self.act_qspec)
            return
        first = items[0]
        shared = SharedQuantizationSpec((first, node))
        qspecs: dict[Node, QuantizationSpecBase | None] = {first: self._input(first)}
        qspecs.update({x: shared for x in items[1:]})
        _annotate(node, qspecs, shared)

    def _annotate_same(self, node: Node) -> None:
        x = _args(node)[0]
        _annotate(node, {x: self._input(x)}, SharedQuantizationSpec((x, node)))

    def _annotate_fixed(self, node: Node) -> None:
        found = policy.RULES[kind_of(node)]
        fixed = policy.fixed_output(found.nnapi, self.operand_type)
        if fixed is None:  # the policy lists only operations whose signature fixes one
            raise ValueError(f"{found.nnapi.name} has no fixed {self.operand_type.name} output")
        scale, zero_point = fixed
        output = FixedQParamsQuantizationSpec(
            dtype=self.act_dtype, scale=scale, zero_point=zero_point,
            quant_min=self.act_range[0], quant_max=self.act_range[1],
            qscheme=torch.per_tensor_affine)
        x = _args(node)[0]
        _annotate(node, {x: self._input(x)}, output)

    # ------------------------------------------------------------------ validation

    def validate(self, model: GraphModule) -> None:
        """Post-training quantization calibrates what inference computes: a batch norm or
        dropout left in training mode would calibrate something else."""
        if not self.is_qat:
            require_eval_mode(model)


def require_eval_mode(model: GraphModule) -> None:
    """Raises ValueError naming the first batch norm or dropout in training mode."""
    for node in model.graph.nodes:
        kind = kind_of(node)
        training = (kind == "aten::batch_norm" and len(node.args) > 5 and node.args[5]) or \
            (kind in ("aten::dropout", "aten::dropout_") and len(node.args) > 2
             and node.args[2]) or kind == "aten::_native_batch_norm_legit"
        if training:
            raise ValueError(f"{node.name}: the model was exported in training mode; call"
                             " model.eval() before quantizing (or use prepare_qat)")


def kind_of(node: Node) -> str:
    """The TorchScript-style kind of an fx node: ``aten.conv2d.default`` -> ``aten::conv2d``."""
    target = node.target
    if node.op == "call_function" and isinstance(target, torch._ops.OpOverload):
        return target._schema.name
    return ""


def _annotated(node: Node) -> bool:
    annotation = node.meta.get(Q_ANNOTATION_KEY)
    return annotation is not None and annotation._annotated


def _annotate(node: Node, input_qspecs: dict[Node, QuantizationSpecBase | None],
              output_qspec: QuantizationSpecBase | None) -> None:
    node.meta[Q_ANNOTATION_KEY] = QuantizationAnnotation(
        input_qspec_map=input_qspecs, output_qspec=output_qspec, _annotated=True)


def _args(node: Node) -> list[Any]:
    return list(node.args)


def _activation_inputs(node: Node, role: str) -> list[Node]:
    args = _args(node)
    if role == "cat":
        return list(args[0]) if all(isinstance(x, Node) for x in args[0]) else []
    if role == "binary":
        return args[:2] if all(isinstance(x, Node) for x in args[:2]) else []
    x = args[0] if args else None
    return [x] if isinstance(x, Node) else []


def _is_float_tensor(x: Node) -> bool:
    val = x.meta.get("val")
    return isinstance(val, torch.Tensor) and val.dtype == torch.float32


def _is_constant(x: object) -> bool:
    return isinstance(x, Node) and x.op == "get_attr"


__all__ = ["NnapiQuantizer", "bias_qparams", "kind_of", "require_eval_mode"]
