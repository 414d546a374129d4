"""`BertEmbeddings`: word + position + token-type embeddings, LayerNorm (eps 1e-12), dropout."""

import keras
from keras import ops

from keras_bert_impl.layers.dropout import Dropout
from keras_bert_impl.layers.layer_normalization import LayerNormalization


@keras.saving.register_keras_serializable(package="keras_bert_impl")
class BertEmbeddings(keras.layers.Layer):
    """Sums the three embedding tables as Google's `embedding_postprocessor` does."""

    def __init__(
        self,
        vocab_size,
        hidden_size,
        max_position_embeddings=512,
        type_vocab_size=16,
        dropout_rate=0.1,
        initializer_range=0.02,
        **kwargs,
    ):
        super().__init__(**kwargs)
        self.vocab_size = vocab_size
        self.hidden_size = hidden_size
        self.max_position_embeddings = max_position_embeddings
        self.type_vocab_size = type_vocab_size
        self.dropout_rate = dropout_rate
        self.initializer_range = initializer_range

        # A new initializer per weight: a Keras 3 initializer draws from a seed fixed when it is made,
        # so one instance shared by several weights gives them the same values (query = key = value).
        def initializer():
            return keras.initializers.TruncatedNormal(stddev=initializer_range)

        self.word_embeddings = keras.layers.Embedding(
            vocab_size, hidden_size, embeddings_initializer=initializer(), name="word_embeddings"
        )
        self.position_embeddings = keras.layers.Embedding(
            max_position_embeddings,
            hidden_size,
            embeddings_initializer=initializer(),
            name="position_embeddings",
        )
        self.token_type_embeddings = keras.layers.Embedding(
            type_vocab_size, hidden_size, embeddings_initializer=initializer(), name="token_type_embeddings"
        )
        self.layer_norm = LayerNormalization(epsilon=1e-12, name="layer_norm")
        self.dropout = Dropout(dropout_rate, name="dropout")

    def build(self, input_ids_shape, segment_ids_shape=None):
        self.word_embeddings.build(input_ids_shape)
        self.position_embeddings.build(input_ids_shape)
        self.token_type_embeddings.build(input_ids_shape)
        self.layer_norm.build(tuple(input_ids_shape) + (self.hidden_size,))
        self.built = True

    @property
    def embedding_table(self):
        """The word-embedding matrix [V, H] that the masked-LM output layer reuses."""
        return self.word_embeddings.embeddings

    def call(self, input_ids, segment_ids, training=False):
        seq_length = ops.shape(input_ids)[1]
        embeddings = self.word_embeddings(input_ids)  # [B, T, H]
        embeddings = embeddings + self.token_type_embeddings(segment_ids)
        # Positions 0..T-1 broadcast over the batch.
        embeddings = embeddings + self.position_embeddings(ops.arange(seq_length))[None, :, :]
        embeddings = self.layer_norm(embeddings)
        return self.dropout(embeddings, training=training)

    def compute_output_shape(self, input_ids_shape, segment_ids_shape=None):
        return tuple(input_ids_shape) + (self.hidden_size,)

    def get_config(self):
        config = super().get_config()
        config.update(
            vocab_size=self.vocab_size,
            hidden_size=self.hidden_size,
            max_position_embeddings=self.max_position_embeddings,
            type_vocab_size=self.type_vocab_size,
            dropout_rate=self.dropout_rate,
            initializer_range=self.initializer_range,
        )
        return config
