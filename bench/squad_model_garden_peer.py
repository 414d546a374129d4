"""The SQuAD 2.0 acceptance run through tf-models-official's own code, as the peer for ours: the same
MiniLM weights, article split, windows and recipe, with Model Garden's squad_lib (reading, windows,
post-processing), BertEncoder + BertSpanLabeler, AdamWeightDecay with warmup and linear decay, and
its copy of the official evaluate-v2.0.py. Run it after `finetune_acceptance.py --tasks=squad`
(which writes the split and the Google-named weights), with that run's settings:

    .venv/bin/python -m bench.squad_model_garden_peer [--output_root=/tmp/acceptance] [--learning_rate=1e-4 --epochs=3]
"""

import argparse
import collections
import json
import os
import random
import time

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "2")

import numpy as np  # noqa: E402
import tensorflow as tf  # noqa: E402


def features_for(path, tokenizer, is_training, max_seq_length, doc_stride=128, max_query_length=64):
    from official.nlp.data import squad_lib

    examples = squad_lib.read_squad_examples(path, is_training=is_training, version_2_with_negative=True)
    if is_training:
        random.Random(12345).shuffle(examples)
    features = []
    squad_lib.convert_examples_to_features(
        examples,
        tokenizer,
        max_seq_length,
        doc_stride,
        max_query_length,
        is_training,
        lambda feature, is_padding=False: features.append(feature),
        batch_size=1,
    )
    return examples, features


def main():
    import tf_keras
    from official.nlp import optimization
    from official.nlp.data import squad_lib
    from official.nlp.modeling import models
    from official.nlp.tools import squad_evaluate_v2_0, tokenization

    from keras_bert_impl.models.bert_config import BertConfig
    from peers.model_garden_reference import model_garden_encoder  # MG's encoder from Google-named weights

    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--output_root", default="/tmp/acceptance")
    parser.add_argument("--learning_rate", type=float, default=1e-4)
    parser.add_argument("--epochs", type=float, default=3.0)
    parser.add_argument("--max_seq_length", type=int, default=256)
    parser.add_argument("--batch_size", type=int, default=32)
    args = parser.parse_args()
    start_time = time.time()
    model_dir = os.path.join(args.output_root, "minilm_google")
    out = os.path.join(args.output_root, "squad_model_garden")
    os.makedirs(out, exist_ok=True)

    # Model Garden's reader wants exactly one answer per training question; ours takes the first.
    with open(os.path.join(args.output_root, "squad_train.json"), encoding="utf-8") as reader:
        train = json.load(reader)
    for article in train["data"]:
        for paragraph in article["paragraphs"]:
            for qa in paragraph["qas"]:
                qa["answers"] = qa["answers"][:1]
    train_path = os.path.join(out, "train_one_answer.json")
    with open(train_path, "w", encoding="utf-8") as writer:
        json.dump(train, writer)
    eval_path = os.path.join(args.output_root, "squad_eval.json")

    tokenizer = tokenization.FullTokenizer(os.path.join(model_dir, "vocab.txt"), do_lower_case=True)
    train_examples, train_features = features_for(train_path, tokenizer, True, args.max_seq_length)
    print(f"{len(train_examples)} training questions, {len(train_features)} windows", flush=True)

    config = BertConfig.from_json_file(os.path.join(model_dir, "bert_config.json"))
    reader = tf.train.load_checkpoint(os.path.join(model_dir, "bert_model.ckpt"))
    weights = {name: reader.get_tensor(name) for name in reader.get_variable_to_shape_map()}
    encoder = model_garden_encoder(config, weights, dropout=config.hidden_dropout_prob)
    model = models.BertSpanLabeler(network=encoder, initializer=tf_keras.initializers.TruncatedNormal(stddev=0.02))

    steps = int(len(train_examples) / args.batch_size * args.epochs)  # as Google's run_squad.py
    optimizer = optimization.create_optimizer(args.learning_rate, steps, int(steps * 0.1))
    columns = {
        "input_word_ids": np.array([f.input_ids for f in train_features], np.int32),
        "input_mask": np.array([f.input_mask for f in train_features], np.int32),
        "input_type_ids": np.array([f.segment_ids for f in train_features], np.int32),
        "start_positions": np.array([f.start_position for f in train_features], np.int32),
        "end_positions": np.array([f.end_position for f in train_features], np.int32),
    }
    dataset = (
        tf.data.Dataset.from_tensor_slices(columns)
        .shuffle(len(train_features), seed=12345)
        .repeat()
        .batch(args.batch_size, drop_remainder=True)
    )

    @tf.function
    def train_step(batch):
        inputs = {name: batch[name] for name in ("input_word_ids", "input_mask", "input_type_ids")}
        with tf.GradientTape() as tape:
            start_logits, end_logits = model(inputs, training=True)
            start = tf_keras.losses.sparse_categorical_crossentropy(
                batch["start_positions"], start_logits, from_logits=True
            )
            end = tf_keras.losses.sparse_categorical_crossentropy(batch["end_positions"], end_logits, from_logits=True)
            loss = (tf.reduce_mean(start) + tf.reduce_mean(end)) / 2.0
        grads = tape.gradient(loss, model.trainable_variables)
        optimizer.apply_gradients(zip(grads, model.trainable_variables))  # clips to global norm 1.0 itself
        return loss

    began, losses = time.time(), []
    for step, batch in enumerate(dataset.take(steps), 1):
        losses.append(float(train_step(batch)))
        if step % 50 == 0 or step == steps:
            rate = step * args.batch_size / (time.time() - began)
            print(
                f"step {step}/{steps} loss={np.mean(losses[-50:]):.4f} {rate:.1f} examples/s "
                f"ETA {(steps - step) * args.batch_size / rate / 60:.1f} min",
                flush=True,
            )

    eval_examples, eval_features = features_for(eval_path, tokenizer, False, args.max_seq_length)
    predict = tf.function(lambda inputs: model(inputs, training=False))
    RawResult = collections.namedtuple("RawResult", ["unique_id", "start_logits", "end_logits"])
    results = []
    for begin in range(0, len(eval_features), 64):
        chunk = eval_features[begin : begin + 64]
        inputs = {
            "input_word_ids": tf.constant([f.input_ids for f in chunk], tf.int32),
            "input_mask": tf.constant([f.input_mask for f in chunk], tf.int32),
            "input_type_ids": tf.constant([f.segment_ids for f in chunk], tf.int32),
        }
        start_logits, end_logits = predict(inputs)
        results += [
            RawResult(f.unique_id, s.tolist(), e.tolist())
            for f, s, e in zip(chunk, start_logits.numpy(), end_logits.numpy())
        ]
    predictions, nbest, null_odds = squad_lib.postprocess_output(
        eval_examples, eval_features, results, 20, 30, True, version_2_with_negative=True, null_score_diff_threshold=0.0
    )
    with open(eval_path, encoding="utf-8") as reader:
        dataset_json = json.load(reader)["data"]
    evaluation = dict(squad_evaluate_v2_0.evaluate(dataset_json, predictions, null_odds))
    answers = {qid: next((e["text"] for e in entries if e["text"]), "") for qid, entries in nbest.items()}
    sweep = squad_evaluate_v2_0.evaluate(dataset_json, answers, null_odds)
    evaluation["any_threshold_best_f1"] = sweep["final_f1"]
    # Without null odds: the official script counts odds above 1.0 as a null answer.
    evaluation["best_non_null_HasAns_f1"] = squad_evaluate_v2_0.evaluate(dataset_json, answers)["HasAns_f1"]
    evaluation.update(
        learning_rate=args.learning_rate,
        epochs=args.epochs,
        max_seq_length=args.max_seq_length,
        seconds=round(time.time() - start_time, 1),
    )
    for name, value in (
        ("predictions.json", predictions),
        ("nbest_predictions.json", nbest),
        ("null_odds.json", dict(null_odds)),
        ("eval_results.json", evaluation),
    ):
        with open(os.path.join(out, name), "w", encoding="utf-8") as writer:
            json.dump(value, writer, indent=2)
    print("model garden:", json.dumps(evaluation), flush=True)


if __name__ == "__main__":
    main()
