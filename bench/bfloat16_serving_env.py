"""Our bfloat16 SavedModel served with and without TF_ONEDNN_ASSUME_FROZEN_WEIGHTS=1 (float32 beside
it), each in a fresh serving process as a server would run it, the two settings taking turns.

    .venv/bin/python -m bench.bfloat16_serving_env [--models=minilm,base] [--rounds=3]

The SavedModels are the ONNX Runtime bench's seeded random classifiers (`onnx_serving_bench.build`,
`--precision=bfloat16` through export_saved_model's own path) and its workloads: 32 real MRPC dev
pairs one at a time at their own length (batch 1, median call), and together padded to 128
(batch 32, best of 3 calls). TensorFlow reads the variable once, at start-up, so each setting
needs its own process. Prints, per round, each setting's numbers and whether the outputs match.
"""

import argparse
import json
import os
import subprocess
import sys
import tempfile
import time

os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "3")

from keras_bert_impl.serving.export import SERVE_BFLOAT16_VARIABLE as SETTING  # noqa: E402


def serve(work):
    """In the child: times both SavedModels on the saved workloads; prints JSON."""
    import numpy as np
    import tensorflow as tf
    import tensorflow_text  # noqa: F401

    from bench.onnx_serving_bench import median_seconds

    data = np.load(os.path.join(work, "inputs.npz"))
    names = ("input_ids", "input_mask", "segment_ids")
    ones = [{name: data[f"1/{i}/{name}"] for name in names} for i in range(int(data["count"]))]
    padded = {name: data[f"32/{name}"] for name in names}
    results = {}
    for precision in ("float32", "bfloat16"):
        serve_ids = tf.saved_model.load(os.path.join(work, precision)).signatures["serve_ids"]
        serve_ids(**padded)
        serve_ids(**ones[0])
        batch1 = median_seconds(lambda feed, serve_ids=serve_ids: serve_ids(**feed), ones, repeats=1)
        batch32 = []
        for _ in range(3):
            start = time.perf_counter()
            logits = serve_ids(**padded)["logits"].numpy()
            batch32.append(time.perf_counter() - start)
        results[precision] = {
            "batch 1 ms": batch1 * 1e3,
            "batch 32 ex/s": 32 / min(batch32),
            "logits": logits.tolist(),
        }
    print(json.dumps(results))


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--models", default="minilm,base")
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--serve", help=argparse.SUPPRESS)  # the child's work directory
    args = parser.parse_args()
    if args.serve:
        return serve(args.serve)
    import numpy as np
    import tensorflow as tf

    from bench.onnx_serving_bench import build, cpu_model, workloads
    from bench.serving_bench import sentences, vocab_file

    vocab = vocab_file()
    texts, source = sentences()
    pairs = list(zip(texts[0::2], texts[1::2]))[:32]
    print(f"{cpu_model()}; TF {tf.__version__}; 32 {source} pairs; {args.rounds} rounds, settings alternating")
    with tempfile.TemporaryDirectory() as root:
        for name in args.models.split(","):
            work = os.path.join(root, name)
            os.makedirs(work)
            saved, _, _ = build(name, vocab, work)
            for precision, path in saved.items():
                os.rename(path, os.path.join(work, precision))
            calls = workloads(tf.saved_model.load(os.path.join(work, "float32")), pairs)
            ones = calls["batch 1"]
            np.savez(
                os.path.join(work, "inputs.npz"),
                count=len(ones),
                **{f"1/{i}/{key}": value for i, feed in enumerate(ones) for key, value in feed.items()},
                **{f"32/{key}": value for key, value in calls["batch 32, padded to 128"][0].items()},
            )
            print(
                f"\n| {name}, round | {SETTING} | float32 batch 1 | bfloat16 batch 1 "
                "| float32 batch 32 | bfloat16 batch 32 |"
            )
            print("|---|---|---|---|---|---|")
            differences = []
            for round_index in range(args.rounds):
                logits = {}
                for value in ("0", "1"):
                    env = dict(os.environ, **{SETTING: value})
                    child = subprocess.run(
                        [sys.executable, "-m", "bench.bfloat16_serving_env", f"--serve={work}"],
                        env=env,
                        capture_output=True,
                        text=True,
                        check=True,
                    )
                    result = json.loads(child.stdout.strip().splitlines()[-1])
                    logits[value] = np.array(result["bfloat16"]["logits"])
                    f32, bf16 = result["float32"], result["bfloat16"]
                    print(
                        f"| {round_index + 1} | {value} | {f32['batch 1 ms']:.1f} ms | {bf16['batch 1 ms']:.1f} ms | "
                        f"{f32['batch 32 ex/s']:.0f} ex/s | {bf16['batch 32 ex/s']:.0f} ex/s |"
                    )
                differences.append(float(np.abs(logits["0"] - logits["1"]).max()))
            print(f"bfloat16 logits with and without the setting differ by at most {max(differences):.2g}")


if __name__ == "__main__":
    main()
