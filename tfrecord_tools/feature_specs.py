"""Every TFRecord feature spec, in one place, shared by the writers and the tf.data readers.

Names are Google's (`input_ids`, `input_mask`, `segment_ids`, `masked_lm_positions`, ...);
readers also accept tf-models-official's `input_word_ids` / `input_type_ids`.
"""

import tensorflow as tf

from keras_bert_common.errors import UsageError

# tf-models-official name -> Google name.
MODEL_GARDEN_ALIASES = {"input_word_ids": "input_ids", "input_type_ids": "segment_ids"}


def _ints(length):
    return tf.io.FixedLenFeature([length], tf.int64)


def _floats(length):
    return tf.io.FixedLenFeature([length], tf.float32)


def input_spec(max_seq_length):
    """The model inputs alone (what every task's records hold)."""
    return {
        "input_ids": _ints(max_seq_length),
        "input_mask": _ints(max_seq_length),
        "segment_ids": _ints(max_seq_length),
    }


# The next-sentence label of a pretraining instance: absent from masked-LM-only records.
NEXT_SENTENCE_LABELS = "next_sentence_labels"


def pretraining_spec(max_seq_length, max_predictions_per_seq, next_sentence_prediction=True):
    """Google's run_pretraining.py / create_pretraining_data.py schema; without
    `next_sentence_labels` for masked-LM-only records (create_pretraining_data.py
    --next_sentence_prediction=false: RoBERTa's inputs, one segment)."""
    spec = {
        "input_ids": _ints(max_seq_length),
        "input_mask": _ints(max_seq_length),
        "segment_ids": _ints(max_seq_length),
        "masked_lm_positions": _ints(max_predictions_per_seq),
        "masked_lm_ids": _ints(max_predictions_per_seq),
        "masked_lm_weights": _floats(max_predictions_per_seq),
    }
    if next_sentence_prediction:
        spec[NEXT_SENTENCE_LABELS] = _ints(1)
    return spec


def dynamic_pretraining_spec(max_seq_length, next_sentence_prediction=True):
    """create_pretraining_data.py --dynamic_masking: each instance once and unmasked. The training
    input pipeline masks it anew each time it is read (`dynamic_masking`) and hands the model
    `pretraining_spec`'s features. `mlm_candidates` is 0 where no mask may go ([CLS], [SEP],
    padding), 1 on the first piece of a word and 2 on its later pieces (whole-word masking);
    `mask_token_id` is the vocabulary's [MASK] id, which run_pretraining has no other way to know."""
    spec = {
        "input_ids": _ints(max_seq_length),
        "input_mask": _ints(max_seq_length),
        "segment_ids": _ints(max_seq_length),
        "mlm_candidates": _ints(max_seq_length),
        "mask_token_id": _ints(1),
    }
    if next_sentence_prediction:
        spec[NEXT_SENTENCE_LABELS] = _ints(1)
    return spec


def is_dynamic_pretraining(feature_names):
    """Whether records with these feature names are unmasked (dynamic masking) ones."""
    return "mlm_candidates" in feature_names


def has_next_sentence_labels(feature_names):
    """Whether pretraining records with these feature names carry next-sentence labels."""
    return NEXT_SENTENCE_LABELS in feature_names


def classification_spec(max_seq_length, is_regression=False):
    """Google's run_classifier.py schema (`label_ids`, `is_real_example`); float labels for STS-B."""
    return {
        "input_ids": _ints(max_seq_length),
        "input_mask": _ints(max_seq_length),
        "segment_ids": _ints(max_seq_length),
        "label_ids": _floats(1) if is_regression else _ints(1),
        "is_real_example": _ints(1),
    }


def squad_spec(max_seq_length, is_training):
    """Google's run_squad.py schema: positions and `is_impossible` only in training files."""
    spec = {
        "unique_ids": _ints(1),
        "input_ids": _ints(max_seq_length),
        "input_mask": _ints(max_seq_length),
        "segment_ids": _ints(max_seq_length),
    }
    if is_training:
        spec.update(start_positions=_ints(1), end_positions=_ints(1), is_impossible=_ints(1))
    return spec


def tagging_spec(max_seq_length):
    """Token classification (NER): a label per token, `label_weights` 1 on each word's first piece."""
    return {
        "input_ids": _ints(max_seq_length),
        "input_mask": _ints(max_seq_length),
        "segment_ids": _ints(max_seq_length),
        "label_ids": _ints(max_seq_length),
        "label_weights": _floats(max_seq_length),
    }


def layer_features_spec(max_seq_length):
    """Feature-based NER's cache (`run_ner --feature_based`): a tagging example's frozen encoder
    layers as `layer_features`, the float16 bytes of [length, K, H] over its real pieces, with
    its tagging labels."""
    return {
        "layer_features": tf.io.FixedLenFeature([], tf.string),
        "input_mask": _ints(max_seq_length),
        "label_ids": _ints(max_seq_length),
        "label_weights": _floats(max_seq_length),
    }


def multiple_choice_spec(max_seq_length, num_choices):
    """SWAG: the choices' sequences one after another ([num_choices * max_seq_length])."""
    return {
        "input_ids": _ints(num_choices * max_seq_length),
        "input_mask": _ints(num_choices * max_seq_length),
        "segment_ids": _ints(num_choices * max_seq_length),
        "label_ids": _ints(1),
    }


def detect_feature_names(file_path):
    """The feature names of a TFRecord file's first record (Google's or Model Garden's)."""
    try:
        for record in tf.data.TFRecordDataset(file_path).take(1):
            return set(tf.train.Example.FromString(record.numpy()).features.feature)
    except tf.errors.OpError as error:
        raise UsageError(
            f"{file_path}: not a TFRecord file ({error.message.split('}}')[-1].strip()}); recreate it"
        ) from None
    except Exception as error:  # noqa: BLE001 -- a record that is no tf.train.Example
        raise UsageError(f"{file_path}: its records are not tf.train.Examples ({error}); recreate it") from None
    return set()


def parse_fn(spec, available_names=None):
    """A function parsing serialized Examples by `spec`, reading Model Garden's names where the
    files use them, returning int32 for int64 features (what TPUs and our models take)."""
    renamed = {}
    for google_name, feature_spec in spec.items():
        file_name = google_name
        if available_names is not None and google_name not in available_names:
            file_name = next(
                (
                    alias
                    for alias, name in MODEL_GARDEN_ALIASES.items()
                    if name == google_name and alias in available_names
                ),
                google_name,
            )
        renamed[file_name] = (google_name, feature_spec)

    def parse(serialized):
        parsed = tf.io.parse_example(serialized, {file_name: s for file_name, (_, s) in renamed.items()})
        out = {}
        for file_name, (google_name, _) in renamed.items():
            value = parsed[file_name]
            out[google_name] = tf.cast(value, tf.int32) if value.dtype == tf.int64 else value
        return out

    return parse
