"""Task models: shapes, tied embeddings, and Keras-native save/load with identical outputs."""

import keras
import numpy as np
import pytest

from keras_bert_impl.models.bert_classifier import BertClassifier
from keras_bert_impl.models.bert_encoder import BertEncoder
from keras_bert_impl.models.bert_multiple_choice import BertMultipleChoice
from keras_bert_impl.models.bert_pretrainer import BertPretrainer
from keras_bert_impl.models.bert_span_labeler import BertSpanLabeler
from keras_bert_impl.models.bert_token_classifier import BertTokenClassifier
from tests.conftest import BATCH, SEQ, TINY_CONFIG, make_inputs, randomize_weights

POSITIONS = np.array([[1, 2], [0, 3], [1, 1]], np.int32)


def _models():
    inputs = make_inputs(seed=1)
    choices = {name: np.stack([make_inputs(seed=s)[name] for s in range(4)], axis=1) for name in inputs}
    return [
        (BertEncoder(**TINY_CONFIG), inputs, {"sequence_output": (BATCH, SEQ, 32), "pooled_output": (BATCH, 32)}),
        (
            BertPretrainer(BertEncoder(**TINY_CONFIG)),
            {**inputs, "masked_lm_positions": POSITIONS},
            {"masked_lm_logits": (BATCH, 2, 99), "next_sentence_logits": (BATCH, 2)},
        ),
        (BertClassifier(BertEncoder(**TINY_CONFIG), num_classes=3), inputs, {"logits": (BATCH, 3)}),
        (BertClassifier(BertEncoder(**TINY_CONFIG), num_classes=1), inputs, {"logits": (BATCH, 1)}),
        (
            BertSpanLabeler(BertEncoder(**TINY_CONFIG)),
            inputs,
            {"start_logits": (BATCH, SEQ), "end_logits": (BATCH, SEQ)},
        ),
        (BertTokenClassifier(BertEncoder(**TINY_CONFIG), num_classes=5), inputs, {"logits": (BATCH, SEQ, 5)}),
        (BertMultipleChoice(BertEncoder(**TINY_CONFIG), num_choices=4), choices, {"logits": (BATCH, 4)}),
    ]


@pytest.mark.parametrize("index", range(7))
def test_shapes_and_keras_save_load_round_trip(tmp_path, index):
    model, inputs, shapes = _models()[index]
    randomize_weights(model, seed=index, scale=0.1)
    outputs = model(inputs, training=False)
    for name, shape in shapes.items():
        assert tuple(outputs[name].shape) == shape, name
    path = tmp_path / "model.keras"
    model.save(path)
    reloaded = keras.models.load_model(path)
    assert type(reloaded) is type(model) and reloaded.get_config() == model.get_config()
    again = reloaded(inputs, training=False)
    for name in shapes:
        assert np.array_equal(np.asarray(outputs[name]), np.asarray(again[name])), name
    # .weights.h5 into a freshly built model of the same config.
    model.save_weights(tmp_path / "model.weights.h5")
    fresh = type(model).from_config(model.get_config())
    fresh.load_weights(tmp_path / "model.weights.h5")
    third = fresh(inputs, training=False)
    for name in shapes:
        assert np.array_equal(np.asarray(outputs[name]), np.asarray(third[name])), name


def test_masked_lm_output_is_tied_to_word_embeddings():
    model = BertPretrainer(BertEncoder(**TINY_CONFIG))
    table = model.encoder.get_embedding_table()
    # The head owns no [V, H] matrix of its own.
    assert [tuple(v.shape) for v in model.masked_lm.weights if tuple(v.shape) == (99, 32)] == []
    inputs = {**make_inputs(), "masked_lm_positions": POSITIONS}
    before = np.asarray(model(inputs)["masked_lm_logits"])
    table.assign(table.numpy() * 3.0)
    after = np.asarray(model(inputs)["masked_lm_logits"])
    assert np.abs(after - before).max() > 1e-3


def test_multiple_choice_scores_each_choice_independently():
    model = randomize_weights(BertMultipleChoice(BertEncoder(**TINY_CONFIG)), scale=0.1)
    choices = {name: np.stack([make_inputs(seed=s)[name] for s in range(4)], axis=1) for name in make_inputs()}
    logits = np.asarray(model(choices)["logits"])
    pooled = np.asarray(model.encoder(make_inputs(seed=2))["pooled_output"])
    score = model.get_layer("choice_score")
    want = pooled @ score.kernel.numpy() + score.bias.numpy()
    assert np.abs(logits[:, 2] - want[:, 0]).max() < 1e-5


def test_dropout_active_only_in_training():
    model = BertClassifier(BertEncoder(**dict(TINY_CONFIG, hidden_dropout_prob=0.5)), num_classes=3)
    inputs = make_inputs()
    assert np.array_equal(np.asarray(model(inputs)["logits"]), np.asarray(model(inputs)["logits"]))
    assert not np.array_equal(
        np.asarray(model(inputs, training=True)["logits"]), np.asarray(model(inputs, training=True)["logits"])
    )
