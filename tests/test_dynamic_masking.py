"""Dynamic masking: unmasked records masked in tf.data with Google's rules, new masks at every read,
deterministic under the seed, the static schema downstream, and an exact resume after kill -9."""

import collections
import os

import numpy as np
import pytest

from keras_bert_impl.training.input_pipeline import make_tfrecord_dataset
from tests.conftest import REPO_ROOT, subprocess_env, tiny_bert_config
from tests.pretraining_fixtures import (
    assert_same_checkpoints,
    kill_9_and_resume,
    pretraining_flags,
    run_straight,
)
from tfrecord_tools import feature_specs, tfrecord_files
from tfrecord_tools.dynamic_masking import masker
from tfrecord_tools.pretraining_data import PretrainingDataOptions, create_pretraining_data

SPECIALS = ["[PAD]", "[UNK]", "[CLS]", "[SEP]", "[MASK]"]
MAX_SEQ, MAX_PRED = 48, 6


@pytest.fixture(scope="module")
def corpus(tmp_path_factory):
    """Words of one, two and three pieces (w, w ##a, w ##a ##b), so whole words are visible."""
    root = tmp_path_factory.mktemp("dynamic")
    rng = np.random.default_rng(3)
    stems = [f"s{i}" for i in range(40)]
    vocab = SPECIALS + stems + ["##a", "##b"]
    lines = []
    for _ in range(30):
        for _ in range(6):
            words = [rng.choice(stems) + rng.choice(["", "a", "ab"]) for _ in range(int(rng.integers(4, 10)))]
            lines.append(" ".join(words))
        lines.append("")
    (root / "vocab.txt").write_text("\n".join(vocab) + "\n")
    (root / "corpus.txt").write_text("\n".join(lines) + "\n")
    return root, vocab


def _make(root, name, **overrides):
    values = dict(
        vocab_file=str(root / "vocab.txt"), max_seq_length=MAX_SEQ, max_predictions_per_seq=MAX_PRED, random_seed=5
    )
    values.update(overrides)
    path = str(root / name)
    summary = create_pretraining_data(
        [str(root / "corpus.txt")], [path], PretrainingDataOptions(**values), log=lambda message: None
    )
    return path, summary


def _reads(path, vocab, whole_words=False, seed=11, repeat=1):
    """The masked features of `repeat` reads of every record, and the unmasked ones in the same order."""
    spec = feature_specs.dynamic_pretraining_spec(MAX_SEQ)
    files = [path] * repeat
    masked = make_tfrecord_dataset(
        files, spec, 64, False, drop_remainder=False, example_fn=masker(len(vocab), MAX_PRED, 0.15, whole_words, seed)
    )
    unmasked = make_tfrecord_dataset(files, spec, 64, False, drop_remainder=False)
    return tuple(
        _concat([{name: value.numpy() for name, value in batch.items()} for batch in dataset])
        for dataset in (masked, unmasked)
    )


def _concat(batches):
    return {name: np.concatenate([batch[name] for batch in batches]) for name in batches[0]}


def test_counts_80_10_10_and_cap_follow_googles_rules_like_the_static_path(corpus):
    root, vocab = corpus
    dynamic, summary = _make(root, "dynamic.tfrecord", dynamic_masking=True, dupe_factor=1)
    static, _ = _make(root, "static.tfrecord", dupe_factor=10)
    reads, original = _reads(dynamic, vocab, repeat=20)
    assert summary.masked_tokens == 0 and not np.any(original["input_ids"] == 4)  # no [MASK] yet
    static_rows = tfrecord_files.read_tfrecord(static, feature_specs.pretraining_spec(MAX_SEQ, MAX_PRED))
    for rows, label in ((reads, "dynamic"), (static_rows, "static")):
        lengths = rows["input_mask"].sum(1)
        # Google's count, computed here in numpy: min(P, max(1, round(length * 0.15))).
        want = np.minimum(MAX_PRED, np.maximum(1, np.round(lengths * 0.15)))
        assert np.array_equal(rows["masked_lm_weights"].sum(1), want), label
        ids = rows["input_ids"]
        positions = rows["masked_lm_positions"]
        weights = rows["masked_lm_weights"] > 0
        at = np.take_along_axis(ids, positions, 1)[weights]
        labels = rows["masked_lm_ids"][weights]
        assert not np.isin(labels, [2, 3]).any(), label  # never [CLS] / [SEP]
        shares = [np.mean(at == 4), np.mean((at != 4) & (at == labels)), np.mean((at != 4) & (at != labels))]
        # 80% [MASK]; 10% unchanged (plus the random picks that hit the original id); 10% random.
        assert abs(shares[0] - 0.8) < 0.02 and abs(shares[1] - 0.1) < 0.02 and abs(shares[2] - 0.1) < 0.02, shares
        # Unmasked tokens are the original ones; the labels are what was there.
        assert (rows["masked_lm_weights"].sum() / lengths.sum()) == pytest.approx(0.15, abs=0.02)
    base = original["input_ids"]
    assert np.array_equal(
        np.take_along_axis(base, reads["masked_lm_positions"], 1) * (reads["masked_lm_weights"] > 0),
        reads["masked_lm_ids"],
    )
    untouched = np.ones_like(base, bool)
    np.put_along_axis(untouched, reads["masked_lm_positions"], False, 1)
    assert np.array_equal(reads["input_ids"][untouched], base[untouched])


def test_whole_word_masking_masks_whole_words(corpus):
    root, vocab = corpus
    dynamic, _ = _make(root, "wwm.tfrecord", dynamic_masking=True, dupe_factor=1)
    reads, original = _reads(dynamic, vocab, whole_words=True, repeat=10)
    kinds = original["mlm_candidates"]
    checked = 0
    for row in range(len(kinds)):
        masked = set(reads["masked_lm_positions"][row][reads["masked_lm_weights"][row] > 0].tolist())
        word = []
        for position, kind in enumerate(kinds[row].tolist() + [0]):
            if kind != 2 and word:  # a word ended: all of it masked, or none
                hits = [p in masked for p in word]
                assert all(hits) or not any(hits), (row, word, masked)
                checked += len(word) > 1 and all(hits)
                word = []
            if kind == 1:
                word = [position]
            elif kind == 2:
                word.append(position)
        assert len(masked) <= MAX_PRED
    assert checked > 50  # multi-piece words were masked whole, many times


def test_two_reads_differ_and_the_seed_decides(corpus):
    root, vocab = corpus
    dynamic, summary = _make(root, "reads.tfrecord", dynamic_masking=True, dupe_factor=1)
    reads, original = _reads(dynamic, vocab, repeat=2)
    by_instance = collections.defaultdict(list)
    for row, ids in enumerate(original["input_ids"]):
        by_instance[ids.tobytes()].append(reads["masked_lm_positions"][row])
    pairs = [rows for rows in by_instance.values() if len(rows) == 2]
    assert len(pairs) > 0.9 * summary.instances
    assert np.mean([np.any(a != b) for a, b in pairs]) > 0.8  # the same instances, other masks
    again, _ = _reads(dynamic, vocab, repeat=2)
    assert all(np.array_equal(reads[name], again[name]) for name in reads)  # same seed: same masks
    other, _ = _reads(dynamic, vocab, repeat=2, seed=12)
    assert not np.array_equal(reads["masked_lm_positions"], other["masked_lm_positions"])


def test_the_pipeline_gives_the_static_schema(corpus):
    root, vocab = corpus
    dynamic, _ = _make(root, "schema.tfrecord", dynamic_masking=True, dupe_factor=1)
    static, _ = _make(root, "schema_static.tfrecord", dupe_factor=1)
    spec = feature_specs.dynamic_pretraining_spec(MAX_SEQ)
    ours = make_tfrecord_dataset([dynamic], spec, 8, True, seed=1, example_fn=masker(len(vocab), MAX_PRED))
    theirs = make_tfrecord_dataset([static], feature_specs.pretraining_spec(MAX_SEQ, MAX_PRED), 8, True, seed=1)
    assert ours.element_spec == theirs.element_spec
    # Storage: one unmasked copy against ten masked ones.
    ten, _ = _make(root, "ten.tfrecord", dupe_factor=10)
    assert os.path.getsize(ten) > 8 * os.path.getsize(dynamic)


@pytest.mark.slow  # the default suite's test_masked_lm_only kill -9 test resumes dynamic masking too
def test_pretraining_on_dynamic_records_resumes_exactly_after_kill_9(corpus, tmp_path):
    root, vocab = corpus
    dynamic, _ = _make(root, "train_dynamic.tfrecord", dynamic_masking=True, dupe_factor=1)

    config = root / "bert_config.json"
    tiny_bert_config(len(vocab)).to_json_file(str(config))
    paths = {"bert_config.json": str(config), "train.tfrecord": dynamic}
    flags = pretraining_flags(
        paths,
        "",
        num_train_steps=40,
        save_checkpoints_steps=5,
        iterations_per_loop=1,
        max_seq_length=MAX_SEQ,
        max_predictions_per_seq=MAX_PRED,
        do_whole_word_mask=True,
    )
    runner = os.path.join(REPO_ROOT, "run_pretraining.py")
    straight = run_straight(runner, flags, tmp_path / "straight", subprocess_env())
    assert "masking in tf.data (dynamic masking)" in straight.stderr
    killed = tmp_path / "killed"
    _, resumed = kill_9_and_resume(runner, flags, killed, subprocess_env())
    assert resumed.returncode == 0 and "resumed from" in resumed.stderr, resumed.stderr[-3000:]
    assert_same_checkpoints(tmp_path / "straight" / "bert_model.ckpt", killed / "bert_model.ckpt")


def test_masked_records_refuse_dynamic_masking_flags(corpus, tmp_path):
    from keras_bert_impl.runners.run_pretraining import PretrainingOptions, run_pretraining

    root, vocab = corpus
    static, _ = _make(root, "flags_static.tfrecord", dupe_factor=1)
    config = tmp_path / "bert_config.json"
    tiny_bert_config(len(vocab), num_hidden_layers=1).to_json_file(str(config))
    flags = pretraining_flags(
        {"bert_config.json": str(config), "train.tfrecord": static},
        str(tmp_path / "o"),
        max_seq_length=MAX_SEQ,
        max_predictions_per_seq=MAX_PRED,
        do_whole_word_mask=True,
    )
    with pytest.raises(ValueError, match="these records are masked already"):
        run_pretraining(PretrainingOptions(**flags))
    assert collections.Counter(os.listdir(tmp_path)) == collections.Counter(["bert_config.json"])
