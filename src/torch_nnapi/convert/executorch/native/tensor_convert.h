// Moving a tensor between ExecuTorch's form (PyTorch's order and dtype, contiguous) and the
// NNAPI operand's (its layout and type), element by element as the blob's mapping says.
#pragma once

#include <cstddef>
#include <cstdint>
#include <vector>

#include "blob_reader.h"

namespace torch_nnapi {

// What one side of the conversion needs to know about the NNAPI operand.
struct OperandForm {
  int32_t type = 0;   // NNAPI operand type
  float scale = 0;    // quantized types
  int32_t zero_point = 0;
  size_t bytes = 0;   // of the whole operand
};

// ExecuTorch tensor data (`torch_data`, contiguous in `tensor.shape`) -> the NNAPI input
// buffer (`nnapi_data`, `operand.bytes` bytes, dimensions in `tensor.layout` order).
void to_nnapi(const blob::Tensor& tensor, const OperandForm& operand, const void* torch_data,
              void* nnapi_data);

// The NNAPI output buffer -> the ExecuTorch tensor's data.
void from_nnapi(const blob::Tensor& tensor, const OperandForm& operand, const void* nnapi_data,
                void* torch_data);

// True when the bytes need no conversion: same element type and PyTorch's own order.
bool is_direct(const blob::Tensor& tensor);

}  // namespace torch_nnapi
