"""`BertSelfAttention`: multi-head scaled dot-product self-attention with a padding mask."""

import math

import keras
from keras import ops

from keras_bert_impl.layers.dropout import Dropout

# Shape legend, as in Google's modeling.py:
#   B = batch size (number of sequences)
#   F = `from` sequence length (queries)
#   T = `to` sequence length (keys and values); F == T for self-attention
#   N = number of attention heads
#   H = size per head
#   D = hidden size = N * H

# Added to the scores of padded keys before the softmax. Google's value: large enough that
# exp() underflows to 0 in float32, small enough to stay finite in float16.
_MASK_ADDER = -10000.0


@keras.saving.register_keras_serializable(package="keras_bert_impl")
class BertSelfAttention(keras.layers.Layer):
    """Queries, keys and values are [D, N*H] dense maps, the layout of Google's checkpoints."""

    def __init__(self, num_heads, head_size, dropout_rate=0.1, initializer_range=0.02, **kwargs):
        super().__init__(**kwargs)
        self.num_heads = num_heads
        self.head_size = head_size
        self.dropout_rate = dropout_rate
        self.initializer_range = initializer_range

        # A new initializer per weight: a Keras 3 initializer draws from a seed fixed when it is made,
        # so one instance shared by several weights gives them the same values (query = key = value).
        def initializer():
            return keras.initializers.TruncatedNormal(stddev=initializer_range)

        width = num_heads * head_size
        self.query = keras.layers.Dense(width, kernel_initializer=initializer(), name="query")
        self.key = keras.layers.Dense(width, kernel_initializer=initializer(), name="key")
        self.value = keras.layers.Dense(width, kernel_initializer=initializer(), name="value")
        self.attention_output = keras.layers.Dense(width, kernel_initializer=initializer(), name="attention_output")
        self.dropout = Dropout(dropout_rate, name="attention_probs_dropout")

    def build(self, hidden_states_shape, input_mask_shape=None):
        for dense in (self.query, self.key, self.value):
            dense.build(hidden_states_shape)
        self.attention_output.build(tuple(hidden_states_shape[:-1]) + (self.num_heads * self.head_size,))
        self.built = True

    def _split_heads(self, rows, batch, length):
        # [B*T, N*H] -> [B, T, N, H]
        return ops.reshape(rows, (batch, length, self.num_heads, self.head_size))

    def call(self, hidden_states, input_mask, training=False):
        """hidden_states: [B, T, D], or its rows [B*T, D]; input_mask: [B, T], 1 for real tokens,
        0 for padding. Returns [B, F, N*H], or its rows [B*F, N*H] for rows in."""
        batch, length = ops.shape(input_mask)[0], ops.shape(input_mask)[1]
        width = self.num_heads * self.head_size
        # Dense maps on rows: one MatMul + BiasAdd each, which grappler fuses (a [B, T, D] input
        # would run as tensordot, a reshape between them).
        rows = ops.reshape(hidden_states, (-1, ops.shape(hidden_states)[-1]))  # [B*T, D]
        # Scaling the query rather than the scores: [B*F, D] values instead of [B, N, F, T].
        query = self.query(rows) * ops.cast(1.0 / math.sqrt(self.head_size), rows.dtype)
        query = self._split_heads(query, batch, length)  # [B, F, N, H]
        key = self._split_heads(self.key(rows), batch, length)  # [B, T, N, H]
        value = self._split_heads(self.value(rows), batch, length)  # [B, T, N, H]

        scores = ops.einsum("bfnh,btnh->bnft", query, key)  # [B, N, F, T]
        # Every query sees every real key; padded keys get _MASK_ADDER.
        # expand_dims, not [:, None, None, :]: TFLite has no strided slice that adds axes.
        key_mask = ops.expand_dims(ops.cast(input_mask, scores.dtype), (1, 2))  # [B, 1, 1, T]
        scores = scores + (1.0 - key_mask) * ops.cast(_MASK_ADDER, scores.dtype)
        probs = ops.softmax(scores, axis=-1)  # [B, N, F, T]
        probs = self.dropout(probs, training=training)

        context = ops.einsum("bnft,btnh->bfnh", probs, value)  # [B, F, N, H]
        context = ops.reshape(context, (-1, width))  # [B*F, D]
        output = self.attention_output(context)  # [B*F, D]
        return ops.reshape(output, tuple(ops.shape(hidden_states)[:-1]) + (width,))  # [B, F, D] or [B*F, D]

    def compute_output_shape(self, hidden_states_shape, input_mask_shape=None):
        return tuple(hidden_states_shape[:-1]) + (self.num_heads * self.head_size,)

    def get_config(self):
        config = super().get_config()
        config.update(
            num_heads=self.num_heads,
            head_size=self.head_size,
            dropout_rate=self.dropout_rate,
            initializer_range=self.initializer_range,
        )
        return config
