"""`Trainer`: the strategy-aware custom training loop shared by every runner.

It consumes only the `Task` contract (`tasks.base`): `loss_terms`, `metric_terms`,
`numerators(model, features, training)` and `denominators(features)`. One loop serves one device,
MirroredStrategy, MultiWorkerMirroredStrategy and TPUStrategy:
- each worker reads its own tf.data iterator (a plain, checkpointable one) and hands each local
  replica its slice of the batch;
- the per-replica forward/backward pass can be XLA-compiled (`jit_compile`); the all-reduce, the
  gradient clipping (global norm of the summed gradient, as BERT) and the update stay outside XLA;
- losses are sums divided by denominators summed over all replicas, so N devices compute the loss
  of one device on the global batch;
- `steps_per_loop` steps run inside one tf.function call (Google's `iterations_per_loop`); a
  progress line (examples/s, ETA) comes at least every `log_every_seconds` from inside the loop
  (off TPUs), so logging never changes how many steps one call runs;
- its collaborators, one job each: `RunCheckpoints` (model, optimizer, data iterator and dropout
  RNG state, so a run killed at any moment resumes exactly where its last checkpoint was; Ctrl-C
  or SIGTERM between steps saves one more first), `Summaries` (TensorBoard, output_dir/train and
  output_dir/eval), `LoopProgress` (the progress lines' rate and ETA) and `BestCheckpoint` (the
  best evaluation's model, early stopping);
- optional evaluation every N steps (`EvalSchedule`);
- a non-finite loss stops the run, naming the step, before anything is saved.

`train` returns a `TrainResult`: the per-loop losses and metrics, the evaluations and the final step.
"""

import dataclasses
import time

import keras
import tensorflow as tf

from keras_bert_common import stop
from keras_bert_common.errors import Interrupted, UsageError
from keras_bert_common.progress import DEFAULT_INTERVAL_SECONDS, format_seconds
from keras_bert_impl.layers.fused import plain_formulas
from keras_bert_impl.training.best_checkpoint import BestCheckpoint
from keras_bert_impl.training.distribution import input_pipeline_of, is_chief
from keras_bert_impl.training.loop_progress import LoopProgress
from keras_bert_impl.training.run_checkpoints import INPUT_FLAGS_FILE, RunCheckpoints
from keras_bert_impl.training.summaries import Summaries, is_number


class NonFiniteLossError(UsageError):
    """The training loss became NaN or infinite."""


@dataclasses.dataclass
class EvalSchedule:
    """Evaluate every `every_n_steps` during training: `evaluate()` returns a metrics dict. With
    `keep_best` (a metric name) the best evaluation's model is kept in output_dir/best; with
    `patience` training stops after that many evaluations without improvement."""

    every_n_steps: int
    evaluate: object
    keep_best: str = None
    patience: int = None


@dataclasses.dataclass
class TrainResult:
    """What `Trainer.train` did: `history` has one dict per loop (step, loss, each loss and metric
    term, learning_rate, examples_per_second); `evaluations` one dict per evaluation (step and
    metrics)."""

    final_step: int
    start_step: int
    resumed_from: str = None
    history: list = dataclasses.field(default_factory=list)
    evaluations: list = dataclasses.field(default_factory=list)
    best: BestCheckpoint = None  # with EvalSchedule.keep_best
    stopped_early: bool = False

    @property
    def last(self):
        return self.history[-1] if self.history else {}


class Trainer:
    """Trains `model` on `task` under `strategy`; see the module docstring."""

    def __init__(
        self,
        strategy,
        task,
        model,
        optimizer,
        output_dir,
        steps_per_loop=1000,
        save_checkpoints_steps=1000,
        jit_compile=False,
        gradient_accumulation_steps=1,
        clip_norm=1.0,
        max_checkpoints_to_keep=5,
        log_every_seconds=DEFAULT_INTERVAL_SECONDS,
        log=print,
    ):
        self.strategy = strategy
        self.task = task
        self.model = model
        self.optimizer = optimizer
        self.output_dir = output_dir
        self.steps_per_loop = max(1, steps_per_loop)
        self.save_checkpoints_steps = max(1, save_checkpoints_steps)
        self.gradient_accumulation_steps = max(1, gradient_accumulation_steps)
        self.clip_norm = clip_norm
        self.log = log
        self.is_chief = is_chief(strategy)
        self.local_replicas = len(strategy.extended.worker_devices)
        pipeline_id, _ = input_pipeline_of(strategy)
        self._first_local_replica = pipeline_id * self.local_replicas
        with strategy.scope():
            # Built before the first strategy.run: building inside it fails under a strategy.
            optimizer.build(model.trainable_variables)
        # The task's sums, named once: numerators (losses, then metrics), then their denominators.
        self._numerator_names = list(task.loss_terms) + list(task.metric_terms)
        self._denominator_names = sorted(set(task.loss_terms.values()) | set(task.metric_terms.values()))
        self._gradients = self._compiled_gradients(jit_compile)
        self.iterator = None
        self.checkpoints = RunCheckpoints(
            strategy, model, optimizer, output_dir, self.is_chief, max_checkpoints_to_keep
        )
        self.summaries = Summaries(output_dir, self.is_chief)
        self.log_every_seconds = log_every_seconds
        # In-loop progress calls back into Python, which a TPU's compiled loop cannot do.
        self._progress_in_loop = not isinstance(strategy, tf.distribute.TPUStrategy)
        self._progress = None
        self.train_loop = tf.function(self._train_loop_fn)
        self._eval_step = tf.function(self._eval_step_fn, reduce_retracing=True)

    # ---- the step -------------------------------------------------------------------------

    def _gradients_of(self, features, denominators):
        """Gradients and loss/metric numerators of one replica's batch (XLA-compilable)."""
        parts = self.gradient_accumulation_steps
        chunks = (
            [features]
            if parts == 1
            else [{name: value[i::parts] for name, value in features.items()} for i in range(parts)]
        )
        total_gradients, total_numerators = None, None
        for chunk in chunks:
            with tf.GradientTape() as tape:
                numerators = self.task.numerators(self.model, chunk, training=True)
                loss = tf.add_n(
                    [
                        tf.math.divide_no_nan(numerators[name], denominators[denominator])
                        for name, denominator in self.task.loss_terms.items()
                    ]
                )
                scaled = self.optimizer.scale_loss(loss) if hasattr(self.optimizer, "scale_loss") else loss
            gradients = [
                # Dense (a gather's IndexedSlices would make the global norm wrong); zeros for
                # weights the task does not use (the pooler under a span or tagging head).
                tf.zeros_like(v) if g is None else tf.convert_to_tensor(g)
                for g, v in zip(tape.gradient(scaled, self.model.trainable_variables), self.model.trainable_variables)
            ]
            if total_gradients is None:
                total_gradients, total_numerators = gradients, numerators
            else:
                total_gradients = [a + b for a, b in zip(total_gradients, gradients)]
                total_numerators = {k: total_numerators[k] + numerators[k] for k in numerators}
        return total_gradients, total_numerators

    def _compiled_gradients(self, jit_compile):
        if not jit_compile:
            return self._gradients_of
        compiled = tf.function(self._gradients_of, jit_compile=True)

        def gradients(features, denominators):
            # Traced here: XLA fuses the whole pass itself; the layers' fused kernels would split it.
            with plain_formulas():
                return compiled(features, denominators)

        return gradients

    def _replica_step(self, features):
        context = tf.distribute.get_replica_context()
        denominators = context.all_reduce(tf.distribute.ReduceOp.SUM, self.task.denominators(features))
        gradients, numerators = self._gradients(features, denominators)
        gradients = context.all_reduce(tf.distribute.ReduceOp.SUM, gradients)
        numerators = context.all_reduce(tf.distribute.ReduceOp.SUM, numerators)
        # BERT clips the global norm of the summed gradient (still loss-scaled under float16).
        scale = getattr(self.optimizer, "dynamic_scale", None)
        clip_norm = self.clip_norm if scale is None else self.clip_norm * tf.cast(scale, tf.float32)
        # Keras' apply sums the replicas' gradients once more: hand it each replica's share. The
        # clip and the share are one multiplication (one pass over BERT-base's 440 MB, not two).
        norm = tf.linalg.global_norm(gradients)
        factor = clip_norm / tf.maximum(norm, clip_norm) / self.strategy.num_replicas_in_sync
        self.optimizer.apply([g * factor for g in gradients], self.model.trainable_variables)
        return numerators, denominators

    def _distribute(self, features):
        """This worker's batch -> one slice per local replica."""
        if self.local_replicas == 1:
            return self.strategy.experimental_distribute_values_from_function(lambda _: features)

        def slice_for(context):
            index = context.replica_id_in_sync_group - self._first_local_replica
            return {name: tf.split(value, self.local_replicas)[index] for name, value in features.items()}

        return self.strategy.experimental_distribute_values_from_function(slice_for)

    def _first(self, per_replica):
        """A value all-reduced on every replica: the copy of the first local replica."""
        return tf.nest.map_structure(lambda v: self.strategy.experimental_local_results(v)[0], per_replica)

    def _train_loop_fn(self, iterator, num_steps):
        sums = {name: tf.constant(0.0) for name in self._numerator_names + self._denominator_names}
        for index in tf.range(num_steps):
            features = next(iterator)
            numerators, denominators = self.strategy.run(self._replica_step, args=(self._distribute(features),))
            numerators, denominators = self._first(numerators), self._first(denominators)
            sums = {name: sums[name] + tf.cast((numerators | denominators)[name], tf.float32) for name in sums}
            if self._progress_in_loop:
                between = [index + 1, num_steps] + [sums[n] for n in sorted(sums)]
                if tf.py_function(self._between_steps, between, tf.bool):
                    break  # a stop was requested (Ctrl-C, SIGTERM): end the call now, not after num_steps
        return sums

    def _between_steps(self, done, num_steps, *values):
        """Called after every step of a long loop: a progress line when one is due (see
        `_log_progress`); returns whether a stop was requested."""
        if stop.requested():
            return True
        progress = self._progress
        if progress is None:
            return False
        step = progress.loop_start_step + int(done)
        progress.step_done(step)
        if not progress.due() or int(done) == int(num_steps):
            return False
        sums = dict(zip(sorted(self._numerator_names + self._denominator_names), (float(v) for v in values)))
        self._log_progress(step, self._ratios(sums))
        return False

    def _eval_step_fn(self, features):
        def replica(features):
            context = tf.distribute.get_replica_context()
            numerators = self.task.numerators(self.model, features, training=False)
            denominators = self.task.denominators(features)
            return context.all_reduce(tf.distribute.ReduceOp.SUM, (numerators, denominators))

        return self._first(self.strategy.run(replica, args=(self._distribute(features),)))

    # ---- checkpoints (RunCheckpoints) ------------------------------------------------------

    def restore_latest(self):
        """For evaluation or prediction without training: the newest checkpoint of output_dir
        (model and step). Returns its path, or None."""
        return self.checkpoints.restore_latest()

    def _save(self):
        return self.checkpoints.save(self.global_step)

    def _last_saved_step(self):
        return self.checkpoints.last_saved_step()

    @property
    def global_step(self):
        return int(self.optimizer.iterations.numpy())

    # ---- public ---------------------------------------------------------------------------

    def train(self, dataset, num_train_steps, global_batch_size, eval_schedule=None, input_flags=None):
        """Trains until `num_train_steps`, resuming from the newest checkpoint in `output_dir`;
        returns a `TrainResult`. With `eval_schedule`, evaluates every N steps (and at the end).
        `input_flags` ({flag: value}, e.g. the files and batch size `dataset` reads) is kept beside
        the checkpoints: a resume with other values is refused, naming them."""
        unrecorded = self.checkpoints.check_input_flags(input_flags)
        if unrecorded:
            getattr(self.log, "warning", self.log)(
                f"{self.checkpoints.output_dir}: its {INPUT_FLAGS_FILE} does not record {', '.join(unrecorded)} "
                "(written by an older version, or by a run started without it): not checked on this resume; "
                "recorded with the next checkpoint, so later resumes check it"
            )
        with self.strategy.scope():
            self.iterator = iter(dataset)
        restored = self.checkpoints.open(self.iterator)
        if restored:
            self.log(f"resumed from {restored} at step {self.global_step}")
            if self.global_step >= num_train_steps:
                self.log(f"already past --num_train_steps={num_train_steps}: nothing to train")
        result = TrainResult(final_step=self.global_step, start_step=self.global_step, resumed_from=restored)
        if eval_schedule is not None and eval_schedule.keep_best:
            result.best = BestCheckpoint(
                self.output_dir, eval_schedule.keep_best, eval_schedule.patience, write=self.is_chief
            )
        self._progress = LoopProgress(num_train_steps, self.global_step, global_batch_size, self.log_every_seconds)
        try:
            self._train_until(num_train_steps, global_batch_size, eval_schedule, result)
        except KeyboardInterrupt as interrupt:
            raise self._interrupted(interrupt) from None
        finally:
            self._progress = None
        last = self._last_saved_step()
        if last != self.global_step:
            self._save()
        if eval_schedule is not None and (not result.evaluations or result.evaluations[-1]["step"] != self.global_step):
            result.evaluations.append(self._run_evaluation(eval_schedule, result.best))
        result.final_step = self.global_step
        return result

    def _train_until(self, num_train_steps, global_batch_size, eval_schedule, result):
        every_eval = eval_schedule.every_n_steps if eval_schedule is not None and eval_schedule.every_n_steps else None
        while self.global_step < num_train_steps:
            step = self.global_step
            # Loops end on checkpoint (and evaluation) boundaries so both land on multiples of their interval.
            boundaries = [self.save_checkpoints_steps - step % self.save_checkpoints_steps]
            if every_eval:
                boundaries.append(every_eval - step % every_eval)
            num_steps = min(self.steps_per_loop, num_train_steps - step, *boundaries)
            if not self._progress_in_loop and not result.history:
                # A loop that cannot report its steps (TPU) runs the first step alone: it carries the
                # compilation, and the progress lines measure from its end (the loop's step count is
                # a tensor, so the next call compiles nothing).
                num_steps = 1
            self._progress.start_loop(step)
            loop_start = time.time()
            sums = {
                name: float(value) for name, value in self.train_loop(self.iterator, tf.constant(num_steps)).items()
            }
            stop.raise_if_requested()  # a signal during the loop (which ended early for it)
            elapsed = time.time() - loop_start
            metrics = self._ratios(sums)
            step = self.global_step
            self._progress.step_done(step)  # where the loop does not report its steps (TPU)
            if not all(map(_finite, metrics.values())):
                saved = self._last_saved_step()
                kept = f"its checkpoint of step {saved} is kept" if saved is not None else "no checkpoint was saved yet"
                raise NonFiniteLossError(
                    f"{self.output_dir}: loss is {metrics['loss']} at step {step} (steps {step - num_steps + 1}-"
                    f"{step}); stopped without saving, {kept}; lower --learning_rate (or check the data)"
                )
            metrics["learning_rate"] = float(keras.ops.convert_to_numpy(self.optimizer.learning_rate))
            metrics["examples_per_second"] = num_steps * global_batch_size / max(elapsed, 1e-9)
            self.summaries.train(metrics, step)
            # A line per loop, but not many a second when loops are short (TensorBoard has them all).
            boundary = step % self.save_checkpoints_steps == 0 or step == num_train_steps
            if boundary or every_eval and step % every_eval == 0 or self._progress.seconds_since_line() >= 1.0:
                self._log_progress(step, metrics)
            result.history.append({"step": step, **metrics})
            if step % self.save_checkpoints_steps == 0:
                self._save()
            if every_eval and step % every_eval == 0 and step < num_train_steps:
                result.evaluations.append(self._run_evaluation(eval_schedule, result.best))
                if result.best is not None and result.best.should_stop:
                    best = result.best
                    self.log(
                        f"early stopping at step {step}: {best.metric} has not improved for {best.patience} "
                        f"evaluation(s); the best, {best.best_value:.4f}, was at step {best.best_step}"
                    )
                    result.stopped_early = True
                    return

    def _log_progress(self, step, metrics):
        progress = self._progress
        rate = progress.examples_per_second(step) if progress else metrics.get("examples_per_second", 0.0)
        eta = progress.eta(step) if progress else None
        self.log(
            f"step {step}/{progress.num_train_steps if progress else '?'} loss={metrics['loss']:.4f} "
            + " ".join(f"{name}={metrics[name]:.4f}" for name in self.task.metric_terms)
            + (f" lr={metrics['learning_rate']:.3g}" if "learning_rate" in metrics else "")
            + f" {rate:.1f} examples/s ETA {format_seconds(eta)}"
        )
        if progress:
            progress.logged()

    def record_evaluation(self, eval_schedule):
        """Evaluates now: logs the metrics and writes them to TensorBoard (`output_dir/eval`)."""
        return self._run_evaluation(eval_schedule)

    def write_eval_summaries(self, metrics, step=None):
        """Evaluation metrics to TensorBoard (`output_dir/eval`) at `step`: the step of the weights
        evaluated (the current one unless given)."""
        self.summaries.eval(metrics, self.global_step if step is None else step)

    def _run_evaluation(self, eval_schedule, best=None):
        """Evaluates, logs, writes the summaries, and keeps the model if `best` says it is the best."""
        step = self.global_step
        metrics = dict(eval_schedule.evaluate())
        metrics.pop("global_step", None)
        self.write_eval_summaries(metrics)
        self.log(
            f"eval at step {step}: " + ", ".join(f"{k} = {v:.4f}" for k, v in sorted(metrics.items()) if is_number(v))
        )
        if best is not None and best.update(self.model, metrics, step):
            self.log(f"best {best.metric} so far ({best.best_value:.4f}): kept in {best.directory}")
        return {"step": step, **metrics}

    def _interrupted(self, interrupt):
        """Ctrl-C / SIGTERM: save where the run is (unless it came during a save, or other workers
        would have to join), then an `Interrupted` naming the step and how to resume."""
        step = self.global_step
        saved = self._last_saved_step()
        single_worker = not isinstance(self.strategy, tf.distribute.MultiWorkerMirroredStrategy)
        if not self.checkpoints.saving and single_worker and self.is_chief and saved != step:
            try:
                self._save()
                saved = step
            except BaseException:  # noqa: BLE001 -- a second signal: keep the older checkpoint
                pass
        where = f"checkpoint of step {saved} in {self.output_dir}" if saved is not None else "no checkpoint yet"
        return Interrupted(
            getattr(interrupt, "signal_name", "SIGINT"),
            f"stopped at step {step} ({where}); run the same command to resume",
        )

    def evaluate(self, dataset, max_steps=None):
        """Loss terms and metrics averaged over `dataset` (at most `max_steps` batches)."""
        sums = {}
        for index, features in enumerate(dataset):
            if max_steps is not None and index >= max_steps:
                break
            numerators, denominators = self._eval_step(features)
            stop.raise_if_requested()
            for name, value in (numerators | denominators).items():
                sums[name] = sums.get(name, 0.0) + float(value)
        if not sums:
            raise UsageError("the evaluation data holds no complete batch; lower --eval_batch_size or add data")
        results = self._ratios({name: sums.get(name, 0.0) for name in list(sums) + self._denominator_names})
        results["global_step"] = self.global_step
        return results

    def _ratios(self, sums):
        metrics = {}
        for name, denominator in {**self.task.loss_terms, **self.task.metric_terms}.items():
            metrics[name] = sums[name] / sums[denominator] if sums[denominator] else 0.0
        metrics["loss"] = sum(metrics[name] for name in self.task.loss_terms)
        return metrics


def _finite(value):
    return value == value and value not in (float("inf"), float("-inf"))
