// NnapiBackend (nnapi_backend.h): init builds and compiles, execute converts and runs.
#include "nnapi_backend.h"

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

#include "blob_reader.h"
#include "nnapi_api.h"
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

#define TNN_LOG(level, ...) ET_LOG(level, "NnapiBackend: " __VA_ARGS__)

// What the compiled delegate owns; destroy() deletes it.
struct Delegate {
  const NnapiApi* api = nullptr;
  std::vector<ANeuralNetworksModel*> models;
  ANeuralNetworksCompilation* compilation = nullptr;
  ANeuralNetworksBurst* burst = nullptr;
  bool single_device = false;
  blob::Options options;
  std::vector<blob::Tensor> inputs, outputs;
  std::vector<OperandForm> nnapi_inputs, nnapi_outputs;
  std::vector<std::vector<uint8_t>> staging_in, staging_out;  // per NNAPI input, output
  std::vector<int> output_direct;  // per NNAPI output: the ExecuTorch output written in place
  std::vector<std::unique_ptr<uint8_t[]>> constants;  // inline values NNAPI may reference
  std::vector<FreeableBuffer> named;                  // named data NNAPI may reference
  std::mutex mutex;  // one execution at a time (a burst runs one)

  ~Delegate() {
    if (burst && api->Burst_free) api->Burst_free(burst);
    if (compilation) api->Compilation_free(compilation);
    for (ANeuralNetworksModel* m : models)
      if (m) api->Model_free(m);
  }
};

// Logs a failed NNAPI call and says whether it failed.
bool failed(int code, const char* call) {
  if (code == ANEURALNETWORKS_NO_ERROR) return false;
  TNN_LOG(Error, "ANeuralNetworks%s failed: %s (%d)", call, result_name(code), code);
  return true;
}

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

Error missing(const char* function, int level) {
  TNN_LOG(Error, "the model needs ANeuralNetworks%s (feature level %d), which this"
          " libneuralnetworks.so lacks", function, level);
  return Error::DelegateInvalidCompatibility;
}

// Builds model `index` of the blob (its referenced models are built already).
Error build_model(Delegate& d, const blob::Blob& b, size_t index, const uint8_t* blob_data,
                  const ::executorch::runtime::NamedDataMap* named_map) {
  const NnapiApi& api = *d.api;
  const blob::Model& spec = b.models[index];
  ANeuralNetworksModel* model = nullptr;
  if (failed(api.Model_create(&model), "Model_create")) return Error::Internal;
  d.models[index] = model;
  for (size_t i = 0; i < spec.operands.size(); i++) {
    const blob::Operand& o = spec.operands[i];
    ANeuralNetworksOperandType type = {o.type, uint32_t(o.dimensions.size()),
                                       o.dimensions.empty() ? nullptr : o.dimensions.data(),
                                       o.scale, o.zero_point};
    if (failed(api.Model_addOperand(model, &type), "Model_addOperand")) return Error::Internal;
    int32_t at = int32_t(i);
    if (o.per_channel) {
      if (!api.Model_setOperandSymmPerChannelQuantParams)
        return missing("Model_setOperandSymmPerChannelQuantParams", 29);
      ANeuralNetworksSymmPerChannelQuantParams params = {
          o.channel_dim, uint32_t(o.channel_scales.size()), o.channel_scales.data()};
      if (failed(api.Model_setOperandSymmPerChannelQuantParams(model, at, &params),
                 "Model_setOperandSymmPerChannelQuantParams"))
        return Error::Internal;
    }
    int code = ANEURALNETWORKS_NO_ERROR;
    if (o.kind == blob::ValueKind::kInline) {
      // a copy: the blob's buffer is freed after init, NNAPI may keep the pointer
      std::unique_ptr<uint8_t[]> value(new (std::nothrow) uint8_t[o.length ? o.length : 1]);
      if (!value) return Error::MemoryAllocationFailed;
      std::memcpy(value.get(), blob_data + o.offset, o.length);
      code = api.Model_setOperandValue(model, at, value.get(), o.length);
      d.constants.push_back(std::move(value));
    } else if (o.kind == blob::ValueKind::kNamed) {
      if (!named_map) {
        TNN_LOG(Error, "model %zu operand %zu is in the named data map, but the program"
                " has none", index, i);
        return Error::InvalidProgram;
      }
      Result<FreeableBuffer> data = named_map->get_data(o.key.c_str());
      if (!data.ok()) {
        TNN_LOG(Error, "named data %s (model %zu operand %zu) is missing", o.key.c_str(),
                index, i);
        return Error::InvalidExternalData;
      }
      if (data->size() != o.length) {
        TNN_LOG(Error, "named data %s has %zu bytes, the blob says %llu", o.key.c_str(),
                data->size(), static_cast<unsigned long long>(o.length));
        return Error::InvalidExternalData;
      }
      code = api.Model_setOperandValue(model, at, data->data(), o.length);
      d.named.push_back(std::move(data.get()));
    } else if (o.kind == blob::ValueKind::kOmitted) {
      code = api.Model_setOperandValue(model, at, nullptr, 0);
    } else if (o.kind == blob::ValueKind::kModel) {
      if (!api.Model_setOperandValueFromModel)
        return missing("Model_setOperandValueFromModel", 30);
      code = api.Model_setOperandValueFromModel(model, at, d.models[o.model]);
    }
    if (failed(code, "Model_setOperandValue")) {
      TNN_LOG(Error, "... for model %zu operand %zu", index, i);
      return Error::Internal;
    }
  }
  for (const blob::Operation& op : spec.operations)
    if (failed(api.Model_addOperation(model, op.type, uint32_t(op.inputs.size()),
                                      op.inputs.data(), uint32_t(op.outputs.size()),
                                      op.outputs.data()),
               "Model_addOperation"))
      return Error::Internal;
  if (failed(api.Model_identifyInputsAndOutputs(model, uint32_t(spec.inputs.size()),
                                                spec.inputs.data(),
                                                uint32_t(spec.outputs.size()),
                                                spec.outputs.data()),
             "Model_identifyInputsAndOutputs"))
    return Error::Internal;
  if (spec.relax || (b.options.flags & blob::kRelax)) {
    if (!api.Model_relaxComputationFloat32toFloat16)
      return missing("Model_relaxComputationFloat32toFloat16", 28);
    if (failed(api.Model_relaxComputationFloat32toFloat16(model, true),
               "Model_relaxComputationFloat32toFloat16"))
      return Error::Internal;
  }
  if (failed(api.Model_finish(model), "Model_finish")) {
    TNN_LOG(Error, "NNAPI refused model %zu of the blob", index);
    return Error::InvalidProgram;
  }
  return Error::Ok;
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

// The blob records the model's lowest feature level (1 to 4, Android API 26 + level);
// something older than that would reject the model part way through building it, or worse,
// run an operation whose semantics changed. Refused here with one line naming both levels.
Error check_feature_level(const char* what, int64_t offered, uint32_t needed) {
  if (offered >= int64_t(26 + needed)) return Error::Ok;
  TNN_LOG(Error, "%s has NNAPI feature level %lld; the model needs %u", what,
          static_cast<long long>(offered), unsigned(26 + needed));
  return Error::DelegateInvalidCompatibility;
}

Error create_compilation(Delegate& d, const std::vector<std::string>& devices) {
  const NnapiApi& api = *d.api;
  if (devices.empty())
    return failed(api.Compilation_create(d.models[0], &d.compilation), "Compilation_create")
               ? Error::Internal
               : Error::Ok;
  if (!api.getDeviceCount || !api.getDevice || !api.Device_getName ||
      !api.Compilation_createForDevices)
    return missing("Compilation_createForDevices", 29);
  uint32_t count = 0;
  if (failed(api.getDeviceCount(&count), "_getDeviceCount")) return Error::Internal;
  std::vector<const ANeuralNetworksDevice*> chosen;
  std::string available;
  for (const std::string& wanted : devices) {
    const ANeuralNetworksDevice* found = nullptr;
    available.clear();
    for (uint32_t i = 0; i < count; i++) {
      ANeuralNetworksDevice* device = nullptr;
      const char* name = nullptr;
      if (api.getDevice(i, &device) != ANEURALNETWORKS_NO_ERROR ||
          api.Device_getName(device, &name) != ANEURALNETWORKS_NO_ERROR || !name)
        continue;
      available += (available.empty() ? "" : ", ") + std::string(name);
      if (wanted == name) found = device;
    }
    if (!found) {
      TNN_LOG(Error, "no NNAPI device is named %s (there are: %s)", wanted.c_str(),
              available.empty() ? "none" : available.c_str());
      return Error::DelegateInvalidCompatibility;
    }
    int64_t level = 0;
    if (api.Device_getFeatureLevel &&
        api.Device_getFeatureLevel(found, &level) == ANEURALNETWORKS_NO_ERROR) {
      Error error = check_feature_level(("NNAPI device " + wanted).c_str(), level,
                                        d.options.feature_level);
      if (error != Error::Ok) return error;
    }
    chosen.push_back(found);
  }
  d.single_device = chosen.size() == 1;
  return failed(api.Compilation_createForDevices(d.models[0], chosen.data(),
                                                 uint32_t(chosen.size()), &d.compilation),
                "Compilation_createForDevices")
             ? Error::Internal
             : Error::Ok;
}

Error compile(Delegate& d, const blob::Blob& b, BackendInitContext& context) {
  const NnapiApi& api = *d.api;
  const char* device_override = runtime_spec(context, "devices");
  std::vector<std::string> devices =
      device_override ? device_list(device_override) : b.options.devices;
  Error error = create_compilation(d, devices);
  if (error != Error::Ok) return error;
  if (failed(api.Compilation_setPreference(d.compilation, b.options.preference),
             "Compilation_setPreference"))
    return Error::Internal;
  if (b.options.priority) {
    if (api.Compilation_setPriority) {
      if (failed(api.Compilation_setPriority(d.compilation, b.options.priority),
                 "Compilation_setPriority"))
        return Error::Internal;
    } else {
      TNN_LOG(Info, "priority ignored: NNAPI below feature level 30");
    }
  }
  if (b.options.compile_timeout_ns) {
    if (d.single_device && api.Compilation_setTimeout) {
      if (failed(api.Compilation_setTimeout(d.compilation, b.options.compile_timeout_ns),
                 "Compilation_setTimeout"))
        return Error::Internal;
    } else {
      TNN_LOG(Info, "compile timeout ignored: NNAPI takes one for a single named device"
              " from feature level 30");
    }
  }
  if ((b.options.flags & blob::kCaching) && api.Compilation_setCaching) {
    const char* dir = runtime_spec(context, "cache_dir");
    if (!dir && !b.options.cache_dir.empty()) dir = b.options.cache_dir.c_str();
    if (!dir) dir = std::getenv("TORCH_NNAPI_CACHE_DIR");
    if (dir && dir[0]) {
      uint8_t token[blob::kTokenSize];
      std::memcpy(token, b.token, sizeof token);
      // the devices chosen at load time are part of what was compiled
      for (size_t i = 0; device_override && device_override[i]; i++)
        token[i % sizeof token] ^= uint8_t(device_override[i] * 31 + i);
      if (failed(api.Compilation_setCaching(d.compilation, dir, token),
                 "Compilation_setCaching"))
        return Error::Internal;
    }
  }
  if (failed(api.Compilation_finish(d.compilation), "Compilation_finish"))
    return Error::DelegateInvalidCompatibility;
  if ((b.options.flags & blob::kBurst) && api.Burst_create && api.Execution_burstCompute &&
      failed(api.Burst_create(d.compilation, &d.burst), "Burst_create"))
    return Error::Internal;
  return Error::Ok;
}

OperandForm form_of(const blob::Operand& o) {
  size_t count = 1;
  for (uint32_t dim : o.dimensions) count *= dim;
  return {o.type, o.scale, o.zero_point, count * blob::element_size(o.type)};
}

void prepare_io(Delegate& d, const blob::Model& main) {
  for (uint32_t i : main.inputs) d.nnapi_inputs.push_back(form_of(main.operands[i]));
  for (uint32_t i : main.outputs) d.nnapi_outputs.push_back(form_of(main.operands[i]));
  d.staging_in.resize(d.nnapi_inputs.size());
  for (const blob::Tensor& t : d.inputs)
    if (!is_direct(t)) d.staging_in[t.nnapi_index].resize(d.nnapi_inputs[t.nnapi_index].bytes);
  // an output goes straight into the ExecuTorch tensor when one tensor takes it unconverted
  std::vector<int> readers(d.nnapi_outputs.size(), 0);
  d.output_direct.assign(d.nnapi_outputs.size(), -1);
  for (size_t j = 0; j < d.outputs.size(); j++) {
    uint32_t k = d.outputs[j].nnapi_index;
    if (readers[k]++ == 0 && is_direct(d.outputs[j])) d.output_direct[k] = int(j);
  }
  d.staging_out.resize(d.nnapi_outputs.size());
  for (size_t k = 0; k < d.nnapi_outputs.size(); k++) {
    if (readers[k] > 1) d.output_direct[k] = -1;
    if (d.output_direct[k] < 0) d.staging_out[k].resize(d.nnapi_outputs[k].bytes);
  }
}

// Checks one ExecuTorch argument against the blob's mapping; logs what is wrong.
Error check_tensor(const EValue* value, const blob::Tensor& t, const char* kind, size_t index) {
  if (!value || !value->isTensor()) {
    TNN_LOG(Error, "%s %zu is not a tensor", kind, index);
    return Error::InvalidArgument;
  }
  const ::executorch::aten::Tensor& tensor = value->toTensor();
  bool same = int32_t(tensor.scalar_type()) == t.dtype &&
              size_t(tensor.dim()) == t.shape.size();
  for (size_t d = 0; same && d < t.shape.size(); d++)
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

Error run(Delegate& d, Span<EValue*> args) {
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
  if (d.options.execute_timeout_ns && d.single_device && api.Execution_setTimeout &&
      failed(api.Execution_setTimeout(execution, d.options.execute_timeout_ns),
             "Execution_setTimeout"))
    return Error::Internal;
  if (d.options.loop_timeout_ns && api.Execution_setLoopTimeout &&
      failed(api.Execution_setLoopTimeout(execution, d.options.loop_timeout_ns),
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
  blob::Blob b;
  std::string problem;
  const uint8_t* data = static_cast<const uint8_t*>(processed->data());
  if (!blob::parse(data, processed->size(), &b, &problem)) {
    TNN_LOG(Error, "invalid blob: %s", problem.c_str());
    return Error::InvalidProgram;
  }
  std::unique_ptr<Delegate> d(new (std::nothrow) Delegate());
  if (!d) return Error::MemoryAllocationFailed;
  d->api = api;
  d->options = b.options;
  // before building: an older library would stop at the first function it lacks
  Error too_old = check_feature_level("this libneuralnetworks.so", library_feature_level(*api),
                                      b.options.feature_level);
  if (too_old != Error::Ok) return too_old;
  d->models.assign(b.models.size(), nullptr);
  for (size_t i = b.models.size(); i-- > 0;) {
    Error error = build_model(*d, b, i, data, context.get_named_data_map());
    if (error != Error::Ok) return error;
  }
  Error error = compile(*d, b, context);
  if (error != Error::Ok) return error;
  d->inputs = std::move(b.inputs);
  d->outputs = std::move(b.outputs);
  prepare_io(*d, b.models[0]);
  processed->Free();  // every value NNAPI may still read was copied
  return d.release();
}

Error NnapiBackend::execute(BackendExecutionContext& context, DelegateHandle* handle,
                            Span<EValue*> args) const {
  (void)context;
  if (!handle) return Error::DelegateInvalidHandle;
  Delegate& d = *static_cast<Delegate*>(handle);
  size_t expected = d.inputs.size() + d.outputs.size();
  if (args.size() != expected) {
    TNN_LOG(Error, "got %zu arguments, the model takes %zu inputs and %zu outputs",
            args.size(), d.inputs.size(), d.outputs.size());
    return Error::InvalidArgument;
  }
  for (size_t k = 0; k < d.inputs.size(); k++) {
    Error error = check_tensor(args[k], d.inputs[k], "input", k);
    if (error != Error::Ok) return error;
  }
  for (size_t j = 0; j < d.outputs.size(); j++) {
    Error error = check_tensor(args[d.inputs.size() + j], d.outputs[j], "output", j);
    if (error != Error::Ok) return error;
  }
  std::lock_guard<std::mutex> lock(d.mutex);
  return run(d, args);
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
