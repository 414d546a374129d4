"""`BestCheckpoint`: the weights of the best evaluation so far, and early stopping.

`--keep_best_checkpoint=METRIC` keeps, in `output_dir/best`, the model of the evaluation with the
best METRIC (lowest for a loss, highest otherwise); `--early_stopping_patience=N` ends training
after N evaluations in a row without improvement (google-research/bert #636). `best/best.json`
holds the state, so a resumed run goes on counting where the killed one stopped; an evaluation
that a resumed run repeats (exact resume: the same step, the same metrics) is not counted twice.
"""

import json
import os

import tensorflow as tf

from keras_bert_common.errors import UsageError
from keras_bert_common.files import atomic_output


class BestCheckpoint:
    def __init__(self, output_dir, metric, patience=None, write=True):
        self.directory = os.path.join(output_dir, "best")
        self.metric = metric
        self.patience = patience
        self.write = write  # the chief writes; other workers only count
        self.lower_is_better = "loss" in metric
        self.state = {"metric": metric, "best_value": None, "best_step": None, "since_best": 0, "last_step": -1}
        path = os.path.join(self.directory, "best.json")
        if tf.io.gfile.exists(path):
            with tf.io.gfile.GFile(path) as reader:
                saved = json.load(reader)
            if saved.get("metric") == metric:
                self.state = saved

    @staticmethod
    def check_metric(metric, names):
        """Refuses a `metric` that is not among `names` (what the evaluation returns)."""
        if metric not in names:
            raise UsageError(
                f"--keep_best_checkpoint={metric}: the evaluation has no such metric; use one of {', '.join(names)}"
            )

    @property
    def best_step(self):
        return self.state["best_step"]

    @property
    def best_value(self):
        return self.state["best_value"]

    def _better(self, value):
        best = self.state["best_value"]
        if best is None:
            return True
        return value < best if self.lower_is_better else value > best

    def update(self, model, metrics, step):
        """After an evaluation at `step`: keeps the model if `metrics` are the best yet. Returns
        whether they were."""
        value = metrics.get(self.metric)
        if not isinstance(value, (int, float)) or isinstance(value, bool):
            numbers = [k for k, v in metrics.items() if isinstance(v, (int, float)) and not isinstance(v, bool)]
            self.check_metric(self.metric, sorted(name for name in numbers if name != "step"))
        if step <= self.state["last_step"]:
            return False  # a resumed run repeating an evaluation already counted
        improved = self._better(value)
        if improved:
            if self.write:
                manager = tf.train.CheckpointManager(tf.train.Checkpoint(model=model), self.directory, max_to_keep=1)
                manager.save(checkpoint_number=step)
            self.state.update(best_value=float(value), best_step=int(step), since_best=0)
        else:
            self.state["since_best"] += 1
        self.state["last_step"] = int(step)
        if self.write:
            with atomic_output(os.path.join(self.directory, "best.json")) as writer:
                writer.write(json.dumps(self.state, indent=1) + "\n")
        return improved

    @property
    def should_stop(self):
        return self.patience is not None and self.state["since_best"] >= self.patience

    def restore(self, model):
        """Loads the best model's weights into `model`; returns the checkpoint path (None if none)."""
        latest = tf.train.latest_checkpoint(self.directory)
        if latest:
            tf.train.Checkpoint(model=model).restore(latest).expect_partial()
        return latest
