"""`Lamb`: the LAMB optimizer (You et al., 2019) as in tf-models-official, for large batches.

Keras' own `Lamb` applies weight decay apart from the trust ratio and cannot exclude variables
from the layer adaptation; this one follows the paper: the decay joins the Adam update, and the
update is scaled by ||w|| / ||update|| per variable (1 where either norm is 0, and for variables
excluded from the adaptation, which default to those excluded from weight decay).
"""

import re

import keras
from keras import ops


@keras.saving.register_keras_serializable(package="keras_bert_impl")
class Lamb(keras.optimizers.Optimizer):
    def __init__(
        self,
        learning_rate=0.001,
        beta_1=0.9,
        beta_2=0.999,
        epsilon=1e-6,
        weight_decay_rate=0.0,
        exclude_from_weight_decay=None,
        exclude_from_layer_adaptation=None,
        name="lamb",
        **kwargs,
    ):
        super().__init__(learning_rate=learning_rate, name=name, **kwargs)
        self.beta_1 = beta_1
        self.beta_2 = beta_2
        self.epsilon = epsilon
        self.weight_decay_rate = weight_decay_rate
        self.exclude_from_weight_decay_names = list(exclude_from_weight_decay or [])
        self.exclude_from_layer_adaptation_names = list(
            exclude_from_layer_adaptation
            if exclude_from_layer_adaptation is not None
            else self.exclude_from_weight_decay_names
        )

    def build(self, var_list):
        if self.built:
            return
        super().build(var_list)
        self._m, self._v = self.add_optimizer_variables(var_list, ["m", "v"])

    def _matches(self, variable, patterns):
        return any(re.search(pattern, variable.name) for pattern in patterns)

    def update_step(self, gradient, variable, learning_rate):
        lr = ops.cast(learning_rate, variable.dtype)
        gradient = ops.cast(gradient, variable.dtype)
        step = ops.cast(self.iterations + 1, variable.dtype)
        m = self._m[self._get_variable_index(variable)]
        v = self._v[self._get_variable_index(variable)]
        self.assign(m, self.beta_1 * m + (1.0 - self.beta_1) * gradient)
        self.assign(v, self.beta_2 * v + (1.0 - self.beta_2) * ops.square(gradient))
        m_hat = m / (1.0 - ops.power(self.beta_1, step))
        v_hat = v / (1.0 - ops.power(self.beta_2, step))
        update = m_hat / (ops.sqrt(v_hat) + self.epsilon)
        if self.weight_decay_rate and not self._matches(variable, self.exclude_from_weight_decay_names):
            update = update + self.weight_decay_rate * variable
        ratio = 1.0
        if not self._matches(variable, self.exclude_from_layer_adaptation_names):
            w_norm = ops.sqrt(ops.sum(ops.square(variable)))
            u_norm = ops.sqrt(ops.sum(ops.square(update)))
            ratio = ops.where((w_norm > 0) & (u_norm > 0), w_norm / u_norm, 1.0)
        self.assign_sub(variable, ratio * lr * update)

    def get_config(self):
        config = super().get_config()
        config.update(
            beta_1=self.beta_1,
            beta_2=self.beta_2,
            epsilon=self.epsilon,
            weight_decay_rate=self.weight_decay_rate,
            exclude_from_weight_decay=self.exclude_from_weight_decay_names,
            exclude_from_layer_adaptation=self.exclude_from_layer_adaptation_names,
        )
        return config
