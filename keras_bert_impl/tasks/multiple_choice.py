"""`MultipleChoiceTask`: one score per choice, softmax over the choices (SWAG, the paper's set-up)."""

import numpy as np
import tensorflow as tf
from keras import ops

from keras_bert_impl.models.bert_multiple_choice import BertMultipleChoice
from keras_bert_impl.tasks.base import (
    MODEL_INPUT_NAMES,
    Task,
    class_outputs,
    correct_sum,
    cross_entropy,
    sparse_cross_entropy_sum,
)
from tfrecord_tools import feature_specs


class MultipleChoiceTask(Task):
    """Records hold the choices' sequences one after another ([C * T]); the model takes [B, C, T].
    Served as a context (`text_a` [B]) and its endings (`text_b` [B, C])."""

    name = "multiple_choice"
    google_head_prefixes = ("cls/multiple_choice/",)
    hf_architecture = "BertForMultipleChoice"
    loss_terms = {"loss_sum": "examples"}
    metric_terms = {"accuracy": "examples"}

    def __init__(self, bert_config, max_seq_length=128, num_choices=4):
        super().__init__(bert_config, max_seq_length)
        self.num_choices = num_choices

    def feature_spec(self, is_training=True):
        return feature_specs.multiple_choice_spec(self.max_seq_length, self.num_choices)

    def build_model(self, encoder=None):
        return BertMultipleChoice(self.new_encoder(encoder), num_choices=self.num_choices)

    def model_inputs(self, features):
        return {
            name: ops.reshape(features[name], (ops.shape(features[name])[0], self.num_choices, -1))
            for name in MODEL_INPUT_NAMES
        }

    def _by_choice(self, value):
        """[..., C * T] -> [..., C, T]."""
        return tf.reshape(value, tf.concat([tf.shape(value)[:-1], [self.num_choices, -1]], 0))

    def sequence_lengths(self, features):
        """The longest choice of each example."""
        choices = tf.cast(tf.not_equal(self._by_choice(features["input_mask"]), 0), tf.int32)
        return tf.reduce_max(tf.reduce_sum(choices, axis=-1), axis=-1)

    def cut_to_length(self, features, length):
        """Every choice cut to `length` ([..., C * length])."""

        def cut(value):
            return tf.reshape(self._by_choice(value)[..., :length], tf.concat([tf.shape(value)[:-1], [-1]], 0))

        return {name: cut(value) if name in MODEL_INPUT_NAMES else value for name, value in features.items()}

    def numerators(self, model, features, training):
        logits = ops.cast(model(self.model_inputs(features), training=training)["logits"], "float32")
        labels = ops.reshape(features["label_ids"], (-1,))
        return {"loss_sum": sparse_cross_entropy_sum(labels, logits), "accuracy": correct_sum(labels, logits)}

    def evaluate(self, outputs, features):
        gold = features["label_ids"][:, 0].astype(np.int64)
        loss = cross_entropy(outputs["logits"], gold)
        return {"eval_loss": loss, "loss": loss, "eval_accuracy": float(np.mean(outputs["logits"].argmax(-1) == gold))}

    def eval_metric_names(self):
        return ("eval_loss", "loss", "eval_accuracy")

    def text_signature(self):
        return [
            tf.TensorSpec([None], tf.string, name="text_a"),
            tf.TensorSpec([None, self.num_choices], tf.string, name="text_b"),
        ]

    def pack_text(self, packer, text_a, text_b):
        text_a = packer.same_rows(text_a, text_b)
        packed = packer.pack(tf.repeat(text_a, self.num_choices), tf.reshape(text_b, [-1]))
        return {name: tf.reshape(value, [-1, self.num_choices, tf.shape(value)[-1]]) for name, value in packed.items()}

    def serving_outputs(self, model, inputs):
        logits = tf.cast(model(inputs, training=False)["logits"], tf.float32)
        return class_outputs(logits, None, "label_ids", None)
