"""Operands of the recurrent operations under test, and NumPy references."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import numpy as np

from ._single_op import F16, F32, Operand, const, feed, out


def operands(values: Sequence[Any], num_outputs: int, *, omit_as_input: bool = False,
             output_dims: Sequence[int] = (), constant_weights: bool = False) \
        -> tuple[list[Operand], list[Operand]]:
    """The inputs and outputs of a recurrent operation, its tensors all of the arrays' float
    type: an array is a model input (with ``constant_weights``, all but the first are
    constants), None an omitted operand (a constant without value, or with ``omit_as_input``
    a model input given None), an Operand (a scalar) stays as it is."""
    first = next(v for v in values if isinstance(v, np.ndarray))
    tensor = F16 if first.dtype == np.float16 else F32
    inputs = []
    for v in values:
        if isinstance(v, Operand):
            inputs.append(v)
        elif v is None:
            inputs.append((feed if omit_as_input else const)(tensor, None, dims=(0,)))
        elif constant_weights and inputs:
            inputs.append(const(tensor, v))
        else:
            inputs.append(feed(tensor, v))
    return inputs, [out(tensor, output_dims) for _ in range(num_outputs)]


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


def _lstm_gate(p: dict, g: str, x, h, aux_x, state=None):
    """One gate's pre-activation at one step: input, recurrent, auxiliary (when aux_x is not
    None), peephole (with the cell state), layer norm where p has them."""
    v = x @ p["w" + g].T + h @ p["r" + g].T
    if aux_x is not None:
        v = v + aux_x @ p["a" + g].T
    if state is not None and "p" + g in p:
        v = v + p["p" + g] * state
    if "l" + g in p:
        v = (v - v.mean(-1, keepdims=True)) / v.std(-1, keepdims=True) * p["l" + g]
    return v + p["b" + g]


def reference_lstm(p: dict, xs, h, c, activation=np.tanh, cell_clip=0.0, proj_clip=0.0,
                   aux=None):
    """Runs the LSTM equations in float64 over xs [time, batch, input]; (outputs, h, c)."""
    p = {k: v.astype(np.float64) for k, v in p.items()}
    h, c = h.astype(np.float64), c.astype(np.float64)
    outputs = []
    for t, x in enumerate(xs.astype(np.float64)):
        aux_x = None if aux is None else aux[t].astype(np.float64)
        f = sigmoid(_lstm_gate(p, "f", x, h, aux_x, c))
        i = 1 - f if "wi" not in p else sigmoid(_lstm_gate(p, "i", x, h, aux_x, c))
        c = f * c + i * activation(_lstm_gate(p, "c", x, h, aux_x))
        if cell_clip:
            c = np.clip(c, -cell_clip, cell_clip)
        hidden = sigmoid(_lstm_gate(p, "o", x, h, aux_x, c)) * activation(c)
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
