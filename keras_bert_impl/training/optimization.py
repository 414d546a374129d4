"""`WarmupLinearDecay` and `create_optimizer`: BERT's optimizer set-up on Keras' optimizers.

Google's recipe: linear warmup to `init_lr` over `num_warmup_steps`, linear decay to 0 at
`num_train_steps` (counted from step 0, as Google's `polynomial_decay`), Adam with decoupled
weight decay 0.01 not applied to LayerNorm and bias, beta 0.9 / 0.999, epsilon 1e-6; LAMB for
large batches. Gradients are clipped to global norm 1.0 by the trainer, after the all-reduce.
"""

import keras
from keras import ops

from keras_bert_common.errors import UsageError
from keras_bert_impl.training.adam_weight_decay import AdamWeightDecay
from keras_bert_impl.training.lamb import Lamb

# Regexes over variable names (Keras: `gamma`, `beta`, `bias`, `output_bias`).
NO_DECAY_NAMES = ("gamma", "beta", "bias")


@keras.saving.register_keras_serializable(package="keras_bert_impl")
class WarmupLinearDecay(keras.optimizers.schedules.LearningRateSchedule):
    """lr(step) = init_lr * step / warmup before `num_warmup_steps`, else
    (init_lr - end) * (1 - min(step, total) / total) ** power + end."""

    def __init__(self, init_lr, num_train_steps, num_warmup_steps=0, end_learning_rate=0.0, power=1.0):
        self.init_lr = init_lr
        self.num_train_steps = num_train_steps
        self.num_warmup_steps = num_warmup_steps
        self.end_learning_rate = end_learning_rate
        self.power = power

    def __call__(self, step):
        step = ops.cast(step, "float32")
        total = float(max(self.num_train_steps, 1))
        decayed = (self.init_lr - self.end_learning_rate) * ops.power(
            1.0 - ops.minimum(step, total) / total, self.power
        ) + self.end_learning_rate
        if not self.num_warmup_steps:
            return decayed
        warmup = self.init_lr * step / float(self.num_warmup_steps)
        return ops.where(step < float(self.num_warmup_steps), warmup, decayed)

    def get_config(self):
        return {
            "init_lr": self.init_lr,
            "num_train_steps": self.num_train_steps,
            "num_warmup_steps": self.num_warmup_steps,
            "end_learning_rate": self.end_learning_rate,
            "power": self.power,
        }


def create_optimizer(init_lr, num_train_steps, num_warmup_steps, optimizer_type="adamw", weight_decay_rate=0.01):
    """AdamW (Keras' maths, fused per variable) or LAMB with BERT's hyper-parameters and schedule."""
    schedule = WarmupLinearDecay(init_lr, num_train_steps, num_warmup_steps)
    if optimizer_type == "adamw":
        return AdamWeightDecay(
            learning_rate=schedule,
            weight_decay_rate=weight_decay_rate,
            beta_1=0.9,
            beta_2=0.999,
            epsilon=1e-6,
            exclude_from_weight_decay=list(NO_DECAY_NAMES),
        )
    if optimizer_type == "lamb":
        return Lamb(
            learning_rate=schedule, weight_decay_rate=weight_decay_rate, exclude_from_weight_decay=list(NO_DECAY_NAMES)
        )
    raise UsageError(f"--optimizer={optimizer_type}: use adamw or lamb")
