"""`RunCheckpoints`: the checkpoints of one training run in its output_dir, for the `Trainer`.

A `tf.train.CheckpointManager` keeps model, optimizer, data iterator and dropout RNG state, so a
run killed at any moment resumes exactly where its last checkpoint was; a save that fails (a full
disk, a signal) leaves no half-written checkpoint; the input flags a run started with are kept
beside its checkpoints (`input_flags.json`), so a resume over other data is refused, naming it.
"""

import contextlib
import json
import os

import tensorflow as tf

from keras_bert_common.files import atomic_output, describe_files, read_bytes
from keras_bert_impl.errors import CheckpointMismatchError
from keras_bert_impl.training.distribution import input_pipeline_of

# Beside the checkpoints: the input flags they were written with (`Trainer.train(input_flags=...)`).
INPUT_FLAGS_FILE = "input_flags.json"


class RunCheckpoints:
    """Saving and restoring one run's state; the chief keeps model, optimizer, iterator and RNG
    state, every other worker (MultiWorkerMirroredStrategy) its own iterator in worker-N."""

    def __init__(self, strategy, model, optimizer, output_dir, is_chief, max_to_keep=5):
        self.strategy = strategy
        self.model = model
        self.optimizer = optimizer
        self.output_dir = output_dir
        self.is_chief = is_chief
        self.max_to_keep = max_to_keep
        self.manager = None
        self.saving = False
        self._unrecorded_flags = []  # input flags the record lacks: added once a checkpoint is saved with them
        self._input_flags = None  # {flag: value} of this run's input pipeline

    def _rng_states(self):
        return [v for v in self.model.variables if "seed_generator_state" in v.path]

    def open(self, iterator):
        """The manager over `iterator` (the run's data position); returns the restored path or None."""
        if self.is_chief:
            checkpoint = tf.train.Checkpoint(
                model=self.model, optimizer=self.optimizer, iterator=iterator, rng_states=self._rng_states()
            )
            directory = self.output_dir
        else:
            checkpoint = tf.train.Checkpoint(iterator=iterator, step=self.optimizer.iterations)
            directory = os.path.join(self.output_dir, f"worker-{input_pipeline_of(self.strategy)[0]}")
        self.manager = tf.train.CheckpointManager(checkpoint, directory=directory, max_to_keep=self.max_to_keep)
        with self._of_this_model():
            if not self.is_chief:
                shared = tf.train.latest_checkpoint(self.output_dir)
                if shared:
                    tf.train.Checkpoint(
                        model=self.model, optimizer=self.optimizer, rng_states=self._rng_states()
                    ).restore(shared).expect_partial()
            return self.manager.restore_or_initialize()

    def restore_latest(self):
        """For evaluation or prediction without training: the newest checkpoint of output_dir
        (model and step; the data position does not matter). Returns its path, or None."""
        latest = tf.train.latest_checkpoint(self.output_dir)
        if latest:
            with self._of_this_model():
                tf.train.Checkpoint(model=self.model, optimizer=self.optimizer).restore(latest).expect_partial()
        return latest

    @contextlib.contextmanager
    def _of_this_model(self):
        """Resuming from output_dir: its checkpoints must be of this model, not of another task's run."""
        try:
            yield
        except (ValueError, AssertionError, tf.errors.OpError) as error:
            first = str(getattr(error, "message", error)).strip().splitlines()[0]
            if "dataset iterator" in first or "DeserializeIterator" in first:
                # The model matches; only the data does not: the iterator's saved position is of
                # a pipeline over other files (or another batch size or shuffling).
                detail = first.split("checkpoint: ", 1)[-1].split(". Make sure")[0]
                raise CheckpointMismatchError(
                    f"{self.output_dir}: its checkpoints were written reading other input data ({detail}); "
                    "resume with the same --input_file and batch flags as the run that wrote them, or pass a new "
                    "--output_dir to train on these files (--init_checkpoint can start it from that run's weights)"
                ) from None
            raise CheckpointMismatchError(
                f"{self.output_dir}: holds checkpoints of another model ({first}); pass a new --output_dir "
                "(or remove its ckpt-* files)"
            ) from None

    def save(self, step):
        self.saving = True
        try:
            saved = self.manager.save(checkpoint_number=step)
        except BaseException:
            self._remove_unrecorded(step)  # a full disk or a signal: no half-written checkpoint stays
            raise
        finally:
            self.saving = False
        if self._unrecorded_flags:
            self._write_input_flags()
            self._unrecorded_flags = []
        return saved

    def _write_input_flags(self):
        if self.is_chief:
            tf.io.gfile.makedirs(self.output_dir)
            with atomic_output(os.path.join(self.output_dir, INPUT_FLAGS_FILE)) as writer:
                json.dump(self._input_flags, writer, indent=1)

    def _remove_unrecorded(self, step):
        """The files of checkpoint `step` when the state file does not name it (its save failed)."""
        prefix = os.path.join(self.manager.directory, f"ckpt-{step}")
        if tf.train.latest_checkpoint(self.manager.directory) == prefix:
            return
        for path in tf.io.gfile.glob(prefix + ".*") + tf.io.gfile.glob(prefix + "_temp*"):
            if tf.io.gfile.isdir(path):
                tf.io.gfile.rmtree(path)
            else:
                tf.io.gfile.remove(path)

    def last_saved_step(self):
        latest = self.manager.latest_checkpoint if self.manager else None
        return int(latest.rsplit("-", 1)[1]) if latest else None

    def check_input_flags(self, input_flags):
        """A checkpoint's data position is one of the pipeline it was saved from: resuming over
        other files or batches would fail deep in tf.data, or read the data in another order.
        Returns the flags the record lacks (an older version's record, or a run started without
        them): not checked this time; added to the record with the first checkpoint saved here, so
        that later resumes check them (not before: a resume that fails must not record its values)."""
        if input_flags is None:
            return []
        self._input_flags = input_flags
        path = os.path.join(self.output_dir, INPUT_FLAGS_FILE)
        if tf.train.latest_checkpoint(self.output_dir):
            if not tf.io.gfile.exists(path):
                return []  # written before this record existed
            saved = json.loads(read_bytes(path))
            # A flag the new run lacks was left out (a --feature_based run resumed without it); one
            # only the new run has is not compared (see the docstring).
            changed = [flag for flag, value in input_flags.items() if flag in saved and saved[flag] != value]
            changed += [flag for flag in saved if flag not in input_flags]
            if changed:

                def shown(value):
                    if value is None:
                        return "unset"
                    return describe_files(value) if isinstance(value, list) else value

                raise CheckpointMismatchError(
                    f"{self.output_dir}: its checkpoints were written reading "
                    + ", ".join(f"{flag}={shown(saved[flag])}" for flag in changed)
                    + ", not "
                    + ", ".join(f"{shown(input_flags.get(flag))}" for flag in changed)
                    + f"; resume with the same {' and '.join(changed)}, or pass a new --output_dir to train on this "
                    "data (--init_checkpoint=<that output_dir> starts from its weights)"
                )
            self._unrecorded_flags = [flag for flag in input_flags if flag not in saved]
            return self._unrecorded_flags  # the record now differs from `input_flags` only by those
        self._write_input_flags()
        return []
