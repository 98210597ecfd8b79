"""Every NNAPI operation of feature levels 1-3 has a declared signature and a host kernel."""

from __future__ import annotations

import pytest

from torch_nnapi.nnapi import OperationType
from torch_nnapi.nnapi.signatures import SIGNATURES
from torch_nnapi.runtime import kernel_for


@pytest.mark.parametrize("operation", list(OperationType), ids=lambda op: op.name)
def test_operation_has_signature_and_kernel(operation):
    assert operation in SIGNATURES, f"{operation.name} has no declared signature"
    assert kernel_for(operation) is not None, f"{operation.name} has no host kernel"
