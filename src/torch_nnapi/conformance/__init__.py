"""Conformance testing against NNAPI test vectors in the shared/cts JSON format."""

from .runner import Backend, Outcome, PythonBackend, compare_example, run_test, run_tests
from .spec import VERSIONS, CtsTest, build_model, discover, example_arrays, load_spec

__all__ = [
    "Backend",
    "CtsTest",
    "Outcome",
    "PythonBackend",
    "VERSIONS",
    "build_model",
    "compare_example",
    "discover",
    "example_arrays",
    "load_spec",
    "run_test",
    "run_tests",
]
