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
``save``/``_save_for_lite_interpreter``.

:func:`build_module` adds the outer module whose ``forward`` takes the model's inputs as
separate arguments and returns a tensor or tuple, as the original model did.
"""


import warnings
from typing import List, Optional

import torch

FORMAT_VERSION = 3  # 2: input_casts may quantize (CAST_QUANTIZE, input_scales/zero_points)
# 3: input_groups/output_groups: NNAPI dimensions merging runs of dimensions (rank above 4);
#    output_shapes give every stored dimension, not the merged ones

# output_kinds: how an NNAPI output buffer is allocated and returned
KIND_FLOAT32, KIND_QUINT8, KIND_INT32, KIND_INT64, KIND_BOOL, KIND_FLOAT16 = range(6)
# input_casts: CAST_QUANTIZE quantizes a float input to quint8 with input_scales[i] and
# input_zero_points[i], as the model's own quantize_per_tensor would
CAST_NONE, CAST_INT32, CAST_QUANTIZE = range(3)


class NnapiProgram(torch.nn.Module):
    """Runs one serialized NNAPI model; see the module docstring."""

    comp: Optional[torch.classes._nnapi.Compilation]
    weights: List[torch.Tensor]
    patch_offsets: List[int]
    patch_programs: List[List[int]]
    guard_programs: List[List[int]]
    guard_values: List[int]
    guard_messages: List[str]
    input_shapes: List[List[int]]
    input_perms: List[List[int]]
    input_casts: List[int]
    input_scales: List[float]
    input_zero_points: List[int]
    output_shapes: List[List[List[int]]]
    output_perms: List[List[int]]
    output_kinds: List[int]
    output_scales: List[float]
    output_zero_points: List[int]
    output_ranks: List[int]
    output_map: List[int]
    compiled_shapes: List[List[int]]
    output_dims: List[List[int]]
    input_groups: List[List[int]]
    output_groups: List[List[int]]

    def __init__(self, ser_model: torch.Tensor, weights: List[torch.Tensor],
                 patch_offsets: List[int], patch_programs: List[List[int]],
                 guard_programs: List[List[int]], guard_values: List[int],
                 guard_messages: List[str], input_shapes: List[List[int]],
                 input_perms: List[List[int]], input_casts: List[int],
                 input_scales: List[float], input_zero_points: List[int],
                 output_shapes: List[List[List[int]]], output_perms: List[List[int]],
                 output_kinds: List[int], output_scales: List[float],
                 output_zero_points: List[int], output_ranks: List[int],
                 output_map: List[int], compilation_preference: int, relax_f32_to_f16: bool,
                 feature_level: int, *, input_groups: Optional[List[List[int]]] = None,
                 output_groups: Optional[List[List[int]]] = None):
        super().__init__()
        self.ser_model = ser_model
        self.weights = weights
        self.patch_offsets = patch_offsets
        self.patch_programs = patch_programs
        self.guard_programs = guard_programs
        self.guard_values = guard_values
        self.guard_messages = guard_messages
        self.input_shapes = input_shapes
        self.input_perms = input_perms
        self.input_casts = input_casts
        self.input_scales = input_scales
        self.input_zero_points = input_zero_points
        self.output_shapes = output_shapes
        self.output_perms = output_perms
        self.output_kinds = output_kinds
        self.output_scales = output_scales
        self.output_zero_points = output_zero_points
        self.output_ranks = output_ranks
        self.output_map = output_map
        self.compilation_preference = compilation_preference
        self.relax_f32_to_f16 = relax_f32_to_f16
        self.feature_level = feature_level
        # per input/output: run lengths of the stored (permuted) dimensions that one NNAPI
        # dimension merges; [] when each is its own (every tensor of rank <= 4)
        self.input_groups = input_groups or [[] for _ in input_shapes]
        self.output_groups = output_groups or [[] for _ in output_shapes]
        self.format_version = FORMAT_VERSION
        self.comp = None
        self.compiled_shapes = []
        self.output_dims = []

    def _evaluate(self, prog: List[int], shapes: List[List[int]]) -> int:
        stack: List[int] = []
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

    def _same_shapes(self, a: List[List[int]], b: List[List[int]]) -> bool:
        if len(a) != len(b):
            return False
        for i in range(len(a)):
            if a[i] != b[i]:
                return False
        return True

    @torch.jit.export
    def check_inputs(self, args: List[torch.Tensor]) -> List[List[int]]:
        """The input shapes, after checking them against what the model takes."""
        if len(args) != len(self.input_shapes):
            raise ValueError("expected " + str(len(self.input_shapes)) + " inputs, got "
                             + str(len(args)))
        shapes: List[List[int]] = []
        for i in range(len(args)):
            shape = args[i].size()
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
    def patched_model(self, shapes: List[List[int]]) -> torch.Tensor:
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

    def _merged(self, dims: List[int], groups: List[int]) -> List[int]:
        """``dims`` with each run of ``groups`` multiplied into one dimension."""
        if len(groups) == 0:
            return dims
        merged: List[int] = []
        start = 0
        for g in groups:
            size = 1
            for d in range(start, start + g):
                size = size * dims[d]
            merged.append(size)
            start += g
        return merged

    @torch.jit.export
    def output_dimensions(self, shapes: List[List[int]]) -> List[List[int]]:
        """The stored (permuted, unmerged) dimensions of each output for these shapes."""
        dims: List[List[int]] = []
        for k in range(len(self.output_shapes)):
            dims.append([self._evaluate(p, shapes) for p in self.output_shapes[k]])
        return dims

    @torch.jit.export
    def init(self, args: List[torch.Tensor]):
        shapes = self.check_inputs(args)
        model = self.patched_model(shapes)
        self.weights = [w.contiguous() for w in self.weights]
        comp = torch.classes._nnapi.Compilation()
        comp.init2(model, self.weights, self.compilation_preference, self.relax_f32_to_f16)
        self.comp = comp
        self.compiled_shapes = shapes
        self.output_dims = self.output_dimensions(shapes)

    @torch.jit.export
    def reset(self):
        """Drops the compilation (it cannot be saved); the next call compiles again."""
        self.comp = None
        empty: List[List[int]] = []
        self.compiled_shapes = empty
        self.output_dims = empty

    @torch.jit.export
    def prepare_inputs(self, args: List[torch.Tensor]) -> List[torch.Tensor]:
        """The inputs as the NNAPI model takes them (cast and permuted, contiguous)."""
        ready: List[torch.Tensor] = []
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
    def allocate_outputs(self, dims: List[List[int]]) -> List[torch.Tensor]:
        outs: List[torch.Tensor] = []
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
    def finish_outputs(self, outs: List[torch.Tensor]) -> List[torch.Tensor]:
        """NNAPI outputs in PyTorch's order, dtype and rank, in the model's return order."""
        results: List[torch.Tensor] = []
        for i in range(len(self.output_map)):
            k = self.output_map[i]
            out = outs[k]
            if len(self.output_groups[k]) > 0:
                out = out.reshape(self.output_dims[k])
            if len(self.output_perms[k]) > 0:
                out = out.permute(self.output_perms[k])
            if self.output_kinds[k] == 3:
                out = out.to(torch.int64)
            if self.output_ranks[k] == 0:
                out = out.reshape([])
            results.append(out)
        return results

    def forward(self, args: List[torch.Tensor]) -> List[torch.Tensor]:
        shapes = self.check_inputs(args)
        if self.comp is None or not self._same_shapes(shapes, self.compiled_shapes):
            self.init(args)
        comp = self.comp
        assert comp is not None
        outs = self.allocate_outputs(self.output_dims)
        comp.run(self.prepare_inputs(args), outs)
        return self.finish_outputs(outs)


def build_module(program: NnapiProgram, input_count: int, returns: str,
                 output_count: int) -> torch.jit.ScriptModule:
    """The user-facing module: ``forward(input_0, ...)`` returning a tensor or a tuple."""

    # A new class per conversion: ``define`` adds the method to the class.
    class NnapiModule(torch.nn.Module):
        """A PyTorch model converted to NNAPI by torch-nnapi."""

        def __init__(self, nnapi: NnapiProgram):
            super().__init__()
            self.nnapi = nnapi

    with warnings.catch_warnings():
        warnings.simplefilter("ignore", DeprecationWarning)
        module = torch.jit.script(NnapiModule(program))
    names = [f"input_{i}" for i in range(input_count)]
    params = ", ".join(f"{n}: Tensor" for n in names)
    if returns == "tensor":
        ret_type, ret = "Tensor", "outs[0]"
    elif returns == "list":
        ret_type = "List[Tensor]"
        ret = "[" + ", ".join(f"outs[{i}]" for i in range(output_count)) + "]"
    else:
        ret_type = "Tuple[" + ", ".join(["Tensor"] * output_count) + "]"
        ret = "(" + "".join(f"outs[{i}], " for i in range(output_count)) + ")"
    module.define(f"def forward(self, {params}) -> {ret_type}:\n"
                  f"    outs = self.nnapi([{', '.join(names)}])\n"
                  f"    return {ret}\n")
    return module
