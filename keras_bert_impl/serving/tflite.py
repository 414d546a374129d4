"""`convert_to_tflite`: the `serve_ids` signature of one of our SavedModels as a TFLite model.

Token ids in (`input_ids`, `input_mask`, `segment_ids`, int32 [B, T]; the shapes stay dynamic,
so the interpreter is resized per input), the task's outputs out. `float32` keeps the SavedModel's
numbers; `dynamic_range` stores the larger weight matrices as int8 (about a quarter of the size)
and dequantizes them at run time. Raw text cannot come along: our tokenizer needs RE2 and ICU ops
(`StaticRegexReplace`, `NormalizeUTF8`, `RegexSplitWithOffsets`) that neither TFLite nor
tensorflow-text's TFLite kernels provide.
"""

import warnings

import tensorflow as tf
import tensorflow_text  # noqa: F401 -- loading the SavedModel needs its ops (its text signature)

from keras_bert_common.errors import UsageError
from keras_bert_common.files import atomic_output, check_writable

QUANTIZATIONS = ("float32", "dynamic_range")
SIGNATURE = "serve_ids"


def check_tflite_options(output_file, quantization):
    """Before any work: `output_file` can be written and `quantization` is one we make."""
    if quantization not in QUANTIZATIONS:
        raise UsageError(f"--tflite_quantization={quantization}: choose one of {', '.join(QUANTIZATIONS)}")
    check_writable(output_file, "--tflite_file")


def convert_to_tflite(saved_model_dir, output_file, quantization="float32"):
    """Writes `output_file` (written whole or not at all); returns its size in bytes."""
    check_tflite_options(output_file, quantization)
    converter = tf.lite.TFLiteConverter.from_saved_model(str(saved_model_dir), signature_keys=[SIGNATURE])
    if quantization == "dynamic_range":
        converter.optimizations = [tf.lite.Optimize.DEFAULT]  # no representative data: dynamic range
    flat = converter.convert()
    with atomic_output(output_file, "wb") as writer:
        writer.write(flat)
    return len(flat)


def interpreter_class():
    """LiteRT's interpreter (`ai_edge_litert`, what TensorFlow 2.20's deprecation of
    `tf.lite.Interpreter` points to) when installed, else TensorFlow's own. Same models, same
    numbers, a newer XNNPack: a dynamic-range int8 MiniLM answers one MRPC pair in 2.0 ms instead
    of 2.8 ms (bench/onnx_serving_bench.py)."""
    try:
        from ai_edge_litert.interpreter import Interpreter
    except ImportError:
        return tf.lite.Interpreter, "tf.lite"
    return Interpreter, "ai_edge_litert"


class TFLiteModel:
    """A converted model in an interpreter (LiteRT's where installed, else `tf.lite.Interpreter`):
    `model(input_ids=..., input_mask=..., segment_ids=...)` -> {output name: numpy array}; one
    interpreter, resized to each call's shapes. `runtime` names the interpreter's package."""

    def __init__(self, path_or_content, num_threads=None):
        content = path_or_content if isinstance(path_or_content, bytes) else None
        interpreter, self.runtime = interpreter_class()
        with warnings.catch_warnings():  # tf.lite's "use ai_edge_litert" when LiteRT is not installed
            warnings.simplefilter("ignore", UserWarning)
            self._interpreter = interpreter(
                model_path=None if content else str(path_or_content), model_content=content, num_threads=num_threads
            )
        self._runner = self._interpreter.get_signature_runner(SIGNATURE)

    def __call__(self, **inputs):
        return self._runner(**inputs)
