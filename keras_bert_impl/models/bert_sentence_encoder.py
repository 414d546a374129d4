"""`BertSentenceEncoder`: one embedding per text (sentence-transformers' pooling), on the sequence output."""

import keras

from keras_bert_impl.layers.sentence_pooling import SentencePooling
from keras_bert_impl.models.task_model import TaskModel


@keras.saving.register_keras_serializable(package="keras_bert_impl")
class BertSentenceEncoder(TaskModel):
    """embedding [B, H] = SentencePooling(sequence_output, input_mask); no weights of its own, so a
    sentence-transformers BERT (all-MiniLM-L6-v2) gives the embeddings it was trained for."""

    uses_pooled_output = False

    def __init__(self, encoder, pooling="mean", normalize=False, **kwargs):
        inputs = dict(encoder.input)
        sequence = encoder(inputs)["sequence_output"]
        pooler = SentencePooling(pooling, normalize, name="sentence_pooling")
        outputs = {"embedding": pooler(sequence, inputs["input_mask"])}
        kwargs.setdefault("name", "bert_sentence_encoder")
        super().__init__(encoder, inputs, outputs, **kwargs)
        self.pooling = pooling
        self.normalize = normalize

    def _head_config(self):
        return {"pooling": self.pooling, "normalize": self.normalize}
