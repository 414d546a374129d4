"""`TaggingTask`: a label per token (CoNLL-2003 NER), on each word's first piece (the paper's)."""

import numpy as np
import tensorflow as tf
from keras import ops

from keras_bert_common.errors import UsageError
from keras_bert_impl.models.bert_token_classifier import BertTokenClassifier
from keras_bert_impl.tasks.base import (
    SingleTextMixin,
    Task,
    class_outputs,
    correct_sum,
    cross_entropy,
    sparse_cross_entropy_sum,
)
from tfrecord_tools import feature_specs


class TaggingTask(SingleTextMixin, Task):
    """Losses and accuracy over the tokens whose `label_weights` is 1 (first pieces)."""

    name = "ner"
    google_head_prefixes = ("cls/ner/",)
    hf_architecture = "BertForTokenClassification"
    label_bias = "cls/ner/output_bias"
    loss_terms = {"loss_sum": "label_weight"}
    metric_terms = {"accuracy": "label_weight"}
    sequence_output_names = ("logits",)

    def __init__(self, bert_config, max_seq_length=128, label_names=None):
        if not label_names:
            raise UsageError("a tagger needs its tag names (label_names)")
        super().__init__(bert_config, max_seq_length, label_names)

    def feature_spec(self, is_training=True):
        return feature_specs.tagging_spec(self.max_seq_length)

    def build_model(self, encoder=None):
        return BertTokenClassifier(self.new_encoder(encoder), num_classes=len(self.label_names))

    def denominators(self, features):
        return {"label_weight": ops.sum(ops.cast(features["label_weights"], "float32"))}

    def numerators(self, model, features, training):
        logits = ops.cast(model(self.model_inputs(features), training=training)["logits"], "float32")
        weights = ops.cast(features["label_weights"], "float32")
        return {
            "loss_sum": sparse_cross_entropy_sum(features["label_ids"], logits, weights),
            "accuracy": correct_sum(features["label_ids"], logits, weights),
        }

    def evaluate(self, outputs, features):
        weights = features["label_weights"]
        gold, logits = features["label_ids"], outputs["logits"]
        loss = cross_entropy(logits, gold, weights)
        accuracy = float(np.sum((logits.argmax(-1) == gold) * weights) / max(weights.sum(), 1.0))
        return {"eval_loss": loss, "loss": loss, "eval_token_accuracy": accuracy}

    def eval_metric_names(self):
        return ("eval_loss", "loss", "eval_token_accuracy")

    def serving_outputs(self, model, inputs):
        logits = tf.cast(model(inputs, training=False)["logits"], tf.float32)
        return class_outputs(logits, self.label_names, "tag_ids", "tags")
