// Bounded dynamic sizes (the blob's SHAP section, docs/executorch_blob.md): the size
// programs' check, their evaluation, and the model fixed for one set of input sizes. No
// ExecuTorch or NNAPI dependency: the fuzz target builds it with the reader.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

namespace torch_nnapi {
namespace blob {

struct Blob;

// Opcodes of a size program (a postfix program on a stack; builder/symbolic.py writes them).
enum Opcode : int32_t {
  kConst = 0, kDim = 1, kAdd = 2, kSub = 3, kMul = 4, kFloorDiv = 5, kMod = 6, kMax = 7,
  kMin = 8,
};
enum class PatchTarget : uint8_t { kDimension = 0, kValue = 1, kOutput = 2 };

constexpr uint32_t kMaxProgramWords = 1024;
constexpr uint32_t kMaxStack = 64;

// ExecuTorch input `input`'s dimension `dim` (PyTorch's order) takes sizes in [min, max].
struct DimBound {
  uint32_t input = 0, dim = 0, min = 0, max = 0;
};

// `program` computes: a main-model operand's dimension (kDimension), an element of an
// inline INT32 constant (kValue), or an ExecuTorch output's dimension (kOutput).
struct SizePatch {
  PatchTarget target = PatchTarget::kDimension;
  uint32_t index = 0;  // the operand (or the ExecuTorch output)
  uint32_t element = 0;
  std::vector<int32_t> program;
};

// Empty when `program` is well formed (known opcodes, complete operands, a stack that never
// underflows nor grows past kMaxStack and ends with one value, DIM only on a bounded
// dimension); else what is wrong, for the reader's error line.
std::string program_problem(const std::vector<int32_t>& program,
                            const std::vector<DimBound>& bounds);

using Sizes = std::vector<std::vector<int64_t>>;  // per ExecuTorch input, PyTorch's order

// A well-formed program's value for these input sizes; false (and `error` set) on division
// by zero or a value outside int32.
bool evaluate(const std::vector<int32_t>& program, const Sizes& sizes, int64_t* out,
              std::string* error);

// The main model's operand dimensions, inline INT32 values and output shapes for `sizes`.
struct Resolved {
  std::vector<std::vector<uint32_t>> dimensions;  // per main-model operand
  struct Value {
    uint32_t operand, element;
    int32_t value;
  };
  std::vector<Value> values;
  std::vector<std::vector<int64_t>> output_shapes;  // per ExecuTorch output
};

// Checks `sizes` against the blob's bounds (ranks, fixed dimensions and the bounded ones)
// and runs every size program. False with one line in `error` naming the input and
// dimension (or the operand) when they do not fit.
bool resolve(const Blob& blob, const Sizes& sizes, Resolved* out, std::string* error);

}  // namespace blob
}  // namespace torch_nnapi
