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
    except json.JSONDecodeError as error:
        sys.exit(f"squad_eval: error: {path}: not valid JSON ({error})")


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
    if "data" not in dataset:
        sys.exit(f'squad_eval: error: {args.data_file}: no "data" key; is it a SQuAD file?')
    predictions = _load(args.pred_file, "predictions")
    if args.version == "1.1":
        results = evaluate_v1(dataset["data"], predictions)
    else:
        null_odds = _load(args.na_prob_file, "null odds") if args.na_prob_file else None
        results = evaluate_v2(dataset["data"], predictions, null_odds, args.na_prob_thresh)
    print(json.dumps(results, indent=2))


console_main = main

if __name__ == "__main__":
    main()
