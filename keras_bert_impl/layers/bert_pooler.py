"""`BertPooler`: tanh dense layer on the first ([CLS]) token, the sentence-level output."""

import keras


@keras.saving.register_keras_serializable(package="keras_bert_impl")
class BertPooler(keras.layers.Layer):
    """pooled = tanh(W h_[CLS] + b); feeds next-sentence and classification heads."""

    def __init__(self, hidden_size, initializer_range=0.02, **kwargs):
        super().__init__(**kwargs)
        self.hidden_size = hidden_size
        self.initializer_range = initializer_range
        self.dense = keras.layers.Dense(
            hidden_size,
            activation="tanh",
            kernel_initializer=keras.initializers.TruncatedNormal(stddev=initializer_range),
            name="dense",
        )

    def build(self, sequence_shape):
        self.dense.build((sequence_shape[0], sequence_shape[-1]))
        self.built = True

    def call(self, sequence_output):
        return self.dense(sequence_output[:, 0, :])

    def compute_output_shape(self, sequence_shape):
        return (sequence_shape[0], self.hidden_size)

    def get_config(self):
        config = super().get_config()
        config.update(hidden_size=self.hidden_size, initializer_range=self.initializer_range)
        return config
