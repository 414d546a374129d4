"""`convert_checkpoint`: convert_checkpoint.py's work, a model directory from one format to another.

Formats: `google` (bert_config.json + bert_model.ckpt, as Google's releases and run_pretraining's
--output_dir; or a fine-tuning runner's --output_dir with --bert_config_file, whose newest ckpt-N
is read into its task model, named by meta.json or --model_type), `huggingface` (config.json +
model.safetensors + vocab.txt + tokenizer_config.json, what transformers' `from_pretrained` reads)
and `keras_hub` (a preset directory of BertBackbone, BertMaskedLM (our masked_lm) or BertTextClassifier, written and
read by keras-hub itself).
Every direction goes through Google's names: one table per format maps onto them.
"""

import dataclasses
import os
import shutil

import numpy as np

from keras_bert_common.errors import UsageError

FORMATS = ("google", "huggingface", "keras_hub")


def model_type_of(weights):
    """The task model Google-named `weights` hold (the registry's `task_of_weights`), else the encoder."""
    from keras_bert_impl.tasks.registry import task_of_weights

    return task_of_weights(weights).name


def _run_weights(input_dir, config, model_type, label_names):
    """A runner's --output_dir: its newest ckpt-N in its task model, as Google-named weights."""
    import tensorflow as tf

    from keras_bert_impl.checkpoints.google_checkpoint import google_weights
    from keras_bert_impl.checkpoints.init_checkpoint import initialize_from_checkpoint
    from keras_bert_impl.errors import CheckpointMismatchError
    from keras_bert_impl.tasks.registry import create_task, read_task_record, task_parameters

    latest = tf.train.latest_checkpoint(input_dir)
    record = read_task_record(input_dir, tool=None if model_type else "convert_checkpoint") or {}
    model_type = model_type or record.get("model_type")
    if model_type is None:
        raise UsageError(
            f"{input_dir}: holds {os.path.basename(latest)} but no task.json or meta.json; pass --model_type"
        )
    # The task's own options from the run's record (labels, choices); max_seq_length is the config's.
    options = {key: value for key, value in record.items() if key in task_parameters(model_type)}
    options["label_names"] = label_names or options.get("label_names")
    model = create_task(model_type, config, config.max_position_embeddings, **options).build_model()
    report = initialize_from_checkpoint(model, latest)
    if report.initialized:
        raise CheckpointMismatchError(
            f"{latest}: has no weights for {', '.join(report.initialized[:3])}: not a {model_type}; pass the "
            "--model_type it was trained as"
        )
    return google_weights(model), {"model_type": model_type, "label_names": options["label_names"]}


def _read(from_format, input_dir, vocab_file, model_type=None, label_names=None, bert_config_file=None):
    """(BertConfig, Google-named weights, vocab file, do_lower_case or None, what a runner's
    directory says: {model_type, label_names}) of `input_dir`."""
    from keras_bert_common.files import check_readable_file
    from keras_bert_impl.checkpoints.google_checkpoint import read_google_checkpoint, resolve_checkpoint_prefix
    from keras_bert_impl.checkpoints.hf_weights import load_hf_directory
    from keras_bert_impl.models.bert_config import BertConfig

    vocab = vocab_file or os.path.join(
        input_dir, *(("assets", "tokenizer", "vocabulary.txt") if from_format == "keras_hub" else ("vocab.txt",))
    )
    check_readable_file(vocab, "--vocab_file" if vocab_file else "--input_dir", "vocab.txt (or pass --vocab_file)")
    if from_format == "google":
        import tensorflow as tf

        config_path = bert_config_file or os.path.join(input_dir, "bert_config.json")
        check_readable_file(
            config_path, "--bert_config_file" if bert_config_file else "--input_dir", "bert_config.json"
        )
        config = BertConfig.from_json_file(config_path)
        if not os.path.isfile(os.path.join(input_dir, "bert_model.ckpt.index")) and tf.train.latest_checkpoint(
            input_dir
        ):
            weights, found = _run_weights(input_dir, config, model_type, label_names)
            return config, weights, vocab, None, found
        from keras_bert_impl.checkpoints.init_checkpoint import check_init_checkpoint

        prefix = resolve_checkpoint_prefix(os.path.join(input_dir, "bert_model.ckpt"))
        check_init_checkpoint(prefix, config, config_path)  # a config of another model: stop, not convert
        return config, read_google_checkpoint(prefix), vocab, None, {}
    if from_format == "keras_hub":
        from keras_bert_impl.checkpoints.keras_hub_weights import load_keras_hub_preset

        # The preset's class says which head it has; the task is the one holding that head.
        config, weights, vocab, do_lower_case, _, labels = load_keras_hub_preset(input_dir)
        return config, weights, vocab_file or vocab, do_lower_case, {"label_names": labels}
    config, weights = load_hf_directory(input_dir)
    return config, weights, vocab, None, {}  # its tokenizer_config.json: `casing_of` reads it


@dataclasses.dataclass
class ConvertOptions:
    """What convert_checkpoint.py converts (its flags; --from and --to are `from_format`, `to_format`)."""

    from_format: str
    to_format: str
    input_dir: str
    output_dir: str
    vocab_file: str = None  # when input_dir has no vocab.txt
    model_type: str = None  # default: the head the weights hold
    label_names: list = None  # classifier, ner: in id order
    do_lower_case: bool = None  # default: the input's tokenizer_config.json, else True
    force: bool = False  # replace an existing output_dir
    bert_config_file: str = None  # when input_dir has no bert_config.json


def convert_checkpoint(options, log=print):
    """Reads `options.input_dir` in `from_format` and writes `output_dir` in `to_format`; returns the
    model type written (`model_type`, or the head the weights hold)."""
    from keras_bert_common.files import atomic_directory, check_not_holding_inputs, check_writable
    from keras_bert_impl.checkpoints.google_checkpoint import write_google_checkpoint
    from keras_bert_impl.checkpoints.hf_weights import write_hf_directory
    from keras_bert_impl.checkpoints.sentence_transformers import copy_pooling
    from keras_bert_impl.tasks.registry import task_class
    from tfrecord_tools.vocab_file import casing_of, load_vocab_list

    from_format, to_format, input_dir, output_dir = (
        options.from_format,
        options.to_format,
        options.input_dir,
        options.output_dir,
    )
    vocab_file, model_type, label_names = options.vocab_file, options.model_type, options.label_names
    do_lower_case, force, bert_config_file = options.do_lower_case, options.force, options.bert_config_file
    for flag, value in (("--from", from_format), ("--to", to_format)):
        if value not in FORMATS:
            raise UsageError(f"{flag}={value}: use one of {', '.join(FORMATS)}")
    if model_type is not None:
        task_class(model_type)  # a known task, or one line naming them
    check_writable(output_dir, "--output_dir", kind="replaced")
    check_not_holding_inputs(
        output_dir,
        "--output_dir",
        {"--input_dir": input_dir, "--vocab_file": vocab_file, "--bert_config_file": bert_config_file},
    )
    if os.path.exists(output_dir) and not force:
        raise FileExistsError(
            f"{output_dir}: already exists; pass --force to replace it (or choose another --output_dir)"
        )
    config, weights, vocab, read_case, found = _read(
        from_format, input_dir, vocab_file, model_type, label_names, bert_config_file
    )
    config_source = bert_config_file or os.path.join(
        input_dir, "bert_config.json" if from_format == "google" else "config.json"
    )
    tokens = load_vocab_list(vocab, needed=())
    config.check_vocab_size(len(tokens), vocab, config_source)
    model_type = model_type or found.get("model_type") or model_type_of(weights)
    label_names = label_names or found.get("label_names")
    # Unsaid, not guessed as True: a cased model's transformers tokenizer would lower-case its text.
    lower = next((case for case in (do_lower_case, read_case, casing_of(input_dir, tokens)) if case is not None), True)

    def keep_pooling(directory):
        # A sentence-transformers model keeps its pooling (its files beside the weights) in google and HF form.
        found = copy_pooling(input_dir, directory, config.hidden_size) if os.path.isdir(input_dir) else None
        if found:
            log(f"kept sentence-transformers pooling: {found['pooling']}, normalize={found['normalize_embeddings']}")

    if to_format == "huggingface":
        task = task_class(model_type)
        if task.label_bias and not label_names and task.label_bias in weights:
            label_names = [f"LABEL_{index}" for index in range(np.shape(weights[task.label_bias])[0])]
        write_hf_directory(config, weights, vocab, lower, output_dir, task, label_names, force=force, also=keep_pooling)
    elif to_format == "keras_hub":
        from keras_bert_impl.checkpoints.keras_hub_weights import HEAD_ROWS, write_keras_hub_preset
        from keras_bert_impl.tasks.registry import TASKS

        if task_class(model_type).keras_hub_class not in HEAD_ROWS:
            held = [name for name, cls in TASKS.items() if cls.keras_hub_class in HEAD_ROWS]
            raise UsageError(
                f"--model_type={model_type}: keras-hub has no BERT task for it; use one of {', '.join(held)} "
                "(encoder writes the backbone alone)"
            )

        with atomic_directory(output_dir, force=force) as temporary:
            write_keras_hub_preset(
                config,
                weights,
                vocab,
                lower,
                temporary,
                task_class(model_type),
                label_names,
                warn=getattr(log, "warning", log),
            )
    else:
        with atomic_directory(output_dir, force=force) as temporary:
            config.to_json_file(os.path.join(temporary, "bert_config.json"))
            shutil.copyfile(vocab, os.path.join(temporary, "vocab.txt"))
            write_google_checkpoint(weights, os.path.join(temporary, "bert_model.ckpt"))
            keep_pooling(temporary)
    log(f"wrote {output_dir}: {to_format} {model_type} ({len(weights)} weights from {input_dir})")
    return model_type
