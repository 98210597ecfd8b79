"""Layer 2: the host reference runtime. Executes NNAPI Models with NumPy (never imports torch)."""

from .context import OMITTED, KernelContext, ValueNotKnown
from .executor import Compilation, Execution, ExecutionResult, OperationTiming
from .registry import KERNELS, Kernel, kernel_for, register

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
    "kernel_for",
    "register",
]
