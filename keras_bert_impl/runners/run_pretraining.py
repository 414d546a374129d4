"""`run_pretraining`: what run_pretraining.py does, as a library function over `PretrainingOptions`."""

import dataclasses
import os

from keras_bert_impl.checkpoints.google_checkpoint import save_google_checkpoint
from keras_bert_impl.tasks.pretraining import PretrainingTask
from keras_bert_impl.training.input_pipeline import make_tfrecord_dataset
from keras_bert_impl.training.run_setup import RunOptions, RunResult, RunSetup
from keras_bert_impl.training.trainer import EvalSchedule, write_eval_results
from tfrecord_tools import feature_specs
from tfrecord_tools.files import expand_file_patterns


@dataclasses.dataclass(kw_only=True)
class PretrainingOptions(RunOptions):
    """Google's run_pretraining.py flags (same names and defaults) beyond the shared ones."""

    input_file: str
    eval_input_file: str = None
    max_predictions_per_seq: int = 20
    num_train_steps: int = 100000
    num_warmup_steps: int = 10000
    max_eval_steps: int = 100
    export_google_checkpoint: bool = True


def run_pretraining(options, log=print):
    """Trains and/or evaluates; returns a `RunResult` (the training history, the eval results)."""
    if not (options.do_train or options.do_eval):
        raise ValueError("at least one of --do_train or --do_eval must be True")
    train_files = expand_file_patterns(options.input_file) if options.do_train else None
    eval_files = (
        expand_file_patterns(
            options.eval_input_file or options.input_file,
            "--eval_input_file" if options.eval_input_file else "--input_file",
        )
        if options.do_eval
        else None
    )
    setup = RunSetup(options, log)
    task = PretrainingTask(setup.config, options.max_seq_length, options.max_predictions_per_seq)
    # The records' lengths against the flags, before anything is built or written.
    spec = task.feature_spec()
    for files in (train_files, eval_files):
        if files:
            feature_specs.check_records_match(files[0], spec, "pretraining records")
    model = setup.build(task, options.num_train_steps, options.num_warmup_steps)
    trainer = setup.trainer

    def eval_dataset():
        return make_tfrecord_dataset(
            eval_files,
            spec,
            setup.per_pipeline_batch(options.eval_batch_size),
            False,
            setup.pipeline_id,
            setup.num_pipelines,
        )

    schedule = (
        EvalSchedule(
            options.eval_every_n_steps if options.do_train else None,
            lambda: trainer.evaluate(eval_dataset(), options.max_eval_steps),
        )
        if options.do_eval
        else None
    )
    if options.do_train:
        dataset = make_tfrecord_dataset(
            train_files,
            spec,
            setup.per_pipeline_batch(options.train_batch_size),
            True,
            setup.pipeline_id,
            setup.num_pipelines,
            seed=options.random_seed,
        )
        result = trainer.train(dataset, options.num_train_steps, options.train_batch_size, eval_schedule=schedule)
        if options.export_google_checkpoint and trainer.is_chief:
            prefix = save_google_checkpoint(model, os.path.join(options.output_dir, "bert_model.ckpt"))
            setup.config.to_json_file(os.path.join(options.output_dir, "bert_config.json"))
            log(f"wrote {prefix} under Google's variable names")
        if schedule is None:
            return RunResult(train=result)
        results = dict(result.evaluations[-1])
    else:
        result = None
        latest = trainer.restore_latest()
        if latest:
            log(f"evaluating {latest}")
        results = trainer.record_evaluation(schedule)
    results.pop("step", None)
    results["global_step"] = trainer.global_step
    if trainer.is_chief:
        write_eval_results(results, os.path.join(options.output_dir, "eval_results.txt"))
    return RunResult(train=result, eval=results)
