"""`initialize_from_checkpoint`: a model's starting weights from Google's TF1 checkpoint or ours.

Ours (object-based, written by `Trainer`) are read into a throwaway pretrainer of the same config
and handed over by Google's names, so the one name table decides what goes where for every task
model: the encoder always, heads where both models have them.
"""

import tensorflow as tf

from keras_bert_impl.bert_encoder import BertEncoder
from keras_bert_impl.errors import CheckpointMismatchError
from keras_bert_impl.google_checkpoint import (
    LoadReport,
    assign_google_weights,
    google_weights,
    load_google_checkpoint,
    resolve_checkpoint_prefix,
)
from keras_bert_impl.models.bert_pretrainer import BertPretrainer


def is_object_based(prefix):
    return "_CHECKPOINTABLE_OBJECT_GRAPH" in tf.train.load_checkpoint(prefix).get_variable_to_shape_map()


def initialize_from_checkpoint(model, path):
    """Loads `path` (prefix or directory) into `model`; returns the `LoadReport`."""
    prefix = resolve_checkpoint_prefix(path)
    if not is_object_based(prefix):
        return load_google_checkpoint(model, prefix)
    # A checkpoint of this very kind of model (a fine-tuned classifier for its export): all of it.
    status = tf.train.Checkpoint(model=model).restore(prefix)
    try:
        status.expect_partial().assert_existing_objects_matched()
        return LoadReport(loaded=[v.path for v in model.weights], initialized=[], unused=[])
    except (AssertionError, ValueError):
        pass
    encoder = getattr(model, "encoder", model)
    source = BertPretrainer(BertEncoder.from_bert_config(encoder.bert_config))
    status = tf.train.Checkpoint(model=tf.train.Checkpoint(encoder=source.encoder)).restore(prefix)
    try:
        status.expect_partial().assert_existing_objects_matched()
    except AssertionError as error:
        raise CheckpointMismatchError(
            f"{prefix}: does not hold this BERT model's weights ({str(error).splitlines()[0]}); "
            "use the bert_config.json it was trained with"
        ) from None
    except ValueError as error:
        raise CheckpointMismatchError(f"{prefix}: {error}; use the bert_config.json it was trained with") from None
    # Heads of the source (MLM/NSP) come too where the checkpoint has them.
    tf.train.Checkpoint(model=source).restore(prefix).expect_partial()
    return assign_google_weights(model, google_weights(source), source=prefix)
