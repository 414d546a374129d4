"""`Summaries`: a run's TensorBoard scalars, training in output_dir/train and evaluation in
output_dir/eval, written by the chief only (writers opened on first use)."""

import os

import tensorflow as tf


def is_number(value):
    return isinstance(value, (int, float)) and not isinstance(value, bool)


class Summaries:
    def __init__(self, output_dir, is_chief):
        self.output_dir = output_dir
        self.is_chief = is_chief
        self._writers = {}

    def _write(self, kind, metrics, step):
        if not self.is_chief:
            return
        if kind not in self._writers:
            self._writers[kind] = tf.summary.create_file_writer(os.path.join(self.output_dir, kind))
        writer = self._writers[kind]
        with writer.as_default(step=step):
            for name, value in metrics.items():
                tf.summary.scalar(name, value)
        writer.flush()

    def train(self, metrics, step):
        """One training loop's losses, metrics, learning rate and examples/s."""
        self._write("train", metrics, step)

    def eval(self, metrics, step):
        """An evaluation's numbers (not its step counters)."""
        numbers = {k: v for k, v in metrics.items() if is_number(v) and k not in ("global_step", "step")}
        self._write("eval", numbers, step)
