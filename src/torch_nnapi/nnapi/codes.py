"""NNAPI's numeric vocabulary, as NeuralNetworks.h (Android 11, API level 30) defines it.

Everything else in torch-nnapi names NNAPI values through these enums, so this module is
the single place where a numeric code is written down.
"""

from __future__ import annotations

from enum import IntEnum


class FeatureLevel(IntEnum):
    """NNAPI feature levels. Level N is what Android's NNAPI implemented at API level 26 + N."""

    ANDROID_8_1 = 1  # API 27, NNAPI 1.0
    ANDROID_9 = 2  # API 28, NNAPI 1.1
    ANDROID_10 = 3  # API 29, NNAPI 1.2
    ANDROID_11 = 4  # API 30, NNAPI 1.3: control flow, signed 8-bit quantization

    @property
    def api_level(self) -> int:
        return 26 + int(self)

    @property
    def android(self) -> str:
        return {1: "8.1", 2: "9", 3: "10", 4: "11"}[int(self)]


class OperandType(IntEnum):
    FLOAT32 = 0
    INT32 = 1
    UINT32 = 2
    TENSOR_FLOAT32 = 3
    TENSOR_INT32 = 4
    TENSOR_QUANT8_ASYMM = 5
    BOOL = 6
    TENSOR_QUANT16_SYMM = 7
    TENSOR_FLOAT16 = 8
    TENSOR_BOOL8 = 9
    FLOAT16 = 10
    TENSOR_QUANT8_SYMM_PER_CHANNEL = 11
    TENSOR_QUANT16_ASYMM = 12
    TENSOR_QUANT8_SYMM = 13
    TENSOR_QUANT8_ASYMM_SIGNED = 14
    MODEL = 15  # a reference to another model (IF branches, WHILE condition and body)


class OperationType(IntEnum):
    ADD = 0
    AVERAGE_POOL_2D = 1
    CONCATENATION = 2
    CONV_2D = 3
    DEPTHWISE_CONV_2D = 4
    DEPTH_TO_SPACE = 5
    DEQUANTIZE = 6
    EMBEDDING_LOOKUP = 7
    FLOOR = 8
    FULLY_CONNECTED = 9
    HASHTABLE_LOOKUP = 10
    L2_NORMALIZATION = 11
    L2_POOL_2D = 12
    LOCAL_RESPONSE_NORMALIZATION = 13
    LOGISTIC = 14
    LSH_PROJECTION = 15
    LSTM = 16
    MAX_POOL_2D = 17
    MUL = 18
    RELU = 19
    RELU1 = 20
    RELU6 = 21
    RESHAPE = 22
    RESIZE_BILINEAR = 23
    RNN = 24
    SOFTMAX = 25
    SPACE_TO_DEPTH = 26
    SVDF = 27
    TANH = 28
    BATCH_TO_SPACE_ND = 29
    DIV = 30
    MEAN = 31
    PAD = 32
    SPACE_TO_BATCH_ND = 33
    SQUEEZE = 34
    STRIDED_SLICE = 35
    SUB = 36
    TRANSPOSE = 37
    ABS = 38
    ARGMAX = 39
    ARGMIN = 40
    AXIS_ALIGNED_BBOX_TRANSFORM = 41
    BIDIRECTIONAL_SEQUENCE_LSTM = 42
    BIDIRECTIONAL_SEQUENCE_RNN = 43
    BOX_WITH_NMS_LIMIT = 44
    CAST = 45
    CHANNEL_SHUFFLE = 46
    DETECTION_POSTPROCESSING = 47
    EQUAL = 48
    EXP = 49
    EXPAND_DIMS = 50
    GATHER = 51
    GENERATE_PROPOSALS = 52
    GREATER = 53
    GREATER_EQUAL = 54
    GROUPED_CONV_2D = 55
    HEATMAP_MAX_KEYPOINT = 56
    INSTANCE_NORMALIZATION = 57
    LESS = 58
    LESS_EQUAL = 59
    LOG = 60
    LOGICAL_AND = 61
    LOGICAL_NOT = 62
    LOGICAL_OR = 63
    LOG_SOFTMAX = 64
    MAXIMUM = 65
    MINIMUM = 66
    NEG = 67
    NOT_EQUAL = 68
    PAD_V2 = 69
    POW = 70
    PRELU = 71
    QUANTIZE = 72
    QUANTIZED_16BIT_LSTM = 73
    RANDOM_MULTINOMIAL = 74
    REDUCE_ALL = 75
    REDUCE_ANY = 76
    REDUCE_MAX = 77
    REDUCE_MIN = 78
    REDUCE_PROD = 79
    REDUCE_SUM = 80
    ROI_ALIGN = 81
    ROI_POOLING = 82
    RSQRT = 83
    SELECT = 84
    SIN = 85
    SLICE = 86
    SPLIT = 87
    SQRT = 88
    TILE = 89
    TOPK_V2 = 90
    TRANSPOSE_CONV_2D = 91
    UNIDIRECTIONAL_SEQUENCE_LSTM = 92
    UNIDIRECTIONAL_SEQUENCE_RNN = 93
    RESIZE_NEAREST_NEIGHBOR = 94
    QUANTIZED_LSTM = 95
    IF = 96
    WHILE = 97
    ELU = 98
    HARD_SWISH = 99
    FILL = 100
    RANK = 101

    @property
    def feature_level(self) -> FeatureLevel:
        """The feature level that introduced this operation type."""
        if self <= OperationType.TANH:
            return FeatureLevel.ANDROID_8_1
        if self <= OperationType.TRANSPOSE:
            return FeatureLevel.ANDROID_9
        if self <= OperationType.RESIZE_NEAREST_NEIGHBOR:
            return FeatureLevel.ANDROID_10
        return FeatureLevel.ANDROID_11


class FuseCode(IntEnum):
    NONE = 0
    RELU = 1
    RELU1 = 2
    RELU6 = 3


class PaddingCode(IntEnum):
    SAME = 1
    VALID = 2


class PreferenceCode(IntEnum):
    LOW_POWER = 0
    FAST_SINGLE_ANSWER = 1
    SUSTAINED_SPEED = 2


class ResultCode(IntEnum):
    NO_ERROR = 0
    OUT_OF_MEMORY = 1
    INCOMPLETE = 2
    UNEXPECTED_NULL = 3
    BAD_DATA = 4
    OP_FAILED = 5
    BAD_STATE = 6
    UNMAPPABLE = 7
    OUTPUT_INSUFFICIENT_SIZE = 8
    UNAVAILABLE_DEVICE = 9
    MISSED_DEADLINE_TRANSIENT = 10
    MISSED_DEADLINE_PERSISTENT = 11
    RESOURCE_EXHAUSTED_TRANSIENT = 12
    RESOURCE_EXHAUSTED_PERSISTENT = 13
    DEAD_OBJECT = 14


class DeviceType(IntEnum):
    UNKNOWN = 0
    OTHER = 1
    CPU = 2
    GPU = 3
    ACCELERATOR = 4


class DurationCode(IntEnum):
    ON_HARDWARE = 0
    IN_DRIVER = 1
    # Measured from when the dependencies of startComputeWithDependencies were signaled.
    FENCED_ON_HARDWARE = 2
    FENCED_IN_DRIVER = 3


class PriorityCode(IntEnum):
    """Relative priority of a compilation's executions (API 30)."""

    LOW = 90
    MEDIUM = 100
    HIGH = 110
    DEFAULT = 100  # an alias of MEDIUM


# Constant values of at most this many bytes are copied by setOperandValue; larger ones are
# referenced and must stay alive until the model is no longer used.
MAX_SIZE_OF_IMMEDIATELY_COPIED_VALUES = 128
# The most dimensions an operand may have. NNAPI's operations document ranks up to 4 (the
# conformance tests use 5 at most); the C library refuses larger counts before it reads a
# dimensions array (neuralnetworks.c, TNN_MAX_RANK), so a corrupted count (2^31 with a
# 16-byte array) cannot make it read past the caller's memory.
MAX_RANK = 6
BYTE_SIZE_OF_CACHE_TOKEN = 32

# WHILE loops that run longer than this (in nanoseconds) end the execution with
# MISSED_DEADLINE_TRANSIENT; ANeuralNetworksExecution_setLoopTimeout changes it up to the maximum.
DEFAULT_LOOP_TIMEOUT_NS = 2_000_000_000
MAXIMUM_LOOP_TIMEOUT_NS = 15_000_000_000
