"""Hugging Face-format BERT weights (`config.json` + `model.safetensors`) as Google-named weights.

The conversion goes to Google's names so that one table (`google_checkpoint`) remains the only
map onto our variables. Hugging Face's `"hidden_act": "gelu"` is the exact erf GELU.
"""

import json
import os
import re
import struct

import numpy as np

from keras_bert_impl.errors import BertConfigError, CheckpointMismatchError
from keras_bert_impl.models.bert_config import BertConfig

_DTYPES = {
    "F64": np.float64,
    "F32": np.float32,
    "F16": np.float16,
    "I64": np.int64,
    "I32": np.int32,
    "I16": np.int16,
    "I8": np.int8,
    "U8": np.uint8,
    "BOOL": np.bool_,
}

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

# (Hugging Face name pattern, Google name template, linear weight stored [out, in]).
_NAME_RULES = (
    (r"embeddings\.word_embeddings\.weight", "bert/embeddings/word_embeddings", False),
    (r"embeddings\.position_embeddings\.weight", "bert/embeddings/position_embeddings", False),
    (r"embeddings\.token_type_embeddings\.weight", "bert/embeddings/token_type_embeddings", False),
    (r"embeddings\.LayerNorm\.(weight|gamma)", "bert/embeddings/LayerNorm/gamma", False),
    (r"embeddings\.LayerNorm\.(bias|beta)", "bert/embeddings/LayerNorm/beta", False),
    (
        r"encoder\.layer\.(\d+)\.attention\.self\.(query|key|value)\.weight",
        "bert/encoder/layer_{0}/attention/self/{1}/kernel",
        True,
    ),
    (
        r"encoder\.layer\.(\d+)\.attention\.self\.(query|key|value)\.bias",
        "bert/encoder/layer_{0}/attention/self/{1}/bias",
        False,
    ),
    (
        r"encoder\.layer\.(\d+)\.attention\.output\.dense\.weight",
        "bert/encoder/layer_{0}/attention/output/dense/kernel",
        True,
    ),
    (
        r"encoder\.layer\.(\d+)\.attention\.output\.dense\.bias",
        "bert/encoder/layer_{0}/attention/output/dense/bias",
        False,
    ),
    (
        r"encoder\.layer\.(\d+)\.attention\.output\.LayerNorm\.(weight|gamma)",
        "bert/encoder/layer_{0}/attention/output/LayerNorm/gamma",
        False,
    ),
    (
        r"encoder\.layer\.(\d+)\.attention\.output\.LayerNorm\.(bias|beta)",
        "bert/encoder/layer_{0}/attention/output/LayerNorm/beta",
        False,
    ),
    (r"encoder\.layer\.(\d+)\.intermediate\.dense\.weight", "bert/encoder/layer_{0}/intermediate/dense/kernel", True),
    (r"encoder\.layer\.(\d+)\.intermediate\.dense\.bias", "bert/encoder/layer_{0}/intermediate/dense/bias", False),
    (r"encoder\.layer\.(\d+)\.output\.dense\.weight", "bert/encoder/layer_{0}/output/dense/kernel", True),
    (r"encoder\.layer\.(\d+)\.output\.dense\.bias", "bert/encoder/layer_{0}/output/dense/bias", False),
    (
        r"encoder\.layer\.(\d+)\.output\.LayerNorm\.(weight|gamma)",
        "bert/encoder/layer_{0}/output/LayerNorm/gamma",
        False,
    ),
    (r"encoder\.layer\.(\d+)\.output\.LayerNorm\.(bias|beta)", "bert/encoder/layer_{0}/output/LayerNorm/beta", False),
    (r"pooler\.dense\.weight", "bert/pooler/dense/kernel", True),
    (r"pooler\.dense\.bias", "bert/pooler/dense/bias", False),
    (r"cls\.predictions\.transform\.dense\.weight", "cls/predictions/transform/dense/kernel", True),
    (r"cls\.predictions\.transform\.dense\.bias", "cls/predictions/transform/dense/bias", False),
    (r"cls\.predictions\.transform\.LayerNorm\.(weight|gamma)", "cls/predictions/transform/LayerNorm/gamma", False),
    (r"cls\.predictions\.transform\.LayerNorm\.(bias|beta)", "cls/predictions/transform/LayerNorm/beta", False),
    (r"cls\.predictions\.bias", "cls/predictions/output_bias", False),
    # Both store [2, H]: no transpose.
    (r"cls\.seq_relationship\.weight", "cls/seq_relationship/output_weights", False),
    (r"cls\.seq_relationship\.bias", "cls/seq_relationship/output_bias", False),
)
# Buffers and tied copies that carry no weights of their own.
_SKIPPED = re.compile(r"(position_ids|cls\.predictions\.decoder\.(weight|bias))$")


def read_safetensors(path):
    """{name: numpy array} from a `.safetensors` file (8-byte header size, JSON header, data)."""
    with open(path, "rb") as reader:
        data = reader.read()
    try:
        (header_size,) = struct.unpack("<Q", data[:8])
        header = json.loads(data[8 : 8 + header_size])
    except (struct.error, ValueError) as error:
        raise CheckpointMismatchError(f"{path}: not a safetensors file ({error})") from None
    body = memoryview(data)[8 + header_size :]
    tensors = {}
    for name, entry in header.items():
        if name == "__metadata__":
            continue
        begin, end = entry["data_offsets"]
        if end > len(body):
            raise CheckpointMismatchError(
                f"{path}: truncated ({len(data)} bytes, its header needs {8 + header_size + end}): an interrupted "
                "download? fetch the file again"
            )
        if entry["dtype"] == "BF16":
            import ml_dtypes  # noqa: PLC0415 -- shipped with TensorFlow; only bf16 files need it

            dtype = ml_dtypes.bfloat16
        elif entry["dtype"] in _DTYPES:
            dtype = _DTYPES[entry["dtype"]]
        else:
            raise CheckpointMismatchError(f"{path}: tensor {name} has unsupported dtype {entry['dtype']}")
        array = np.frombuffer(body[begin:end], dtype=dtype).reshape(entry["shape"])
        # Our variables are float32: widen half-precision and narrow float64 weights.
        tensors[name] = array if entry["dtype"] not in ("F16", "BF16", "F64") else array.astype(np.float32)
    return tensors


def hf_config_to_bert_config(values, source="config.json"):
    """A Hugging Face BERT `config.json` dict -> `BertConfig` (exact GELU for "gelu")."""
    if values.get("model_type", "bert") != "bert":
        raise BertConfigError(f"{source}: model_type is {values.get('model_type')!r}, not a BERT model")
    activation = values.get("hidden_act", "gelu")
    if activation not in _HF_ACTIVATIONS:
        raise BertConfigError(f"{source}: hidden_act {activation!r} has no BERT equivalent here")
    if values.get("position_embedding_type", "absolute") != "absolute":
        raise BertConfigError(f"{source}: only absolute position embeddings are supported")
    keys = (
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
    try:
        return BertConfig.from_dict(
            {**{key: values[key] for key in keys if key in values}, "hidden_act": _HF_ACTIVATIONS[activation]},
            source=source,
        )
    except KeyError as error:
        raise BertConfigError(f"{source}: missing key {error}") from None


def hf_to_google_names(tensors, source="model.safetensors"):
    """Renames Hugging Face BERT tensors to Google's TF1 names and layouts."""
    converted = {}
    for name, value in tensors.items():
        short = name[len("bert.") :] if name.startswith("bert.") else name
        if _SKIPPED.search(short):
            continue
        for pattern, template, linear in _NAME_RULES:
            match = re.fullmatch(pattern, short)
            if match:
                converted[template.format(*match.groups())] = np.ascontiguousarray(value.T if linear else value)
                break
        else:
            raise CheckpointMismatchError(f"{source}: tensor {name} is not part of a BERT model")
    return converted


def check_weights_fit(config, weights, source):
    """The weights' shapes (Google's names) against the config they come with."""
    from keras_bert_impl.checkpoints.init_checkpoint import implied_config  # noqa: PLC0415

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
    weights = hf_to_google_names(read_safetensors(weights_path), source=weights_path)
    check_weights_fit(config, weights, directory)
    return config, weights
