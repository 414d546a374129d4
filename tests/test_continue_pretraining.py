"""Continuing a released checkpoint on a domain's text (issue 34): a head-less checkpoint (a Hugging
Face encoder) gets its MLM/NSP heads initialised and says so; vocabulary extension fills the
[unusedK] slots first, keeps every old id, and picks the words a plain greedy WordPiece (written
here, independently) splits most; the resized model keeps every old row bit-identical, starts each
new row at the mean of its old pieces, trains, resumes, and converts with its new size; bad
vocabularies are refused in one line before any work."""

import importlib.util
import json
import os

import numpy as np
import pytest
import tensorflow as tf

from keras_bert_common.errors import UsageError
from keras_bert_impl.checkpoints.google_checkpoint import google_weights, read_google_checkpoint, save_google_checkpoint
from keras_bert_impl.errors import CheckpointMismatchError
from keras_bert_impl.models.bert_config import BertConfig
from keras_bert_impl.runners.extend_vocab import extend_vocabulary
from keras_bert_impl.runners.run_pretraining import PretrainingOptions, run_pretraining
from keras_bert_impl.tasks.registry import create_task
from tests.conftest import REPO_ROOT, subprocess_env, tiny_bert_config
from tests.pretraining_fixtures import (
    MAX_PRED,
    MAX_SEQ,
    assert_same_checkpoints,
    kill_9_and_resume,
    pretraining_flags,
    run_straight,
)
from tfrecord_tools.pretraining_data import PretrainingDataOptions, create_pretraining_data

LETTERS = "abcdefghijklmnopqrstuvwxyz"
BASE = (
    ["[PAD]", "[UNK]", "[CLS]", "[SEP]", "[MASK]", "[unused0]", "[unused1]", "[unused2]"]
    + list(LETTERS)
    + [f"##{c}" for c in LETTERS]
    + ["the", "cat", "sat", "##s", "on", "mat", "a"]
)
BASE = list(dict.fromkeys(BASE))  # "a" once
# Domain words, each repeated a different number of times (a tie broken alphabetically).
DOMAIN = {"cardiomyopathy": 9, "stent": 7, "angina": 7, "ecg": 5, "troponin": 4, "the": 30, "cat": 3, "qz": 1}


def greedy_wordpiece(word, vocab):
    """Google's WordPiece on one word: longest match first, `##` inside a word, [UNK] if stuck."""
    pieces, start = [], 0
    while start < len(word):
        end = len(word)
        while end > start and (word[start:end] if start == 0 else "##" + word[start:end]) not in vocab:
            end -= 1
        if end == start:
            return ["[UNK]"]
        pieces.append(word[start:end] if start == 0 else "##" + word[start:end])
        start = end
    return pieces


def _write(path, lines):
    path.write_text("\n".join(lines) + "\n")
    return str(path)


@pytest.fixture
def domain(tmp_path):
    lines = []
    for word, count in DOMAIN.items():
        lines += [f"{word} the cat"] * count if word not in ("the", "cat") else []
    return _write(tmp_path / "domain.txt", lines), tmp_path


def test_new_words_fill_unused_slots_first_then_append_and_old_ids_stay(domain):
    text, tmp_path = domain
    base_vocab = _write(tmp_path / "vocab.txt", BASE)
    extension = extend_vocabulary([text], base_vocab, str(tmp_path / "out"), num_new_tokens=4, log=lambda _: None)
    tokens = (tmp_path / "out" / "vocab.txt").read_text().split("\n")[:-1]
    assert tokens == extension.tokens
    # The independent choice: count x (pieces - 1) under the base vocabulary, ties alphabetical.
    counts = {}
    for line in open(text):
        for word in line.split():
            counts[word] = counts.get(word, 0) + 1
    vocab = set(BASE)
    saved = {
        w: c * (len(greedy_wordpiece(w, vocab)) - 1)
        for w, c in counts.items()
        if c >= 2 and w not in vocab and len(greedy_wordpiece(w, vocab)) > 1
    }
    want = sorted(saved, key=lambda w: (-saved[w], w))[:4]
    assert [word for _, word, _, _ in extension.added] == want
    # [unused0..2] take the first three, in place; the fourth is appended; nothing else moves.
    assert [tokens[5], tokens[6], tokens[7], tokens[-1]] == want and len(tokens) == len(BASE) + 1
    assert all(tokens[i] == token for i, token in enumerate(BASE) if not token.startswith("[unused"))
    assert [[BASE[i] for i in ids] for *_, ids in extension.added] == [greedy_wordpiece(w, vocab) for w in want]
    # Tokens per word, before and after, counted here over every word of the text.
    new_vocab = set(tokens)
    total = sum(counts.values())
    before = sum(c * len(greedy_wordpiece(w, vocab)) for w, c in counts.items()) / total
    after = sum(c * len(greedy_wordpiece(w, new_vocab)) for w, c in counts.items()) / total
    assert extension.tokens_per_word_before == pytest.approx(before, abs=1e-9)
    assert extension.tokens_per_word_after == pytest.approx(after, abs=1e-9) and after < before
    report = json.loads((tmp_path / "out" / "vocab_extension.json").read_text())
    assert report["in_unused_slots"] == 3 and report["appended"] == 1 and report["vocab_size_after"] == len(tokens)
    # Asking for more than qualify adds what does, and says why there are no more.
    logs = []
    more = extend_vocabulary([text], base_vocab, str(tmp_path / "more"), num_new_tokens=100, log=logs.append)
    assert len(more.added) == len(saved) < 100
    assert f"--num_new_tokens=100: only {len(saved)} words qualify (seen at least --min_count=2 times" in "\n".join(
        logs
    )


def _base_model(tmp_path, heads=True):
    """A tiny model of the base vocabulary: a pretrainer as Google's checkpoint (with heads), or
    an encoder as a Hugging Face directory (without)."""
    config = tiny_bert_config(len(BASE), max_position_embeddings=32)
    directory = tmp_path / ("google" if heads else "hf")
    directory.mkdir()
    _write(directory / "vocab.txt", BASE)
    model = create_task("pretrainer" if heads else "encoder", config, 16).build_model()
    for weight in model.weights:  # distinct rows, so a moved row cannot pass
        if "seed_generator" not in weight.path:
            weight.assign(np.random.default_rng(len(weight.path)).normal(0, 0.2, weight.shape).astype(np.float32))
    if heads:
        config.to_json_file(str(directory / "bert_config.json"))
        save_google_checkpoint(model, str(directory / "bert_model.ckpt"))
        return config, directory, google_weights(model)
    from keras_bert_impl.checkpoints.hf_weights import write_hf_directory
    from keras_bert_impl.tasks.registry import task_class

    os.remove(directory / "vocab.txt")
    os.rmdir(directory)  # write_hf_directory writes the whole directory
    _write(tmp_path / "vocab_for_hf.txt", BASE)
    write_hf_directory(
        config, google_weights(model), str(tmp_path / "vocab_for_hf.txt"), True, str(directory), task_class("encoder")
    )
    return config, directory, google_weights(model)


@pytest.mark.parametrize("heads", [True, False], ids=["google_with_heads", "hf_headless"])
def test_resized_rows_old_identical_new_the_mean_of_their_pieces(domain, heads):
    text, tmp_path = domain
    config, directory, weights = _base_model(tmp_path, heads)
    checkpoint = str(directory / "bert_model.ckpt") if heads else str(directory)
    out = tmp_path / "extended"
    extension = extend_vocabulary(
        [text],
        str(directory / "vocab.txt"),
        str(out),
        num_new_tokens=5,
        init_checkpoint=checkpoint,
        bert_config_file=str(directory / "bert_config.json") if heads else None,
        log=lambda _: None,
    )
    grown = read_google_checkpoint(str(out / "bert_model.ckpt"))
    new_config = BertConfig.from_json_file(str(out / "bert_config.json"))
    assert new_config.vocab_size == len(BASE) + 2 == len((out / "vocab.txt").read_text().split("\n")) - 1
    assert {k: v for k, v in new_config.to_dict().items() if k != "vocab_size"} == {
        k: v for k, v in config.to_dict().items() if k != "vocab_size"
    }
    index = {token: i for i, token in enumerate(BASE)}
    new_ids = {i for i, *_ in extension.added}
    names = ["bert/embeddings/word_embeddings"] + (["cls/predictions/output_bias"] if heads else [])
    for name in names:
        old, new = weights[name], grown[name]
        assert new.shape[0] == len(BASE) + 2
        for i in range(len(BASE)):
            if i not in new_ids:
                assert np.array_equal(new[i], old[i]), (name, i)  # bit-identical
        for i, word, _, _ in extension.added:
            pieces = [index[p] for p in greedy_wordpiece(word, set(BASE))]
            np.testing.assert_allclose(new[i], old[pieces].mean(0), rtol=0, atol=1e-7)
    # Everything else is the checkpoint's, and a head-less checkpoint gains no made-up head.
    for name, value in weights.items():
        if name not in names:
            assert np.array_equal(grown[name], value), name
    assert heads or not any(name.startswith("cls/") for name in grown)


def _records(tmp_path, vocab, name="train.tfrecord"):
    corpus = tmp_path / "corpus.txt"
    if not corpus.exists():
        docs = []
        for d in range(10):
            words = "cardiomyopathy the cat sat on a mat stent".split()
            docs += [" ".join(words[(d + s) % 3 :]) for s in range(6)]
            docs.append("")
        corpus.write_text("\n".join(docs) + "\n")
    options = PretrainingDataOptions(
        vocab_file=vocab, max_seq_length=MAX_SEQ, max_predictions_per_seq=MAX_PRED, dupe_factor=4, random_seed=1
    )
    path = str(tmp_path / name)
    create_pretraining_data([str(corpus)], [path], options, log=lambda message: None)
    return path


def test_a_headless_hf_checkpoint_continues_with_initialised_heads_and_says_so(tmp_path):
    config, directory, weights = _base_model(tmp_path, heads=False)
    config.to_json_file(str(tmp_path / "bert_config.json"))
    records = _records(tmp_path, str(directory / "vocab.txt"))
    paths = {"bert_config.json": str(tmp_path / "bert_config.json"), "train.tfrecord": records}
    logs = []
    flags = pretraining_flags(paths, str(tmp_path / "run"), init_checkpoint=str(directory), num_train_steps=6)
    run_pretraining(PretrainingOptions(**flags), log=logs.append)
    line = next(line for line in logs if line.startswith(f"init_checkpoint {directory}"))
    assert f"loaded {len(weights)} weights" in line
    initialised = line.split("not in the checkpoint, initialised: ")[1].split(", ")
    assert sorted(initialised) == sorted(
        ["masked_lm/transform/kernel", "masked_lm/transform/bias", "masked_lm/layer_norm/gamma"]
        + ["masked_lm/layer_norm/beta", "masked_lm/output_bias", "next_sentence/kernel", "next_sentence/bias"]
    ), line
    trained = read_google_checkpoint(str(tmp_path / "run" / "bert_model.ckpt"))
    # The decoder is the word embeddings (tied): no separate output matrix exists.
    assert not [n for n, v in trained.items() if n.startswith("cls/") and np.ndim(v) == 2 and v.shape[0] == len(BASE)]
    assert trained["cls/predictions/output_bias"].shape == (len(BASE),)


def _extended(text, tmp_path):
    """The tiny pretrainer of the base vocabulary, extended by 5 words of `text` into TMP/extended."""
    _, directory, _ = _base_model(tmp_path, heads=True)
    out = tmp_path / "extended"
    extend_vocabulary(
        [text],
        str(directory / "vocab.txt"),
        str(out),
        num_new_tokens=5,
        init_checkpoint=str(directory / "bert_model.ckpt"),
        bert_config_file=str(directory / "bert_config.json"),
        log=lambda _: None,
    )
    return out


def test_the_resized_model_trains_resumes_and_converts_with_its_new_size(domain):
    text, tmp_path = domain
    out = _extended(text, tmp_path)
    size = len(BASE) + 2
    records = _records(tmp_path, str(out / "vocab.txt"))
    ids = [
        i
        for record in tf.data.TFRecordDataset(records)
        for i in tf.train.Example.FromString(record.numpy()).features.feature["input_ids"].int64_list.value
    ]
    assert max(ids) >= len(BASE) - 3  # the data uses new tokens
    paths = {"bert_config.json": str(out / "bert_config.json"), "train.tfrecord": records}
    flags = pretraining_flags(paths, str(tmp_path / "run"), init_checkpoint=str(out / "bert_model.ckpt"))
    run_pretraining(PretrainingOptions(**{**flags, "num_train_steps": 10}), log=lambda _: None)
    logs = []
    run_pretraining(PretrainingOptions(**flags), log=logs.append)  # 10 more: resumed from step 10
    assert any("resumed from" in line for line in logs), logs
    trained = read_google_checkpoint(str(tmp_path / "run" / "bert_model.ckpt"))
    assert trained["bert/embeddings/word_embeddings"].shape[0] == size
    from keras_bert_impl.checkpoints.hf_weights import load_hf_directory
    from keras_bert_impl.runners.convert_checkpoint import ConvertOptions, convert_checkpoint

    google = tmp_path / "run_google"
    google.mkdir()
    for name in os.listdir(tmp_path / "run"):
        if name.startswith("bert_model.ckpt"):
            os.link(tmp_path / "run" / name, google / name)
    (google / "bert_config.json").write_text((out / "bert_config.json").read_text())
    (google / "vocab.txt").write_text((out / "vocab.txt").read_text())
    convert_checkpoint(ConvertOptions("google", "huggingface", str(google), str(tmp_path / "hf")), log=lambda _: None)
    hf_config, hf_weights = load_hf_directory(str(tmp_path / "hf"))
    assert hf_config.vocab_size == size and hf_weights["bert/embeddings/word_embeddings"].shape == (size, 32)
    if importlib.util.find_spec("keras_hub"):
        convert_checkpoint(
            ConvertOptions("google", "keras_hub", str(google), str(tmp_path / "hub")), log=lambda _: None
        )
        hub = json.loads((tmp_path / "hub" / "config.json").read_text())
        assert hub["config"]["vocabulary_size"] == size


@pytest.mark.slow  # kill -9 resumption itself is tested fast in test_masked_lm_only / test_run_pretraining
def test_the_resized_model_resumes_exactly_after_kill_9(domain):
    text, tmp_path = domain
    out = _extended(text, tmp_path)
    records = _records(tmp_path, str(out / "vocab.txt"))
    paths = {"bert_config.json": str(out / "bert_config.json"), "train.tfrecord": records}
    flags = pretraining_flags(
        paths, "", init_checkpoint=str(out / "bert_model.ckpt"), num_train_steps=40, iterations_per_loop=1
    )
    runner = os.path.join(REPO_ROOT, "run_pretraining.py")
    run_straight(runner, flags, tmp_path / "straight", subprocess_env())
    _, resumed = kill_9_and_resume(runner, flags, tmp_path / "killed", subprocess_env())
    assert resumed.returncode == 0, resumed.stderr[-3000:]
    assert_same_checkpoints(tmp_path / "straight" / "bert_model.ckpt", tmp_path / "killed" / "bert_model.ckpt")


def test_bad_vocabularies_are_refused_before_any_work(domain):
    text, tmp_path = domain
    _, directory, _ = _base_model(tmp_path, heads=True)
    common = dict(
        init_checkpoint=str(directory / "bert_model.ckpt"),
        bert_config_file=str(directory / "bert_config.json"),
        log=lambda _: None,
    )
    # A vocabulary whose rows differ from the checkpoint's own vocab.txt.
    other = _write(tmp_path / "other.txt", [BASE[0], BASE[2], BASE[1], *BASE[3:]])
    with pytest.raises(CheckpointMismatchError, match=r"other.txt: row 1 is '\[CLS\]' where .*vocab.txt has '\[UNK\]'"):
        extend_vocabulary([text], other, str(tmp_path / "o1"), num_new_tokens=3, **common)
    # A vocabulary whose size disagrees with the config.
    short = _write(tmp_path / "short.txt", BASE[:-1])
    with pytest.raises(
        UsageError, match=rf"short.txt: has {len(BASE) - 1} tokens but .*bert_config.json says vocab_size={len(BASE)}"
    ):
        extend_vocabulary([text], short, str(tmp_path / "o2"), num_new_tokens=3, **common)
    assert not (tmp_path / "o1").exists() and not (tmp_path / "o2").exists()
    # The extended config with the base checkpoint: pointed at the extension.
    config = tiny_bert_config(len(BASE) + 4, max_position_embeddings=32)
    config.to_json_file(str(tmp_path / "bigger.json"))
    records = _records(tmp_path, str(directory / "vocab.txt"))
    paths = {"bert_config.json": str(tmp_path / "bigger.json"), "train.tfrecord": records}
    flags = pretraining_flags(paths, str(tmp_path / "run"), init_checkpoint=str(directory / "bert_model.ckpt"))
    with pytest.raises(
        CheckpointMismatchError,
        match=rf"has {len(BASE)} word embeddings but .*bigger.json says vocab_size={len(BASE) + 4}",
    ):
        run_pretraining(PretrainingOptions(**flags), log=lambda _: None)
    assert not (tmp_path / "run").exists()
