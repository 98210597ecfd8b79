"""``torch-nnapi bench`` end to end through ``torch_nnapi.cli.main``."""

from __future__ import annotations

import json
import os
import subprocess
import sys

import pytest
import torch

from torch_nnapi.cli import main
from torch_nnapi.cli._errors import ExitCode

from ._models import QuantizedRelu, Scaled, save, saved_loop_decoder


@pytest.fixture()
def converted(tmp_path, capsys):
    original = save(Scaled(), torch.randn(1, 3, 4, 4), tmp_path / "scaled.pt")
    out = str(tmp_path / "scaled_nnapi.pt")
    assert main(["convert", original, "-o", out, "--input", "1x3x4x4:nhwc"]) == 0
    capsys.readouterr()
    return original, out


def test_bench_table(converted, capsys):
    original, out = converted
    assert main(["bench", out, "--original", original, "--runs", "3", "--top", "3"]) == 0
    text = capsys.readouterr().out
    lines = text.splitlines()
    assert lines[0] == "inputs (random): [1, 3, 4, 4] float32"
    assert lines[1].startswith("PyTorch's NNAPI runtime (") and "libneuralnetworks.so" in lines[1]
    assert "  compile " in text and ", first run " in text
    assert "  3 runs: median " in text and ", p90 " in text
    assert "eager PyTorch (original): median " in text and "NNAPI / eager: " in text
    assert "output 0 against eager: max error " in text
    assert "  outside the host runtime (wrapper module, C API, copies): " in text
    header = lines.index("  operation type                    total   share  count")
    table = lines[header + 1:lines.index("  slowest operations:")]
    counts = {row.split()[0]: int(row.split()[-1]) for row in table}
    # x * 3.0 - 1.0: subtracting a constant is an ADD of its negation (level 1, SUB 2)
    assert counts == {"MUL": 2, "ADD": 1, "TRANSPOSE": 1, "RESHAPE": 1, "EXP": 1, "SOFTMAX": 1}
    slowest = lines[lines.index("  slowest operations:") + 2:]
    assert len(slowest) == 3
    transpose = [row for row in lines if " TRANSPOSE " in row and "->" in row]
    if transpose:  # among the slowest three: its operands are listed with their shapes
        assert "float32 1x4x4x3, const 4 -> 1x3x4x4" in transpose[0]


def test_bench_json(converted, capsys):
    _, out = converted
    from torch_nnapi.runtime import get_num_threads
    from torch_nnapi.runtime.native import blas

    threads, runtime_threads, blas_threads = (torch.get_num_threads(), get_num_threads(),
                                              blas.thread_counts())
    assert main(["bench", out, "--runs", "2", "--threads", "1", "--json", "--top", "50"]) == 0
    report = json.loads(capsys.readouterr().out)
    # the thread settings are restored afterwards
    assert torch.get_num_threads() == threads
    assert get_num_threads() == runtime_threads
    assert blas.thread_counts() == blas_threads
    assert report["threads"] == 1 and report["input_source"] == "random"
    assert report["nnapi"]["runs"] == 2 and report["nnapi"]["median_ms"] > 0
    assert report["nnapi"]["p90_ms"] >= report["nnapi"]["median_ms"]
    assert report["compile_ms"] > 0 and report["eager"] is None and report["ratio"] is None
    # like with like: the host runtime's own unprofiled runs, as many, timed beside them
    assert report["host_runtime"]["runs"] == 2
    assert report["outside_runtime_ms"] == pytest.approx(
        report["nnapi"]["median_ms"] - report["host_runtime"]["median_ms"])
    assert report["nnapi"]["threads"] == 1
    profile = report["host_profile"]
    assert sum(t["count"] for t in profile["by_type"]) == 7
    assert sum(t["share"] for t in profile["by_type"]) == pytest.approx(1.0)
    assert len(profile["slowest"]) == 7
    times = [op["ms"] for op in profile["slowest"]]
    assert times == sorted(times, reverse=True)
    softmax = next(op for op in profile["slowest"] if op["type"] == "SOFTMAX")
    assert softmax["inputs"] == ["1x48"] and softmax["outputs"] == ["1x48"]


def test_bench_flexible_module_needs_shapes(tmp_path, capsys):
    original = save(Scaled(), torch.randn(1, 3, 4, 4), tmp_path / "scaled.pt")
    out = str(tmp_path / "flexible.pt")
    assert main(["convert", original, "-o", out, "--input", "1x3x?4x?4"]) == 0
    assert main(["bench", out, "--runs", "1"]) == ExitCode.USAGE
    assert "flexible dimensions" in capsys.readouterr().err
    assert main(["bench", out, "--runs", "1", "--input", "1x3x6x5", "--profile-runs", "0"]) == 0
    text = capsys.readouterr().out
    assert "[1, 3, 6, 5]" in text and "host runtime profile" not in text


def test_bench_rejects_a_module_not_converted(tmp_path, capsys):
    original = save(Scaled(), torch.randn(1, 3, 4, 4), tmp_path / "scaled.pt")
    assert main(["bench", original, "--runs", "1"]) == ExitCode.BAD_FILE
    assert "not converted by torch-nnapi" in capsys.readouterr().err


def test_bench_warns_when_threads_are_slower_than_one():
    from torch_nnapi.cli.bench_cmd import render
    from torch_nnapi.convert.tools.bench import BenchReport, Latencies, Latency

    report = BenchReport(inputs=[{"shape": [1], "dtype": "float32"}], threads=2,
                         latency=Latencies(nnapi=Latency([0.030, 0.031]),
                                           single_thread=Latency([0.010, 0.011])))
    assert report.latency.pools_contend and report.to_json()["pools_contend"]
    warning = [line for line in render(report) if line.startswith("warning: ")]
    assert warning and "2 threads ran slower than one" in warning[0]
    assert "--threads 1" in warning[0]
    report.latency.single_thread = Latency([0.030, 0.029])
    assert not report.latency.pools_contend
    assert not [line for line in render(report) if line.startswith("warning: ")]


def test_bench_times_a_generation_against_the_original(tmp_path, capsys):
    from torch_nnapi.convert.api import convert_with_details
    from torch_nnapi.convert.torchscript.generate import Generator

    from ..convert.control_models import TinyGptStep

    torch.manual_seed(0)
    step = TinyGptStep(layers=1, capacity=8).eval().requires_grad_(False)
    keys = torch.zeros(step.cache_shape())
    converted = convert_with_details(step, (torch.tensor([1]), torch.tensor([0]), keys, keys),
                                     nhwc=False).module
    for name, inner in (("gen.pt", converted), ("eager.pt", step)):
        torch.jit.save(torch.jit.script(Generator(inner, keys, keys)), str(tmp_path / name))
    args = ["bench", str(tmp_path / "gen.pt"), "--generate", "1,5", "--new-tokens", "4",
            "--runs", "1", "--original", str(tmp_path / "eager.pt")]
    assert main(args) == 0
    lines = capsys.readouterr().out.splitlines()
    assert lines[0] == "generation: a prompt of 2 tokens, 4 new tokens"
    assert lines[1].startswith("  converted: first token ") and \
        lines[1].endswith(" tokens/s, 1 NNAPI executions per token")
    assert lines[2].startswith("  eager: first token ") and lines[2].endswith(" tokens/s")
    assert lines[3].startswith("NNAPI / eager: first token ")
    assert main([*args, "--json"]) == 0
    report = json.loads(capsys.readouterr().out)
    assert report["converted"]["nnapi_executions_per_token"] == 1
    assert report["eager"]["nnapi_executions_per_token"] == 0
    assert main([*args[:3], "1,x"]) == ExitCode.USAGE
    assert "token ids separated by commas" in capsys.readouterr().err
    assert main([*args[:3], "1,5", "--new-tokens", "9", "--runs", "1"]) == ExitCode.USAGE
    assert "do not fit the cache's 8 slots" in capsys.readouterr().err


def _bench_as_a_user(*argv: str, **env: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run([sys.executable, "-m", "torch_nnapi.cli", "bench", *argv],
                          capture_output=True, text=True, timeout=300,
                          env={**os.environ, **env})


def test_bench_refuses_a_ratio_from_contended_runs(converted):
    """TORCH_NNAPI_BENCH_CONTEND (documented for testing) records the eager side's runs as a
    competing process makes them: no ratio, the reason and what to do instead."""
    original, out = converted
    result = _bench_as_a_user(out, "--original", original, "--runs", "4", "--top", "0",
                              "--threads", "1", TORCH_NNAPI_BENCH_CONTEND="eager")
    assert result.returncode == 0, result.stderr
    [line] = [x for x in result.stdout.splitlines() if x.startswith("NNAPI / eager: ")]
    # (the NNAPI side may be contended too on a busy machine: then it is named first)
    assert line.startswith("NNAPI / eager: no ratio: ") and "the eager runs were contended" \
        " (its median run took " in line, line
    assert "rerun when the machine is idle, with --threads 1" in line
    assert "Traceback" not in result.stderr
    result = _bench_as_a_user(out, "--original", original, "--runs", "4", "--json",
                              "--threads", "1", TORCH_NNAPI_BENCH_CONTEND="nnapi")
    report = json.loads(result.stdout)
    assert report["ratio"] is None and report["nnapi"]["threads"] == report["eager"]["threads"]
    assert report["ratio_refused"].startswith("the NNAPI runs were contended")


def test_a_ratio_names_its_threads_and_never_mixes_conditions():
    from torch_nnapi.cli.bench_cmd import render
    from torch_nnapi.convert.tools.bench import BenchReport, Latencies, Latency

    steady = [0.010, 0.0101, 0.0102]
    report = BenchReport(inputs=[{"shape": [1], "dtype": "float32"}], threads=None,
                         latency=Latencies(nnapi=Latency(steady, threads=2),
                                           eager=Latency([0.020, 0.0201], threads=2)))
    assert "NNAPI / eager: 0.50x (both on 2 threads)" in render(report)
    report.latency.eager = Latency([0.020, 0.0201], threads=1)
    assert report.latency.ratio is None
    assert "NNAPI / eager: no ratio: the sides ran on different thread counts (NNAPI on 2," \
        " eager on 1)" in render(report)


def test_outside_the_runtime_compares_like_with_like():
    """A profiled run slower than the NNAPI median printed 'outside the host runtime:
    0.00 ms'; against the host runtime's own runs, a negative difference is noise."""
    from torch_nnapi.cli.bench_cmd import render
    from torch_nnapi.convert.tools.bench import BenchReport, HostProfile, Latencies, Latency

    report = BenchReport(inputs=[{"shape": [1], "dtype": "float32"}], threads=1,
                         latency=Latencies(nnapi=Latency([0.0050, 0.0052], threads=1),
                                           host=Latency([0.0040, 0.0041])),
                         profile=HostProfile(3, 0.0090, [], []))
    [line] = [x for x in render(report) if "outside the host runtime" in x]
    assert "1.05 ms of the NNAPI median (the host runtime's own runs: 4.05 ms)" in line
    report.latency.host = Latency([0.0060, 0.0061])
    [line] = [x for x in render(report) if "outside the host runtime" in x]
    assert "0.00 ms" not in line and "within the noise" in line


@pytest.mark.slow
@pytest.mark.skipif("x86" not in torch.backends.quantized.supported_engines,
                    reason="needs PyTorch's x86 quantized engine")
def test_bench_says_which_quantized_engine_it_timed(tmp_path):
    original = save(QuantizedRelu(), torch.randn(1, 8), tmp_path / "q.pt")
    out = str(tmp_path / "q_nnapi.pt")
    assert main(["convert", original, "-o", out, "--input", "1x8"]) == 0
    result = _bench_as_a_user(out, "--original", original, "--runs", "2", "--top", "0",
                              "--profile-runs", "0", "--quantized-engine", "x86")
    assert result.returncode == 0, result.stderr
    assert "eager PyTorch (original, quantized engine x86): median " in result.stdout
    result = _bench_as_a_user(out, "--original", original, "--runs", "2", "--json",
                              "--profile-runs", "0")
    assert json.loads(result.stdout)["quantized_engine"] == "qnnpack"  # the default
    result = _bench_as_a_user(out, "--quantized-engine", "nosuch")
    assert result.returncode == ExitCode.USAGE
    assert result.stderr.count("\n") == 1 and "--quantized-engine 'nosuch'" in result.stderr


@pytest.mark.slow
def test_bench_times_the_regions_inside_a_loop(tmp_path):
    """The region inside the decoder's loop is timed where it runs: its executions (one
    per token, `break` included) summed per run of the module, beside the CPU nodes."""
    path, data, model = saved_loop_decoder(tmp_path)
    tokens = model(*torch.load(data)).shape[1]
    done = subprocess.run([sys.executable, "-m", "torch_nnapi.cli", "bench", path,
                           "--input-file", data, "--runs", "3", "--threads", "1"],
                          capture_output=True, text=True, timeout=600)
    assert done.returncode == ExitCode.OK, done.stderr[-2000:]
    assert f"region 0: body_0.region_0, {tokens} executions per run, median " \
        in done.stdout
    assert "CPU nodes alone: median " in done.stdout
    done = subprocess.run([sys.executable, "-m", "torch_nnapi.cli", "bench", path,
                           "--input-file", data, "--runs", "2", "--json"],
                          capture_output=True, text=True, timeout=600)
    assert done.returncode == ExitCode.OK, done.stderr[-2000:]
    (region,) = json.loads(done.stdout)["regions"]
    assert (region["name"], region["executions"], region["runs"]) == \
        ("body_0.region_0", tokens, 2)
    assert region["median_ms"] > 0
