"""`BertSpanLabeler`: SQuAD answer-span start and end logits per token."""

import keras

from keras_bert_impl.models.task_model import TaskModel, head_initializer


@keras.saving.register_keras_serializable(package="keras_bert_impl")
class BertSpanLabeler(TaskModel):
    """One [H, 2] dense map on the sequence output, as Google's run_squad.py (`cls/squad`);
    outputs `start_logits` and `end_logits`, each [B, T]."""

    uses_pooled_output = False

    def __init__(self, encoder, **kwargs):
        inputs = dict(encoder.input)
        sequence = encoder(inputs)["sequence_output"]
        span = keras.layers.Dense(2, kernel_initializer=head_initializer(encoder), name="span_logits")
        logits = span(sequence)  # [B, T, 2]
        outputs = {"start_logits": logits[:, :, 0], "end_logits": logits[:, :, 1]}
        kwargs.setdefault("name", "bert_span_labeler")
        super().__init__(encoder, inputs, outputs, **kwargs)
