"""`run_ner`: CoNLL-2003 named-entity recognition (token classification on each word's first
piece) with entity-level precision/recall/F1 as conlleval computes them."""

import os

import numpy as np

from keras_bert_impl import conlleval
from keras_bert_impl.finetuning import FineTuningRun
from keras_bert_impl.finetuning_task import FineTuningTask
from keras_bert_impl.trainer import write_eval_results
from tfrecord_tools.atomic_output import atomic_output
from tfrecord_tools.ner_data import CONLL_LABELS, ConllReader, sentences_to_features

SPLIT_FILES = {"train": "eng.train", "dev": "eng.testa", "test": "eng.testb"}


def run_ner(options, data_dir, max_train_sentences=None, seed=12345, log=print):
    reader = ConllReader(warn=log)
    run = FineTuningRun(options, log)
    labels = list(CONLL_LABELS)
    task = FineTuningTask("tagging", run.config, options.max_seq_length, num_classes=len(labels))
    train = reader.read(os.path.join(data_dir, SPLIT_FILES["train"])) if options.do_train else []
    if max_train_sentences and len(train) > max_train_sentences:
        order = np.random.default_rng(seed).permutation(len(train))[:max_train_sentences]
        train = [train[i] for i in sorted(order)]
    num_train_steps = run.num_train_steps(len(train)) if options.do_train else 1
    run.build(task, num_train_steps)
    if options.do_train:
        features, _ = sentences_to_features(train, labels, options.max_seq_length, run.tokenizer)
        run.train(features, num_train_steps)
    else:
        run.restore_latest()
    run.export("ner", labels)
    results = None
    for split, wanted in (("dev", options.do_eval), ("test", options.do_predict)):
        if not wanted:
            continue
        sentences = reader.read(os.path.join(data_dir, SPLIT_FILES[split]))
        features, kept = sentences_to_features(sentences, labels, options.max_seq_length, run.tokenizer)
        logits = run.predict(features, options.eval_batch_size)["logits"]
        predicted = []
        for row, sentence in enumerate(sentences):
            first_pieces = np.flatnonzero(features["label_weights"][row] == 1)
            tags = [labels[i] for i in logits[row][first_pieces].argmax(-1)]
            # Words cut off by max_seq_length are predicted O (and so count as misses).
            predicted.append(tags + ["O"] * (len(sentence.words) - kept[row]))
        scores = conlleval.evaluate([s.labels for s in sentences], predicted)
        path = os.path.join(options.output_dir, f"{split}_predictions.txt")
        with atomic_output(path) as writer:  # conlleval's input format
            for sentence, tags in zip(sentences, predicted):
                writer.writelines(f"{w} {g} {p}\n" for w, g, p in zip(sentence.words, sentence.labels, tags))
                writer.write("\n")
        if split == "dev":
            results = {"eval_precision": scores["precision"], "eval_recall": scores["recall"], "eval_f1": scores["f1"],
                       "global_step": run.trainer.global_step}
            if run.trainer.is_chief:
                write_eval_results(results, os.path.join(options.output_dir, "eval_results.txt"))
            log("eval: " + ", ".join(f"{k} = {v:.4f}" for k, v in sorted(results.items())))
    return results
