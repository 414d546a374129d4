"""Continuing a released BERT on a domain's text, with and without the domain's words added to
its vocabulary, measured end to end on all-MiniLM-L6-v2 (issue 34; docs/continue-pretraining.md).

    .venv/bin/python -m bench.continue_pretraining [--work_dir=/tmp/continue_pretraining] \
        [--domains=sst2,conll] [--steps=1500] [--seeds=1,2,3] [--new_tokens=1000]

For each domain (task-adaptive pretraining on SST-2's training sentences without labels; CoNLL-2003's
training text, news) and each arm:
- `base`: the released weights (MiniLM has no MLM head: its held-out MLM accuracy is a fresh head's);
- `continued`: masked-LM-only pretraining on the domain's text from the released weights, the
  released vocabulary;
- `continued_vocab`: the same after build_vocab.py --base_vocab added --new_tokens domain words
  (each new row the mean of its old pieces).
Held-out MLM accuracy (the dev sentences of each; never pretrained on) is evaluated during training, and
each arm is fine-tuned with --seeds (SST-2: 4,000 training sentences, dev accuracy; CoNLL:
2,000 training sentences, dev entity F1). Every finished step is kept in WORK_DIR (rerun to resume).
"""

import argparse
import json
import os
import random
import statistics
import time

os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "2")

from bench.finetune_acceptance import SHARED_DATA, google_model_dir, run_conll, run_sst2  # noqa: E402

ARMS = ("base", "continued", "continued_vocab")
MAX_SEQ, MAX_PRED = 64, 10


def log(message):
    print(f"[{time.strftime('%H:%M:%S')}] {message}", flush=True)


def domain_text(work, domain):
    """WORK/DOMAIN/{train,heldout}.txt: the pretraining text (documents of 20 sentences, blank
    line between) and the held-out text, one sentence per line."""
    folder = os.path.join(work, domain)
    paths = {split: os.path.join(folder, f"{split}.txt") for split in ("train", "heldout")}
    if all(os.path.exists(path) for path in paths.values()):
        return paths
    os.makedirs(folder, exist_ok=True)
    if domain == "sst2":

        def sentences(split):
            with open(os.path.join(SHARED_DATA, "SST-2", f"{split}.tsv"), encoding="utf-8") as reader:
                return [line.split("\t")[0] for line in list(reader)[1:]]

        train, heldout = sentences("train"), sentences("dev")
        random.Random(0).shuffle(train)
    else:

        def sentences(name):
            out, words = [], []
            with open(os.path.join(SHARED_DATA, "CoNLL2003", name), encoding="utf-8") as reader:
                for line in reader:
                    if line.startswith("-DOCSTART-"):
                        continue
                    if line.strip():
                        words.append(line.split()[0])
                    elif words:
                        out.append(" ".join(words))
                        words = []
            return out + ([" ".join(words)] if words else [])

        train, heldout = sentences("eng.train"), sentences("eng.testa")
    for split, lines in (("train", train), ("heldout", heldout)):
        with open(paths[split], "w", encoding="utf-8") as writer:
            for start in range(0, len(lines), 20):
                writer.write("\n".join(lines[start : start + 20]) + "\n\n")
    return paths


def records(folder, text, vocab_file, name, dupe_factor):
    from tfrecord_tools.pretraining_data import PretrainingDataOptions, create_pretraining_data

    path = os.path.join(folder, f"{name}.tfrecord")
    if not os.path.exists(path):
        options = PretrainingDataOptions(
            vocab_file=vocab_file,
            max_seq_length=MAX_SEQ,
            max_predictions_per_seq=MAX_PRED,
            dupe_factor=dupe_factor,
            next_sentence_prediction=False,
            random_seed=1,
        )
        summary = create_pretraining_data([text], [path], options, log=lambda message: None)
        log(f"{path}: {summary.instances} instances")
    return path


def model_dir(folder, config, vocab, checkpoint_prefix):
    """FOLDER/model: bert_config.json, vocab.txt and bert_model.ckpt together (what the
    fine-tuning helpers take), as links."""
    out = os.path.join(folder, "model")
    os.makedirs(out, exist_ok=True)
    links = {"bert_config.json": config, "vocab.txt": vocab}
    directory, prefix = os.path.split(checkpoint_prefix)
    for name in os.listdir(directory):
        if name.startswith(prefix + "."):
            links["bert_model.ckpt" + name[len(prefix) :]] = os.path.join(directory, name)
    for name, source in links.items():
        target = os.path.join(out, name)
        if not os.path.exists(target):
            os.symlink(os.path.abspath(source), target)
    return out


def pretrain(work, domain, arm, args, base):
    """The arm's model directory and its held-out MLM curve (None for `base`)."""
    from keras_bert_impl.runners.run_pretraining import PretrainingOptions, run_pretraining

    if arm == "base":
        return base, None
    folder = os.path.join(work, domain, arm)
    os.makedirs(folder, exist_ok=True)
    text = domain_text(work, domain)
    start = base
    if arm == "continued_vocab":
        start = os.path.join(folder, "extended")
        if not os.path.exists(start):
            from keras_bert_impl.runners.extend_vocab import extend_vocabulary

            extend_vocabulary(
                [text["train"]],
                os.path.join(base, "vocab.txt"),
                start,
                num_new_tokens=args.new_tokens,
                init_checkpoint=os.path.join(base, "bert_model.ckpt"),
                bert_config_file=os.path.join(base, "bert_config.json"),
                log=log,
            )
    vocab = os.path.join(start, "vocab.txt")
    config = os.path.join(start, "bert_config.json")
    curve_file = os.path.join(folder, "curve.json")
    run = os.path.join(folder, "run")
    if not os.path.exists(curve_file):
        options = PretrainingOptions(
            bert_config_file=config,
            input_file=records(folder, text["train"], vocab, "train", args.dupe_factor),
            eval_input_file=records(folder, text["heldout"], vocab, "heldout", 1),
            init_checkpoint=os.path.join(start, "bert_model.ckpt"),
            output_dir=run,
            do_train=True,
            do_eval=True,
            max_seq_length=MAX_SEQ,
            max_predictions_per_seq=MAX_PRED,
            train_batch_size=args.batch_size,
            eval_batch_size=64,
            learning_rate=args.learning_rate,
            num_train_steps=args.steps,
            num_warmup_steps=args.steps // 10,
            save_checkpoints_steps=args.steps // 2,
            iterations_per_loop=args.eval_every,
            eval_every_n_steps=args.eval_every,
            max_eval_steps=args.eval_batches,
            random_seed=1,
        )
        started = time.time()
        result = run_pretraining(options, log=log)
        curve = {
            "evaluations": [
                {"step": int(e["step"]), "masked_lm_accuracy": float(e["masked_lm_accuracy"])}
                for e in result.train.evaluations
            ],
            "examples_per_second": statistics.median(
                [loop["examples_per_second"] for loop in result.train.history][1:] or [0]
            ),
            "minutes": (time.time() - started) / 60,
        }
        with open(curve_file, "w") as writer:
            json.dump(curve, writer)
    with open(curve_file) as reader:
        curve = json.load(reader)
    return model_dir(folder, config, vocab, os.path.join(run, "bert_model.ckpt")), curve


def heldout_of_base(work, domain, args, base):
    """The released model's held-out MLM accuracy (a fresh MLM head: MiniLM has none)."""
    from keras_bert_impl.runners.run_pretraining import PretrainingOptions, run_pretraining

    path = os.path.join(work, domain, "base_heldout.json")
    if not os.path.exists(path):
        folder = os.path.join(work, domain, "base")
        os.makedirs(folder, exist_ok=True)
        heldout = records(folder, domain_text(work, domain)["heldout"], os.path.join(base, "vocab.txt"), "heldout", 1)
        options = PretrainingOptions(
            bert_config_file=os.path.join(base, "bert_config.json"),
            input_file=heldout,
            init_checkpoint=os.path.join(base, "bert_model.ckpt"),
            output_dir=os.path.join(folder, "eval"),
            do_eval=True,
            allow_random_weights=True,
            max_seq_length=MAX_SEQ,
            max_predictions_per_seq=MAX_PRED,
            eval_batch_size=64,
            max_eval_steps=args.eval_batches,
            next_sentence_prediction=False,
        )
        result = run_pretraining(options, log=log)
        with open(path, "w") as writer:
            json.dump({"masked_lm_accuracy": float(result.eval["masked_lm_accuracy"])}, writer)
    with open(path) as reader:
        return json.load(reader)["masked_lm_accuracy"]


def finetune(work, domain, arm, seed, model, args):
    path = os.path.join(work, domain, f"finetune_{arm}_{seed}.json")
    if not os.path.exists(path):
        root = os.path.join(work, domain, f"finetune_{arm}_{seed}")
        common = dict(random_seed=seed, max_seq_length=MAX_SEQ if domain == "sst2" else 128)
        if domain == "sst2":
            result = run_sst2(model, root, log, sentences=args.sst2_sentences, **common)
            score = {"accuracy": float(result["eval_accuracy"])}
        else:
            result = run_conll(model, root, log, sentences=args.conll_sentences, **common)
            score = {"f1": float(result["eval_f1"])}
        with open(path, "w") as writer:
            json.dump(score, writer)
        import shutil

        shutil.rmtree(root, ignore_errors=True)  # checkpoints of a finished score are not needed
    with open(path) as reader:
        return json.load(reader)


def report(results, args):
    lines = []
    for domain, arms in results.items():
        metric = "SST-2 dev accuracy" if domain == "sst2" else "CoNLL-2003 dev entity F1"
        lines += [
            f"**{domain}** ({metric}, mean (sd) over seeds {args.seeds}; held-out MLM accuracy at the last step)",
            "",
            "| arm | held-out MLM | fine-tuned | per seed | pretraining min | ex/s |",
            "|---|---|---|---|---|---|",
        ]
        for arm, row in arms.items():
            scores = row["scores"]
            sd = statistics.stdev(scores) if len(scores) > 1 else 0.0
            curve = row.get("curve")
            lines.append(
                f"| {arm} | {row['heldout']:.3f} | {100 * statistics.mean(scores):.2f} ({100 * sd:.2f}) | "
                f"{', '.join(f'{100 * s:.2f}' for s in scores)} | "
                f"{curve['minutes']:.0f} | {curve['examples_per_second']:.0f} |"
                if curve
                else f"| {arm} | {row['heldout']:.3f} | {100 * statistics.mean(scores):.2f} ({100 * sd:.2f}) | "
                f"{', '.join(f'{100 * s:.2f}' for s in scores)} | - | - |"
            )
        for arm, row in arms.items():
            if row.get("curve"):
                points = ", ".join(f"{e['step']}: {e['masked_lm_accuracy']:.3f}" for e in row["curve"]["evaluations"])
                lines.append(f"\n{arm} held-out MLM accuracy by step: {points}")
        lines.append("")
    return "\n".join(lines)


def main():
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--work_dir", default="/tmp/continue_pretraining")
    parser.add_argument("--domains", default="sst2,conll")
    parser.add_argument("--arms", default=",".join(ARMS))
    parser.add_argument("--steps", type=int, default=1500)
    parser.add_argument("--batch_size", type=int, default=32)
    parser.add_argument("--learning_rate", type=float, default=1e-4)
    parser.add_argument("--eval_every", type=int, default=250)
    parser.add_argument("--eval_batches", type=int, default=20)
    parser.add_argument("--dupe_factor", type=int, default=3)
    parser.add_argument("--new_tokens", type=int, default=1000)
    parser.add_argument("--seeds", default="1,2,3")
    parser.add_argument("--sst2_sentences", type=int, default=4000)
    parser.add_argument("--conll_sentences", type=int, default=2000)
    args = parser.parse_args()
    seeds = [int(seed) for seed in args.seeds.split(",")]
    os.makedirs(args.work_dir, exist_ok=True)
    base = google_model_dir(args.work_dir)
    results = {}
    for domain in args.domains.split(","):
        results[domain] = {}
        for arm in args.arms.split(","):
            model, curve = pretrain(args.work_dir, domain, arm, args, base)
            heldout = (
                curve["evaluations"][-1]["masked_lm_accuracy"]
                if curve
                else heldout_of_base(args.work_dir, domain, args, base)
            )
            scores = [finetune(args.work_dir, domain, arm, seed, model, args) for seed in seeds]
            results[domain][arm] = {
                "scores": [next(iter(score.values())) for score in scores],
                "heldout": heldout,
                "curve": curve,
            }
            log(f"{domain} {arm}: {results[domain][arm]['scores']}")
    with open(os.path.join(args.work_dir, "results.json"), "w") as writer:
        json.dump(results, writer, indent=1)
    print(report(results, args))


if __name__ == "__main__":
    main()
