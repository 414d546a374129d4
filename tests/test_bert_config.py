import json

import pytest

from keras_bert_impl.errors import BertConfigError
from keras_bert_impl.models.bert_config import BertConfig
from keras_bert_impl.models.bert_encoder import BertEncoder
from tests.conftest import TINY_CONFIG

# Google's released uncased_L-12_H-768_A-12/bert_config.json, verbatim.
GOOGLE_BASE_JSON = """{
  "attention_probs_dropout_prob": 0.1,
  "hidden_act": "gelu",
  "hidden_dropout_prob": 0.1,
  "hidden_size": 768,
  "initializer_range": 0.02,
  "intermediate_size": 3072,
  "max_position_embeddings": 512,
  "num_attention_heads": 12,
  "num_hidden_layers": 12,
  "type_vocab_size": 2,
  "vocab_size": 30522
}
"""


def test_reads_google_config_and_writes_the_same_json(tmp_path):
    path = tmp_path / "bert_config.json"
    path.write_text(GOOGLE_BASE_JSON)
    config = BertConfig.from_json_file(str(path))
    assert config.hidden_size == 768 and config.type_vocab_size == 2 and config.head_size == 64
    out = tmp_path / "out.json"
    config.to_json_file(str(out))
    assert out.read_text() == GOOGLE_BASE_JSON
    assert sorted(json.loads(out.read_text())) == sorted(json.loads(GOOGLE_BASE_JSON))
    assert len(json.loads(GOOGLE_BASE_JSON)) == 11


def test_multilingual_pooler_keys_are_accepted():
    values = dict(TINY_CONFIG, directionality="bidi", pooler_type="first_token_transform", pooler_fc_size=768)
    assert BertConfig.from_dict(values).hidden_size == 32


@pytest.mark.parametrize(
    "change, message",
    [
        ({"hidden_sizes": 32}, "unknown key(s) hidden_sizes"),
        ({"num_attention_heads": 5}, "multiple of num_attention_heads"),
        ({"vocab_size": 0}, "vocab_size must be a positive integer"),
        ({"hidden_dropout_prob": 1.5}, "hidden_dropout_prob must be a number in [0, 1)"),
        ({"hidden_act": "gelu_fast"}, "hidden_act must be one of"),
        ({"num_hidden_layers": 2.5}, "num_hidden_layers must be a positive integer"),
        ({"initializer_range": -1}, "initializer_range must be positive"),
    ],
)
def test_bad_values_are_rejected_with_the_file_named(tmp_path, change, message):
    path = tmp_path / "bert_config.json"
    path.write_text(json.dumps(dict(TINY_CONFIG, **change)))
    with pytest.raises(BertConfigError) as error:
        BertConfig.from_json_file(str(path))
    assert message in str(error.value)
    assert str(path) in str(error.value)
    assert "\n" not in str(error.value)


def test_missing_vocab_size_and_bad_json(tmp_path):
    values = dict(TINY_CONFIG)
    del values["vocab_size"]
    with pytest.raises(BertConfigError, match="missing required key vocab_size"):
        BertConfig.from_dict(values)
    path = tmp_path / "bert_config.json"
    path.write_text("{not json")
    with pytest.raises(BertConfigError, match="not valid JSON"):
        BertConfig.from_json_file(str(path))
    with pytest.raises(BertConfigError, match="no such file"):
        BertConfig.from_json_file(str(tmp_path / "absent.json"))


def test_encoder_validates_like_the_config():
    with pytest.raises(BertConfigError, match="multiple of num_attention_heads"):
        BertEncoder(**dict(TINY_CONFIG, num_attention_heads=5))


def test_encoder_from_config_file(tmp_path, tiny_config):
    path = tmp_path / "bert_config.json"
    tiny_config.to_json_file(str(path))
    encoder = BertEncoder.from_bert_config(str(path))
    assert encoder.bert_config == tiny_config
    assert not list(tmp_path.glob("*.tmp-*"))


def test_runner_checks_name_the_files_and_the_fix():
    config = BertConfig(vocab_size=99, max_position_embeddings=16)
    config.check_max_seq_length(16)
    config.check_vocab_size(99, "vocab.txt")
    with pytest.raises(ValueError, match=r"--max_seq_length=17 exceeds max_position_embeddings=16 in cfg.json; lower"):
        config.check_max_seq_length(17, "cfg.json")
    with pytest.raises(ValueError, match=r"v.txt: has 98 tokens but cfg.json says vocab_size=99; use the vocab.txt"):
        config.check_vocab_size(98, "v.txt", "cfg.json")


def test_size_keys_left_out_are_warned_about(tmp_path):
    """Google's reader fills a missing key with BERT-base's value; a pretraining run from such a
    file builds a far larger model than meant, so the run set-up hears of each defaulted key."""
    path = tmp_path / "bert_config.json"
    path.write_text(json.dumps({"vocab_size": 99, "hidden_size": 48, "num_attention_heads": 4}))
    heard = []
    config = BertConfig.from_json_file(str(path), warn=heard.append)
    assert (config.hidden_size, config.num_hidden_layers, config.intermediate_size) == (48, 12, 3072)
    assert len(heard) == 1 and heard[0].startswith(f"{path}: has no num_hidden_layers, intermediate_size, ")
    assert "num_hidden_layers=12, intermediate_size=3072, max_position_embeddings=512, type_vocab_size=16" in heard[0]
    path.write_text(GOOGLE_BASE_JSON)
    BertConfig.from_json_file(str(path), warn=heard.append)
    assert len(heard) == 1  # a complete file: nothing to say
