"""`run_pretraining`: what run_pretraining.py does, as a library function over `PretrainingOptions`."""

import dataclasses
import os

import keras

from keras_bert_impl.bert_config import BertConfig
from keras_bert_impl.distribution_options import DistributionOptions
from keras_bert_impl.distribution_utils import get_distribution_strategy
from keras_bert_impl.google_checkpoint import save_google_checkpoint
from keras_bert_impl.init_checkpoint import initialize_from_checkpoint
from keras_bert_impl.input_pipeline import make_tfrecord_dataset
from keras_bert_impl.optimization import create_optimizer
from keras_bert_impl.pretraining_task import PretrainingTask
from keras_bert_impl.trainer import Trainer, input_pipeline_of, write_eval_results
from tfrecord_tools.file_patterns import expand_file_patterns


@dataclasses.dataclass(kw_only=True)
class PretrainingOptions(DistributionOptions):
    """Google's run_pretraining.py flags (same names and defaults) and the scaling flags."""

    bert_config_file: str
    input_file: str
    output_dir: str
    eval_input_file: str = None
    init_checkpoint: str = None
    max_seq_length: int = 128
    max_predictions_per_seq: int = 20
    do_train: bool = False
    do_eval: bool = False
    train_batch_size: int = 32
    eval_batch_size: int = 8
    learning_rate: float = 5e-5
    num_train_steps: int = 100000
    num_warmup_steps: int = 10000
    save_checkpoints_steps: int = 1000
    iterations_per_loop: int = 1000
    max_eval_steps: int = 100
    export_google_checkpoint: bool = True


def _check(options, config, strategy):
    config.check_max_seq_length(options.max_seq_length, options.bert_config_file)
    replicas = strategy.num_replicas_in_sync
    share = replicas * options.gradient_accumulation_steps
    if options.do_train and options.train_batch_size % share:
        raise ValueError(
            f"--train_batch_size={options.train_batch_size} must be a multiple of {share} "
            f"({replicas} replicas x {options.gradient_accumulation_steps} accumulation steps)"
        )
    if options.do_eval and options.eval_batch_size % replicas:
        raise ValueError(f"--eval_batch_size={options.eval_batch_size} must be a multiple of {replicas} replicas")


def run_pretraining(options, log=print):
    """Trains and/or evaluates; returns the evaluation results (or None)."""
    config = BertConfig.from_json_file(options.bert_config_file)
    keras.mixed_precision.set_global_policy(options.mixed_precision)
    keras.utils.set_random_seed(options.random_seed)
    strategy = get_distribution_strategy(options.distribution_strategy, options.tpu, options.tpu_zone, options.gcp_project)
    log(f"strategy {type(strategy).__name__} with {strategy.num_replicas_in_sync} replica(s)")
    _check(options, config, strategy)
    train_files = expand_file_patterns(options.input_file) if options.do_train else None
    eval_files = expand_file_patterns(options.eval_input_file or options.input_file) if options.do_eval else None
    os.makedirs(options.output_dir, exist_ok=True)

    task = PretrainingTask(config, options.max_seq_length, options.max_predictions_per_seq)
    with strategy.scope():
        model = task.build_model()
        if options.init_checkpoint:
            log(f"init_checkpoint {options.init_checkpoint}: " + initialize_from_checkpoint(model, options.init_checkpoint).summary())
        optimizer = create_optimizer(options.learning_rate, options.num_train_steps, options.num_warmup_steps,
                                     options.optimizer)
        if options.mixed_precision == "mixed_float16":
            optimizer = keras.optimizers.LossScaleOptimizer(optimizer)
    trainer = Trainer(
        strategy, task, model, optimizer, options.output_dir,
        steps_per_loop=options.iterations_per_loop,
        save_checkpoints_steps=options.save_checkpoints_steps,
        jit_compile=options.jit_compile,
        gradient_accumulation_steps=options.gradient_accumulation_steps,
        log=log,
    )
    pipeline_id, pipelines = input_pipeline_of(strategy)
    if options.do_train:
        dataset = make_tfrecord_dataset(
            train_files, task.feature_spec(), options.train_batch_size // pipelines, True, pipeline_id, pipelines,
            seed=options.random_seed,
        )
        trainer.train(dataset, options.num_train_steps, options.train_batch_size)
        if options.export_google_checkpoint and trainer.is_chief:
            prefix = save_google_checkpoint(model, os.path.join(options.output_dir, "bert_model.ckpt"))
            config.to_json_file(os.path.join(options.output_dir, "bert_config.json"))
            log(f"wrote {prefix} under Google's variable names")
    if not options.do_eval:
        return None
    if not options.do_train:
        latest = trainer.restore_latest()
        if latest:
            log(f"evaluating {latest}")
    dataset = make_tfrecord_dataset(eval_files, task.feature_spec(), options.eval_batch_size // pipelines, False,
                                    pipeline_id, pipelines)
    results = trainer.evaluate(dataset, options.max_eval_steps)
    if trainer.is_chief:
        write_eval_results(results, os.path.join(options.output_dir, "eval_results.txt"))
    return results
