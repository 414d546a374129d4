"""`ClassificationTask` and `RegressionTask`: sentence (pair) classification and regression on
the pooled output (Google's run_classifier.py: GLUE, XNLI, any TSV)."""

import numpy as np
import tensorflow as tf
from keras import ops

from keras_bert_common.errors import UsageError
from keras_bert_impl.evaluation.metrics import (
    classification_metric_names,
    classification_metrics,
    regression_metrics,
)
from keras_bert_impl.models.bert_classifier import BertClassifier
from keras_bert_impl.tasks.base import (
    Task,
    class_outputs,
    correct_sum,
    cross_entropy,
    softmax,
    sparse_cross_entropy_sum,
)
from tfrecord_tools import feature_specs


class ClassificationTask(Task):
    """`label_names` in id order; `task_name` (GLUE's, e.g. MRPC) picks the official metrics."""

    name = "classifier"
    google_head_prefixes = ("output_",)  # Google's run_classifier.py: output_weights, output_bias
    hf_architecture = "BertForSequenceClassification"
    keras_hub_class = "BertTextClassifier"
    label_bias = "output_bias"
    loss_terms = {"loss_sum": "examples"}
    metric_terms = {"accuracy": "examples"}

    def __init__(self, bert_config, max_seq_length=128, label_names=None, task_name=None):
        if not label_names or len(label_names) < 2:
            raise UsageError(
                f"a classifier needs two or more labels, got {label_names!r}; for one score use --model_type=regression"
            )
        super().__init__(bert_config, max_seq_length, label_names)
        self.task_name = task_name

    @property
    def num_classes(self):
        return len(self.label_names)

    def feature_spec(self, is_training=True):
        return feature_specs.classification_spec(self.max_seq_length)

    def build_model(self, encoder=None):
        return BertClassifier(self.new_encoder(encoder), num_classes=self.num_classes)

    def numerators(self, model, features, training):
        logits = ops.cast(model(self.model_inputs(features), training=training)["logits"], "float32")
        labels = ops.reshape(features["label_ids"], (-1,))
        weights = self.example_weights(features)
        return {
            "loss_sum": sparse_cross_entropy_sum(labels, logits, weights),
            "accuracy": correct_sum(labels, logits, weights),
        }

    def evaluate(self, outputs, features):
        logits, gold = outputs["logits"], features["label_ids"][:, 0].astype(np.int64)
        loss = cross_entropy(logits, gold)
        return {"eval_loss": loss, "loss": loss, **classification_metrics(self.task_name, gold, logits.argmax(-1))}

    def eval_metric_names(self):
        return glue_eval_metric_names(self.task_name)

    def prediction_rows(self, outputs):
        """test_results.tsv: the class probabilities of each example (Google's format)."""
        return softmax(outputs["logits"])

    def serving_outputs(self, model, inputs):
        logits = tf.cast(model(inputs, training=False)["logits"], tf.float32)
        return class_outputs(logits, self.label_names, "label_ids", "labels")


def glue_eval_metric_names(task_name):
    """What the task of `task_name` (a GLUE name, or any other: accuracy) evaluates: the runner
    checks --keep_best_checkpoint against it before writing data."""
    return ("eval_loss", "loss", *classification_metric_names(task_name))


class RegressionTask(Task):
    """One score per example (STS-B), squared error; Pearson and Spearman correlation."""

    name = "regression"
    # Google's classifier head with one output; transformers' BertForSequenceClassification with
    # num_labels=1 (one id2label entry) is its regression, as run_glue.py trains STS-B.
    google_head_prefixes = ("output_",)
    hf_architecture = "BertForSequenceClassification"
    label_bias = "output_bias"
    num_outputs = 1
    loss_terms = {"loss_sum": "examples"}

    def __init__(self, bert_config, max_seq_length=128):  # one score, no label names
        super().__init__(bert_config, max_seq_length)

    def feature_spec(self, is_training=True):
        return feature_specs.classification_spec(self.max_seq_length, is_regression=True)

    def build_model(self, encoder=None):
        return BertClassifier(self.new_encoder(encoder), num_classes=1)

    def numerators(self, model, features, training):
        predictions = ops.reshape(
            ops.cast(model(self.model_inputs(features), training=training)["logits"], "float32"), (-1,)
        )
        labels = ops.cast(ops.reshape(features["label_ids"], (-1,)), "float32")
        return {"loss_sum": ops.sum(ops.square(predictions - labels) * self.example_weights(features))}

    def evaluate(self, outputs, features):
        predicted, gold = outputs["logits"][:, 0].astype(np.float64), features["label_ids"][:, 0].astype(np.float64)
        loss = float(np.mean((predicted - gold) ** 2))
        return {"eval_loss": loss, "loss": loss, **regression_metrics(gold, predicted)}

    def eval_metric_names(self):
        return glue_eval_metric_names("STS-B")

    def prediction_rows(self, outputs):
        return outputs["logits"][:, :1]

    def serving_outputs(self, model, inputs):
        return {"predictions": tf.cast(model(inputs, training=False)["logits"], tf.float32)[:, 0]}
