r"""BERT fine-tuning for sentence (pair) classification and regression: GLUE tasks, XNLI, any TSV.

    python run_classifier.py --task_name=MRPC --do_train --do_eval --data_dir=glue/MRPC \
        --vocab_file=vocab.txt --bert_config_file=bert_config.json --init_checkpoint=bert_model.ckpt \
        --max_seq_length=128 --train_batch_size=32 --learning_rate=2e-5 --num_train_epochs=3 --output_dir=out

--data_dir is either the task's TSV files or a directory create_finetuning_data.py wrote.
"""

from absl import flags

from keras_bert_cli import app
from keras_bert_cli import flags as shared
from keras_bert_common.errors import UsageError

FLAGS = flags.FLAGS
flags.DEFINE_string(
    "task_name",
    None,
    "The name of the task to train: cola, sst-2, mrpc, qqp, sts-b, mnli, "
    "mnli-mm, qnli, rte, wnli, xnli, or tsv (with the column flags).",
)
shared.define_data_dir("The task's .tsv files, or the directory create_finetuning_data.py wrote.")
flags.DEFINE_string("xnli_language", "zh", "XNLI: the language to train and evaluate on.")
flags.DEFINE_integer("text_a_column", 0, "tsv: column of the first text.")
flags.DEFINE_integer("text_b_column", None, "tsv: column of the second text, if any.")
flags.DEFINE_integer("label_column", 1, "tsv: column of the label.")
flags.DEFINE_list("label_names", None, "tsv: the labels in id order.")
flags.DEFINE_bool("is_regression", False, "tsv: float labels and a regression head.")
flags.DEFINE_string("delimiter", "\t", "tsv: the column delimiter.")
shared.define_common_flags()
flags.mark_flags_as_required(["task_name", "data_dir"])


def main(_):
    from keras_bert_impl.runners.run_classifier import run_classifier
    from tfrecord_tools.classification_data import ClassificationProcessor
    from tfrecord_tools.finetuning_data import is_data_dir

    processor = None
    if not is_data_dir(FLAGS.data_dir):
        if FLAGS.task_name.lower() == "tsv":
            if not FLAGS.label_names and not FLAGS.is_regression:
                raise UsageError("--task_name=tsv needs --label_names (or --is_regression)")
            processor = ClassificationProcessor.generic(
                FLAGS.data_dir,
                FLAGS.text_a_column,
                FLAGS.text_b_column,
                FLAGS.label_column,
                FLAGS.label_names or (),
                FLAGS.is_regression,
                delimiter=FLAGS.delimiter,
                warn=app.Log.warning,
            )
        else:
            processor = ClassificationProcessor.for_task(
                FLAGS.task_name, FLAGS.data_dir, language=FLAGS.xnli_language, warn=app.Log.warning
            )
    run_classifier(shared.options_from_flags(), FLAGS.task_name, FLAGS.data_dir, processor, log=app.Log())


def console_main():
    app.run(main, "run_classifier")


if __name__ == "__main__":
    console_main()
