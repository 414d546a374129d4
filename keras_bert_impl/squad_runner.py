"""`run_squad`: run_squad.py's work as a library function (SQuAD v1.1 and v2.0), writing
predictions.json, nbest_predictions.json, null_odds.json (v2.0) and, when the predict file has
answers, eval_results.json from the official evaluation."""

import json
import os
import random

from keras_bert_impl.finetuning import FineTuningRun
from keras_bert_impl.finetuning_task import FineTuningTask
from keras_bert_impl.squad_eval import evaluate_v1, evaluate_v2
from keras_bert_impl.squad_postprocess import compute_predictions, write_json
from tfrecord_tools.squad_data import convert_examples_to_features, features_to_arrays, read_squad_examples


def run_squad(options, train_file=None, predict_file=None, version_2_with_negative=False, doc_stride=128,
              max_query_length=64, n_best_size=20, max_answer_length=30, null_score_diff_threshold=0.0,
              verbose_logging=False, log=print):
    if options.do_train and not train_file:
        raise ValueError("--do_train needs --train_file")
    if (options.do_predict or options.do_eval) and not predict_file:
        raise ValueError("--do_predict needs --predict_file")
    run = FineTuningRun(options, log)
    task = FineTuningTask("squad", run.config, options.max_seq_length)
    warn = log if verbose_logging else (lambda message: None)
    train_examples = []
    if options.do_train:
        train_examples, skipped = read_squad_examples(train_file, True, version_2_with_negative, warn=warn)
        random.Random(12345).shuffle(train_examples)  # as Google's run_squad.py
        log(f"{len(train_examples)} training questions ({skipped} skipped: answer not found in its context)")
    num_train_steps = run.num_train_steps(len(train_examples)) if options.do_train else 1
    run.build(task, num_train_steps)
    if options.do_train:
        features = convert_examples_to_features(train_examples, run.tokenizer, options.max_seq_length, doc_stride,
                                                max_query_length, is_training=True)
        run.train(features_to_arrays(features, is_training=True), num_train_steps)
    else:
        run.restore_latest()
    run.export("squad", max_query_length=max_query_length)
    if not (options.do_predict or options.do_eval):
        return None
    examples, _ = read_squad_examples(predict_file, False, version_2_with_negative)
    features = convert_examples_to_features(examples, run.tokenizer, options.max_seq_length, doc_stride,
                                            max_query_length, is_training=False)
    log(f"predicting {len(examples)} questions in {len(features)} windows")
    outputs = run.predict(features_to_arrays(features, is_training=False), options.predict_batch_size)
    results = {f.unique_id: (outputs["start_logits"][i].tolist(), outputs["end_logits"][i].tolist())
               for i, f in enumerate(features)}
    splitter = run.tokenizer.text_tokenizer
    predictions, nbest, null_odds = compute_predictions(
        examples, features, results, lambda texts: _split_words(splitter, texts), n_best_size, max_answer_length,
        version_2_with_negative, null_score_diff_threshold,
    )
    write_json(predictions, os.path.join(options.output_dir, "predictions.json"))
    write_json(nbest, os.path.join(options.output_dir, "nbest_predictions.json"))
    if version_2_with_negative:
        write_json(null_odds, os.path.join(options.output_dir, "null_odds.json"))
    with open(predict_file, encoding="utf-8") as reader:
        dataset = json.load(reader)["data"]
    if not any(qa.get("answers") for article in dataset for p in article["paragraphs"] for qa in p["qas"]):
        return None
    evaluation = (evaluate_v2(dataset, predictions, null_odds) if version_2_with_negative
                  else evaluate_v1(dataset, predictions))
    if version_2_with_negative:
        # The official threshold sweep only helps where predictions.json answered; swept over
        # every question's best non-null answer it finds the --null_score_diff_threshold to use.
        answers = {qid: next((entry["text"] for entry in entries if entry["text"]), "") for qid, entries in nbest.items()}
        sweep = evaluate_v2(dataset, answers, null_odds)
        for key in ("best_exact", "best_exact_thresh", "best_f1", "best_f1_thresh"):
            evaluation[f"any_threshold_{key}"] = sweep[key]
        # The spans apart from the null decision: no null odds, so every question is answered.
        evaluation["best_non_null_HasAns_f1"] = evaluate_v2(dataset, answers)["HasAns_f1"]
        log(f"best --null_score_diff_threshold on this data: {sweep['best_f1_thresh']:.4f} (F1 {sweep['best_f1']:.2f}; "
            f"F1 {evaluation['f1']:.2f} at --null_score_diff_threshold={null_score_diff_threshold})")
    write_json(evaluation, os.path.join(options.output_dir, "eval_results.json"))
    log("eval: " + json.dumps(evaluation))
    return evaluation


def _split_words(text_tokenizer, texts):
    """Google's BasicTokenizer words of each text (our graph splitter, batched)."""
    import tensorflow as tf

    words = text_tokenizer.split_words(tf.constant([text.encode("utf-8") for text in texts]))
    return [[word.decode("utf-8") for word in row] for row in words.to_list()]
