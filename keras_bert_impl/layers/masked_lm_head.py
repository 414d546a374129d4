"""`MaskedLMHead`: BERT's masked-LM output, tied to the word embeddings, at masked positions only."""

import keras
from keras import ops

from keras_bert_impl.layers import fused
from keras_bert_impl.layers.activations import get_activation
from keras_bert_impl.layers.layer_normalization import LayerNormalization


@keras.saving.register_keras_serializable(package="keras_bert_impl")
class MaskedLMHead(keras.layers.Layer):
    """logits = LN(act(W h + b)) E^T + bias, gathered at `masked_lm_positions` first.

    Computing only the P masked positions instead of all T tokens is what makes the output layer
    cheap: the [*, V] matmul is the largest in the model at small sizes.
    """

    def __init__(self, vocab_size, hidden_size, hidden_act="gelu", initializer_range=0.02, **kwargs):
        super().__init__(**kwargs)
        self.vocab_size = vocab_size
        self.hidden_size = hidden_size
        self.hidden_act = hidden_act
        self.initializer_range = initializer_range
        self.transform = keras.layers.Dense(
            hidden_size,
            activation=get_activation(hidden_act),
            kernel_initializer=keras.initializers.TruncatedNormal(stddev=initializer_range),
            name="transform",
        )
        self.layer_norm = LayerNormalization(epsilon=1e-12, name="layer_norm")

    def build(self, sequence_output_shape, masked_lm_positions_shape=None, embedding_table_shape=None):
        self.transform.build((None, self.hidden_size))
        self.layer_norm.build((None, self.hidden_size))
        self.output_bias = self.add_weight(shape=(self.vocab_size,), initializer="zeros", name="output_bias")
        self.built = True

    def call(self, sequence_output, masked_lm_positions, embedding_table):
        """sequence_output [B, T, H], positions [B, P], table [V, H] -> logits [B, P, V]."""
        positions = ops.cast(masked_lm_positions, "int32")
        # Flat row indices into [B*T, H]: one gather, whose gradient is one scatter.
        batch, length = ops.shape(sequence_output)[0], ops.shape(sequence_output)[1]
        rows = ops.reshape(positions + ops.arange(batch)[:, None] * length, (-1,))  # [B*P]
        gathered = ops.take(ops.reshape(sequence_output, (-1, self.hidden_size)), rows, axis=0)  # [B*P, H]
        hidden = self.layer_norm(self.transform(gathered))
        # The model's largest matmul at small sizes: float32 under XLA on a CPU (see fused).
        compute = fused.xla_matmul_dtype(hidden.dtype)
        table = ops.cast(embedding_table, compute)
        logits = ops.matmul(ops.cast(hidden, compute), ops.transpose(table)) + ops.cast(self.output_bias, compute)
        logits = ops.cast(logits, hidden.dtype)  # [B*P, V]
        return ops.reshape(logits, (batch, ops.shape(positions)[1], self.vocab_size))

    def compute_output_shape(self, sequence_output_shape, masked_lm_positions_shape, embedding_table_shape=None):
        return tuple(masked_lm_positions_shape) + (self.vocab_size,)

    def get_config(self):
        config = super().get_config()
        config.update(
            vocab_size=self.vocab_size,
            hidden_size=self.hidden_size,
            hidden_act=self.hidden_act,
            initializer_range=self.initializer_range,
        )
        return config
