// Loads the NNAPI C API once (nnapi_api.h).
#include "nnapi_api.h"

#include <dlfcn.h>

#include <mutex>

namespace torch_nnapi {
namespace {

struct Loaded {
  NnapiApi api = {};
  bool ok = false;
  std::string why;
};

template <typename F>
bool bind(void* library, const char* name, F* slot, bool required, std::string* why) {
  *slot = reinterpret_cast<F>(dlsym(library, name));
  if (!*slot && required && why->empty()) *why = std::string("libneuralnetworks.so lacks ") + name;
  return *slot != nullptr || !required;
}

Loaded load() {
  Loaded loaded;
  void* library = dlopen("libneuralnetworks.so", RTLD_NOW | RTLD_LOCAL);
  if (!library) {
    const char* error = dlerror();
    loaded.why = std::string("cannot load libneuralnetworks.so: ") + (error ? error : "?");
    return loaded;
  }
  NnapiApi& a = loaded.api;
  std::string* why = &loaded.why;
  bool ok = true;
#define TNN_REQUIRED(name) ok &= bind(library, "ANeuralNetworks" #name, &a.name, true, why)
#define TNN_OPTIONAL(name) bind(library, "ANeuralNetworks" #name, &a.name, false, why)
  TNN_REQUIRED(Model_create);
  TNN_REQUIRED(Model_free);
  TNN_REQUIRED(Model_finish);
  TNN_REQUIRED(Model_addOperand);
  TNN_REQUIRED(Model_setOperandValue);
  TNN_REQUIRED(Model_addOperation);
  TNN_REQUIRED(Model_identifyInputsAndOutputs);
  TNN_REQUIRED(Compilation_create);
  TNN_REQUIRED(Compilation_free);
  TNN_REQUIRED(Compilation_setPreference);
  TNN_REQUIRED(Compilation_finish);
  TNN_REQUIRED(Execution_create);
  TNN_REQUIRED(Execution_free);
  TNN_REQUIRED(Execution_setInput);
  TNN_REQUIRED(Execution_setOutput);
  TNN_REQUIRED(Execution_startCompute);
  TNN_REQUIRED(Event_wait);
  TNN_REQUIRED(Event_free);
  TNN_OPTIONAL(Model_relaxComputationFloat32toFloat16);
  TNN_OPTIONAL(Model_setOperandSymmPerChannelQuantParams);
  TNN_OPTIONAL(Device_getName);
  TNN_OPTIONAL(Device_getFeatureLevel);
  TNN_OPTIONAL(Compilation_createForDevices);
  TNN_OPTIONAL(Compilation_setCaching);
  TNN_OPTIONAL(Execution_compute);
  TNN_OPTIONAL(Burst_create);
  TNN_OPTIONAL(Burst_free);
  TNN_OPTIONAL(Execution_burstCompute);
  TNN_OPTIONAL(Model_setOperandValueFromModel);
  TNN_OPTIONAL(Compilation_setPriority);
  TNN_OPTIONAL(Compilation_setTimeout);
  TNN_OPTIONAL(Execution_setTimeout);
  TNN_OPTIONAL(Execution_setLoopTimeout);
#undef TNN_REQUIRED
#undef TNN_OPTIONAL
  // the two device functions lack the "ANeuralNetworks" + "Type_" shape of the others
  bind(library, "ANeuralNetworks_getDeviceCount", &a.getDeviceCount, false, why);
  bind(library, "ANeuralNetworks_getDevice", &a.getDevice, false, why);
  loaded.ok = ok;
  return loaded;  // the library stays loaded for the life of the process
}

}  // namespace

const NnapiApi* nnapi(std::string* why) {
  static Loaded loaded = load();
  if (!loaded.ok) {
    if (why) *why = loaded.why;
    return nullptr;
  }
  return &loaded.api;
}

int64_t library_feature_level(const NnapiApi& api) {
  if (api.Model_setOperandValueFromModel && api.Execution_setLoopTimeout) return 30;
  if (api.Model_setOperandSymmPerChannelQuantParams && api.Compilation_createForDevices)
    return 29;
  if (api.Model_relaxComputationFloat32toFloat16) return 28;
  return 27;
}

const char* result_name(int code) {
  // By number: an NDK header below API level 30 hides the newer codes' names.
  static const char* const names[] = {
      "NO_ERROR", "OUT_OF_MEMORY", "INCOMPLETE", "UNEXPECTED_NULL", "BAD_DATA", "OP_FAILED",
      "BAD_STATE", "UNMAPPABLE", "OUTPUT_INSUFFICIENT_SIZE", "UNAVAILABLE_DEVICE",
      "MISSED_DEADLINE_TRANSIENT", "MISSED_DEADLINE_PERSISTENT", "RESOURCE_EXHAUSTED_TRANSIENT",
      "RESOURCE_EXHAUSTED_PERSISTENT", "DEAD_OBJECT"};
  if (code < 0 || size_t(code) >= sizeof names / sizeof names[0])
    return "an unknown result code";
  return names[code];
}

}  // namespace torch_nnapi
