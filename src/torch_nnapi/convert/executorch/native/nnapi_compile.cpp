// Builds and compiles the blob's models (nnapi_compile.h).
#include "nnapi_compile.h"

#include <cstring>
#include <new>

namespace torch_nnapi {
namespace {

using ::executorch::runtime::Error;
using ::executorch::runtime::FreeableBuffer;
using ::executorch::runtime::Result;

Error missing(const char* function, int level) {
  TNN_LOG(Error, "the model needs ANeuralNetworks%s (feature level %d), which this"
          " libneuralnetworks.so lacks", function, level);
  return Error::DelegateInvalidCompatibility;
}

// The named value `key` (fetched from the map the first time).
Result<const FreeableBuffer*> named_value(NamedValues& named, const blob::Operand& o,
                                          size_t index, size_t i) {
  auto found = named.buffers.find(o.key);
  if (found != named.buffers.end()) return &found->second;
  if (!named.map) {
    TNN_LOG(Error, "model %zu operand %zu is in the named data map, but the program"
            " has none", index, i);
    return Error::InvalidProgram;
  }
  Result<FreeableBuffer> data = named.map->get_data(o.key.c_str());
  if (!data.ok()) {
    TNN_LOG(Error, "named data %s (model %zu operand %zu) is missing", o.key.c_str(), index, i);
    return Error::InvalidExternalData;
  }
  if (data->size() != o.length) {
    TNN_LOG(Error, "named data %s has %zu bytes, the blob says %llu", o.key.c_str(),
            data->size(), static_cast<unsigned long long>(o.length));
    return Error::InvalidExternalData;
  }
  return &named.buffers.emplace(o.key, std::move(data.get())).first->second;
}

// Sets the value of operand `i` of model `index` (its referenced models are built already).
int set_value(Compiled& c, const blob::Operand& o, ANeuralNetworksModel* model, size_t index,
              size_t i, const uint8_t* blob_data, const blob::Resolved* resolved,
              NamedValues& named, Error* error) {
  const NnapiApi& api = *c.api;
  int32_t at = int32_t(i);
  if (o.kind == blob::ValueKind::kInline) {
    // a copy: the blob's buffer is freed after init, NNAPI may keep the pointer
    std::unique_ptr<uint8_t[]> value(new (std::nothrow) uint8_t[o.length ? o.length : 1]);
    if (!value) {
      *error = Error::MemoryAllocationFailed;
      return ANEURALNETWORKS_OUT_OF_MEMORY;
    }
    std::memcpy(value.get(), blob_data + o.offset, o.length);
    if (resolved && index == 0)
      for (const blob::Resolved::Value& v : resolved->values)
        if (v.operand == i) std::memcpy(value.get() + 4 * size_t(v.element), &v.value, 4);
    int code = api.Model_setOperandValue(model, at, value.get(), o.length);
    c.constants.push_back(std::move(value));
    return code;
  }
  if (o.kind == blob::ValueKind::kNamed) {
    Result<const FreeableBuffer*> data = named_value(named, o, index, i);
    if (!data.ok()) {
      *error = data.error();
      return ANEURALNETWORKS_BAD_DATA;
    }
    return api.Model_setOperandValue(model, at, data.get()->data(), o.length);
  }
  if (o.kind == blob::ValueKind::kOmitted) return api.Model_setOperandValue(model, at, nullptr, 0);
  if (o.kind == blob::ValueKind::kModel) {
    if (!api.Model_setOperandValueFromModel) {
      *error = missing("Model_setOperandValueFromModel", 30);
      return ANEURALNETWORKS_OP_FAILED;
    }
    return api.Model_setOperandValueFromModel(model, at, c.models[o.model]);
  }
  return ANEURALNETWORKS_NO_ERROR;
}

// Builds model `index` of the blob (its referenced models are built already).
Error build_model(Compiled& c, const blob::Blob& b, size_t index, const uint8_t* blob_data,
                  const blob::Resolved* resolved, NamedValues& named) {
  const NnapiApi& api = *c.api;
  const blob::Model& spec = b.models[index];
  ANeuralNetworksModel* model = nullptr;
  if (failed(api.Model_create(&model), "Model_create")) return Error::Internal;
  c.models[index] = model;
  for (size_t i = 0; i < spec.operands.size(); i++) {
    const blob::Operand& o = spec.operands[i];
    const std::vector<uint32_t>& dims =
        resolved && index == 0 ? resolved->dimensions[i] : o.dimensions;
    ANeuralNetworksOperandType type = {o.type, uint32_t(dims.size()),
                                       dims.empty() ? nullptr : dims.data(), o.scale,
                                       o.zero_point};
    if (failed(api.Model_addOperand(model, &type), "Model_addOperand")) return Error::Internal;
    if (o.per_channel) {
      if (!api.Model_setOperandSymmPerChannelQuantParams)
        return missing("Model_setOperandSymmPerChannelQuantParams", 29);
      ANeuralNetworksSymmPerChannelQuantParams params = {
          o.channel_dim, uint32_t(o.channel_scales.size()), o.channel_scales.data()};
      if (failed(api.Model_setOperandSymmPerChannelQuantParams(model, int32_t(i), &params),
                 "Model_setOperandSymmPerChannelQuantParams"))
        return Error::Internal;
    }
    Error error = Error::Ok;
    int code = set_value(c, o, model, index, i, blob_data, resolved, named, &error);
    if (error != Error::Ok) return error;
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

Error create_compilation(Compiled& d, const LoadSettings& settings) {
  const NnapiApi& api = *d.api;
  const std::vector<std::string>& devices = settings.devices;
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
                                        settings.options.feature_level);
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

// The compilation cache token: the blob's, changed by the devices chosen at load time and
// by the input sizes (each set of sizes is another model).
void cache_token(const LoadSettings& settings, const blob::Sizes& sizes,
                 uint8_t (&token)[blob::kTokenSize]) {
  std::memcpy(token, settings.token, sizeof token);
  const std::string& devices = settings.device_override;
  for (size_t i = 0; i < devices.size(); i++)
    token[i % sizeof token] ^= uint8_t(devices[i] * 31 + i);
  size_t at = 0;
  for (const std::vector<int64_t>& shape : sizes)
    for (int64_t n : shape)
      for (int byte = 0; byte < 4; byte++, at++)
        token[at % sizeof token] ^= uint8_t((uint64_t(n) >> (8 * byte)) * 131 + at);
}

Error compile(Compiled& d, const LoadSettings& settings, bool dynamic) {
  const NnapiApi& api = *d.api;
  const blob::Options& options = settings.options;
  Error error = create_compilation(d, settings);
  if (error != Error::Ok) return error;
  if (failed(api.Compilation_setPreference(d.compilation, options.preference),
             "Compilation_setPreference"))
    return Error::Internal;
  if (options.priority) {
    if (api.Compilation_setPriority) {
      if (failed(api.Compilation_setPriority(d.compilation, options.priority),
                 "Compilation_setPriority"))
        return Error::Internal;
    } else {
      TNN_LOG(Info, "priority ignored: NNAPI below feature level 30");
    }
  }
  if (options.compile_timeout_ns) {
    if (d.single_device && api.Compilation_setTimeout) {
      if (failed(api.Compilation_setTimeout(d.compilation, options.compile_timeout_ns),
                 "Compilation_setTimeout"))
        return Error::Internal;
    } else {
      TNN_LOG(Info, "compile timeout ignored: NNAPI takes one for a single named device"
              " from feature level 30");
    }
  }
  if ((options.flags & blob::kCaching) && api.Compilation_setCaching &&
      !settings.cache_dir.empty()) {
    uint8_t token[blob::kTokenSize];
    cache_token(settings, dynamic ? d.input_sizes : blob::Sizes(), token);
    if (failed(api.Compilation_setCaching(d.compilation, settings.cache_dir.c_str(), token),
               "Compilation_setCaching"))
      return Error::Internal;
  }
  if (failed(api.Compilation_finish(d.compilation), "Compilation_finish"))
    return Error::DelegateInvalidCompatibility;
  if ((options.flags & blob::kBurst) && api.Burst_create && api.Execution_burstCompute &&
      failed(api.Burst_create(d.compilation, &d.burst), "Burst_create"))
    return Error::Internal;
  return Error::Ok;
}

size_t bytes_of(int32_t type, const std::vector<uint32_t>& dims) {
  size_t count = 1;
  for (uint32_t dim : dims) count *= dim;
  return count * blob::element_size(type);
}

// The mapping's tensors at these sizes: inputs as given, outputs as resolved.
void size_tensors(Compiled& c, const blob::Blob& b, const blob::Resolved* resolved) {
  c.inputs = b.inputs;
  c.outputs = b.outputs;
  for (size_t k = 0; resolved && k < c.inputs.size(); k++) c.inputs[k].shape = c.input_sizes[k];
  for (size_t j = 0; resolved && j < c.outputs.size(); j++)
    c.outputs[j].shape = resolved->output_shapes[j];
  for (std::vector<blob::Tensor>* side : {&c.inputs, &c.outputs})
    for (blob::Tensor& t : *side) {
      size_t elements = 1;
      for (int64_t n : t.shape) elements *= size_t(n);
      t.elements = elements;
    }
}

void prepare_io(Compiled& d, const blob::Model& main, const blob::Resolved* resolved) {
  for (int side = 0; side < 2; side++)
    for (uint32_t i : side ? main.outputs : main.inputs) {
      const blob::Operand& o = main.operands[i];
      OperandForm form = {o.type, o.scale, o.zero_point,
                          bytes_of(o.type, resolved ? resolved->dimensions[i] : o.dimensions)};
      (side ? d.nnapi_outputs : d.nnapi_inputs).push_back(form);
    }
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

}  // namespace

Compiled::~Compiled() {
  if (burst && api->Burst_free) api->Burst_free(burst);
  if (compilation) api->Compilation_free(compilation);
  for (ANeuralNetworksModel* m : models)
    if (m) api->Model_free(m);
}

bool failed(int code, const char* call) {
  if (code == ANEURALNETWORKS_NO_ERROR) return false;
  TNN_LOG(Error, "ANeuralNetworks%s failed: %s (%d)", call, result_name(code), code);
  return true;
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

Error compile_blob(const NnapiApi& api, const blob::Blob& b, const uint8_t* blob_data,
                   const blob::Resolved* resolved, const LoadSettings& settings,
                   NamedValues& named, Compiled* out) {
  out->api = &api;
  out->models.assign(b.models.size(), nullptr);
  for (size_t i = b.models.size(); i-- > 0;) {
    Error error = build_model(*out, b, i, blob_data, resolved, named);
    if (error != Error::Ok) return error;
  }
  Error error = compile(*out, settings, resolved != nullptr);
  if (error != Error::Ok) return error;
  size_tensors(*out, b, resolved);
  prepare_io(*out, b.models[0], resolved);
  return Error::Ok;
}

}  // namespace torch_nnapi
