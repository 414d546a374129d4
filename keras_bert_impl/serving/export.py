"""`export_saved_model`: a SavedModel that serves raw text, token ids and tf.train.Examples.

The task (`tasks.base.Task`) decides what each signature takes and returns:
- `serving_default`: UTF-8 strings in (`task.text_signature()`: `text_a`, plus `text_b` for pair
  tasks or the endings [B, C] for multiple choice); tokenization (tensorflow-text ops, the same
  ids as `FullTokenizer`) and packing (`task.pack_text`) happen in the graph; out come
  `task.serving_outputs` plus the packed `input_ids` / `input_mask` / `segment_ids`, the `tokens`
  and each token's byte span in its text (`token_start_offsets`, `token_end_offsets`; -1 for
  [CLS], [SEP] and padding);
- `serve_ids`: `input_ids`, `input_mask`, `segment_ids` (int32 [B, T], [B, C, T] for multiple
  choice) in;
- `serve_examples`: serialized tf.train.Examples in, with the TFRecord feature names.

Beside `saved_model.pb`, `keras_bert_export.json` says what wrote the export (`source`: a
fine-tuning run's output_dir, or export_saved_model.py's checkpoint) and a fingerprint of the
weights, vocabulary and serving options: the same command run again finds its own export (kept
when nothing changed, replaced when its own weights moved on) instead of a conflict.

Loading needs `import tensorflow_text` (its ops are in the graph) and nothing of ours. The graph
holds plain TensorFlow ops only: the layers' XLA-fused kernels are traced as their plain formulas
here (`layers.fused.plain_formulas(serving=True)`), so serving needs no XLA JIT (TF Serving's is off
by default); GELU as `tf.nn.gelu`, which TensorFlow's graph optimizer fuses with the MatMul and
BiasAdd before it into one oneDNN kernel on a CPU (tests/test_serving_graph.py).
"""

import dataclasses
import hashlib
import json
import os
import shutil

import keras
import tensorflow as tf

from keras_bert_common.cpu import cpu_has_bfloat16_instructions
from keras_bert_common.errors import UsageError
from keras_bert_common.files import (
    atomic_directory,
    atomic_output,
    check_not_holding_inputs,
    check_readable_file,
    check_writable,
    exists,
    location,
    read_bytes,
)
from keras_bert_impl.layers.fused import plain_formulas
from keras_bert_impl.serving.packer import Packer
from keras_bert_impl.tasks.base import MODEL_INPUT_NAMES
from tfrecord_tools.bert_text_tokenizer import BertTextTokenizer

EXPORT_RECORD = "keras_bert_export.json"


def export_record(export_dir):
    """The record an earlier export left in `export_dir` ({} for a directory we did not write)."""
    try:
        return json.loads(read_bytes(os.path.join(export_dir, EXPORT_RECORD)))
    except (OSError, ValueError):
        return {}


def _same_source(record, source):
    """The export's record names `source`'s weights: a run's output_dir is the same source whether a
    fine-tuning run exported it ("output_dir:") or export_saved_model.py ("init_checkpoint:")."""
    return bool(record.get("source")) and record["source"].split(":", 1)[-1] == source.split(":", 1)[-1]


def check_export_dir(export_dir, force, source, inputs=None):
    """Before heavy work: `export_dir` is new, or `force` replaces it, or it is an earlier export
    of `source` (this command's own; whether it is current is decided when the model is ready).
    It never holds one of `inputs` ({flag: path}: the checkpoint, the run's output_dir, the vocabulary)."""
    check_writable(export_dir, "--export_dir", kind="replaced")
    check_not_holding_inputs(export_dir, "--export_dir", inputs or {})
    if exists(export_dir) and not force and not _same_source(export_record(export_dir), source):
        raise FileExistsError(
            f"{export_dir}: already exists and was not exported from {source.split(':', 1)[1]}; pass --force to "
            "replace it (or choose another --export_dir)"
        )


def check_tflite_file(tflite_file, export_dir, force, source, inputs):
    """Before heavy work: an existing `tflite_file` is replaced only with `force`, or when the
    export in `export_dir` of the same `source` recorded converting it (this command run again, at
    either quantization); never when it is one of `inputs`."""
    check_not_holding_inputs(tflite_file, "--tflite_file", inputs)
    if force or not exists(tflite_file):
        return
    record = export_record(export_dir)
    if not (_same_source(record, source) and location(tflite_file) in record.get("tflite_files", [])):
        raise FileExistsError(
            f"{tflite_file}: already exists and was not converted from {export_dir}; pass --force to replace it "
            "(or choose another --tflite_file)"
        )


def record_tflite_file(export_dir, tflite_file):
    """Notes in the export's record that `tflite_file` is converted from it (before converting: a
    conversion cut short leaves the file this command's to replace when run again)."""
    record = export_record(export_dir)
    files, where = record.setdefault("tflite_files", []), location(tflite_file)
    if where not in files:
        files.append(where)
        with atomic_output(os.path.join(export_dir, EXPORT_RECORD)) as writer:
            json.dump(record, writer, indent=1)


def fingerprint(model, task, vocab_file, do_lower_case, variable_seq_length):
    """sha256 of what decides an export's behaviour: every weight, the vocabulary and the options."""
    digest = hashlib.sha256()
    settings = {key: value for key, value in vars(task).items() if key != "bert_config"}
    digest.update(
        json.dumps(
            # Kept tokens only where a task has them: every other export keeps its fingerprint.
            [task.name, settings, do_lower_case, variable_seq_length]
            + ([list(task.serving_keep_tokens)] if task.serving_keep_tokens else []),
            sort_keys=True,
            default=str,
        ).encode()
    )
    digest.update(read_bytes(vocab_file))
    digest.update(model.dtype_policy.name.encode())  # float32 or mixed_bfloat16: the same weights
    for weight in model.weights:
        digest.update(weight.path.encode())
        digest.update(keras.ops.convert_to_numpy(weight).tobytes())
    return digest.hexdigest()


def export_saved_model(
    model,
    task,
    vocab_file,
    do_lower_case,
    export_dir,
    variable_seq_length=True,
    force=False,
    source=None,
    log=None,
):
    """Writes the SavedModel of `model` (built by `task`) to `export_dir`: a temporary directory
    first, renamed when complete. An existing `export_dir` is replaced with `force`, or when it is
    an earlier export of `source` with other weights; one of `source` with the same fingerprint is
    kept as it is. Anything else there is an error."""
    check_writable(export_dir, "--export_dir", kind="replaced")
    print_ = log or (lambda message: None)
    mark = fingerprint(model, task, vocab_file, do_lower_case, variable_seq_length)
    tflite_files = []  # converted from an export this one replaces as its own: still its own
    if source and not force and exists(export_dir):
        record = export_record(export_dir)
        if _same_source(record, source):
            if record.get("model_type", task.name) != task.name:
                raise FileExistsError(
                    f"{export_dir}: holds the {record['model_type']} export of {source.split(':', 1)[1]}, not its "
                    f"{task.name}; pass --force to replace it (or choose another --export_dir)"
                )
            if record.get("fingerprint") == mark:
                print_(f"{export_dir}: already holds this model (the same weights, vocabulary and options); kept")
                return export_dir
            print_(
                f"{export_dir}: replacing the earlier export from {source.split(':', 1)[1]} (its weights or "
                "options changed)"
            )
            force = True
            tflite_files = record.get("tflite_files", [])
    with atomic_directory(export_dir, force=force) as temporary, plain_formulas(serving=True):
        tokenizer = BertTextTokenizer(vocab_file, do_lower_case=do_lower_case, keep_tokens=task.serving_keep_tokens)
        vocab = tokenizer.ids_to_tokens(tf.range(tokenizer.vocab_size)).numpy().tolist()
        packer = Packer(
            tokenizer, vocab.index(b"[CLS]"), vocab.index(b"[SEP]"), task.max_seq_length, variable_seq_length
        )
        # Not `archive.track(model)`: that saves every weight a second time, as the Keras variables
        # beside the tf.Variables the signatures use (keras-team/keras#23553).
        archive = keras.export.ExportArchive()

        def serve_text(*texts):
            packed = task.pack_text(packer, *texts)
            inputs = {name: packed[name] for name in MODEL_INPUT_NAMES}
            return {**task.serving_outputs(model, inputs), **packed}

        def serve_ids(input_ids, input_mask, segment_ids):
            inputs = {"input_ids": input_ids, "input_mask": input_mask, "segment_ids": segment_ids}
            return task.serving_outputs(model, inputs)

        def serve_examples(examples):
            parsed = tf.io.parse_example(examples, task.serving_example_spec())
            features = {name: tf.cast(value, tf.int32) for name, value in parsed.items()}
            return task.serving_outputs(model, task.serving_inputs(features))

        ids_shape = [None, None] if len(model.input["input_ids"].shape) == 2 else [None, None, None]
        archive.add_endpoint("serving_default", serve_text, input_signature=task.text_signature())
        archive.add_endpoint(
            "serve_ids",
            serve_ids,
            input_signature=[tf.TensorSpec(ids_shape, tf.int32, name=name) for name in MODEL_INPUT_NAMES],
        )
        archive.add_endpoint(
            "serve_examples", serve_examples, input_signature=[tf.TensorSpec([None], tf.string, name="examples")]
        )
        archive.write_out(temporary, verbose=False)
        # The vocabulary travels with the model.
        shutil.copyfile(vocab_file, os.path.join(temporary, "assets", os.path.basename(vocab_file)))
        with atomic_output(os.path.join(temporary, EXPORT_RECORD)) as writer:
            record = {"source": source, "fingerprint": mark, "model_type": task.name, "tflite_files": tflite_files}
            json.dump(record, writer, indent=1)
    print_(f"exported a SavedModel to {export_dir}")
    return export_dir


@dataclasses.dataclass
class ExportOptions:
    """What export_saved_model.py exports (its flags, Google's names where Google has them)."""

    bert_config_file: str
    vocab_file: str
    export_dir: str
    init_checkpoint: str = None
    # None: nothing says which task (no flag, no run record): the encoder, unless the checkpoint
    # holds a task head, which is then refused rather than dropped.
    model_type: str = "encoder"
    do_lower_case: bool = True
    label_names: list = None
    num_choices: int = 4
    max_seq_length: int = 128
    max_query_length: int = 64
    variable_seq_length: bool = True
    force: bool = False
    allow_random_weights: bool = False
    tflite_file: str = None
    tflite_quantization: str = "float32"
    # sentence_embedding: None takes the sentence-transformers files beside init_checkpoint, else mean / off.
    pooling: str = None
    normalize_embeddings: bool = None
    # The SavedModel's compute: float32, or bfloat16 (weights kept in float32, matmuls in bfloat16;
    # fast only on CPUs with AVX512_BF16 or AMX, and on TPUs).
    precision: str = "float32"

    @classmethod
    def for_model_dir(cls, model_dir, export_dir, **overrides):
        """Options for a directory under Google's names (bert_config.json, vocab.txt, bert_model.ckpt)."""
        model_dir = str(model_dir)
        values = dict(
            bert_config_file=os.path.join(model_dir, "bert_config.json"),
            vocab_file=os.path.join(model_dir, "vocab.txt"),
            init_checkpoint=os.path.join(model_dir, "bert_model.ckpt"),
            export_dir=str(export_dir),
        )
        return cls(**{**values, **overrides})


PRECISIONS = {"float32": "float32", "bfloat16": "mixed_bfloat16"}  # --precision -> Keras dtype policy
# Set to 1 in a serving process, oneDNN caches each weight matrix in its bfloat16 kernel layout
# after the first call instead of converting the float32 variable on every call: 1.2-1.6x the speed
# at batch 1 and 32 (MiniLM, BERT-base on AMX, medians of 3 rounds; bench/bfloat16_serving_env.py),
# outputs within bfloat16's precision. Only for a process that serves bfloat16 models: float32 ones
# gain nothing and, after a large first batch, answer single examples 1.4-1.7x slower; one that
# trains keeps the first weights.
SERVE_BFLOAT16_VARIABLE = "TF_ONEDNN_ASSUME_FROZEN_WEIGHTS"


def build_and_export(options, log=print):
    """export_saved_model.py: every check first (files, vocab vs config, checkpoint vs config, the
    export location), then the task model from config + checkpoint, then `export_saved_model`."""
    from keras_bert_impl.checkpoints.init_checkpoint import (
        check_init_checkpoint,
        check_model_files,
        initialize_from_checkpoint,
        task_head_variables,
    )
    from keras_bert_impl.checkpoints.sentence_transformers import resolve_pooling
    from keras_bert_impl.errors import CheckpointMismatchError
    from keras_bert_impl.tasks.registry import check_options_apply, create_task, task_parameters
    from tfrecord_tools.tokenization import validate_case_matches_checkpoint
    from tfrecord_tools.vocab_file import check_special_tokens, load_vocab_list

    unstated = options.model_type is None
    if unstated:
        options = dataclasses.replace(options, model_type="encoder")
    if options.precision not in PRECISIONS:
        raise UsageError(f"--precision={options.precision}: use one of {', '.join(PRECISIONS)}")
    pooling = {"pooling": options.pooling, "normalize_embeddings": options.normalize_embeddings}
    check_options_apply(options.model_type, pooling)
    config = check_model_files(options.bert_config_file, options.max_seq_length)
    check_readable_file(options.vocab_file, "--vocab_file", "vocab.txt")
    vocab = load_vocab_list(options.vocab_file)
    config.check_vocab_size(len(vocab), options.vocab_file, options.bert_config_file)
    check_special_tokens(vocab, options.vocab_file, ("[CLS]", "[SEP]"))
    # The served tokenizer's casing is where a wrong one would go unnoticed longest.
    validate_case_matches_checkpoint(options.do_lower_case, options.init_checkpoint)
    source = "init_checkpoint:" + (
        os.path.abspath(options.init_checkpoint) if options.init_checkpoint else "random weights"
    )
    inputs = {
        "--init_checkpoint": options.init_checkpoint,
        "--vocab_file": options.vocab_file,
        "--bert_config_file": options.bert_config_file,
    }
    check_export_dir(options.export_dir, options.force, source, inputs)
    if options.tflite_file:
        from keras_bert_impl.serving.tflite import check_tflite_options

        check_tflite_options(options.tflite_file, options.tflite_quantization)
        check_tflite_file(options.tflite_file, options.export_dir, options.force, source, inputs)
    if options.init_checkpoint:
        check_init_checkpoint(options.init_checkpoint, config, options.bert_config_file)
        head = task_head_variables(options.init_checkpoint) if unstated else []
        if head:
            raise UsageError(
                f"{options.init_checkpoint}: holds a fine-tuned task head ({len(head)} variables beside the "
                "encoder) and no task.json says which task; pass the --model_type it was trained as (with its "
                "--label_names), or --model_type=encoder to export the encoder alone"
            )
    elif not options.allow_random_weights:
        raise UsageError(
            "no --init_checkpoint: the SavedModel would serve random weights; pass --init_checkpoint "
            "(or --allow_random_weights)"
        )
    if "pooling" in task_parameters(options.model_type):
        pooling = resolve_pooling(options.pooling, options.normalize_embeddings, options.init_checkpoint, log)
    task = create_task(
        options.model_type,
        config,
        options.max_seq_length,
        label_names=options.label_names,
        num_choices=options.num_choices,
        max_query_length=options.max_query_length,
        **pooling,
    )
    if options.precision == "bfloat16" and cpu_has_bfloat16_instructions() is False:
        warn = getattr(log, "warning", None) or (lambda message: log(f"warning: {message}"))
        warn(
            "--precision=bfloat16 on a CPU without bfloat16 instructions (AVX512_BF16 or AMX-BF16 in "
            "/proc/cpuinfo): TensorFlow emulates them and this SavedModel serves slower than in float32 here; "
            "export it for the machines that have them, or use --precision=float32"
        )
    elif options.precision == "bfloat16":
        log(f"--precision=bfloat16: serve it in a process started with {SERVE_BFLOAT16_VARIABLE}=1 (1.2-1.6x faster)")
    previous_policy = keras.mixed_precision.global_policy()
    keras.mixed_precision.set_global_policy(PRECISIONS[options.precision])
    try:
        model = task.build_model()
    finally:
        keras.mixed_precision.set_global_policy(previous_policy)
    if options.init_checkpoint:
        report = initialize_from_checkpoint(model, options.init_checkpoint)
        log(f"init_checkpoint {options.init_checkpoint}: " + report.summary())
        if report.initialized and not options.allow_random_weights:
            raise CheckpointMismatchError(
                f"{options.init_checkpoint}: has no weights for {', '.join(report.initialized[:3])}"
                f"{' (and more)' if len(report.initialized) > 3 else ''}, so the SavedModel would serve a random "
                f"{options.model_type} head; pass the --model_type it was trained as (or --allow_random_weights)"
            )
    export_saved_model(
        model,
        task,
        options.vocab_file,
        options.do_lower_case,
        options.export_dir,
        options.variable_seq_length,
        options.force,
        source=source,
        log=log,
    )
    if options.tflite_file:
        from keras_bert_impl.serving.tflite import convert_to_tflite

        record_tflite_file(options.export_dir, options.tflite_file)
        size = convert_to_tflite(options.export_dir, options.tflite_file, options.tflite_quantization)
        kind = f"{options.tflite_quantization}, {size / 2**20:.1f} MiB"
        log(f"wrote {options.tflite_file} ({kind}): token ids in, signature serve_ids")
    return options.export_dir
