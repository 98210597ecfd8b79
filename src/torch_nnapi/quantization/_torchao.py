"""What this package uses of torchao, imported without start-up log lines that do not concern it.

torchao's wheel carries CUDA kernels (``_C_mxfp8``, ``_C_cutlass_90a``) that cannot load with
a CPU-only torch, and registers an Enum with torch's pytree the deprecated way; it logs a
warning for each at import. The PT2E quantization used here needs neither, so those two
loggers are quietened for the import only.
"""

from __future__ import annotations

import logging
from collections.abc import Iterator
from contextlib import contextmanager

_LOGGERS = ("torchao", "torch.utils._pytree")


@contextmanager
def _quiet_import() -> Iterator[None]:
    loggers = [logging.getLogger(name) for name in _LOGGERS]
    levels = [logger.level for logger in loggers]
    for logger in loggers:
        logger.setLevel(logging.ERROR)
    try:
        yield
    finally:
        for logger, level in zip(loggers, levels, strict=True):
            logger.setLevel(level)


with _quiet_import():
    from torchao.quantization.pt2e import (
        move_exported_model_to_eval,
        move_exported_model_to_train,
    )
    from torchao.quantization.pt2e.fake_quantize import FakeQuantize
    from torchao.quantization.pt2e.observer import (
        HistogramObserver,
        MinMaxObserver,
        MovingAverageMinMaxObserver,
        MovingAveragePerChannelMinMaxObserver,
        ObserverBase,
        PerChannelMinMaxObserver,
    )
    from torchao.quantization.pt2e.quantize_pt2e import (
        convert_pt2e,
        prepare_pt2e,
        prepare_qat_pt2e,
    )
    from torchao.quantization.pt2e.quantizer import (
        DerivedQuantizationSpec,
        FixedQParamsQuantizationSpec,
        QuantizationAnnotation,
        QuantizationSpec,
        QuantizationSpecBase,
        Quantizer,
        SharedQuantizationSpec,
    )
    from torchao.quantization.pt2e.quantizer.quantizer import (
        Q_ANNOTATION_KEY,
        ObserverOrFakeQuantizeConstructor,
    )

__all__ = [
    "Q_ANNOTATION_KEY",
    "DerivedQuantizationSpec",
    "FakeQuantize",
    "FixedQParamsQuantizationSpec",
    "HistogramObserver",
    "MinMaxObserver",
    "MovingAverageMinMaxObserver",
    "MovingAveragePerChannelMinMaxObserver",
    "ObserverBase",
    "ObserverOrFakeQuantizeConstructor",
    "PerChannelMinMaxObserver",
    "QuantizationAnnotation",
    "QuantizationSpec",
    "QuantizationSpecBase",
    "Quantizer",
    "SharedQuantizationSpec",
    "convert_pt2e",
    "move_exported_model_to_eval",
    "move_exported_model_to_train",
    "prepare_pt2e",
    "prepare_qat_pt2e",
]
