"""Activation functions by `bert_config.json` name; "gelu" is Google's tanh approximation."""

import math

import keras
import tensorflow as tf
from keras import ops

from keras_bert_impl.layers.fused import fused_elementwise

_SQRT_2_OVER_PI = math.sqrt(2.0 / math.pi)
_CUBIC = 0.044715


def _gelu_tanh(x):
    return 0.5 * x * (1.0 + ops.tanh(_SQRT_2_OVER_PI * (x + _CUBIC * ops.power(x, 3))))


def _gelu_tanh_derivative(x):
    t = ops.tanh(_SQRT_2_OVER_PI * (x + _CUBIC * ops.power(x, 3)))
    return 0.5 * (1.0 + t) + 0.5 * x * (1.0 - t * t) * _SQRT_2_OVER_PI * (1.0 + 3.0 * _CUBIC * x * x)


def _gelu_exact(x):
    return 0.5 * x * (1.0 + ops.erf(x / math.sqrt(2.0)))


def _gelu_exact_derivative(x):
    # d/dx x Phi(x) = Phi(x) + x phi(x)
    return 0.5 * (1.0 + ops.erf(x / math.sqrt(2.0))) + x * ops.exp(-0.5 * x * x) / math.sqrt(2.0 * math.pi)


# In a served graph, tf.nn.gelu's own ops: the pattern grappler fuses with the MatMul and BiasAdd
# before it on a CPU. (Not everywhere: in float64 its tanh form rounds 0.044715 to float32.)
_fused_gelu_tanh = fused_elementwise(
    _gelu_tanh, _gelu_tanh_derivative, "gelu_tanh", serving=lambda x: tf.nn.gelu(x, approximate=True)
)
_fused_gelu_exact = fused_elementwise(
    _gelu_exact, _gelu_exact_derivative, "gelu_exact", serving=lambda x: tf.nn.gelu(x, approximate=False)
)


@keras.saving.register_keras_serializable(package="keras_bert_impl")
def gelu_tanh(x):
    """GELU, tanh approximation: Google's modeling.py `gelu` and every released checkpoint.
    XLA-fused forward and backward (`layers/fused.py`)."""
    return _fused_gelu_tanh(x)


@keras.saving.register_keras_serializable(package="keras_bert_impl")
def gelu_exact(x):
    """GELU, exact erf form: Hugging Face's "gelu" (the MiniLM weights were trained with it).
    XLA-fused forward and backward (`layers/fused.py`)."""
    return _fused_gelu_exact(x)


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
