"""Greedy decoding around a converted GPT-style step with a fixed-size key/value cache
(torchscript/generate.py): the step is one NNAPI model, so each token is one execution of
fixed shapes, and 32 generated tokens equal eager's, also in the lite interpreter; the step
quantized for NNAPI too, against the quantized eager model."""

from __future__ import annotations

import ast
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest
import torch

from torch_nnapi.convert.api import Conversion, convert_with_details
from torch_nnapi.convert.tools.generation import StepRecorder, decided_tokens
from torch_nnapi.convert.torchscript.generate import Generator, generate

from .. import control_models as cm

PROMPT = torch.tensor([1, 7, 3, 9])
NEW_TOKENS = 32


@pytest.fixture(scope="module")
def gpt():
    """The eager step, its conversion and the empty caches."""
    torch.manual_seed(0)
    step = cm.TinyGptStep().eval().requires_grad_(False)
    keys = torch.zeros(step.cache_shape())
    conversion = convert_with_details(step, (torch.tensor([5]), torch.tensor([3]), keys, keys),
                                      nhwc=False)
    return step, conversion, keys


def test_the_step_converts_whole_with_the_cache_in_and_out(gpt):
    step, conversion, keys = gpt
    assert isinstance(conversion, Conversion)  # one NNAPI model: one execution per token
    operations = {op.type.name for op in conversion.model.operations}
    assert {"GATHER", "EQUAL", "SELECT", "SOFTMAX"} <= operations
    filled = torch.randn(keys.shape)
    x = (torch.tensor([4]), torch.tensor([6]), filled, filled * 2)
    logits, new_keys, _ = conversion.module(*x)
    expected_logits, expected_keys, _ = step(*x)
    torch.testing.assert_close(logits, expected_logits, rtol=1e-4, atol=1e-5)
    torch.testing.assert_close(new_keys, expected_keys, rtol=1e-4, atol=1e-5)
    changed = (new_keys != filled).any(dim=-1)  # [layers, heads, slots]
    assert changed[:, :, 6].all() and not changed[:, :, :6].any() \
        and not changed[:, :, 7:].any()  # only the slot at the position


def test_greedy_generation_matches_eager_token_for_token(gpt):
    step, conversion, keys = gpt
    eager = generate(step, PROMPT, NEW_TOKENS, eos_id=-1, keys=keys, values=keys)
    converted = generate(conversion.module, PROMPT, NEW_TOKENS, eos_id=-1, keys=keys,
                         values=keys)
    assert eager.shape == (NEW_TOKENS,)
    assert converted.tolist() == eager.tolist()
    assert len(set(eager.tolist())) > 4  # not one token repeated


def test_generation_stops_at_the_end_token(gpt):
    step, _, keys = gpt
    free = generate(step, PROMPT, 8, eos_id=-1, keys=keys, values=keys)
    stopped = generate(step, PROMPT, 8, eos_id=int(free[2]), keys=keys, values=keys)
    first = free.tolist().index(int(free[2]))
    assert stopped.tolist() == free.tolist()[:first + 1]


def test_a_prompt_longer_than_the_cache_is_one_clear_error(gpt):
    step, _, keys = gpt
    with pytest.raises(Exception, match="do not fit the cache's 48 slots"):
        generate(step, torch.arange(40), 10, eos_id=-1, keys=keys, values=keys)
    with pytest.raises(ValueError, match="one shape"):
        Generator(step, keys, keys[0])


def test_the_generator_runs_in_a_fresh_process_and_the_lite_interpreter(gpt, tmp_path):
    step, conversion, keys = gpt
    generator = torch.jit.script(Generator(conversion.module, keys, keys))
    expected = generate(step, PROMPT, NEW_TOKENS, eos_id=-1, keys=keys, values=keys)
    generator._save_for_lite_interpreter(str(tmp_path / "gpt.ptl"))
    torch.jit.save(generator, str(tmp_path / "gpt.pt"))
    assert _run_saved(tmp_path / "gpt.pt", tmp_path / "gpt.ptl") == [expected.tolist()] * 2


def _run_saved(saved: Path, lite: Path) -> list[list[int]]:
    """The tokens a saved generator and its lite-interpreter file generate from PROMPT in a
    fresh process, through PyTorch's NNAPI runtime on the project's library."""
    script = textwrap.dedent(f"""
        import torch, torch_nnapi
        from torch.jit.mobile import _load_for_lite_interpreter
        prompt = torch.tensor({PROMPT.tolist()!r})
        for module in (torch.jit.load({str(saved)!r}), _load_for_lite_interpreter({str(lite)!r})):
            print(module(prompt, {NEW_TOKENS}, -1).tolist())
    """)
    done = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True,
                          timeout=600, cwd=Path(__file__).resolve().parents[3])
    assert done.returncode == 0, done.stderr[-3000:]
    return [ast.literal_eval(line) for line in done.stdout.splitlines()]


# The quantized decoder: the step quantized for NNAPI (PT2E, level 3) converts whole; its
# tokens equal the quantized eager model's as long as that model agrees with itself: up to
# the first token whose best two logits are within one output quantum (decided_tokens).

CALIBRATION_PROMPTS = [[1, 7, 3, 9], [4, 2], [11, 30, 5]]
MIN_DECIDED = 16  # a quantized model deciding fewer tokens would make the comparison weak


def quantized_output_scale(quantized: torch.fx.GraphModule) -> float:
    """The scale a PT2E model's first output (the logits) is dequantized with."""
    output = next(n for n in quantized.graph.nodes if n.op == "output")
    dequantize = output.args[0][0]
    assert "dequantize" in str(dequantize.target), dequantize.target
    return float(dequantize.args[1])


@pytest.fixture(scope="module")
def quantized_gpt(gpt):
    step, _, keys = gpt
    quantized = cm.quantized_gpt_step(step, CALIBRATION_PROMPTS)
    conversion = convert_with_details(quantized, (torch.tensor([5]), torch.tensor([3]), keys,
                                                  keys), nhwc=False)
    return quantized, conversion, keys


def _reference(quantized, keys, prompt, new_tokens):
    """The quantized eager model's tokens (an unscripted Generator around it) and how many
    of them it chose unambiguously."""
    recorder = StepRecorder(quantized)
    with torch.no_grad():
        tokens = Generator(recorder, keys, keys)(prompt, new_tokens, -1)
    output_quantum = quantized_output_scale(quantized)
    return tokens, decided_tokens(recorder.logits, len(prompt), output_quantum)


def test_the_quantized_step_converts_whole_in_8_bits(quantized_gpt):
    _, conversion, _ = quantized_gpt
    assert isinstance(conversion, Conversion)  # one NNAPI model: one execution per token
    operations = [op.type.name for op in conversion.model.operations]
    eight_bit = [op for op in conversion.model.operations if op.type.name == "FULLY_CONNECTED"]
    assert len(eight_bit) == operations.count("FULLY_CONNECTED") > 0
    assert all(conversion.model.operands[op.inputs[0]].type.name == "TENSOR_QUANT8_ASYMM"
               for op in eight_bit)


@pytest.mark.parametrize("prompt", [  # other prompts: slow (a few seconds each)
    PROMPT, pytest.param(torch.tensor([4, 2]), marks=pytest.mark.slow),
    pytest.param(torch.tensor([25]), marks=pytest.mark.slow)])
def test_quantized_generation_matches_the_quantized_eager_model(quantized_gpt, prompt):
    quantized, conversion, keys = quantized_gpt
    expected, decided = _reference(quantized, keys, prompt, NEW_TOKENS)
    actual = generate(conversion.module, prompt, NEW_TOKENS, eos_id=-1, keys=keys, values=keys)
    assert actual.shape == (NEW_TOKENS,)
    assert actual[:decided].tolist() == expected[:decided].tolist()
    assert decided >= MIN_DECIDED, f"the quantized model decided only {decided} tokens"


@pytest.mark.slow  # a fresh process importing torch and loading both files: ~15 s
def test_the_quantized_generator_runs_in_a_fresh_process_and_the_lite_interpreter(
        quantized_gpt, tmp_path):
    quantized, conversion, keys = quantized_gpt
    expected, decided = _reference(quantized, keys, PROMPT, NEW_TOKENS)
    generator = torch.jit.script(Generator(conversion.module, keys, keys))
    generator._save_for_lite_interpreter(str(tmp_path / "gpt_q.ptl"))
    torch.jit.save(generator, str(tmp_path / "gpt_q.pt"))
    for tokens in _run_saved(tmp_path / "gpt_q.pt", tmp_path / "gpt_q.ptl"):
        assert tokens[:decided] == expected[:decided].tolist()
