// NnapiBackend: ExecuTorch's BackendInterface over the NNAPI C API. init() reads the blob
// (blob_reader.h), builds the NNAPI model and its referenced models and compiles them once;
// execute() converts the inputs as the blob's mapping says (layout, int64/bool/float to the
// NNAPI operand's type), runs (in a burst where NNAPI has them) and converts the outputs
// back; destroy() frees it all. The library registers it as "NnapiBackend", the id the
// Python NnapiBackend writes into the .pte.
#pragma once

#include <executorch/runtime/backend/interface.h>

namespace torch_nnapi {

class NnapiBackend final : public ::executorch::runtime::BackendInterface {
 public:
  // False when libneuralnetworks.so or one of its feature-level-27 functions is missing.
  bool is_available() const override;

  ::executorch::runtime::Result<::executorch::runtime::DelegateHandle*> init(
      ::executorch::runtime::BackendInitContext& context,
      ::executorch::runtime::FreeableBuffer* processed,
      ::executorch::runtime::ArrayRef<::executorch::runtime::CompileSpec> compile_specs)
      const override;

  ::executorch::runtime::Error execute(
      ::executorch::runtime::BackendExecutionContext& context,
      ::executorch::runtime::DelegateHandle* handle,
      ::executorch::runtime::Span<::executorch::runtime::EValue*> args) const override;

  void destroy(::executorch::runtime::DelegateHandle* handle) const override;
};

}  // namespace torch_nnapi
