"""``torch-nnapi inspect``: what a converted module asks of NNAPI.

Reads the serialized model inside the module (without running it) and prints its inputs
and outputs, every operation with its operands' types and shapes (``?``: flexible), its
scalar inputs by name (``stride_w=2``) and the PyTorch code it comes from, and the NNAPI
feature level, i.e. the oldest Android that can run it. For a partitioned module
(``convert --fallback``): the regions in running order with the tensors crossing each
boundary and their sizes, the nodes on the CPU with their source lines and why, then each
region's NNAPI model.
"""

from __future__ import annotations

import argparse
import json
from collections import Counter

from ..nnapi.errors import NnapiError, counted
from ._commands import command
from ._devices import add_device_option, device_profiles, plans_json, plans_of_module, render_plans
from ._errors import ExitCode, bad_file, usage
from ._loading import load_converted, output_path, writing
from ._pte import is_pte_path
from ._pte_commands import inspect_pte


def _configure(p: argparse.ArgumentParser) -> None:
    p.add_argument("module", help="a module saved by torch-nnapi convert, or a .pte (its"
                                  " NNAPI delegates and what stays on ExecuTorch's kernels)")
    p.add_argument("--json", action="store_true", help="machine-readable output")
    p.add_argument("--summary", action="store_true", help="operation counts only")
    p.add_argument("--probe-model", metavar="OUT",
                   help="also write the NNAPI model for tools/nnapi_probe.c (a partitioned"
                        " module: one file per region, OUT with .region<k> before its suffix)")
    add_device_option(p)


def describe(module) -> dict:
    """The NNAPI model inside a converted module (each region's, and the partition, for a
    partitioned one), as plain data."""
    from ..convert.fallback.report import report_of
    from ..convert.fallback.run import is_partitioned, region_programs
    from ..convert.tools.host import program_of
    from ..nnapi.codes import FeatureLevel

    report = report_of(module) if is_partitioned(module) else None
    if report is None:
        return dict(describe_program(program_of(module)), **_returns(module))
    regions = [describe_program(p) for p in region_programs(module)]
    # the regions inside loops and branches count through the report
    level = FeatureLevel(max([r["feature_level"] for r in regions] + [report.feature_level]))
    return {"partitioned": True, "feature_level": int(level), "android": level.android,
            "api_level": level.api_level, "partition": report.to_json(),
            "regions": regions, **_returns(module)}


def _write_probe_models(module, out: str, source: str) -> list:
    """Writes the module's NNAPI model (each region's) in tools/nnapi_probe.c's format."""
    from ..convert.fallback.run import is_partitioned, region_programs
    from ..convert.tools.host import program_of
    from ..convert.torchscript.deserialize import deserialize
    from ..nnapi.probe_model import probe_model_text

    programs = region_programs(module) if is_partitioned(module) else [program_of(module)]
    if not programs:
        raise usage(f"--probe-model: module {source} has no NNAPI region outside its loops and"
                    " branches (the probe model file holds the top-level regions)")
    target = output_path(out, source)
    paths = [target] if len(programs) == 1 else \
        [target.with_name(f"{target.stem}.region{k}{target.suffix}") for k in range(len(programs))]
    for prog, path in zip(programs, paths, strict=True):
        weights = [w.contiguous().numpy() for w in prog.weights]
        try:
            text = probe_model_text(deserialize(prog.ser_model.numpy(), weights).model)
        except (NnapiError, ValueError) as e:
            raise bad_file(f"module {source}: its NNAPI model cannot be written for the probe"
                           f" ({e})") from None
        with writing(str(path)), open(path, "w", encoding="ascii") as f:
            f.write(text)
    return paths


def _returns(module) -> dict:
    """How the module nests the tensors it returns (``returns``, as Python prints it, each
    tensor ``output <n>``; ``nested``: more than a tensor or a flat tuple); nothing for a
    module converted before modules recorded it."""
    from ..convert.outputs import OutputStructure

    text = getattr(module, "output_structure", None)
    if not isinstance(text, str):
        return {}
    try:
        structure = OutputStructure.from_json(text)
    except ValueError:
        return {}
    return {"returns": structure.describe(), "nested": structure.nested}


def describe_program(prog) -> dict:
    """One NnapiProgram's NNAPI model, as plain data."""
    from ..convert.torchscript.deserialize import deserialize
    from ..nnapi.codes import FeatureLevel, PreferenceCode

    weights = [w.contiguous().numpy() for w in prog.weights]
    loaded = deserialize(prog.ser_model.numpy(), weights)
    model = loaded.model
    origins = list(getattr(prog, "operation_origins", []))
    level = FeatureLevel(model.feature_level)

    def operand(i: int, name: str = "") -> dict:
        o = model.operands[i]
        entry = {"index": i, "type": o.type.name, "dimensions": list(o.dimensions)}
        if name:
            entry["name"] = name
        if o.info.is_quantized:
            entry.update(scale=o.scale, zero_point=o.zero_point)
        if o.value is not None and o.info.is_scalar:
            entry["value"] = o.value.item()
        return entry

    return {
        "feature_level": int(level),
        "android": level.android,
        "api_level": level.api_level,
        "operand_count": len(model.operands),
        "weights_bytes": int(sum(w.nbytes for w in weights)),
        "serialized_bytes": int(prog.ser_model.numel() * 4),
        "relax_fp32_to_fp16": bool(prog.relax_f32_to_f16),
        "compilation_preference": PreferenceCode(int(prog.compilation_preference)).name,
        "inputs": [dict(operand(i), pytorch_shape=list(s), nhwc=bool(p))
                   for i, s, p in zip(model.inputs, prog.input_shapes, prog.input_perms,
                                      strict=True)],
        "outputs": [operand(i) for i in model.outputs],
        "flexible_patches": len(prog.patch_offsets),
        "guards": list(prog.guard_messages),
        "operations": [{"index": k, "type": op.type.name,
                        "level": int(model.matches[k].level),
                        "inputs": [operand(i, n) for i, n in
                                   zip(op.inputs, _names(model.matches[k].input_positions,
                                                         len(op.inputs)), strict=True)],
                        "outputs": [operand(i) for i in op.outputs],
                        "origin": origins[k] if k < len(origins) else ""}
                       for k, op in enumerate(model.operations)],
    }


def _names(positions: dict, count: int) -> list[str]:
    """The signature's name of each input position ("" where it has none)."""
    names = [""] * count
    for name, indices in positions.items():
        for k, position in enumerate(indices):
            if position < count:
                names[position] = name if len(indices) == 1 else f"{name}[{k}]"
    return names


def _short(entry: dict) -> str:
    dims = "x".join(str(d) if d else "?" for d in entry["dimensions"])
    text = f"{entry['type'].replace('TENSOR_', '')}[{dims}]" if dims else entry["type"]
    if "value" in entry:
        text = f"{entry['value']!r}"
        if entry.get("name"):
            text = f"{entry['name']}={text}"
    if "scale" in entry:
        text += f"(s={entry['scale']:.4g},z={entry['zero_point']})"
    return text


@command("inspect", "show the NNAPI operations, operand types and shapes, and feature level"
         " of a converted module", _configure, torchscript=True)
def run(args: argparse.Namespace) -> int:
    profiles = device_profiles(args)
    if is_pte_path(args.module):
        if args.probe_model:
            raise usage("--probe-model reads a module saved by torch-nnapi convert, not a .pte")
        return inspect_pte(args)
    module = load_converted(args.module)
    probe_models = _write_probe_models(module, args.probe_model, args.module) \
        if args.probe_model else []
    if not args.json:
        print("".join(f"probe model: {path}\n" for path in probe_models), end="")
    try:
        info = describe(module)
    except (NnapiError, ValueError) as e:
        raise bad_file(f"module {args.module}: its NNAPI model cannot be read ({e})",
                       "the file was modified after conversion: convert the model again")\
            from None
    if profiles:
        plans = plans_of_module(module, profiles, args.preference)
        if args.json:
            info = dict(info, device_plans=plans_json(plans))
        else:
            print("\n".join(render_plans(plans)))
    if args.json:
        print(json.dumps(info, indent=1))
        return int(ExitCode.OK)
    if not info.get("partitioned"):
        print("\n".join(_render_program(info, args.summary)))
        return int(ExitCode.OK)
    from ..convert.fallback.report import PartitionReport

    report = PartitionReport.from_json(info["partition"])
    print(f"NNAPI feature level {info['feature_level']} (Android {info['android']}, API"
          f" {info['api_level']}), {report.summary()}")
    if info.get("nested"):
        print(f"returns {info['returns']}")
    print("\n".join(report.render()[1:]))
    for k, region in enumerate(info["regions"]):
        print(f"region {k}:")
        print("\n".join("  " + line for line in _render_program(region, args.summary)))
    return int(ExitCode.OK)


def _render_program(info: dict, summary: bool) -> list[str]:
    counts = Counter(op["type"] for op in info["operations"])
    lines = [f"NNAPI feature level {info['feature_level']} (Android {info['android']},"
             f" API {info['api_level']}): {counted(len(info['operations']), 'operation')},"
             f" {counted(info['operand_count'], 'operand')},"
             f" {info['weights_bytes'] / 1e6:.2f} MB of"
             " weights",
             f"preference {info['compilation_preference']}, relaxed float16:"
             f" {info['relax_fp32_to_fp16']}, flexible sizes patched at load:"
             f" {info['flexible_patches']}"]
    for i, entry in enumerate(info["inputs"]):
        layout = " NHWC" if entry["nhwc"] else ""
        flexible = ", -1: flexible" if any(d < 0 for d in entry["pytorch_shape"]) else ""
        lines.append(f"input {i}: {_short(entry)}{layout} (PyTorch shape"
                     f" {entry['pytorch_shape']}{flexible})")
    for i, entry in enumerate(info["outputs"]):
        lines.append(f"output {i}: {_short(entry)}")
    if info.get("nested"):
        lines.append(f"returns {info['returns']}")
    for message in info["guards"]:
        lines.append(f"load-time check: {message}")
    lines.append("operations: " + ", ".join(f"{n} {name}" for name, n in counts.most_common()))
    if not summary:
        for op in info["operations"]:
            ins = ", ".join(_short(e) for e in op["inputs"])
            outs = ", ".join(_short(e) for e in op["outputs"])
            origin = f"  [{op['origin']}]" if op["origin"] else ""
            lines.append(f"  {op['index']:4} {op['type']:24} L{op['level']} ({ins}) ->"
                         f" {outs}{origin}")
    return lines
