"""Name tables between Google's TF1 names and another format's: templates such as
`encoder/layer_{i}/attention/self/{qkv}/kernel` compiled to patterns, and one lookup that renames a
name by the first row that matches it, in either direction (`hf_weights`, `keras_hub_weights`); and
`implied_config`, what a checkpoint's weight shapes say of its config (every format's checks)."""

import re

_GROUPS = {"i": r"(?P<i>\d+)", "qkv": r"(?P<qkv>query|key|value)"}


def template_pattern(template):
    """A table template as a regex: `{i}` and `{qkv}` become named groups."""
    parts = re.split(r"\{(\w+)\}", template)
    return re.compile("".join(_GROUPS[part] if index % 2 else re.escape(part) for index, part in enumerate(parts)))


def compile_rows(rows):
    """(other template, Google template, *extra) rows -> (other pattern, Google pattern, other
    template, Google template, *extra)."""
    return tuple(
        (template_pattern(other), template_pattern(google), other, google, *extra) for other, google, *extra in rows
    )


def rename(name, rows, to_google):
    """(`name` renamed by the first compiled row that matches it, that row), or (None, None).
    `to_google`: `name` is the other format's; else it is Google's."""
    pattern_at, template_at = (0, 3) if to_google else (1, 2)
    for row in rows:
        match = row[pattern_at].fullmatch(name)
        if match:
            return row[template_at].format(**match.groupdict()), row
    return None, None


# (config key, checkpoint name pattern of a weight whose shape gives it, which dimension).
_IMPLIED = (
    ("vocab_size", r"(^bert/embeddings/word_embeddings$|word_embeddings/_embeddings$)", 0),
    ("hidden_size", r"(^bert/embeddings/word_embeddings$|word_embeddings/_embeddings$)", 1),
    ("max_position_embeddings", r"(^bert/embeddings/position_embeddings$|position_embeddings/_embeddings$)", 0),
    ("type_vocab_size", r"(^bert/embeddings/token_type_embeddings$|token_type_embeddings/_embeddings$)", 0),
    ("intermediate_size", r"(^bert/encoder/layer_0/intermediate/dense/kernel$|/intermediate/_kernel$)", 1),
)
_QUERY = re.compile(r"(^bert/encoder/layer_\d+/attention/self/query/kernel$|/self_attention/query/_kernel$)")


def implied_config(shapes):
    """The config values a checkpoint's weight shapes imply ({key: value}, where it can tell);
    `shapes` maps names (model paths) to (checkpoint key, shape)."""
    implied = {}
    for key, pattern, dimension in _IMPLIED:
        for name, (_, shape) in shapes.items():
            if re.search(pattern, name) and len(shape) > dimension:
                implied[key] = int(shape[dimension])
                break
    # One query kernel per layer, however many paths lead to it.
    layers = {checkpoint_key for name, (checkpoint_key, _) in shapes.items() if _QUERY.search(name)}
    if layers:
        implied["num_hidden_layers"] = len(layers)
    return implied
