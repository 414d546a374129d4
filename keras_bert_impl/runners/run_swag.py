"""`run_swag`: SWAG multiple choice (four endings, softmax over one score per choice); accuracy."""

from keras_bert_common.errors import UsageError
from keras_bert_impl.runners.finetuning import FineTuningRun, open_or_convert, run_finetuning
from keras_bert_impl.runners.run_classifier import splits_wanted
from keras_bert_impl.tasks.multiple_choice import MultipleChoiceTask
from tfrecord_tools.finetuning_data import write_swag_data


def run_swag(options, data_dir, log=print):
    if options.do_predict:
        raise UsageError(
            "--do_predict: run_swag writes no predictions (SWAG's test split has no labels); drop the flag"
        )
    run = FineTuningRun(options, log)
    data = open_or_convert(
        run,
        data_dir,
        ["swag"],
        lambda output_dir: write_swag_data(
            data_dir,
            splits_wanted(options),
            run.tokenizer,
            options.max_seq_length,
            output_dir,
            warn=run.log_warning,
        ),
    )
    task = MultipleChoiceTask(run.config, options.max_seq_length, num_choices=data.meta.get("num_choices", 4))
    return run_finetuning(run, task, data)
