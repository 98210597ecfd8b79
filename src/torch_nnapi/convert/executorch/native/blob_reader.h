// The NNAPI delegate blob, read strictly (docs/executorch_blob.md; the writer is
// torch_nnapi/convert/executorch/blob.py). No ExecuTorch or NNAPI dependency, so the fuzz
// target builds from this file alone.
#pragma once

#include <cstddef>
#include <cstdint>
#include <string>
#include <vector>

#include "shape_programs.h"

namespace torch_nnapi {
namespace blob {

constexpr uint32_t kVersion = 2;        // 2 added the SHAP section (bounded dynamic sizes)
constexpr uint32_t kOldestVersion = 1;  // still read: static sizes, no SHAP
constexpr size_t kHeaderSize = 64;
constexpr size_t kTokenSize = 32;  // ANEURALNETWORKS_BYTE_SIZE_OF_CACHE_TOKEN
constexpr uint32_t kMaxRank = 8;

enum class ValueKind : uint8_t { kNone = 0, kInline = 1, kNamed = 2, kOmitted = 3, kModel = 4 };
enum class Conversion : uint8_t { kCopy = 0, kInt64Int32 = 1, kBoolInt32 = 2, kQuantize = 3 };
enum Flag : uint32_t { kRelax = 1, kCaching = 2, kBurst = 4 };

// ExecuTorch ScalarType codes the mapping uses.
enum ScalarType : int32_t {
  kByte = 0, kChar = 1, kShort = 2, kInt = 3, kLong = 4, kHalf = 5, kFloat = 6, kDouble = 7,
  kBool = 11,
};

// NNAPI operand type codes (NeuralNetworks.h), for the checks that need them.
enum OperandCode : int32_t {
  kFloat32 = 0, kInt32 = 1, kUint32 = 2, kTensorFloat32 = 3, kTensorInt32 = 4,
  kTensorQuant8Asymm = 5, kBoolScalar = 6, kTensorQuant16Symm = 7, kTensorFloat16 = 8,
  kTensorBool8 = 9, kFloat16 = 10, kTensorQuant8SymmPerChannel = 11,
  kTensorQuant16Asymm = 12, kTensorQuant8Symm = 13, kTensorQuant8AsymmSigned = 14,
  kModelOperand = 15,
};

struct Operand {
  int32_t type = 0;
  std::vector<uint32_t> dimensions;
  float scale = 0;
  int32_t zero_point = 0;
  ValueKind kind = ValueKind::kNone;
  uint64_t offset = 0;  // kInline: where the value starts in the whole blob
  uint64_t length = 0;  // kInline, kNamed: its size in bytes
  std::string key;      // kNamed: the key in ExecuTorch's named data map
  uint32_t model = 0;   // kModel: the referenced model's index (> this model's)
  bool per_channel = false;
  uint32_t channel_dim = 0;
  std::vector<float> channel_scales;
};

struct Operation {
  int32_t type = 0;
  std::vector<uint32_t> inputs, outputs;
};

struct Model {
  std::vector<Operand> operands;
  std::vector<Operation> operations;
  std::vector<uint32_t> inputs, outputs;
  bool relax = false;
};

// One ExecuTorch input or output and the main model's input or output it is.
struct Tensor {
  uint32_t nnapi_index = 0;
  int32_t dtype = 0;                // ExecuTorch ScalarType
  std::vector<int64_t> shape;       // PyTorch's order
  std::vector<uint32_t> layout;     // NNAPI dimension i holds PyTorch dimension layout[i]
  Conversion conversion = Conversion::kCopy;
  size_t elements = 0;              // product of shape
};

struct Options {
  int32_t preference = 0;
  int32_t priority = 0;  // 0: NNAPI's default
  uint64_t compile_timeout_ns = 0, execute_timeout_ns = 0, loop_timeout_ns = 0;
  uint32_t flags = 0;
  uint32_t feature_level = 0;
  std::string cache_dir;
  std::vector<std::string> devices;
};

struct Blob {
  uint8_t token[kTokenSize] = {};
  Options options;
  std::vector<Model> models;  // the main model first
  std::vector<Tensor> inputs, outputs;
  std::vector<DimBound> bounds;     // the open input dimensions (none: static sizes)
  std::vector<SizePatch> patches;   // what fixes the main model for given input sizes
};

// Reads `size` bytes at `data` into `out`. On failure returns false and sets `error` to one
// line naming what is wrong and where; never reads outside [data, data + size).
bool parse(const uint8_t* data, size_t size, Blob* out, std::string* error);

// Bytes of one element of an NNAPI operand type (0 for MODEL or an unknown code).
size_t element_size(int32_t operand_type);
// Bytes of one element of an ExecuTorch ScalarType the mapping uses (0 otherwise).
size_t scalar_size(int32_t scalar_type);
// The conversion an ExecuTorch dtype and an NNAPI operand type pair with, or false.
bool conversion_for(int32_t scalar_type, int32_t operand_type, Conversion* out);
// zlib's CRC-32.
uint32_t crc32(const uint8_t* data, size_t size);

}  // namespace blob
}  // namespace torch_nnapi
