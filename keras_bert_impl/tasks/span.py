"""`SpanTask`: SQuAD v1.1/v2.0 answer spans, start and end logits per token (Google's run_squad.py)."""

import tensorflow as tf
from keras import ops

from keras_bert_impl.models.bert_span_labeler import BertSpanLabeler
from keras_bert_impl.tasks.base import Task, sparse_cross_entropy_sum
from tfrecord_tools import feature_specs


class SpanTask(Task):
    """Loss: the mean of the start and end cross-entropies (Google's). Served as a question
    (`text_a`, at most `max_query_length` tokens) and a context (`text_b`)."""

    name = "squad"
    google_head_prefixes = ("cls/squad/",)
    hf_architecture = "BertForQuestionAnswering"
    loss_terms = {"loss_sum": "examples"}
    sequence_output_names = ("start_logits", "end_logits")

    def __init__(self, bert_config, max_seq_length=384, max_query_length=64):
        super().__init__(bert_config, max_seq_length)
        self.max_query_length = max_query_length

    def feature_spec(self, is_training=True):
        return feature_specs.squad_spec(self.max_seq_length, is_training)

    def build_model(self, encoder=None):
        return BertSpanLabeler(self.new_encoder(encoder))

    def numerators(self, model, features, training):
        outputs = model(self.model_inputs(features), training=training)
        start = sparse_cross_entropy_sum(ops.reshape(features["start_positions"], (-1,)), outputs["start_logits"])
        end = sparse_cross_entropy_sum(ops.reshape(features["end_positions"], (-1,)), outputs["end_logits"])
        return {"loss_sum": (start + end) / 2.0}

    def pack_text(self, packer, text_a, text_b=None):
        return packer.pack(text_a, text_b, max_query_length=self.max_query_length)

    def serving_outputs(self, model, inputs):
        outputs = model(inputs, training=False)
        return {name: tf.cast(outputs[name], tf.float32) for name in ("start_logits", "end_logits")}
