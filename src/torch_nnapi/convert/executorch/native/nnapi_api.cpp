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

const char* result_name(int code) {
  switch (code) {
    case ANEURALNETWORKS_NO_ERROR: return "NO_ERROR";
    case ANEURALNETWORKS_OUT_OF_MEMORY: return "OUT_OF_MEMORY";
    case ANEURALNETWORKS_INCOMPLETE: return "INCOMPLETE";
    case ANEURALNETWORKS_UNEXPECTED_NULL: return "UNEXPECTED_NULL";
    case ANEURALNETWORKS_BAD_DATA: return "BAD_DATA";
    case ANEURALNETWORKS_OP_FAILED: return "OP_FAILED";
    case ANEURALNETWORKS_BAD_STATE: return "BAD_STATE";
    case ANEURALNETWORKS_UNMAPPABLE: return "UNMAPPABLE";
    case ANEURALNETWORKS_OUTPUT_INSUFFICIENT_SIZE: return "OUTPUT_INSUFFICIENT_SIZE";
    case ANEURALNETWORKS_UNAVAILABLE_DEVICE: return "UNAVAILABLE_DEVICE";
    case ANEURALNETWORKS_MISSED_DEADLINE_TRANSIENT: return "MISSED_DEADLINE_TRANSIENT";
    case ANEURALNETWORKS_MISSED_DEADLINE_PERSISTENT: return "MISSED_DEADLINE_PERSISTENT";
    case ANEURALNETWORKS_RESOURCE_EXHAUSTED_TRANSIENT: return "RESOURCE_EXHAUSTED_TRANSIENT";
    case ANEURALNETWORKS_RESOURCE_EXHAUSTED_PERSISTENT: return "RESOURCE_EXHAUSTED_PERSISTENT";
    case ANEURALNETWORKS_DEAD_OBJECT: return "DEAD_OBJECT";
    default: return "an unknown result code";
  }
}

}  // namespace torch_nnapi
