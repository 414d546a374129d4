"""Accuracy of the reduced-precision exports against float32, on real data: a fine-tuned MiniLM's
MRPC dev accuracy and SQuAD v1.1 F1 / EM from our SavedModel in float32 and bfloat16
(`export_saved_model --precision`) and from TFLite float32 and dynamic-range int8.

    .venv/bin/python -m bench.precision_accuracy [--tasks=mrpc,squad] [--output_root=/tmp/precision_accuracy]

MRPC is fine-tuned at the acceptance settings (bench/finetune_acceptance.py, ~7 min); SQuAD v1.1
on dev-v1.1-part-a split by article (the first 30 train, the last 6 evaluate; seq 256, stride 128,
lr 1e-4, --squad_epochs epochs, ~12 min each). A task whose output directory already holds a
finished run is not trained again. Every model then sees the same eval windows in batches of 32
cut to their longest member (the SavedModel's variable-length serving); SQuAD answers come from
the same post-processing and the official v1.1 metric as run_squad's. The issue's bar: each
reduced-precision model within 0.5 points of the float32 SavedModel. "changed" counts the
predictions (MRPC) or answer strings (SQuAD) that differ from the float32 SavedModel's.
"""

import argparse
import json
import os
import time

os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "2")

from bench.finetune_acceptance import SHARED_DATA, google_model_dir, options, run_mrpc  # noqa: E402

SQUAD_EVAL_ARTICLES = 6
MODELS = ("SavedModel float32", "SavedModel bfloat16", "TFLite float32", "TFLite int8 (dynamic range)")


def finetune_squad_v1(model_dir, root, log, epochs):
    """run_squad on dev-v1.1-part-a's first articles; returns the run's output directory and the
    eval part's JSON path."""
    from keras_bert_impl.runners.run_squad import SquadOptions, run_squad

    with open(os.path.join(SHARED_DATA, "SQuAD", "dev-v1.1-part-a.json"), encoding="utf-8") as reader:
        articles = json.load(reader)["data"]
    paths = {}
    for name, part in (("train", articles[:-SQUAD_EVAL_ARTICLES]), ("eval", articles[-SQUAD_EVAL_ARTICLES:])):
        paths[name] = os.path.join(root, f"squad_v1_{name}.json")
        with open(paths[name], "w", encoding="utf-8") as writer:
            json.dump({"version": "1.1", "data": part}, writer)
    output_dir = os.path.join(root, "squad")
    if not os.path.exists(os.path.join(output_dir, "eval_results.json")):
        run_squad(
            options(
                model_dir,
                output_dir,
                SquadOptions,
                max_seq_length=256,
                do_predict=True,
                do_eval=False,
                num_train_epochs=epochs,
                learning_rate=1e-4,
                mixed_precision="mixed_bfloat16",
                train_file=paths["train"],
                predict_file=paths["eval"],
                doc_stride=128,
                max_query_length=64,
            ),
            log=log,
        )
    return output_dir, paths["eval"]


def export_models(model_dir, finetuned, root, model_type, max_seq_length, label_names=None):
    """{name: callable(**int32 arrays) -> {output: numpy}} for the four exports of `finetuned`."""
    import tensorflow as tf

    from keras_bert_impl.serving.export import ExportOptions, build_and_export
    from keras_bert_impl.serving.tflite import TFLiteModel, convert_to_tflite

    saved = {}
    for precision in ("float32", "bfloat16"):
        saved[precision] = os.path.join(root, f"{model_type}_{precision}")
        build_and_export(
            ExportOptions.for_model_dir(
                model_dir,
                saved[precision],
                init_checkpoint=finetuned,
                model_type=model_type,
                label_names=label_names,
                max_seq_length=max_seq_length,
                precision=precision,
                force=True,
            ),
            log=lambda message: None,
        )
    lite = {}
    for quantization in ("float32", "dynamic_range"):
        lite[quantization] = os.path.join(root, f"{model_type}_{quantization}.tflite")
        convert_to_tflite(saved["float32"], lite[quantization], quantization)

    def serving(path):
        signature = tf.saved_model.load(path).signatures["serve_ids"]
        return lambda **inputs: {
            k: v.numpy() for k, v in signature(**{n: tf.constant(x) for n, x in inputs.items()}).items()
        }

    threads = os.cpu_count()
    return dict(
        zip(
            MODELS,
            (
                serving(saved["float32"]),
                serving(saved["bfloat16"]),
                TFLiteModel(lite["float32"], num_threads=threads),
                TFLiteModel(lite["dynamic_range"], num_threads=threads),
            ),
        )
    )


def predict(model, features, max_seq_length, sequence_outputs=(), batch_size=32):
    """The model's outputs for every row of `features`, batches cut to their longest member;
    the `sequence_outputs` ([B, T]) padded back to max_seq_length as run_squad's are."""
    import numpy as np

    from keras_bert_impl.training.bucketing import fill_beyond, prediction_batches

    lengths = features["input_mask"].sum(axis=1)
    outputs = {}
    for indices, _ in prediction_batches(lengths, batch_size, max_seq_length):
        length = int(lengths[indices].max())
        batch = {
            name: features[name][indices, :length].astype(np.int32)
            for name in ("input_ids", "input_mask", "segment_ids")
        }
        for name, value in model(**batch).items():
            if name in sequence_outputs:
                value = fill_beyond(value, lengths[indices], max_seq_length)
            outputs.setdefault(name, np.zeros((len(lengths),) + value.shape[1:], value.dtype))[indices] = value
    return outputs


def mrpc_rows(model_dir, root, log):
    import numpy as np

    from tfrecord_tools.feature_specs import classification_spec
    from tfrecord_tools.tfrecord_files import read_tfrecord

    finetuned = os.path.join(root, "mrpc")
    if not os.path.exists(os.path.join(finetuned, "eval_results.txt")):
        run_mrpc(model_dir, root, log)
    with open(os.path.join(finetuned, "meta.json")) as reader:
        meta = json.load(reader)
    max_seq_length = meta["max_seq_length"]
    dev = read_tfrecord(os.path.join(finetuned, "dev.tfrecord"), classification_spec(max_seq_length))
    labels = dev["label_ids"].reshape(-1)
    rows = {}
    for name, model in export_models(model_dir, finetuned, root, "classifier", max_seq_length, meta["labels"]).items():
        start = time.perf_counter()
        logits = predict(model, dev, max_seq_length)["logits"]
        reference = rows[MODELS[0]]["logits"] if rows else logits
        rows[name] = {
            "accuracy": 100.0 * float(np.mean(logits.argmax(-1) == labels)),
            "changed": int(np.sum(logits.argmax(-1) != reference.argmax(-1))),
            "max_logit_difference": float(np.abs(logits - reference).max()),
            "seconds": time.perf_counter() - start,
            "logits": logits,
        }
        log(f"MRPC {name}: " + json.dumps({k: v for k, v in rows[name].items() if k != "logits"}))
    for row in rows.values():
        del row["logits"]
    return rows, {"dev_pairs": int(len(labels))}


def squad_rows(model_dir, root, log, epochs):
    from keras_bert_impl.evaluation.squad_eval import evaluate_v1
    from keras_bert_impl.evaluation.squad_postprocess import compute_predictions
    from keras_bert_impl.runners.run_squad import answer_word_splitter
    from keras_bert_impl.tasks.span import SpanTask
    from tfrecord_tools.feature_specs import squad_spec
    from tfrecord_tools.finetuning_data import FineTuningData
    from tfrecord_tools.squad_data import FEATURES_SUFFIX, read_features_sidecar, read_squad_examples
    from tfrecord_tools.tfrecord_files import read_tfrecord
    from tfrecord_tools.tokenization import FullTokenizer

    finetuned, eval_file = finetune_squad_v1(model_dir, root, log, epochs)
    data = FineTuningData.open(finetuned)
    max_seq_length = data.meta["max_seq_length"]
    features = read_tfrecord(data.path("predict"), squad_spec(max_seq_length, is_training=False))
    windows = read_features_sidecar(data.sidecar("predict", FEATURES_SUFFIX))
    examples, _ = read_squad_examples(eval_file, False, False)
    with open(eval_file, encoding="utf-8") as reader:
        dataset = json.load(reader)["data"]
    split_words = answer_word_splitter(
        FullTokenizer(os.path.join(model_dir, "vocab.txt"), do_lower_case=True).text_tokenizer
    )
    rows = {}
    for name, model in export_models(model_dir, finetuned, root, "squad", max_seq_length).items():
        start = time.perf_counter()
        outputs = predict(model, features, max_seq_length, SpanTask.sequence_output_names)
        results = {
            w.unique_id: (outputs["start_logits"][i].tolist(), outputs["end_logits"][i].tolist())
            for i, w in enumerate(windows)
        }
        predictions, _, _ = compute_predictions(examples, windows, results, split_words)
        evaluation = evaluate_v1(dataset, predictions)
        reference = rows[MODELS[0]]["answers"] if rows else predictions
        rows[name] = {
            "f1": evaluation["f1"],
            "exact_match": evaluation["exact_match"],
            "changed": sum(predictions[key] != reference[key] for key in predictions),
            "answers": predictions,
        }
        rows[name]["seconds"] = time.perf_counter() - start
        log(f"SQuAD {name}: " + json.dumps({k: v for k, v in rows[name].items() if k != "answers"}))
    for row in rows.values():
        del row["answers"]
    with open(os.path.join(finetuned, "eval_results.json")) as reader:
        run = json.load(reader)
    return rows, {"questions": len(examples), "windows": len(windows), "epochs": epochs, "run_squad_f1": run["f1"]}


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--tasks", default="mrpc,squad")
    parser.add_argument("--output_root", default="/tmp/precision_accuracy")
    parser.add_argument("--squad_epochs", type=float, default=2.0)
    args = parser.parse_args()

    os.makedirs(args.output_root, exist_ok=True)
    model_dir = google_model_dir(args.output_root)

    def log(message):
        print(f"  {message}", flush=True)

    summary = {}
    if "mrpc" in args.tasks.split(","):
        summary["mrpc"] = mrpc_rows(model_dir, args.output_root, log)
    if "squad" in args.tasks.split(","):
        summary["squad"] = squad_rows(model_dir, args.output_root, log, args.squad_epochs)
    with open(os.path.join(args.output_root, "precision_accuracy.json"), "w") as writer:
        json.dump(summary, writer, indent=1)
    metric = {"mrpc": ("accuracy", "changed"), "squad": ("f1", "exact_match", "changed")}
    print("| model | " + " | ".join(f"{task} {m}" for task in summary for m in metric[task]) + " |")
    print("|---" * (1 + sum(len(metric[task]) for task in summary)) + "|")
    for name in MODELS:
        cells = []
        for task, (rows, _) in summary.items():
            for m in metric[task]:
                value, base = rows[name][m], rows[MODELS[0]][m]
                if m == "changed":  # predictions (MRPC) or answers (SQuAD) unlike the float32 SavedModel's
                    cells.append(str(value))
                    continue
                cells.append(f"{value:.2f}" + ("" if name == MODELS[0] else f" ({value - base:+.2f})"))
        print(f"| {name} | " + " | ".join(cells) + " |")
    for task, (_, facts) in summary.items():
        print(f"{task}: {json.dumps(facts)}")


if __name__ == "__main__":
    main()
