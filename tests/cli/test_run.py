"""``torch-nnapi run`` (and the input handling ``check`` and ``bench`` share): real inputs
from files, outputs saved, deterministic bundled and random inputs of the model's dtype."""

from __future__ import annotations

import subprocess
import sys

import numpy as np
import pytest
import torch

from torch_nnapi.cli import main
from torch_nnapi.cli._errors import ExitCode

from ..conftest import package_env
from ._models import ConvLinear, Plain, save, saved_loop_decoder


@pytest.fixture(scope="module")
def converted(tmp_path_factory) -> str:
    d = tmp_path_factory.mktemp("run")
    model = save(Plain(), torch.randn(1, 3, 4, 4), d / "plain.pt")
    out = str(d / "plain_nnapi.pt")
    assert main(["convert", model, "-o", out, "--input", "1x3x4x4"]) == 0
    return out


def _expected(x: torch.Tensor) -> np.ndarray:
    return Plain()(x).numpy()


@pytest.mark.parametrize("kind", ["npy", "npz", "pt", "pt-tuple"])
def test_input_files_and_saved_outputs(converted, tmp_path, capsys, kind):
    x = torch.randn(1, 3, 4, 4, generator=torch.Generator().manual_seed(7))
    path = tmp_path / f"x.{kind.split('-')[0]}"
    if kind == "npy":
        np.save(path, x.numpy().astype(np.float64))  # float64 data: computed as float32
    elif kind == "npz":
        np.savez(path, image=x.numpy())
    else:
        torch.save((x,) if kind == "pt-tuple" else x, path)
    saved = tmp_path / "out.npz"
    code = main(["run", converted, "--input-file", str(path), "--save-outputs", str(saved),
                 "--repeat", "1", "--host"])
    assert code == ExitCode.OK, capsys.readouterr().err
    text = capsys.readouterr().out
    assert "inputs (from files): [1, 3, 4, 4] float32" in text
    with np.load(saved) as outputs:
        np.testing.assert_allclose(outputs["output_0"], _expected(x), rtol=1e-6, atol=1e-6)


def test_image_input_with_mean_and_std(converted, tmp_path, capsys):
    from PIL import Image

    pixels = np.random.default_rng(0).integers(0, 256, (8, 6, 3), dtype=np.uint8)
    Image.fromarray(pixels).save(tmp_path / "photo.png")
    saved = tmp_path / "out.npz"
    assert main(["run", converted, "--input-file", str(tmp_path / "photo.png"),
                 "--input", "1x3x4x4", "--mean", "0.5,0.4,0.3", "--std", "0.2", "--host",
                 "--repeat", "1", "--save-outputs", str(saved)]) == ExitCode.OK
    capsys.readouterr()
    resized = np.asarray(Image.fromarray(pixels).resize((4, 4), Image.Resampling.BILINEAR),
                         np.float32) / 255.0
    x = (torch.from_numpy(resized.transpose(2, 0, 1)) - torch.tensor([0.5, 0.4, 0.3])
         .reshape(3, 1, 1)) / 0.2
    with np.load(saved) as outputs:
        np.testing.assert_allclose(outputs["output_0"], _expected(x[None]), rtol=1e-5,
                                   atol=1e-5)


def test_an_image_of_another_size_than_the_model_takes(converted, tmp_path, capsys):
    from PIL import Image

    Image.new("RGB", (9, 7)).save(tmp_path / "photo.jpg")
    assert main(["run", converted, "--input-file", str(tmp_path / "photo.jpg")]) == \
        ExitCode.OK  # resized to the converted shape
    capsys.readouterr()


def test_random_inputs_are_the_same_every_run(converted, capsys):
    outputs = []
    for _ in range(2):
        assert main(["run", converted, "--repeat", "1", "--host"]) == ExitCode.OK
        outputs.append([line for line in capsys.readouterr().out.splitlines()
                        if line.startswith("output 0")])
    assert outputs[0] == outputs[1]


def test_bundled_inputs_are_the_same_every_run(tmp_path, capsys):
    model = save(Plain(), torch.randn(1, 3, 4, 4), tmp_path / "plain.pt")
    out = str(tmp_path / "bundled.pt")
    assert main(["convert", model, "-o", out, "--input", "1x3x4x4", "--bundle"]) == 0
    module = torch.jit.load(out)
    first, second = module.get_all_bundled_inputs(), torch.jit.load(out).get_all_bundled_inputs()
    assert torch.equal(first[0][0], second[0][0])
    torch.manual_seed(123)  # the example of input 0 is seeded with 0 whatever the global seed
    assert torch.equal(first[0][0], torch.randn(1, 3, 4, 4,
                                                generator=torch.Generator().manual_seed(0)))
    capsys.readouterr()


class Embedding(torch.nn.Module):
    def __init__(self):
        super().__init__()
        torch.manual_seed(0)
        self.table = torch.nn.Embedding(10, 4)

    def forward(self, ids):
        return self.table(ids)


def test_inputs_have_the_models_dtype(tmp_path, capsys):
    """A model of token ids gets int64 ids (random ones are small non-negative integers);
    an --input without a dtype takes the model's."""
    ids = torch.tensor([[1, 2, 3]])
    model = save(Embedding(), ids, tmp_path / "embedding.pt")
    out = str(tmp_path / "embedding_nnapi.pt")
    assert main(["convert", model, "-o", out, "--input", "1x3:int64"]) == 0
    capsys.readouterr()
    assert main(["run", out, "--repeat", "1", "--host"]) == ExitCode.OK
    assert "inputs (random): [1, 3] int64" in capsys.readouterr().out
    assert main(["run", out, "--repeat", "1", "--host", "--input", "1x3"]) == ExitCode.OK
    assert "inputs (random): [1, 3] int64" in capsys.readouterr().out
    np.save(tmp_path / "ids.npy", np.array([[4, 5, 6]], np.int64))
    saved = tmp_path / "out.npz"
    assert main(["run", out, "--repeat", "1", "--host", "--input-file",
                 str(tmp_path / "ids.npy"), "--save-outputs", str(saved)]) == ExitCode.OK
    with np.load(saved) as outputs:
        np.testing.assert_allclose(outputs["output_0"],
                                   Embedding()(torch.tensor([[4, 5, 6]])).detach().numpy())
    capsys.readouterr()


def test_quantized_outputs_are_saved_with_their_parameters(tmp_path, capsys):
    class Quantized(torch.nn.Module):
        def forward(self, x):
            return torch.relu(torch.quantize_per_tensor(x, 0.05, 128, torch.quint8))

    model = save(Quantized(), torch.randn(1, 8), tmp_path / "q.pt")
    out = str(tmp_path / "q_nnapi.pt")
    assert main(["convert", model, "-o", out, "--input", "1x8"]) == 0
    saved = tmp_path / "out.npz"
    assert main(["run", out, "--repeat", "1", "--host", "--save-outputs", str(saved)]) == 0
    with np.load(saved) as outputs:
        assert outputs["output_0"].dtype == np.uint8
        assert float(outputs["output_0_scale"]) == pytest.approx(0.05)
        assert int(outputs["output_0_zero_point"]) == 128
    capsys.readouterr()


def test_check_and_bench_take_input_files(tmp_path, converted, capsys):
    x = torch.randn(1, 3, 4, 4)
    np.save(tmp_path / "x.npy", x.numpy())
    model = save(Plain(), x, tmp_path / "plain.pt")
    assert main(["check", model, "--input-file", str(tmp_path / "x.npy")]) == ExitCode.OK
    assert capsys.readouterr().out.splitlines()[0] == "inputs: [1, 3, 4, 4] float32"
    assert main(["bench", converted, "--input-file", str(tmp_path / "x.npy"), "--runs", "1",
                 "--profile-runs", "0"]) == ExitCode.OK
    assert "inputs (from files): [1, 3, 4, 4] float32" in capsys.readouterr().out


def test_run_host_runs_the_regions_inside_a_loop(tmp_path):
    """Each execution of the region inside the decoder's loop runs on the host runtime; the
    tokens (the loop's outputs, `break` included) are eager's."""
    path, data, model = saved_loop_decoder(tmp_path)
    saved = tmp_path / "out.npz"
    done = subprocess.run([sys.executable, "-m", "torch_nnapi.cli", "run", path, "--host",
                           "--input-file", data, "--repeat", "1", "--save-outputs",
                           str(saved)], capture_output=True, text=True, timeout=600)
    assert done.returncode == ExitCode.OK, done.stderr[-2000:]
    assert "host runtime" in done.stdout
    with np.load(saved) as outputs:
        assert outputs["output_0"].tolist() == model(*torch.load(data)).tolist()


def test_a_flexible_module_takes_the_images_own_size(tmp_path):
    """`run flexible.pt --input-file cat.jpg`, in a real process: a module converted with
    flexible height and width runs on the image as it is."""
    from PIL import Image

    model = tmp_path / "conv_linear.pt"
    torch.jit.save(torch.jit.trace(ConvLinear().eval(), torch.rand(1, 3, 12, 12)), str(model))
    pixels = np.random.default_rng(0).integers(0, 256, (20, 30, 3), dtype=np.uint8)
    Image.fromarray(pixels).save(tmp_path / "cat.jpg")

    assert main(["convert", str(model), "-o", str(tmp_path / "flexible.pt"), "--input",
                 "1x3x?12x?12"]) == 0
    result = subprocess.run([sys.executable, "-m", "torch_nnapi.cli", "run", "flexible.pt",
                             "--input-file", "cat.jpg"], cwd=tmp_path, capture_output=True,
                            text=True, env=package_env(), timeout=600)
    assert result.returncode == 0, result.stderr
    assert "inputs (from files): [1, 3, 20, 30] float32" in result.stdout
