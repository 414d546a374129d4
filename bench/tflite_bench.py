"""TFLite on a fine-tuned MiniLM MRPC classifier: dev accuracy, file size and batch-1 latency of
the float32 and dynamic-range int8 models against the SavedModel they were converted from.

    .venv/bin/python -m bench.tflite_bench [--finetuned_dir=DIR] [--output_root=/tmp/tflite_bench]

FINETUNED_DIR is a run_classifier output_dir for MRPC (its newest checkpoint, meta.json and
dev.tfrecord; `bench/finetune_speed.py --tasks=mrpc --runs=ours_bucketed` leaves one in
/tmp/finetune_speed/mrpc/ours_bucketed/mrpc); without it, MRPC is fine-tuned first at the
acceptance settings (about 7 minutes). Every model sees each dev pair alone (batch 1) at its own
length, as the SavedModel's variable-length serving does; latency is the median over the 408 calls
(and the 90th percentile), TFLite with one thread per core; the three models take turns per pair,
so the machine's load hits all alike.
"""

import argparse
import json
import os
import time

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "2")

from bench.finetune_acceptance import google_model_dir, run_mrpc  # noqa: E402


def _size(path):
    if os.path.isfile(path):
        return os.path.getsize(path)
    return sum(os.path.getsize(os.path.join(folder, name)) for folder, _, names in os.walk(path) for name in names)


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--finetuned_dir", default=None)
    parser.add_argument("--output_root", default="/tmp/tflite_bench")
    args = parser.parse_args()

    import numpy as np
    import tensorflow as tf

    from keras_bert_impl.serving.export import ExportOptions, build_and_export
    from keras_bert_impl.serving.tflite import TFLiteModel, convert_to_tflite
    from tfrecord_tools.feature_specs import classification_spec
    from tfrecord_tools.tfrecord_files import read_tfrecord

    os.makedirs(args.output_root, exist_ok=True)
    model_dir = google_model_dir(args.output_root)
    finetuned = args.finetuned_dir
    if finetuned is None:
        run_mrpc(model_dir, args.output_root, lambda message: print(f"  {message}", flush=True))
        finetuned = os.path.join(args.output_root, "mrpc")
    with open(os.path.join(finetuned, "meta.json")) as reader:
        meta = json.load(reader)
    saved_model = os.path.join(args.output_root, "saved_model")
    options = ExportOptions.for_model_dir(
        model_dir,
        saved_model,
        init_checkpoint=finetuned,
        model_type="classifier",
        label_names=meta["labels"],
        max_seq_length=meta["max_seq_length"],
        force=True,
    )
    build_and_export(options)
    files = {}
    for quantization in ("float32", "dynamic_range"):
        files[quantization] = os.path.join(args.output_root, f"mrpc_{quantization}.tflite")
        convert_to_tflite(saved_model, files[quantization], quantization)

    dev = read_tfrecord(os.path.join(finetuned, "dev.tfrecord"), classification_spec(meta["max_seq_length"]))
    signature = tf.saved_model.load(saved_model).signatures["serve_ids"]
    models = {
        "SavedModel (serve_ids)": lambda **inputs: {
            k: v.numpy() for k, v in signature(**{n: tf.constant(x) for n, x in inputs.items()}).items()
        },
        "TFLite float32": TFLiteModel(files["float32"], num_threads=os.cpu_count()),
        "TFLite dynamic-range int8": TFLiteModel(files["dynamic_range"], num_threads=os.cpu_count()),
    }
    names = ("input_ids", "input_mask", "segment_ids")
    lengths = dev["input_mask"].sum(axis=1)
    predictions = {name: [] for name in models}
    logits = {name: [] for name in models}
    seconds = {name: [] for name in models}
    for model in models.values():  # the first call traces / allocates
        model(**{name: dev[name][:1].astype(np.int32) for name in names})
    for index, length in enumerate(lengths):
        inputs = {name: dev[name][index : index + 1, :length].astype(np.int32) for name in names}
        for name, model in models.items():
            start = time.perf_counter()
            outputs = model(**inputs)
            seconds[name].append(time.perf_counter() - start)
            logits[name].append(outputs["logits"][0])
            predictions[name].append(int(np.argmax(outputs["logits"][0])))
    labels = dev["label_ids"].reshape(-1)
    reference = np.array(logits["SavedModel (serve_ids)"])
    sizes = {
        "SavedModel (serve_ids)": _size(os.path.join(saved_model, "variables")),
        "TFLite float32": _size(files["float32"]),
        "TFLite dynamic-range int8": _size(files["dynamic_range"]),
    }
    rows = []
    for name in models:
        rows.append(
            {
                "model": name,
                "dev_accuracy": float(np.mean(np.array(predictions[name]) == labels)),
                "max_abs_logit_difference": float(np.abs(np.array(logits[name]) - reference).max()),
                "predictions_changed": int(np.sum(np.array(predictions[name]) != reference.argmax(-1))),
                "size_mib": sizes[name] / 2**20,
                "batch1_median_ms": float(np.median(seconds[name]) * 1e3),
                "batch1_p90_ms": float(np.percentile(seconds[name], 90) * 1e3),
            }
        )
    summary = {
        "finetuned_dir": finetuned,
        "dev_examples": int(len(labels)),
        "mean_tokens": float(lengths.mean()),
        "rows": rows,
    }
    with open(os.path.join(args.output_root, "tflite_bench.json"), "w") as writer:
        json.dump(summary, writer, indent=1)
    print(f"MRPC dev, {len(labels)} pairs, mean {lengths.mean():.1f} tokens, batch 1 at each pair's length")
    print(
        "| model | dev accuracy | predictions changed | max logit difference | size | batch-1 latency, median (p90) |"
    )
    print("|---|---|---|---|---|---|")
    for row in rows:
        print(
            f"| {row['model']} | {row['dev_accuracy']:.4f} | {row['predictions_changed']} | "
            f"{row['max_abs_logit_difference']:.2g} | "
            f"{row['size_mib']:.1f} MiB | {row['batch1_median_ms']:.1f} ms ({row['batch1_p90_ms']:.1f}) |"
        )


if __name__ == "__main__":
    main()
