"""`BertPretrainer`: masked-LM + next-sentence heads on a given encoder, as BERT was pretrained."""

import keras

from keras_bert_impl.models.bert_masked_lm import masked_lm_graph
from keras_bert_impl.models.task_model import TaskModel, head_initializer


@keras.saving.register_keras_serializable(package="keras_bert_impl")
class BertPretrainer(TaskModel):
    """Adds input `masked_lm_positions` [B, P]; outputs `masked_lm_logits` [B, P, V] (tied to the
    encoder's word embeddings) and `next_sentence_logits` [B, 2] (label 1 = random next)."""

    def __init__(self, encoder, **kwargs):
        inputs, encoder_outputs, masked_lm, masked_lm_logits = masked_lm_graph(encoder)
        next_sentence = keras.layers.Dense(
            2,
            kernel_initializer=head_initializer(encoder),
            name="next_sentence",
        )
        outputs = {
            "masked_lm_logits": masked_lm_logits,
            "next_sentence_logits": next_sentence(encoder_outputs["pooled_output"]),
        }
        kwargs.setdefault("name", "bert_pretrainer")
        super().__init__(encoder, inputs, outputs, **kwargs)
        self.masked_lm = masked_lm
        self.next_sentence = next_sentence
