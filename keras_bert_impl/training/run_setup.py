"""`RunOptions` and `RunSetup`: the one set-up shared by pretraining and fine-tuning.

Every check a training run makes is written here once, and made before any heavy work: the
config parses, `--max_seq_length` fits it, `--output_dir` is writable, `--init_checkpoint`
exists, the batch sizes divide over the replicas. Then the dtype policy, the seed and the
tf.distribute strategy; `build(task, ...)` adds the model (from `--init_checkpoint`), the
optimizer (loss-scaled under float16) and the `Trainer`.
"""

import dataclasses
import os

import keras

from keras_bert_common import cpu
from keras_bert_common.errors import UsageError
from keras_bert_common.files import check_writable
from keras_bert_common.progress import DEFAULT_INTERVAL_SECONDS
from keras_bert_impl.checkpoints.init_checkpoint import (
    check_init_checkpoint,
    check_model_files,
    initialize_from_checkpoint,
)
from keras_bert_impl.training.distribution import get_distribution_strategy, input_pipeline_of
from keras_bert_impl.training.optimization import create_optimizer
from keras_bert_impl.training.trainer import Trainer


@dataclasses.dataclass(kw_only=True)
class RunOptions:
    """The flags every training run shares (Google's names and defaults) and the scaling flags;
    `PretrainingOptions` and `FineTuningOptions` extend it."""

    bert_config_file: str
    output_dir: str
    init_checkpoint: str = None
    max_seq_length: int = 128
    do_train: bool = False
    do_eval: bool = False
    train_batch_size: int = 32
    eval_batch_size: int = 8
    learning_rate: float = 5e-5
    save_checkpoints_steps: int = 1000
    iterations_per_loop: int = 1000
    eval_every_n_steps: int = None
    allow_random_weights: bool = False  # evaluate / predict / export without any trained weights
    # Google's fixed [batch, max_seq_length] shapes instead of length-bucketed batches.
    pad_to_max_seq_length: bool = False
    log_every_seconds: float = DEFAULT_INTERVAL_SECONDS
    # Where and how the run trains.
    tpu: str = None
    tpu_zone: str = None
    gcp_project: str = None
    distribution_strategy: str = "auto"
    optimizer: str = "adamw"
    mixed_precision: str = "float32"
    jit_compile: bool = False
    gradient_accumulation_steps: int = 1
    random_seed: int = 12345


@dataclasses.dataclass
class RunResult:
    """What a runner did: `train` is the Trainer's `TrainResult` (None without --do_train),
    `eval` the evaluation results written to eval_results (None without evaluation)."""

    train: object = None
    eval: dict = None


def check_has_weights(options):
    """Evaluating, predicting or exporting without training needs weights: a checkpoint in
    --output_dir or --init_checkpoint. Random weights only with --allow_random_weights."""
    import tensorflow as tf

    if options.do_train or options.init_checkpoint or options.allow_random_weights:
        return
    if os.path.isdir(options.output_dir) and tf.train.latest_checkpoint(options.output_dir):
        return
    raise UsageError(
        f"{options.output_dir}: holds no checkpoint and no --init_checkpoint was given, so the weights would be "
        "random; train first (--do_train), pass --init_checkpoint, or --allow_random_weights"
    )


class RunSetup:
    """Config, checks, dtype policy, seed and strategy of one run (see the module docstring)."""

    def __init__(self, options, log=print, eval_flag="do_eval"):
        """`eval_flag`: the flag that evaluates (run_squad evaluates with --do_predict)."""
        self.options = options
        self.log = log
        self.config = check_model_files(options.bert_config_file, options.max_seq_length, warn=self.log_warning)
        for name in (
            "train_batch_size",
            "eval_batch_size",
            "iterations_per_loop",
            "save_checkpoints_steps",
            "gradient_accumulation_steps",
        ):
            if getattr(options, name) < 1:
                raise UsageError(f"--{name}={getattr(options, name)}: must be at least 1")
        if options.do_train and not options.learning_rate >= 0:  # 0 is allowed: it freezes the weights
            raise UsageError(
                f"--learning_rate={options.learning_rate}: must be 0 or more "
                "(BERT: 1e-4 to pretrain, 2e-5 to 5e-5 to fine-tune)"
            )
        if options.eval_every_n_steps is not None and options.eval_every_n_steps < 1:
            raise UsageError(f"--eval_every_n_steps={options.eval_every_n_steps}: must be at least 1")
        check_writable(options.output_dir, "--output_dir", kind="directory")
        if options.init_checkpoint:
            check_init_checkpoint(options.init_checkpoint, self.config, options.bert_config_file)
        check_has_weights(options)
        if options.eval_every_n_steps and not (options.do_train and getattr(options, eval_flag)):
            raise UsageError(f"--eval_every_n_steps needs --do_train and --{eval_flag}")
        keras.mixed_precision.set_global_policy(options.mixed_precision)
        keras.utils.set_random_seed(options.random_seed)
        self.strategy = get_distribution_strategy(
            options.distribution_strategy, options.tpu, options.tpu_zone, options.gcp_project
        )
        self.log(f"strategy {type(self.strategy).__name__} with {self.strategy.num_replicas_in_sync} replica(s)")
        self._check_batch_sizes()
        self._warn_about_bfloat16_on_cpu()
        # --output_dir is created by the first thing written there, so a run refused by a check
        # leaves nothing behind.
        self.pipeline_id, self.num_pipelines = input_pipeline_of(self.strategy)
        self.task = self.model = self.trainer = None
        self.init_report = None  # what --init_checkpoint held for the model (`build`)

    def log_warning(self, message):
        warn = getattr(self.log, "warning", None)
        (warn or self.log)(f"warning: {message}" if warn is None else message)

    def _warn_about_bfloat16_on_cpu(self):
        """Two measured slow-downs of mixed_bfloat16 on a CPU-only machine: under XLA, and on a CPU
        without bfloat16 instructions."""
        import tensorflow as tf

        if self.options.mixed_precision != "mixed_bfloat16" or any(
            tf.config.list_logical_devices(kind) for kind in ("GPU", "TPU")
        ):
            return
        if self.options.jit_compile and self.options.do_train:
            # docs/benchmarks/pretraining_throughput.md (2026-12-07): ours 83.5 against 108.0 examples/s
            # (BERT-tiny), 30.0 against 56.0 (BERT-mini), 2.21 against 4.87 (BERT-base); the peers
            # slow down alike.
            self.log_warning(
                "--jit_compile with --mixed_precision=mixed_bfloat16 on a CPU: XLA compiles bfloat16 "
                "training here 1.3-2.2x slower than TensorFlow's own kernels run it; drop --jit_compile"
            )
        if cpu.cpu_has_bfloat16_instructions() is False:
            # On an AMD EPYC without them, ours' BERT-mini step was 1.15x slower than in float32 and
            # Model Garden's 22x (its tf.einsum calls take a generic bfloat16 path).
            self.log_warning(
                "--mixed_precision=mixed_bfloat16 on a CPU without bfloat16 instructions (AVX512_BF16 or "
                "AMX-BF16 in /proc/cpuinfo): TensorFlow emulates them and trains slower than in float32; "
                "use --mixed_precision=float32 here"
            )

    def _check_batch_sizes(self):
        options, replicas = self.options, self.strategy.num_replicas_in_sync
        share = replicas * options.gradient_accumulation_steps
        if options.do_train and options.train_batch_size % share:
            raise UsageError(
                f"--train_batch_size={options.train_batch_size} must be a multiple of {share} "
                f"({replicas} replica(s) x {options.gradient_accumulation_steps} accumulation step(s))"
            )
        if options.do_eval and options.eval_batch_size % replicas:
            raise UsageError(f"--eval_batch_size={options.eval_batch_size} must be a multiple of {replicas} replicas")

    def build(self, task, num_train_steps=1, num_warmup_steps=0):
        """The task's model (initialised from --init_checkpoint), the optimizer and the Trainer."""
        options = self.options
        self.task = task
        if options.do_train and num_warmup_steps >= num_train_steps > 1:
            self.log(
                f"warning: {num_warmup_steps} warmup steps for {num_train_steps} training steps: the learning "
                "rate never reaches --learning_rate and never decays; fewer warmup steps are usual"
            )
        with self.strategy.scope():
            self.model = task.build_model()
            if options.init_checkpoint:
                report = initialize_from_checkpoint(self.model, options.init_checkpoint)
                self.log(f"init_checkpoint {options.init_checkpoint}: {report.summary()}")
                self.init_report = report
            optimizer = create_optimizer(options.learning_rate, num_train_steps, num_warmup_steps, options.optimizer)
            if options.mixed_precision == "mixed_float16":
                optimizer = keras.optimizers.LossScaleOptimizer(optimizer)
        self.trainer = Trainer(
            self.strategy,
            task,
            self.model,
            optimizer,
            options.output_dir,
            steps_per_loop=options.iterations_per_loop,
            save_checkpoints_steps=options.save_checkpoints_steps,
            jit_compile=options.jit_compile,
            gradient_accumulation_steps=options.gradient_accumulation_steps,
            log_every_seconds=options.log_every_seconds,
            log=self.log,
        )
        return self.model

    def per_pipeline_batch(self, global_batch_size):
        """Each worker's input pipeline reads its share of the global batch."""
        return global_batch_size // self.num_pipelines
