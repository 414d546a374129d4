"""CPU serving against ONNX Runtime: our SavedModel (float32, bfloat16) and TFLite (float32,
dynamic-range int8) against ONNX Runtime's fused float32 and dynamic int8 models of the same weights, on the
same token ids, one run, interleaved rounds, best round counts.

    .venv/bin/python -m bench.onnx_serving_bench [--models=minilm,base] [--rounds=5]

Needs `.venv-interop` with onnxruntime (`make .venv-interop/.installed`). Each model is a
sentence-pair classifier (random weights, seeded: speed does not depend on them) written by us
as a SavedModel and, through convert_checkpoint.py, as a Hugging Face directory, which
bench/onnx_runtime_worker.py exports to ONNX with torch.onnx.export, fuses with
onnxruntime.transformers.optimizer and quantizes with quantize_dynamic. Workloads, from 32 real
MRPC dev pairs (../shared/data; else the demo sentences) packed by our SavedModel:
- batch 1: each pair alone at its own length (the median call);
- batch 32, padded: the 32 pairs at 128 tokens;
- batch 32, bucketed: the 32 pairs cut to their bucket (the longest, rounded up as our
  length buckets do).
Our TFLite files run in LiteRT's interpreter (ai_edge_litert) where installed, as `TFLiteModel` does.
Every runtime uses all cores (TF's intra-op pool, ORT's intra_op_num_threads, TFLite's
num_threads) under the same CPU affinity. The float models' logits must agree within 1e-3.
"""

import argparse
import datetime
import json
import os
import platform
import statistics
import subprocess
import sys
import tempfile
import time

os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "2")

import numpy as np  # noqa: E402
import tensorflow as tf  # noqa: E402
import tensorflow_text  # noqa: E402,F401  (the exported graphs use its ops)

from bench.serving_bench import MODELS, ROOT, SEQ, bench_config, sentences, vocab_file  # noqa: E402

INTEROP_PYTHON = os.path.join(ROOT, ".venv-interop", "bin", "python")
HF_NAMES = {"input_ids": "input_ids", "input_mask": "attention_mask", "segment_ids": "token_type_ids"}


def cpu_model():
    with open("/proc/cpuinfo", encoding="utf-8") as reader:
        for line in reader:
            if line.startswith("model name"):
                return line.split(":", 1)[1].strip()
    return platform.processor()


def build(name, vocab, work):
    """Our SavedModel, TFLite files and the Hugging Face directory of one seeded random classifier."""
    import keras

    from keras_bert_impl.checkpoints.google_checkpoint import save_google_checkpoint
    from keras_bert_impl.runners.convert_checkpoint import ConvertOptions, convert_checkpoint
    from keras_bert_impl.serving.export import export_saved_model
    from keras_bert_impl.serving.tflite import convert_to_tflite
    from keras_bert_impl.tasks.classification import ClassificationTask

    config = bench_config(name, vocab)
    keras.utils.set_random_seed(0)
    task = ClassificationTask(config, SEQ, label_names=["0", "1"])
    model = task.build_model()
    saved = export_saved_model(model, task, vocab, True, os.path.join(work, f"{name}_saved_model"))
    google = os.path.join(work, f"{name}_google")
    os.makedirs(google)
    config.to_json_file(os.path.join(google, "bert_config.json"))
    save_google_checkpoint(model, os.path.join(google, "bert_model.ckpt"))
    hf = os.path.join(work, f"{name}_hf")
    convert_checkpoint(
        ConvertOptions("google", "huggingface", google, hf, vocab_file=vocab, model_type="classifier"),
        log=lambda _: None,
    )
    from keras_bert_impl.serving.export import ExportOptions, build_and_export

    bfloat16 = build_and_export(
        ExportOptions.for_model_dir(
            google,
            os.path.join(work, f"{name}_saved_model_bfloat16"),
            vocab_file=vocab,
            model_type="classifier",
            label_names=["0", "1"],
            max_seq_length=SEQ,
            precision="bfloat16",
        ),
        log=print,
    )
    tflite = {}
    for quantization in ("float32", "dynamic_range"):
        tflite[quantization] = os.path.join(work, f"{name}_{quantization}.tflite")
        convert_to_tflite(saved, tflite[quantization], quantization)
    return {"float32": saved, "bfloat16": bfloat16}, tflite, hf


def workloads(saved_model, pairs):
    """{workload: [call inputs {name: int32 [B, T]}]} from our SavedModel's own packing."""
    from keras_bert_impl.training.bucketing import bucket_lengths, round_up

    serve = saved_model.signatures["serving_default"]
    packed = serve(text_a=tf.constant([a for a, _ in pairs]), text_b=tf.constant([b for _, b in pairs]))
    padded = {name: packed[name].numpy().astype(np.int32) for name in HF_NAMES}
    # The text signature pads to the batch's longest: pad on to SEQ.
    padded = {name: np.pad(value, ((0, 0), (0, SEQ - value.shape[1]))) for name, value in padded.items()}
    lengths = padded["input_mask"].sum(axis=1)
    bucket = round_up(int(lengths.max()), bucket_lengths(SEQ))
    one = [{name: value[i : i + 1, : lengths[i]] for name, value in padded.items()} for i in range(len(lengths))]
    return {
        "batch 1": one,
        "batch 32, padded to 128": [padded],
        f"batch 32, bucketed ({bucket})": [{name: value[:, :bucket] for name, value in padded.items()}],
    }


def our_runners(saved_models, tflite_files, threads):
    runners = {}
    for precision, saved_model in saved_models.items():
        serve_ids = saved_model.signatures["serve_ids"]
        runners[f"ours SavedModel {precision}"] = lambda feed, serve_ids=serve_ids: serve_ids(**feed)["logits"].numpy()
    from keras_bert_impl.serving.tflite import TFLiteModel

    for quantization, path in tflite_files.items():
        model = TFLiteModel(path, num_threads=threads)  # LiteRT's interpreter where installed

        def run(feed, model=model):
            return model(**feed)["logits"]

        label = "int8 (dynamic range)" if quantization == "dynamic_range" else "float32"
        runners[f"ours TFLite {label}"] = run
    return runners


def start_onnx_runtime(hf_dir, work, inputs, threads):
    """bench/onnx_runtime_worker.py on HF_DIR in `.venv-interop`: (process, ask(request) -> reply,
    its ready line)."""
    worker = subprocess.Popen(
        [INTEROP_PYTHON, os.path.join(ROOT, "bench", "onnx_runtime_worker.py"), hf_dir, work, inputs, str(threads)],
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        text=True,
    )

    def ask(request):
        worker.stdin.write(json.dumps(request) + "\n")
        worker.stdin.flush()
        return json.loads(worker.stdout.readline())

    return worker, ask, json.loads(worker.stdout.readline())


def median_seconds(run, calls, repeats):
    times = []
    for _ in range(repeats):
        for feed in calls:
            start = time.perf_counter()
            run(feed)
            times.append(time.perf_counter() - start)
    return statistics.median(times)


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--models", default="minilm,base")
    parser.add_argument("--rounds", type=int, default=5)
    parser.add_argument("--repeats", type=int, default=3, help="passes over a workload's calls per round")
    args = parser.parse_args()
    if not os.path.isfile(INTEROP_PYTHON):
        sys.exit(f"{INTEROP_PYTHON}: missing; run make .venv-interop/.installed (and pip install onnxruntime there)")
    threads = len(os.sched_getaffinity(0))
    vocab = vocab_file()
    texts, source = sentences()
    pairs = list(zip(texts[0::2], texts[1::2]))[:32]
    from keras_bert_impl.serving.export import SERVE_BFLOAT16_VARIABLE as setting  # it changes our bfloat16 rows
    from keras_bert_impl.serving.tflite import interpreter_class

    lite = interpreter_class()[1]  # a module name: its version where it has one
    lite_version = getattr(sys.modules.get(lite), "__version__", "")
    print(
        f"{datetime.date.today()}; {cpu_model()}; {threads} threads for every runtime; TF {tf.__version__}; "
        f"TFLite files in {lite} {lite_version}; "
        f"{setting}={os.environ.get(setting, 'unset')}; "
        f"32 {source} pairs"
    )
    with tempfile.TemporaryDirectory() as work:
        for name in args.models.split(","):
            saved_dirs, tflite_files, hf_dir = build(name, vocab, work)
            saved = {precision: tf.saved_model.load(path) for precision, path in saved_dirs.items()}
            calls = workloads(saved["float32"], pairs)
            inputs = os.path.join(work, f"{name}_inputs.npz")
            np.savez(
                inputs,
                **{
                    f"{workload}/{index}/{HF_NAMES[key]}": value
                    for workload, feeds in calls.items()
                    for index, feed in enumerate(feeds)
                    for key, value in feed.items()
                },
            )
            worker, ask, ready = start_onnx_runtime(hf_dir, work, inputs, threads)
            layers, hidden = MODELS[name][:2]
            print(f"\n{name} (L{layers}/H{hidden}): onnxruntime {ready['onnxruntime']}, fused {ready['fused']}")
            ours = our_runners(saved, tflite_files, threads)
            # Agreement on the first call of each workload: ORT float32 and our float models alike.
            ort_logits = ask({"logits": True})
            for workload, feeds in calls.items():
                reference = np.array(ort_logits[workload]["ort float32 (fused)"])
                for runner_name, run in ours.items():
                    difference = float(np.abs(run(feeds[0]) - reference).max())
                    if "float32" in runner_name:
                        assert difference < 1e-3, (runner_name, workload, difference)
                    else:
                        print(f"{runner_name} vs ORT float32 logits ({workload}): max |diff| {difference:.3f}")
                int8 = float(np.abs(np.array(ort_logits[workload]["ort int8 (dynamic, fused)"]) - reference).max())
                print(f"ort int8 vs ORT float32 logits ({workload}): max |diff| {int8:.3f}")
            print("float32 models agree within 1e-3")
            best = {workload: {} for workload in calls}
            for _ in range(args.rounds):
                for workload, feeds in calls.items():
                    for runner_name, run in ours.items():
                        seconds = median_seconds(run, feeds, args.repeats)
                        best[workload][runner_name] = min(best[workload].get(runner_name, float("inf")), seconds)
                    for runner_name, seconds in ask({"workload": workload, "repeats": args.repeats}).items():
                        best[workload][runner_name] = min(best[workload].get(runner_name, float("inf")), seconds)
            worker.stdin.close()
            worker.wait()
            for workload, times in best.items():
                reference = times["ort float32 (fused)"]
                batch = calls[workload][0]["input_ids"].shape[0]
                print(f"\n| {name}, {workload} | ms per call | examples/s | speed vs ORT float32 |")
                print("|---|---|---|---|")
                for runner_name, seconds in sorted(times.items(), key=lambda item: item[1]):
                    speed = reference / seconds
                    print(f"| {runner_name} | {seconds * 1e3:.1f} | {batch / seconds:.0f} | {speed:.2f}x |")


if __name__ == "__main__":
    main()
