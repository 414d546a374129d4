"""`BertPretrainer`: masked-LM + next-sentence heads on a given encoder, as BERT was pretrained."""

import keras

from keras_bert_impl.layers.masked_lm_head import MaskedLMHead
from keras_bert_impl.models.task_model import TaskModel, head_initializer


@keras.saving.register_keras_serializable(package="keras_bert_impl")
class BertPretrainer(TaskModel):
    """Adds input `masked_lm_positions` [B, P]; outputs `masked_lm_logits` [B, P, V] (tied to the
    encoder's word embeddings) and `next_sentence_logits` [B, 2] (label 1 = random next)."""

    def __init__(self, encoder, **kwargs):
        config = encoder.bert_config
        inputs = dict(encoder.input)
        inputs["masked_lm_positions"] = keras.Input(shape=(None,), dtype="int32", name="masked_lm_positions")
        encoder_outputs = encoder({name: inputs[name] for name in encoder.input})
        masked_lm = MaskedLMHead(
            vocab_size=config.vocab_size,
            hidden_size=config.hidden_size,
            hidden_act=config.hidden_act,
            initializer_range=config.initializer_range,
            name="masked_lm",
        )
        next_sentence = keras.layers.Dense(
            2,
            kernel_initializer=head_initializer(encoder),
            name="next_sentence",
        )
        outputs = {
            "masked_lm_logits": masked_lm(
                encoder_outputs["sequence_output"],
                inputs["masked_lm_positions"],
                encoder.get_embedding_table(),
            ),
            "next_sentence_logits": next_sentence(encoder_outputs["pooled_output"]),
        }
        kwargs.setdefault("name", "bert_pretrainer")
        super().__init__(encoder, inputs, outputs, **kwargs)
        self.masked_lm = masked_lm
        self.next_sentence = next_sentence
