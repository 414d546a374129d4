"""Creates fine-tuning TFRecords: GLUE-style classification, SQuAD v1.1/v2.0, CoNLL-2003 NER, SWAG.

    python tfrecord_tools/create_finetuning_data.py --task_name=MRPC --data_dir=glue/MRPC \
        --vocab_file=vocab.txt --output_dir=out/mrpc
    python tfrecord_tools/create_finetuning_data.py --task_name=squad --train_file=train-v2.0.json \
        --predict_file=dev-v2.0.json --version_2_with_negative --max_seq_length=384 ...

Writes OUTPUT_DIR/{train,dev,test}.tfrecord (SQuAD: train.tfrecord and predict.tfrecord with its
features sidecar) and OUTPUT_DIR/meta.json (task, labels, counts).
"""

import json
import os
import sys

if __package__ in (None, ""):  # run as a script: make the repository importable
    sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))

from absl import app, flags, logging

from tfrecord_tools.atomic_output import atomic_output

FLAGS = flags.FLAGS
flags.DEFINE_string("task_name", None, "A GLUE task (CoLA, SST-2, MRPC, QQP, STS-B, MNLI, MNLI-MM, QNLI, RTE, WNLI, "
                    "XNLI), tsv (generic), squad, conll or swag.")
flags.DEFINE_string("data_dir", None, "Directory of the task's files (not for squad).")
flags.DEFINE_string("vocab_file", None, "The vocabulary file that the BERT model was trained on.")
flags.DEFINE_bool("do_lower_case", True, "Whether to lower case the input text.")
flags.DEFINE_integer("max_seq_length", 128, "Maximum total input sequence length after WordPiece tokenization.")
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

_SPLIT_FILES = {"conll": {"train": "eng.train", "dev": "eng.testa", "test": "eng.testb"},
                "swag": {"train": "train.csv", "dev": "val.csv", "test": "test.csv"}}


def _classification(tokenizer, meta):
    from tfrecord_tools.classification_data import ClassificationProcessor, write_classification_tfrecord

    if FLAGS.task_name.lower() == "tsv":
        def generic(labels):
            return ClassificationProcessor.generic(
                FLAGS.data_dir, FLAGS.text_a_column, FLAGS.text_b_column, FLAGS.label_column, labels,
                FLAGS.is_regression, FLAGS.skip_header, FLAGS.delimiter, warn=logging.warning)

        labels = FLAGS.label_names or ()
        if not labels and not FLAGS.is_regression:
            labels = sorted({example.label for example in generic(()).get_examples("train")})
        processor = generic(labels)
    else:
        processor = ClassificationProcessor.for_task(FLAGS.task_name, FLAGS.data_dir, language=FLAGS.xnli_language,
                                                     warn=logging.warning)
    meta.update(labels=processor.labels, is_regression=processor.is_regression)
    for split in FLAGS.splits:
        examples = processor.get_examples(split)
        path = os.path.join(FLAGS.output_dir, f"{split}.tfrecord")
        meta["counts"][split] = write_classification_tfrecord(examples, processor.labels, FLAGS.max_seq_length,
                                                              tokenizer, path, processor.is_regression)
    meta["skipped_rows"] = processor.skipped


def _squad(tokenizer, meta):
    from tfrecord_tools.squad_data import convert_examples_to_features, read_squad_examples, write_squad_tfrecord

    for name, path, is_training in (("train", FLAGS.train_file, True), ("predict", FLAGS.predict_file, False)):
        if not path:
            continue
        examples, skipped = read_squad_examples(path, is_training, FLAGS.version_2_with_negative, warn=logging.warning)
        features = convert_examples_to_features(examples, tokenizer, FLAGS.max_seq_length, FLAGS.doc_stride,
                                                FLAGS.max_query_length, is_training)
        output = os.path.join(FLAGS.output_dir, f"{name}.tfrecord")
        meta["counts"][name] = write_squad_tfrecord(features, FLAGS.max_seq_length, is_training, output)
        meta[f"{name}_examples"], meta[f"{name}_skipped"] = len(examples), skipped


def _conll(tokenizer, meta):
    from tfrecord_tools.ner_data import CONLL_LABELS, ConllReader, write_ner_tfrecord

    reader = ConllReader(warn=logging.warning)
    meta["labels"] = list(CONLL_LABELS)
    for split in FLAGS.splits:
        sentences = reader.read(os.path.join(FLAGS.data_dir, _SPLIT_FILES["conll"][split]))
        output = os.path.join(FLAGS.output_dir, f"{split}.tfrecord")
        meta["counts"][split], kept = write_ner_tfrecord(sentences, CONLL_LABELS, FLAGS.max_seq_length, tokenizer, output)
        meta[f"{split}_truncated_sentences"] = sum(k < len(s.words) for k, s in zip(kept, sentences))
    meta["skipped_sentences"] = reader.skipped


def _swag(tokenizer, meta):
    from tfrecord_tools.swag_data import SwagReader, write_swag_tfrecord

    reader = SwagReader(warn=logging.warning)
    for split in FLAGS.splits:
        examples = reader.read(os.path.join(FLAGS.data_dir, _SPLIT_FILES["swag"][split]))
        output = os.path.join(FLAGS.output_dir, f"{split}.tfrecord")
        meta["counts"][split] = write_swag_tfrecord(examples, FLAGS.max_seq_length, tokenizer, output)
    meta["skipped_rows"] = reader.skipped


def main(_):
    from tfrecord_tools.tokenization import FullTokenizer

    task = FLAGS.task_name.lower()
    try:
        if not os.path.isfile(FLAGS.vocab_file):
            raise FileNotFoundError(f"{FLAGS.vocab_file}: no such file; pass --vocab_file=PATH/vocab.txt")
        if task != "squad" and not FLAGS.data_dir:
            raise ValueError(f"--task_name={FLAGS.task_name} needs --data_dir")
        if task == "squad" and not (FLAGS.train_file or FLAGS.predict_file):
            raise ValueError("--task_name=squad needs --train_file and/or --predict_file")
        tokenizer = FullTokenizer(FLAGS.vocab_file, do_lower_case=FLAGS.do_lower_case)
        os.makedirs(FLAGS.output_dir, exist_ok=True)
        meta = {"task_name": FLAGS.task_name, "max_seq_length": FLAGS.max_seq_length,
                "do_lower_case": FLAGS.do_lower_case, "counts": {}}
        {"squad": _squad, "conll": _conll, "swag": _swag}.get(task, _classification)(tokenizer, meta)
    except (FileNotFoundError, ValueError, KeyError) as error:
        sys.exit(f"create_finetuning_data: error: {error}")
    with atomic_output(os.path.join(FLAGS.output_dir, "meta.json")) as writer:
        json.dump(meta, writer, indent=2)
    logging.info("wrote %s: %s", FLAGS.output_dir, json.dumps(meta["counts"]))


if __name__ == "__main__":
    app.run(main)
