"""`Task`: the one contract between the data, the model, the `Trainer`, the runners and export.

A task says, for one kind of BERT problem:
- **data**: `feature_spec(is_training)`, the TFRecord features it reads (from
  `tfrecord_tools.feature_specs`, shared with the writers);
- **model**: `build_model(encoder)`, its task model on a given encoder, and `model_inputs(features)`,
  the model's inputs taken from a batch of features;
- **training**: `loss_terms` and `metric_terms`, each a mapping from a numerator name to the name
  of its denominator; `numerators(model, features, training)` returns the sums and
  `denominators(features)` the counts. The Trainer sums both over all replicas before dividing, so
  any number of devices computes the loss of one device on the global batch; the loss is the sum
  of the loss terms;
- **length**: `sequence_lengths(features)`, each example's real length, and
  `cut_to_length(features, length)`, the features cut to a shorter length (length-bucketed
  batches, `training.bucketing`); `sequence_output_names`, the outputs with a position axis;
- **evaluation**: `evaluate(outputs, features)`, the task's metrics in numpy from the model's
  outputs on a whole split (`eval_loss` and e.g. accuracy), and `eval_metric_names()`, their
  names (so `--keep_best_checkpoint` is checked before training); runners add what needs the raw data;
  `prediction_rows(outputs)`, the rows of `--do_predict`'s test_results.tsv;
- **serving**: `text_signature()` and `pack_text(packer, ...)` (what raw text a SavedModel takes and
  how it becomes model inputs) and `serving_outputs(model, inputs)` (what it returns).

Adding a task means writing one subclass (and, for the command-line tools, one row in
`tasks.registry`); nothing else branches on the kind of task.
"""

import abc
from typing import ClassVar, Mapping

import numpy as np
import tensorflow as tf
from keras import ops

from keras_bert_impl.layers.fused import sparse_softmax_cross_entropy
from keras_bert_impl.models.bert_encoder import BertEncoder

MODEL_INPUT_NAMES = ("input_ids", "input_mask", "segment_ids")


class Task(abc.ABC):
    """Base of every task; see the module docstring for the contract."""

    # The registry name (`--model_type`, meta.json's `model_type`).
    name: ClassVar[str] = None
    # numerator name -> denominator name; the loss is the sum of the loss terms.
    loss_terms: ClassVar[Mapping[str, str]] = {}
    metric_terms: ClassVar[Mapping[str, str]] = {}
    # Conversion, read by the converters and `--model_type` choices (nothing else names a kind):
    # the Google-name prefixes of the head's weights (a checkpoint holding all of them holds this
    # head; none for the encoder alone), the transformers architecture and keras-hub task class it
    # converts to (None: not there), and the head's bias whose length counts the labels.
    google_head_prefixes: ClassVar[tuple] = ()
    hf_architecture: ClassVar[str] = None
    keras_hub_class: ClassVar[str] = None
    label_bias: ClassVar[str] = None
    # How many outputs that head has when the task fixes it (one score); None: one per label name.
    num_outputs: ClassVar[int] = None
    # Serving: vocabulary entries a raw text may hold that stay one token (`[MASK]` for fill-mask).
    serving_keep_tokens: ClassVar[tuple] = ()

    def __init__(self, bert_config, max_seq_length=128, label_names=None):
        self.bert_config = bert_config
        self.max_seq_length = max_seq_length
        self.label_names = list(label_names) if label_names else None

    # ---- data and model ---------------------------------------------------------------------

    @abc.abstractmethod
    def feature_spec(self, is_training=True):
        """{feature name: tf.io.FixedLenFeature} of this task's TFRecords."""

    @abc.abstractmethod
    def build_model(self, encoder=None):
        """The task model on `encoder` (a new one from `bert_config` when None)."""

    def new_encoder(self, encoder=None):
        return encoder if encoder is not None else BertEncoder.from_bert_config(self.bert_config)

    def model_inputs(self, features):
        return {name: features[name] for name in MODEL_INPUT_NAMES}

    # ---- training -----------------------------------------------------------------------------

    def example_weights(self, features):
        """1 per real example; 0 for the padding examples a fixed-size batch may carry."""
        if "is_real_example" in features:
            return ops.cast(ops.reshape(features["is_real_example"], (-1,)), "float32")
        return ops.ones((ops.shape(features["input_ids"])[0],), "float32")

    def denominators(self, features):
        return {"examples": ops.sum(self.example_weights(features))}

    @abc.abstractmethod
    def numerators(self, model, features, training):
        """{term name: sum over the batch} for every loss and metric term."""

    # ---- length ---------------------------------------------------------------------------------

    # Model outputs with a position axis ([B, T, ...]): filled beyond each input's length.
    sequence_output_names: ClassVar[tuple] = ()

    def sequence_features(self):
        """Names of the features with a position axis (their last axis is max_seq_length)."""
        spec = self.feature_spec(is_training=True) | self.feature_spec(is_training=False)
        return [name for name, feature in spec.items() if list(feature.shape) == [self.max_seq_length]]

    def sequence_lengths(self, features):
        """Each example's real length (its `input_mask` ones): [B] for a batch, [] for one example."""
        return tf.reduce_sum(tf.cast(tf.not_equal(features["input_mask"], 0), tf.int32), axis=-1)

    def cut_to_length(self, features, length):
        """`features` with every position axis cut to its first `length` positions."""
        names = set(self.sequence_features())
        return {name: value[..., :length] if name in names else value for name, value in features.items()}

    # ---- evaluation ---------------------------------------------------------------------------

    def evaluate(self, outputs, features):
        """Metrics of a whole split from numpy `outputs` and `features` (in record order)."""
        return {}

    def eval_metric_names(self):
        """The keys `evaluate` returns."""
        return ()

    def prediction_rows(self, outputs):
        """--do_predict's test_results.tsv: one row of numbers per example, from numpy `outputs`
        (run_finetuning calls it; tasks with their own prediction files, as SQuAD, need not)."""
        raise NotImplementedError(f"{type(self).__name__} writes no test_results.tsv rows")

    # ---- serving ------------------------------------------------------------------------------

    def text_signature(self):
        """The raw-text inputs of `serving_default`: a sentence pair by default."""
        return [tf.TensorSpec([None], tf.string, name="text_a"), tf.TensorSpec([None], tf.string, name="text_b")]

    def pack_text(self, packer, text_a, text_b=None):
        """Raw text -> packed [B, T] tensors (model inputs, tokens, offsets)."""
        return packer.pack(text_a, text_b)

    def serving_outputs(self, model, inputs):
        """The SavedModel's outputs for model `inputs` (float32 logits and what derives from them)."""
        outputs = model(inputs, training=False)
        return {name: tf.cast(value, tf.float32) for name, value in outputs.items() if name != "encoder_outputs"}

    def serving_inputs(self, features):
        """Model inputs from the features `serve_examples` parses (`model_inputs` by default)."""
        return self.model_inputs(features)

    def serving_example_spec(self):
        """The features `serve_examples` parses: the model inputs of the TFRecord spec."""
        spec = self.feature_spec(is_training=False)
        return {name: spec[name] for name in MODEL_INPUT_NAMES}


class SingleTextMixin:
    """Tasks served one text at a time (`text_a` only)."""

    def text_signature(self):
        return [tf.TensorSpec([None], tf.string, name="text_a")]

    def pack_text(self, packer, text_a):
        return packer.pack(text_a)


def class_outputs(logits, label_names, id_key, name_key):
    """Serving outputs of a softmax head: logits, probabilities, the argmax id and its name."""
    ids = tf.argmax(logits, axis=-1, output_type=tf.int32)
    outputs = {"logits": logits, "probabilities": tf.nn.softmax(logits), id_key: ids}
    if label_names:
        outputs[name_key] = tf.gather(tf.constant(label_names), ids)
    return outputs


def softmax(logits):
    logits = np.asarray(logits, np.float64)
    exps = np.exp(logits - logits.max(axis=-1, keepdims=True))
    return exps / exps.sum(axis=-1, keepdims=True)


def cross_entropy(logits, labels, weights=None):
    """Mean (or `weights`-weighted mean) negative log-likelihood of `labels`, in float64."""
    probabilities = softmax(logits)
    nll = -np.log(np.take_along_axis(probabilities, np.asarray(labels)[..., None], axis=-1)[..., 0] + 1e-12)
    if weights is None:
        return float(np.mean(nll))
    weights = np.asarray(weights, np.float64)
    return float(np.sum(nll * weights) / max(np.sum(weights), 1e-12))


def sparse_cross_entropy_sum(labels, logits, weights=None):
    """Sum of the cross-entropy of integer `labels` under `logits` (computed in float32 whatever
    the logits' dtype), optionally weighted."""
    loss = sparse_softmax_cross_entropy(labels, logits)
    return ops.sum(loss if weights is None else loss * weights)


def correct_sum(labels, logits, weights=None):
    """Number of argmax predictions equal to `labels` (weighted)."""
    correct = ops.cast(ops.equal(ops.argmax(logits, -1), ops.cast(labels, "int64")), "float32")
    return ops.sum(correct if weights is None else correct * weights)
