"""`BertMultipleChoice`: one score per choice (SWAG), softmax over the choices."""

import keras
from keras import ops

from keras_bert_impl.layers.dropout import Dropout
from keras_bert_impl.models.task_model import TaskModel, head_initializer


class _FoldChoices(keras.layers.Layer):
    """[B, C, T] -> [B*C, T], so the encoder scores every choice in one batch."""

    def call(self, x):
        return ops.reshape(x, (-1, ops.shape(x)[-1]))

    def compute_output_shape(self, shape):
        return (None, shape[-1])


class _UnfoldChoices(keras.layers.Layer):
    """[B*C, 1] -> [B, C]."""

    def __init__(self, num_choices, **kwargs):
        super().__init__(**kwargs)
        self.num_choices = num_choices

    def call(self, x):
        return ops.reshape(x, (-1, self.num_choices))

    def compute_output_shape(self, shape):
        return (None, self.num_choices)


@keras.saving.register_keras_serializable(package="keras_bert_impl")
class BertMultipleChoice(TaskModel):
    """Inputs `input_ids`, `input_mask`, `segment_ids` of shape [B, C, T] (one
    `[CLS] context [SEP] ending [SEP]` per choice); output `logits` [B, C] from one vector on the
    pooled output, as in the paper's SWAG set-up."""

    def __init__(self, encoder, num_choices=4, dropout_rate=0.1, **kwargs):
        inputs = {name: keras.Input(shape=(num_choices, None), dtype="int32", name=name) for name in encoder.input}
        fold = _FoldChoices(name="fold_choices")
        pooled = encoder({name: fold(tensor) for name, tensor in inputs.items()})["pooled_output"]
        dropout = Dropout(dropout_rate, name="classifier_dropout")
        scorer = keras.layers.Dense(1, kernel_initializer=head_initializer(encoder), name="choice_score")
        logits = _UnfoldChoices(num_choices, name="unfold_choices")(scorer(dropout(pooled)))
        kwargs.setdefault("name", "bert_multiple_choice")
        super().__init__(encoder, inputs, {"logits": logits}, **kwargs)
        self.num_choices = num_choices
        self.dropout_rate = dropout_rate

    def _head_config(self):
        return {"num_choices": self.num_choices, "dropout_rate": self.dropout_rate}
