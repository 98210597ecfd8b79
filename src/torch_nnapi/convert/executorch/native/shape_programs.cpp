// Size programs (shape_programs.h): checked once when the blob is read, so evaluation only
// guards the arithmetic (division by zero, int32 overflow).
#include "shape_programs.h"

#include <algorithm>
#include <limits>

#include "blob_reader.h"

namespace torch_nnapi {
namespace blob {
namespace {

bool is_operator(int32_t code) { return code >= kAdd && code <= kMin; }

int64_t floor_div(int64_t a, int64_t b) {
  int64_t q = a / b;
  return (a % b != 0 && ((a < 0) != (b < 0))) ? q - 1 : q;
}

int64_t floor_mod(int64_t a, int64_t b) { return a - floor_div(a, b) * b; }

const DimBound* bound_of(const std::vector<DimBound>& bounds, int64_t input, int64_t dim) {
  for (const DimBound& b : bounds)
    if (int64_t(b.input) == input && int64_t(b.dim) == dim) return &b;
  return nullptr;
}

}  // namespace

std::string program_problem(const std::vector<int32_t>& program,
                            const std::vector<DimBound>& bounds) {
  if (program.empty() || program.size() > kMaxProgramWords)
    return "has " + std::to_string(program.size()) + " words (1 to " +
           std::to_string(kMaxProgramWords) + ")";
  size_t depth = 0;
  for (size_t i = 0; i < program.size();) {
    int32_t code = program[i];
    std::string at = "word " + std::to_string(i) + ": ";
    if (code == kConst) {
      if (i + 1 >= program.size()) return at + "CONST without its value";
      depth++;
      i += 2;
    } else if (code == kDim) {
      if (i + 2 >= program.size()) return at + "DIM without its input and dimension";
      if (!bound_of(bounds, program[i + 1], program[i + 2]))
        return at + "DIM " + std::to_string(program[i + 1]) + " " +
               std::to_string(program[i + 2]) + " is no open dimension";
      depth++;
      i += 3;
    } else if (is_operator(code)) {
      if (depth < 2)
        return at + "operator " + std::to_string(code) + " with " + std::to_string(depth) +
               " values on the stack";
      depth--;
      i++;
    } else {
      return at + "unknown opcode " + std::to_string(code);
    }
    if (depth > kMaxStack) return at + "the stack grows past " + std::to_string(kMaxStack);
  }
  if (depth != 1) return "ends with " + std::to_string(depth) + " values on the stack";
  return "";
}

bool evaluate(const std::vector<int32_t>& program, const Sizes& sizes, int64_t* out,
              std::string* error) {
  int64_t stack[kMaxStack + 1];
  size_t depth = 0;
  for (size_t i = 0; i < program.size();) {
    int32_t code = program[i];
    if (code == kConst) {
      stack[depth++] = program[i + 1];
      i += 2;
      continue;
    }
    if (code == kDim) {
      stack[depth++] = sizes[size_t(program[i + 1])][size_t(program[i + 2])];
      i += 3;
      continue;
    }
    int64_t b = stack[--depth], a = stack[depth - 1], v = 0;
    switch (code) {
      case kAdd: v = a + b; break;
      case kSub: v = a - b; break;
      case kMul: v = a * b; break;  // both within int32: no int64 overflow
      case kMax: v = std::max(a, b); break;
      case kMin: v = std::min(a, b); break;
      default:
        if (b == 0) {
          *error = "a size program divides by zero for these input sizes";
          return false;
        }
        v = code == kFloorDiv ? floor_div(a, b) : floor_mod(a, b);
    }
    if (v < std::numeric_limits<int32_t>::min() || v > std::numeric_limits<int32_t>::max()) {
      *error = "a size program reaches " + std::to_string(v) + ", outside int32";
      return false;
    }
    stack[depth - 1] = v;
    i++;
  }
  *out = stack[0];
  return true;
}

bool resolve(const Blob& blob, const Sizes& sizes, Resolved* out, std::string* error) {
  if (sizes.size() != blob.inputs.size()) {
    *error = "got " + std::to_string(sizes.size()) + " inputs, the model takes " +
             std::to_string(blob.inputs.size());
    return false;
  }
  for (size_t k = 0; k < sizes.size(); k++) {
    const std::vector<int64_t>& recorded = blob.inputs[k].shape;
    if (sizes[k].size() != recorded.size()) {
      *error = "input " + std::to_string(k) + " has rank " + std::to_string(sizes[k].size()) +
               ", the model takes rank " + std::to_string(recorded.size());
      return false;
    }
    for (size_t d = 0; d < recorded.size(); d++) {
      const DimBound* b = bound_of(blob.bounds, int64_t(k), int64_t(d));
      int64_t n = sizes[k][d];
      if (b ? (n >= int64_t(b->min) && n <= int64_t(b->max)) : n == recorded[d]) continue;
      *error = "input " + std::to_string(k) + " dimension " + std::to_string(d) + " is " +
               std::to_string(n) +
               (b ? ", outside its bounds [" + std::to_string(b->min) + ", " +
                        std::to_string(b->max) + "]"
                  : ", the model takes " + std::to_string(recorded[d]) + " (a static size)");
      return false;
    }
  }
  const Model& main = blob.models[0];
  out->dimensions.clear();
  for (const Operand& o : main.operands) out->dimensions.push_back(o.dimensions);
  out->values.clear();
  out->output_shapes.clear();
  for (const Tensor& t : blob.outputs) out->output_shapes.push_back(t.shape);
  for (const SizePatch& p : blob.patches) {
    int64_t v = 0;
    if (!evaluate(p.program, sizes, &v, error)) return false;
    std::string where = (p.target == PatchTarget::kOutput ? "output " : "operand ") +
                        std::to_string(p.index) + " element " + std::to_string(p.element);
    if (p.target == PatchTarget::kValue) {
      out->values.push_back({p.index, p.element, int32_t(v)});
    } else if (v < 1) {
      *error = where + " would have size " + std::to_string(v) + " for these input sizes";
      return false;
    } else if (p.target == PatchTarget::kDimension) {
      out->dimensions[p.index][p.element] = uint32_t(v);
    } else {
      out->output_shapes[p.index][p.element] = v;
    }
  }
  return true;
}

}  // namespace blob
}  // namespace torch_nnapi
