"""`TaskModel`: base of the task models, which wrap a given encoder and serialize it with them."""

import keras


class TaskModel(keras.Model):
    """A functional model over `encoder` plus a head; `get_config` nests the encoder's config,
    so a saved `.keras` file rebuilds encoder and head together."""

    # Heads that read only the sequence output say so: a checkpoint may then lack the pooler
    # (transformers' BertForQuestionAnswering and BertForTokenClassification have none).
    uses_pooled_output = True

    def __init__(self, encoder, inputs, outputs, **kwargs):
        super().__init__(inputs=inputs, outputs=outputs, **kwargs)
        self.encoder = encoder

    def _head_config(self):
        """The subclass's own `__init__` arguments besides `encoder`."""
        return {}

    def get_config(self):
        return {
            "name": self.name,
            "trainable": self.trainable,
            "encoder": keras.saving.serialize_keras_object(self.encoder),
            **self._head_config(),
        }

    @classmethod
    def from_config(cls, config):
        config = dict(config)
        config["encoder"] = keras.saving.deserialize_keras_object(config["encoder"])
        return cls(**config)


def head_initializer(encoder):
    """Google's initialiser for task heads: truncated normal with the config's range."""
    return keras.initializers.TruncatedNormal(stddev=encoder.bert_config.initializer_range)
