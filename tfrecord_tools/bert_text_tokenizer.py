"""`BertTextTokenizer`: Google's BERT tokenization as TensorFlow ops (tf.data, SavedModel, batches).

Google's BasicTokenizer rules are written out as RE2 / tensorflow-text ops, then
tensorflow-text's FastWordpieceTokenizer does the greedy longest-match WordPiece step:

1. drop U+0000, U+FFFD and control/format characters (Cc, Cf) except tab, CR, LF;
   tab, CR, LF and space separators (Zs) become a space;
2. put spaces around CJK ideographs (Google's code-point ranges);
3. with lower casing: Unicode lower case (Python's `str.lower`), NFD, drop marks (Mn);
4. split on white space and around every punctuation character (ASCII symbols and \\p{P});
5. a word over 200 characters becomes [UNK]; otherwise WordPiece with `##` continuations,
   and [UNK] for a word that has no complete segmentation.
"""

import re

import tensorflow as tf
import tensorflow_text as tf_text

from tfrecord_tools.vocab_file import UNK_TOKEN, load_vocab_list

MAX_CHARS_PER_WORD = 200

_CJK = (
    r"\x{4E00}-\x{9FFF}\x{3400}-\x{4DBF}\x{20000}-\x{2A6DF}\x{2A700}-\x{2B73F}"
    r"\x{2B740}-\x{2B81F}\x{2B820}-\x{2CEAF}\x{F900}-\x{FAFF}\x{2F800}-\x{2FA1F}"
)
# Google's _is_punctuation: the ASCII symbol ranges plus every Unicode punctuation category.
_PUNCTUATION = r"[!-/:-@\[-`{-~]|\p{P}"
# After step 1 the only white space left that Python's str.split() honours is ' ', U+2028, U+2029.
_WHITESPACE = r"[ \x{2028}\x{2029}]"


class BertTextTokenizer(tf.Module):
    """Raw UTF-8 strings -> WordPiece ids (or words), matching Google's `FullTokenizer`."""

    def __init__(self, vocab, do_lower_case=True, keep_tokens=(), name=None):
        """`keep_tokens`: vocabulary entries that `tokenize_flat_with_offsets` (the serving
        tokenizer) keeps whole where they appear in the text, before casing and punctuation
        splitting (`[MASK]` for fill-mask serving, as Hugging Face's tokenizers treat special
        tokens); `tokenize`, the data path, keeps none, as Google's tokenizer."""
        super().__init__(name=name)
        # A local list: a list attribute of a tf.Module would be wrapped and tracked item by item.
        tokens = list(vocab) if not isinstance(vocab, str) else load_vocab_list(vocab)
        missing = [token for token in keep_tokens if token not in tokens]
        if missing:
            raise ValueError(f"keep_tokens {', '.join(missing)}: not in the vocabulary")
        self.vocab_size = len(tokens)
        self.do_lower_case = do_lower_case
        self.keep_tokens = tuple(keep_tokens)
        self.unk_id = tokens.index(UNK_TOKEN)
        self._vocab_tensor = tf.constant(tokens)
        self._wordpiece = tf_text.FastWordpieceTokenizer(
            vocab=tokens,
            suffix_indicator="##",
            max_bytes_per_word=4 * MAX_CHARS_PER_WORD,  # the character limit is applied below
            token_out_type=tf.int64,
            unknown_token=UNK_TOKEN,
            no_pretokenization=True,
            support_detokenization=False,
        )

    def normalize(self, texts, split_cjk=True):
        """Steps 1-3 on a string tensor of any shape (step 2 only with `split_cjk`)."""
        texts = tf.strings.regex_replace(texts, r"[\t\n\r]", " ")
        texts = tf.strings.regex_replace(texts, r"[\x{0}\x{FFFD}\p{Cc}\p{Cf}]", "")
        texts = tf.strings.regex_replace(texts, r"\p{Zs}", " ")
        if split_cjk:
            texts = tf.strings.regex_replace(texts, f"([{_CJK}])", r" \1 ")
        if self.do_lower_case:
            texts = tf.strings.lower(texts, encoding="utf-8")
            texts = tf_text.normalize_utf8(texts, "NFD")
            texts = tf.strings.regex_replace(texts, r"\p{Mn}", "")
        return texts

    def split_words(self, texts):
        """[B] strings -> [B, (words)] normalized words, as Google's BasicTokenizer returns them."""
        return tf_text.regex_split(
            self.normalize(texts),
            delim_regex_pattern=f"{_WHITESPACE}|{_PUNCTUATION}",
            keep_delim_regex_pattern=_PUNCTUATION,
        )

    def tokenize_words(self, words):
        """[B, (words)] -> [B, (words), (pieces)] int64 ids."""
        # A word over the limit is one [UNK]: the vocabulary entry "[UNK]" matches itself whole.
        too_long = tf.strings.length(words.flat_values, unit="UTF8_CHAR") > MAX_CHARS_PER_WORD
        words = words.with_flat_values(tf.where(too_long, UNK_TOKEN, words.flat_values))
        return self._wordpiece.tokenize(words)

    def tokenize(self, texts):
        """[B] strings -> [B, (tokens)] int64 WordPiece ids (words merged)."""
        return self.tokenize_words(self.split_words(texts)).merge_dims(-2, -1)

    def ids_to_tokens(self, ids):
        """Ids of any (ragged) shape -> the token strings."""
        if isinstance(ids, tf.RaggedTensor):
            return ids.with_flat_values(tf.gather(self._vocab_tensor, ids.flat_values))
        return tf.gather(self._vocab_tensor, ids)

    def tokenize_flat_with_offsets(self, texts):
        """[B] strings -> (ids, rows, begins, ends), flat over the batch's tokens in order: each
        token's id, the index of its text, and the byte span in that text of the word it came from
        (all of a word's pieces share its span). Flat tensors keep a serving graph small: every
        ragged op adds hundreds of graph nodes, which cost more than the work at batch 1.

        The original text is split first (white space, punctuation and CJK characters as above)
        and each word normalized on its own, which keeps the offsets; the tokens are the same."""
        # NUL would end the splitter's input early; another control character (dropped later
        # as NUL is) keeps every byte offset.
        texts = tf.strings.regex_replace(texts, r"\x{0}", "\x01")
        # Kept tokens first: RE2 takes the first alternative that matches at a position.
        kept = "".join(f"{re.escape(token)}|" for token in self.keep_tokens)
        words, begins, ends = tf_text.regex_split_with_offsets(
            texts,
            delim_regex_pattern=f"{kept}[\\t\\n\\r\\p{{Zs}}\\x{{2028}}\\x{{2029}}]|{_PUNCTUATION}|[{_CJK}]",
            keep_delim_regex_pattern=f"{kept}{_PUNCTUATION}|[{_CJK}]",
        )
        rows = words.value_rowids()
        normalized = self.normalize(words.flat_values, split_cjk=False)
        if self.keep_tokens:  # as written, not lower-cased: the vocabulary entry matches it whole
            is_kept = tf.reduce_any(tf.equal(words.flat_values[:, None], tf.constant(self.keep_tokens)[None, :]), -1)
            normalized = tf.where(is_kept, words.flat_values, normalized)
        # A word of only dropped characters (controls, marks) is no word.
        keep = tf.strings.length(normalized) > 0
        normalized, rows, begins, ends = (
            tf.boolean_mask(values, keep) for values in (normalized, rows, begins.flat_values, ends.flat_values)
        )
        # A word over the limit is one [UNK]: the vocabulary entry "[UNK]" matches itself whole.
        too_long = tf.strings.length(normalized, unit="UTF8_CHAR") > MAX_CHARS_PER_WORD
        pieces = self._wordpiece.tokenize(tf.where(too_long, UNK_TOKEN, normalized))  # [words, (pieces)]
        per_word = pieces.row_lengths()
        return pieces.flat_values, tf.repeat(rows, per_word), tf.repeat(begins, per_word), tf.repeat(ends, per_word)

    def tokenize_with_offsets(self, texts):
        """[B] strings -> (ids, begins, ends), each [B, (tokens)]; see `tokenize_flat_with_offsets`."""
        ids, rows, begins, ends = self.tokenize_flat_with_offsets(texts)
        nrows = tf.shape(texts, out_type=tf.int64)[0]
        return tuple(
            tf.RaggedTensor.from_value_rowids(values, rows, nrows=nrows, validate=False)
            for values in (ids, begins, ends)
        )
