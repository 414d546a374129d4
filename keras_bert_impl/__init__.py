"""BERT in Keras 3: encoder, task heads, Google checkpoint compatibility."""

from keras_bert_impl.bert_config import BertConfig
from keras_bert_impl.bert_encoder import BertEncoder
from keras_bert_impl.errors import BertConfigError, CheckpointMismatchError

__all__ = ["BertConfig", "BertEncoder", "BertConfigError", "CheckpointMismatchError"]
