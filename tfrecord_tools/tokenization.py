"""`FullTokenizer`: Google's `tokenization.FullTokenizer` API on tensorflow-text ops.

Same tokens as Google's pure-Python tokenizer (see `BertTextTokenizer` for the rules), many times
faster on batches: use `tokenize_batch` / `tokenize_to_ids` for more than a handful of texts.
"""

import numpy as np
import tensorflow as tf

from keras_bert_common.errors import UsageError
from tfrecord_tools.bert_text_tokenizer import BertTextTokenizer
from tfrecord_tools.vocab_file import load_vocab_list, stated_casing


def convert_to_unicode(text):
    """bytes (UTF-8, bad bytes replaced) or str -> str, as Google's helper."""
    if isinstance(text, bytes):
        return text.decode("utf-8", "ignore")
    if isinstance(text, str):
        return text
    raise UsageError(f"Unsupported string type: {type(text)}")


class FullTokenizer:
    """`FullTokenizer(vocab_file, do_lower_case)` with `tokenize`, `convert_tokens_to_ids`,
    `convert_ids_to_tokens`, and batched `tokenize_batch` / `tokenize_to_ids`."""

    def __init__(self, vocab_file, do_lower_case=True):
        self.vocab_file = vocab_file
        self.do_lower_case = do_lower_case
        tokens = load_vocab_list(vocab_file)
        self.inv_vocab = dict(enumerate(tokens))
        # Google's load_vocab: a repeated token keeps its last line number.
        self.vocab = {token: index for index, token in enumerate(tokens)}
        self.text_tokenizer = BertTextTokenizer(tokens, do_lower_case=do_lower_case)
        self._tokenize_fn = tf.function(
            lambda texts: self.text_tokenizer.tokenize(texts),
            input_signature=[tf.TensorSpec([None], tf.string)],
            autograph=False,  # straight-line ops: tracing without autograph saves a second per process
        )

    def tokenize_to_ids(self, texts):
        """list of str/bytes -> list of lists of ids."""
        flat, splits = self.tokenize_to_flat_ids(texts)
        flat, splits = flat.tolist(), splits.tolist()
        return [flat[begin:end] for begin, end in zip(splits[:-1], splits[1:])]

    def tokenize_to_flat_ids(self, texts):
        """list of str/bytes -> (every text's ids one after another, row splits), numpy int64:
        text i is `flat[splits[i]:splits[i + 1]]`."""
        if not texts:
            return np.zeros([0], np.int64), np.zeros([1], np.int64)
        texts = [convert_to_unicode(text).encode("utf-8") for text in texts]
        ids = self._tokenize_fn(tf.constant(texts, tf.string))
        return ids.flat_values.numpy().astype(np.int64), ids.row_splits.numpy().astype(np.int64)

    def tokenize_batch(self, texts):
        """list of str/bytes -> list of lists of WordPiece token strings."""
        inverse = self.inv_vocab
        return [[inverse[i] for i in row] for row in self.tokenize_to_ids(texts)]

    def tokenize(self, text):
        return self.tokenize_batch([text])[0]

    def convert_tokens_to_ids(self, tokens):
        return [self.vocab[token] for token in tokens]

    def convert_ids_to_tokens(self, ids):
        return [self.inv_vocab[i] for i in ids]


def validate_case_matches_checkpoint(do_lower_case, init_checkpoint):
    """Raises when --do_lower_case contradicts the casing a checkpoint's files state: a released
    Google model's name (its bert_model.ckpt prefix or its directory), or a Hugging Face
    directory's tokenizer_config.json (`vocab_file.stated_casing`; the name wins)."""
    lower, why = stated_casing(init_checkpoint)
    if lower is not None and lower != bool(do_lower_case):
        raise UsageError(f"{why} but --do_lower_case={do_lower_case}; pass --do_lower_case={lower}")
