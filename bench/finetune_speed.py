"""Fine-tuning wall time, one run: ours with length-bucketed batches, ours padded to
--max_seq_length (`--pad_to_max_seq_length`, Google's shapes), and tf-models-official's classifier
pipeline, on the same MiniLM weights (Google-checkpoint path) at the acceptance settings (lr 5e-5,
batch 32, 3 epochs, seq 128, warmup 10%); training plus dev evaluation, with dev accuracy.

    .venv/bin/python -m bench.finetune_speed [--tasks=mrpc,sst2] [--output_root=/tmp/finetune_speed]
        [--runs=ours_bucketed,ours_padded,model_garden]

Model Garden's peer runs as its users run it: `classifier_data_lib`'s `InputExample` and
`convert_single_example` (features padded to 128; its GLUE processors read TFDS, a download),
`BertClassifier(network)` on its `BertEncoder`, `official.nlp.optimization`'s AdamWeightDecay
(warmup, linear decay, clipping), the whole train step in one tf.function. Results go to
OUTPUT_ROOT/finetune_speed.json; a finished run is kept (delete the file to measure again).
"""

import argparse
import csv
import json
import os
import shutil
import time

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "2")

from bench.finetune_acceptance import SHARED_DATA, google_model_dir, run_mrpc, run_sst2, sst2_sample  # noqa: E402

SETTINGS = dict(learning_rate=5e-5, batch_size=32, epochs=3.0, max_seq_length=128, warmup=0.1)


def ours(task, model_dir, root, padded):
    out = os.path.join(root, f"ours_{'padded' if padded else 'bucketed'}")
    shutil.rmtree(out, ignore_errors=True)
    log = lambda message: print(f"  {message}", flush=True)  # noqa: E731
    if task == "mrpc":
        results = run_mrpc(model_dir, out, log, pad_to_max_seq_length=padded)
    else:
        results = run_sst2(model_dir, out, log, pad_to_max_seq_length=padded)
    return {
        "eval_accuracy": results["eval_accuracy"],
        **({"eval_f1": results["eval_f1"]} if "eval_f1" in results else {}),
    }


def model_garden(task, model_dir, root):
    import numpy as np
    import tensorflow as tf
    import tf_keras
    from official.nlp import optimization
    from official.nlp.data import classifier_data_lib
    from official.nlp.modeling import models
    from official.nlp.tools import tokenization

    from keras_bert_impl.models.bert_config import BertConfig
    from peers.model_garden_reference import model_garden_encoder

    seq, batch_size = SETTINGS["max_seq_length"], SETTINGS["batch_size"]
    # classifier_data_lib's GLUE processors read TFDS (a download); its InputExample from the same TSVs.
    data_dir = os.path.join(SHARED_DATA, "MRPC") if task == "mrpc" else os.path.join(root, "sst2_data")
    tokenizer = tokenization.FullTokenizer(os.path.join(model_dir, "vocab.txt"), do_lower_case=True)
    labels = ["0", "1"]

    def read(split):
        with open(os.path.join(data_dir, f"{split}.tsv"), encoding="utf-8-sig") as reader:
            rows = list(csv.reader(reader, delimiter="\t", quoting=csv.QUOTE_NONE))[1:]
        if task == "mrpc":
            return [classifier_data_lib.InputExample(f"{split}-{i}", r[3], r[4], r[0]) for i, r in enumerate(rows)]
        return [classifier_data_lib.InputExample(f"{split}-{i}", r[0], None, r[1]) for i, r in enumerate(rows)]

    def features(examples):
        converted = [
            classifier_data_lib.convert_single_example(i, e, labels, seq, tokenizer) for i, e in enumerate(examples)
        ]
        return {
            "input_word_ids": np.array([f.input_ids for f in converted], np.int32),
            "input_mask": np.array([f.input_mask for f in converted], np.int32),
            "input_type_ids": np.array([f.segment_ids for f in converted], np.int32),
            "label_ids": np.array([f.label_id for f in converted], np.int32),
        }

    train = features(read("train"))
    dev = features(read("dev"))
    config = BertConfig.from_json_file(os.path.join(model_dir, "bert_config.json"))
    reader = tf.train.load_checkpoint(os.path.join(model_dir, "bert_model.ckpt"))
    weights = {name: reader.get_tensor(name) for name in reader.get_variable_to_shape_map()}
    encoder = model_garden_encoder(config, weights, dropout=config.hidden_dropout_prob)
    model = models.BertClassifier(
        network=encoder, num_classes=len(labels), initializer=tf_keras.initializers.TruncatedNormal(stddev=0.02)
    )
    count = len(train["label_ids"])
    steps = int(count / batch_size * SETTINGS["epochs"])
    optimizer = optimization.create_optimizer(SETTINGS["learning_rate"], steps, int(steps * SETTINGS["warmup"]))
    dataset = (
        tf.data.Dataset.from_tensor_slices(train)
        .shuffle(count, seed=12345)
        .repeat()
        .batch(batch_size, drop_remainder=True)
        .prefetch(tf.data.AUTOTUNE)
    )
    names = ("input_word_ids", "input_mask", "input_type_ids")

    @tf.function
    def train_step(batch):
        with tf.GradientTape() as tape:
            logits = model({name: batch[name] for name in names}, training=True)
            loss = tf.reduce_mean(
                tf_keras.losses.sparse_categorical_crossentropy(batch["label_ids"], logits, from_logits=True)
            )
        grads = tape.gradient(loss, model.trainable_variables)
        optimizer.apply_gradients(zip(grads, model.trainable_variables))  # clips to global norm 1.0 itself
        return loss

    began = time.time()
    for step, batch in enumerate(dataset.take(steps), 1):
        loss = float(train_step(batch))
        if step % 50 == 0 or step == steps:
            rate = step * batch_size / (time.time() - began)
            print(f"  model garden step {step}/{steps} loss={loss:.4f} {rate:.1f} examples/s", flush=True)
    predict = tf.function(lambda inputs: model(inputs, training=False))
    predicted = np.concatenate(
        [
            predict({name: dev[name][i : i + batch_size] for name in names}).numpy().argmax(-1)
            for i in range(0, len(dev["label_ids"]), batch_size)
        ]
    )
    gold = dev["label_ids"]
    results = {"eval_accuracy": float(np.mean(predicted == gold))}
    if task == "mrpc":
        tp = float(np.sum((predicted == 1) & (gold == 1)))
        results["eval_f1"] = 2 * tp / max(float(np.sum(predicted == 1) + np.sum(gold == 1)), 1.0)
    return results


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--tasks", default="mrpc,sst2")
    parser.add_argument("--output_root", default="/tmp/finetune_speed")
    parser.add_argument("--runs", default="ours_bucketed,ours_padded,model_garden", help="which runs, in this order")
    args = parser.parse_args()
    os.makedirs(args.output_root, exist_ok=True)
    model_dir = google_model_dir(args.output_root)
    summary_path = os.path.join(args.output_root, "finetune_speed.json")
    summary = json.load(open(summary_path)) if os.path.exists(summary_path) else {}
    runs = {
        "ours_bucketed": lambda task, root: ours(task, model_dir, root, padded=False),
        "ours_padded": lambda task, root: ours(task, model_dir, root, padded=True),
        "model_garden": lambda task, root: model_garden(task, model_dir, root),
    }
    runs = {name: runs[name] for name in args.runs.split(",")}
    for task in args.tasks.split(","):
        root = os.path.join(args.output_root, task)
        os.makedirs(root, exist_ok=True)
        if task == "sst2":
            sst2_sample(root)  # the sample ours draws too, for Model Garden's peer
        for name, run in runs.items():
            key = f"{task}/{name}"
            if key in summary:
                continue
            print(f"{key} ...", flush=True)
            start = time.time()
            results = run(task, root)
            summary[key] = {**results, "seconds": round(time.time() - start, 1), "cpus": os.cpu_count()}
            print(key, json.dumps(summary[key]), flush=True)
            with open(summary_path + ".tmp", "w") as writer:
                json.dump(summary, writer, indent=2)
            os.replace(summary_path + ".tmp", summary_path)
    print(f"{'task':5s} {'implementation':14s} {'seconds':>8s} {'vs MG':>6s} {'dev accuracy':>12s}")
    for task in args.tasks.split(","):
        peer = summary.get(f"{task}/model_garden", {}).get("seconds")
        for name in ("ours_bucketed", "ours_padded", "model_garden"):
            result = summary.get(f"{task}/{name}")
            if result:
                ratio = f"{peer / result['seconds']:5.2f}x" if peer else "   -  "
                print(f"{task:5s} {name:14s} {result['seconds']:8.1f} {ratio} {result['eval_accuracy']:12.4f}")


if __name__ == "__main__":
    main()
