"""Learns a WordPiece `vocab.txt` from raw text files (tensorflow-text's learner).

    python tfrecord_tools/build_vocab.py --input_file=corpus/*.txt --output_file=vocab.txt --vocab_size=8000
"""

import os
import sys

if __package__ in (None, ""):  # run as a script: make the repository importable
    sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))

from absl import app, flags, logging

from tfrecord_tools.atomic_output import atomic_output
from tfrecord_tools.file_patterns import expand_file_patterns
from tfrecord_tools.vocab_builder import RESERVED_TOKENS, build_wordpiece_vocab

FLAGS = flags.FLAGS
flags.DEFINE_string("input_file", None, "Raw text files: a comma list of files or globs.")
flags.DEFINE_string("output_file", None, "Where to write vocab.txt (one token per line).")
flags.DEFINE_integer("vocab_size", 8000, "Largest vocabulary size (the learner aims within 5% below).")
flags.DEFINE_bool("do_lower_case", True, "Lower case and strip accents, as the tokenizer will.")
flags.DEFINE_list("reserved_tokens", list(RESERVED_TOKENS), "Tokens placed first, in this order.")
flags.DEFINE_integer("min_count", 2, "Least number of occurrences for a word to be considered whole.")
flags.mark_flags_as_required(["input_file", "output_file"])


def _lines(paths):
    for path in paths:
        with open(path, encoding="utf-8", errors="replace") as reader:
            for line in reader:
                if line.strip():
                    yield line


def main(_):
    try:
        paths = expand_file_patterns(FLAGS.input_file)
        vocab = build_wordpiece_vocab(_lines(paths), FLAGS.vocab_size, FLAGS.do_lower_case,
                                      FLAGS.reserved_tokens, FLAGS.min_count)
    except (FileNotFoundError, ValueError) as error:
        sys.exit(f"build_vocab: error: {error}")
    with atomic_output(FLAGS.output_file) as writer:
        writer.write("\n".join(vocab) + "\n")
    logging.info("wrote %s: %d tokens", FLAGS.output_file, len(vocab))


if __name__ == "__main__":
    app.run(main)
