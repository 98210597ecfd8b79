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
    compilation_set_priority,
    compilation_set_timeout,
)
from ._device import (
    device_get_feature_level,
    device_wait,
    device_get_name,
    device_get_type,
    device_get_version,
    get_device,
    get_device_count,
)
from ._execution import (
    event_create_from_sync_fence_fd,
    event_free,
    event_get_sync_fence_fd,
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
    execution_set_loop_timeout,
    execution_set_measure_timing,
    execution_set_output,
    execution_set_output_from_memory,
    execution_set_timeout,
    execution_start_compute,
    execution_start_compute_with_dependencies,
    get_default_loop_timeout,
    get_maximum_loop_timeout,
)
from ._memory import (
    memory_copy,
    memory_create_from_ahardware_buffer,
    memory_create_from_fd,
    memory_free,
)
from ._memory_desc import (
    memory_create_from_desc,
    memory_desc_add_input_role,
    memory_desc_add_output_role,
    memory_desc_create,
    memory_desc_finish,
    memory_desc_free,
    memory_desc_set_dimensions,
)
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
    model_set_operand_value_from_model,
)

__all__ = [
    "burst_create", "burst_free", "compilation_create", "compilation_create_for_devices",
    "compilation_finish", "compilation_free", "compilation_set_caching",
    "compilation_set_preference", "compilation_set_priority", "compilation_set_timeout",
    "device_get_feature_level", "device_get_name", "device_get_type", "device_get_version",
    "device_wait", "event_create_from_sync_fence_fd", "event_free", "event_get_sync_fence_fd",
    "event_wait", "execution_burst_compute", "execution_compute", "execution_create",
    "execution_free", "execution_get_duration", "execution_get_output_operand_dimensions",
    "execution_get_output_operand_rank", "execution_set_input", "execution_set_input_from_memory",
    "execution_set_loop_timeout", "execution_set_measure_timing", "execution_set_output",
    "execution_set_output_from_memory", "execution_set_timeout", "execution_start_compute",
    "execution_start_compute_with_dependencies", "get_default_loop_timeout", "get_device",
    "get_device_count", "get_maximum_loop_timeout", "last_error", "memory_copy",
    "memory_create_from_ahardware_buffer", "memory_create_from_desc", "memory_create_from_fd",
    "memory_desc_add_input_role", "memory_desc_add_output_role", "memory_desc_create",
    "memory_desc_finish", "memory_desc_free", "memory_desc_set_dimensions", "memory_free",
    "model_add_operand", "model_add_operation", "model_create", "model_finish", "model_free",
    "model_get_supported_operations_for_devices", "model_identify_inputs_and_outputs",
    "model_relax_computation_float32to_float16", "model_set_operand_symm_per_channel_quant_params",
    "model_set_operand_value", "model_set_operand_value_from_memory",
    "model_set_operand_value_from_model", "refuse_call",
]
