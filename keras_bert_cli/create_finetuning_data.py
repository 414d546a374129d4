r"""Creates fine-tuning TFRecords: GLUE-style classification, SQuAD v1.1/v2.0, CoNLL-2003 NER, SWAG.

    python tfrecord_tools/create_finetuning_data.py --task_name=MRPC --data_dir=glue/MRPC \
        --vocab_file=vocab.txt --output_dir=out/mrpc
    python tfrecord_tools/create_finetuning_data.py --task_name=squad --train_file=train-v2.0.json \
        --predict_file=dev-v2.0.json --version_2_with_negative --max_seq_length=384 ...

Writes OUTPUT_DIR/{train,dev,test}.tfrecord (SQuAD: train.tfrecord and predict.tfrecord with its
features sidecar) and OUTPUT_DIR/meta.json; every fine-tuning runner takes OUTPUT_DIR as --data_dir.
"""

import json

from absl import flags, logging

from keras_bert_cli import app
from keras_bert_cli import flags as shared
from keras_bert_common.errors import UsageError

FLAGS = flags.FLAGS
shared.define_tokenizer_flags()
flags.DEFINE_string(
    "task_name",
    None,
    "A GLUE task (CoLA, SST-2, MRPC, QQP, STS-B, MNLI, MNLI-MM, QNLI, RTE, WNLI, "
    "XNLI), tsv (generic), squad, conll or swag.",
)
shared.define_data_dir("Directory of the task's files (not for squad).")
flags.DEFINE_string("output_dir", None, "Where the TFRecords and meta.json go.")
flags.DEFINE_list("splits", ["train", "dev"], "Splits to convert: train, dev, test.")
flags.DEFINE_string("xnli_language", "zh", "XNLI: the language of the dev/test rows and training file.")
flags.DEFINE_integer("text_a_column", 0, "tsv: column of the first text.")
flags.DEFINE_integer("text_b_column", None, "tsv: column of the second text, if any.")
flags.DEFINE_integer("label_column", 1, "tsv: column of the label.")
flags.DEFINE_list("label_names", None, "tsv: the labels in id order (default: sorted labels of the train file).")
flags.DEFINE_bool("is_regression", False, "tsv: float labels and a regression head.")
flags.DEFINE_string("delimiter", "\t", "tsv: the column delimiter (',' for CSV).")
flags.DEFINE_bool("skip_header", True, "tsv: the first line is a header.")
flags.DEFINE_string("train_file", None, "squad: SQuAD JSON for training.")
flags.DEFINE_string("predict_file", None, "squad: SQuAD JSON for predictions.")
flags.DEFINE_bool("version_2_with_negative", False, "squad: SQuAD 2.0, with unanswerable questions.")
flags.DEFINE_integer("doc_stride", 128, "squad: stride between document windows.")
flags.DEFINE_integer("max_query_length", 64, "squad: maximum question length in tokens.")
flags.mark_flags_as_required(["task_name", "vocab_file", "output_dir"])


def _classification_processor():
    from tfrecord_tools.classification_data import ClassificationProcessor

    if FLAGS.task_name.lower() != "tsv":
        return ClassificationProcessor.for_task(
            FLAGS.task_name, FLAGS.data_dir, language=FLAGS.xnli_language, warn=app.Log.warning
        )

    def generic(labels):
        return ClassificationProcessor.generic(
            FLAGS.data_dir,
            FLAGS.text_a_column,
            FLAGS.text_b_column,
            FLAGS.label_column,
            labels,
            FLAGS.is_regression,
            FLAGS.skip_header,
            FLAGS.delimiter,
            warn=app.Log.warning,
        )

    labels = FLAGS.label_names or ()
    if not labels and not FLAGS.is_regression:
        labels = sorted({example.label for example in generic(()).get_examples("train")})
    return generic(labels)


def main(_):
    from keras_bert_common.files import check_readable_file, check_writable
    from keras_bert_common.lean_import import import_tensorflow_text_without_keras

    task = FLAGS.task_name.lower()
    check_readable_file(FLAGS.vocab_file, "--vocab_file", "vocab.txt")
    check_writable(FLAGS.output_dir, "--output_dir", kind="directory")
    unknown = sorted(set(FLAGS.splits) - {"train", "dev", "test"})
    if unknown:
        raise UsageError(f"--splits: unknown split(s) {', '.join(unknown)}; use train, dev and/or test")
    if task != "squad" and not FLAGS.data_dir:
        raise UsageError(f"--task_name={FLAGS.task_name} needs --data_dir")
    if task == "squad" and not (FLAGS.train_file or FLAGS.predict_file):
        raise UsageError("--task_name=squad needs --train_file and/or --predict_file")
    # This process tokenizes and writes records from one thread and builds no model.
    import_tensorflow_text_without_keras()
    from tfrecord_tools import finetuning_data
    from tfrecord_tools.tokenization import FullTokenizer

    tokenizer = FullTokenizer(FLAGS.vocab_file, do_lower_case=FLAGS.do_lower_case)
    if task == "squad":
        meta = finetuning_data.write_squad_data(
            tokenizer,
            FLAGS.max_seq_length,
            FLAGS.output_dir,
            FLAGS.train_file,
            FLAGS.predict_file,
            FLAGS.version_2_with_negative,
            FLAGS.doc_stride,
            FLAGS.max_query_length,
            warn=app.Log.warning,
        )
    elif task == "conll":
        meta = finetuning_data.write_conll_data(
            FLAGS.data_dir, FLAGS.splits, tokenizer, FLAGS.max_seq_length, FLAGS.output_dir, warn=app.Log.warning
        )
    elif task == "swag":
        meta = finetuning_data.write_swag_data(
            FLAGS.data_dir, FLAGS.splits, tokenizer, FLAGS.max_seq_length, FLAGS.output_dir, warn=app.Log.warning
        )
    else:
        meta = finetuning_data.write_classification_data(
            _classification_processor(),
            FLAGS.task_name,
            FLAGS.splits,
            tokenizer,
            FLAGS.max_seq_length,
            FLAGS.output_dir,
        )
    logging.info("wrote %s: %s", FLAGS.output_dir, json.dumps(meta["counts"]))


def console_main():
    app.run(main, "create_finetuning_data")


if __name__ == "__main__":
    console_main()
