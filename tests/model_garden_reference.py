"""tf-models-official's BertEncoder loaded from Google-named weights: the independent reference.

The map below follows Model Garden's own variable layout (documented in
shared/notes/tf-keras-facts.md), not our table, so a mistake in our table cannot cancel out.
"""

import re

import numpy as np


def model_garden_encoder(config, google_weights, dropout=0.0):
    """A tf_keras `official.nlp.modeling.networks.BertEncoder` with the given weights (dropout 0:
    deterministic outputs for comparisons; the config's rates when it is fine-tuned)."""
    from official.nlp.modeling import networks  # noqa: PLC0415 -- heavy; only the tests need it

    kwargs = {}
    if config.hidden_act == "gelu_exact":
        kwargs["inner_activation"] = "gelu"  # the string means exact erf GELU in Model Garden
    elif config.hidden_act != "gelu":
        raise ValueError(f"no Model Garden reference for {config.hidden_act}")
    encoder = networks.BertEncoder(
        vocab_size=config.vocab_size,
        hidden_size=config.hidden_size,
        num_layers=config.num_hidden_layers,
        num_attention_heads=config.num_attention_heads,
        inner_dim=config.intermediate_size,
        max_sequence_length=config.max_position_embeddings,
        type_vocab_size=config.type_vocab_size,
        output_dropout=dropout,
        attention_dropout=dropout,
        dict_outputs=True,
        **kwargs,
    )
    heads, head_size = config.num_attention_heads, config.hidden_size // config.num_attention_heads
    values = []
    for weight in encoder.weights:
        name = weight.name.split(":")[0]
        values.append(_google_value(name, google_weights, heads, head_size, config.hidden_size))
    encoder.set_weights(values)
    return encoder


def _google_value(name, weights, heads, head_size, hidden):
    fixed = {
        "word_embeddings/embeddings": "bert/embeddings/word_embeddings",
        "position_embedding/embeddings": "bert/embeddings/position_embeddings",
        "type_embeddings/embeddings": "bert/embeddings/token_type_embeddings",
        "embeddings/layer_norm/gamma": "bert/embeddings/LayerNorm/gamma",
        "embeddings/layer_norm/beta": "bert/embeddings/LayerNorm/beta",
        "pooler_transform/kernel": "bert/pooler/dense/kernel",
        "pooler_transform/bias": "bert/pooler/dense/bias",
    }
    if name in fixed:
        return weights[fixed[name]]
    match = re.fullmatch(r"transformer/layer_(\d+)/(.+)", name)
    layer, rest = match.groups()
    prefix = f"bert/encoder/layer_{layer}/"
    qkv = re.fullmatch(r"self_attention/(query|key|value)/(kernel|bias)", rest)
    if qkv:
        value = weights[f"{prefix}attention/self/{qkv.group(1)}/{qkv.group(2)}"]
        return value.reshape((hidden, heads, head_size) if qkv.group(2) == "kernel" else (heads, head_size))
    if rest == "self_attention/attention_output/kernel":
        return weights[prefix + "attention/output/dense/kernel"].reshape(heads, head_size, hidden)
    other = {
        "self_attention/attention_output/bias": "attention/output/dense/bias",
        "self_attention_layer_norm/gamma": "attention/output/LayerNorm/gamma",
        "self_attention_layer_norm/beta": "attention/output/LayerNorm/beta",
        "intermediate/kernel": "intermediate/dense/kernel",
        "intermediate/bias": "intermediate/dense/bias",
        "output/kernel": "output/dense/kernel",
        "output/bias": "output/dense/bias",
        "output_layer_norm/gamma": "output/LayerNorm/gamma",
        "output_layer_norm/beta": "output/LayerNorm/beta",
    }
    return weights[prefix + other[rest]]


def model_garden_outputs(encoder, inputs):
    """Runs the reference with our input names; returns numpy sequence and pooled outputs."""
    outputs = encoder(
        {
            "input_word_ids": np.asarray(inputs["input_ids"], np.int32),
            "input_mask": np.asarray(inputs["input_mask"], np.int32),
            "input_type_ids": np.asarray(inputs["segment_ids"], np.int32),
        },
        training=False,
    )
    return np.asarray(outputs["sequence_output"]), np.asarray(outputs["pooled_output"])
