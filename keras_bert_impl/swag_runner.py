"""`run_swag`: SWAG multiple choice (four endings, softmax over one score per choice); accuracy."""

import os

from keras_bert_impl.finetuning import FineTuningRun
from keras_bert_impl.finetuning_task import FineTuningTask
from keras_bert_impl.trainer import write_eval_results
from tfrecord_tools.swag_data import NUM_CHOICES, SwagReader, examples_to_features

SPLIT_FILES = {"train": "train.csv", "dev": "val.csv", "test": "test.csv"}


def run_swag(options, data_dir, log=print):
    reader = SwagReader(warn=log)
    run = FineTuningRun(options, log)
    task = FineTuningTask("multiple_choice", run.config, options.max_seq_length, num_choices=NUM_CHOICES)
    train = reader.read(os.path.join(data_dir, SPLIT_FILES["train"])) if options.do_train else []
    num_train_steps = run.num_train_steps(len(train)) if options.do_train else 1
    run.build(task, num_train_steps)
    if options.do_train:
        run.train(examples_to_features(train, options.max_seq_length, run.tokenizer), num_train_steps)
    else:
        run.restore_latest()
    run.export("multiple_choice", num_choices=NUM_CHOICES)
    results = None
    if options.do_eval:
        examples = reader.read(os.path.join(data_dir, SPLIT_FILES["dev"]))
        features = examples_to_features(examples, options.max_seq_length, run.tokenizer)
        logits = run.predict(features, options.eval_batch_size)["logits"]
        correct = (logits.argmax(-1) == features["label_ids"][:, 0]).mean()
        results = {"eval_accuracy": float(correct), "global_step": run.trainer.global_step}
        if run.trainer.is_chief:
            write_eval_results(results, os.path.join(options.output_dir, "eval_results.txt"))
        log(f"eval accuracy {correct:.4f} on {len(examples)} examples")
    return results
