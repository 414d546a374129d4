"""Activation functions by `bert_config.json` name; "gelu" is Google's tanh approximation."""

import math

import keras
from keras import ops


@keras.saving.register_keras_serializable(package="keras_bert_impl")
def gelu_tanh(x):
    """GELU, tanh approximation: Google's modeling.py `gelu` and every released checkpoint."""
    return 0.5 * x * (1.0 + ops.tanh(math.sqrt(2.0 / math.pi) * (x + 0.044715 * ops.power(x, 3))))


@keras.saving.register_keras_serializable(package="keras_bert_impl")
def gelu_exact(x):
    """GELU, exact erf form: Hugging Face's "gelu" (the MiniLM weights were trained with it)."""
    return 0.5 * x * (1.0 + ops.erf(x / math.sqrt(2.0)))


_ACTIVATIONS = {
    "gelu": gelu_tanh,
    "gelu_exact": gelu_exact,
    "relu": keras.activations.relu,
    "tanh": keras.activations.tanh,
    "swish": keras.activations.silu,
    "linear": keras.activations.linear,
}


def get_activation(name):
    """Returns the function a `hidden_act` value names (see `BertConfig.HIDDEN_ACTIVATIONS`)."""
    try:
        return _ACTIVATIONS[name]
    except KeyError:
        raise ValueError(f"unknown hidden_act {name!r}; use one of {', '.join(_ACTIVATIONS)}") from None
