"""`run_ner`: CoNLL-2003 named-entity recognition (token classification on each word's first
piece) with entity-level precision/recall/F1 as conlleval computes them."""

import os

import numpy as np

from keras_bert_common.files import atomic_output
from keras_bert_impl.evaluation import conlleval
from keras_bert_impl.runners.finetuning import FineTuningRun, open_or_convert
from keras_bert_impl.runners.run_classifier import splits_wanted
from keras_bert_impl.tasks.tagging import TaggingTask
from keras_bert_impl.training.run_setup import RunResult
from tfrecord_tools.finetuning_data import FineTuningData, is_data_dir, write_conll_data
from tfrecord_tools.ner_data import SENTENCES_SUFFIX, read_sentences


def ner_data(run, data_dir, max_train_sentences=None, seed=12345):
    options = run.options
    if max_train_sentences and not is_data_dir(data_dir):
        return _subsampled_conll(run, data_dir, max_train_sentences, seed)
    return open_or_convert(
        run,
        data_dir,
        ["conll"],
        lambda output_dir: write_conll_data(
            data_dir, splits_wanted(options), run.tokenizer, options.max_seq_length, output_dir, warn=run.log_warning
        ),
    )


def _subsampled_conll(run, data_dir, max_train_sentences, seed):
    """--max_train_sentences: a seeded sample of the training sentences (in file order)."""
    from tfrecord_tools.finetuning_data import CONLL_FILES
    from tfrecord_tools.ner_data import ConllReader

    options = run.options
    staged = os.path.join(options.output_dir, "conll_sample")
    os.makedirs(staged, exist_ok=True)
    reader = ConllReader(warn=run.log_warning)
    for split, name in CONLL_FILES.items():
        source = os.path.join(data_dir, name)
        if split not in splits_wanted(options):
            continue
        sentences = reader.read(source)
        if split == "train" and len(sentences) > max_train_sentences:
            order = np.random.default_rng(seed).permutation(len(sentences))[:max_train_sentences]
            sentences = [sentences[i] for i in sorted(order)]
        with atomic_output(os.path.join(staged, name)) as writer:
            for sentence in sentences:
                writer.writelines(f"{word} _ _ {tag}\n" for word, tag in zip(sentence.words, sentence.labels))
                writer.write("\n")
    write_conll_data(
        staged, splits_wanted(options), run.tokenizer, options.max_seq_length, options.output_dir, warn=run.log_warning
    )
    return FineTuningData.open(options.output_dir)


# conlleval's entity-level scores that run_ner reports, as eval_precision etc.
NER_SCORES = ("precision", "recall", "f1")
NER_METRIC_NAMES = tuple(f"eval_{name}" for name in NER_SCORES)  # what --keep_best_checkpoint may name


def ner_metrics(scores):
    """conlleval's scores as run_ner reports them."""
    return dict(zip(NER_METRIC_NAMES, (scores[name] for name in NER_SCORES)))


def predicted_tags(logits, label_weights, sentences, labels):
    """Each sentence's tags: argmax on the first piece of each word; words cut off by
    max_seq_length are predicted O (and so count as misses)."""
    predicted = []
    for row, sentence in enumerate(sentences):
        first_pieces = np.flatnonzero(label_weights[row] == 1)
        tags = [labels[i] for i in logits[row][first_pieces].argmax(-1)]
        predicted.append(tags + ["O"] * (len(sentence.words) - len(tags)))
    return predicted


def run_ner(options, data_dir, max_train_sentences=None, seed=12345, log=print):
    run = FineTuningRun(options, log)
    run.check_metric_names(NER_METRIC_NAMES)
    data = ner_data(run, data_dir, max_train_sentences, seed)
    labels = data.labels
    task = TaggingTask(run.config, options.max_seq_length, label_names=labels)
    steps = run.build_for(task, data.count("train") if options.do_train else 0)

    def evaluate_split(split):
        features = run.read_features(data.path(split))
        sentences = read_sentences(data.sidecar(split, SENTENCES_SUFFIX))
        logits = run.predict(features, options.eval_batch_size)["logits"]
        predicted = predicted_tags(logits, features["label_weights"], sentences, labels)
        return sentences, predicted, conlleval.evaluate([s.labels for s in sentences], predicted)

    def dev_metrics():
        return ner_metrics(evaluate_split("dev")[2])

    trained = None
    if options.do_train:
        schedule = None
        if options.do_eval and options.eval_every_n_steps:
            schedule = run.schedule_of(dev_metrics)
        trained = run.train(data.path("train"), steps, schedule)
    else:
        run.restore_for_inference()
    run.export()
    results = None
    for split, wanted in (("dev", options.do_eval), ("test", options.do_predict)):
        if not wanted:
            continue
        sentences, predicted, scores = evaluate_split(split)
        path = os.path.join(options.output_dir, f"{split}_predictions.txt")
        if run.trainer.is_chief:
            with atomic_output(path) as writer:  # conlleval's input format
                for sentence, tags in zip(sentences, predicted):
                    writer.writelines(f"{w} {g} {p}\n" for w, g, p in zip(sentence.words, sentence.labels, tags))
                    writer.write("\n")
        if split == "dev":
            results = run.write_results(ner_metrics(scores))
    return RunResult(train=trained, eval=results)
