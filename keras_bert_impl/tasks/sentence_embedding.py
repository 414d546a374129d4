"""`SentenceEmbeddingTask`: one vector per text (mean / cls / max pooling, optionally L2-normalised),
for semantic search and clustering with sentence-transformers models such as all-MiniLM-L6-v2."""

import tensorflow as tf

from keras_bert_common.errors import UsageError
from keras_bert_impl.layers.sentence_pooling import POOLING_MODES
from keras_bert_impl.models.bert_sentence_encoder import BertSentenceEncoder
from keras_bert_impl.tasks.base import SingleTextMixin, Task
from tfrecord_tools import feature_specs


class SentenceEmbeddingTask(SingleTextMixin, Task):
    """Serves `embedding` [B, H] for one text. The encoder's weights, no head: it converts to
    transformers' BertModel (with sentence-transformers' pooling files) and keras-hub's backbone."""

    name = "sentence_embedding"
    hf_architecture = "BertModel"
    keras_hub_class = "BertBackbone"

    def __init__(self, bert_config, max_seq_length=128, pooling="mean", normalize_embeddings=False):
        if pooling not in POOLING_MODES:
            raise UsageError(f"--pooling={pooling}: use one of {', '.join(POOLING_MODES)}")
        super().__init__(bert_config, max_seq_length)
        self.pooling = pooling
        self.normalize_embeddings = bool(normalize_embeddings)

    def feature_spec(self, is_training=True):
        return feature_specs.input_spec(self.max_seq_length)

    def build_model(self, encoder=None):
        return BertSentenceEncoder(self.new_encoder(encoder), self.pooling, self.normalize_embeddings)

    def numerators(self, model, features, training):
        raise NotImplementedError("sentence embeddings are served, not trained here; fine-tune a task on the encoder")

    def serving_outputs(self, model, inputs):
        return {"embedding": tf.cast(model(inputs, training=False)["embedding"], tf.float32)}
