"""Runs .pte files with bounded dynamic sizes through ExecuTorch's runtime with the NNAPI
backend, in a process of its own (test_dynamic_shapes.py starts it):
``python run_dynamic.py DIR NAME...`` loads the backend, then for each NAME loads
DIR/NAME.pte once and runs it on each input tuple of DIR/NAME.inputs.pt in turn, saving to
DIR/NAME.results.pt what each run returned, or the error it raised as a string."""

from __future__ import annotations

import sys
import warnings
from pathlib import Path

import torch

import torch_nnapi.executorch as nnapi_executorch

warnings.filterwarnings("ignore")


def main(directory: Path, names: list[str]) -> None:
    print("loaded", nnapi_executorch.load_backend(), flush=True)
    from executorch.runtime import Runtime

    runtime = Runtime.get()
    for name in names:
        # the program outlives its method: the delegate's named data lives in it
        program = runtime.load_program((directory / f"{name}.pte").read_bytes())
        method = program.load_method("forward")
        results: list[list[torch.Tensor] | str] = []
        for inputs in torch.load(directory / f"{name}.inputs.pt"):
            print(f"run {name} {[list(x.shape) for x in inputs]}", file=sys.stderr,
                  flush=True)
            try:
                results.append([o.clone() for o in method.execute(list(inputs))])
            except Exception as e:  # noqa: BLE001 - recorded for the test to judge
                results.append(f"{type(e).__name__}: {e}".replace("\n", " "))
        torch.save(results, directory / f"{name}.results.pt")
    print("done", flush=True)


if __name__ == "__main__":
    main(Path(sys.argv[1]), sys.argv[2:])
