"""Float CONV_2D, GROUPED_CONV_2D and FULLY_CONNECTED through each sgemm the native kernels
can multiply with (oneDNN's, installed with torch-nnapi on x86-64 Linux, and NumPy's
OpenBLAS), against the reference kernels on randomized cases, on one thread and on two (each
thread multiplying its own blocks)."""

from __future__ import annotations

import numpy as np
import pytest

from torch_nnapi.nnapi import OperationType
from torch_nnapi.runtime import get_num_threads, native, set_num_threads
from torch_nnapi.runtime.native import onednn

from ._compare import assert_close, needs_native, run_both
from .test_conv import fc_inputs, run_conv

Op = OperationType
pytestmark = needs_native
LIBRARIES = [pytest.param("onednn", marks=pytest.mark.skipif(
    onednn.sgemm_functions() is None, reason="oneDNN (onednn-cpu-gomp) is not installed")),
    "numpy"]


@pytest.fixture(params=LIBRARIES)
def sgemm(request):
    """Multiplies with one library (and 1 or 2 threads) for the test, then as before."""
    before, threads = native.sgemm_library(), get_num_threads()
    native.select_sgemm(request.param)
    yield request.param
    native.select_sgemm("onednn" if before == "onednn" else "numpy")
    set_num_threads(threads)


@pytest.mark.parametrize("threads", [1, 2])
@pytest.mark.parametrize("seed", range(8))
def test_fully_connected(monkeypatch, sgemm, threads, seed):
    set_num_threads(threads)
    rng = np.random.default_rng(500 + seed)
    batch, input_size, units = (int(v) for v in rng.integers(1, 300, 3))
    inputs, output = fc_inputs(rng, batch, input_size, units, quantized=False)
    expected, actual = run_both(monkeypatch, Op.FULLY_CONNECTED, inputs, [output])
    assert native.sgemm_library() == sgemm
    assert_close(expected, actual)


@pytest.mark.parametrize("threads", [1, 2])
@pytest.mark.parametrize("op", [Op.CONV_2D, Op.GROUPED_CONV_2D], ids=lambda o: o.name)
@pytest.mark.parametrize("seed", range(5))
def test_convolutions(monkeypatch, sgemm, threads, op, seed):
    set_num_threads(threads)
    run_conv(monkeypatch, np.random.default_rng(600 + seed), op, quantized=False)


def test_an_unknown_library_is_refused():
    with pytest.raises(ValueError, match="must be one of onednn, numpy"):
        native.select_sgemm("mkl")
