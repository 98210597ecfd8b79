"""Object detection: regions of interest, box transforms, non-maximum suppression, keypoints.

Quantized models carry box coordinates as TENSOR_QUANT16_ASYMM (anchors of GENERATE_PROPOSALS
as TENSOR_QUANT16_SYMM) with Android's fixed scale 0.125 and zero point 0, beside
TENSOR_QUANT8_ASYMM feature maps and scores (or, since API 30,
TENSOR_QUANT8_ASYMM_SIGNED ones with the same 16-bit boxes). Float scalars are FLOAT16 in float16 models, as
Android's validation requires (NeuralNetworks.h still says FLOAT32 there).
"""

from ..codes import OperandType
from ..codes import OperationType as Op
from ._dsl import Rule, RuleContext, combo, form, rule
from ._registry import define
from ._rules import fixed_output_quant, same_quant

_BOX_SCALE = 0.125
_Q16A = OperandType.TENSOR_QUANT16_ASYMM
_Q16S = OperandType.TENSOR_QUANT16_SYMM


def _box_input(name: str, operand_type: OperandType = _Q16A) -> Rule:
    """Quantized box coordinates are in units of 1/8 pixel: scale 0.125, zero point 0."""

    @rule(f"{operand_type.name} {name} has scale 0.125 and zero point 0")
    def check(ctx: RuleContext) -> str | None:
        operand = ctx.input(name)
        if operand is None or operand.type != operand_type:
            return None
        if operand.scale != _BOX_SCALE or operand.zero_point != 0:
            return (f"{name} must have scale 0.125 and zero point 0, got scale"
                    f" {operand.scale:g} and zero point {operand.zero_point}")
        return None

    return check


def _box_output(name: str) -> Rule:
    return fixed_output_quant(_BOX_SCALE, 0, name, _Q16A)


# Float models compute in their own float type; quantized ones pair 8-bit data with 16-bit boxes.
_FLOAT_TYPES = [combo(3, T="tensor_f32", R="tensor_f32", S="f32"),
                combo(3, T="tensor_f16", R="tensor_f16", S="f16")]
_WITH_QUANT = _FLOAT_TYPES + [combo(3, T="tensor_q8", R="tensor_q16a", S="f32"),
                              combo(4, T="tensor_q8_signed", R="tensor_q16a", S="f32")]

define(
    Op.ROI_ALIGN,
    summary="bilinear average pooling of each region of interest to a fixed size",
    forms=[form("", "input:T rois:R batch_index:tensor_i32 out_height:i32 out_width:i32"
                    " height_ratio:S width_ratio:S height_samples:i32 width_samples:i32"
                    " nchw:bool", "output:T")],
    types=_WITH_QUANT,
    rules=[_box_input("rois")],
)

define(
    Op.ROI_POOLING,
    summary="max pooling of each region of interest to a fixed size",
    forms=[form("", "input:T rois:R batch_index:tensor_i32 out_height:i32 out_width:i32"
                    " height_ratio:S width_ratio:S nchw:bool", "output:T")],
    types=_WITH_QUANT,
    rules=[_box_input("rois"), same_quant("output", "input")],
)

define(
    Op.AXIS_ALIGNED_BBOX_TRANSFORM,
    summary="refines boxes by per-class deltas [dx, dy, dw, dh] and clips them to the image",
    forms=[form("", "rois:R deltas:D batch_index:tensor_i32 image_info:R", "output:R")],
    types=[combo(3, R="tensor_f32", D="tensor_f32"),
           combo(3, R="tensor_f16", D="tensor_f16"),
           combo(3, R="tensor_q16a", D="tensor_q8"),
           combo(4, R="tensor_q16a", D="tensor_q8_signed")],
    rules=[_box_input("rois"), _box_input("image_info"), _box_output("output")],
)

define(
    Op.BOX_WITH_NMS_LIMIT,
    summary="per-class hard, linear or gaussian non-maximum suppression of scored boxes",
    forms=[form("", "scores:T rois:R batch_index:tensor_i32 score_threshold:S"
                    " max_detections:i32 nms_kernel:i32 iou_threshold:S sigma:S"
                    " nms_score_threshold:S",
                "out_scores:T out_rois:R out_classes:tensor_i32 out_batch_index:tensor_i32")],
    types=_WITH_QUANT,
    rules=[_box_input("rois"), same_quant("out_scores", "scores"), _box_output("out_rois")],
)

define(
    Op.GENERATE_PROPOSALS,
    summary="region proposals from anchors, deltas and scores, filtered by hard NMS",
    forms=[form("", "scores:T deltas:T anchors:A image_info:R height_stride:S width_stride:S"
                    " pre_nms_max:i32 post_nms_max:i32 iou_threshold:S min_size:S nchw:bool",
                "out_scores:T out_rois:R out_batch_index:tensor_i32")],
    types=[combo(3, T="tensor_f32", A="tensor_f32", R="tensor_f32", S="f32"),
           combo(3, T="tensor_f16", A="tensor_f16", R="tensor_f16", S="f16"),
           combo(3, T="tensor_q8", A="tensor_q16s", R="tensor_q16a", S="f32"),
           combo(4, T="tensor_q8_signed", A="tensor_q16s", R="tensor_q16a", S="f32")],
    rules=[_box_input("anchors", _Q16S), _box_input("image_info"),
           same_quant("out_scores", "scores"), _box_output("out_rois")],
)

define(
    Op.DETECTION_POSTPROCESSING,
    summary="decodes anchor-relative boxes and applies (multi-class) hard NMS, SSD style",
    forms=[form("", "scores:T deltas:T anchors:T scale_y:S scale_x:S scale_h:S scale_w:S"
                    " regular_nms:bool max_detections:i32 max_classes_per_detection:i32"
                    " max_detections_per_class:i32 score_threshold:S iou_threshold:S"
                    " background_in_label:bool",
                "out_scores:T out_boxes:T out_classes:tensor_i32 num_detections:tensor_i32")],
    types=[combo(3, T="tensor_f32", S="f32"), combo(3, T="tensor_f16", S="f16")],
)

define(
    Op.HEATMAP_MAX_KEYPOINT,
    summary="sub-pixel maximum of each keypoint heatmap, mapped into its box",
    forms=[form("", "heatmaps:T boxes:R nchw:bool", "scores:T keypoints:R")],
    types=[combo(3, T="tensor_f32", R="tensor_f32"),
           combo(3, T="tensor_f16", R="tensor_f16"),
           combo(3, T="tensor_q8", R="tensor_q16a"),
           combo(4, T="tensor_q8_signed", R="tensor_q16a")],
    rules=[_box_input("boxes"), _box_output("keypoints")],
)
