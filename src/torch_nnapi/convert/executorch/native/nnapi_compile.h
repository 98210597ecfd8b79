// One NNAPI model and its compilation, built from the blob: at the blob's sizes (init), or
// for one set of dynamic input sizes (the blob's size programs resolved, shape_programs.h).
// NnapiBackend (nnapi_backend.cpp) keeps them and runs them.
#pragma once

#include <cstdint>
#include <map>
#include <memory>
#include <string>
#include <vector>

#include <executorch/runtime/core/error.h>
#include <executorch/runtime/core/freeable_buffer.h>
#include <executorch/runtime/core/named_data_map.h>
#include <executorch/runtime/platform/log.h>

#include "blob_reader.h"
#include "nnapi_api.h"
#include "shape_programs.h"
#include "tensor_convert.h"

#define TNN_LOG(level, ...) ET_LOG(level, "NnapiBackend: " __VA_ARGS__)

namespace torch_nnapi {

// How to compile, settled at init (runtime specs over the blob's options).
struct LoadSettings {
  blob::Options options;
  std::vector<std::string> devices;  // empty: NNAPI chooses
  std::string device_override;       // the "devices" runtime spec, part of the cache token
  std::string cache_dir;             // empty: no compilation caching
  uint8_t token[blob::kTokenSize] = {};
};

// The blob's named data (large constants): fetched once at init, shared by every build.
struct NamedValues {
  const ::executorch::runtime::NamedDataMap* map = nullptr;  // only during init
  std::map<std::string, ::executorch::runtime::FreeableBuffer> buffers;
};

// A compiled model and what running it needs; the destructor frees the NNAPI objects.
struct Compiled {
  const NnapiApi* api = nullptr;
  blob::Sizes input_sizes;  // what it was compiled for
  std::vector<ANeuralNetworksModel*> models;
  ANeuralNetworksCompilation* compilation = nullptr;
  ANeuralNetworksBurst* burst = nullptr;
  bool single_device = false;
  std::vector<blob::Tensor> inputs, outputs;  // the blob's mapping, at these sizes
  std::vector<OperandForm> nnapi_inputs, nnapi_outputs;
  std::vector<std::vector<uint8_t>> staging_in, staging_out;  // per NNAPI input, output
  std::vector<int> output_direct;  // per NNAPI output: the ExecuTorch output written in place
  std::vector<std::unique_ptr<uint8_t[]>> constants;  // inline values NNAPI may reference

  ~Compiled();
};

// Logs a failed NNAPI call and says whether it failed.
bool failed(int code, const char* call);

// Builds and compiles the blob's models into `out`: at the blob's own sizes when `resolved`
// is null, else with its dimensions, INT32 values and output shapes. `blob_data` is the
// blob's bytes (inline values are copied from it).
::executorch::runtime::Error compile_blob(const NnapiApi& api, const blob::Blob& b,
                                          const uint8_t* blob_data,
                                          const blob::Resolved* resolved,
                                          const LoadSettings& settings, NamedValues& named,
                                          Compiled* out);

// The blob's feature level against what `what` offers; logs and refuses an older one.
::executorch::runtime::Error check_feature_level(const char* what, int64_t offered,
                                                 uint32_t needed);

}  // namespace torch_nnapi
