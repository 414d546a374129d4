"""Name tables between Google's TF1 names and another format's: templates such as
`encoder/layer_{i}/attention/self/{qkv}/kernel` compiled to patterns, and one lookup that renames a
name by the first row that matches it, in either direction (`hf_weights`, `keras_hub_weights`)."""

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
