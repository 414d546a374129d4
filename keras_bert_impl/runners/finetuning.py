"""What every fine-tuning runner shares: options, checks, training, evaluation, prediction, export.

`FineTuningRun` extends the shared `RunSetup` with the tokenizer and the fine-tuning checks; it
trains and predicts from a fine-tuning data directory (`tfrecord_tools.finetuning_data`).
`run_finetuning(run, task, data)` is the whole train / evaluate / predict / export flow for any
`Task` whose metrics come from its outputs alone (classification, regression, multiple choice,
or a task of your own); run_squad and run_ner add their post-processing around the same pieces.
"""

import dataclasses
import os

import numpy as np
import tensorflow as tf

from keras_bert_common.errors import UsageError
from keras_bert_common.files import atomic_output, check_readable_file
from keras_bert_impl.runners.outputs import write_eval_results
from keras_bert_impl.tasks.registry import write_task_record
from keras_bert_impl.training.best_checkpoint import BestCheckpoint
from keras_bert_impl.training.bucketing import fill_beyond, prediction_batches, training_bucketing
from keras_bert_impl.training.input_pipeline import embedding_tables, make_tfrecord_dataset, reading
from keras_bert_impl.training.run_setup import RunOptions, RunResult, RunSetup
from keras_bert_impl.training.trainer import EvalSchedule
from tfrecord_tools import tfrecord_files
from tfrecord_tools.finetuning_data import FineTuningData, is_data_dir


@dataclasses.dataclass(kw_only=True)
class FineTuningOptions(RunOptions):
    """Google's run_classifier.py / run_squad.py flags beyond the shared ones."""

    vocab_file: str
    do_lower_case: bool = True
    do_predict: bool = False
    predict_batch_size: int = 8
    num_train_epochs: float = 3.0
    warmup_proportion: float = 0.1
    export_dir: str = None
    force: bool = False  # replace an existing --export_dir
    # Keep the checkpoint of the best evaluation by this metric (needs --eval_every_n_steps) ...
    keep_best_checkpoint: str = None
    # ... and stop after this many evaluations without improvement.
    early_stopping_patience: int = None


class FineTuningRun(RunSetup):
    """The shared set-up plus the tokenizer, and the fine-tuning checks, all before heavy work."""

    def __init__(self, options, log=print, eval_flag="do_eval"):
        from tfrecord_tools.tokenization import FullTokenizer, validate_case_matches_checkpoint

        if not (options.do_train or options.do_eval or options.do_predict):
            raise UsageError("at least one of --do_train, --do_eval or --do_predict must be True")
        if options.early_stopping_patience is not None:
            if options.early_stopping_patience < 1:
                raise UsageError(f"--early_stopping_patience={options.early_stopping_patience}: must be at least 1")
            if not options.keep_best_checkpoint:
                raise UsageError(
                    "--early_stopping_patience needs --keep_best_checkpoint=METRIC (the metric to watch), "
                    "e.g. eval_accuracy"
                )
        if options.keep_best_checkpoint and options.do_train and not options.eval_every_n_steps:
            raise UsageError(
                f"--keep_best_checkpoint={options.keep_best_checkpoint} needs --eval_every_n_steps "
                "(evaluations to choose from) and --do_eval"
            )
        check_readable_file(options.vocab_file, "--vocab_file", "vocab.txt")
        validate_case_matches_checkpoint(options.do_lower_case, options.init_checkpoint)
        if options.export_dir:
            from keras_bert_impl.serving.export import check_export_dir

            check_export_dir(
                options.export_dir,
                options.force,
                self.export_source(options),
                {
                    "--output_dir": options.output_dir,
                    "--init_checkpoint": options.init_checkpoint,
                    "--vocab_file": options.vocab_file,
                    "--bert_config_file": options.bert_config_file,
                },
            )
        if options.num_train_epochs <= 0 and options.do_train:
            raise UsageError(f"--num_train_epochs={options.num_train_epochs}: must be positive")
        super().__init__(options, log, eval_flag)
        self.tokenizer = FullTokenizer(options.vocab_file, do_lower_case=options.do_lower_case)
        self._predict_steps = {}  # bucket length -> its prediction tf.function
        self.weights_step = None  # the step of the best checkpoint, once its weights are in use
        self.config.check_vocab_size(len(self.tokenizer.inv_vocab), options.vocab_file, options.bert_config_file)

    @staticmethod
    def export_source(options):
        """What --export_dir's record names as its source: this run's output_dir, so the same
        command run again (after Ctrl-C, or finished) finds its own export, not a conflict."""
        return "output_dir:" + os.path.abspath(options.output_dir)

    def check_metric_names(self, names):
        """`--keep_best_checkpoint` names one of `names`, the metrics the evaluation returns:
        checked before the model is built rather than at the first evaluation."""
        if self.options.keep_best_checkpoint:
            BestCheckpoint.check_metric(self.options.keep_best_checkpoint, names)

    # ---- model --------------------------------------------------------------------------------

    def num_train_steps(self, num_examples):
        return max(1, int(num_examples / self.options.train_batch_size * self.options.num_train_epochs))

    def build_for(self, task, num_train_examples=0):
        """Model, optimizer (Google's schedule over the epochs) and trainer for `task`."""
        steps = self.num_train_steps(num_train_examples) if self.options.do_train else 1
        self.build(task, steps, int(steps * self.options.warmup_proportion))
        return steps

    def restore_for_inference(self):
        """Without --do_train: the best checkpoint of --output_dir (with --keep_best_checkpoint,
        when one was kept), else its newest, else --init_checkpoint's weights (with none, the
        set-up refused the run unless random weights were allowed)."""
        latest = self.trainer.restore_latest()
        if self.options.keep_best_checkpoint:
            best = BestCheckpoint(self.options.output_dir, self.options.keep_best_checkpoint, write=False)
            path = best.restore(self.model) if best.best_step is not None else None  # kept by this metric
            if path:
                self.weights_step = best.best_step
                self.log(f"restored the best checkpoint {path} ({best.metric} = {best.best_value:.4f})")
                return
            self.log_warning(
                f"--keep_best_checkpoint={best.metric}: {best.directory} keeps no checkpoint chosen by it; using "
                "the newest checkpoint instead"
            )
        if latest:
            self.log(f"restored {latest}")
        elif not self.options.init_checkpoint:
            self.log_warning("no checkpoint in --output_dir and no --init_checkpoint: using random weights")
        elif self.init_report.initialized and not self.options.allow_random_weights:
            # A pretrained checkpoint has no head for this task: its predictions would be noise.
            missing = self.init_report.initialized
            raise UsageError(
                f"{self.options.init_checkpoint}: has no weights for {', '.join(missing[:3])}"
                f"{' (and more)' if len(missing) > 3 else ''} and {self.options.output_dir} no checkpoint, so "
                f"evaluating or predicting would use a random {self.task.name} head; train first (--do_train), "
                "point --output_dir at the run that trained it, or pass --allow_random_weights"
            )

    # ---- training and prediction ----------------------------------------------------------------

    def train(self, path, num_train_steps, eval_schedule=None):
        """Trains from the TFRecord at `path`; returns the `TrainResult`."""
        options = self.options
        spec = self.task.feature_spec(is_training=True)
        tfrecord_files.check_records_match(
            path, spec, "training records", lengths_are_flags=False, vocab_size=self.config.vocab_size
        )
        # A TPU trains padded (it still predicts bucketed).
        bucketing = training_bucketing(self.task, options.max_seq_length, self.strategy, options.pad_to_max_seq_length)
        dataset = make_tfrecord_dataset(
            [path],
            spec,
            self.per_pipeline_batch(options.train_batch_size),
            True,
            self.pipeline_id,
            self.num_pipelines,
            seed=options.random_seed,
            bucketing=bucketing,
        )
        with reading([path], embedding_tables(self.config)):
            return self.train_on(dataset, num_train_steps, eval_schedule)

    def train_on(self, dataset, num_train_steps, eval_schedule=None, input_flags=None):
        """Trains on the batches of `dataset`; returns the `TrainResult`. `input_flags`: what else,
        beside the batch size and sequence length (the records are remade at another length), a
        resume must not change."""
        options = self.options
        if self.trainer.is_chief:
            write_task_record(
                options.output_dir,
                self.task,
                do_lower_case=options.do_lower_case,
                max_seq_length=options.max_seq_length,
            )
        self.log(
            f"training {num_train_steps} step{'s' if num_train_steps != 1 else ''} of "
            f"{options.train_batch_size} examples"
        )
        result = self.trainer.train(
            dataset,
            num_train_steps,
            options.train_batch_size,
            eval_schedule=eval_schedule,
            input_flags={
                "--train_batch_size": options.train_batch_size,
                "--max_seq_length": options.max_seq_length,
                **(input_flags or {}),
            },
        )
        best = result.best
        if best is not None and best.best_step is not None and best.best_step != self.trainer.global_step:
            # Evaluation, prediction and export from here on use the best model.
            best.restore(self.model)
            self.weights_step = best.best_step
            self.log(f"using the best checkpoint, of step {best.best_step} ({best.metric} = {best.best_value:.4f})")
        return result

    def read_features(self, path, is_training=False):
        spec = self.task.feature_spec(is_training=is_training)
        tfrecord_files.check_records_match(path, spec, lengths_are_flags=False, vocab_size=self.config.vocab_size)
        with reading([path], embedding_tables(self.config)):
            return tfrecord_files.read_tfrecord(path, spec)

    def predict(self, features, batch_size):
        """Model outputs for numpy `features`, as numpy arrays in input order. Batches are
        length-bucketed (sorted by length, each cut to its bucket) unless --pad_to_max_seq_length;
        either way, sequence outputs hold `PADDING_LOGIT` beyond each input's length, so both
        modes give the same outputs."""
        count = len(features["input_ids"])
        if not count:
            return {}
        names = [name for name in features if name in ("input_ids", "input_mask", "segment_ids")]
        lengths = self.task.sequence_lengths({"input_mask": features["input_mask"]}).numpy()
        max_seq_length = self.options.max_seq_length
        batches = prediction_batches(lengths, batch_size, max_seq_length, not self.options.pad_to_max_seq_length)
        # One tf.function per bucket length, kept across calls: static shapes for XLA and TPUs, and
        # periodic evaluations reuse the traces instead of tracing again.
        steps = self._predict_steps
        outputs = {}
        for indices, length in batches:
            if length not in steps:
                steps[length] = tf.function(lambda batch: self.model(self.task.model_inputs(batch), training=False))
            step = steps[length]
            # Whole batches only (static shapes, as TPUs need); the padding rows are dropped.
            rows = np.concatenate([indices, np.full(batch_size - len(indices), indices[0])])
            batch = self.task.cut_to_length({name: features[name][rows].astype(np.int32) for name in names}, length)
            for name, value in step(batch).items():
                if name == "encoder_outputs":
                    continue
                value = value.numpy()[: len(indices)]
                if name in self.task.sequence_output_names:
                    value = fill_beyond(value, lengths[indices], max_seq_length)
                if name not in outputs:
                    outputs[name] = np.zeros((count,) + value.shape[1:], value.dtype)
                outputs[name][indices] = value
        return outputs

    def evaluator(self, features, evaluate):
        """An `EvalSchedule` body: predicts `features` and hands the outputs to `evaluate`."""
        return lambda: evaluate(self.predict(features, self.options.eval_batch_size), features)

    def eval_schedule(self, features, evaluate):
        """Evaluation during training on `features` (None unless --eval_every_n_steps)."""
        if not (self.options.do_eval and self.options.eval_every_n_steps):
            return None
        return self.schedule_of(self.evaluator(features, evaluate))

    def schedule_of(self, evaluate):
        """An `EvalSchedule` of the flags around `evaluate()` (a metrics dict)."""
        options = self.options
        return EvalSchedule(
            options.eval_every_n_steps, evaluate, options.keep_best_checkpoint, options.early_stopping_patience
        )

    def write_results(self, results, name="eval_results.txt"):
        """Google's eval_results.txt, the log, and TensorBoard (`output_dir/eval`)."""
        # Google's global_step: the step of the weights evaluated (the best one's, when kept).
        step = self.weights_step if self.weights_step is not None else self.trainer.global_step
        results = {**results, "global_step": step}
        self.trainer.write_eval_summaries(results, step)
        if self.trainer.is_chief:
            write_eval_results(results, os.path.join(self.options.output_dir, name))
        self.log(
            "eval: "
            + ", ".join(f"{k} = {v:.4f}" if isinstance(v, float) else f"{k} = {v}" for k, v in sorted(results.items()))
        )
        return results

    def export(self, **export_options):
        """With --export_dir: the model as a SavedModel serving raw text (the chief only)."""
        options = self.options
        if not options.export_dir or not self.trainer.is_chief:
            return None
        from keras_bert_impl.serving.export import export_saved_model

        path = export_saved_model(
            self.model,
            self.task,
            options.vocab_file,
            options.do_lower_case,
            options.export_dir,
            force=options.force,
            source=self.export_source(options),
            log=self.log,
            **export_options,
        )
        return path


def open_or_convert(run, data_dir, kinds, convert, check=None):
    """A run's fine-tuning data: `data_dir` if create_finetuning_data wrote it (checked against the
    run's length, casing and vocabulary, its kind one of `kinds` (None: any), then by `check(data)`),
    else what `convert(output_dir)` writes from the raw files into --output_dir first."""
    options = run.options
    if data_dir and is_data_dir(data_dir):
        data = FineTuningData.open(data_dir)
        data.check(kinds, options.max_seq_length, options.do_lower_case, options.vocab_file)
        if check is not None:
            check(data)
        return data
    convert(options.output_dir)
    return FineTuningData.open(options.output_dir)


def run_finetuning(run, task, data, eval_split="dev", predict_split="test"):
    """Trains `task` on `data`'s train split (--do_train), evaluates on `eval_split` (--do_eval,
    `task.evaluate` -> eval_results.txt), predicts `predict_split` (--do_predict, the task's
    `prediction_rows` -> test_results.tsv) and exports (--export_dir). Returns a `RunResult`."""
    options = run.options
    # Every split the flags need exists, before the model is built.
    train_path = data.path("train") if options.do_train else None
    eval_path = data.path(eval_split) if options.do_eval else None
    predict_path = data.path(predict_split) if options.do_predict else None
    run.check_metric_names(task.eval_metric_names())
    steps = run.build_for(task, data.count("train") if options.do_train else 0)
    eval_features = run.read_features(eval_path) if options.do_eval else None
    trained = None
    if options.do_train:
        trained = run.train(train_path, steps, run.eval_schedule(eval_features, task.evaluate))
    else:
        run.restore_for_inference()
    run.export()
    results = None
    if options.do_eval:
        outputs = run.predict(eval_features, options.eval_batch_size)
        results = run.write_results(task.evaluate(outputs, eval_features))
    if options.do_predict:
        features = run.read_features(predict_path)
        rows = task.prediction_rows(run.predict(features, options.predict_batch_size))
        path = os.path.join(options.output_dir, "test_results.tsv")
        if run.trainer.is_chief:
            with atomic_output(path) as writer:
                for row in rows:
                    writer.write("\t".join(str(float(value)) for value in row) + "\n")
        run.log(f"wrote {path}: {len(rows)} rows")
    return RunResult(train=trained, eval=results)
