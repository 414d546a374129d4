"""`PretrainingTask`: BERT's masked-LM + next-sentence objective, as sums the trainer normalises.

Losses and metrics are returned as numerators with the name of their denominator, so that the
trainer can divide by denominators summed over all replicas: any number of devices then computes
exactly the loss of one device on the global batch (Google's: MLM cross-entropy averaged over the
real masked tokens, NSP cross-entropy averaged over the examples).
"""

import keras
from keras import ops

from keras_bert_impl.bert_encoder import BertEncoder
from keras_bert_impl.models.bert_pretrainer import BertPretrainer
from tfrecord_tools import feature_specs

MODEL_INPUTS = ("input_ids", "input_mask", "segment_ids", "masked_lm_positions")


class PretrainingTask:
    """Builds the pretrainer; maps a batch of Google's pretraining features to loss terms."""

    # Loss terms and metrics: name -> denominator name.
    loss_terms = {"masked_lm_loss": "masked_lm_weight", "next_sentence_loss": "examples"}
    metric_terms = {"masked_lm_accuracy": "masked_lm_weight", "next_sentence_accuracy": "examples"}

    def __init__(self, bert_config, max_seq_length=128, max_predictions_per_seq=20):
        self.bert_config = bert_config
        self.max_seq_length = max_seq_length
        self.max_predictions_per_seq = max_predictions_per_seq

    def feature_spec(self):
        return feature_specs.pretraining_spec(self.max_seq_length, self.max_predictions_per_seq)

    def build_model(self):
        return BertPretrainer(BertEncoder.from_bert_config(self.bert_config))

    def denominators(self, features):
        weights = ops.cast(features["masked_lm_weights"], "float32")
        return {"masked_lm_weight": ops.sum(weights), "examples": ops.cast(ops.shape(weights)[0], "float32")}

    def numerators(self, model, features, training):
        outputs = model({name: features[name] for name in MODEL_INPUTS}, training=training)
        weights = ops.cast(features["masked_lm_weights"], "float32")
        mlm_logits = ops.cast(outputs["masked_lm_logits"], "float32")
        mlm_labels = features["masked_lm_ids"]
        mlm_loss = keras.losses.sparse_categorical_crossentropy(mlm_labels, mlm_logits, from_logits=True)
        nsp_logits = ops.cast(outputs["next_sentence_logits"], "float32")
        nsp_labels = ops.reshape(features["next_sentence_labels"], (-1,))
        nsp_loss = keras.losses.sparse_categorical_crossentropy(nsp_labels, nsp_logits, from_logits=True)
        mlm_correct = ops.cast(ops.equal(ops.argmax(mlm_logits, -1), ops.cast(mlm_labels, "int64")), "float32")
        nsp_correct = ops.cast(ops.equal(ops.argmax(nsp_logits, -1), ops.cast(nsp_labels, "int64")), "float32")
        return {
            "masked_lm_loss": ops.sum(mlm_loss * weights),
            "next_sentence_loss": ops.sum(nsp_loss),
            "masked_lm_accuracy": ops.sum(mlm_correct * weights),
            "next_sentence_accuracy": ops.sum(nsp_correct),
        }
