"""Reading a `vocab.txt` (one token per line, id = line number), with the checks every tool
needs before its work: UTF-8, each token once, BERT's special tokens. Without TensorFlow (the
data tools check their inputs before importing it); remote paths go through `files.read_bytes`.
`stated_casing` / `casing_of`: a model's do_lower_case from its name, its tokenizer_config.json or its
vocabulary."""

import json
import os
import re

from keras_bert_common.errors import UsageError
from keras_bert_common.files import exists, read_bytes

UNK_TOKEN = "[UNK]"


def load_vocab_list(vocab_file, needed=(UNK_TOKEN,)):
    """Tokens of a `vocab.txt`, one per line, id = line number (Google's `load_vocab`, which
    silently kept a repeated token's last line; here a repeated token is an error, since the
    WordPiece lookup needs one id per token). `needed`: the special tokens it must hold (a
    tokenizer needs [UNK]; converting weights needs none)."""
    data = read_bytes(vocab_file)
    try:
        text = data.decode("utf-8")
    except UnicodeDecodeError as error:
        raise UsageError(f"{vocab_file}: not UTF-8 ({error}); a vocab.txt holds one UTF-8 token per line") from None
    tokens = [line.strip() for line in text.split("\n")]
    if tokens and tokens[-1] == "":
        tokens.pop()
    first_line = {}
    for line, token in enumerate(tokens, start=1):
        if token in first_line:
            what = "a blank line" if token == "" else f"the token {token!r}"
            raise UsageError(
                f"{vocab_file}: {what} is on lines {first_line[token]} and {line}; each token must appear once "
                "(its id is its line number): use the vocab.txt released with the model"
            )
        first_line[token] = line
    check_special_tokens(tokens, vocab_file, needed)
    return tokens


def check_special_tokens(tokens, vocab_file, needed, fix="use the vocab.txt released with the model"):
    """The special tokens a tool needs are in the vocabulary."""
    missing = [token for token in needed if token not in tokens]
    if missing:
        raise UsageError(f"{vocab_file}: has no {' or '.join(missing)} token; {fix}")


# Google's released models by directory name: lower-cased (True) or cased (False).
GOOGLE_CASING = {
    "uncased_L-24_H-1024_A-16": True,
    "uncased_L-12_H-768_A-12": True,
    "multilingual_L-12_H-768_A-12": True,
    "chinese_L-12_H-768_A-12": True,
    "cased_L-12_H-768_A-12": False,
    "cased_L-24_H-1024_A-16": False,
    "multi_cased_L-12_H-768_A-12": False,
}


def google_model_name(checkpoint):
    match = re.match(r"^.*?([A-Za-z0-9_-]+)/bert_model\.ckpt", checkpoint)
    return match.group(1) if match else os.path.basename(os.path.normpath(checkpoint))


def stated_casing(checkpoint):
    """(do_lower_case, what says so) where a model's files state it: a Google model's directory
    name, else a Hugging Face directory's tokenizer_config.json; (None, None) where nothing does."""
    if not checkpoint:
        return None, None
    name = google_model_name(checkpoint)
    if name in GOOGLE_CASING:
        lower = GOOGLE_CASING[name]
        return lower, f"{checkpoint}: {name} is a {'lower-cased' if lower else 'cased'} model"
    path = os.path.join(checkpoint, "tokenizer_config.json")
    if exists(path):
        try:
            lower = json.loads(read_bytes(path)).get("do_lower_case")
        except (ValueError, AttributeError):
            lower = None
        if lower is not None:
            return bool(lower), f"{path}: says do_lower_case={str(bool(lower)).lower()}"
    return None, None


def casing_of(checkpoint, vocab_tokens=None):
    """do_lower_case for a model: what its files state (`stated_casing`), else what its
    vocabulary shows (a cased one holds upper-case words), else None."""
    known, _ = stated_casing(checkpoint)
    if known is not None or vocab_tokens is None:
        return known
    words = [token for token in vocab_tokens if not token.startswith(("[", "##"))]
    # Changed by lower(), not "has an upper-case character": an uncased vocabulary keeps 'ℝ',
    # which is upper case with no lower-case form.
    return not any(word != word.lower() for word in words) if words else None
