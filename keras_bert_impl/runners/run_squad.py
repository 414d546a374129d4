"""`run_squad`: run_squad.py's work as a library function (SQuAD v1.1 and v2.0), writing
predictions.json, nbest_predictions.json, null_odds.json (v2.0) and, when the predict file has
answers, eval_results.json from the official evaluation."""

import dataclasses
import json
import os

from keras_bert_common.errors import UsageError
from keras_bert_common.files import check_readable_file
from keras_bert_impl.evaluation.squad_eval import V1_METRIC_NAMES, V2_METRIC_NAMES, evaluate_v1, evaluate_v2
from keras_bert_impl.evaluation.squad_postprocess import compute_predictions, write_json
from keras_bert_impl.runners.finetuning import FineTuningOptions, FineTuningRun, open_or_convert
from keras_bert_impl.tasks.span import SpanTask
from keras_bert_impl.training.run_setup import RunResult
from tfrecord_tools.finetuning_data import is_data_dir, write_squad_data
from tfrecord_tools.squad_data import FEATURES_SUFFIX, read_features_sidecar, read_squad_examples

# The official sweep's keys that run_squad adds to a v2.0 evaluation, prefixed any_threshold_.
SWEEP_KEYS = ("best_exact", "best_exact_thresh", "best_f1", "best_f1_thresh")


@dataclasses.dataclass(kw_only=True)
class SquadOptions(FineTuningOptions):
    """run_squad.py's flags beyond fine-tuning's (Google's names and defaults)."""

    train_file: str = None
    predict_file: str = None
    # Instead of converting the JSON files: the directory create_finetuning_data wrote for them.
    data_dir: str = None
    version_2_with_negative: bool = False
    doc_stride: int = 128
    max_query_length: int = 64
    n_best_size: int = 20
    max_answer_length: int = 30
    null_score_diff_threshold: float = 0.0
    verbose_logging: bool = False


def squad_data(run, warn=print):
    """`--data_dir` as create_finetuning_data wrote it (checked against the flags), or the SQuAD JSON
    files converted into --output_dir."""
    options = run.options
    data_dir = options.data_dir

    def made_with_these_flags(data):
        for key in ("version_2_with_negative", "doc_stride", "max_query_length"):
            value = getattr(options, key)
            if data.meta.get(key) != value:
                raise UsageError(
                    f"{data_dir}/meta.json: made with {key}={data.meta.get(key)} but --{key}={value}; make them agree"
                )
        for split, wanted, flag in (
            ("train", options.do_train, "--train_file"),
            ("predict", options.do_predict, "--predict_file"),
        ):
            if wanted and not data.has(split):
                raise UsageError(
                    f"{data_dir}: was made without {flag}, so it has no {split}.tfrecord; rerun "
                    f"create_finetuning_data with {flag} (or pass {flag} instead of --data_dir)"
                )

    return open_or_convert(
        run,
        data_dir,
        ["squad"],
        lambda output_dir: write_squad_data(
            run.tokenizer,
            options.max_seq_length,
            output_dir,
            options.train_file if options.do_train else None,
            options.predict_file if (options.do_predict or options.do_eval) else None,
            options.version_2_with_negative,
            options.doc_stride,
            options.max_query_length,
            warn=warn,
        ),
        check=made_with_these_flags,
    )


def run_squad(options, log=print):
    """`options` a SquadOptions. With `data_dir` (create_finetuning_data's output) training reads its
    train.tfrecord and prediction its predict.tfrecord; the predict file is still read for the answers' text."""
    data_dir, train_file, predict_file = options.data_dir, options.train_file, options.predict_file
    version_2_with_negative = options.version_2_with_negative
    if options.do_eval:
        raise UsageError(
            "--do_eval: run_squad evaluates with --do_predict when --predict_file has answers; use --do_predict"
        )
    if data_dir and not is_data_dir(data_dir):
        raise FileNotFoundError(
            f"{data_dir}: holds no meta.json; pass the directory create_finetuning_data wrote "
            "(or --train_file / --predict_file instead of --data_dir)"
        )
    if options.do_train and not (train_file or data_dir):
        raise UsageError("--do_train needs --train_file (or --data_dir)")
    if options.do_predict and not predict_file:
        raise UsageError("--do_predict needs --predict_file (the answers' text comes from it)")
    for path, flag in ((train_file, "--train_file"), (predict_file, "--predict_file")):
        if path:
            check_readable_file(path, flag, "SQuAD JSON file")
    run = FineTuningRun(options, log, eval_flag="do_predict")
    run.check_metric_names(squad_metric_names(version_2_with_negative))
    warn = run.log_warning if options.verbose_logging else (lambda message: None)
    data = squad_data(run, warn)
    task = SpanTask(run.config, options.max_seq_length, max_query_length=options.max_query_length)
    if options.do_train:
        log(
            f"{data.meta.get('train_examples')} training questions ({data.meta.get('train_skipped')} skipped: answer "
            "not found in its context)"
        )
    steps = run.build_for(task, data.meta.get("train_examples", 0) if options.do_train else 0)
    if options.do_predict:
        examples, _ = read_squad_examples(predict_file, False, version_2_with_negative)
        features = read_features_sidecar(data.sidecar("predict", FEATURES_SUFFIX))
        arrays = run.read_features(data.path("predict"))
        if len(features) != len(arrays["input_ids"]) or (
            features and max(f.example_index for f in features) >= len(examples)
        ):
            raise UsageError(
                f"{data.path('predict')}: its windows were not made from {predict_file}; pass the predict "
                "file the data directory was made from"
            )
        with open(predict_file, encoding="utf-8") as reader:
            dataset = json.load(reader)["data"]
        has_answers = any(qa.get("answers") for article in dataset for p in article["paragraphs"] for qa in p["qas"])
        if options.eval_every_n_steps and not has_answers:
            raise UsageError(f"--eval_every_n_steps: {predict_file} has no answers to evaluate against; drop the flag")
    splitter = run.tokenizer.text_tokenizer

    def predict():
        outputs = run.predict(arrays, options.predict_batch_size)
        results = {
            f.unique_id: (outputs["start_logits"][i].tolist(), outputs["end_logits"][i].tolist())
            for i, f in enumerate(features)
        }
        return compute_predictions(
            examples,
            features,
            results,
            answer_word_splitter(splitter),
            options.n_best_size,
            options.max_answer_length,
            version_2_with_negative,
            options.null_score_diff_threshold,
        )

    def evaluate(predictions, nbest, null_odds):
        if not version_2_with_negative:
            return evaluate_v1(dataset, predictions)
        evaluation = evaluate_v2(dataset, predictions, null_odds)
        # The official threshold sweep only helps where predictions.json answered; swept over
        # every question's best non-null answer it finds the --null_score_diff_threshold to use.
        answers = {
            qid: next((entry["text"] for entry in entries if entry["text"]), "") for qid, entries in nbest.items()
        }
        sweep = evaluate_v2(dataset, answers, null_odds)
        for key in SWEEP_KEYS:
            evaluation[f"any_threshold_{key}"] = sweep[key]
        # The spans apart from the null decision: no null odds, so every question is answered.
        evaluation["best_non_null_HasAns_f1"] = evaluate_v2(dataset, answers)["HasAns_f1"]
        return evaluation

    trained = None
    if options.do_train:
        schedule = run.schedule_of(lambda: evaluate(*predict())) if options.eval_every_n_steps else None
        trained = run.train(data.path("train"), steps, schedule)
    else:
        run.restore_for_inference()
    run.export()
    if not options.do_predict:
        return RunResult(train=trained)
    log(f"predicting {len(examples)} questions in {len(features)} windows")
    predictions, nbest, null_odds = predict()
    write_json(predictions, os.path.join(options.output_dir, "predictions.json"))
    write_json(nbest, os.path.join(options.output_dir, "nbest_predictions.json"))
    if version_2_with_negative:
        write_json(null_odds, os.path.join(options.output_dir, "null_odds.json"))
    if not has_answers:
        return RunResult(train=trained)
    evaluation = evaluate(predictions, nbest, null_odds)
    if version_2_with_negative:
        threshold = options.null_score_diff_threshold
        all_null = 100.0 * evaluation.get("NoAns_total", 0) / max(evaluation["total"], 1)
        if evaluation["any_threshold_best_f1"] <= all_null + 1e-9:
            log(
                f"F1 {evaluation['f1']:.2f} at --null_score_diff_threshold={threshold}; no threshold "
                f"beats predicting no answer at all here (F1 {all_null:.2f})"
            )
        else:
            log(
                f"F1 {evaluation['f1']:.2f} at --null_score_diff_threshold={threshold}; the official "
                f"sweep finds F1 {evaluation['any_threshold_best_f1']:.2f} at --null_score_diff_threshold="
                f"{evaluation['any_threshold_best_f1_thresh']:.4f}"
            )
    write_json(evaluation, os.path.join(options.output_dir, "eval_results.json"))
    run.trainer.write_eval_summaries(evaluation)
    log("eval: " + json.dumps(evaluation))
    return RunResult(train=trained, eval=evaluation)


def squad_metric_names(version_2_with_negative):
    """The keys of run_squad's evaluation (what --keep_best_checkpoint may name)."""
    if not version_2_with_negative:
        return V1_METRIC_NAMES
    return (*V2_METRIC_NAMES, *(f"any_threshold_{key}" for key in SWEEP_KEYS), "best_non_null_HasAns_f1")


def answer_word_splitter(text_tokenizer):
    """texts -> Google's BasicTokenizer words of each (our graph splitter, batched): how the
    post-processing splits answers and contexts into words."""
    import tensorflow as tf

    def split(texts):
        words = text_tokenizer.split_words(tf.constant([text.encode("utf-8") for text in texts]))
        return [[word.decode("utf-8") for word in row] for row in words.to_list()]

    return split
