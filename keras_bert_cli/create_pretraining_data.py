"""Creates masked-LM / next-sentence pretraining TFRecords; Google's flags and schema.

    python tfrecord_tools/create_pretraining_data.py --input_file=corpus/*.txt \
        --output_file=out/train.tfrecord --vocab_file=vocab.txt --num_workers=8
"""

from absl import flags, logging

from keras_bert_cli import app

FLAGS = flags.FLAGS
flags.DEFINE_string("input_file", None, "Input raw text file (or comma-separated list of files / globs).")
flags.DEFINE_string("output_file", None, "Output TF example file (or comma-separated list of files).")
flags.DEFINE_string("vocab_file", None, "The vocabulary file that the BERT model was trained on.")
flags.DEFINE_bool("do_lower_case", True, "Whether to lower case the input text.")
flags.DEFINE_bool("do_whole_word_mask", False, "Whether to use whole word masking rather than per-WordPiece masking.")
flags.DEFINE_integer("max_seq_length", 128, "Maximum sequence length.")
flags.DEFINE_integer("max_predictions_per_seq", 20, "Maximum number of masked LM predictions per sequence.")
flags.DEFINE_integer("random_seed", 12345, "Random seed for data generation.")
flags.DEFINE_integer("dupe_factor", 10, "Number of times to duplicate the input data (with different masks).")
flags.DEFINE_float("masked_lm_prob", 0.15, "Masked LM probability.")
flags.DEFINE_float("short_seq_prob", 0.1, "Probability of creating sequences shorter than the maximum length.")
flags.DEFINE_integer(
    "num_workers", 1, "Processes working on units of documents in parallel; output is identical for any value."
)
flags.DEFINE_integer(
    "documents_per_unit", 256, "Documents per unit: the memory bound, and the pool random-next segments come from."
)
flags.mark_flags_as_required(["input_file", "output_file", "vocab_file"])


def main(_):
    from tfrecord_tools.files import check_readable_file, check_writable, expand_file_patterns
    from tfrecord_tools.pretraining_data import PretrainingDataOptions, create_pretraining_data

    inputs = expand_file_patterns(FLAGS.input_file)
    check_readable_file(FLAGS.vocab_file, "--vocab_file", "vocab.txt")
    for name, low in (
        ("max_seq_length", 5),
        ("dupe_factor", 1),
        ("max_predictions_per_seq", 1),
        ("num_workers", 1),
        ("documents_per_unit", 1),
    ):
        if FLAGS[name].value < low:
            raise ValueError(f"--{name}={FLAGS[name].value}: must be at least {low}")
    outputs = [path.strip() for path in FLAGS.output_file.split(",") if path.strip()]
    for path in outputs:
        check_writable(path, "--output_file")
    options = PretrainingDataOptions(
        vocab_file=FLAGS.vocab_file,
        do_lower_case=FLAGS.do_lower_case,
        do_whole_word_mask=FLAGS.do_whole_word_mask,
        max_seq_length=FLAGS.max_seq_length,
        max_predictions_per_seq=FLAGS.max_predictions_per_seq,
        random_seed=FLAGS.random_seed,
        dupe_factor=FLAGS.dupe_factor,
        masked_lm_prob=FLAGS.masked_lm_prob,
        short_seq_prob=FLAGS.short_seq_prob,
        num_workers=FLAGS.num_workers,
        documents_per_unit=FLAGS.documents_per_unit,
    )
    logging.info("reading %d input file(s), writing %d output file(s)", len(inputs), len(outputs))
    summary = create_pretraining_data(inputs, outputs, options, log=app.Log(), warn=app.Log.warning)
    for line in summary.lines():
        logging.info(line)
    for path in outputs:
        logging.info("wrote %s", path)


def console_main():
    app.run(main, "create_pretraining_data")


if __name__ == "__main__":
    console_main()
