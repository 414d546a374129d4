"""Sentence embeddings: the pooling against numpy, padding that never changes an embedding,
`extract_features --pooling`, the SavedModel, and sentence-transformers' pooling files read,
written and carried through conversion. (Equality with sentence-transformers on the real
all-MiniLM-L6-v2: tests/test_sentence_embedding_interop.py.)"""

import json

import numpy as np
import pytest
import tensorflow as tf

from keras_bert_common.errors import UsageError
from keras_bert_impl.models.bert_encoder import BertEncoder
from keras_bert_impl.tasks.sentence_embedding import SentenceEmbeddingTask
from tests.conftest import tiny_bert_config
from tests.finetuning_fixtures import VOCAB, model_dir  # noqa: F401 -- model_dir: a fixture

SENTENCES = ["the cat sat on the mat .", "where did it go ?", "peter ran far away to paris .", "the dog"]


def numpy_pooling(sequence, mask, pooling, normalize):
    """sentence-transformers' Pooling and Normalize modules, written out in numpy (float64)."""
    sequence, mask = np.asarray(sequence, np.float64), np.asarray(mask, np.float64)[:, :, None]
    if pooling == "cls":
        pooled = sequence[:, 0]
    elif pooling == "max":
        pooled = np.where(mask > 0, sequence, -np.inf).max(axis=1)
    else:
        pooled = (sequence * mask).sum(axis=1) / np.maximum(mask.sum(axis=1), 1e-9)
    if normalize:
        pooled = pooled / np.maximum(np.linalg.norm(pooled, axis=-1, keepdims=True), 1e-12)
    return pooled


def _inputs(lengths, seq_length=7, vocab_size=99, seed=0):
    rng = np.random.default_rng(seed)
    mask = (np.arange(seq_length)[None, :] < np.array(lengths)[:, None]).astype(np.int32)
    ids = rng.integers(5, vocab_size, size=(len(lengths), seq_length)).astype(np.int32) * mask
    return {"input_ids": ids, "input_mask": mask, "segment_ids": np.zeros_like(ids)}


@pytest.mark.parametrize("pooling", ["mean", "cls", "max"])
@pytest.mark.parametrize("normalize", [False, True])
def test_pooling_equals_sentence_transformers_formulas_in_numpy(pooling, normalize):
    config = tiny_bert_config(99)
    encoder = BertEncoder.from_bert_config(config)
    inputs = _inputs([7, 3, 5])  # batch 3, seq 7, rows of different lengths
    model = SentenceEmbeddingTask(config, 7, pooling, normalize).build_model(encoder)
    got = model(inputs, training=False)["embedding"].numpy()
    sequence = encoder(inputs, training=False)["sequence_output"].numpy()
    np.testing.assert_allclose(got, numpy_pooling(sequence, inputs["input_mask"], pooling, normalize), atol=1e-6)
    if normalize:
        np.testing.assert_allclose(np.linalg.norm(got, axis=-1), 1.0, atol=1e-6)


def test_padding_never_changes_an_embedding():
    config = tiny_bert_config(99)
    model = SentenceEmbeddingTask(config, 16, "mean", True).build_model()
    short = _inputs([4, 2], seq_length=4, seed=3)
    padded = {name: np.pad(value, ((0, 0), (0, 12))) for name, value in short.items()}  # to 16
    alone = model({name: value[1:2, :2] for name, value in short.items()}, training=False)["embedding"].numpy()
    a = model(short, training=False)["embedding"].numpy()
    b = model(padded, training=False)["embedding"].numpy()
    np.testing.assert_allclose(a, b, atol=1e-6)
    np.testing.assert_allclose(a[1:2], alone, atol=1e-6)


def _extract(model_dir, tmp_path, name, **overrides):  # noqa: F811
    from keras_bert_impl.runners.extract_features import ExtractOptions, run_extract_features

    text = tmp_path / "sentences.txt"
    text.write_text("\n".join(SENTENCES) + "\n")
    options = ExtractOptions(
        input_file=str(text),
        output_file=str(tmp_path / name),
        bert_config_file=str(model_dir / "bert_config.json"),
        vocab_file=str(model_dir / "vocab.txt"),
        init_checkpoint=str(model_dir / "bert_model.ckpt"),
        max_seq_length=16,
        batch_size=3,
        **overrides,
    )
    run_extract_features(options, log=lambda _: None)
    return [json.loads(line) for line in (tmp_path / name).read_text().splitlines()]


def test_extract_features_writes_one_embedding_per_line_whatever_the_padding(model_dir, tmp_path):  # noqa: F811
    from keras_bert_impl.checkpoints.init_checkpoint import initialize_from_checkpoint
    from keras_bert_impl.models.bert_config import BertConfig
    from tfrecord_tools.tokenization import FullTokenizer

    bucketed = _extract(model_dir, tmp_path, "b.jsonl", pooling="max", normalize_embeddings=True)
    padded = _extract(
        model_dir, tmp_path, "p.jsonl", pooling="max", normalize_embeddings=True, pad_to_max_seq_length=True
    )
    assert [row["linex_index"] for row in bucketed] == list(range(len(SENTENCES)))
    vectors = np.array([row["embedding"] for row in bucketed])
    assert vectors.shape == (len(SENTENCES), 32)
    np.testing.assert_allclose(vectors, [row["embedding"] for row in padded], atol=1e-6)
    # The same sentences, one at a time through the encoder and numpy's pooling.
    config = BertConfig.from_json_file(str(model_dir / "bert_config.json"))
    encoder = BertEncoder.from_bert_config(config)
    initialize_from_checkpoint(encoder, str(model_dir / "bert_model.ckpt"))
    tokenizer = FullTokenizer(str(model_dir / "vocab.txt"))
    for sentence, vector in zip(SENTENCES, vectors):
        ids = [2] + tokenizer.convert_tokens_to_ids(tokenizer.tokenize(sentence)) + [3]
        inputs = {
            "input_ids": np.array([ids]),
            "input_mask": np.ones((1, len(ids))),
            "segment_ids": np.zeros((1, len(ids))),
        }
        sequence = encoder({k: v.astype(np.int32) for k, v in inputs.items()}, training=False)["sequence_output"]
        np.testing.assert_allclose(vector, numpy_pooling(sequence, inputs["input_mask"], "max", True)[0], atol=1e-5)


def test_the_saved_model_serves_raw_text_to_the_same_embeddings(model_dir, tmp_path):  # noqa: F811
    import tensorflow_text  # noqa: F401 -- the tokenizer ops the SavedModel uses

    from keras_bert_impl.serving.export import ExportOptions, build_and_export

    extracted = np.array([row["embedding"] for row in _extract(model_dir, tmp_path, "e.jsonl", pooling="mean")])
    build_and_export(
        ExportOptions.for_model_dir(
            model_dir,
            tmp_path / "export",
            model_type="sentence_embedding",
            max_seq_length=16,
            pooling="mean",
        ),
        log=lambda _: None,
    )
    served = tf.saved_model.load(str(tmp_path / "export")).signatures["serving_default"](text_a=tf.constant(SENTENCES))[
        "embedding"
    ]
    np.testing.assert_allclose(served.numpy(), extracted, atol=1e-5)
    assert not np.allclose(np.linalg.norm(extracted, axis=-1), 1.0, atol=1e-3)  # not normalised: not asked


def test_pooling_files_round_trip_and_carry_through_conversion(model_dir, tmp_path):  # noqa: F811
    from keras_bert_impl.checkpoints.sentence_transformers import read_pooling, resolve_pooling, write_pooling
    from keras_bert_impl.runners.convert_checkpoint import ConvertOptions, convert_checkpoint

    assert read_pooling(str(model_dir)) is None
    google = tmp_path / "google"
    google.mkdir()
    for name in ("bert_config.json", "vocab.txt"):
        (google / name).write_bytes((model_dir / name).read_bytes())
    for path in model_dir.glob("bert_model.ckpt*"):
        (google / path.name).write_bytes(path.read_bytes())
    write_pooling(str(google), "cls", True, 32)
    assert read_pooling(str(google)) == {"pooling": "cls", "normalize_embeddings": True}
    quiet = dict(log=lambda _: None)
    convert_checkpoint(ConvertOptions("google", "huggingface", str(google), str(tmp_path / "hf")), **quiet)
    convert_checkpoint(ConvertOptions("huggingface", "google", str(tmp_path / "hf"), str(tmp_path / "back")), **quiet)
    for directory in ("hf", "back"):
        assert read_pooling(str(tmp_path / directory)) == {"pooling": "cls", "normalize_embeddings": True}
    config = json.loads((tmp_path / "hf" / "1_Pooling" / "config.json").read_text())
    assert config["pooling_mode_cls_token"] and not config["pooling_mode_mean_tokens"]
    assert config["word_embedding_dimension"] == 32
    # Defaults come from beside the checkpoint; a flag wins.
    checkpoint = str(tmp_path / "back" / "bert_model.ckpt")
    assert resolve_pooling(None, None, checkpoint, **quiet) == {"pooling": "cls", "normalize_embeddings": True}
    assert resolve_pooling("max", None, checkpoint, **quiet) == {"pooling": "max", "normalize_embeddings": True}
    assert resolve_pooling(None, None, None, **quiet) == {"pooling": "mean", "normalize_embeddings": False}
    # Two modes at once (sentence-transformers concatenates them): refused in one line.
    pooling_config = tmp_path / "back" / "1_Pooling" / "config.json"
    pooling_config.write_text(json.dumps({**config, "pooling_mode_max_tokens": True}))
    with pytest.raises(UsageError, match="pooling_mode_cls_token, pooling_mode_max_tokens"):
        read_pooling(str(tmp_path / "back"))


def test_pooling_is_refused_for_tasks_without_a_sentence_output():
    from keras_bert_impl.tasks.registry import check_options_apply

    check_options_apply("sentence_embedding", {"pooling": "max", "normalize_embeddings": True})
    check_options_apply("classifier", {"pooling": None})
    with pytest.raises(UsageError, match="--pooling: --model_type=classifier has no such option"):
        check_options_apply("classifier", {"pooling": "mean"})
    with pytest.raises(UsageError, match="--pooling=sum"):
        SentenceEmbeddingTask(tiny_bert_config(99), 7, pooling="sum")
