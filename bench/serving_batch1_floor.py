"""Why our float32 SavedModel trails ONNX Runtime at batch 1: the encoder's Dense maps alone, run by
TensorFlow, against ONNX Runtime's whole model, at batch 1 and a few lengths, in one run.

    .venv/bin/python -m bench.serving_batch1_floor [--models=minilm,base] [--lengths=8,50,128] [--rounds=3]

Needs `.venv-interop` (as bench/onnx_serving_bench.py, whose models it builds). Per model and length
(one sequence of random ids, the median call, best of interleaved rounds, all cores):
- ours, SavedModel float32 `serve_ids` and TFLite float32: the whole classifier;
- ORT float32 (fused): ONNX Runtime's whole classifier, the onnx_serving_bench peer;
- matmuls in TF: only the encoder's Dense maps (per layer query, key, value, attention output,
  intermediate with GELU, output; MatMul + BiasAdd on tf.Variables, as served), chained in one
  tf.function (oneDNN's fused matmuls, as in our served graph), and the same with `jit_compile`;
- matmuls in numpy: the same products, OpenBLAS;
- at peak: their FLOPs at the machine's measured matmul peak (a 2048x2048 float32 product in numpy).
If TensorFlow's matmuls alone take longer than ONNX Runtime's whole model, no graph of TensorFlow
ops can reach it: only other matmul and fused attention kernels could.
"""

import argparse
import datetime
import os
import tempfile
import time

os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "2")

import numpy as np  # noqa: E402
import tensorflow as tf  # noqa: E402
import tensorflow_text  # noqa: E402,F401  (the exported graphs use its ops)

from bench.onnx_serving_bench import (  # noqa: E402
    HF_NAMES,
    build,
    cpu_model,
    median_seconds,
    our_runners,
    start_onnx_runtime,
)
from bench.serving_bench import MODELS, vocab_file  # noqa: E402

CALLS = 20  # calls per timing: the median of CALLS x repeats


def dense_shapes(name):
    """[(fan_in, fan_out)] of every Dense map of the encoder, in order: per layer query, key, value,
    attention output, intermediate (GELU after it), output."""
    layers, hidden, _, intermediate = MODELS[name]
    return [
        shape
        for _ in range(layers)
        for shape in [(hidden, hidden)] * 4 + [(hidden, intermediate), (intermediate, hidden)]
    ]


def matmul_runners(name):
    """The Dense maps alone: ({runner: run(feed)}, random_rows(length)), each run taking the
    [length, hidden] rows in feed["rows"]: TF (oneDNN, as served), TF with XLA, numpy."""
    rng = np.random.default_rng(0)
    shapes = dense_shapes(name)
    kernels = [rng.standard_normal(shape, dtype=np.float32) * 0.02 for shape in shapes]
    biases = [np.zeros(shape[1], np.float32) for shape in shapes]
    variables = [(tf.Variable(kernel), tf.Variable(bias)) for kernel, bias in zip(kernels, biases)]
    hidden = MODELS[name][1]

    def chain(rows):
        # Query, key and value all read the layer's input; their sum feeds the attention output, so
        # none of them is pruned and each layer depends on the last, as in the encoder.
        for layer in range(0, len(variables), 6):
            (q, qb), (k, kb), (v, vb), (o, ob), (i, ib), (w, wb) = variables[layer : layer + 6]
            query, key, value = (tf.nn.bias_add(tf.matmul(rows, x), b) for x, b in ((q, qb), (k, kb), (v, vb)))
            mixed = query + key + value
            rows = tf.nn.bias_add(tf.matmul(mixed, o), ob)
            rows = tf.nn.bias_add(tf.matmul(tf.nn.gelu(tf.nn.bias_add(tf.matmul(rows, i), ib)), w), wb)
        return rows

    signature = [tf.TensorSpec([None, hidden], tf.float32)]
    graph = tf.function(chain, input_signature=signature)
    xla = tf.function(chain, input_signature=signature, jit_compile=True)

    def numpy_chain(rows):
        for layer in range(0, len(kernels), 6):
            q, k, v, o, i, w = kernels[layer : layer + 6]
            qb, kb, vb, ob, ib, wb = biases[layer : layer + 6]
            mixed = (rows @ q + qb) + (rows @ k + kb) + (rows @ v + vb)
            rows = mixed @ o + ob
            rows = (rows @ i + ib) @ w + wb  # GELU left out: numpy has none, and it is not a matmul
        return rows

    def random_rows(length):
        return rng.standard_normal((length, hidden), dtype=np.float32)

    return {
        "matmuls in TF (oneDNN)": lambda feed: graph(feed["rows"]).numpy(),
        "matmuls in TF, XLA": lambda feed: xla(feed["rows"]).numpy(),
        "matmuls in numpy": lambda feed: numpy_chain(feed["rows"]),
    }, random_rows


def peak_flops():
    """The machine's float32 matmul rate, FLOP/s: the best of 3 2048x2048 products in numpy."""
    a = np.random.default_rng(0).standard_normal((2048, 2048), dtype=np.float32)
    a @ a
    best = float("inf")
    for _ in range(3):
        start = time.perf_counter()
        a @ a
        best = min(best, time.perf_counter() - start)
    return 2 * 2048**3 / best


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--models", default="minilm,base")
    parser.add_argument("--lengths", default="8,50,128")
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--repeats", type=int, default=3)
    args = parser.parse_args()
    threads = len(os.sched_getaffinity(0))
    lengths = [int(length) for length in args.lengths.split(",")]
    peak = peak_flops()
    print(
        f"{datetime.date.today()}; {cpu_model()}; {threads} threads for every runtime; TF {tf.__version__}; "
        f"float32 matmul peak {peak / 1e9:.0f} GFLOP/s (numpy 2048x2048)"
    )
    rng = np.random.default_rng(1)
    with tempfile.TemporaryDirectory() as work:
        for name in args.models.split(","):
            saved_dirs, tflite_files, hf_dir = build(name, vocab_file(), work)
            saved = {"float32": tf.saved_model.load(saved_dirs["float32"])}
            whole = our_runners(saved, {"float32": tflite_files["float32"]}, threads)
            matmuls, rows = matmul_runners(name)
            feeds = {}
            for length in lengths:
                ids = rng.integers(1000, 5000, size=(1, length), dtype=np.int32)
                feeds[length] = {
                    "input_ids": ids,
                    "input_mask": np.ones_like(ids),
                    "segment_ids": np.zeros_like(ids),
                    "rows": rows(length),
                }
            inputs = os.path.join(work, f"{name}_floor_inputs.npz")
            np.savez(
                inputs,
                **{
                    f"{length}/0/{HF_NAMES[key]}": value
                    for length, feed in feeds.items()
                    for key, value in feed.items()
                    if key in HF_NAMES
                },
            )
            worker, ask, _ = start_onnx_runtime(hf_dir, work, inputs, threads)
            for feed in feeds.values():  # trace (and compile) every length before timing
                for run in matmuls.values():
                    run(feed)
            best = {length: {} for length in lengths}
            for _ in range(args.rounds):
                for length, feed in feeds.items():
                    ids_only = {key: value for key, value in feed.items() if key in HF_NAMES}
                    timed = {
                        runner: median_seconds(run, [ids_only] * CALLS, args.repeats) for runner, run in whole.items()
                    }
                    timed.update(
                        {runner: median_seconds(run, [feed] * CALLS, args.repeats) for runner, run in matmuls.items()}
                    )
                    reply = ask({"workload": str(length), "repeats": CALLS * args.repeats})
                    timed["ORT float32 (fused), whole model"] = reply["ort float32 (fused)"]
                    for runner, seconds in timed.items():
                        best[length][runner] = min(best[length].get(runner, float("inf")), seconds)
            worker.stdin.close()
            worker.wait()
            layers, hidden = MODELS[name][:2]
            print(f"\n{name} (L{layers}/H{hidden}), batch 1: ms per call (best of {args.rounds} rounds' medians)")
            runners = list(best[lengths[0]])
            print("| tokens | matmul GFLOP | at peak | " + " | ".join(runners) + " |")
            print("|---" * (3 + len(runners)) + "|")
            for length in lengths:
                flops = sum(2 * length * fan_in * fan_out for fan_in, fan_out in dense_shapes(name))
                cells = [f"{best[length][runner] * 1e3:.2f}" for runner in runners]
                print(f"| {length} | {flops / 1e9:.2f} | {flops / peak * 1e3:.2f} | " + " | ".join(cells) + " |")


if __name__ == "__main__":
    main()
