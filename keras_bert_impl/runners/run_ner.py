"""`run_ner`: CoNLL-2003 named-entity recognition (token classification on each word's first
piece) with entity-level precision/recall/F1 as conlleval computes them; fine-tuned, or with
`feature_based` the paper's feature-based approach (frozen encoder layers, cached, under a BiLSTM)."""

import dataclasses
import os

import numpy as np

from keras_bert_common.files import atomic_output
from keras_bert_impl.evaluation import conlleval
from keras_bert_impl.runners.finetuning import FineTuningOptions, FineTuningRun, open_or_convert
from keras_bert_impl.runners.layer_features import LayerFeatures, cached_layer_features, predict_logits
from keras_bert_impl.runners.run_classifier import splits_wanted
from keras_bert_impl.tasks.feature_tagging import FeatureTaggingTask
from keras_bert_impl.tasks.tagging import TaggingTask
from keras_bert_impl.training.run_setup import RunResult
from tfrecord_tools.finetuning_data import FineTuningData, is_data_dir, write_conll_data
from tfrecord_tools.ner_data import SENTENCES_SUFFIX, read_sentences


@dataclasses.dataclass(kw_only=True)
class NerOptions(FineTuningOptions):
    """run_ner.py's flags beyond fine-tuning's."""

    # eng.train, eng.testa, eng.testb, or the directory create_finetuning_data wrote for them.
    data_dir: str
    max_train_sentences: int = None  # a sample of this many, drawn with random_seed
    # The feature-based approach: the frozen encoder layers a BiLSTM reads (a key of
    # tasks.feature_tagging.FEATURE_LAYERS); None fine-tunes.
    feature_based: str = None
    lstm_size: int = None  # the BiLSTM's units each way (default: the encoder's hidden size)
    # Where the computed layers are kept (default: output_dir/layer_features); share it between runs.
    feature_cache_dir: str = None


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


def run_ner(options, log=print):
    """Trains (--do_train), evaluates on dev (--do_eval: eval_results.txt, dev_predictions.txt),
    predicts test (--do_predict: test_predictions.txt) and exports (--export_dir)."""
    run = FineTuningRun(options, log)
    run.check_metric_names(NER_METRIC_NAMES)
    if options.feature_based:
        FeatureTaggingTask.check_options(options.feature_based, options.lstm_size)
        if options.do_train and options.learning_rate < 1e-4:
            run.log_warning(
                f"--learning_rate={options.learning_rate} is a fine-tuning rate; a BiLSTM trained from scratch on "
                "frozen features learns at about 1e-3"
            )
    data = ner_data(run, options.data_dir, options.max_train_sentences, options.random_seed)
    labels = data.labels
    if options.feature_based:
        task = FeatureTaggingTask(run.config, options.max_seq_length, labels, options.feature_based, options.lstm_size)
    else:
        task = TaggingTask(run.config, options.max_seq_length, label_names=labels)
    steps = run.build_for(task, data.count("train") if options.do_train else 0)
    layers_of = _layer_features(run, task, data) if options.feature_based else None

    def logits_of(split):
        """The tagger's logits on `split` and its label weights (1 on each word's first piece)."""
        if layers_of is not None:
            features = layers_of(split)
            return predict_logits(run.model, features, options.eval_batch_size), features.label_weights
        features = run.read_features(data.path(split))
        return run.predict(features, options.eval_batch_size)["logits"], features["label_weights"]

    def evaluate_split(split):
        sentences = read_sentences(data.sidecar(split, SENTENCES_SUFFIX))
        predicted = predicted_tags(*logits_of(split), sentences, labels)
        return sentences, predicted, conlleval.evaluate([s.labels for s in sentences], predicted)

    def dev_metrics():
        return ner_metrics(evaluate_split("dev")[2])

    trained = None
    if options.do_train:
        schedule = None
        if options.do_eval and options.eval_every_n_steps:
            schedule = run.schedule_of(dev_metrics)
        if layers_of is None:
            trained = run.train(data.path("train"), steps, schedule)
        else:
            batch_size = run.per_pipeline_batch(options.train_batch_size)
            dataset = layers_of("train").training_dataset(
                batch_size, options.random_seed, run.pipeline_id, run.num_pipelines
            )
            flags = {"--feature_based": options.feature_based, "--lstm_size": task.lstm_size}
            trained = run.train_on(dataset, steps, schedule, input_flags=flags)
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


def _layer_features(run, task, data):
    """split -> its `LayerFeatures` (computed into the cache on first use, then kept in memory)."""
    options = run.options
    cache_dir = options.feature_cache_dir or os.path.join(options.output_dir, "layer_features")
    config, loaded = run.config, {}

    def layers_of(split):
        if split not in loaded:
            path = cached_layer_features(
                run.model.encoder,
                task.layer_indexes,
                data.path(split),
                cache_dir,
                options.max_seq_length,
                options.eval_batch_size,
                run.log,
            )
            loaded[split] = LayerFeatures(path, options.max_seq_length, len(task.layer_indexes), config.hidden_size)
        return loaded[split]

    return layers_of
