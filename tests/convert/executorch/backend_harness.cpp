// Calls the NnapiBackend registered with ExecuTorch directly, as the runtime would, with
// the arguments the Python runtime never lets through (it checks inputs itself first):
//   backend_harness BACKEND.so BLOB [LIBNEURALNETWORKS.so]
// BLOB is a blob whose model takes one float32 [1, 3, 16, 16] and returns one float32
// [1, 5]. Prints one "case: result" line per call; the test judges them.
#include <dlfcn.h>

#include <cstdio>
#include <fstream>
#include <iterator>
#include <vector>

#include <executorch/runtime/backend/interface.h>
#include <executorch/runtime/core/evalue.h>
#include <executorch/runtime/platform/runtime.h>

namespace rt = ::executorch::runtime;
using ::executorch::aten::ScalarType;
using ::executorch::aten::Tensor;
using ::executorch::aten::TensorImpl;

namespace {

struct Owned {  // a contiguous tensor and the memory behind it
  std::vector<TensorImpl::SizesType> sizes;
  std::vector<TensorImpl::DimOrderType> order;
  std::vector<TensorImpl::StridesType> strides;
  std::vector<uint8_t> data;
  TensorImpl impl;
  Owned(ScalarType type, std::vector<TensorImpl::SizesType> shape, size_t element)
      : sizes(std::move(shape)), order(ordered(sizes.size())), strides(contiguous(sizes)),
        data(element * count(sizes)),
        impl(type, ssize_t(sizes.size()), sizes.data(), data.data(), order.data(),
             strides.data()) {}
  static std::vector<TensorImpl::DimOrderType> ordered(size_t rank) {
    std::vector<TensorImpl::DimOrderType> o(rank);
    for (size_t d = 0; d < rank; d++) o[d] = TensorImpl::DimOrderType(d);
    return o;
  }
  static std::vector<TensorImpl::StridesType> contiguous(
      const std::vector<TensorImpl::SizesType>& s) {
    std::vector<TensorImpl::StridesType> st(s.size(), 1);
    for (size_t d = s.size(); d-- > 1;) st[d - 1] = st[d] * s[d];
    return st;
  }
  static size_t count(const std::vector<TensorImpl::SizesType>& s) {
    size_t n = 1;
    for (auto d : s) n *= size_t(d);
    return n;
  }
};

void report(const char* what, rt::Error error) {
  std::printf("%s: 0x%x\n", what, unsigned(error));
  std::fflush(stdout);
}

}  // namespace

int main(int argc, char** argv) {
  if (argc < 3) return 2;
  rt::runtime_init();
  if (argc > 3 && !dlopen(argv[3], RTLD_NOW | RTLD_GLOBAL)) return 3;
  if (!dlopen(argv[1], RTLD_NOW | RTLD_GLOBAL)) {
    std::printf("cannot load %s: %s\n", argv[1], dlerror());
    return 4;
  }
  rt::BackendInterface* backend = rt::get_backend_class("NnapiBackend");
  if (!backend) return 5;
  std::printf("available: %d\n", int(backend->is_available()));
  std::ifstream file(argv[2], std::ios::binary);
  std::vector<uint8_t> blob((std::istreambuf_iterator<char>(file)),
                            std::istreambuf_iterator<char>());

  static uint8_t pool[1 << 16];
  rt::MemoryAllocator allocator(sizeof pool, pool);
  rt::BackendInitContext init_context(&allocator);
  // a truncated blob, then the blob itself
  std::vector<uint8_t> half(blob.begin(), blob.begin() + long(blob.size() / 2));
  rt::FreeableBuffer truncated(half.data(), half.size(), nullptr);
  auto bad = backend->init(init_context, &truncated, {});
  report("init truncated", bad.error());
  rt::FreeableBuffer processed(blob.data(), blob.size(), nullptr);
  auto handle = backend->init(init_context, &processed, {});
  report("init", handle.error());
  if (!handle.ok()) return 0;

  Owned x(ScalarType::Float, {1, 3, 16, 16}, 4), y(ScalarType::Float, {1, 5}, 4);
  Owned x_long(ScalarType::Long, {1, 3, 16, 16}, 8), x_small(ScalarType::Float, {1, 3, 8, 8}, 4);
  Owned x_flat(ScalarType::Float, {768}, 4), y_wrong(ScalarType::Float, {1, 6}, 4);
  rt::EValue ex(Tensor(&x.impl)), ey(Tensor(&y.impl)), elong(Tensor(&x_long.impl)),
      esmall(Tensor(&x_small.impl)), eflat(Tensor(&x_flat.impl)),
      ey_wrong(Tensor(&y_wrong.impl)), eint(int64_t(3));
  rt::BackendExecutionContext context;
  auto run = [&](const char* what, std::vector<rt::EValue*> args) {
    report(what, backend->execute(context, handle.get(),
                                  rt::Span<rt::EValue*>(args.data(), args.size())));
  };
  run("execute", {&ex, &ey});
  run("execute again", {&ex, &ey});
  run("too few arguments", {&ex});
  run("too many arguments", {&ex, &ey, &ey});
  run("int64 input", {&elong, &ey});
  run("smaller input", {&esmall, &ey});
  run("flat input", {&eflat, &ey});
  run("wrong output", {&ex, &ey_wrong});
  run("integer argument", {&eint, &ey});
  run("execute after errors", {&ex, &ey});
  backend->destroy(handle.get());
  std::printf("destroyed\n");
  return 0;
}
