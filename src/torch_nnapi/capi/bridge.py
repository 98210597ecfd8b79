"""The Python side of libneuralnetworks.so: one function per NNAPI C function.

``ANeuralNetworksModel_addOperand(model, type)`` in C calls ``model_add_operand(model, type)``
here, with pointers as integers; each function returns the NNAPI result code (see
``_calls.entry``). The functions live with the object kind they serve.
"""

from ._calls import last_error, refuse_call
from ._compilation import (
    burst_create,
    burst_free,
    compilation_create,
    compilation_create_for_devices,
    compilation_finish,
    compilation_free,
    compilation_set_caching,
    compilation_set_preference,
)
from ._device import (
    device_get_feature_level,
    device_get_name,
    device_get_type,
    device_get_version,
    get_device,
    get_device_count,
)
from ._execution import (
    event_free,
    event_wait,
    execution_burst_compute,
    execution_compute,
    execution_create,
    execution_free,
    execution_get_duration,
    execution_get_output_operand_dimensions,
    execution_get_output_operand_rank,
    execution_set_input,
    execution_set_input_from_memory,
    execution_set_measure_timing,
    execution_set_output,
    execution_set_output_from_memory,
    execution_start_compute,
)
from ._memory import memory_create_from_ahardware_buffer, memory_create_from_fd, memory_free
from ._model import (
    model_add_operand,
    model_add_operation,
    model_create,
    model_finish,
    model_free,
    model_get_supported_operations_for_devices,
    model_identify_inputs_and_outputs,
    model_relax_computation_float32to_float16,
    model_set_operand_symm_per_channel_quant_params,
    model_set_operand_value,
    model_set_operand_value_from_memory,
)

__all__ = [
    "burst_create", "burst_free", "compilation_create", "compilation_create_for_devices",
    "compilation_finish", "compilation_free", "compilation_set_caching",
    "compilation_set_preference", "device_get_feature_level", "device_get_name",
    "device_get_type", "device_get_version", "event_free", "event_wait",
    "execution_burst_compute", "execution_compute", "execution_create", "execution_free",
    "execution_get_duration", "execution_get_output_operand_dimensions",
    "execution_get_output_operand_rank", "execution_set_input",
    "execution_set_input_from_memory", "execution_set_measure_timing", "execution_set_output",
    "execution_set_output_from_memory", "execution_start_compute", "get_device",
    "get_device_count", "last_error", "memory_create_from_ahardware_buffer",
    "memory_create_from_fd", "memory_free", "model_add_operand", "model_add_operation",
    "model_create", "model_finish", "model_free", "model_get_supported_operations_for_devices",
    "model_identify_inputs_and_outputs", "model_relax_computation_float32to_float16",
    "model_set_operand_symm_per_channel_quant_params", "model_set_operand_value",
    "model_set_operand_value_from_memory", "refuse_call",
]
