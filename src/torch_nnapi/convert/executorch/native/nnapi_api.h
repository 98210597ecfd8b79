// The NNAPI C API, resolved at run time with dlopen("libneuralnetworks.so"): on Android the
// system's, on Linux torch-nnapi's (torch_nnapi.executorch.load_backend() loads it first,
// with RTLD_GLOBAL, so the name resolves to it). Pointer types are spelled out here rather
// than taken from the declarations, which an NDK header hides below their API level.
#pragma once

#if defined(__ANDROID__)
#include <android/NeuralNetworks.h>
#else
#include "NeuralNetworks.h"
#endif

#include <cstddef>
#include <cstdint>
#include <string>

namespace torch_nnapi {

struct NnapiApi {
  // Feature level 27 (Android 8.1): what any model needs. Missing one: not available.
  int (*Model_create)(ANeuralNetworksModel**);
  void (*Model_free)(ANeuralNetworksModel*);
  int (*Model_finish)(ANeuralNetworksModel*);
  int (*Model_addOperand)(ANeuralNetworksModel*, const ANeuralNetworksOperandType*);
  int (*Model_setOperandValue)(ANeuralNetworksModel*, int32_t, const void*, size_t);
  int (*Model_addOperation)(ANeuralNetworksModel*, int32_t, uint32_t, const uint32_t*,
                            uint32_t, const uint32_t*);
  int (*Model_identifyInputsAndOutputs)(ANeuralNetworksModel*, uint32_t, const uint32_t*,
                                        uint32_t, const uint32_t*);
  int (*Compilation_create)(ANeuralNetworksModel*, ANeuralNetworksCompilation**);
  void (*Compilation_free)(ANeuralNetworksCompilation*);
  int (*Compilation_setPreference)(ANeuralNetworksCompilation*, int32_t);
  int (*Compilation_finish)(ANeuralNetworksCompilation*);
  int (*Execution_create)(ANeuralNetworksCompilation*, ANeuralNetworksExecution**);
  void (*Execution_free)(ANeuralNetworksExecution*);
  int (*Execution_setInput)(ANeuralNetworksExecution*, int32_t,
                            const ANeuralNetworksOperandType*, const void*, size_t);
  int (*Execution_setOutput)(ANeuralNetworksExecution*, int32_t,
                             const ANeuralNetworksOperandType*, void*, size_t);
  int (*Execution_startCompute)(ANeuralNetworksExecution*, ANeuralNetworksEvent**);
  int (*Event_wait)(ANeuralNetworksEvent*);
  void (*Event_free)(ANeuralNetworksEvent*);

  // Feature level 28.
  int (*Model_relaxComputationFloat32toFloat16)(ANeuralNetworksModel*, bool);
  // Feature level 29 (Android 10).
  int (*Model_setOperandSymmPerChannelQuantParams)(
      ANeuralNetworksModel*, int32_t, const ANeuralNetworksSymmPerChannelQuantParams*);
  int (*getDeviceCount)(uint32_t*);
  int (*getDevice)(uint32_t, ANeuralNetworksDevice**);
  int (*Device_getName)(const ANeuralNetworksDevice*, const char**);
  int (*Device_getFeatureLevel)(const ANeuralNetworksDevice*, int64_t*);
  int (*Compilation_createForDevices)(ANeuralNetworksModel*,
                                      const ANeuralNetworksDevice* const*, uint32_t,
                                      ANeuralNetworksCompilation**);
  int (*Compilation_setCaching)(ANeuralNetworksCompilation*, const char*, const uint8_t*);
  int (*Execution_compute)(ANeuralNetworksExecution*);
  int (*Burst_create)(ANeuralNetworksCompilation*, ANeuralNetworksBurst**);
  void (*Burst_free)(ANeuralNetworksBurst*);
  int (*Execution_burstCompute)(ANeuralNetworksExecution*, ANeuralNetworksBurst*);
  // Feature level 30 (Android 11).
  int (*Model_setOperandValueFromModel)(ANeuralNetworksModel*, int32_t,
                                        const ANeuralNetworksModel*);
  int (*Compilation_setPriority)(ANeuralNetworksCompilation*, int);
  int (*Compilation_setTimeout)(ANeuralNetworksCompilation*, uint64_t);
  int (*Execution_setTimeout)(ANeuralNetworksExecution*, uint64_t);
  int (*Execution_setLoopTimeout)(ANeuralNetworksExecution*, uint64_t);
};

// The API, loaded once; null when the library or one of the level-27 functions is missing
// (`why` then says which).
const NnapiApi* nnapi(std::string* why = nullptr);

// The highest feature level (an Android API level, 27 to 30) whose functions this library
// exports: what a compilation for all devices can run, since Android's CPU fallback
// implements every operation of its own level.
int64_t library_feature_level(const NnapiApi& api);

// The name of an NNAPI result code, for log lines.
const char* result_name(int code);

}  // namespace torch_nnapi
