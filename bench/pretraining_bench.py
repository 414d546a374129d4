"""Pretraining throughput: ours vs tf-models-official's BertPretrainerV2 vs keras-hub's
BertMaskedLM, same config, batch and machine, in one run; and as a share of the matmul peak
measured in the same run.

    make bench-deps && .venv/bin/python -m bench.pretraining_bench [--models=tiny,mini,base]

Every implementation trains on the same in-memory batch (seq 128, 20 masked positions) with
Adam-style updates; each is timed over `--steps` steps after warm-up (tracing, XLA compilation).
Ours runs its real training path (`Trainer`: the loop run_pretraining.py uses).
"""

import argparse
import os
import time

os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "2")

import numpy as np
import tensorflow as tf

MODELS = {  # name: (layers, hidden, heads, batch)
    "tiny": (2, 128, 2, 64),
    "mini": (4, 256, 4, 32),
    "base": (12, 768, 12, 8),
}
VOCAB, SEQ, PRED = 30522, 128, 20


def batch_of(batch_size, seed=0):
    rng = np.random.default_rng(seed)
    return {
        "input_ids": rng.integers(1000, VOCAB, (batch_size, SEQ)).astype(np.int32),
        "input_mask": np.ones((batch_size, SEQ), np.int32),
        "segment_ids": (np.arange(SEQ)[None, :] >= SEQ // 2).astype(np.int32).repeat(batch_size, 0),
        "masked_lm_positions": np.sort(rng.choice(np.arange(1, SEQ), (batch_size, PRED)), axis=1).astype(np.int32),
        "masked_lm_ids": rng.integers(1000, VOCAB, (batch_size, PRED)).astype(np.int32),
        "masked_lm_weights": np.ones((batch_size, PRED), np.float32),
        "next_sentence_labels": rng.integers(0, 2, (batch_size, 1)).astype(np.int32),
    }


def train_flops(layers, hidden, batch_size):
    """Training FLOPs of one step (3x the forward pass's multiply-adds x 2)."""
    intermediate = 4 * hidden
    per_layer = 2 * SEQ * (4 * hidden * hidden + 2 * hidden * intermediate) + 2 * 2 * SEQ * SEQ * hidden
    head = 2 * PRED * (hidden * hidden + hidden * VOCAB) + 2 * hidden * hidden
    return 3 * batch_size * (layers * per_layer + head)


def matmul_peak(dtype="float32", size=2048, repeats=10):
    a = tf.cast(tf.random.normal((size, size)), dtype)
    b = tf.cast(tf.random.normal((size, size)), dtype)

    @tf.function
    def run():
        c = a
        for _ in range(repeats):
            c = tf.matmul(c, b) * 1e-3
        return c

    run().numpy()
    best = min(_timed(lambda: run().numpy()) for _ in range(3))
    return 2 * size**3 * repeats / best


def _timed(fn):
    start = time.perf_counter()
    fn()
    return time.perf_counter() - start


def ours(layers, hidden, heads, batch_size, steps, jit, policy):
    import keras

    from keras_bert_impl.models.bert_config import BertConfig
    from keras_bert_impl.tasks.pretraining import PretrainingTask
    from keras_bert_impl.training.optimization import create_optimizer
    from keras_bert_impl.training.trainer import Trainer

    keras.mixed_precision.set_global_policy(policy)
    config = BertConfig(
        vocab_size=VOCAB,
        hidden_size=hidden,
        num_hidden_layers=layers,
        num_attention_heads=heads,
        intermediate_size=4 * hidden,
        type_vocab_size=2,
    )
    strategy = tf.distribute.OneDeviceStrategy("/cpu:0" if not tf.config.list_logical_devices("GPU") else "/gpu:0")
    task = PretrainingTask(config, SEQ, PRED)
    with strategy.scope():
        model = task.build_model()
        optimizer = create_optimizer(1e-4, 10000, 100)
    trainer = Trainer(
        strategy, task, model, optimizer, "/tmp/unused", steps_per_loop=steps, jit_compile=jit, log=lambda m: None
    )
    iterator = iter(tf.data.Dataset.from_tensors(batch_of(batch_size)).repeat())
    trainer.train_loop(iterator, tf.constant(1))  # warm-up: trace and compile
    return lambda: _timed(lambda: trainer.train_loop(iterator, tf.constant(steps))) / steps


def model_garden(layers, hidden, heads, batch_size, steps, jit, policy):
    """tf-models-official as its trainers run it: the whole step (forward, backward, clipping,
    AdamWeightDecay's update) in one tf.function, `steps` steps per call (peers/model_garden_reference)."""
    from keras_bert_impl.models.bert_config import BertConfig
    from peers.model_garden_reference import ModelGardenPretraining

    config = BertConfig(
        vocab_size=VOCAB,
        hidden_size=hidden,
        num_hidden_layers=layers,
        num_attention_heads=heads,
        intermediate_size=4 * hidden,
        type_vocab_size=2,
    )
    peer = ModelGardenPretraining(config, jit_compile=jit, policy=policy)
    iterator = iter(tf.data.Dataset.from_tensors(batch_of(batch_size)).repeat())
    peer.train(iterator, 1)  # warm-up: trace and compile
    return lambda: _timed(lambda: peer.train(iterator, steps)) / steps


def keras_hub(layers, hidden, heads, batch_size, steps, jit, policy):
    import keras
    import keras_hub as hub

    keras.mixed_precision.set_global_policy(policy)
    backbone = hub.models.BertBackbone(
        vocabulary_size=VOCAB,
        num_layers=layers,
        num_heads=heads,
        hidden_dim=hidden,
        intermediate_dim=4 * hidden,
        max_sequence_length=512,
        num_segments=2,
    )
    model = hub.models.BertMaskedLM(backbone=backbone, preprocessor=None)
    optimizer = keras.optimizers.AdamW(1e-4, weight_decay=0.01, epsilon=1e-6, global_clipnorm=1.0)
    model.compile(
        optimizer=optimizer, loss=keras.losses.SparseCategoricalCrossentropy(from_logits=True), jit_compile=jit
    )
    data = batch_of(batch_size)
    inputs = {
        "token_ids": data["input_ids"],
        "padding_mask": data["input_mask"],
        "segment_ids": data["segment_ids"],
        "mask_positions": data["masked_lm_positions"],
    }
    model.train_on_batch(inputs, data["masked_lm_ids"], sample_weight=data["masked_lm_weights"])
    return lambda: (
        _timed(
            lambda: [
                model.train_on_batch(inputs, data["masked_lm_ids"], sample_weight=data["masked_lm_weights"])
                for _ in range(steps)
            ]
        )
        / steps
    )


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--models", default="tiny,mini,base")
    parser.add_argument("--steps", type=int, default=5)
    parser.add_argument("--jit_compile", default="both", choices=["both", "on", "off"])
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument(
        "--precision",
        default="float32",
        help="comma list of Keras dtype policies, e.g. float32,mixed_bfloat16 (all three use it)",
    )
    parser.add_argument("--one_config", default=None, help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.one_config:
        return run_one_config(args.one_config, args.steps, args.rounds)
    policies = args.precision.split(",")
    peaks = {policy: matmul_peak("bfloat16" if "bfloat16" in policy else "float32") for policy in policies}
    for policy, peak in peaks.items():
        print(
            f"matmul peak ({policy}, 2048^3, this run): {peak / 1e9:.1f} GFLOP/s; "
            f"{os.cpu_count()} CPUs; TF {tf.__version__}"
        )
    modes = {"both": (False, True), "on": (True,), "off": (False,)}[args.jit_compile]
    print(
        f"{'model':6s} {'implementation':14s} {'precision':15s} {'xla':4s} {'batch':>5s} {'s/step':>8s} "
        f"{'examples/s':>10s} "
        f"{'vs MG':>6s} {'vs hub':>6s} {'of peak':>7s}"
    )
    for name in args.models.split(","):
        layers, hidden, heads, batch_size = MODELS[name]
        flops = train_flops(layers, hidden, batch_size)
        for policy, jit in [(policy, jit) for policy in policies for jit in modes]:
            times = _config_in_subprocess(name, policy, jit, args)
            for impl, seconds in times.items():
                print(
                    f"{name:6s} {impl:14s} {policy:15s} {'on' if jit else 'off':4s} {batch_size:5d} {seconds:8.4f} "
                    f"{batch_size / seconds:10.1f} {times['model_garden'] / seconds:5.2f}x "
                    f"{times['keras_hub'] / seconds:5.2f}x {flops / seconds / peaks[policy]:6.1%}",
                    flush=True,
                )


def _config_in_subprocess(name, policy, jit, args):
    """One row's three implementations in a fresh process (each config's models and XLA programs
    would otherwise pile up in one: the whole table ran out of 24 GB at base bfloat16)."""
    import json
    import subprocess
    import sys

    command = [
        sys.executable,
        "-m",
        "bench.pretraining_bench",
        f"--one_config={name},{policy},{int(jit)}",
        f"--steps={args.steps}",
        f"--rounds={args.rounds}",
    ]
    result = subprocess.run(command, capture_output=True, text=True)
    if result.returncode:
        sys.exit(f"failed: {' '.join(command)}\n{result.stderr[-3000:]}")
    return json.loads(result.stdout.strip().splitlines()[-1])


def run_one_config(spec, steps, rounds):
    """Prints {implementation: best seconds per step} of one (model, policy, jit) as JSON."""
    import json

    name, policy, jit = spec.split(",")
    layers, hidden, heads, batch_size = MODELS[name]
    steps = steps if name != "base" else 2
    runners = {
        impl.__name__: impl(layers, hidden, heads, batch_size, steps, bool(int(jit)), policy)
        for impl in (ours, model_garden, keras_hub)
    }
    # Interleaved rounds, best of each: the machine is shared and noisy.
    times = {impl: float("inf") for impl in runners}
    for _ in range(rounds):
        for impl, run in runners.items():
            times[impl] = min(times[impl], run())
    print(json.dumps(times))


if __name__ == "__main__":
    main()
