"""Google TF1 checkpoints: the name table, reading, writing and the documented errors."""

import collections

import numpy as np
import pytest
import tensorflow as tf

from keras_bert_impl.checkpoints.google_checkpoint import (
    assign_google_weights,
    google_weights,
    load_google_checkpoint,
    save_google_checkpoint,
    weight_table,
    write_google_checkpoint,
)
from keras_bert_impl.errors import CheckpointMismatchError
from keras_bert_impl.layers.activations import gelu_tanh
from keras_bert_impl.models.bert_classifier import BertClassifier
from keras_bert_impl.models.bert_config import BertConfig
from keras_bert_impl.models.bert_encoder import BertEncoder
from keras_bert_impl.models.bert_pretrainer import BertPretrainer
from keras_bert_impl.models.bert_span_labeler import BertSpanLabeler
from tests.conftest import TINY_CONFIG, make_inputs, randomize_weights
from tests.google_weights_fixture import google_shapes, random_google_weights


def _pretrainer():
    return BertPretrainer(BertEncoder(**TINY_CONFIG))


def test_table_maps_every_pretrainer_weight_exactly_once_with_google_shapes(tiny_config):
    model = _pretrainer()
    rows = weight_table(model)
    google_counts = collections.Counter(row.google_name for row in rows)
    variable_counts = collections.Counter(id(row.variable) for row in rows)
    assert max(google_counts.values()) == 1 and max(variable_counts.values()) == 1
    assert set(variable_counts) == {id(variable) for variable in model.weights}
    expected = google_shapes(tiny_config, heads=("pretraining",))
    assert set(google_counts) == set(expected)
    for row in rows:
        shape = tuple(row.variable.shape)[::-1] if row.transposed else tuple(row.variable.shape)
        assert shape == expected[row.google_name], row.google_name


def test_classifier_and_squad_heads_use_google_run_script_names():
    classifier_names = {row.google_name for row in weight_table(BertClassifier(BertEncoder(**TINY_CONFIG), 3))}
    assert {"output_weights", "output_bias"} <= classifier_names
    squad_names = {row.google_name for row in weight_table(BertSpanLabeler(BertEncoder(**TINY_CONFIG)))}
    assert {"cls/squad/output_weights", "cls/squad/output_bias"} <= squad_names


def test_write_then_read_is_lossless(tmp_path):
    model = randomize_weights(_pretrainer(), seed=7)
    prefix = save_google_checkpoint(model, str(tmp_path / "bert_model.ckpt"))
    reader = tf.train.load_checkpoint(prefix)
    stored = reader.get_variable_to_shape_map()
    assert "cls/seq_relationship/output_weights" in stored and stored["cls/seq_relationship/output_weights"] == [2, 32]
    fresh = _pretrainer()
    report = load_google_checkpoint(fresh, str(tmp_path))  # a directory works too
    assert report.initialized == [] and report.unused == [] and len(report.loaded) == len(stored)
    for before, after in zip(model.weights, fresh.weights):
        assert np.array_equal(before.numpy(), after.numpy()), before.path
    assert not list(tmp_path.glob("*.tmp-*"))


def test_loads_google_layout_and_heads_compute_google_formulas(tiny_config):
    """Weights written from Google's layout give the logits of Google's run_pretraining.py math."""
    weights = random_google_weights(tiny_config, heads=("pretraining",), seed=11)
    model = _pretrainer()
    assign_google_weights(model, weights)
    inputs = make_inputs(seed=2)
    positions = np.array([[1, 2], [0, 3], [1, 1]], np.int32)
    outputs = model({**inputs, "masked_lm_positions": positions}, training=False)
    encoded = model.encoder(inputs, training=False)
    sequence = np.asarray(encoded["sequence_output"], np.float64)
    pooled = np.asarray(encoded["pooled_output"], np.float64)

    w = {name: value.astype(np.float64) for name, value in weights.items()}
    gathered = np.take_along_axis(sequence, positions[:, :, None], axis=1)
    hidden = np.asarray(
        gelu_tanh(gathered @ w["cls/predictions/transform/dense/kernel"] + w["cls/predictions/transform/dense/bias"])
    )
    mean, var = hidden.mean(-1, keepdims=True), hidden.var(-1, keepdims=True)
    hidden = (hidden - mean) / np.sqrt(var + 1e-12) * w["cls/predictions/transform/LayerNorm/gamma"] + w[
        "cls/predictions/transform/LayerNorm/beta"
    ]
    mlm = hidden @ w["bert/embeddings/word_embeddings"].T + w["cls/predictions/output_bias"]
    nsp = pooled @ w["cls/seq_relationship/output_weights"].T + w["cls/seq_relationship/output_bias"]
    assert np.abs(np.asarray(outputs["masked_lm_logits"]) - mlm).max() < 1e-4
    assert np.abs(np.asarray(outputs["next_sentence_logits"]) - nsp).max() < 1e-5


def test_optimizer_slots_are_skipped_and_absent_heads_reported(tmp_path, tiny_config):
    weights = random_google_weights(tiny_config, seed=1)  # encoder only, as bert_model.ckpt after fine-tuning
    for name in list(weights):
        weights[name + "/adam_m"] = np.zeros_like(weights[name])
        weights[name + "/adam_v"] = np.zeros_like(weights[name])
    weights["global_step"] = np.array(1000, np.int64)
    prefix = write_google_checkpoint(weights, str(tmp_path / "bert_model.ckpt"))
    report = load_google_checkpoint(_pretrainer(), prefix)
    assert report.unused == []
    assert "masked_lm/output_bias" in report.initialized and "next_sentence/kernel" in report.initialized
    assert len(report.loaded) == len(google_shapes(tiny_config))
    assert "not in the checkpoint, initialised" in report.summary()


def test_missing_weights_and_wrong_shapes_raise_one_error_listing_all(tmp_path, tiny_config):
    weights = random_google_weights(tiny_config, seed=1)
    del weights["bert/encoder/layer_1/output/dense/bias"]
    weights["bert/embeddings/word_embeddings"] = np.zeros((100, 32), np.float32)
    prefix = write_google_checkpoint(weights, str(tmp_path / "bert_model.ckpt"))
    model = BertEncoder(**TINY_CONFIG)
    before = [variable.numpy().copy() for variable in model.weights]
    with pytest.raises(CheckpointMismatchError) as error:
        load_google_checkpoint(model, prefix)
    message = str(error.value)
    assert prefix in message and "\n" not in message
    assert "missing bert/encoder/layer_1/output/dense/bias" in message
    assert "bert/embeddings/word_embeddings has shape [100, 32], model expects [99, 32]" in message
    assert "bert_config.json released with this checkpoint" in message
    # Nothing was assigned.
    assert all(np.array_equal(b, v.numpy()) for b, v in zip(before, model.weights))


def test_config_with_fewer_layers_than_checkpoint_reports_unused(tmp_path, tiny_config):
    deeper = BertConfig(**dict(TINY_CONFIG, num_hidden_layers=3))
    prefix = write_google_checkpoint(random_google_weights(deeper), str(tmp_path / "bert_model.ckpt"))
    report = load_google_checkpoint(BertEncoder(**TINY_CONFIG), prefix)
    assert report.unused and all(name.startswith("bert/encoder/layer_2/") for name in report.unused)


def test_missing_checkpoint_names_the_path(tmp_path):
    with pytest.raises(FileNotFoundError, match="bert_model.ckpt.index is missing"):
        load_google_checkpoint(BertEncoder(**TINY_CONFIG), str(tmp_path / "bert_model.ckpt"))
    with pytest.raises(FileNotFoundError, match="directory holds no checkpoint"):
        load_google_checkpoint(BertEncoder(**TINY_CONFIG), str(tmp_path))


def test_model_garden_converter_reads_what_we_write(tmp_path, tiny_config):
    """tf-models-official's own TF1->TF2 converter accepts our checkpoint; outputs agree."""
    from official.legacy.bert import configs
    from official.nlp.tools import tf2_bert_encoder_checkpoint_converter as converter

    ours = randomize_weights(BertEncoder(**TINY_CONFIG), seed=5, scale=0.1)
    save_google_checkpoint(ours, str(tmp_path / "bert_model.ckpt"))
    tiny_config.to_json_file(str(tmp_path / "bert_config.json"))
    mg_config = configs.BertConfig.from_json_file(str(tmp_path / "bert_config.json"))
    converter.convert_checkpoint(
        mg_config,
        str(tmp_path / "v2" / "ckpt"),
        str(tmp_path / "bert_model.ckpt"),
        checkpoint_model_name="encoder",
        converted_model="encoder",
    )
    reference = converter._create_bert_model(mg_config)
    status = tf.train.Checkpoint(encoder=reference).read(tf.train.latest_checkpoint(str(tmp_path / "v2")))
    status.assert_existing_objects_matched()
    inputs = make_inputs(seed=9)
    sequence, pooled = reference([inputs["input_ids"], inputs["input_mask"], inputs["segment_ids"]], training=False)
    outputs = ours(inputs, training=False)
    mask = inputs["input_mask"].astype(bool)
    assert np.abs(np.asarray(pooled) - np.asarray(outputs["pooled_output"])).max() < 1e-5
    assert np.abs(np.asarray(sequence) - np.asarray(outputs["sequence_output"]))[mask].max() < 1e-5


def test_google_weights_round_trip_through_table(tiny_config):
    weights = random_google_weights(tiny_config, heads=("pretraining",), seed=4)
    model = _pretrainer()
    assign_google_weights(model, weights)
    back = google_weights(model)
    assert set(back) == set(weights)
    assert all(np.array_equal(back[name], weights[name]) for name in weights)
