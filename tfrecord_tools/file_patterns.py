"""`expand_file_patterns`: Google's comma-separated lists of globs, as every tool takes them."""

import glob

import tensorflow as tf


def expand_file_patterns(file_patterns, flag="--input_file"):
    """A comma list of globs (local or gs://) -> sorted files, or an error naming the pattern
    that matched nothing."""
    files = []
    for pattern in filter(None, (part.strip() for part in file_patterns.split(","))):
        matches = sorted(tf.io.gfile.glob(pattern)) if "://" in pattern else sorted(glob.glob(pattern))
        if not matches:
            raise FileNotFoundError(f"{pattern}: no file matches; check {flag}")
        files.extend(matches)
    if not files:
        raise FileNotFoundError(f"{flag} is empty; pass a comma list of files or globs")
    return files


def format_seconds(seconds):
    """H:MM:SS for progress lines ('?' when unknown)."""
    if seconds != seconds or seconds in (float("inf"), float("-inf")):
        return "?"
    seconds = int(seconds)
    return f"{seconds // 3600}:{seconds % 3600 // 60:02d}:{seconds % 60:02d}"
