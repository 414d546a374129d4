"""The official SQuAD evaluation as a command, with the official scripts' arguments:

    squad_eval DATA.json PRED.json [--na-prob-file NULL_ODDS.json] [--na-prob-thresh 1.0] [--version 1.1]

prints the JSON the official evaluate-v2.0.py prints (`exact`, `f1`, `total`, `HasAns_*`,
`NoAns_*`, and with null odds `best_exact`, `best_exact_thresh`, `best_f1`, `best_f1_thresh`),
or with `--version 1.1` the v1.1 keys `exact_match` and `f1`.
"""

import argparse
import json
import sys


def _load(path, what):
    try:
        with open(path, encoding="utf-8") as reader:
            return json.load(reader)
    except FileNotFoundError:
        sys.exit(f"squad_eval: error: {path}: no such {what} file")
    except IsADirectoryError:
        sys.exit(f"squad_eval: error: {path}: is a directory; pass the {what} file (JSON)")
    except OSError as error:
        sys.exit(f"squad_eval: error: {path}: cannot read the {what} file ({error.strerror})")
    except (json.JSONDecodeError, UnicodeDecodeError) as error:
        sys.exit(f"squad_eval: error: {path}: not valid JSON ({error})")


def _error(message):
    sys.exit(f"squad_eval: error: {message}")


def _questions(dataset, path):
    try:
        return [
            qa
            for article in dataset["data"]
            for paragraph in article["paragraphs"]
            for qa in paragraph["qas"]
            if qa["id"] is not None
        ]
    except (KeyError, TypeError) as error:
        _error(
            f"{path}: not a SQuAD file ({type(error).__name__}: {error}); it needs "
            '{"data": [{"paragraphs": [{"qas": [...]}]}]}'
        )


def _check(args, dataset, predictions, null_odds):
    """What would crash the official scripts, as one line naming the file and the fix."""
    questions = _questions(dataset, args.data_file)
    if not isinstance(predictions, dict) or not all(isinstance(v, str) for v in predictions.values()):
        _error(f"{args.pred_file}: not a predictions file (a JSON object of question id -> answer text)")
    ids = {qa["id"] for qa in questions}
    if not ids & set(predictions):
        _error(
            f"{args.pred_file}: answers none of the {len(ids)} questions of {args.data_file}; "
            "were the predictions made from it?"
        )
    if args.version == "1.1":
        unanswerable = [qa["id"] for qa in questions if not qa.get("answers")]
        if unanswerable:
            _error(
                f"{args.data_file}: question {unanswerable[0]} (and {len(unanswerable) - 1} more) has no answer: "
                "a SQuAD 2.0 file? drop --version 1.1"
            )
    if null_odds is not None:
        if not isinstance(null_odds, dict):
            _error(f"{args.na_prob_file}: not a null-odds file (a JSON object of question id -> number)")
        missing = sorted(set(predictions) & ids - set(null_odds))
        if missing:
            _error(
                f"{args.na_prob_file}: has no null odds for question {missing[0]} (and {len(missing) - 1} more); "
                "pass the null_odds.json written with these predictions"
            )


def main(argv=None):
    from keras_bert_impl.evaluation.squad_eval import evaluate_v1, evaluate_v2

    parser = argparse.ArgumentParser(description="Official SQuAD v1.1 / v2.0 evaluation.")
    parser.add_argument("data_file")
    parser.add_argument("pred_file")
    parser.add_argument("--na-prob-file", "-n", default=None)
    parser.add_argument("--na-prob-thresh", "-t", type=float, default=1.0)
    parser.add_argument("--version", default="2.0", choices=["1.1", "2.0"])
    args = parser.parse_args(argv)
    dataset = _load(args.data_file, "data")
    if not isinstance(dataset, dict) or "data" not in dataset:
        sys.exit(f'squad_eval: error: {args.data_file}: no "data" key; is it a SQuAD file?')
    predictions = _load(args.pred_file, "predictions")
    null_odds = _load(args.na_prob_file, "null odds") if args.na_prob_file and args.version == "2.0" else None
    _check(args, dataset, predictions, null_odds)
    if args.version == "1.1":
        results = evaluate_v1(dataset["data"], predictions)
    else:
        results = evaluate_v2(dataset["data"], predictions, null_odds, args.na_prob_thresh)
    print(json.dumps(results, indent=2))


console_main = main

if __name__ == "__main__":
    main()
