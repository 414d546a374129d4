"""Learns a WordPiece `vocab.txt` from raw text files (tensorflow-text's learner).

python tfrecord_tools/build_vocab.py --input_file=corpus/*.txt --output_file=vocab.txt --vocab_size=8000
"""

import os

from absl import flags, logging

from keras_bert_cli import app

FLAGS = flags.FLAGS
flags.DEFINE_string("input_file", None, "Raw text files: a comma list of files or globs.")
flags.DEFINE_string("output_file", None, "Where to write vocab.txt (one token per line).")
flags.DEFINE_integer(
    "vocab_size",
    8000,
    "Largest vocabulary size: the vocabulary has at most this many tokens (usually within 5% below).",
)
flags.DEFINE_bool("do_lower_case", True, "Lower case and strip accents, as the tokenizer will.")
flags.DEFINE_list(
    "reserved_tokens", ["[PAD]", "[UNK]", "[CLS]", "[SEP]", "[MASK]"], "Tokens placed first, in this order."
)
flags.DEFINE_integer("min_count", 2, "Least number of occurrences for a word to be considered whole.")
flags.mark_flags_as_required(["input_file", "output_file"])


def main(_):
    from keras_bert_common.files import (
        atomic_output,
        check_outputs_distinct,
        check_text_files,
        check_writable,
        expand_file_patterns,
    )
    from tfrecord_tools.vocab_builder import build_wordpiece_vocab, check_vocab_size, read_lines

    check_vocab_size(FLAGS.vocab_size, FLAGS.reserved_tokens)
    paths = expand_file_patterns(FLAGS.input_file, log=app.Log())
    check_writable(FLAGS.output_file, "--output_file")
    check_outputs_distinct([FLAGS.output_file], paths)
    check_text_files(paths, "--input_file")
    vocab = build_wordpiece_vocab(
        read_lines(paths, warn=app.Log.warning),
        FLAGS.vocab_size,
        FLAGS.do_lower_case,
        FLAGS.reserved_tokens,
        FLAGS.min_count,
        source=", ".join(paths),
        log=app.Log(),
        total_bytes=sum(os.path.getsize(path) for path in paths),
    )
    with atomic_output(FLAGS.output_file) as writer:
        writer.write("\n".join(vocab) + "\n")
    logging.info("wrote %s: %d tokens", FLAGS.output_file, len(vocab))


def console_main():
    app.run(main, "build_vocab")


if __name__ == "__main__":
    console_main()
