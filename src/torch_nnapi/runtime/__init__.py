"""Layer 2: the host reference runtime. Executes NNAPI Models with NumPy (never imports torch)."""

from .context import OMITTED, KernelContext, ValueNotKnown
from .executor import Compilation, Execution, ExecutionResult, OperationTiming
from .registry import KERNELS, Kernel, kernel_for, register
from .threads import get_num_threads, set_num_threads

__all__ = [
    "Compilation",
    "Execution",
    "ExecutionResult",
    "KERNELS",
    "Kernel",
    "KernelContext",
    "OMITTED",
    "OperationTiming",
    "ValueNotKnown",
    "get_num_threads",
    "kernel_for",
    "register",
    "set_num_threads",
]
