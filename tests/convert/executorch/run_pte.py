"""Runs .pte files through ExecuTorch's runtime with the NNAPI backend, in a process of its
own (the tests start it): ``python run_pte.py DIR NAME...`` loads the backend, then for each
NAME runs DIR/NAME.pte on the tensors in DIR/NAME.inputs.pt and saves what it returned to
DIR/NAME.outputs.pt (flat, as ExecuTorch returns them; the structure the .pte records, which
nests them as the model returned them, in DIR/NAME.structure.json), or the error it raised to
DIR/NAME.error.txt. Mismatched inputs are tried after each good run (DIR/NAME.mismatch.txt:
one line per attempt)."""

from __future__ import annotations

import sys
import threading
import warnings
from pathlib import Path
from typing import Any

import torch

import torch_nnapi.executorch as nnapi_executorch
from torch_nnapi.convert.executorch.outputs import OUTPUTS_METHOD, read_structure, rebuild

warnings.filterwarnings("ignore")


def run_in_thread(method: Any, inputs: list[torch.Tensor]) -> list[torch.Tensor]:
    results: list[list[torch.Tensor]] = []
    thread = threading.Thread(target=lambda: results.append(method.execute(list(inputs))))
    thread.start()
    thread.join(timeout=300)
    assert results, "the execution in a thread did not finish"
    return results[0]


def main(directory: Path, names: list[str]) -> None:
    print("loaded", nnapi_executorch.load_backend(), flush=True)
    from executorch.runtime import Runtime

    runtime = Runtime.get()
    assert "NnapiBackend" in runtime.backend_registry.registered_backend_names
    for name in names:
        try:
            program = runtime.load_program((directory / f"{name}.pte").read_bytes())
            method = program.load_method("forward")
            inputs = torch.load(directory / f"{name}.inputs.pt")
            outputs = method.execute(list(inputs))
            torch.save([o.clone() for o in outputs], directory / f"{name}.outputs.pt")
            if OUTPUTS_METHOD in program.method_names:
                (text,) = program.load_method(OUTPUTS_METHOD).execute([])
                rebuild(read_structure(text), outputs)  # the structure fits the outputs
                # the structure's text, not the nested outputs: a named tuple it rebuilds is
                # a class made here, which pickle cannot find (tests rebuild it themselves)
                (directory / f"{name}.structure.json").write_text(text)
            # again, from another thread: the compilation and burst are reused, and
            # libneuralnetworks.so takes the GIL it needs from any thread
            again = run_in_thread(method, inputs)
            assert all(torch.equal(a, b) for a, b in zip(outputs, again, strict=True))
        except Exception as e:  # noqa: BLE001 - recorded for the test to judge
            (directory / f"{name}.error.txt").write_text(f"{type(e).__name__}: {e}")
            continue
        attempts = []
        first = inputs[0]
        wrong = [[*inputs[:-1]],  # too few
                 [first.reshape(-1), *inputs[1:]],  # another rank
                 [first.to(torch.float64 if first.dtype != torch.float64 else torch.float32),
                  *inputs[1:]]]  # another dtype
        for bad in wrong:
            try:
                method.execute(bad)
                attempts.append("accepted")
            except Exception as e:  # noqa: BLE001
                attempts.append(f"{type(e).__name__}: {e}".replace("\n", " "))
        (directory / f"{name}.mismatch.txt").write_text("\n".join(attempts))
    print("done", flush=True)


if __name__ == "__main__":
    main(Path(sys.argv[1]), sys.argv[2:])
