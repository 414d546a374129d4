"""`TransformerBlock`: BERT's post-LayerNorm encoder layer (attention, then feed-forward)."""

import keras
from keras import ops

from keras_bert_impl.layers.activations import get_activation
from keras_bert_impl.layers.bert_self_attention import BertSelfAttention
from keras_bert_impl.layers.dropout import Dropout
from keras_bert_impl.layers.layer_normalization import LayerNormalization


@keras.saving.register_keras_serializable(package="keras_bert_impl")
class TransformerBlock(keras.layers.Layer):
    """x = LN(x + Dropout(Attention(x))); x = LN(x + Dropout(FFN(x))), as in Google's modeling.py."""

    def __init__(
        self,
        hidden_size,
        num_heads,
        intermediate_size,
        hidden_act="gelu",
        hidden_dropout_prob=0.1,
        attention_probs_dropout_prob=0.1,
        initializer_range=0.02,
        **kwargs,
    ):
        super().__init__(**kwargs)
        if hidden_size % num_heads:
            raise ValueError(f"hidden_size {hidden_size} is not a multiple of {num_heads} heads")
        self.hidden_size = hidden_size
        self.num_heads = num_heads
        self.intermediate_size = intermediate_size
        self.hidden_act = hidden_act
        self.hidden_dropout_prob = hidden_dropout_prob
        self.attention_probs_dropout_prob = attention_probs_dropout_prob
        self.initializer_range = initializer_range

        # A new initializer per weight: a Keras 3 initializer draws from a seed fixed when it is made,
        # so one instance shared by several weights gives them the same values (query = key = value).
        def initializer():
            return keras.initializers.TruncatedNormal(stddev=initializer_range)

        self.self_attention = BertSelfAttention(
            num_heads=num_heads,
            head_size=hidden_size // num_heads,
            dropout_rate=attention_probs_dropout_prob,
            initializer_range=initializer_range,
            name="self_attention",
        )
        self.attention_dropout = Dropout(hidden_dropout_prob, name="attention_dropout")
        self.attention_layer_norm = LayerNormalization(epsilon=1e-12, name="attention_layer_norm")
        self.intermediate = keras.layers.Dense(
            intermediate_size,
            activation=get_activation(hidden_act),
            kernel_initializer=initializer(),
            name="intermediate",
        )
        self.output_dense = keras.layers.Dense(hidden_size, kernel_initializer=initializer(), name="output_dense")
        self.output_dropout = Dropout(hidden_dropout_prob, name="output_dropout")
        self.output_layer_norm = LayerNormalization(epsilon=1e-12, name="output_layer_norm")

    def build(self, hidden_states_shape, input_mask_shape=None):
        self.self_attention.build(hidden_states_shape)
        self.attention_layer_norm.build(hidden_states_shape)
        self.intermediate.build(hidden_states_shape)
        self.output_dense.build(tuple(hidden_states_shape[:-1]) + (self.intermediate_size,))
        self.output_layer_norm.build(hidden_states_shape)
        self.built = True

    def call(self, hidden_states, input_mask, training=False):
        """hidden_states: [B, T, D]; input_mask: [B, T]. Works on the rows [B*T, D], as Google's
        modeling.py does: each Dense map is then one MatMul + BiasAdd (+ GELU), which grappler
        fuses into one oneDNN kernel in a served graph."""
        rows = ops.reshape(hidden_states, (-1, self.hidden_size))  # [B*T, D]
        attention = self.self_attention(rows, input_mask, training=training)
        attention = self.attention_dropout(attention, training=training)
        rows = self.attention_layer_norm(rows + attention)
        feed_forward = self.output_dense(self.intermediate(rows))
        feed_forward = self.output_dropout(feed_forward, training=training)
        rows = self.output_layer_norm(rows + feed_forward)
        return ops.reshape(rows, ops.shape(hidden_states))

    def compute_output_shape(self, hidden_states_shape, input_mask_shape=None):
        return tuple(hidden_states_shape)

    def get_config(self):
        config = super().get_config()
        config.update(
            hidden_size=self.hidden_size,
            num_heads=self.num_heads,
            intermediate_size=self.intermediate_size,
            hidden_act=self.hidden_act,
            hidden_dropout_prob=self.hidden_dropout_prob,
            attention_probs_dropout_prob=self.attention_probs_dropout_prob,
            initializer_range=self.initializer_range,
        )
        return config
