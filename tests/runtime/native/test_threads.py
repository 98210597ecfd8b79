"""The native kernels' thread pool: the same results on any number of threads, executions
from several Python threads at once, a forked child, and the thread-count setting."""

from __future__ import annotations

import multiprocessing
import threading

import numpy as np
import pytest

from torch_nnapi.nnapi import OperationType
from torch_nnapi.runtime import Compilation, get_num_threads, native, set_num_threads, threads
from torch_nnapi.runtime.native import blas, module, onednn

from ..ops._single_op import F32, I32, Q8, build, const, fed_values, feed, i32, out
from ._compare import needs_native
from .test_conv import fc_inputs

pytestmark = needs_native


@pytest.fixture()
def restore_threads():
    saved = get_num_threads(), blas.thread_counts()
    yield
    set_num_threads(saved[0])
    blas.restore_thread_counts(saved[1])


def conv_model(quantized: bool, seed: int = 0):
    """A 3x3 convolution big enough to be split over threads, and its input."""
    rng = np.random.default_rng(seed)
    if quantized:
        inputs = [feed(Q8, rng.integers(0, 256, (2, 40, 40, 24), dtype=np.uint8), 0.1, 120),
                  const(Q8, rng.integers(0, 256, (48, 3, 3, 24), dtype=np.uint8), 0.02, 128),
                  const(I32, rng.integers(-999, 999, 48).astype(np.int32), 0.1 * 0.02)]
        output = out(Q8, (), 0.5, 100)
    else:
        inputs = [feed(F32, rng.standard_normal((2, 40, 40, 24)).astype(np.float32)),
                  const(F32, rng.standard_normal((48, 3, 3, 24)).astype(np.float32)),
                  const(F32, rng.standard_normal(48).astype(np.float32))]
        output = out(F32)
    inputs += [i32(1), i32(1), i32(1), i32(1), i32(1), i32(1), i32(1)]
    return build(OperationType.CONV_2D, inputs, [output]), fed_values(inputs)


@pytest.mark.parametrize("quantized", [True, False])
def test_results_do_not_depend_on_the_thread_count(restore_threads, quantized):
    model, fed = conv_model(quantized)
    results = []
    for count in (1, 2, 3, 7):
        set_num_threads(count)
        results.append(Compilation(model, kernels="native").run(fed).outputs[0])
    for result in results[1:]:
        np.testing.assert_array_equal(result, results[0])


def test_executions_from_several_python_threads_at_once(restore_threads):
    set_num_threads(3)
    model, fed = conv_model(True)
    compilation = Compilation(model, kernels="native")
    expected = Compilation(model, kernels="reference").run(fed).outputs[0]
    failures: list[str] = []

    def work() -> None:
        for _ in range(5):
            got = compilation.run(fed).outputs[0]
            if not np.array_equal(got, expected):
                failures.append("a concurrent execution gave another result")

    workers = [threading.Thread(target=work) for _ in range(4)]
    for worker in workers:
        worker.start()
    for worker in workers:
        worker.join(timeout=60)
    assert not any(worker.is_alive() for worker in workers), "an execution hung"
    assert not failures


def _run_in_child(queue) -> None:
    model, fed = conv_model(True)
    queue.put(Compilation(model, kernels="native").run(fed).outputs[0].sum(dtype=np.int64))


def test_a_forked_child_starts_its_own_workers(restore_threads):
    set_num_threads(2)
    model, fed = conv_model(True)
    expected = int(Compilation(model, kernels="native").run(fed).outputs[0].sum(dtype=np.int64))
    context = multiprocessing.get_context("fork")
    queue = context.Queue()
    child = context.Process(target=_run_in_child, args=(queue,))
    child.start()
    child.join(timeout=60)
    assert child.exitcode == 0, "the child failed or hung"
    assert queue.get(timeout=5) == expected


def test_fully_connected_splits_its_units_over_threads(restore_threads):
    rng = np.random.default_rng(3)
    inputs, output = fc_inputs(rng, 1, 300, 500, quantized=False)
    model = build(OperationType.FULLY_CONNECTED, inputs, [output])
    results = []
    for count in (1, 4):
        set_num_threads(count)
        results.append(Compilation(model, kernels="native").run(fed_values(inputs)).outputs[0])
    np.testing.assert_array_equal(results[0], results[1])


def test_set_num_threads(restore_threads):
    set_num_threads(3)
    assert get_num_threads() == 3 and module().get_threads() == 3
    assert set(blas.thread_counts()) <= {3}
    with pytest.raises(ValueError, match="at least 1"):
        set_num_threads(0)


def test_execution_keeps_openblas_on_one_thread_and_restores_it(restore_threads):
    if not module().has_sgemm():
        pytest.skip("NumPy's BLAS is not OpenBLAS: the float convolutions use np.matmul")
    set_num_threads(2)
    seen: list[list[int]] = []
    with blas.single_threaded():
        seen.append(blas.thread_counts())
        with blas.single_threaded():  # nested uses count
            seen.append(blas.thread_counts())
        seen.append(blas.thread_counts())
    assert all(set(counts) <= {1} for counts in seen)
    assert set(blas.thread_counts()) <= {2}


@pytest.mark.parametrize("value, expected", [("3", 3), ("", None), ("zero", None), ("0", None)])
def test_default_thread_count(monkeypatch, value, expected):
    monkeypatch.setenv(threads.ENVIRONMENT_VARIABLE, value)
    if expected is None and value:
        with pytest.warns(UserWarning, match="not a positive integer"):
            count = threads.default_thread_count()
    else:
        count = threads.default_thread_count()
    assert count == (expected or threads.available_cores())


def test_an_execution_sets_openblas_to_one_thread_only_when_the_kernels_call_it(
        restore_threads):
    """With NumPy's sgemm the float convolutions call OpenBLAS from the kernels' threads, so an
    execution holds it to one thread; with oneDNN's they never call it, and an execution
    leaves its thread count alone (setting it and back outweighed a small model's run)."""
    if not module().has_sgemm():
        pytest.skip("NumPy's BLAS is not OpenBLAS: the float convolutions use np.matmul")
    previous = native.sgemm_library()
    libraries = [("numpy", {1})]
    if onednn.sgemm_functions() is not None:
        libraries.append(("onednn", {2}))
    set_num_threads(2)
    try:
        for library, during in libraries:
            native.select_sgemm(library)
            with native.execution_scope():
                assert set(blas.thread_counts()) <= during, library
            assert set(blas.thread_counts()) <= {2}
    finally:
        native.select_sgemm(previous)
