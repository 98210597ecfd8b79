// Layout and dtype conversions at the delegate's boundary (tensor_convert.h).
#include "tensor_convert.h"

#include <algorithm>
#include <cmath>
#include <cstring>
#include <limits>

namespace torch_nnapi {
namespace {

using blob::Conversion;

// Calls visit(nnapi_index, torch_index) for every element, NNAPI's order outermost-first:
// NNAPI dimension d walks PyTorch dimension layout[d].
template <typename Visit>
void for_each_element(const blob::Tensor& t, Visit visit) {
  size_t rank = t.shape.size();
  if (rank == 0 || t.elements == 0) {
    if (t.elements) visit(size_t(0), size_t(0));
    return;
  }
  std::vector<size_t> torch_stride(rank, 1);
  for (size_t d = rank - 1; d > 0; d--) torch_stride[d - 1] = torch_stride[d] * size_t(t.shape[d]);
  std::vector<size_t> extent(rank), stride(rank), index(rank, 0);
  for (size_t d = 0; d < rank; d++) {
    extent[d] = size_t(t.shape[t.layout[d]]);
    stride[d] = torch_stride[t.layout[d]];
  }
  size_t torch_index = 0;
  for (size_t n = 0; n < t.elements; n++) {
    visit(n, torch_index);
    for (size_t d = rank; d-- > 0;) {  // odometer step, innermost NNAPI dimension first
      torch_index += stride[d];
      if (++index[d] < extent[d]) break;
      torch_index -= stride[d] * extent[d];
      index[d] = 0;
    }
  }
}

template <typename T>
T quantize(float x, float scale, int32_t zero_point) {
  float q = std::nearbyint(x / scale) + float(zero_point);
  float lo = float(std::numeric_limits<T>::min()), hi = float(std::numeric_limits<T>::max());
  return T(std::min(hi, std::max(lo, std::isnan(q) ? float(zero_point) : q)));
}

size_t nnapi_element_size(const OperandForm& o) { return blob::element_size(o.type); }

}  // namespace

bool is_direct(const blob::Tensor& t) {
  if (t.conversion != Conversion::kCopy) return false;
  for (size_t d = 0; d < t.layout.size(); d++)
    if (t.layout[d] != d) return false;
  return true;
}

void to_nnapi(const blob::Tensor& t, const OperandForm& o, const void* torch_data,
              void* nnapi_data) {
  const uint8_t* src = static_cast<const uint8_t*>(torch_data);
  uint8_t* dst = static_cast<uint8_t*>(nnapi_data);
  size_t size = nnapi_element_size(o);
  switch (t.conversion) {
    case Conversion::kCopy:
      for_each_element(t, [&](size_t n, size_t i) { std::memcpy(dst + n * size, src + i * size, size); });
      break;
    case Conversion::kInt64Int32:
      for_each_element(t, [&](size_t n, size_t i) {
        int64_t v;
        std::memcpy(&v, src + 8 * i, 8);
        int32_t w = int32_t(v);
        std::memcpy(dst + 4 * n, &w, 4);
      });
      break;
    case Conversion::kBoolInt32:
      for_each_element(t, [&](size_t n, size_t i) {
        int32_t w = src[i] != 0;
        std::memcpy(dst + 4 * n, &w, 4);
      });
      break;
    case Conversion::kQuantize:
      for_each_element(t, [&](size_t n, size_t i) {
        float x;
        std::memcpy(&x, src + 4 * i, 4);
        if (o.type == blob::kTensorQuant8AsymmSigned)
          dst[n] = uint8_t(quantize<int8_t>(x, o.scale, o.zero_point));
        else
          dst[n] = quantize<uint8_t>(x, o.scale, o.zero_point);
      });
      break;
  }
}

void from_nnapi(const blob::Tensor& t, const OperandForm& o, const void* nnapi_data,
                void* torch_data) {
  const uint8_t* src = static_cast<const uint8_t*>(nnapi_data);
  uint8_t* dst = static_cast<uint8_t*>(torch_data);
  size_t size = nnapi_element_size(o);
  switch (t.conversion) {
    case Conversion::kCopy:
      for_each_element(t, [&](size_t n, size_t i) { std::memcpy(dst + i * size, src + n * size, size); });
      break;
    case Conversion::kInt64Int32:
      for_each_element(t, [&](size_t n, size_t i) {
        int32_t v;
        std::memcpy(&v, src + 4 * n, 4);
        int64_t w = v;
        std::memcpy(dst + 8 * i, &w, 8);
      });
      break;
    case Conversion::kBoolInt32:
      for_each_element(t, [&](size_t n, size_t i) {
        int32_t v;
        std::memcpy(&v, src + 4 * n, 4);
        dst[i] = v != 0;
      });
      break;
    case Conversion::kQuantize:
      for_each_element(t, [&](size_t n, size_t i) {
        int32_t q = o.type == blob::kTensorQuant8AsymmSigned ? int32_t(int8_t(src[n]))
                                                             : int32_t(src[n]);
        float x = float(q - o.zero_point) * o.scale;
        std::memcpy(dst + 4 * i, &x, 4);
      });
      break;
  }
}

}  // namespace torch_nnapi
