r"""Creates masked-LM / next-sentence pretraining TFRecords; Google's flags and schema.

    python tfrecord_tools/create_pretraining_data.py --input_file=corpus/*.txt \
        --output_file=out/train.tfrecord --vocab_file=vocab.txt --num_workers=8

--nonext_sentence_prediction writes masked-LM-only records (RoBERTa's FULL-SENTENCES inputs).
"""

import tempfile

from absl import flags, logging

from keras_bert_cli import app
from keras_bert_cli import flags as shared
from keras_bert_common.errors import UsageError

FLAGS = flags.FLAGS
shared.define_tokenizer_flags()
flags.DEFINE_string("input_file", None, "Input raw text file (or comma-separated list of files / globs).")
flags.DEFINE_string("output_file", None, "Output TF example file (or comma-separated list of files).")
flags.DEFINE_bool("do_whole_word_mask", False, "Whether to use whole word masking rather than per-WordPiece masking.")
flags.DEFINE_integer("max_predictions_per_seq", 20, "Maximum number of masked LM predictions per sequence.")
flags.DEFINE_integer("random_seed", 12345, "Random seed for data generation.")
flags.DEFINE_integer("dupe_factor", 10, "Number of times to duplicate the input data (with different masks).")
flags.DEFINE_float("masked_lm_prob", 0.15, "Masked LM probability.")
flags.DEFINE_float("short_seq_prob", 0.1, "Probability of creating sequences shorter than the maximum length.")
flags.DEFINE_integer(
    "num_workers", 1, "Processes working on units of text in parallel; output is identical for any value."
)
flags.DEFINE_integer(
    "unit_bytes",
    4 << 20,
    "Bytes of input text per unit of work (the input files read one after another: small files share a unit): "
    "the memory bound of a worker, and the pool random-next segments come from. A document longer than a unit "
    "belongs to the unit it starts in; the units inside it hold none.",
)
flags.DEFINE_bool(
    "dynamic_masking",
    False,
    "Write each instance once and unmasked; run_pretraining.py masks it anew every time it reads it "
    "(--dupe_factor defaults to 1 then).",
)
flags.DEFINE_bool(
    "next_sentence_prediction",
    True,
    "Google's sentence pairs with next-sentence labels. --nonext_sentence_prediction writes masked-LM-only "
    "records instead: RoBERTa's FULL-SENTENCES inputs (whole sentences packed up to --max_seq_length, one "
    "segment, an extra [SEP] between documents), which run_pretraining.py trains without the NSP head.",
)
flags.DEFINE_bool(
    "doc_sentences",
    False,
    "With --nonext_sentence_prediction: RoBERTa's DOC-SENTENCES, inputs that never cross a document's end.",
)
flags.DEFINE_integer(
    "num_output_shards",
    0,
    "Write --output_file as OUTPUT-00000-of-000NN shards (the Beam pipeline's default is 16); 0: the files "
    "--output_file lists.",
)
flags.DEFINE_string(
    "beam_pipeline_options",
    None,
    "Run on Apache Beam instead of local processes: comma-separated pipeline flags, as TensorFlow Datasets "
    "takes them, e.g. runner=DirectRunner,direct_num_workers=2,direct_running_mode=multi_processing or "
    "runner=DataflowRunner,project=P,region=R,temp_location=gs://B/tmp. Needs pip install .[beam].",
)
flags.mark_flags_as_required(["input_file", "output_file", "vocab_file"])


def _options():
    from tfrecord_tools.pretraining_data import PretrainingDataOptions

    dupe_factor = FLAGS.dupe_factor
    if FLAGS.dynamic_masking and not FLAGS["dupe_factor"].present:
        dupe_factor = 1  # the masks vary anyway; duplicates would only vary the sentence pairs
    for name, value, low in (
        ("max_seq_length", FLAGS.max_seq_length, 5),
        ("dupe_factor", dupe_factor, 1),
        ("max_predictions_per_seq", FLAGS.max_predictions_per_seq, 1),
        ("num_workers", FLAGS.num_workers, 1),
        ("unit_bytes", FLAGS.unit_bytes, 1),
        ("num_output_shards", FLAGS.num_output_shards, 0),
    ):
        if value < low:
            raise UsageError(f"--{name}={value}: must be at least {low}")
    if FLAGS.max_predictions_per_seq > FLAGS.max_seq_length:
        raise UsageError(
            f"--max_predictions_per_seq={FLAGS.max_predictions_per_seq}: more than the --max_seq_length="
            f"{FLAGS.max_seq_length} tokens a sequence has; Google uses 20 at 128 and 80 at 512"
        )
    for name in ("masked_lm_prob", "short_seq_prob"):
        if not 0 <= FLAGS[name].value <= 1 or (name == "masked_lm_prob" and not FLAGS[name].value):
            raise UsageError(f"--{name}={FLAGS[name].value}: must be a probability in (0, 1]")
    if FLAGS.doc_sentences and FLAGS.next_sentence_prediction:
        raise UsageError(
            "--doc_sentences is an input format for masked-LM-only records; add --nonext_sentence_prediction"
        )
    return PretrainingDataOptions(
        vocab_file=FLAGS.vocab_file,
        do_lower_case=FLAGS.do_lower_case,
        do_whole_word_mask=FLAGS.do_whole_word_mask,
        max_seq_length=FLAGS.max_seq_length,
        max_predictions_per_seq=FLAGS.max_predictions_per_seq,
        random_seed=FLAGS.random_seed,
        dupe_factor=dupe_factor,
        masked_lm_prob=FLAGS.masked_lm_prob,
        short_seq_prob=FLAGS.short_seq_prob,
        num_workers=FLAGS.num_workers,
        unit_bytes=FLAGS.unit_bytes,
        dynamic_masking=FLAGS.dynamic_masking,
        next_sentence_prediction=FLAGS.next_sentence_prediction,
        doc_sentences=FLAGS.doc_sentences,
    )


def _beam(options, outputs):
    try:
        from tfrecord_tools.pretraining_beam import DEFAULT_BEAM_SHARDS, run_beam_pipeline
    except ImportError as error:
        raise UsageError(f"--beam_pipeline_options needs Apache Beam ({error}); pip install .[beam]") from None
    if len(outputs) != 1:
        raise UsageError("--beam_pipeline_options: --output_file is one prefix (shards OUTPUT-00000-of-000NN)")
    # Beam's portable runners leave empty directories in TMPDIR (three a run on DirectRunner's
    # multi_processing mode): they get one of ours, removed with them after the pipeline.
    with tempfile.TemporaryDirectory(prefix="create_pretraining_data-beam-") as scratch:
        previous, tempfile.tempdir = tempfile.tempdir, scratch
        try:
            return run_beam_pipeline(
                FLAGS.input_file,
                outputs[0],
                options,
                FLAGS.beam_pipeline_options,
                FLAGS.num_output_shards or DEFAULT_BEAM_SHARDS,
                log=app.Log(),
            )
        finally:
            tempfile.tempdir = previous


def main(_):
    from keras_bert_common.files import (
        check_outputs_distinct,
        check_readable_file,
        check_text_files,
        check_writable,
        expand_file_patterns,
    )
    from tfrecord_tools.pretraining_data import create_pretraining_data

    options = _options()
    check_readable_file(FLAGS.vocab_file, "--vocab_file", "vocab.txt")
    outputs = [path.strip() for path in FLAGS.output_file.split(",") if path.strip()]
    for path in outputs:
        check_writable(path, "--output_file")
    if FLAGS.beam_pipeline_options:
        summary, outputs = _beam(options, outputs)
    else:
        inputs = expand_file_patterns(FLAGS.input_file, log=app.Log())
        if FLAGS.num_output_shards:
            if len(outputs) != 1:
                raise UsageError("--num_output_shards: --output_file must be one prefix")
            outputs = [f"{outputs[0]}-{i:05d}-of-{FLAGS.num_output_shards:05d}" for i in range(FLAGS.num_output_shards)]
        check_outputs_distinct(outputs, inputs + [FLAGS.vocab_file])
        check_text_files(inputs, "--input_file")
        logging.info("reading %d input file(s), writing %d output file(s)", len(inputs), len(outputs))
        if options.num_workers == 1:
            from keras_bert_common.lean_import import import_tensorflow_text_without_keras

            # This process works the units itself and builds no model.
            import_tensorflow_text_without_keras()
        summary = create_pretraining_data(inputs, outputs, options, log=app.Log(), warn=app.Log.warning)
    for line in summary.lines(options.next_sentence_prediction):
        logging.info(line)
    warning = summary.single_document_warning(options.next_sentence_prediction)
    if warning:
        app.Log.warning(f"{FLAGS.input_file}: {warning}")
    for path in outputs:
        logging.info("wrote %s", path)


def console_main():
    app.run(main, "create_pretraining_data")


if __name__ == "__main__":
    console_main()
