"""`run_classifier`: run_classifier.py's work as a library function (GLUE-style classification
and STS-B regression), with Google's output files."""

import os

import numpy as np

from keras_bert_impl.finetuning import FineTuningRun, cross_entropy, softmax
from keras_bert_impl.finetuning_task import FineTuningTask
from keras_bert_impl.metrics import classification_metrics
from keras_bert_impl.trainer import write_eval_results
from tfrecord_tools.atomic_output import atomic_output
from tfrecord_tools.classification_data import examples_to_features


def run_classifier(options, processor, task_name, log=print):
    """Trains / evaluates / predicts as the options say; returns the eval results (or None).

    Writes eval_results.txt (Google's keys plus the task metric) and test_results.tsv (one row of
    class probabilities per test example, Google's format; the predicted score for regression)."""
    run = FineTuningRun(options, log)
    labels = processor.labels
    kind = "regression" if processor.is_regression else "classification"
    task = FineTuningTask(kind, run.config, options.max_seq_length, num_classes=len(labels))
    train_examples = processor.get_examples("train") if options.do_train else []
    num_train_steps = run.num_train_steps(len(train_examples)) if options.do_train else 1
    run.build(task, num_train_steps)
    if options.do_train:
        log(f"{len(train_examples)} training examples ({processor.skipped} rows skipped)")
        run.train(examples_to_features(train_examples, labels, options.max_seq_length, run.tokenizer, processor.is_regression),
                  num_train_steps)
    else:
        run.restore_latest()
    run.export("classifier", labels)

    def predictions_of(examples, batch_size):
        features = examples_to_features(examples, labels, options.max_seq_length, run.tokenizer, processor.is_regression)
        return features, run.predict(features, batch_size)["logits"]

    results = None
    if options.do_eval:
        examples = processor.get_examples("dev")
        features, logits = predictions_of(examples, options.eval_batch_size)
        gold = features["label_ids"][:, 0]
        if processor.is_regression:
            predicted = logits[:, 0]
            loss = float(np.mean((predicted - gold) ** 2))
        else:
            predicted = logits.argmax(-1)
            loss = cross_entropy(logits, gold.astype(np.int64))
        results = {"eval_loss": loss, "loss": loss, "global_step": run.trainer.global_step}
        results.update(classification_metrics(task_name, gold, predicted))
        if run.trainer.is_chief:
            write_eval_results(results, os.path.join(options.output_dir, "eval_results.txt"))
        log(f"eval on {len(examples)} examples: " + ", ".join(f"{k} = {v:.4f}" for k, v in sorted(results.items())))
    if options.do_predict:
        examples = processor.get_examples("test")
        _, logits = predictions_of(examples, options.predict_batch_size)
        rows = logits[:, :1] if processor.is_regression else softmax(logits)
        path = os.path.join(options.output_dir, "test_results.tsv")
        with atomic_output(path) as writer:
            for row in rows:
                writer.write("\t".join(str(float(value)) for value in row) + "\n")
        log(f"wrote {path}: {len(rows)} rows")
    return results
