r"""Exports a BERT model as a SavedModel that serves raw text (tokenization in the graph), token
ids and tf.train.Examples, for TF Serving or `tf.saved_model.load` (after `import tensorflow_text`).

    python export_saved_model.py --bert_config_file=bert_config.json --vocab_file=vocab.txt \
        --init_checkpoint=out/mrpc --model_type=classifier --label_names=0,1 --max_seq_length=128 \
        --export_dir=exported/mrpc [--tflite_file=mrpc.tflite --tflite_quantization=dynamic_range]
"""

import dataclasses

from absl import flags

from keras_bert_cli import app
from keras_bert_cli import flags as shared
from keras_bert_common.errors import UsageError

FLAGS = flags.FLAGS
shared.define_model_flags()
shared.define_tokenizer_flags()
flags.DEFINE_string(
    "model_type",
    None,
    "What the SavedModel serves: a task of keras_bert_impl/tasks/registry.py (encoder, pretrainer, masked_lm, "
    "classifier, regression: one score as STS-B, squad, ner, multiple_choice, sentence_embedding, or one you "
    "register). Default: what a fine-tuning run's --init_checkpoint trained (its task.json, with its labels, "
    "casing and lengths), else encoder.",
)
flags.DEFINE_integer(
    "num_labels", None, "classifier / ner without --label_names: the number of classes (named 0..N-1)."
)
flags.DEFINE_list("label_names", None, "classifier / ner: the label names in id order.")
flags.DEFINE_integer("num_choices", 4, "multiple_choice: endings per example.")
flags.DEFINE_integer("max_query_length", 64, "squad: the question's share of the sequence.")
shared.define_pooling_flags()
flags.DEFINE_bool(
    "variable_seq_length",
    True,
    "Pad each batch only to its longest sequence (2.4-2.9x faster on short inputs); "
    "--novariable_seq_length pads to --max_seq_length (static shapes, e.g. for TPU serving).",
)
flags.DEFINE_string("export_dir", None, "Where the SavedModel goes.")
flags.DEFINE_bool(
    "force", False, "Replace an existing --export_dir, and an existing --tflite_file another export wrote (both)."
)
flags.DEFINE_bool("allow_random_weights", False, "Export even without --init_checkpoint (random weights).")
flags.DEFINE_string(
    "tflite_file", None, "Also write a TFLite model of the serve_ids signature (token ids in; no tokenizer) here."
)
flags.DEFINE_enum(
    "tflite_quantization",
    "float32",
    ["float32", "dynamic_range"],
    "--tflite_file: float32 weights, or int8 weights dequantized at run time (dynamic range, ~1/4 the size).",
)
flags.DEFINE_enum(
    "precision",
    "float32",
    ["float32", "bfloat16"],
    "The SavedModel's compute: bfloat16 keeps float32 weights and multiplies in bfloat16, faster on CPUs with "
    "AVX512_BF16 or AMX (a WARNING where the CPU lacks them: emulated, it is slower than float32).",
)
flags.mark_flags_as_required(["bert_config_file", "vocab_file", "export_dir"])


def main(_):
    from keras_bert_impl.serving.export import ExportOptions, build_and_export
    from keras_bert_impl.tasks.registry import read_task_record, task_class

    log = app.Log()
    given = {}
    if FLAGS.model_type is None:
        # A fine-tuned run exports its head, with the labels, casing and lengths it trained with,
        # not the encoder under it; flags given on the command line still win.
        # No record: the encoder, unless the checkpoint holds a head (then refused, not dropped).
        record = read_task_record(FLAGS.init_checkpoint, tool="export_saved_model") or {"model_type": None}
        given = {key: value for key, value in record.items() if key in FLAGS and not FLAGS[key].present}
        if "source" in record:
            shown = ", ".join(f"--{key}={value}" for key, value in given.items() if value is not None)
            log(f"{shown} (from {record['source']})")
    model_type = given.pop("model_type", FLAGS.model_type)
    label_names = FLAGS.label_names or given.pop("label_names", None)
    if not label_names and FLAGS.num_labels:
        label_names = [str(index) for index in range(FLAGS.num_labels)]
    task = task_class(model_type or "encoder")  # before any work: a known task
    if task.label_bias and task.num_outputs is None and not label_names:  # a head with named outputs
        raise UsageError(f"--model_type={model_type} needs --label_names (or --num_labels)")
    fields = {field.name for field in dataclasses.fields(ExportOptions)}
    settings = {key: value for key, value in given.items() if key in fields and value is not None}
    options = shared.options_of(ExportOptions, **settings, model_type=model_type, label_names=label_names)
    build_and_export(options, log=log)


def console_main():
    app.run(main, "export_saved_model")


if __name__ == "__main__":
    console_main()
