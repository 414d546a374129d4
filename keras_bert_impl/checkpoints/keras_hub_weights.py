"""keras-hub BERT presets (`BertBackbone`, `BertMaskedLM`, `BertTextClassifier`) to and from
Google-named weights.

One table, both directions: keras-hub's variable paths against Google's names, with the layout
change each needs (keras-hub keeps attention kernels per head, [H, N, D] and [N, D, H], and the
classifier's kernel [H, C]). keras-hub itself builds and saves the preset, so what it writes is what
its `from_preset` reads; it is imported only here, only when a preset is read or written.

What keras-hub's classes compute, fixed in their code: the encoder's feed-forward GELU is the tanh
form (Google's "gelu"); `BertMaskedLM`'s transform uses the exact GELU and a LayerNorm epsilon of
1e-5 (Google's: tanh, 1e-12), and it has no next-sentence head.
"""

import json
import os
import re

import numpy as np

from keras_bert_common.errors import UsageError
from keras_bert_impl.checkpoints.name_table import compile_rows, rename
from keras_bert_impl.errors import CheckpointMismatchError
from keras_bert_impl.models.bert_config import BertConfig

KERAS_HUB_VERSION = "0.32.0"
# Which keras-hub class holds a task is the task's `keras_hub_class` (None: keras-hub has none);
# the tables below are keyed by keras-hub's class names, never by ours.

# (keras-hub path, Google name, layout): `{i}` a layer, `{qkv}` query/key/value. Layouts:
# "same"; "heads_in" [H, H] <-> [H, N, D]; "heads_bias" [H] <-> [N, D]; "heads_out" [H, H] <->
# [N, D, H]; "transposed" [C, H] <-> [H, C].
ENCODER_ROWS = (
    ("token_embedding/embeddings", "bert/embeddings/word_embeddings", "same"),
    ("position_embedding/embeddings", "bert/embeddings/position_embeddings", "same"),
    ("segment_embedding/embeddings", "bert/embeddings/token_type_embeddings", "same"),
    ("embeddings_layer_norm/gamma", "bert/embeddings/LayerNorm/gamma", "same"),
    ("embeddings_layer_norm/beta", "bert/embeddings/LayerNorm/beta", "same"),
    (
        "transformer_layer_{i}/self_attention_layer/{qkv}/kernel",
        "bert/encoder/layer_{i}/attention/self/{qkv}/kernel",
        "heads_in",
    ),
    (
        "transformer_layer_{i}/self_attention_layer/{qkv}/bias",
        "bert/encoder/layer_{i}/attention/self/{qkv}/bias",
        "heads_bias",
    ),
    (
        "transformer_layer_{i}/self_attention_layer/attention_output/kernel",
        "bert/encoder/layer_{i}/attention/output/dense/kernel",
        "heads_out",
    ),
    (
        "transformer_layer_{i}/self_attention_layer/attention_output/bias",
        "bert/encoder/layer_{i}/attention/output/dense/bias",
        "same",
    ),
    (
        "transformer_layer_{i}/self_attention_layer_norm/gamma",
        "bert/encoder/layer_{i}/attention/output/LayerNorm/gamma",
        "same",
    ),
    (
        "transformer_layer_{i}/self_attention_layer_norm/beta",
        "bert/encoder/layer_{i}/attention/output/LayerNorm/beta",
        "same",
    ),
    (
        "transformer_layer_{i}/feedforward_intermediate_dense/kernel",
        "bert/encoder/layer_{i}/intermediate/dense/kernel",
        "same",
    ),
    (
        "transformer_layer_{i}/feedforward_intermediate_dense/bias",
        "bert/encoder/layer_{i}/intermediate/dense/bias",
        "same",
    ),
    ("transformer_layer_{i}/feedforward_output_dense/kernel", "bert/encoder/layer_{i}/output/dense/kernel", "same"),
    ("transformer_layer_{i}/feedforward_output_dense/bias", "bert/encoder/layer_{i}/output/dense/bias", "same"),
    ("transformer_layer_{i}/feedforward_layer_norm/gamma", "bert/encoder/layer_{i}/output/LayerNorm/gamma", "same"),
    ("transformer_layer_{i}/feedforward_layer_norm/beta", "bert/encoder/layer_{i}/output/LayerNorm/beta", "same"),
    ("pooled_dense/kernel", "bert/pooler/dense/kernel", "same"),
    ("pooled_dense/bias", "bert/pooler/dense/bias", "same"),
)
_MLM_HEAD_ROWS = (
    ("mlm_head/intermediate_dense/kernel", "cls/predictions/transform/dense/kernel", "same"),
    ("mlm_head/intermediate_dense/bias", "cls/predictions/transform/dense/bias", "same"),
    ("mlm_head/intermediate_layer_norm/gamma", "cls/predictions/transform/LayerNorm/gamma", "same"),
    ("mlm_head/intermediate_layer_norm/beta", "cls/predictions/transform/LayerNorm/beta", "same"),
    ("mlm_head/output_bias", "cls/predictions/output_bias", "same"),
)
HEAD_ROWS = {
    "BertBackbone": (),
    "BertMaskedLM": _MLM_HEAD_ROWS,
    "BertTextClassifier": (
        ("logits/kernel", "output_weights", "transposed"),
        ("logits/bias", "output_bias", "same"),
    ),
}
# Google-named weights keras-hub has no place for (BertMaskedLM has no next-sentence head).
NOT_CARRIED = re.compile(r"^cls/seq_relationship/")


_ROWS = {class_name: compile_rows(ENCODER_ROWS + rows) for class_name, rows in HEAD_ROWS.items()}


def _to_keras_hub_layout(value, layout, num_heads):
    hidden = value.shape[-1]
    if layout == "heads_in":
        return value.reshape(hidden, num_heads, hidden // num_heads)
    if layout == "heads_bias":
        return value.reshape(num_heads, -1)
    if layout == "heads_out":
        return value.reshape(num_heads, -1, hidden)
    if layout == "transposed":
        return value.T
    return value


def _to_google_layout(value, layout):
    if layout == "heads_in":
        return value.reshape(value.shape[0], -1)
    if layout == "heads_bias":
        return value.reshape(-1)
    if layout == "heads_out":
        return value.reshape(-1, value.shape[-1])
    if layout == "transposed":
        return value.T
    return value


def keras_hub_to_google_names(tensors, class_name, source):
    """{keras-hub path: array} of a `class_name` model -> {Google name: array}; every path must match one row."""
    weights, unknown = {}, []
    for path, value in tensors.items():
        google, row = rename(path, _ROWS[class_name], to_google=True)
        if google is None:
            unknown.append(path)
        else:
            weights[google] = _to_google_layout(np.asarray(value), row[4])
    if unknown:
        raise CheckpointMismatchError(f"{source}: variables no BERT name maps: {', '.join(sorted(unknown)[:5])}")
    return weights


def google_to_keras_hub_names(weights, class_name, num_heads):
    """{Google name: array} -> {keras-hub path: array} of a `class_name` model; names keras-hub
    cannot hold are left out."""
    tensors, unknown = {}, []
    for name, value in weights.items():
        if NOT_CARRIED.match(name):
            continue
        path, row = rename(name, _ROWS[class_name], to_google=False)
        if path is None:
            unknown.append(name)
        else:
            tensors[path] = _to_keras_hub_layout(np.asarray(value), row[4], num_heads)
    if unknown:
        raise CheckpointMismatchError(f"weights a keras-hub {class_name} has no place for: {unknown[:5]}")
    return tensors


def _keras_hub():
    try:
        import keras_hub
    except ImportError:
        raise UsageError(
            f"keras-hub is not installed; pip install keras-hub=={KERAS_HUB_VERSION} --no-deps (its BERT layers "
            "need nothing more here) to read or write keras-hub presets"
        ) from None
    return keras_hub


def bert_config_to_backbone_kwargs(config):
    return dict(
        vocabulary_size=config.vocab_size,
        num_layers=config.num_hidden_layers,
        num_heads=config.num_attention_heads,
        hidden_dim=config.hidden_size,
        intermediate_dim=config.intermediate_size,
        dropout=config.hidden_dropout_prob,
        max_sequence_length=config.max_position_embeddings,
        num_segments=config.type_vocab_size,
    )


def backbone_config_to_bert_config(values, source):
    """A keras-hub `BertBackbone` config -> `BertConfig` (tanh GELU: what keras-hub computes)."""
    try:
        return BertConfig(
            vocab_size=values["vocabulary_size"],
            hidden_size=values["hidden_dim"],
            num_hidden_layers=values["num_layers"],
            num_attention_heads=values["num_heads"],
            intermediate_size=values["intermediate_dim"],
            hidden_act="gelu",
            hidden_dropout_prob=values.get("dropout", 0.1),
            attention_probs_dropout_prob=values.get("dropout", 0.1),
            max_position_embeddings=values.get("max_sequence_length", 512),
            type_vocab_size=values.get("num_segments", 2),
        )
    except KeyError as missing:
        raise UsageError(f"{source}: a BertBackbone config needs {missing}; is this a keras-hub BERT preset?") from None


def write_keras_hub_preset(config, weights, vocab_file, do_lower_case, directory, task, label_names=None, warn=print):
    """A keras-hub preset directory (written by keras-hub) of `task` (a `Task` class whose
    `keras_hub_class` is one of HEAD_ROWS) from Google-named weights."""
    class_name = task.keras_hub_class
    keras_hub = _keras_hub()
    if config.hidden_act != "gelu":
        warn(
            f"keras-hub's BertBackbone computes the tanh GELU; this model's hidden_act is "
            f"{config.hidden_act!r}, so its keras-hub outputs will differ slightly"
        )
    if any(NOT_CARRIED.match(name) for name in weights):
        warn("keras-hub's BertMaskedLM has no next-sentence head: cls/seq_relationship is not written")
    backbone = keras_hub.models.BertBackbone(**bert_config_to_backbone_kwargs(config))
    tokenizer = keras_hub.models.BertTokenizer(vocabulary=vocab_file, lowercase=do_lower_case)
    if class_name == "BertBackbone":
        model = backbone
    elif class_name == "BertMaskedLM":
        preprocessor = keras_hub.models.BertMaskedLMPreprocessor(
            tokenizer, sequence_length=config.max_position_embeddings
        )
        model = keras_hub.models.BertMaskedLM(backbone, preprocessor=preprocessor)
    else:
        num_classes = np.shape(weights[task.label_bias])[0]
        preprocessor = keras_hub.models.BertTextClassifierPreprocessor(
            tokenizer, sequence_length=config.max_position_embeddings
        )
        model = keras_hub.models.BertTextClassifier(backbone, num_classes=num_classes, preprocessor=preprocessor)
    tensors = google_to_keras_hub_names(weights, class_name, config.num_attention_heads)
    variables = {variable.path: variable for variable in model.weights}
    missing = sorted(set(variables) - set(tensors))
    if missing:
        raise CheckpointMismatchError(f"the weights have nothing for keras-hub's {', '.join(missing[:5])}")
    for path, value in tensors.items():
        if path not in variables or tuple(variables[path].shape) != value.shape:
            have = tuple(variables[path].shape) if path in variables else "no such variable"
            raise CheckpointMismatchError(f"{path}: shape {value.shape} does not fit keras-hub's {have}")
        variables[path].assign(value.astype(variables[path].dtype))
    model.save_to_preset(directory)
    if class_name == "BertBackbone":
        tokenizer.save_to_preset(directory)
    if label_names:
        with open(os.path.join(directory, "labels.json"), "w", encoding="utf-8") as writer:
            json.dump(list(label_names), writer)


def load_keras_hub_preset(directory):
    """(BertConfig, Google-named weights, vocab file, do_lower_case, keras-hub class name, label
    names) of a keras-hub BERT preset directory."""
    from keras_bert_common.files import check_readable_file

    config_path = os.path.join(directory, "config.json")
    check_readable_file(config_path, "--input_dir", "a keras-hub preset's config.json")
    with open(config_path, encoding="utf-8") as reader:
        backbone_config = json.load(reader)
    if backbone_config.get("class_name") != "BertBackbone":
        raise UsageError(f"{config_path}: holds a {backbone_config.get('class_name')}, not a keras-hub BertBackbone")
    config = backbone_config_to_bert_config(backbone_config.get("config", {}), config_path)
    class_name = "BertBackbone"
    task_path = os.path.join(directory, "task.json")
    if os.path.isfile(task_path):
        with open(task_path, encoding="utf-8") as reader:
            class_name = json.load(reader).get("class_name")
        if class_name not in HEAD_ROWS:
            raise UsageError(f"{task_path}: a {class_name}; we read {', '.join(HEAD_ROWS)}")
    keras_hub = _keras_hub()
    model_class = getattr(keras_hub.models, class_name)
    model = model_class.from_preset(directory, **({"preprocessor": None} if class_name != "BertBackbone" else {}))
    tensors = {variable.path: np.asarray(variable) for variable in model.weights}
    weights = keras_hub_to_google_names(tensors, class_name, directory)
    vocab = os.path.join(directory, "assets", "tokenizer", "vocabulary.txt")
    do_lower_case = None
    tokenizer_path = os.path.join(directory, "tokenizer.json")
    if os.path.isfile(tokenizer_path):
        with open(tokenizer_path, encoding="utf-8") as reader:
            do_lower_case = json.load(reader).get("config", {}).get("lowercase")
    labels = None
    labels_path = os.path.join(directory, "labels.json")
    if os.path.isfile(labels_path):
        with open(labels_path, encoding="utf-8") as reader:
            labels = json.load(reader)
    return config, weights, vocab, do_lower_case, class_name, labels
