"""Native CONV_2D, GROUPED_CONV_2D, DEPTHWISE_CONV_2D and FULLY_CONNECTED against the reference
kernels on randomized cases: shapes, strides, padding (explicit and implicit), dilation,
layouts, zero points, per-tensor and per-channel scales, rescale multipliers above and below
one, every fused activation and saturating inputs; uint8 and, with the same cases made
signed, int8 data (Android 11). Quantized results must be bit-exact."""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
import pytest

from torch_nnapi.nnapi import OperationType
from torch_nnapi.runtime.native import conv as native_conv

from ..ops._single_op import F32, I32, Q8, Q8PC, Operand, boolean, const, feed, i32, out
from ._compare import assert_close, assert_same, needs_native, run_both

Op = OperationType
pytestmark = needs_native


@dataclass
class Geometry:
    n: int
    h: int
    w: int
    kh: int
    kw: int
    stride: tuple[int, int]  # (h, w)
    dilation: tuple[int, int]
    pads: tuple[int, int, int, int] | None  # (left, right, top, bottom); None: implicit
    scheme: int  # 1 SAME, 2 VALID (implicit padding only)
    nchw: bool


def random_geometry(rng, *, dilation: bool = True) -> Geometry:
    """A window that fits: every padding smaller than the dilated filter, outputs >= 1."""
    while True:
        kh, kw = (int(v) for v in rng.integers(1, 6, 2))
        sy, sx = (int(v) for v in rng.integers(1, 4, 2))
        stride = (sy, sx)
        dil = (1, 1)
        if dilation and rng.random() < 0.4:
            dy, dx = (int(v) for v in rng.integers(1, 4, 2))
            dil = (dy, dx)
        eff_h, eff_w = (kh - 1) * dil[0] + 1, (kw - 1) * dil[1] + 1
        h, w = int(rng.integers(1, 13)), int(rng.integers(1, 13))
        implicit = rng.random() < 0.3
        if implicit:
            pads, scheme = None, int(rng.integers(1, 3))
            out_h = -(-h // stride[0]) if scheme == 1 else (h - eff_h) // stride[0] + 1
            out_w = -(-w // stride[1]) if scheme == 1 else (w - eff_w) // stride[1] + 1
        else:
            scheme = 0
            pads = (int(rng.integers(0, eff_w)), int(rng.integers(0, eff_w)),
                    int(rng.integers(0, eff_h)), int(rng.integers(0, eff_h)))
            out_h = (h + pads[2] + pads[3] - eff_h) // stride[0] + 1
            out_w = (w + pads[0] + pads[1] - eff_w) // stride[1] + 1
        if out_h >= 1 and out_w >= 1:
            return Geometry(int(rng.integers(1, 3)), h, w, kh, kw, stride, dil, pads, scheme,
                            bool(rng.random() < 0.25))


def window_args(g: Geometry, extra: tuple[int, ...], fuse: int, grouped: bool) -> list:
    """The scalars after input, filter and bias, in either form; GROUPED_CONV_2D always has
    the layout flag and no dilation."""
    args = [i32(p) for p in g.pads] if g.pads is not None else [i32(g.scheme)]
    args += [i32(g.stride[1]), i32(g.stride[0]), *map(i32, extra), i32(fuse)]
    if grouped:
        return args + [boolean(g.nchw)]
    if g.nchw or g.dilation != (1, 1):
        args.append(boolean(g.nchw))
    if g.dilation != (1, 1):
        args += [i32(g.dilation[1]), i32(g.dilation[0])]
    return args


def image(rng, g: Geometry, channels: int, quantized: bool, saturate: str = "") -> np.ndarray:
    shape = (g.n, channels, g.h, g.w) if g.nchw else (g.n, g.h, g.w, channels)
    if not quantized:
        return rng.standard_normal(shape).astype(np.float32)
    if saturate == "high":
        return np.full(shape, 255, np.uint8)
    if saturate == "low":
        return np.zeros(shape, np.uint8)
    return rng.integers(0, 256, shape, dtype=np.uint8)


def quantized_operands(rng, filter_shape, channel_axis: int, per_channel: bool,
                       in_scale: float, saturate: str = "", w_zero: int | None = None):
    """(filter operand, bias operand, output scale) with random zero points (or ``w_zero``)
    and scales; the output scale makes the rescale multiplier anything from 1e-4 to 4."""
    channels = filter_shape[channel_axis]
    if per_channel:
        values = rng.integers(-127, 128, filter_shape, dtype=np.int8)
        if saturate:
            values[:] = 127 if saturate == "high" else -127
        scales = rng.uniform(0.001, 0.05, channels).astype(np.float32)
        filt = const(Q8PC, values, channel_scales=[float(s) for s in scales],
                     channel_dim=channel_axis)
        bias_scale, typical = 0.0, float(np.float32(in_scale) * scales.mean())
    else:
        w_zero = int(rng.integers(0, 256)) if w_zero is None else w_zero
        values = rng.integers(0, 256, filter_shape, dtype=np.uint8)
        if saturate:
            values[:] = 255 if saturate == "high" else 0
        w_scale = float(rng.uniform(0.001, 0.05))
        filt = const(Q8, values, w_scale, w_zero)
        bias_scale = typical = float(np.float32(in_scale) * np.float32(w_scale))
    bias = rng.integers(-(1 << 14), 1 << 14, channels).astype(np.int32)
    out_scale = typical / float(10 ** rng.uniform(-0.6, 4))
    return filt, const(I32, bias, bias_scale), out_scale


def run_conv(monkeypatch, rng, op: Op, quantized: bool, per_channel: bool = False,
             saturate: str = "", signed: bool = False, w_zero: int | None = None):
    grouped, depthwise = op == Op.GROUPED_CONV_2D, op == Op.DEPTHWISE_CONV_2D
    g = random_geometry(rng, dilation=not grouped)
    if depthwise:
        cin, multiplier = int(rng.integers(1, 40)), int(rng.integers(1, 4))
        extra: tuple[int, ...] = (multiplier,)
        cout = cin * multiplier
        filter_shape, channel_axis = (1, g.kh, g.kw, cout), 3
    else:
        groups = int(rng.integers(2, 5)) if grouped else 1
        cin = groups * int(rng.integers(1, 12 if grouped else 40))
        cout = groups * int(rng.integers(1, 12 if grouped else 40))
        extra = (groups,) if grouped else ()
        filter_shape, channel_axis = (cout, g.kh, g.kw, cin // groups), 0
    fuse = int(rng.integers(0, 4))
    x = image(rng, g, cin, quantized, saturate)
    if quantized:
        in_scale, in_zero = float(rng.uniform(0.01, 1.0)), int(rng.integers(0, 256))
        filt, bias, out_scale = quantized_operands(rng, filter_shape, channel_axis, per_channel,
                                                   in_scale, saturate, w_zero)
        inputs = [feed(Q8, x, in_scale, in_zero), filt, bias]
        output = out(Q8, (), out_scale, int(rng.integers(0, 256)))
    else:
        inputs = [feed(F32, x), const(F32, rng.standard_normal(filter_shape).astype(np.float32)),
                  const(F32, rng.standard_normal(cout).astype(np.float32))]
        output = out(F32)
    inputs += window_args(g, extra, fuse, grouped)
    expected, actual = run_both(monkeypatch, op, inputs, [output], signed=signed)
    (assert_same if quantized else assert_close)(expected, actual)


CONV_OPS = [Op.CONV_2D, Op.GROUPED_CONV_2D, Op.DEPTHWISE_CONV_2D]


SIGNED = pytest.mark.parametrize("signed", [False, True], ids=["uint8", "int8"])


@SIGNED
@pytest.mark.parametrize("seed", range(30))
@pytest.mark.parametrize("op", CONV_OPS, ids=lambda o: o.name)
def test_quantized(monkeypatch, op, seed, signed):
    run_conv(monkeypatch, np.random.default_rng(seed), op, quantized=True, signed=signed)


@SIGNED
@pytest.mark.parametrize("seed", range(12))
@pytest.mark.parametrize("op", CONV_OPS, ids=lambda o: o.name)
def test_quantized_per_channel(monkeypatch, op, seed, signed):
    run_conv(monkeypatch, np.random.default_rng(100 + seed), op, quantized=True,
             per_channel=True, signed=signed)


@pytest.mark.parametrize("seed", range(6))
@pytest.mark.parametrize("op", CONV_OPS, ids=lambda o: o.name)
def test_quantized_symmetric_int8_filter(monkeypatch, op, seed):
    """int8 data with an int8 filter of zero point 0 (what PT2E's symmetric per-tensor weights
    become at level 4), which the kernels take as it is."""
    run_conv(monkeypatch, np.random.default_rng(150 + seed), op, quantized=True, signed=True,
             w_zero=128)


@SIGNED
@pytest.mark.parametrize("saturate", ["high", "low"])
@pytest.mark.parametrize("per_channel", [False, True])
@pytest.mark.parametrize("op", CONV_OPS, ids=lambda o: o.name)
def test_quantized_saturating_inputs(monkeypatch, op, per_channel, saturate, signed):
    run_conv(monkeypatch, np.random.default_rng(7), op, quantized=True, per_channel=per_channel,
             saturate=saturate, signed=signed)


@pytest.mark.parametrize("seed", range(12))
@pytest.mark.parametrize("op", CONV_OPS, ids=lambda o: o.name)
def test_float(monkeypatch, op, seed):
    run_conv(monkeypatch, np.random.default_rng(200 + seed), op, quantized=False)


def fc_inputs(rng, batch: int, input_size: int, units: int, quantized: bool,
              per_channel: bool = False, bias_limit: int = 1 << 14,
              bias_offset: int = 0) -> tuple[list[Operand], Operand]:
    fuse = i32(int(rng.integers(0, 4)))
    if not quantized:
        return [feed(F32, rng.standard_normal((batch, input_size)).astype(np.float32)),
                const(F32, rng.standard_normal((units, input_size)).astype(np.float32)),
                const(F32, rng.standard_normal(units).astype(np.float32)), fuse], out(F32)
    in_scale = float(rng.uniform(0.01, 1.0))
    filt, _, out_scale = quantized_operands(rng, (units, input_size), 0, per_channel, in_scale)
    bias = const(I32, rng.integers(-bias_limit, bias_limit, units).astype(np.int32) + bias_offset,
                 filt.scale * np.float32(in_scale) if filt.type == Q8 else 0.0)
    x = rng.integers(0, 256, (batch, input_size), dtype=np.uint8)
    return [feed(Q8, x, in_scale, int(rng.integers(0, 256))), filt, bias, fuse], \
        out(Q8, (), out_scale, int(rng.integers(0, 256)))


@pytest.mark.parametrize("seed", range(15))
@pytest.mark.parametrize("kind", ["uint8", "int8", "float"])
def test_fully_connected(monkeypatch, kind, seed):
    rng = np.random.default_rng(300 + seed)
    batch, input_size, units = (int(v) for v in rng.integers(1, 70, 3))
    quantized = kind != "float"
    inputs, output = fc_inputs(rng, batch, input_size, units, quantized)
    expected, actual = run_both(monkeypatch, Op.FULLY_CONNECTED, inputs, [output],
                                signed=kind == "int8")
    (assert_same if quantized else assert_close)(expected, actual)


def test_fully_connected_whose_sums_could_leave_int32_runs_on_the_reference(monkeypatch):
    """Android's reference accumulates in int32; where the native kernel could not promise the
    reference's exact sums, it leaves the operation to the reference kernel."""
    rng = np.random.default_rng(1)
    inputs, output = fc_inputs(rng, 1, 8, 4, True, bias_limit=100, bias_offset=(1 << 31) - 200)
    expected, actual = run_both(monkeypatch, Op.FULLY_CONNECTED, inputs, [output],
                                handled=False)
    assert_same(expected, actual)


# ------------------------------------------------------------------------------ microkernels


@pytest.mark.parametrize("microkernel", native_conv.MICROKERNELS)
@pytest.mark.parametrize("seed", range(6))
def test_every_gemm_microkernel_sums_exactly(microkernel, seed):
    """The generic, AVX2 and AVX-512 VNNI microkernels (whichever this CPU runs) against
    exact integer sums, requantized by the reference's arithmetic."""
    from torch_nnapi.runtime.quant import requantize

    rng = np.random.default_rng(400 + seed)
    cout, kh, kw, cin = (int(v) for v in rng.integers(1, 40, 4) % [40, 4, 4, 40] + [0, 1, 1, 0])
    cin, cout = max(cin, 1), max(cout, 1)
    filt = rng.integers(0, 256, (cout, kh, kw, cin), dtype=np.uint8)
    # Symmetric weights (w_zero 128) are the ones the VNNI kernel takes.
    w_zero, x_zero = 128 if seed % 2 else int(rng.integers(0, 256)), int(rng.integers(0, 256))
    bias = rng.integers(-5000, 5000, cout).astype(np.int32)
    real = float(rng.uniform(1e-4, 0.01))
    plan = native_conv.q8_conv(filt, w_zero, bias, 1, x_zero,
                               native_conv.Requantization(real, 3, 0, 255), microkernel)
    assert plan is not None
    if native_conv.MICROKERNELS.index(plan.microkernel) < \
            native_conv.MICROKERNELS.index(microkernel) and (microkernel != "avx512vnni"
                                                             or w_zero == 128):
        pytest.skip(f"this CPU has no {microkernel} instructions")
    h, w = int(rng.integers(kh, 10)), int(rng.integers(kw, 10))
    x = rng.integers(0, 256, (2, h, w, cin), dtype=np.uint8)
    out_h, out_w = h - kh + 1, w - kw + 1
    got = plan.run(x, native_conv.window(2, h, w, cin, out_h, out_w, kh, kw, 1, 1, 1, 1, 0, 0),
                   np.empty((2, out_h, out_w, cout), np.uint8))
    windows = np.lib.stride_tricks.sliding_window_view(x.astype(np.int64) - x_zero, (kh, kw),
                                                       axis=(1, 2))
    sums = np.einsum("nhwcij,oijc->nhwo", windows, filt.astype(np.int64) - w_zero) + bias
    np.testing.assert_array_equal(got, requantize(sums, real, 3, 0, 255))


# ------------------------------------------------------------------------------ transposed


@pytest.mark.parametrize("seed", range(20))
@pytest.mark.parametrize("kind", ["quantized", "per_channel", "int8", "int8_per_channel",
                                  "float"])
def test_transpose_conv(monkeypatch, kind, seed):
    rng = np.random.default_rng(500 + seed)
    n, h, w = int(rng.integers(1, 3)), int(rng.integers(1, 8)), int(rng.integers(1, 8))
    kh, kw = (int(v) for v in rng.integers(1, 5, 2))
    sh, sw = (int(v) for v in rng.integers(1, 4, 2))
    cin, cout = (int(v) for v in rng.integers(1, 24, 2))
    full_h, full_w = (h - 1) * sh + kh, (w - 1) * sw + kw
    top, left = int(rng.integers(0, full_h)), int(rng.integers(0, full_w))
    bottom, right = int(rng.integers(0, full_h - top)), int(rng.integers(0, full_w - left))
    nchw = bool(rng.random() < 0.25)
    g = Geometry(n, h, w, kh, kw, (sh, sw), (1, 1), None, 0, nchw)
    x = image(rng, g, cin, kind != "float")
    filter_shape = (cout, kh, kw, cin)
    if kind == "float":
        inputs = [feed(F32, x), const(F32, rng.standard_normal(filter_shape).astype(np.float32)),
                  const(F32, rng.standard_normal(cout).astype(np.float32))]
        output = out(F32)
    else:
        in_scale = float(rng.uniform(0.01, 1.0))
        filt, bias, out_scale = quantized_operands(rng, filter_shape, 0,
                                                   kind.endswith("per_channel"), in_scale)
        inputs = [feed(Q8, x, in_scale, int(rng.integers(0, 256))), filt, bias]
        output = out(Q8, (), out_scale, int(rng.integers(0, 256)))
    inputs += [i32(left), i32(right), i32(top), i32(bottom), i32(sw), i32(sh),
               i32(int(rng.integers(0, 4))), boolean(nchw)]
    expected, actual = run_both(monkeypatch, Op.TRANSPOSE_CONV_2D, inputs, [output],
                                signed=kind.startswith("int8"))
    assert_same(expected, actual)


@pytest.mark.parametrize("channels", [16, 37, 64])
@pytest.mark.parametrize("stride", [1, 2])
@pytest.mark.parametrize("pads", [(1, 1, 1, 1), (0, 0, 0, 0), (0, 2, 1, 0)])
def test_float_depthwise_3x3(monkeypatch, channels, stride, pads):
    """The unrolled 3x3 path (inside columns) and the general loop (borders, channels beyond
    a multiple of 16) together."""
    rng = np.random.default_rng(channels + stride)
    x = rng.standard_normal((2, 9, 11, channels)).astype(np.float32)
    inputs = [feed(F32, x), const(F32, rng.standard_normal((1, 3, 3, channels)).astype(np.float32)),
              const(F32, rng.standard_normal(channels).astype(np.float32)),
              *map(i32, pads), i32(stride), i32(stride), i32(1), i32(3)]
    expected, actual = run_both(monkeypatch, Op.DEPTHWISE_CONV_2D, inputs, [out(F32)])
    assert_close(expected, actual)


@pytest.mark.parametrize("seed", range(16))
def test_float_depthwise_large_filters(monkeypatch, seed):
    """5x5 and 7x7 filters (ConvNeXt's): inside columns four at a time, the border columns
    and rows by the general loop; strides, dilations, uneven padding, NHWC and NCHW."""
    rng = np.random.default_rng(500 + seed)
    size = int(rng.choice([5, 7]))
    channels = int(rng.choice([16, 32, 48]))
    stride, dilation = int(rng.integers(1, 3)), int(rng.choice([1, 1, 2]))
    pads = [int(v) for v in rng.integers(0, size, 4)]
    height, width = int(rng.integers(size * dilation, 16)), int(rng.integers(size * dilation, 24))
    nchw = bool(seed % 4 == 3)
    x = rng.standard_normal((2, height, width, channels)).astype(np.float32)
    if nchw:
        x = np.ascontiguousarray(x.transpose(0, 3, 1, 2))
    inputs = [feed(F32, x),
              const(F32, rng.standard_normal((1, size, size, channels)).astype(np.float32)),
              const(F32, rng.standard_normal(channels).astype(np.float32)),
              *map(i32, pads), i32(stride), i32(stride), i32(1), i32(int(rng.integers(0, 4))),
              boolean(nchw), i32(dilation), i32(dilation)]
    expected, actual = run_both(monkeypatch, Op.DEPTHWISE_CONV_2D, inputs, [out(F32)])
    assert_close(expected, actual)


@SIGNED
@pytest.mark.parametrize("channels", [16, 48])
@pytest.mark.parametrize("stride", [1, 2])
@pytest.mark.parametrize("pads", [(1, 1, 1, 1), (0, 0, 0, 0), (0, 2, 1, 0)])
def test_quantized_depthwise_3x3(monkeypatch, channels, stride, pads, signed):
    rng = np.random.default_rng(channels * stride)
    x = rng.integers(0, 256, (2, 9, 11, channels), dtype=np.uint8)
    filt, bias, out_scale = quantized_operands(rng, (1, 3, 3, channels), 3, False, 0.25)
    inputs = [feed(Q8, x, 0.25, 131), filt, bias, *map(i32, pads), i32(stride), i32(stride),
              i32(1), i32(1)]
    expected, actual = run_both(monkeypatch, Op.DEPTHWISE_CONV_2D, inputs,
                                [out(Q8, (), out_scale, 7)], signed=signed)
    assert_same(expected, actual)
