"""`FineTuningTask`: the paper's fine-tuning set-ups as loss terms for `Trainer`.

Each kind (classification, regression, SQuAD span, token tagging, multiple choice) builds its
task model on an encoder and returns loss/metric numerators with the name of their denominator,
which the trainer sums over replicas (see `PretrainingTask`).
"""

import keras
from keras import ops

from keras_bert_impl.bert_encoder import BertEncoder
from keras_bert_impl.models.bert_classifier import BertClassifier
from keras_bert_impl.models.bert_multiple_choice import BertMultipleChoice
from keras_bert_impl.models.bert_span_labeler import BertSpanLabeler
from keras_bert_impl.models.bert_token_classifier import BertTokenClassifier
from tfrecord_tools import feature_specs

KINDS = ("classification", "regression", "squad", "tagging", "multiple_choice")
_INPUTS = ("input_ids", "input_mask", "segment_ids")


class FineTuningTask:
    """`kind` is one of KINDS; `num_classes` for classification and tagging."""

    def __init__(self, kind, bert_config, max_seq_length, num_classes=None, num_choices=4):
        if kind not in KINDS:
            raise ValueError(f"unknown task kind {kind!r}; use one of {', '.join(KINDS)}")
        self.kind = kind
        self.bert_config = bert_config
        self.max_seq_length = max_seq_length
        self.num_classes = num_classes
        self.num_choices = num_choices
        denominator = "label_weight" if kind == "tagging" else "examples"
        self.loss_terms = {"loss_sum": denominator}
        self.metric_terms = {} if kind in ("regression", "squad") else {"accuracy": denominator}

    def feature_spec(self, is_training=True):
        length = self.max_seq_length
        if self.kind in ("classification", "regression"):
            return feature_specs.classification_spec(length, is_regression=self.kind == "regression")
        if self.kind == "squad":
            return feature_specs.squad_spec(length, is_training)
        if self.kind == "tagging":
            return feature_specs.tagging_spec(length)
        return feature_specs.multiple_choice_spec(length, self.num_choices)

    def build_model(self):
        encoder = BertEncoder.from_bert_config(self.bert_config)
        if self.kind in ("classification", "regression"):
            return BertClassifier(encoder, num_classes=1 if self.kind == "regression" else self.num_classes)
        if self.kind == "squad":
            return BertSpanLabeler(encoder)
        if self.kind == "tagging":
            return BertTokenClassifier(encoder, num_classes=self.num_classes)
        return BertMultipleChoice(encoder, num_choices=self.num_choices)

    def model_inputs(self, features):
        inputs = {name: features[name] for name in _INPUTS}
        if self.kind == "multiple_choice":
            inputs = {name: ops.reshape(value, (-1, self.num_choices, self.max_seq_length)) for name, value in inputs.items()}
        return inputs

    def _example_weights(self, features):
        if "is_real_example" in features:
            return ops.cast(ops.reshape(features["is_real_example"], (-1,)), "float32")
        return ops.ones((ops.shape(features["input_ids"])[0],), "float32")

    def denominators(self, features):
        if self.kind == "tagging":
            return {"label_weight": ops.sum(ops.cast(features["label_weights"], "float32"))}
        return {"examples": ops.sum(self._example_weights(features))}

    def numerators(self, model, features, training):
        outputs = model(self.model_inputs(features), training=training)
        weights = self._example_weights(features)
        if self.kind == "squad":
            start = keras.losses.sparse_categorical_crossentropy(
                ops.reshape(features["start_positions"], (-1,)), ops.cast(outputs["start_logits"], "float32"), from_logits=True)
            end = keras.losses.sparse_categorical_crossentropy(
                ops.reshape(features["end_positions"], (-1,)), ops.cast(outputs["end_logits"], "float32"), from_logits=True)
            return {"loss_sum": ops.sum((start + end) / 2.0)}
        logits = ops.cast(outputs["logits"], "float32")
        if self.kind == "regression":
            labels = ops.cast(ops.reshape(features["label_ids"], (-1,)), "float32")
            return {"loss_sum": ops.sum(ops.square(ops.reshape(logits, (-1,)) - labels) * weights)}
        if self.kind == "tagging":
            weights = ops.cast(features["label_weights"], "float32")
            labels = features["label_ids"]
        else:
            labels = ops.reshape(features["label_ids"], (-1,))
        loss = keras.losses.sparse_categorical_crossentropy(labels, logits, from_logits=True)
        correct = ops.cast(ops.equal(ops.argmax(logits, -1), ops.cast(labels, "int64")), "float32")
        return {"loss_sum": ops.sum(loss * weights), "accuracy": ops.sum(correct * weights)}
