"""`BertMaskedLM`: the masked-LM head alone on a given encoder (RoBERTa-style pretraining, no NSP);
`masked_lm_graph`, the head's part of the graph, which `BertPretrainer` shares."""

import keras

from keras_bert_impl.layers.masked_lm_head import MaskedLMHead
from keras_bert_impl.models.task_model import TaskModel


def masked_lm_graph(encoder):
    """(inputs: the encoder's plus `masked_lm_positions` [B, P]; the encoder's outputs; the
    `masked_lm` head; its logits [B, P, V], the decoder tied to the word embeddings)."""
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
    logits = masked_lm(encoder_outputs["sequence_output"], inputs["masked_lm_positions"], encoder.get_embedding_table())
    return inputs, encoder_outputs, masked_lm, logits


@keras.saving.register_keras_serializable(package="keras_bert_impl")
class BertMaskedLM(TaskModel):
    """Adds input `masked_lm_positions` [B, P]; outputs `masked_lm_logits` [B, P, V]. The pooler
    is never trained (transformers' BertForMaskedLM has none), so a checkpoint may lack it."""

    uses_pooled_output = False

    def __init__(self, encoder, **kwargs):
        inputs, _, masked_lm, logits = masked_lm_graph(encoder)
        kwargs.setdefault("name", "bert_masked_lm")
        super().__init__(encoder, inputs, {"masked_lm_logits": logits}, **kwargs)
        self.masked_lm = masked_lm
