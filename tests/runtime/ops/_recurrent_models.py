"""Builds one-operation models for the recurrent kernel tests, and NumPy references."""

from __future__ import annotations

from typing import Any, NamedTuple, Sequence

import numpy as np

from torch_nnapi.nnapi import Model, OperandType, OperationType
from torch_nnapi.runtime import Compilation

F32, F16 = OperandType.TENSOR_FLOAT32, OperandType.TENSOR_FLOAT16


class S(NamedTuple):
    """A constant scalar input."""

    type: OperandType
    value: Any


def i32(v: int) -> S:
    return S(OperandType.INT32, v)


def f32(v: float) -> S:
    return S(OperandType.FLOAT32, v)


def boolean(v: bool) -> S:
    return S(OperandType.BOOL, v)


def build(op: OperationType, inputs: Sequence[Any], num_outputs: int, *,
          omit_as_input: bool = False, output_dims: Sequence[int] = (),
          constant_weights: bool = False) -> tuple[Model, list[np.ndarray | None]]:
    """A model of one operation; arrays become model inputs (with ``constant_weights``, all
    but the first become constants), None an omitted operand (a constant without value, or
    with ``omit_as_input`` a model input fed None)."""
    arrays = [v for v in inputs if isinstance(v, np.ndarray)]
    tensor = F16 if arrays[0].dtype == np.float16 else F32
    m = Model()
    ids, model_inputs, feeds = [], [], []
    for v in inputs:
        if isinstance(v, S):
            ids.append(m.add_scalar(v.type, v.value))
        elif v is None:
            o = m.add_operand(tensor, (0,))
            if omit_as_input:
                model_inputs.append(o)
                feeds.append(None)
            else:
                m.set_operand_value(o, None)
            ids.append(o)
        elif constant_weights and ids:
            ids.append(m.add_constant(tensor, v))
        else:
            o = m.add_operand(tensor, v.shape)
            model_inputs.append(o)
            feeds.append(v)
            ids.append(o)
    outs = [m.add_operand(tensor, output_dims) for _ in range(num_outputs)]
    m.add_operation(op, ids, outs)
    m.identify_inputs_and_outputs(model_inputs, outs)
    return m.finish(), feeds


def run(op: OperationType, inputs: Sequence[Any], num_outputs: int, **kwargs) \
        -> list[np.ndarray]:
    model, feeds = build(op, inputs, num_outputs, **kwargs)
    return Compilation(model).run(feeds).outputs


# --------------------------------------------------------------------------------------------
# LSTM parameters and a float64 reference written from NeuralNetworks.h's equations


def sigmoid(x):
    return 1 / (1 + np.exp(-x))


def lstm_params(rng, input_size: int, cells: int, output_size: int | None = None, *,
                cifg=False, peephole=False, layer_norm=False, projection_bias=False,
                aux_size: int | None = None) -> dict[str, np.ndarray]:
    """Random float32 weights; keys w{g} r{g} p{g} b{g} l{g} a{g} for gates i f c o."""
    output_size = output_size or cells
    gates = "fco" if cifg else "ifco"

    def r(*shape):
        return rng.uniform(-0.5, 0.5, shape).astype(np.float32)

    p = {}
    for g in gates:
        p["w" + g], p["r" + g], p["b" + g] = r(cells, input_size), r(cells, output_size), \
            r(cells)
        if layer_norm:
            p["l" + g] = rng.uniform(0.5, 1.5, cells).astype(np.float32)
        if aux_size:
            p["a" + g] = r(cells, aux_size)
    if peephole:
        for g in ("fo" if cifg else "ifo"):
            p["p" + g] = r(cells)
    if output_size != cells:
        p["proj"] = r(output_size, cells)
        if projection_bias:
            p["pb"] = r(output_size)
    return p


def lstm_weight_inputs(p: dict) -> list:
    """The 17 weight operands in NNAPI order, None where omitted."""
    return ([p.get("w" + g) for g in "ifco"] + [p.get("r" + g) for g in "ifco"]
            + [p.get("p" + g) for g in "ifo"] + [p.get("b" + g) for g in "ifco"]
            + [p.get("proj"), p.get("pb")])


def reference_lstm(p: dict, xs, h, c, activation=np.tanh, cell_clip=0.0, proj_clip=0.0,
                   aux=None):
    """Runs the LSTM equations in float64 over xs [time, batch, input]; (outputs, h, c)."""
    p = {k: v.astype(np.float64) for k, v in p.items()}
    h, c = h.astype(np.float64), c.astype(np.float64)
    outputs = []
    for t, x in enumerate(xs.astype(np.float64)):
        def gate(g, state=None):
            v = x @ p["w" + g].T + h @ p["r" + g].T
            if aux is not None:
                v = v + aux[t].astype(np.float64) @ p["a" + g].T
            if state is not None and "p" + g in p:
                v = v + p["p" + g] * state
            if "l" + g in p:
                v = (v - v.mean(-1, keepdims=True)) / v.std(-1, keepdims=True) * p["l" + g]
            return v + p["b" + g]

        f = sigmoid(gate("f", c))
        i = 1 - f if "wi" not in p else sigmoid(gate("i", c))
        c = f * c + i * activation(gate("c"))
        if cell_clip:
            c = np.clip(c, -cell_clip, cell_clip)
        hidden = sigmoid(gate("o", c)) * activation(c)
        if "proj" in p:
            hidden = hidden @ p["proj"].T + p.get("pb", 0)
            if proj_clip:
                hidden = np.clip(hidden, -proj_clip, proj_clip)
        h = hidden
        outputs.append(h)
    return np.stack(outputs), h, c


def reference_rnn(xs, h, w, r, b, activation=lambda v: np.maximum(v, 0), aux=None,
                  aux_w=None):
    outputs = []
    for t, x in enumerate(xs.astype(np.float64)):
        v = x @ w.T + h @ r.T + b
        if aux is not None:
            v = v + aux[t] @ aux_w.T
        h = activation(v)
        outputs.append(h)
    return np.stack(outputs), h
