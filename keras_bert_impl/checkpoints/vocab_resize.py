"""`extend_word_embeddings`: Google-named weights grown to an extended vocabulary.

Rows of the tokens both vocabularies share stay bit-identical; each new token (in a former
`[unusedK]` slot or appended) starts as the mean of the rows of the pieces the old vocabulary
split it into, in the word embeddings and in the MLM output bias (tied decoder: the same rows).
"""

import re

import numpy as np

from keras_bert_impl.errors import CheckpointMismatchError

WORD_EMBEDDINGS = "bert/embeddings/word_embeddings"
OUTPUT_BIAS = "cls/predictions/output_bias"
_UNUSED = re.compile(r"^\[unused\d+\]$")


def check_extends(base_tokens, new_tokens, base_source, new_source):
    """`new_tokens` keeps every token of `base_tokens` at its id (an `[unusedK]` slot may hold a
    new token); one line naming the first row that differs otherwise."""
    if len(new_tokens) < len(base_tokens):
        raise CheckpointMismatchError(
            f"{new_source}: has {len(new_tokens)} tokens, fewer than the {len(base_tokens)} of {base_source}; "
            "an extended vocabulary keeps every base token"
        )
    for index, (old, new) in enumerate(zip(base_tokens, new_tokens)):
        if old != new and not _UNUSED.match(old):
            raise CheckpointMismatchError(
                f"{new_source}: row {index} is {new!r} where {base_source} has {old!r}; the vocabulary is not an "
                "extension of the checkpoint's (extend the model's own vocab.txt)"
            )


def new_token_ids(base_tokens, new_tokens):
    """Ids whose token is new: a former `[unusedK]` slot that now holds another token, or appended."""
    changed = [index for index, (old, new) in enumerate(zip(base_tokens, new_tokens)) if old != new]
    return changed + list(range(len(base_tokens), len(new_tokens)))


def extend_word_embeddings(weights, base_tokens, new_tokens, base_pieces, source="the checkpoint"):
    """`weights` with the word embeddings (and the MLM output bias, if there is one) grown to
    `new_tokens`; `base_pieces[token]` lists the base ids a new token was split into."""
    rows = np.shape(weights[WORD_EMBEDDINGS])[0]
    if rows != len(base_tokens):
        raise CheckpointMismatchError(
            f"{source}: has {rows} word embeddings but its vocabulary {len(base_tokens)} tokens; pass the "
            "vocab.txt released with the checkpoint"
        )
    grown = dict(weights)
    for name in (WORD_EMBEDDINGS, OUTPUT_BIAS):
        if name not in weights:
            continue
        old = np.asarray(weights[name])
        new = np.concatenate([old, np.zeros((len(new_tokens) - rows,) + old.shape[1:], old.dtype)])
        for index in new_token_ids(base_tokens, new_tokens):
            new[index] = old[base_pieces[new_tokens[index]]].mean(axis=0).astype(old.dtype)
        grown[name] = new
    return grown
