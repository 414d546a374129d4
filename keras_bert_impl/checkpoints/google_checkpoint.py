"""Google TF1 BERT checkpoints (`bert_model.ckpt`): read into our models and write from them.

One table maps each of Google's variable names to one of our weight paths. Rows whose weight
is not in the model (a head the model lacks) are skipped; encoder rows are always required.
"""

import dataclasses
import os
import re

import numpy as np
import tensorflow as tf

from keras_bert_impl.errors import CheckpointMismatchError

# (Google's TF1 name, our weight path, stored transposed). `{i}` is the layer index.
ENCODER_TABLE = (
    ("bert/embeddings/word_embeddings", "embeddings/word_embeddings/embeddings", False),
    ("bert/embeddings/token_type_embeddings", "embeddings/token_type_embeddings/embeddings", False),
    ("bert/embeddings/position_embeddings", "embeddings/position_embeddings/embeddings", False),
    ("bert/embeddings/LayerNorm/gamma", "embeddings/layer_norm/gamma", False),
    ("bert/embeddings/LayerNorm/beta", "embeddings/layer_norm/beta", False),
    ("bert/encoder/layer_{i}/attention/self/query/kernel", "transformer_layer_{i}/self_attention/query/kernel", False),
    ("bert/encoder/layer_{i}/attention/self/query/bias", "transformer_layer_{i}/self_attention/query/bias", False),
    ("bert/encoder/layer_{i}/attention/self/key/kernel", "transformer_layer_{i}/self_attention/key/kernel", False),
    ("bert/encoder/layer_{i}/attention/self/key/bias", "transformer_layer_{i}/self_attention/key/bias", False),
    ("bert/encoder/layer_{i}/attention/self/value/kernel", "transformer_layer_{i}/self_attention/value/kernel", False),
    ("bert/encoder/layer_{i}/attention/self/value/bias", "transformer_layer_{i}/self_attention/value/bias", False),
    (
        "bert/encoder/layer_{i}/attention/output/dense/kernel",
        "transformer_layer_{i}/self_attention/attention_output/kernel",
        False,
    ),
    (
        "bert/encoder/layer_{i}/attention/output/dense/bias",
        "transformer_layer_{i}/self_attention/attention_output/bias",
        False,
    ),
    (
        "bert/encoder/layer_{i}/attention/output/LayerNorm/gamma",
        "transformer_layer_{i}/attention_layer_norm/gamma",
        False,
    ),
    (
        "bert/encoder/layer_{i}/attention/output/LayerNorm/beta",
        "transformer_layer_{i}/attention_layer_norm/beta",
        False,
    ),
    ("bert/encoder/layer_{i}/intermediate/dense/kernel", "transformer_layer_{i}/intermediate/kernel", False),
    ("bert/encoder/layer_{i}/intermediate/dense/bias", "transformer_layer_{i}/intermediate/bias", False),
    ("bert/encoder/layer_{i}/output/dense/kernel", "transformer_layer_{i}/output_dense/kernel", False),
    ("bert/encoder/layer_{i}/output/dense/bias", "transformer_layer_{i}/output_dense/bias", False),
    ("bert/encoder/layer_{i}/output/LayerNorm/gamma", "transformer_layer_{i}/output_layer_norm/gamma", False),
    ("bert/encoder/layer_{i}/output/LayerNorm/beta", "transformer_layer_{i}/output_layer_norm/beta", False),
    ("bert/pooler/dense/kernel", "pooler/dense/kernel", False),
    ("bert/pooler/dense/bias", "pooler/dense/bias", False),
)

# Heads: loaded when both the model and the checkpoint have them.
HEAD_TABLE = (
    # run_pretraining.py
    ("cls/predictions/transform/dense/kernel", "masked_lm/transform/kernel", False),
    ("cls/predictions/transform/dense/bias", "masked_lm/transform/bias", False),
    ("cls/predictions/transform/LayerNorm/gamma", "masked_lm/layer_norm/gamma", False),
    ("cls/predictions/transform/LayerNorm/beta", "masked_lm/layer_norm/beta", False),
    ("cls/predictions/output_bias", "masked_lm/output_bias", False),
    ("cls/seq_relationship/output_weights", "next_sentence/kernel", True),
    ("cls/seq_relationship/output_bias", "next_sentence/bias", False),
    # run_classifier.py (top-level names, [num_labels, H])
    ("output_weights", "classifier/kernel", True),
    ("output_bias", "classifier/bias", False),
    # run_squad.py
    ("cls/squad/output_weights", "span_logits/kernel", True),
    ("cls/squad/output_bias", "span_logits/bias", False),
    # Heads Google's code never had, named in its style: run_ner.py ([tags, H]), run_swag.py ([1, H]).
    ("cls/ner/output_weights", "token_classifier/kernel", True),
    ("cls/ner/output_bias", "token_classifier/bias", False),
    ("cls/multiple_choice/output_weights", "choice_score/kernel", True),
    ("cls/multiple_choice/output_bias", "choice_score/bias", False),
)

# Checkpoint entries that are training state, not weights.
_TRAINING_STATE = re.compile(r"(/adam_[mv]$|^global_step$|/Adam(_1)?$|^beta[12]_power$)")


@dataclasses.dataclass(frozen=True)
class TableRow:
    google_name: str
    variable: object  # a keras.Variable of the model
    transposed: bool
    required: bool
    used: bool = True  # False: the pooler under a head that never reads it


@dataclasses.dataclass
class LoadReport:
    """What a load did: weights loaded, model heads left at their initialisation, and checkpoint
    entries the model has no place for."""

    loaded: list
    initialized: list
    unused: list

    def summary(self):
        lines = [f"loaded {len(self.loaded)} weights"]
        if self.initialized:
            lines.append(f"not in the checkpoint, initialised: {', '.join(self.initialized)}")
        if self.unused:
            lines.append(f"in the checkpoint, not used by this model: {', '.join(self.unused)}")
        return "; ".join(lines)


def _encoder_of(model):
    encoder = getattr(model, "encoder", model)
    if not hasattr(encoder, "bert_config"):
        raise TypeError(f"{model.name} is neither a BertEncoder nor a task model holding one")
    return encoder


def weight_table(model):
    """The rows of the name table that apply to `model` (an encoder or a task model)."""
    num_layers = _encoder_of(model).bert_config.num_hidden_layers
    by_path = {variable.path: variable for variable in model.weights}
    pooler_used = getattr(model, "uses_pooled_output", True)
    rows = []
    for table, required in ((ENCODER_TABLE, True), (HEAD_TABLE, False)):
        for google_template, path_template, transposed in table:
            indices = range(num_layers) if "{i}" in google_template else (None,)
            for index in indices:
                google_name = google_template.format(i=index)
                path = path_template.format(i=index)
                used = pooler_used or not google_name.startswith("bert/pooler/")
                if path in by_path:
                    rows.append(TableRow(google_name, by_path[path], transposed, required and used, used))
                elif required:
                    raise KeyError(f"model {model.name} has no weight {path}")
    return rows


def resolve_checkpoint_prefix(path):
    """`bert_model.ckpt` prefix, a directory holding one, or a `.index` file -> the prefix."""
    if str(path).endswith((".safetensors", ".bin", ".h5", ".pt")) and os.path.isfile(path):
        raise FileNotFoundError(
            f"{path}: not a TensorFlow checkpoint; pass the Hugging Face directory that holds it "
            "(config.json and model.safetensors) as --init_checkpoint"
        )
    if path.endswith(".index"):
        path = path[: -len(".index")]
    if os.path.isdir(path):
        latest = tf.train.latest_checkpoint(path)
        if latest is None and os.path.exists(os.path.join(path, "bert_model.ckpt.index")):
            latest = os.path.join(path, "bert_model.ckpt")
        if latest is None:
            raise FileNotFoundError(
                f"{path}: directory holds no checkpoint; pass --init_checkpoint=DIR/bert_model.ckpt"
            )
        return latest
    if not os.path.exists(path + ".index"):
        raise FileNotFoundError(
            f"{path}: no checkpoint there ({path}.index is missing); pass the prefix, "
            "e.g. --init_checkpoint=uncased_L-12_H-768_A-12/bert_model.ckpt"
        )
    return path


def read_google_checkpoint(path):
    """All non-training-state tensors of a TF1 checkpoint, as {google_name: numpy array}."""
    prefix = resolve_checkpoint_prefix(path)
    reader = tf.train.load_checkpoint(prefix)
    return {
        name: reader.get_tensor(name) for name in reader.get_variable_to_shape_map() if not _TRAINING_STATE.search(name)
    }


def assign_google_weights(model, weights, source="checkpoint"):
    """Assigns {google_name: array} to `model` by the table; returns a `LoadReport`.

    Raises `CheckpointMismatchError` listing every required weight that is missing and every
    shape that differs, before anything is assigned."""
    rows = weight_table(model)
    problems, initialized, assignments = [], [], []
    for row in rows:
        if row.google_name not in weights:
            if row.required:
                problems.append(f"missing {row.google_name}")
            elif row.used:
                initialized.append(row.variable.path)
            continue
        value = np.asarray(weights[row.google_name])
        if row.transposed:
            value = value.T
        if tuple(value.shape) != tuple(row.variable.shape):
            problems.append(
                f"{row.google_name} has shape {list(value.shape)}, model expects {list(row.variable.shape)}"
            )
            continue
        assignments.append((row, value))
    if problems:
        shown = "; ".join(problems[:3]) + (f"; and {len(problems) - 3} more" if len(problems) > 3 else "")
        raise CheckpointMismatchError(
            f"{source}: {len(problems)} of {len(rows)} weights do not fit the model ({shown}); "
            "use the bert_config.json released with this checkpoint"
        )
    for row, value in assignments:
        row.variable.assign(value.astype(row.variable.dtype))
    used = {row.google_name for row in rows}
    return LoadReport(
        loaded=[row.google_name for row, _ in assignments],
        initialized=initialized,
        unused=sorted(name for name in weights if name not in used),
    )


def load_google_checkpoint(model, path):
    """Loads a Google TF1 BERT checkpoint (prefix, directory or `.index`) into `model`."""
    prefix = resolve_checkpoint_prefix(path)
    return assign_google_weights(model, read_google_checkpoint(prefix), source=prefix)


def google_weights(model):
    """{google_name: numpy array} of every weight of `model` that the table names."""
    weights = {}
    for row in weight_table(model):
        value = np.asarray(row.variable.numpy())
        weights[row.google_name] = value.T if row.transposed else value
    return weights


def write_google_checkpoint(weights, prefix):
    """Writes {google_name: array} as a TF1 checkpoint bundle at `prefix` (`.index` + `.data`),
    under a temporary name first so an interrupted write leaves nothing behind."""
    directory = os.path.dirname(os.path.abspath(prefix))
    os.makedirs(directory, exist_ok=True)
    temporary = f"{prefix}.tmp-{os.getpid()}"
    names = sorted(weights)
    tf.raw_ops.SaveV2(
        prefix=temporary,
        tensor_names=names,
        shape_and_slices=[""] * len(names),
        tensors=[tf.constant(weights[name]) for name in names],
    )
    for suffix in (".data-00000-of-00001", ".index"):  # the index last: it marks a complete bundle
        os.replace(temporary + suffix, prefix + suffix)
    return prefix


def save_google_checkpoint(model, prefix):
    """Writes `model`'s weights under Google's names, readable by Google's and Model Garden's tools."""
    return write_google_checkpoint(google_weights(model), prefix)
