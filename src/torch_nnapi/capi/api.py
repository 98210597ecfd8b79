"""The 62 functions of the NNAPI C API (Android 11, API level 30), as C prototypes.

One table serves the generated header (``capi/header.py``) and the ctypes prototypes
(``capi.load``), so the C declarations, the C definitions (compiled against the header) and the
Python callers cannot drift apart.
"""

from __future__ import annotations

import ctypes
import re
from dataclasses import dataclass

from ._abi import ScalarCType


@dataclass(frozen=True)
class Parameter:
    c_type: str
    name: str

    @property
    def ctype(self) -> ScalarCType:
        """The ctypes type of this parameter: every pointer travels as a ``c_void_p``."""
        if "*" in self.c_type:
            return ctypes.c_void_p
        return _SCALARS[self.c_type]


@dataclass(frozen=True)
class Function:
    api_level: int
    prototype: str
    doc: str

    @property
    def _parts(self) -> re.Match[str]:
        match = re.fullmatch(r"(\w+) (\w+)\((.*)\)", self.prototype)
        if match is None:
            raise ValueError(f"malformed prototype {self.prototype!r}")
        return match

    @property
    def name(self) -> str:
        return str(self._parts.group(2))

    @property
    def bridge_name(self) -> str:
        """The bridge function the C definition calls: the name after ``ANeuralNetworks``, in
        snake case (``ANeuralNetworksModel_addOperand`` -> ``model_add_operand``)."""
        short = self.name.removeprefix("ANeuralNetworks").lstrip("_")
        return re.sub(r"(?<=[a-z0-9])(?=[A-Z])", "_", short).lower()

    @property
    def returns_int(self) -> bool:
        return str(self._parts.group(1)) == "int"

    @property
    def restype(self) -> ScalarCType | None:
        """The ctypes result type: ``c_int`` (a result code), ``c_uint64`` or None (void)."""
        return _RESULTS[self._parts.group(1)]

    @property
    def bridge_arity(self) -> int:
        """The bridge function's argument count: the C parameters, plus the address its result
        goes to when the C function returns a value rather than a result code (the loop
        timeouts)."""
        return len(self.parameters) + (self.restype is ctypes.c_uint64)

    @property
    def parameters(self) -> tuple[Parameter, ...]:
        listed = self._parts.group(3)
        if listed == "void":
            return ()
        return tuple(Parameter(*text.rsplit(" ", 1)) for text in listed.split(", "))


_SCALARS: dict[str, ScalarCType] = {
    "int": ctypes.c_int,
    "bool": ctypes.c_bool,
    "float": ctypes.c_float,
    "int32_t": ctypes.c_int32,
    "uint32_t": ctypes.c_uint32,
    "uint64_t": ctypes.c_uint64,
    "size_t": ctypes.c_size_t,
    "ANeuralNetworksOperationType": ctypes.c_int32,
}
_RESULTS: dict[str, ScalarCType | None] = {
    "int": ctypes.c_int, "uint64_t": ctypes.c_uint64, "void": None,
}

FUNCTIONS: tuple[Function, ...] = (
    # Memory
    Function(27, "int ANeuralNetworksMemory_createFromFd(size_t size, int protect, int fd,"
                 " size_t offset, ANeuralNetworksMemory** memory)",
             "Maps size bytes of a file, from a page-aligned offset, as shared memory."),
    Function(29, "int ANeuralNetworksMemory_createFromAHardwareBuffer(const AHardwareBuffer* ahwb,"
                 " ANeuralNetworksMemory** memory)",
             "Always fails on Linux, which has no AHardwareBuffer: ANEURALNETWORKS_UNMAPPABLE."),
    Function(27, "void ANeuralNetworksMemory_free(ANeuralNetworksMemory* memory)",
             "Releases a memory object; values still referencing it keep the mapping alive."),
    Function(30, "int ANeuralNetworksMemoryDesc_create(ANeuralNetworksMemoryDesc** desc)",
             "Creates a memory descriptor with no roles."),
    Function(30, "void ANeuralNetworksMemoryDesc_free(ANeuralNetworksMemoryDesc* desc)",
             "Destroys a memory descriptor (memory created from it stays valid); NULL is"
             " ignored."),
    Function(30, "int ANeuralNetworksMemoryDesc_addInputRole(ANeuralNetworksMemoryDesc* desc,"
                 " const ANeuralNetworksCompilation* compilation, uint32_t index,"
                 " float frequency)",
             "Declares that the memory will be input index of executions of a finished"
             " compilation; frequency in (0, 1] is a hint."),
    Function(30, "int ANeuralNetworksMemoryDesc_addOutputRole(ANeuralNetworksMemoryDesc* desc,"
                 " const ANeuralNetworksCompilation* compilation, uint32_t index,"
                 " float frequency)",
             "Declares that the memory will be output index of executions of a finished"
             " compilation; frequency in (0, 1] is a hint."),
    Function(30, "int ANeuralNetworksMemoryDesc_setDimensions(ANeuralNetworksMemoryDesc* desc,"
                 " uint32_t rank, const uint32_t* dimensions)",
             "Sets the memory's dimensions (0: unknown), compatible with every role's operand."),
    Function(30, "int ANeuralNetworksMemoryDesc_finish(ANeuralNetworksMemoryDesc* desc)",
             "Completes the descriptor; it needs at least one role."),
    Function(30, "int ANeuralNetworksMemory_createFromDesc(const ANeuralNetworksMemoryDesc* desc,"
                 " ANeuralNetworksMemory** memory)",
             "Creates uninitialized memory for the descriptor's roles; OP_FAILED when its"
             " dimensions are not fully known (the host allocates plain memory of one size)."),
    Function(30, "int ANeuralNetworksMemory_copy(const ANeuralNetworksMemory* src,"
                 " const ANeuralNetworksMemory* dst)",
             "Copies one memory's contents to another of the same logical size; the source, if"
             " created from a descriptor, must be initialized."),
    # Model
    Function(27, "int ANeuralNetworksModel_create(ANeuralNetworksModel** model)",
             "Creates an empty model."),
    Function(27, "void ANeuralNetworksModel_free(ANeuralNetworksModel* model)",
             "Destroys a model (finished or not); NULL is ignored."),
    Function(27, "int ANeuralNetworksModel_finish(ANeuralNetworksModel* model)",
             "Validates the model and freezes it; values over"
             " ANEURALNETWORKS_MAX_SIZE_OF_IMMEDIATELY_COPIED_VALUES bytes are copied now."),
    Function(27, "int ANeuralNetworksModel_addOperand(ANeuralNetworksModel* model,"
                 " const ANeuralNetworksOperandType* type)",
             "Adds an operand; its index is the number of operands added before it."),
    Function(27, "int ANeuralNetworksModel_setOperandValue(ANeuralNetworksModel* model,"
                 " int32_t index, const void* buffer, size_t length)",
             "Makes an operand constant (small values are copied, large ones referenced until"
             " finish), or omitted with buffer NULL and length 0."),
    Function(29, "int ANeuralNetworksModel_setOperandSymmPerChannelQuantParams("
                 "ANeuralNetworksModel* model, int32_t index,"
                 " const ANeuralNetworksSymmPerChannelQuantParams* channelQuant)",
             "Sets the per-channel scales of a TENSOR_QUANT8_SYMM_PER_CHANNEL operand."),
    Function(27, "int ANeuralNetworksModel_setOperandValueFromMemory(ANeuralNetworksModel* model,"
                 " int32_t index, const ANeuralNetworksMemory* memory, size_t offset,"
                 " size_t length)",
             "Makes an operand constant, referencing (not copying) a region of a memory object."),
    Function(30, "int ANeuralNetworksModel_setOperandValueFromModel(ANeuralNetworksModel* model,"
                 " int32_t index, const ANeuralNetworksModel* value)",
             "Makes an ANEURALNETWORKS_MODEL operand refer to a finished model (an IF branch,"
             " a WHILE condition or body), which must outlive this one."),
    Function(27, "int ANeuralNetworksModel_addOperation(ANeuralNetworksModel* model,"
                 " ANeuralNetworksOperationType type, uint32_t inputCount, const uint32_t* inputs,"
                 " uint32_t outputCount, const uint32_t* outputs)",
             "Adds an operation; its operand types are checked against the operation's"
             " signatures."),
    Function(27, "int ANeuralNetworksModel_identifyInputsAndOutputs(ANeuralNetworksModel* model,"
                 " uint32_t inputCount, const uint32_t* inputs, uint32_t outputCount,"
                 " const uint32_t* outputs)",
             "Names the model's inputs and outputs, in the order executions refer to them."),
    Function(28, "int ANeuralNetworksModel_relaxComputationFloat32toFloat16("
                 "ANeuralNetworksModel* model, bool allow)",
             "Allows TENSOR_FLOAT32 to be computed with float16 range and precision."),
    Function(29, "int ANeuralNetworksModel_getSupportedOperationsForDevices("
                 "const ANeuralNetworksModel* model, const ANeuralNetworksDevice* const* devices,"
                 " uint32_t numDevices, bool* supportedOps)",
             "Tells, per operation in the order they were added, whether any of the devices"
             " supports it, as their profiles say."),
    # Compilation
    Function(27, "int ANeuralNetworksCompilation_create(ANeuralNetworksModel* model,"
                 " ANeuralNetworksCompilation** compilation)",
             "Creates a compilation of a finished model for every device; finish partitions"
             " it as Android 11 does, with the CPU fallback."),
    Function(29, "int ANeuralNetworksCompilation_createForDevices(ANeuralNetworksModel* model,"
                 " const ANeuralNetworksDevice* const* devices, uint32_t numDevices,"
                 " ANeuralNetworksCompilation** compilation)",
             "Creates a compilation of a finished model for the given devices only; finish"
             " partitions it among them, without the CPU fallback."),
    Function(27, "void ANeuralNetworksCompilation_free(ANeuralNetworksCompilation* compilation)",
             "Destroys a compilation; NULL is ignored."),
    Function(27, "int ANeuralNetworksCompilation_setPreference("
                 "ANeuralNetworksCompilation* compilation, int32_t preference)",
             "Sets a PreferenceCode; only before finish."),
    Function(29, "int ANeuralNetworksCompilation_setCaching("
                 "ANeuralNetworksCompilation* compilation, const char* cacheDir,"
                 " const uint8_t* token)",
             "Records a cache directory and a token of ANEURALNETWORKS_BYTE_SIZE_OF_CACHE_TOKEN"
             " bytes; only before finish."),
    Function(30, "int ANeuralNetworksCompilation_setPriority("
                 "ANeuralNetworksCompilation* compilation, int priority)",
             "Sets a PriorityCode; recorded, without effect on the host; only before"
             " finish."),
    Function(30, "int ANeuralNetworksCompilation_setTimeout("
                 "ANeuralNetworksCompilation* compilation, uint64_t duration)",
             "Sets the longest time finish may take, in nanoseconds (0: no limit); needs a"
             " compilation created for exactly one device; only before finish."),
    Function(27, "int ANeuralNetworksCompilation_finish(ANeuralNetworksCompilation* compilation)",
             "Compiles; BAD_DATA when the devices cannot run the model, MISSED_DEADLINE_PERSISTENT"
             " when it took longer than the compilation's timeout."),
    # Execution
    Function(27, "int ANeuralNetworksExecution_create(ANeuralNetworksCompilation* compilation,"
                 " ANeuralNetworksExecution** execution)",
             "Creates an execution of a finished compilation; it computes once."),
    Function(27, "void ANeuralNetworksExecution_free(ANeuralNetworksExecution* execution)",
             "Destroys an execution; NULL is ignored."),
    Function(27, "int ANeuralNetworksExecution_setInput(ANeuralNetworksExecution* execution,"
                 " int32_t index, const ANeuralNetworksOperandType* type, const void* buffer,"
                 " size_t length)",
             "Binds model input index to a buffer, read when the execution computes (NULL and"
             " 0 omit an optional input); type completes unspecified dimensions."),
    Function(27, "int ANeuralNetworksExecution_setInputFromMemory("
                 "ANeuralNetworksExecution* execution, int32_t index,"
                 " const ANeuralNetworksOperandType* type, const ANeuralNetworksMemory* memory,"
                 " size_t offset, size_t length)",
             "Binds model input index to a region of a memory object."),
    Function(27, "int ANeuralNetworksExecution_setOutput(ANeuralNetworksExecution* execution,"
                 " int32_t index, const ANeuralNetworksOperandType* type, void* buffer,"
                 " size_t length)",
             "Binds model output index to a buffer; with unspecified dimensions the buffer may be"
             " larger than the result."),
    Function(27, "int ANeuralNetworksExecution_setOutputFromMemory("
                 "ANeuralNetworksExecution* execution, int32_t index,"
                 " const ANeuralNetworksOperandType* type, const ANeuralNetworksMemory* memory,"
                 " size_t offset, size_t length)",
             "Binds model output index to a region of a writable memory object."),
    Function(27, "int ANeuralNetworksExecution_startCompute(ANeuralNetworksExecution* execution,"
                 " ANeuralNetworksEvent** event)",
             "Computes in the background; wait on the event for the result."),
    Function(30, "int ANeuralNetworksExecution_startComputeWithDependencies("
                 "ANeuralNetworksExecution* execution,"
                 " const ANeuralNetworksEvent* const* dependencies, uint32_t num_dependencies,"
                 " uint64_t duration, ANeuralNetworksEvent** event)",
             "Computes in the background once every dependency event has signaled; duration"
             " limits the compute (0: no limit); every output must be fully specified."),
    Function(29, "int ANeuralNetworksExecution_compute(ANeuralNetworksExecution* execution)",
             "Computes and returns when the outputs are written."),
    Function(29, "int ANeuralNetworksExecution_burstCompute(ANeuralNetworksExecution* execution,"
                 " ANeuralNetworksBurst* burst)",
             "Computes as part of a burst of the same compilation (one at a time per burst)."),
    Function(29, "int ANeuralNetworksExecution_getOutputOperandRank("
                 "ANeuralNetworksExecution* execution, int32_t index, uint32_t* rank)",
             "The rank of an output after computing; OUTPUT_INSUFFICIENT_SIZE if its buffer was"
             " too small."),
    Function(29, "int ANeuralNetworksExecution_getOutputOperandDimensions("
                 "ANeuralNetworksExecution* execution, int32_t index, uint32_t* dimensions)",
             "The actual dimensions of a tensor output after computing, also when its buffer was"
             " too small."),
    Function(29, "int ANeuralNetworksExecution_setMeasureTiming("
                 "ANeuralNetworksExecution* execution, bool measure)",
             "Measures durations; needs a compilation created for exactly one device."),
    Function(29, "int ANeuralNetworksExecution_getDuration("
                 "const ANeuralNetworksExecution* execution, int32_t durationCode,"
                 " uint64_t* duration)",
             "A measured duration in nanoseconds, or UINT64_MAX when not measured."),
    Function(30, "int ANeuralNetworksExecution_setTimeout(ANeuralNetworksExecution* execution,"
                 " uint64_t duration)",
             "Sets the longest time a compute may take, in nanoseconds (0: no limit); longer"
             " computes end with MISSED_DEADLINE_TRANSIENT; needs a compilation created for"
             " exactly one device."),
    Function(30, "int ANeuralNetworksExecution_setLoopTimeout(ANeuralNetworksExecution* execution,"
                 " uint64_t duration)",
             "Sets the longest time each WHILE loop may run, in nanoseconds (at most"
             " ANeuralNetworks_getMaximumLoopTimeout()); a longer loop ends the execution with"
             " MISSED_DEADLINE_TRANSIENT."),
    Function(30, "uint64_t ANeuralNetworks_getDefaultLoopTimeout(void)",
             "The loop timeout of executions that set none: 2 s, in nanoseconds."),
    Function(30, "uint64_t ANeuralNetworks_getMaximumLoopTimeout(void)",
             "The largest loop timeout an execution may set: 15 s, in nanoseconds."),
    # Burst
    Function(29, "int ANeuralNetworksBurst_create(ANeuralNetworksCompilation* compilation,"
                 " ANeuralNetworksBurst** burst)",
             "Creates a burst for rapid executions of one finished compilation."),
    Function(29, "void ANeuralNetworksBurst_free(ANeuralNetworksBurst* burst)",
             "Destroys a burst; NULL is ignored."),
    # Event
    Function(27, "int ANeuralNetworksEvent_wait(ANeuralNetworksEvent* event)",
             "Waits for a background execution; returns its result code."),
    Function(27, "void ANeuralNetworksEvent_free(ANeuralNetworksEvent* event)",
             "Waits for the execution if needed, then destroys the event; NULL is ignored."),
    Function(30, "int ANeuralNetworksEvent_createFromSyncFenceFd(int sync_fence_fd,"
                 " ANeuralNetworksEvent** event)",
             "An event that signals when the file descriptor (duplicated) becomes readable, as a"
             " Linux sync_file does when its fence signals; BAD_DATA for a negative or closed"
             " descriptor."),
    Function(30, "int ANeuralNetworksEvent_getSyncFenceFd(const ANeuralNetworksEvent* event,"
                 " int* sync_fence_fd)",
             "The sync fence behind an event: the host's executions have none, so -1 and"
             " BAD_DATA, except for events made by createFromSyncFenceFd (a new duplicate)."),
    # Devices
    Function(29, "int ANeuralNetworks_getDeviceCount(uint32_t* numDevices)",
             "The number of devices: those TORCH_NNAPI_DEVICES lists, then nnapi-reference"
             " (alone by default)."),
    Function(29, "int ANeuralNetworks_getDevice(uint32_t devIndex, ANeuralNetworksDevice** device)",
             "The device at devIndex; the same handle every time."),
    Function(29, "int ANeuralNetworksDevice_getName(const ANeuralNetworksDevice* device,"
                 " const char** name)",
             "The device's name, valid for the life of the process."),
    Function(29, "int ANeuralNetworksDevice_getType(const ANeuralNetworksDevice* device,"
                 " int32_t* type)",
             "The device's DeviceTypeCode."),
    Function(29, "int ANeuralNetworksDevice_getVersion(const ANeuralNetworksDevice* device,"
                 " const char** version)",
             "The device implementation's version string."),
    Function(29, "int ANeuralNetworksDevice_getFeatureLevel(const ANeuralNetworksDevice* device,"
                 " int64_t* featureLevel)",
             "The API level of the newest NNAPI features the device implements, as its"
             " profile says (nnapi-reference: 30)."),
    Function(30, "int ANeuralNetworksDevice_wait(const ANeuralNetworksDevice* device)",
             "Waits until the device is live; every device is the host's, which always"
             " is."),
)


def function(name: str) -> Function:
    for f in FUNCTIONS:
        if f.name == name:
            return f
    raise KeyError(name)
