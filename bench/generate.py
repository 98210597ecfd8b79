"""Autoregressive decoding: time to first token and tokens per second of a converted
GPT-style decoder step (one NNAPI execution per token) against eager PyTorch.

The step is the tests' ``TinyGptStep`` (pre-norm blocks, learned positions, a fixed-size
key/value cache written through ``torch.where``; tests/convert/control_models.py), converted
whole; both sides run the same greedy loop (``Generator``: scripted around the converted
step, in Python around the eager one), timed in turn in this process
(``torch-nnapi bench --generate`` does the same for saved generators). With
``--quantized`` the step is quantized for NNAPI first (``torch_nnapi.quantize``, PT2E,
level 3, calibrated on the float model's generations) and both sides run the quantized
model: eager is the PT2E model in PyTorch.

    PYTHONPATH=src:. python3 bench/generate.py [--runs 5] [--new-tokens 32] [--threads 1]
        [--quantized]
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

import torch

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from tests.convert.control_models import TinyGptStep, quantized_gpt_step  # noqa: E402
from torch_nnapi.convert.api import Conversion, convert_with_details  # noqa: E402
from torch_nnapi.convert.tools.generation import (  # noqa: E402
    executions_per_step,
    time_generation,
)
from torch_nnapi.convert.tools.threads import set_num_threads  # noqa: E402
from torch_nnapi.convert.torchscript.generate import Generator  # noqa: E402

PROMPT = torch.tensor([1, 7, 3, 9])
CALIBRATION_PROMPTS = [[1, 7, 3, 9], [4, 2], [11, 30, 5]]


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--runs", type=int, default=5)
    parser.add_argument("--new-tokens", type=int, default=32)
    parser.add_argument("--threads", type=int, default=1)
    parser.add_argument("--quantized", action="store_true",
                        help="quantize the step for NNAPI (PT2E, level 3) first")
    args = parser.parse_args()
    set_num_threads(args.threads)
    torch.manual_seed(0)
    tiny = TinyGptStep().eval().requires_grad_(False)
    keys = torch.zeros(tiny.cache_shape())
    step = quantized_gpt_step(tiny, CALIBRATION_PROMPTS, args.new_tokens) \
        if args.quantized else tiny
    conversion = convert_with_details(step, (torch.tensor([5]), torch.tensor([3]), keys, keys),
                                      nhwc=False)
    if not isinstance(conversion, Conversion):
        raise SystemExit("the decoder step did not convert whole")
    converted = torch.jit.script(Generator(conversion.module, keys, keys))
    eager = Generator(step, keys, keys)
    same = converted(PROMPT, args.new_tokens, -1).tolist() == \
        eager(PROMPT, args.new_tokens, -1).tolist()
    kind = "GPT-style step, quantized (eager: the PT2E model)" if args.quantized else \
        "GPT-style step"
    print(f"{kind}: {len(conversion.model.operations)} NNAPI operations,"
          f" {executions_per_step(conversion.module)} NNAPI execution per token;"
          f" prompt {len(PROMPT)} tokens, {args.new_tokens} new tokens, tokens identical"
          f" to eager: {same}")
    timings = {}
    for name, generator in (("eager", eager), ("NNAPI", converted)):
        timings[name] = t = time_generation(generator, PROMPT, args.new_tokens, args.runs)
        print(f"{name:6} first token {t.first_token * 1e3:8.2f} ms"
              f"  {t.tokens_per_second:8.1f} tokens/s")
    e, n = timings["eager"], timings["NNAPI"]
    print(f"NNAPI / eager: first token {n.first_token / e.first_token:.2f}x the time,"
          f" {n.tokens_per_second / e.tokens_per_second:.2f}x the tokens per second")


if __name__ == "__main__":
    main()
