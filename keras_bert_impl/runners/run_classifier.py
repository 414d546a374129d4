"""`run_classifier`: run_classifier.py's work as a library function (GLUE-style classification
and STS-B regression), with Google's output files (eval_results.txt, test_results.tsv)."""

from keras_bert_impl.runners.finetuning import FineTuningRun, open_or_convert, run_finetuning
from keras_bert_impl.tasks.classification import glue_eval_metric_names
from keras_bert_impl.tasks.registry import create_task
from tfrecord_tools.finetuning_data import is_data_dir, write_classification_data


def splits_wanted(options):
    return [
        split
        for split, wanted in (("train", options.do_train), ("dev", options.do_eval), ("test", options.do_predict))
        if wanted
    ]


def classification_data(run, data_dir, task_name, processor=None):
    """`data_dir` as create_finetuning_data wrote it (checked against the flags), or the task's
    TSV files (`processor` reads them) converted into --output_dir first."""
    options = run.options
    if processor is None and not is_data_dir(data_dir):
        raise FileNotFoundError(
            f"{data_dir}: holds no meta.json; pass the directory create_finetuning_data wrote, or the task's TSV files"
        )

    def every_split_needed(data):
        for split in splits_wanted(options):
            data.path(split)  # every split the flags need, before training starts

    return open_or_convert(
        run,
        data_dir,
        None if task_name.lower() == "tsv" else [task_name],
        lambda output_dir: write_classification_data(
            processor, task_name, splits_wanted(options), run.tokenizer, options.max_seq_length, output_dir
        ),
        check=every_split_needed,
    )


def run_classifier(options, task_name, data_dir, processor=None, log=print):
    """Trains / evaluates / predicts as the options say; returns a `RunResult`.

    eval_results.txt has Google's keys plus the task's metrics; test_results.tsv one row of class
    probabilities per test example (Google's format; the predicted score for regression)."""
    run = FineTuningRun(options, log)
    if task_name.lower() != "tsv":  # a generic TSV's kind (class or score) comes from its data
        run.check_metric_names(glue_eval_metric_names(task_name))
    data = classification_data(run, data_dir, task_name, processor)
    task = create_task(
        data.model_type, run.config, options.max_seq_length, label_names=data.labels, task_name=data.meta["task_name"]
    )
    if options.do_train:
        skipped = data.meta.get("skipped_by_split", {}).get("train", 0)
        log(f"{data.count('train')} training examples ({skipped} train rows skipped)")
    return run_finetuning(run, task, data)
