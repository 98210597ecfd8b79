// NnapiBackend (nnapi_backend.h): init reads the blob and compiles it (nnapi_compile.h);
// execute checks the inputs, takes the compilation for their sizes (compiled on first use
// when the blob has dynamic sizes, kept in a small cache), converts and runs.
#include "nnapi_backend.h"

#include <algorithm>
#include <cstdlib>
#include <cstring>
#include <memory>
#include <mutex>
#include <new>
#include <string>
#include <vector>

#include <executorch/runtime/core/error.h>
#include <executorch/runtime/core/evalue.h>
#include <executorch/runtime/platform/log.h>

#include <executorch/runtime/core/exec_aten/util/tensor_util.h>

#include "blob_reader.h"
#include "nnapi_api.h"
#include "nnapi_compile.h"
#include "shape_programs.h"
#include "tensor_convert.h"

namespace torch_nnapi {
namespace {

using ::executorch::runtime::ArrayRef;
using ::executorch::runtime::BackendExecutionContext;
using ::executorch::runtime::BackendInitContext;
using ::executorch::runtime::CompileSpec;
using ::executorch::runtime::DelegateHandle;
using ::executorch::runtime::Error;
using ::executorch::runtime::EValue;
using ::executorch::runtime::FreeableBuffer;
using ::executorch::runtime::Result;
using ::executorch::runtime::Span;

// At most this many compilations per delegate with dynamic sizes (the least recently used
// goes first): each holds an NNAPI compilation and its staging buffers.
constexpr size_t kCacheSize = 8;

// What the delegate owns; destroy() deletes it.
struct Delegate {
  const NnapiApi* api = nullptr;
  LoadSettings settings;
  NamedValues named;
  blob::Blob blob;             // kept: the bounds, size programs and models to rebuild
  std::vector<uint8_t> bytes;  // the blob's bytes, kept when it has dynamic sizes
  std::vector<std::unique_ptr<Compiled>> cache;  // most recently used first
  size_t compilations = 0;
  std::mutex mutex;  // one execution at a time (a burst runs one)

  bool dynamic() const { return !blob.bounds.empty(); }
};

const char* dtype_name(int32_t s) {
  switch (s) {
    case blob::kByte: return "uint8";
    case blob::kChar: return "int8";
    case blob::kShort: return "int16";
    case blob::kInt: return "int32";
    case blob::kLong: return "int64";
    case blob::kHalf: return "float16";
    case blob::kFloat: return "float32";
    case blob::kDouble: return "float64";
    case blob::kBool: return "bool";
    default: return "another dtype";
  }
}

template <typename Sizes>
std::string shape_text(const Sizes& sizes, size_t rank) {
  std::string s = "[";
  for (size_t d = 0; d < rank; d++) s += (d ? ", " : "") + std::to_string(int64_t(sizes[d]));
  return s + "]";
}

// The string runtime spec `key` (a load-time BackendOption), or null.
const char* runtime_spec(BackendInitContext& context, const char* key) {
  Result<const char*> value = context.get_runtime_spec<const char*>(key);
  return value.ok() && value.get()[0] ? value.get() : nullptr;
}

// Splits "a,b" into names.
std::vector<std::string> device_list(const char* text) {
  std::vector<std::string> names;
  std::string current;
  for (const char* p = text; *p; p++) {
    if (*p == ',') {
      if (!current.empty()) names.push_back(current);
      current.clear();
    } else {
      current += *p;
    }
  }
  if (!current.empty()) names.push_back(current);
  return names;
}

// Checks one ExecuTorch argument against the blob's mapping; logs what is wrong.
// With `sizes` false only the dtype and rank are checked (dynamic sizes: resolve() checks
// the inputs' sizes, the outputs are resized).
Error check_tensor(const EValue* value, const blob::Tensor& t, const char* kind, size_t index,
                   bool sizes) {
  if (!value || !value->isTensor()) {
    TNN_LOG(Error, "%s %zu is not a tensor", kind, index);
    return Error::InvalidArgument;
  }
  const ::executorch::aten::Tensor& tensor = value->toTensor();
  bool same = int32_t(tensor.scalar_type()) == t.dtype &&
              size_t(tensor.dim()) == t.shape.size();
  for (size_t d = 0; sizes && same && d < t.shape.size(); d++)
    same = tensor.size(ssize_t(d)) == t.shape[d];
  if (!same) {
    TNN_LOG(Error, "%s %zu: expected %s %s, got %s %s", kind, index, dtype_name(t.dtype),
            shape_text(t.shape, t.shape.size()).c_str(),
            dtype_name(int32_t(tensor.scalar_type())),
            shape_text(tensor.sizes(), size_t(tensor.dim())).c_str());
    return Error::InvalidArgument;
  }
  auto order = tensor.dim_order();
  for (size_t d = 0; d < order.size(); d++)
    if (order[d] != d) {
      TNN_LOG(Error, "%s %zu is not contiguous (dim order), which the backend needs", kind,
              index);
      return Error::InvalidArgument;
    }
  return Error::Ok;
}

Error run(Compiled& d, const blob::Options& options, Span<EValue*> args) {
  const NnapiApi& api = *d.api;
  ANeuralNetworksExecution* execution = nullptr;
  if (failed(api.Execution_create(d.compilation, &execution), "Execution_create"))
    return Error::Internal;
  std::unique_ptr<ANeuralNetworksExecution, void (*)(ANeuralNetworksExecution*)> owned(
      execution, api.Execution_free);
  for (size_t k = 0; k < d.inputs.size(); k++) {
    const blob::Tensor& t = d.inputs[k];
    const OperandForm& form = d.nnapi_inputs[t.nnapi_index];
    const void* data = args[k]->toTensor().const_data_ptr();
    if (!is_direct(t)) {
      to_nnapi(t, form, data, d.staging_in[t.nnapi_index].data());
      data = d.staging_in[t.nnapi_index].data();
    }
    if (failed(api.Execution_setInput(execution, int32_t(t.nnapi_index), nullptr, data,
                                      form.bytes),
               "Execution_setInput"))
      return Error::Internal;
  }
  size_t first_output = d.inputs.size();
  for (size_t k = 0; k < d.nnapi_outputs.size(); k++) {
    int direct = d.output_direct[k];
    void* data = direct >= 0 ? args[first_output + size_t(direct)]->toTensor().mutable_data_ptr()
                             : d.staging_out[k].data();
    if (failed(api.Execution_setOutput(execution, int32_t(k), nullptr, data,
                                       d.nnapi_outputs[k].bytes),
               "Execution_setOutput"))
      return Error::Internal;
  }
  if (options.execute_timeout_ns && d.single_device && api.Execution_setTimeout &&
      failed(api.Execution_setTimeout(execution, options.execute_timeout_ns),
             "Execution_setTimeout"))
    return Error::Internal;
  if (options.loop_timeout_ns && api.Execution_setLoopTimeout &&
      failed(api.Execution_setLoopTimeout(execution, options.loop_timeout_ns),
             "Execution_setLoopTimeout"))
    return Error::Internal;
  if (d.burst) {
    if (failed(api.Execution_burstCompute(execution, d.burst), "Execution_burstCompute"))
      return Error::Internal;
  } else if (api.Execution_compute) {
    if (failed(api.Execution_compute(execution), "Execution_compute")) return Error::Internal;
  } else {
    ANeuralNetworksEvent* event = nullptr;
    if (failed(api.Execution_startCompute(execution, &event), "Execution_startCompute"))
      return Error::Internal;
    int code = api.Event_wait(event);
    api.Event_free(event);
    if (failed(code, "Event_wait")) return Error::Internal;
  }
  for (size_t j = 0; j < d.outputs.size(); j++) {
    const blob::Tensor& t = d.outputs[j];
    if (d.output_direct[t.nnapi_index] == int(j)) continue;
    from_nnapi(t, d.nnapi_outputs[t.nnapi_index], d.staging_out[t.nnapi_index].data(),
               args[first_output + j]->toTensor().mutable_data_ptr());
  }
  return Error::Ok;
}

// The compilation for these input sizes: the cache's, or a new one (logged, counted).
Result<Compiled*> compiled_for(Delegate& d, const blob::Sizes& sizes) {
  for (size_t i = 0; i < d.cache.size(); i++)
    if (d.cache[i]->input_sizes == sizes) {
      std::rotate(d.cache.begin(), d.cache.begin() + ssize_t(i), d.cache.begin() + ssize_t(i) + 1);
      return d.cache.front().get();
    }
  blob::Resolved resolved;
  std::string problem;
  if (!blob::resolve(d.blob, sizes, &resolved, &problem)) {
    TNN_LOG(Error, "%s", problem.c_str());
    return Error::InvalidArgument;
  }
  std::unique_ptr<Compiled> c(new (std::nothrow) Compiled());
  if (!c) return Error::MemoryAllocationFailed;
  c->input_sizes = sizes;
  Error error = compile_blob(*d.api, d.blob, d.bytes.data(), &resolved, d.settings, d.named,
                             c.get());
  if (error != Error::Ok) return error;
  d.compilations++;
  std::string text;
  for (const std::vector<int64_t>& s : sizes) text += shape_text(s, s.size());
  TNN_LOG(Info, "compilation %zu, for input sizes %s (%zu kept)", d.compilations,
          text.c_str(), std::min(d.cache.size() + 1, kCacheSize));
  if (d.cache.size() == kCacheSize) d.cache.pop_back();
  d.cache.insert(d.cache.begin(), std::move(c));
  return d.cache.front().get();
}

// Dynamic sizes: every output resized to what this compilation computes.
Error resize_outputs(const Compiled& c, EValue* const* outputs) {
  for (size_t j = 0; j < c.outputs.size(); j++) {
    const std::vector<int64_t>& shape = c.outputs[j].shape;
    Error error = ::executorch::runtime::resize_tensor(
        outputs[j]->toTensor(), ArrayRef<int64_t>(shape.data(), shape.size()));
    if (error != Error::Ok) {
      TNN_LOG(Error, "output %zu cannot be resized to %s", j,
              shape_text(shape, shape.size()).c_str());
      return error;
    }
  }
  return Error::Ok;
}

}  // namespace

bool NnapiBackend::is_available() const {
  std::string why;
  if (nnapi(&why)) return true;
  static std::once_flag said;  // ExecuTorch asks for every delegate: say why once
  std::call_once(said, [&] { TNN_LOG(Error, "not available: %s", why.c_str()); });
  return false;
}

Result<DelegateHandle*> NnapiBackend::init(BackendInitContext& context,
                                           FreeableBuffer* processed,
                                           ArrayRef<CompileSpec> compile_specs) const {
  (void)compile_specs;  // preprocess wrote every option into the blob
  std::string why;
  const NnapiApi* api = nnapi(&why);
  if (!api) {
    TNN_LOG(Error, "%s", why.c_str());
    return Error::NotSupported;
  }
  std::unique_ptr<Delegate> d(new (std::nothrow) Delegate());
  if (!d) return Error::MemoryAllocationFailed;
  blob::Blob& b = d->blob;
  std::string problem;
  const uint8_t* data = static_cast<const uint8_t*>(processed->data());
  if (!blob::parse(data, processed->size(), &b, &problem)) {
    TNN_LOG(Error, "invalid blob: %s", problem.c_str());
    return Error::InvalidProgram;
  }
  d->api = api;
  // before building: an older library would stop at the first function it lacks
  Error too_old = check_feature_level("this libneuralnetworks.so", library_feature_level(*api),
                                      b.options.feature_level);
  if (too_old != Error::Ok) return too_old;
  LoadSettings& s = d->settings;
  s.options = b.options;
  const char* device_override = runtime_spec(context, "devices");
  s.devices = device_override ? device_list(device_override) : b.options.devices;
  s.device_override = device_override ? device_override : "";
  const char* dir = runtime_spec(context, "cache_dir");
  if (!dir && !b.options.cache_dir.empty()) dir = b.options.cache_dir.c_str();
  if (!dir) dir = std::getenv("TORCH_NNAPI_CACHE_DIR");
  s.cache_dir = dir ? dir : "";
  std::memcpy(s.token, b.token, sizeof s.token);
  d->named.map = context.get_named_data_map();
  std::unique_ptr<Compiled> first(new (std::nothrow) Compiled());
  if (!first) return Error::MemoryAllocationFailed;
  for (const blob::Tensor& t : b.inputs) first->input_sizes.push_back(t.shape);
  Error error = compile_blob(*api, b, data, nullptr, s, d->named, first.get());
  if (error != Error::Ok) return error;
  d->cache.push_back(std::move(first));
  d->compilations = 1;
  d->named.map = nullptr;  // every named value is fetched; the map is not ours to keep
  if (d->dynamic()) {  // rebuilt for other sizes: the inline values stay readable
    d->bytes.assign(data, data + processed->size());
  } else {
    b.models.clear();
  }
  processed->Free();  // every value NNAPI may still read was copied
  return d.release();
}

Error NnapiBackend::execute(BackendExecutionContext& context, DelegateHandle* handle,
                            Span<EValue*> args) const {
  (void)context;
  if (!handle) return Error::DelegateInvalidHandle;
  Delegate& d = *static_cast<Delegate*>(handle);
  size_t expected = d.blob.inputs.size() + d.blob.outputs.size();
  if (args.size() != expected) {
    TNN_LOG(Error, "got %zu arguments, the model takes %zu inputs and %zu outputs",
            args.size(), d.blob.inputs.size(), d.blob.outputs.size());
    return Error::InvalidArgument;
  }
  const std::vector<blob::Tensor>& inputs = d.blob.inputs;
  const std::vector<blob::Tensor>& outputs = d.blob.outputs;
  for (size_t k = 0; k < inputs.size(); k++) {
    Error error = check_tensor(args[k], inputs[k], "input", k, !d.dynamic());
    if (error != Error::Ok) return error;
  }
  for (size_t j = 0; j < outputs.size(); j++) {
    Error error = check_tensor(args[inputs.size() + j], outputs[j], "output", j, !d.dynamic());
    if (error != Error::Ok) return error;
  }
  std::lock_guard<std::mutex> lock(d.mutex);
  Compiled* c = d.cache.front().get();
  if (d.dynamic()) {
    blob::Sizes sizes;
    for (size_t k = 0; k < inputs.size(); k++) {
      auto given = args[k]->toTensor().sizes();
      sizes.emplace_back(given.begin(), given.end());
    }
    Result<Compiled*> found = compiled_for(d, sizes);
    if (!found.ok()) return found.error();
    c = found.get();
    Error error = resize_outputs(*c, args.data() + inputs.size());
    if (error != Error::Ok) return error;
  }
  return run(*c, d.settings.options, args);
}

void NnapiBackend::destroy(DelegateHandle* handle) const {
  delete static_cast<Delegate*>(handle);
}

namespace {
NnapiBackend backend_instance;
const ::executorch::runtime::Backend kBackend{"NnapiBackend", &backend_instance};
const Error registered = ::executorch::runtime::register_backend(kBackend);
}  // namespace

}  // namespace torch_nnapi

// For load_backend(): whether the registration worked (ExecuTorch's Error code, 0 = Ok).
extern "C" __attribute__((visibility("default"))) int torch_nnapi_executorch_registered() {
  return int(torch_nnapi::registered);
}
