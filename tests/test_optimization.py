"""BERT's schedule and optimizers against formulas written out in numpy; training options that
must not change the maths (gradient accumulation) or must run (XLA, mixed precision)."""

import numpy as np
import pytest

from keras_bert_impl.runners.run_pretraining import PretrainingOptions, run_pretraining
from keras_bert_impl.training.adam_weight_decay import AdamWeightDecay
from keras_bert_impl.training.lamb import Lamb
from keras_bert_impl.training.optimization import WarmupLinearDecay, create_optimizer
from tests.pretraining_fixtures import make_pretraining_setup, pretraining_flags


def test_schedule_is_googles_warmup_then_linear_decay():
    schedule = WarmupLinearDecay(1e-4, num_train_steps=100, num_warmup_steps=10)
    for step, want in [(0, 0.0), (5, 0.5e-4), (9, 0.9e-4), (10, 1e-4 * 0.9), (50, 0.5e-4), (100, 0.0), (150, 0.0)]:
        assert float(schedule(step)) == pytest.approx(want, abs=1e-10), step


def test_adamw_excludes_layer_norm_and_bias_from_weight_decay():
    import keras

    optimizer = create_optimizer(1e-3, 10, 0)
    assert isinstance(optimizer, AdamWeightDecay) and optimizer.epsilon == 1e-6
    kernel = keras.Variable(np.ones((2, 2), np.float32), name="kernel")
    gamma = keras.Variable(np.ones(2, np.float32), name="gamma")
    bias = keras.Variable(np.ones(2, np.float32), name="output_bias")
    optimizer.apply(
        [np.zeros((2, 2), np.float32), np.zeros(2, np.float32), np.zeros(2, np.float32)], [kernel, gamma, bias]
    )
    # Zero gradients: only weight decay moves a variable (lr 1e-3 at step 0 * 0.01).
    assert float(kernel.numpy()[0, 0]) == pytest.approx(1 - 1e-3 * 0.01, rel=1e-6)
    assert gamma.numpy().tolist() == [1.0, 1.0] and bias.numpy().tolist() == [1.0, 1.0]


def test_fused_adamw_matches_decoupled_weight_decay_adam_in_numpy():
    import keras
    import tensorflow as tf

    rng = np.random.default_rng(3)
    w0, b0 = rng.normal(size=(5, 3)).astype(np.float32), rng.normal(size=(3,)).astype(np.float32)
    grads = [(rng.normal(size=(5, 3)).astype(np.float32), rng.normal(size=(3,)).astype(np.float32)) for _ in range(4)]
    kernel, bias = keras.Variable(w0, name="kernel"), keras.Variable(b0, name="bias")
    schedule = WarmupLinearDecay(0.1, num_train_steps=10, num_warmup_steps=2)
    optimizer = AdamWeightDecay(learning_rate=schedule, weight_decay_rate=0.01, exclude_from_weight_decay=["bias"])
    apply = tf.function(lambda g_w, g_b: optimizer.apply([g_w, g_b], [kernel, bias]))
    for g_w, g_b in grads:
        apply(g_w, g_b)  # inside a tf.function, as the trainer calls it

    def reference(w, gradients, decay):
        m = v = np.zeros_like(w, np.float64)
        w = w.astype(np.float64)
        for t, g in enumerate(gradients, start=1):
            lr = 0.1 * (t - 1) / 2 if t - 1 < 2 else 0.1 * (1 - (t - 1) / 10)
            w = w - lr * decay * w  # decoupled decay (Loshchilov & Hutter), before the Adam step
            m = 0.9 * m + 0.1 * g
            v = 0.999 * v + 0.001 * g * g
            w = w - lr * np.sqrt(1 - 0.999**t) / (1 - 0.9**t) * m / (np.sqrt(v) + 1e-6)
        return w

    assert np.abs(kernel.numpy() - reference(w0, [g for g, _ in grads], 0.01)).max() < 1e-5
    assert np.abs(bias.numpy() - reference(b0, [g for _, g in grads], 0.0)).max() < 1e-5
    restored = AdamWeightDecay.from_config(optimizer.get_config())
    assert restored.exclude_from_weight_decay_names == ["bias"] and restored.weight_decay_rate == 0.01


def test_lamb_matches_the_paper_in_numpy():
    import keras

    rng = np.random.default_rng(0)
    w0 = rng.normal(size=(3, 4)).astype(np.float32)
    b0 = rng.normal(size=(4,)).astype(np.float32)
    grads = [(rng.normal(size=(3, 4)).astype(np.float32), rng.normal(size=(4,)).astype(np.float32)) for _ in range(3)]
    kernel, bias = keras.Variable(w0, name="kernel"), keras.Variable(b0, name="bias")
    optimizer = Lamb(learning_rate=0.1, weight_decay_rate=0.01, exclude_from_weight_decay=["bias"])
    for g_w, g_b in grads:
        optimizer.apply([g_w, g_b], [kernel, bias])

    def reference(w, gradients, decay, adapt):
        m = v = np.zeros_like(w, np.float64)
        w = w.astype(np.float64)
        for t, g in enumerate(gradients, start=1):
            m = 0.9 * m + 0.1 * g
            v = 0.999 * v + 0.001 * g * g
            update = (m / (1 - 0.9**t)) / (np.sqrt(v / (1 - 0.999**t)) + 1e-6) + decay * w
            ratio = np.linalg.norm(w) / np.linalg.norm(update) if adapt else 1.0
            w = w - 0.1 * ratio * update
        return w

    assert np.abs(kernel.numpy() - reference(w0, [g for g, _ in grads], 0.01, True)).max() < 1e-5
    assert np.abs(bias.numpy() - reference(b0, [g for _, g in grads], 0.0, False)).max() < 1e-5


@pytest.fixture(scope="module")
def setup(tmp_path_factory):
    return make_pretraining_setup(str(tmp_path_factory.mktemp("opt")), dropout=0.0)


def _losses(setup, output_dir, **overrides):
    logs = []
    flags = pretraining_flags(setup, output_dir, num_train_steps=4, iterations_per_loop=1, **overrides)
    run_pretraining(PretrainingOptions(**flags), log=logs.append)
    return [float(line.split("loss=")[1].split()[0]) for line in logs if line.startswith("step ")]


def test_gradient_accumulation_and_xla_give_the_same_training(setup, tmp_path):
    plain = _losses(setup, str(tmp_path / "plain"))
    accumulated = _losses(setup, str(tmp_path / "accumulated"), gradient_accumulation_steps=2)
    compiled = _losses(setup, str(tmp_path / "xla"), jit_compile=True)
    assert np.abs(np.array(plain) - np.array(accumulated)).max() < 1e-5
    assert np.abs(np.array(plain) - np.array(compiled)).max() < 1e-4
    lamb = _losses(setup, str(tmp_path / "lamb"), optimizer="lamb")
    assert lamb[0] == pytest.approx(plain[0], abs=1e-6) and lamb[-1] != plain[-1]


@pytest.mark.parametrize("policy", ["mixed_bfloat16", "mixed_float16"])
def test_mixed_precision_trains(setup, tmp_path, policy):
    import keras

    try:
        losses = _losses(setup, str(tmp_path / policy), mixed_precision=policy)
    finally:
        keras.mixed_precision.set_global_policy("float32")
    assert all(np.isfinite(losses)) and abs(losses[0] - 4.85) < 0.3


def test_one_trainer_step_equals_a_plain_keras_step(setup, tmp_path):
    """The trainer's loss normalisation, clipping and update against a hand-written step."""
    import keras
    import tensorflow as tf

    from keras_bert_impl.models.bert_config import BertConfig
    from keras_bert_impl.tasks.pretraining import PretrainingTask
    from keras_bert_impl.training.input_pipeline import make_tfrecord_dataset
    from keras_bert_impl.training.trainer import Trainer

    config = BertConfig.from_json_file(setup["bert_config.json"])
    task = PretrainingTask(config, 24, 4)
    batch = next(iter(make_tfrecord_dataset([setup["train.tfrecord"]], task.feature_spec(), 8, False)))
    keras.utils.set_random_seed(1)
    strategy = tf.distribute.OneDeviceStrategy("/cpu:0")
    # Plain SGD with lr 1: the update is the clipped gradient itself, so this checks the loss
    # normalisation and the clipping exactly (AdamW is checked on its own above).
    with strategy.scope():
        model = task.build_model()
        optimizer = keras.optimizers.SGD(1.0)
    reference = task.build_model()
    reference.set_weights(model.get_weights())
    trainer = Trainer(strategy, task, model, optimizer, str(tmp_path), steps_per_loop=1, log=lambda m: None)
    trainer.train_loop(iter(tf.data.Dataset.from_tensors(batch).repeat()), tf.constant(1))

    reference_optimizer = keras.optimizers.SGD(1.0)
    with tf.GradientTape() as tape:
        outputs = reference({k: batch[k] for k in ("input_ids", "input_mask", "segment_ids", "masked_lm_positions")})
        weights = tf.cast(batch["masked_lm_weights"], tf.float32)
        mlm = keras.losses.sparse_categorical_crossentropy(
            batch["masked_lm_ids"], outputs["masked_lm_logits"], from_logits=True
        )
        nsp = keras.losses.sparse_categorical_crossentropy(
            batch["next_sentence_labels"][:, 0], outputs["next_sentence_logits"], from_logits=True
        )
        loss = tf.reduce_sum(mlm * weights) / tf.reduce_sum(weights) + tf.reduce_mean(nsp)
    # Dense gradients before the norm, as Google's TPU code (one-hot embeddings) has them: the
    # norm of unsummed IndexedSlices from a gather counts repeated rows wrongly.
    dense = [tf.convert_to_tensor(g) for g in tape.gradient(loss, reference.trainable_variables)]
    gradients, norm = tf.clip_by_global_norm(dense, 1.0)
    assert float(norm) > 1.0  # the clip is exercised
    reference_optimizer.apply(gradients, reference.trainable_variables)
    for got, want in zip(model.trainable_variables, reference.trainable_variables):
        assert np.abs(got.numpy() - want.numpy()).max() < 1e-6, got.path
    moved = max(np.abs(a - b).max() for a, b in zip(model.get_weights(), task.build_model().get_weights()))
    assert moved > 0
