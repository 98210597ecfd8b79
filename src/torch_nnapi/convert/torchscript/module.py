"""The TorchScript module a conversion produces: it runs the model through
``torch.classes._nnapi.Compilation``, PyTorch's NNAPI runtime (on Android, or on Linux
through torch-nnapi's libneuralnetworks.so).

:class:`NnapiProgram` holds the serialized model and its weight tensors. On the first call,
and again whenever the input shapes change, it resolves flexible dimensions from the real
input shapes (evaluating the load-time patch programs of ``symbolic.py``), checks the
guards, patches a copy of the serialized model and compiles it. It then casts (or
quantizes) and permutes inputs to the layout the model expects (e.g. NHWC), runs, and
permutes outputs back to PyTorch's order. Everything it needs is data held in attributes,
so the same fixed TorchScript code serves every converted model, and it survives
``save``/``_save_for_lite_interpreter``, also after running: the compilation lives in a
:class:`CompiledModel` submodule that saves as nothing. Inputs of another dtype or
quantization than converted for, and weights replaced by tensors of another dtype or shape,
are refused with an error naming them (NNAPI would compute on their raw bytes).

:func:`build_module` adds the outer module whose ``forward`` takes the model's inputs as
separate arguments and returns a tensor or tuple, as the original model did.
"""


import math
import warnings
from collections.abc import Callable
from typing import Optional, ParamSpec, TypeVar

import torch

from ..outputs import STRUCTURE_METHOD, OutputStructure, define_method, define_structure_method
from .spec import ProgramSpec

# 2: input_casts may quantize (CAST_QUANTIZE, input_scales/zero_points); 3: the compilation
# lives in a submodule that saves as nothing, weight and input dtypes are checked, and each
# operation's PyTorch origin is recorded; input_groups/output_groups: NNAPI dimensions merging
# runs of dimensions (rank above 4), output_shapes give every stored dimension
FORMAT_VERSION = 3

# output_kinds: how an NNAPI output buffer is allocated and returned
KIND_FLOAT32, KIND_QUINT8, KIND_INT32, KIND_INT64, KIND_BOOL, KIND_FLOAT16 = range(6)
# input_casts: CAST_QUANTIZE quantizes a float input to quint8 with input_scales[i] and
# input_zero_points[i], as the model's own quantize_per_tensor would. No qint8 counterpart:
# PyTorch's NNAPI runtime refuses qint8 tensors, so signed models quantize in NNAPI
CAST_NONE, CAST_INT32, CAST_QUANTIZE = range(3)


_P = ParamSpec("_P")
_R = TypeVar("_R")


# The return type is a string: this module's annotations are evaluated (TorchScript reads
# them), and TorchScript's classes cannot be subscripted at run time.
def _script_function(function: Callable[_P, _R]) -> "torch.jit.ScriptFunction[_P, _R]":
    """``torch.jit.script`` of a function, without its deprecation warning (TorchScript is
    what PyTorch Mobile's NNAPI runtime runs)."""
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", DeprecationWarning)
        scripted: torch.jit.ScriptFunction[_P, _R] = torch.jit.script(function)
    return scripted


def _script_module(module: torch.nn.Module) -> torch.jit.RecursiveScriptModule:
    """``torch.jit.script`` of a module, without its deprecation warning."""
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", DeprecationWarning)
        return torch.jit.script(module)


def _dtype_code(dtype: torch.dtype) -> int:
    """The number TorchScript code sees for a dtype (what a module attribute can hold)."""
    # TorchScript holds a dtype as an int; mypy knows only eager Python's torch.dtype (the
    # ignore must end the line, or TorchScript reads it as a type comment)
    return dtype  # type: ignore[return-value]


dtype_code = _script_function(_dtype_code)


def _format_number(x: float) -> str:
    """``x`` with up to 6 significant digits, as Python's ``f"{x:g}"`` writes it (TorchScript
    prints floats with 17)."""
    if x == 0.0 or x != x or x == math.inf or x == -math.inf:
        return str(x)
    sign = ""
    if x < 0:
        sign = "-"
        x = -x
    exponent = int(math.floor(math.log10(x)))
    digits = int(round(x * 10.0 ** (5 - exponent)))
    if digits >= 1000000:
        digits = digits // 10
        exponent += 1
    text = str(digits)
    while len(text) > 1 and text[-1] == "0":
        text = text[:-1]
    if exponent >= 6 or exponent < -4:
        mantissa = text[0]
        if len(text) > 1:
            mantissa = mantissa + "." + text[1:]
        sign_e = "-" if exponent < 0 else "+"
        e = str(abs(exponent))
        if len(e) < 2:
            e = "0" + e
        return sign + mantissa + "e" + sign_e + e
    if exponent < 0:
        zeros = ""
        for _ in range(-exponent - 1):
            zeros += "0"
        return sign + "0." + zeros + text
    while len(text) < exponent + 1:
        text += "0"
    if len(text) == exponent + 1:
        return sign + text
    return sign + text[:exponent + 1] + "." + text[exponent + 1:]


format_number = _script_function(_format_number)


# The dtypes a converted module's weights and inputs can have, named in its error messages.
NAMED_DTYPES = (torch.float32, torch.float16, torch.float64, torch.int64, torch.int32,
                torch.int16, torch.int8, torch.uint8, torch.bool, torch.quint8, torch.qint8)


class CompiledModel(torch.nn.Module):
    """The compilation for the input shapes last seen. PyTorch cannot serialize a
    Compilation, so this saves as nothing and loads empty: a module that has run saves like
    a fresh one, and compiles again on its first call after loading."""

    # Optional, not `| None`: the annotation is evaluated, and a ScriptClass has no `|`;
    # the class is registered by libtorch at run time, so mypy cannot see it.
    comp: Optional[torch.classes._nnapi.Compilation]  # type: ignore[name-defined]  # noqa: UP045
    shapes: list[list[int]]
    output_dims: list[list[int]]

    def __init__(self) -> None:
        super().__init__()
        self.comp = None
        self.shapes = []
        self.output_dims = []

    @torch.jit.export
    def clear(self) -> None:
        self.comp = None
        empty: list[list[int]] = []
        self.shapes = empty
        self.output_dims = empty

    @torch.jit.export
    def __getstate__(self) -> bool:
        return self.training

    @torch.jit.export
    def __setstate__(self, training: bool) -> None:
        self.training = training
        self.clear()


class NnapiProgram(torch.nn.Module):
    """Runs one serialized NNAPI model; see the module docstring."""

    weights: list[torch.Tensor]
    patch_offsets: list[int]
    patch_programs: list[list[int]]
    guard_programs: list[list[int]]
    guard_values: list[int]
    guard_messages: list[str]
    input_shapes: list[list[int]]
    input_perms: list[list[int]]
    input_casts: list[int]
    input_scales: list[float]
    input_zero_points: list[int]
    output_shapes: list[list[list[int]]]
    output_perms: list[list[int]]
    output_kinds: list[int]
    output_scales: list[float]
    output_zero_points: list[int]
    output_ranks: list[int]
    output_map: list[int]
    weight_dtypes: list[int]
    weight_shapes: list[list[int]]
    input_dtypes: list[int]
    dtype_names: dict[int, str]
    operation_origins: list[str]
    input_groups: list[list[int]]
    output_groups: list[list[int]]

    def __init__(self, spec: ProgramSpec):
        super().__init__()
        self.ser_model = spec.serialized
        self.weights = list(spec.weights)
        sizes = spec.load_time
        self.patch_offsets = list(sizes.patch_offsets)
        self.patch_programs = list(sizes.patch_programs)
        self.guard_programs = list(sizes.guard_programs)
        self.guard_values = list(sizes.guard_values)
        self.guard_messages = list(sizes.guard_messages)
        inputs, outputs = spec.inputs, spec.outputs
        self.input_shapes = [i.shape for i in inputs]
        self.input_perms = [i.perm for i in inputs]
        self.input_casts = [i.cast for i in inputs]
        self.input_scales = [i.scale for i in inputs]
        self.input_zero_points = [i.zero_point for i in inputs]
        self.output_shapes = [o.shape for o in outputs]
        self.output_perms = [o.perm for o in outputs]
        self.output_kinds = [o.kind for o in outputs]
        self.output_scales = [o.scale for o in outputs]
        self.output_zero_points = [o.zero_point for o in outputs]
        self.output_ranks = [o.rank for o in outputs]
        self.output_map = list(spec.output_map)
        self.compilation_preference = spec.compile.preference
        self.relax_f32_to_f16 = spec.compile.relax_fp32_to_fp16
        self.feature_level = spec.feature_level
        # per input/output: run lengths of the stored (permuted) dimensions that one NNAPI
        # dimension merges; [] when each is its own (every tensor of rank <= 4)
        self.input_groups = [i.groups for i in inputs]
        self.output_groups = [o.groups for o in outputs]
        self.format_version = FORMAT_VERSION
        self.compiled = CompiledModel()
        self.weight_dtypes = [dtype_code(w.dtype) for w in self.weights]
        self.weight_shapes = [list(w.shape) for w in self.weights]
        # the dtype each input must have (none given: not checked)
        given = [i.dtype for i in inputs if i.dtype is not None]
        self.input_dtypes = [dtype_code(d) for d in given] if len(given) == len(inputs) else []
        self.dtype_names = {dtype_code(d): str(d).replace("torch.", "") for d in NAMED_DTYPES}
        # per NNAPI operation, the PyTorch code it comes from (for inspect)
        self.operation_origins = list(spec.operation_origins)

    def _evaluate(self, prog: list[int], shapes: list[list[int]]) -> int:
        stack: list[int] = []
        i = 0
        while i < len(prog):
            code = prog[i]
            if code == 0:
                stack.append(prog[i + 1])
                i += 2
            elif code == 1:
                stack.append(shapes[prog[i + 1]][prog[i + 2]])
                i += 3
            else:
                b = stack.pop()
                a = stack.pop()
                if code == 2:
                    r = a + b
                elif code == 3:
                    r = a - b
                elif code == 4:
                    r = a * b
                elif code == 5:
                    r = a // b
                elif code == 6:
                    r = a % b
                elif code == 7:
                    r = max(a, b)
                else:
                    r = min(a, b)
                stack.append(r)
                i += 1
        return stack[0]

    def _same_shapes(self, a: list[list[int]], b: list[list[int]]) -> bool:
        if len(a) != len(b):
            return False
        for i in range(len(a)):  # noqa: SIM110 (TorchScript compiles no generator expressions)
            if a[i] != b[i]:
                return False
        return True

    def _dtype_name(self, code: int) -> str:
        if code in self.dtype_names:
            return self.dtype_names[code]
        return "dtype " + str(code)

    @torch.jit.export
    def check_weights(self) -> None:
        """Weights of another dtype or shape than converted would be read as raw bytes by
        NNAPI (a file whose weight tensors were replaced): refused, naming the weight."""
        if len(self.weights) != len(self.weight_shapes):
            raise ValueError("the module has " + str(len(self.weights)) + " weight tensors,"
                             + " it was converted with " + str(len(self.weight_shapes)))
        for i in range(len(self.weights)):
            w = self.weights[i]
            dtype = _dtype_code(w.dtype)
            if dtype != self.weight_dtypes[i]:
                raise ValueError("weight " + str(i) + " is " + self._dtype_name(dtype)
                                 + ", the model was converted with "
                                 + self._dtype_name(self.weight_dtypes[i]))
            shape = list(w.size())
            if shape != self.weight_shapes[i]:
                raise ValueError("weight " + str(i) + " has shape " + str(shape)
                                 + ", the model was converted with "
                                 + str(self.weight_shapes[i]))

    def _check_input_type(self, i: int, x: torch.Tensor) -> None:
        """An input of another dtype, or quantized with other parameters, than the model
        was converted for would be computed on as raw bytes: refused."""
        dtype = _dtype_code(x.dtype)
        if len(self.input_dtypes) > i and dtype != self.input_dtypes[i] \
                and not (self.input_casts[i] == 1 and x.dtype == torch.int32):  # CAST_INT32
            raise ValueError("input " + str(i) + " is " + self._dtype_name(dtype)
                             + ", the model takes " + self._dtype_name(self.input_dtypes[i]))
        if x.is_quantized and self.input_casts[i] == 0:  # CAST_NONE
            scale = self.input_scales[i]
            if abs(x.q_scale() - scale) > 1e-6 * scale \
                    or x.q_zero_point() != self.input_zero_points[i]:
                raise ValueError("input " + str(i) + " is quantized with scale "
                                 + format_number(x.q_scale()) + " and zero point "
                                 + str(x.q_zero_point()) + ", the model takes scale "
                                 + format_number(scale) + " and zero point "
                                 + str(self.input_zero_points[i]))

    @torch.jit.export
    def check_inputs(self, args: list[torch.Tensor]) -> list[list[int]]:
        """The input shapes, after checking the inputs against what the model takes."""
        if len(args) != len(self.input_shapes):
            raise ValueError("expected " + str(len(self.input_shapes)) + " inputs, got "
                             + str(len(args)))
        shapes: list[list[int]] = []
        for i in range(len(args)):
            self._check_input_type(i, args[i])
            shape = list(args[i].size())
            expected = self.input_shapes[i]
            ok = len(shape) == len(expected)
            if ok:
                for d in range(len(shape)):
                    if expected[d] >= 0 and expected[d] != shape[d]:
                        ok = False
            if not ok:
                raise ValueError("input " + str(i) + " has shape " + str(shape)
                                 + ", the model takes " + str(expected)
                                 + " (-1: flexible)")
            shapes.append(shape)
        return shapes

    @torch.jit.export
    def patched_model(self, shapes: list[list[int]]) -> torch.Tensor:
        """The serialized model with flexible dimensions resolved for these input shapes."""
        for g in range(len(self.guard_programs)):
            if self._evaluate(self.guard_programs[g], shapes) != self.guard_values[g]:
                raise ValueError("input shapes " + str(shapes) + " are not supported: "
                                 + self.guard_messages[g])
        model = self.ser_model.clone()
        for p in range(len(self.patch_offsets)):
            value = self._evaluate(self.patch_programs[p], shapes)
            if value < 0:
                raise ValueError("input shapes " + str(shapes) + " give a negative size")
            model[self.patch_offsets[p]] = value
        return model

    def _merged(self, dims: list[int], groups: list[int]) -> list[int]:
        """``dims`` with each run of ``groups`` multiplied into one dimension."""
        if len(groups) == 0:
            return dims
        merged: list[int] = []
        start = 0
        for g in groups:
            size = 1
            for d in range(start, start + g):
                size = size * dims[d]
            merged.append(size)
            start += g
        return merged

    @torch.jit.export
    def output_dimensions(self, shapes: list[list[int]]) -> list[list[int]]:
        """The stored (permuted, unmerged) dimensions of each output for these shapes."""
        dims: list[list[int]] = []
        for k in range(len(self.output_shapes)):
            dims.append([self._evaluate(p, shapes) for p in self.output_shapes[k]])
        return dims

    @torch.jit.export
    def init(self, args: list[torch.Tensor]) -> None:
        shapes = self.check_inputs(args)
        model = self.patched_model(shapes)
        self.check_weights()
        self.weights = [w.contiguous() for w in self.weights]
        comp = torch.classes._nnapi.Compilation()
        comp.init2(model, self.weights, self.compilation_preference, self.relax_f32_to_f16)
        self.compiled.comp = comp
        self.compiled.shapes = shapes
        self.compiled.output_dims = self.output_dimensions(shapes)

    @torch.jit.export
    def reset(self) -> None:
        """Drops the compilation; the next call compiles again (saving needs no reset)."""
        self.compiled.clear()

    @torch.jit.export
    def prepare_inputs(self, args: list[torch.Tensor]) -> list[torch.Tensor]:
        """The inputs as the NNAPI model takes them (cast and permuted, contiguous)."""
        ready: list[torch.Tensor] = []
        for i in range(len(args)):
            x = args[i]
            if self.input_casts[i] == 1:
                x = x.to(torch.int32)
            elif self.input_casts[i] == 2:
                x = torch.quantize_per_tensor(x, self.input_scales[i],
                                              self.input_zero_points[i], torch.quint8)
            if len(self.input_perms[i]) > 0:
                x = x.permute(self.input_perms[i])
            x = x.contiguous()
            if len(self.input_groups[i]) > 0:
                x = x.reshape(self._merged(list(x.size()), self.input_groups[i]))
            ready.append(x)
        return ready

    @torch.jit.export
    def allocate_outputs(self, dims: list[list[int]]) -> list[torch.Tensor]:
        outs: list[torch.Tensor] = []
        for k in range(len(self.output_kinds)):
            kind = self.output_kinds[k]
            size = self._merged(dims[k], self.output_groups[k])
            if kind == 1:
                outs.append(torch._empty_affine_quantized(
                    size, scale=self.output_scales[k],
                    zero_point=self.output_zero_points[k], dtype=torch.quint8))
            elif kind == 2 or kind == 3:
                outs.append(torch.empty(size, dtype=torch.int32))
            elif kind == 4:
                outs.append(torch.empty(size, dtype=torch.bool))
            elif kind == 5:
                outs.append(torch.empty(size, dtype=torch.float16))
            else:
                outs.append(torch.empty(size, dtype=torch.float32))
        return outs

    @torch.jit.export
    def finish_outputs(self, outs: list[torch.Tensor],
                       dims: list[list[int]]) -> list[torch.Tensor]:
        """NNAPI outputs in PyTorch's order, dtype and rank, in the model's return order.
        ``dims``: the outputs' stored dimensions for the inputs run (output_dimensions),
        which outputs merging dimensions (rank above 4) are split back into."""
        results: list[torch.Tensor] = []
        for i in range(len(self.output_map)):
            k = self.output_map[i]
            out = outs[k]
            if len(self.output_groups[k]) > 0:
                out = out.reshape(dims[k])
            if len(self.output_perms[k]) > 0:
                out = out.permute(self.output_perms[k])
            if self.output_kinds[k] == 3:
                out = out.to(torch.int64)
            if self.output_ranks[k] == 0:
                out = out.reshape([])
            results.append(out)
        return results

    def forward(self, args: list[torch.Tensor]) -> list[torch.Tensor]:
        shapes = self.check_inputs(args)
        if self.compiled.comp is None or not self._same_shapes(shapes, self.compiled.shapes):
            self.init(args)
        comp = self.compiled.comp
        assert comp is not None
        outs = self.allocate_outputs(self.compiled.output_dims)
        comp.run(self.prepare_inputs(args), outs)
        return self.finish_outputs(outs, self.compiled.output_dims)


def build_module(program: NnapiProgram, input_count: int, structure: OutputStructure
                 ) -> torch.jit.ScriptModule:
    """The user-facing module: ``forward(input_0, ...)`` returning the program's outputs
    nested as the model nested them (``structure``), through its method
    ``structure_outputs``; ``output_structure`` holds the structure's JSON for the tools."""

    # A new class per conversion: ``define`` adds the method to the class.
    class NnapiModule(torch.nn.Module):
        """A PyTorch model converted to NNAPI by torch-nnapi."""

        def __init__(self, nnapi: NnapiProgram) -> None:
            super().__init__()
            self.nnapi = nnapi
            self.output_structure = structure.to_json()

    module = _script_module(NnapiModule(program))
    names = [f"input_{i}" for i in range(input_count)]
    params = ", ".join(f"{n}: Tensor" for n in names)
    ret = define_structure_method(module, structure)
    define_method(module, f"def forward(self, {params}) -> {ret.annotation}:\n"
                          f"    return self.{STRUCTURE_METHOD}(self.nnapi([{', '.join(names)}]))\n",
                  ret.names)
    return module
