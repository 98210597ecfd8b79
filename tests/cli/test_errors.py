"""Every command given bad input: one line (plus a hint line), no traceback, the documented
exit code (cli/_errors.py)."""

from __future__ import annotations

import os
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest
import torch

from torch_nnapi.cli import build_parser, main
from torch_nnapi.cli._commands import COMMANDS
from torch_nnapi.cli._errors import ExitCode

from ..conftest import package_env
from ._models import Plain, Unsupported, save


@pytest.fixture(scope="module")
def files(tmp_path_factory) -> dict[str, str]:
    """Good and bad files for the commands, by name."""
    d = tmp_path_factory.mktemp("cli_errors")
    model = save(Plain(), torch.randn(1, 3, 4, 4), d / "plain.pt")
    linear = save(torch.nn.Linear(4, 2), torch.randn(1, 4), d / "linear.pt")
    unsupported = save(Unsupported(), torch.randn(2, 3), d / "unsupported.pt")
    converted = str(d / "plain_nnapi.pt")
    assert main(["convert", model, "-o", converted, "--input", "1x3x4x4"]) == 0
    data = Path(model).read_bytes()
    (d / "text.pt").write_text("this is not a model\n")
    (d / "truncated.pt").write_bytes(data[:len(data) // 2])
    flipped = bytearray(data)
    flipped[len(flipped) // 3] ^= 0x55
    (d / "flipped.pt").write_bytes(bytes(flipped))
    torch.save(torch.nn.Linear(2, 2).state_dict(), d / "state.pt")
    torch.save({"inputs": [1, 2]}, d / "inputs_dict.pt")
    (d / "table.csv").write_text("1,2,3\n")
    _pickle_unimportable_class(d)
    return {"dir": str(d), "model": model, "converted": converted, "linear": linear,
            "unsupported": unsupported,
            **{name: str(d / f"{name}.pt") for name in ("text", "truncated", "flipped",
                                                        "state", "inputs_dict",
                                                        "unimportable")},
            "csv": str(d / "table.csv"), "missing": str(d / "missing.pt")}


def _pickle_unimportable_class(d: Path) -> None:
    """A whole nn.Module whose class lives in a module importable only from ``d/code``."""
    code = d / "code"
    code.mkdir()
    (code / "private_models.py").write_text(textwrap.dedent("""
        import torch

        class Doubler(torch.nn.Module):
            def forward(self, x):
                return x * 2
    """))
    script = ("import torch, private_models;"
              f" torch.save(private_models.Doubler(), {str(d / 'unimportable.pt')!r})")
    subprocess.run([sys.executable, "-c", script], cwd=code, check=True, timeout=120,
                   env=package_env())


# (argv with {placeholders} for files, exit code, words the message has)
CASES = [
    (["bogus"], ExitCode.USAGE, "invalid choice: 'bogus'"),
    ([], ExitCode.USAGE, "required: COMMAND"),
    (["convert", "{model}"], ExitCode.USAGE, "required: -o/--output"),
    (["convert", "{model}", "-o", "{dir}/o.pt"], ExitCode.USAGE,
     "give the model's inputs with --input (only a .pt2 file carries example inputs)"),
    (["convert", "{linear}", "-o", "{dir}/o.pt", "--input", "1x5"], ExitCode.USAGE,
     "the model fails on inputs [1, 5] float32"),
    (["convert", "{unsupported}", "-o", "{dir}/o.pt", "--input", "2x3"],
     ExitCode.CANNOT_CONVERT, None),
    (["convert", "{model}", "-o", "{dir}/o.pt", "--input", "1x3x4x4",
      "--input", "1x3x4x4"], ExitCode.USAGE, "the model takes 1 input (x), got 2 --input"),
    (["convert", "{model}", "-o", "{dir}/o.pt", "--input", "1x3xfourx4"], ExitCode.USAGE,
     "dimension 2 ('four') is not a positive integer"),
    (["convert", "{model}", "-o", "{dir}/o.pt", "--input", "1x3x4x4:quint8=0.1,300"],
     ExitCode.USAGE, "zero point must be in [0, 255], got 300"),
    (["convert", "{model}", "-o", "{dir}/o.pt", "--input", "1x3x4x4:quint8=nan,0"],
     ExitCode.USAGE, "scale must be a positive finite number, got nan"),
    (["convert", "{model}", "-o", "{dir}/o.pt", "--input", "1x3x600000x100000"],
     ExitCode.OUT_OF_MEMORY, "GiB, more than this machine's"),
    (["convert", "{model}", "-o", "/nonexistent/dir/x.pt", "--input", "1x3x4x4"],
     ExitCode.CANNOT_WRITE, "directory /nonexistent/dir does not exist"),
    (["convert", "{model}", "-o", "{model}", "--input", "1x3x4x4"], ExitCode.CANNOT_WRITE,
     "is the input file; it would be overwritten"),
    (["convert", "{text}", "-o", "{dir}/o.pt", "--input", "1x3x4x4"], ExitCode.BAD_FILE,
     "not a PyTorch model file"),
    (["convert", "{truncated}", "-o", "{dir}/o.pt", "--input", "1x3x4x4"], ExitCode.BAD_FILE,
     "truncated or corrupted"),
    (["convert", "{flipped}", "-o", "{dir}/o.pt", "--input", "1x3x4x4"], ExitCode.BAD_FILE,
     "corrupted archive"),
    (["convert", "{state}", "-o", "{dir}/o.pt", "--input", "1x3x4x4"], ExitCode.BAD_FILE,
     "holds a Python OrderedDict, not a model"),
    (["convert", "{unimportable}", "-o", "{dir}/o.pt", "--input", "1x3x4x4"],
     ExitCode.BAD_FILE, "pickles a class that cannot be imported here"),
    (["convert", "{missing}", "-o", "{dir}/o.pt", "--input", "1x3x4x4"], ExitCode.BAD_FILE,
     "no such file"),
    (["convert", "{dir}", "-o", "{dir}/o.pt", "--input", "1x3x4x4"], ExitCode.BAD_FILE,
     "is a directory"),
    (["run", "{converted}", "--input", "1x3x5x4"], ExitCode.USAGE,
     "input 0 has shape [1, 3, 5, 4], the model takes [1, 3, 4, 4]"),
    (["run", "{converted}", "--host", "--input", "1x3x4x4:quint8=0.5,0"], ExitCode.USAGE,
     "input 0 is quint8, the model takes float32"),
    (["run", "{converted}", "--input", "1x3x4x4", "--input", "1x3x4x4"], ExitCode.USAGE,
     "expected 1 inputs, got 2"),
    (["run", "{converted}", "--profile"], ExitCode.USAGE, "add --host"),
    (["run", "{converted}", "--repeat", "0"], ExitCode.USAGE, "--repeat must be at least 1"),
    (["run", "{model}"], ExitCode.BAD_FILE, "not converted by torch-nnapi"),
    (["run", "{converted}", "--input-file", "{csv}"], ExitCode.BAD_FILE,
     "unknown kind of file '.csv'"),
    (["run", "{converted}", "--input-file", "{inputs_dict}"], ExitCode.BAD_FILE,
     "holds a dict, not a tensor"),
    (["run", "{converted}", "--input-file", "{dir}/none.npy"], ExitCode.BAD_FILE,
     "no such file"),
    (["run", "{converted}", "--save-outputs", "/nonexistent/out.npz"], ExitCode.CANNOT_WRITE,
     "does not exist"),
    (["inspect", "{text}"], ExitCode.BAD_FILE, "not a PyTorch model file"),
    (["inspect", "{model}"], ExitCode.BAD_FILE, "not converted by torch-nnapi"),
    (["inspect"], ExitCode.USAGE, "required: module"),
    (["check", "{model}"], ExitCode.USAGE, "give the model's inputs with --input"),
    (["check", "{linear}", "--input", "2x5"], ExitCode.USAGE,
     "the model fails on inputs [2, 5] float32"),
    (["check", "{model}", "--input", "1x3x4x4", "--worst", "-1"], ExitCode.USAGE,
     "--worst must be 0 or more"),
    (["check", "{model}", "--input", "1x3x4x4", "--report", "/nonexistent/r.html"],
     ExitCode.CANNOT_WRITE, "does not exist"),
    (["check", "{truncated}", "--input", "1x3x4x4"], ExitCode.BAD_FILE, "corrupted"),
    (["check", "{model}", "--input", "1x3x4x4", "--mean", "0.5"], ExitCode.USAGE,
     "--mean and --std apply to image input files only"),
    (["bench", "{converted}", "--runs", "0"], ExitCode.USAGE, "--runs must be at least 1"),
    (["bench", "{converted}", "--top", "-2"], ExitCode.USAGE, "--top must be at least 0"),
    (["bench", "{text}"], ExitCode.BAD_FILE, "not a PyTorch model file"),
    (["bench", "{converted}", "--original", "{missing}"], ExitCode.BAD_FILE,
     "original {missing}: no such file"),
    (["demo", "--runs", "0"], ExitCode.USAGE, "--runs must be at least 1"),
    (["demo", "--runs", "many"], ExitCode.USAGE, "invalid int value: 'many'"),
    (["cts", "{missing}"], ExitCode.BAD_FILE, "no such directory"),
    (["cts", "{dir}"], ExitCode.BAD_FILE,
     "has no V1_0/, V1_1/, V1_2/, V1_3/, V1_3_cts_only/ directory"),
    (["cts", "{dir}", "--versions", "V9"], ExitCode.USAGE, "unknown version V9"),
    (["libpath", "--dir", "--include"], ExitCode.USAGE, "not allowed with argument"),
    (["codegen", "{model}", "-o", "{dir}/c.py", "--input", "1x3x4x4"], ExitCode.BAD_FILE,
     "a TorchScript module, which torch.export cannot capture"),
    (["codegen", "{model}", "-o", "/nonexistent/dir/c.py", "--input", "1x3x4x4"],
     ExitCode.CANNOT_WRITE, "directory /nonexistent/dir does not exist"),
    (["codegen", "{model}", "-o", "{dir}/c.py", "--input", "1x3x4x4", "--calibration", "0"],
     ExitCode.USAGE, "--calibration must be 1 or more"),
]


def _expand(argv: list[str], files: dict[str, str]) -> list[str]:
    return [a.format(**files) for a in argv]


def test_every_command_has_bad_input_cases():
    assert {argv[0] for argv, _, _ in CASES if argv} >= set(COMMANDS)


@pytest.mark.parametrize("argv, code, words", CASES,
                         ids=[" ".join(c[0]) or "(nothing)" for c in CASES])
def test_bad_input_is_one_line_and_a_documented_code(argv, code, words, files, capsys):
    assert main(_expand(argv, files)) == code
    captured = capsys.readouterr()
    assert "Traceback" not in captured.err + captured.out
    if words is None:  # a report, not an error: what cannot be converted, and where
        assert "cannot convert the model" in captured.err and "aten::erfinv x2" in captured.err
        return
    lines = captured.err.splitlines()
    assert 1 <= len(lines) <= 2, captured.err
    command = f" {argv[0]}" if argv and argv[0] in COMMANDS else ""
    assert lines[0].startswith(f"torch-nnapi{command}: error: "), lines[0]
    assert words.format(**files) in lines[0]
    assert len(lines) == 1 or lines[1].startswith("hint: ")
    assert not captured.out


def test_library_missing_is_a_bad_file(monkeypatch, capsys):
    from torch_nnapi.cli import libpath

    def missing() -> str:
        raise FileNotFoundError("/x/libneuralnetworks.so is missing: reinstall")

    monkeypatch.setattr(libpath, "library_path", missing)
    assert main(["libpath"]) == ExitCode.BAD_FILE
    assert capsys.readouterr().err == ("torch-nnapi libpath: error: /x/libneuralnetworks.so is"
                                       " missing: reinstall\n")


def test_an_internal_error_is_one_line_too(monkeypatch, capsys):
    from torch_nnapi.cli import libpath

    def broken() -> str:
        raise KeyError("oops")

    monkeypatch.setattr(libpath, "library_path", broken)
    monkeypatch.delenv("TORCH_NNAPI_TRACEBACK", raising=False)
    assert main(["libpath"]) == ExitCode.INTERNAL
    err = capsys.readouterr().err.splitlines()
    assert err[0] == "torch-nnapi libpath: error: internal error: KeyError: 'oops'"
    assert err[1].startswith("hint: this is a bug in torch-nnapi") and len(err) == 2


@pytest.mark.slow
def test_as_a_process_no_traceback_and_no_pytorch_warnings(files):
    """In a real process: nothing else reaches stderr (no PyTorch deprecation warnings, no
    C++ "[W ...]" lines)."""
    env = package_env()
    env.pop("TORCH_CPP_LOG_LEVEL", None)
    for argv, code in ((["convert", files["truncated"], "-o", f"{files['dir']}/o.pt",
                         "--input", "1x3x4x4"], ExitCode.BAD_FILE),
                       (["run", files["converted"], "--input", "1x3x9x4"], ExitCode.USAGE),
                       (["check", files["model"], "--input", "1x3x4x4", "--no-layers"],
                        ExitCode.OK)):
        result = subprocess.run([sys.executable, "-m", "torch_nnapi.cli", *argv],
                                capture_output=True, text=True, env=env, timeout=300)
        assert result.returncode == code, result.stderr
        lines = result.stderr.splitlines()
        if code == ExitCode.OK:
            assert lines == [], result.stderr
        else:
            assert 1 <= len(lines) <= 2 and "error:" in lines[0], result.stderr


def test_output_piped_into_a_reader_that_stops_is_not_an_internal_error():
    """`torch-nnapi cts DIR | head -1`: the reader goes away; no error line, exit 141."""
    env = package_env()
    read_end, write_end = os.pipe()
    os.close(read_end)  # the reader is gone before the command writes anything
    try:
        result = subprocess.run([sys.executable, "-m", "torch_nnapi.cli", "libpath"],
                                stdout=write_end, stderr=subprocess.PIPE, env=env, timeout=120)
    finally:
        os.close(write_end)
    assert result.returncode == ExitCode.OUTPUT_CLOSED, result.stderr
    assert result.stderr == b""


def test_corrupted_model_files_are_bad_files_never_crashes(files, tmp_path):
    """Truncated and bit-flipped TorchScript, converted and pickled files, loaded in a child
    process (a crash there would be seen as a signal): each loads or is a BAD_FILE."""
    script = textwrap.dedent(f"""
        import random
        from torch_nnapi.cli._errors import CliError, ExitCode
        from torch_nnapi.cli._loading import load_converted, load_model
        random.seed(0)
        outcomes = {{}}
        for source, load in (({files['model']!r}, load_model),
                             ({files['converted']!r}, load_converted),
                             ({files['unimportable']!r}, load_model)):
            data = open(source, "rb").read()
            for k in range(60):
                broken = bytearray(data)
                if k % 2:
                    broken = broken[:random.randrange(len(broken))]
                else:
                    for _ in range(random.randint(1, 8)):
                        broken[random.randrange(len(broken))] ^= 1 << random.randrange(8)
                path = {str(tmp_path / 'broken.pt')!r}
                open(path, "wb").write(broken)
                try:
                    load(path)
                    outcome = "loaded"
                except CliError as e:
                    outcome = e.code.name
                outcomes[outcome] = outcomes.get(outcome, 0) + 1
        print(sorted(outcomes.items()))
    """)
    result = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True,
                            env=package_env(), timeout=300)
    assert result.returncode == 0, result.stderr[-2000:]
    outcomes = dict(eval(result.stdout))  # noqa: S307 - our own child's output
    assert set(outcomes) <= {"loaded", "BAD_FILE"} and outcomes["BAD_FILE"] >= 150, outcomes


def test_help_lists_the_exit_codes_and_environment(capsys):
    assert main(["--help"]) == 0
    text = capsys.readouterr().out
    flat = " ".join(text.split())
    for code in ExitCode:
        assert f"{int(code)} {code.__doc__}" in flat
    for variable in ("TORCH_NNAPI_NUM_THREADS", "LIBNEURALNETWORKS_PATH", "TORCH_NNAPI_PYTHON",
                     "TORCH_NNAPI_LIBPYTHON", "TORCH_NNAPI_TRACEBACK"):
        assert variable in text
    assert main(["check", "--help"]) == 0
    assert "exit codes:" in capsys.readouterr().out
    parser = build_parser()
    assert parser.prog == "torch-nnapi"


def test_version(capsys):
    import torch_nnapi

    assert main(["--version"]) == 0
    assert capsys.readouterr().out.startswith(f"torch-nnapi {torch_nnapi.__version__} (Python")


def test_check_reports_use_the_cli_exit_codes():
    from torch_nnapi.convert.tools.check import CheckReport

    report = CheckReport(inputs=[], input_error="the model fails on inputs [2]: no")
    assert report.exit_code == ExitCode.USAGE
    report = CheckReport(inputs=[])
    assert report.exit_code == ExitCode.CANNOT_CONVERT
    report.conversion.converted = True  # but no output compared
    assert report.exit_code == ExitCode.MISMATCH
