"""Hugging Face-format BERT weights (`config.json` + `model.safetensors`) as Google-named weights.

The conversion goes to Google's names so that one table (`google_checkpoint`) remains the only
map onto our variables. Hugging Face's `"hidden_act": "gelu"` is the exact erf GELU.
"""

import json
import os
import re

import numpy as np

from keras_bert_impl.checkpoints.name_table import compile_rows, implied_config, rename
from keras_bert_impl.errors import BertConfigError, CheckpointMismatchError
from keras_bert_impl.models.bert_config import BertConfig

# config.json keys with the same name and meaning as bert_config.json's.
_SHARED_CONFIG_KEYS = (
    "vocab_size",
    "hidden_size",
    "num_hidden_layers",
    "num_attention_heads",
    "intermediate_size",
    "hidden_dropout_prob",
    "attention_probs_dropout_prob",
    "max_position_embeddings",
    "type_vocab_size",
    "initializer_range",
)

# Hugging Face activation names -> ours.
_HF_ACTIVATIONS = {
    "gelu": "gelu_exact",
    "gelu_new": "gelu",
    "gelu_pytorch_tanh": "gelu",
    "relu": "relu",
    "tanh": "tanh",
    "silu": "swish",
    "swish": "swish",
}

# (Hugging Face name, Google name, linear weight stored [out, in]): one table for both
# directions. `{i}` is a layer, `{qkv}` one of query/key/value. Encoder names sit under `bert.` in
# every task model (BertForPreTraining, ...), at the top in a bare BertModel.
ENCODER_ROWS = (
    ("embeddings.word_embeddings.weight", "bert/embeddings/word_embeddings", False),
    ("embeddings.position_embeddings.weight", "bert/embeddings/position_embeddings", False),
    ("embeddings.token_type_embeddings.weight", "bert/embeddings/token_type_embeddings", False),
    ("embeddings.LayerNorm.weight", "bert/embeddings/LayerNorm/gamma", False),
    ("embeddings.LayerNorm.bias", "bert/embeddings/LayerNorm/beta", False),
    ("encoder.layer.{i}.attention.self.{qkv}.weight", "bert/encoder/layer_{i}/attention/self/{qkv}/kernel", True),
    ("encoder.layer.{i}.attention.self.{qkv}.bias", "bert/encoder/layer_{i}/attention/self/{qkv}/bias", False),
    ("encoder.layer.{i}.attention.output.dense.weight", "bert/encoder/layer_{i}/attention/output/dense/kernel", True),
    ("encoder.layer.{i}.attention.output.dense.bias", "bert/encoder/layer_{i}/attention/output/dense/bias", False),
    (
        "encoder.layer.{i}.attention.output.LayerNorm.weight",
        "bert/encoder/layer_{i}/attention/output/LayerNorm/gamma",
        False,
    ),
    (
        "encoder.layer.{i}.attention.output.LayerNorm.bias",
        "bert/encoder/layer_{i}/attention/output/LayerNorm/beta",
        False,
    ),
    ("encoder.layer.{i}.intermediate.dense.weight", "bert/encoder/layer_{i}/intermediate/dense/kernel", True),
    ("encoder.layer.{i}.intermediate.dense.bias", "bert/encoder/layer_{i}/intermediate/dense/bias", False),
    ("encoder.layer.{i}.output.dense.weight", "bert/encoder/layer_{i}/output/dense/kernel", True),
    ("encoder.layer.{i}.output.dense.bias", "bert/encoder/layer_{i}/output/dense/bias", False),
    ("encoder.layer.{i}.output.LayerNorm.weight", "bert/encoder/layer_{i}/output/LayerNorm/gamma", False),
    ("encoder.layer.{i}.output.LayerNorm.bias", "bert/encoder/layer_{i}/output/LayerNorm/beta", False),
    ("pooler.dense.weight", "bert/pooler/dense/kernel", True),
    ("pooler.dense.bias", "bert/pooler/dense/bias", False),
)
HEAD_ROWS = (
    # BertForPreTraining (the MLM decoder is tied to the word embeddings: not stored)
    ("cls.predictions.transform.dense.weight", "cls/predictions/transform/dense/kernel", True),
    ("cls.predictions.transform.dense.bias", "cls/predictions/transform/dense/bias", False),
    ("cls.predictions.transform.LayerNorm.weight", "cls/predictions/transform/LayerNorm/gamma", False),
    ("cls.predictions.transform.LayerNorm.bias", "cls/predictions/transform/LayerNorm/beta", False),
    ("cls.predictions.bias", "cls/predictions/output_bias", False),
    # Both store [2, H] (and the classifiers below [labels, H]): no transpose.
    ("cls.seq_relationship.weight", "cls/seq_relationship/output_weights", False),
    ("cls.seq_relationship.bias", "cls/seq_relationship/output_bias", False),
    # BertForSequenceClassification (Google's run_classifier.py names)
    ("classifier.weight", "output_weights", False),
    ("classifier.bias", "output_bias", False),
    # BertForQuestionAnswering (Google's run_squad.py names)
    ("qa_outputs.weight", "cls/squad/output_weights", False),
    ("qa_outputs.bias", "cls/squad/output_bias", False),
)
# Architectures whose `classifier.*` is not BertForSequenceClassification's.
CLASSIFIER_ROWS = {
    "BertForTokenClassification": (
        ("classifier.weight", "cls/ner/output_weights", False),
        ("classifier.bias", "cls/ner/output_bias", False),
    ),
    "BertForMultipleChoice": (
        ("classifier.weight", "cls/multiple_choice/output_weights", False),
        ("classifier.bias", "cls/multiple_choice/output_bias", False),
    ),
}


def _compiled(rows, in_encoder):
    """(HF regex, Google regex, HF template, Google template, linear, in the encoder) per row."""
    return compile_rows((hf, google, linear, in_encoder) for hf, google, linear in rows)


_ENCODER, _HEADS = _compiled(ENCODER_ROWS, True), _compiled(HEAD_ROWS, False)
_CLASSIFIERS = {architecture: _compiled(rows, False) for architecture, rows in CLASSIFIER_ROWS.items()}
# Writing: every Google name has one Hugging Face name.
_ALL_ROWS = _ENCODER + _HEADS + tuple(row for rows in _CLASSIFIERS.values() for row in rows)


def _rows(architecture=None):
    """Reading: the table with `architecture`'s own `classifier.*` rows before the default ones."""
    return _ENCODER + _CLASSIFIERS.get(architecture, ()) + _HEADS


# Buffers and tied copies that carry no weights of their own.
_SKIPPED = re.compile(r"(position_ids|cls\.predictions\.decoder\.(weight|bias))$")
# Old checkpoints (Google's TF1 exports converted by transformers' first scripts) say gamma/beta.
_OLD_LAYER_NORM = re.compile(r"(LayerNorm)\.(gamma|beta)$")


def read_safetensors(path):
    """{name: numpy array} of a `.safetensors` file (safetensors' numpy API); half-precision and
    float64 weights widened or narrowed to our float32."""
    from safetensors import SafetensorError
    from safetensors.numpy import load_file

    try:
        tensors = load_file(path)
    except (SafetensorError, ValueError, TypeError) as error:
        raise CheckpointMismatchError(
            f"{path}: not a readable safetensors file ({str(error).splitlines()[0]}); truncated by an interrupted "
            "download? fetch the file again"
        ) from None
    return {
        name: array.astype(np.float32) if array.dtype.name in ("float16", "bfloat16", "float64") else array
        for name, array in tensors.items()
    }


def hf_config_to_bert_config(values, source="config.json"):
    """A Hugging Face BERT `config.json` dict -> `BertConfig` (exact GELU for "gelu")."""
    if values.get("model_type", "bert") != "bert":
        raise BertConfigError(f"{source}: model_type is {values.get('model_type')!r}, not a BERT model")
    activation = values.get("hidden_act", "gelu")
    if activation not in _HF_ACTIVATIONS:
        raise BertConfigError(f"{source}: hidden_act {activation!r} has no BERT equivalent here")
    if values.get("position_embedding_type", "absolute") != "absolute":
        raise BertConfigError(f"{source}: only absolute position embeddings are supported")
    try:
        return BertConfig.from_dict(
            {
                **{key: values[key] for key in _SHARED_CONFIG_KEYS if key in values},
                "hidden_act": _HF_ACTIVATIONS[activation],
            },
            source=source,
        )
    except KeyError as error:
        raise BertConfigError(f"{source}: missing key {error}") from None


def hf_to_google_names(tensors, source="model.safetensors", architecture=None):
    """Renames Hugging Face BERT tensors to Google's TF1 names and layouts; `architecture`
    (config.json's) says whose head `classifier.*` is."""
    rows = _rows(architecture)
    converted = {}
    for name, value in tensors.items():
        short = name[len("bert.") :] if name.startswith("bert.") else name
        short = _OLD_LAYER_NORM.sub(lambda m: f"{m.group(1)}.{'weight' if m.group(2) == 'gamma' else 'bias'}", short)
        if _SKIPPED.search(short):
            continue
        google, row = rename(short, rows, to_google=True)
        if google is None:
            raise CheckpointMismatchError(f"{source}: tensor {name} is not part of a BERT model")
        converted[google] = np.ascontiguousarray(value.T if row[4] else value)
    return converted


def google_to_hf_names(weights, prefix="bert."):
    """Google-named weights -> Hugging Face names and layouts; `prefix` goes before the encoder's
    names ("bert." in task models, "" in a bare BertModel)."""
    converted = {}
    for name, value in weights.items():
        hf, row = rename(name, _ALL_ROWS, to_google=False)
        if hf is None:
            raise CheckpointMismatchError(f"{name}: no Hugging Face name for this weight")
        linear, in_encoder = row[4:]
        converted[(prefix if in_encoder else "") + hf] = np.ascontiguousarray(
            np.asarray(value).T if linear else np.asarray(value)
        )
    return converted


def check_weights_fit(config, weights, source):
    """The weights' shapes (Google's names) against the config they come with."""
    implied = implied_config({name: (name, np.shape(value)) for name, value in weights.items()})
    differ = {key: value for key, value in implied.items() if getattr(config, key) != value}
    if differ:
        raise CheckpointMismatchError(
            f"{source}: its weights have {', '.join(f'{k}={v}' for k, v in differ.items())} but its config.json says "
            f"{', '.join(f'{k}={getattr(config, k)}' for k in differ)}; the files come from different models"
        )


def load_hf_directory(directory):
    """(BertConfig, {google_name: array}) from a directory with `config.json` + `model.safetensors`."""
    config_path = os.path.join(directory, "config.json")
    weights_path = os.path.join(directory, "model.safetensors")
    for path in (config_path, weights_path):
        if not os.path.isfile(path):
            raise FileNotFoundError(
                f"{path}: missing; a Hugging Face BERT directory holds config.json and model.safetensors"
            )
    with open(config_path, encoding="utf-8") as reader:
        try:
            values = json.load(reader)
        except json.JSONDecodeError as error:
            raise BertConfigError(f"{config_path}: not valid JSON ({error})") from None
    config = hf_config_to_bert_config(values, source=config_path)
    architecture = (values.get("architectures") or [None])[0]
    weights = hf_to_google_names(read_safetensors(weights_path), source=weights_path, architecture=architecture)
    check_weights_fit(config, weights, directory)
    return config, weights


# Our hidden_act -> transformers'. Google's "gelu" is the tanh form: transformers' "gelu_new".
_TO_HF_ACTIVATIONS = {"gelu": "gelu_new", "gelu_exact": "gelu", "relu": "relu", "tanh": "tanh", "swish": "silu"}


def write_safetensors(tensors, path):
    """{name: numpy array} -> a `.safetensors` file (safetensors' numpy API), written atomically."""
    from safetensors.numpy import save

    from keras_bert_common.files import atomic_output

    data = save({name: np.ascontiguousarray(tensors[name]) for name in sorted(tensors)}, metadata={"format": "pt"})
    with atomic_output(path, "wb") as writer:
        writer.write(data)


def bert_config_to_hf_config(config, architecture, label_names=None):
    """`BertConfig` -> a transformers `config.json` dict for `architecture`."""
    values = {
        "architectures": [architecture],
        "model_type": "bert",
        "hidden_act": _TO_HF_ACTIVATIONS[config.hidden_act],
        "layer_norm_eps": 1e-12,
        "pad_token_id": 0,
        "position_embedding_type": "absolute",
        **{key: getattr(config, key) for key in _SHARED_CONFIG_KEYS},
    }
    if label_names:
        values["id2label"] = {str(index): str(name) for index, name in enumerate(label_names)}
        values["label2id"] = {str(name): index for index, name in enumerate(label_names)}
    return values


def head_weight_names(prefixes):
    """The Google names of a head's weights, from its prefixes (`Task.google_head_prefixes`)."""
    rows = HEAD_ROWS + tuple(row for rows in CLASSIFIER_ROWS.values() for row in rows)
    return tuple(google for _, google, _ in rows if prefixes and google.startswith(tuple(prefixes)))


def write_hf_directory(
    config, weights, vocab_file, do_lower_case, output_dir, task, label_names=None, force=False, also=None
):
    """A transformers model directory from Google-named `weights`: config.json (with
    `architectures`), model.safetensors, vocab.txt and tokenizer_config.json; written under a
    temporary name and renamed. `task` (a `Task` class) says the architecture and its head;
    `also(directory)` writes more files into it before the rename."""
    import shutil

    from keras_bert_common.errors import UsageError
    from keras_bert_common.files import atomic_directory

    model_type, architecture = task.name, task.hf_architecture
    if architecture is None:
        raise UsageError(f"--model_type={model_type}: transformers has no architecture for it")
    needed = head_weight_names(task.google_head_prefixes)
    missing = [name for name in needed if name not in weights]
    if missing:
        raise CheckpointMismatchError(
            f"the checkpoint has no {', '.join(missing)}: it holds no {model_type} head; pass the --model_type it was "
            "trained as (encoder for the encoder alone)"
        )
    # The encoder and this architecture's head; other heads (a pretraining head under a classifier) stay behind.
    kept = {name: value for name, value in weights.items() if name.startswith("bert/") or name in needed}
    outputs = np.shape(weights[task.label_bias])[0] if task.label_bias else None
    if task.num_outputs is not None and outputs != task.num_outputs:
        raise UsageError(
            f"the checkpoint's head has {outputs} outputs, a {model_type} head {task.num_outputs}; pass the "
            "--model_type it was trained as"
        )
    if label_names and outputs is not None and len(label_names) != outputs:
        raise UsageError(f"--label_names has {len(label_names)} names but the {model_type} head has {outputs} outputs")
    # transformers' BertModel holds the encoder at the top level; a model with a head under `bert.`.
    tensors = google_to_hf_names(kept, prefix="" if architecture == "BertModel" else "bert.")
    with atomic_directory(output_dir, force=force) as temporary:
        with open(os.path.join(temporary, "config.json"), "w", encoding="utf-8") as writer:
            json.dump(bert_config_to_hf_config(config, architecture, label_names), writer, indent=2)
        write_safetensors(tensors, os.path.join(temporary, "model.safetensors"))
        shutil.copyfile(vocab_file, os.path.join(temporary, "vocab.txt"))
        with open(os.path.join(temporary, "tokenizer_config.json"), "w", encoding="utf-8") as writer:
            json.dump(
                {
                    "tokenizer_class": "BertTokenizer",
                    "do_lower_case": do_lower_case,
                    "model_max_length": config.max_position_embeddings,
                },
                writer,
                indent=2,
            )
        if also:
            also(temporary)
    return output_dir
