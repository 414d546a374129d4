"""Pretraining tasks, as sums the Trainer normalises: `PretrainingTask`, BERT's masked-LM +
next-sentence objective, and `MaskedLMTask`, the masked LM alone (RoBERTa's objective; the
paper's "No NSP" ablation).

Google's losses: MLM cross-entropy averaged over the real masked tokens (`masked_lm_weights`), NSP
cross-entropy averaged over the examples.
"""

import tensorflow as tf
from keras import ops

from keras_bert_impl.models.bert_masked_lm import BertMaskedLM
from keras_bert_impl.models.bert_pretrainer import BertPretrainer
from keras_bert_impl.tasks.base import (
    MODEL_INPUT_NAMES,
    SingleTextMixin,
    Task,
    correct_sum,
    sparse_cross_entropy_sum,
)
from tfrecord_tools import feature_specs


class PretrainingTask(Task):
    """Builds the pretrainer; maps a batch of Google's pretraining features to loss terms."""

    name = "pretrainer"
    google_head_prefixes = ("cls/predictions/", "cls/seq_relationship/")
    hf_architecture = "BertForPreTraining"
    keras_hub_class = "BertMaskedLM"  # without its next-sentence head
    serving_keep_tokens = ("[MASK]",)  # "the [MASK] sat" asks for a prediction at the mask
    loss_terms = {"masked_lm_loss": "masked_lm_weight", "next_sentence_loss": "examples"}
    metric_terms = {"masked_lm_accuracy": "masked_lm_weight", "next_sentence_accuracy": "examples"}
    # Whether the records and the model carry next-sentence labels and the NSP head.
    next_sentence_prediction = True

    def __init__(self, bert_config, max_seq_length=128, max_predictions_per_seq=20):
        super().__init__(bert_config, max_seq_length)
        self.max_predictions_per_seq = max_predictions_per_seq

    def feature_spec(self, is_training=True):
        return feature_specs.pretraining_spec(
            self.max_seq_length, self.max_predictions_per_seq, self.next_sentence_prediction
        )

    def build_model(self, encoder=None):
        return BertPretrainer(self.new_encoder(encoder))

    def model_inputs(self, features):
        return {name: features[name] for name in (*MODEL_INPUT_NAMES, "masked_lm_positions")}

    def denominators(self, features):
        weights = ops.cast(features["masked_lm_weights"], "float32")
        return {"masked_lm_weight": ops.sum(weights), "examples": ops.cast(ops.shape(weights)[0], "float32")}

    def numerators(self, model, features, training):
        outputs = model(self.model_inputs(features), training=training)
        terms = self._masked_lm_terms(outputs, features)
        nsp_logits = ops.cast(outputs["next_sentence_logits"], "float32")
        nsp_labels = ops.reshape(features["next_sentence_labels"], (-1,))
        terms["next_sentence_loss"] = sparse_cross_entropy_sum(nsp_labels, nsp_logits)
        terms["next_sentence_accuracy"] = correct_sum(nsp_labels, nsp_logits)
        return terms

    @staticmethod
    def _masked_lm_terms(outputs, features):
        weights = ops.cast(features["masked_lm_weights"], "float32")
        # Not cast to float32: [predictions, vocab] is the step's biggest tensor, and the fused
        # cross-entropy computes in float32 inside; the argmax of bfloat16 values is the same.
        mlm_logits = outputs["masked_lm_logits"]
        return {
            "masked_lm_loss": sparse_cross_entropy_sum(features["masked_lm_ids"], mlm_logits, weights),
            "masked_lm_accuracy": correct_sum(features["masked_lm_ids"], mlm_logits, weights),
        }

    def serving_inputs(self, features):
        return {name: features[name] for name in MODEL_INPUT_NAMES}

    def _all_positions(self, model, inputs):
        batch, length = tf.shape(inputs["input_ids"])[0], tf.shape(inputs["input_ids"])[1]
        positions = tf.tile(tf.range(length)[None, :], [batch, 1])
        return model({**inputs, "masked_lm_positions": positions}, training=False)

    def serving_outputs(self, model, inputs):
        """The next-sentence probabilities and the MLM's best token at every position."""
        outputs = self._all_positions(model, inputs)
        return {
            "next_sentence_probabilities": tf.nn.softmax(tf.cast(outputs["next_sentence_logits"], tf.float32)),
            "masked_lm_predictions": tf.argmax(outputs["masked_lm_logits"], axis=-1, output_type=tf.int32),
        }


class MaskedLMTask(SingleTextMixin, PretrainingTask):
    """The masked LM alone: records without next-sentence labels (create_pretraining_data.py
    --nonext_sentence_prediction), or Google's records with their labels ignored. Served one text
    at a time, as it was trained (one segment)."""

    name = "masked_lm"
    google_head_prefixes = ("cls/predictions/",)
    hf_architecture = "BertForMaskedLM"
    keras_hub_class = "BertMaskedLM"
    loss_terms = {"masked_lm_loss": "masked_lm_weight"}
    metric_terms = {"masked_lm_accuracy": "masked_lm_weight"}
    next_sentence_prediction = False

    def build_model(self, encoder=None):
        return BertMaskedLM(self.new_encoder(encoder))

    def denominators(self, features):
        return {"masked_lm_weight": ops.sum(ops.cast(features["masked_lm_weights"], "float32"))}

    def numerators(self, model, features, training):
        return self._masked_lm_terms(model(self.model_inputs(features), training=training), features)

    def serving_outputs(self, model, inputs):
        """The MLM's best token at every position."""
        outputs = self._all_positions(model, inputs)
        return {"masked_lm_predictions": tf.argmax(outputs["masked_lm_logits"], axis=-1, output_type=tf.int32)}
