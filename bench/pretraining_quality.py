"""Pretraining quality on real text: BERT-mini from scratch, ours (static and dynamic masking)
beside tf-models-official's own pretraining, held-out MLM/NSP curves; phase 2 at seq 512; and
the pre-train-then-fine-tune gain on SST-2 (4,000 sentences), MRPC, STS-B and CoLA (--tasks).

    .venv/bin/python -m bench.pretraining_quality [--work_dir=/tmp/pretraining_quality] [--steps=800]

Data: the training part of each corpus in ../shared/data/corpus (every file before its held-out
byte offset in heldout_split.json) and, for evaluation, the held-out tails; a WordPiece vocabulary
learned from the training part (build_vocab.py); TFRecords from create_pretraining_data.py. Every
run reads the same records in the same order (our tf.data pipeline, --seed, 12345 unless told)
with the same config, batch, learning rate, warmup, linear decay, clipping and steps; --seed also
seeds each library's initial weights (ours through --random_seed, Model Garden's through
tf_keras.utils.set_random_seed), so a few seeds show the spread of a curve between initialisations:

- `ours_static`, `ours_dynamic`: run_pretraining (the library behind run_pretraining.py), held-out
  evaluation every --eval_every steps (--eval_every_n_steps);
- `model_garden`: tf-models-official's BertPretrainerV2 and official.nlp.optimization's AdamW, the
  whole step in one tf.function (peers/model_garden_reference.ModelGardenPretraining);
- `ours_tiny_static`, `model_garden_tiny`: the same two at BERT-tiny (L2/H128), for the "healthy
  run" table of docs/benchmarks/pretraining_quality.md and a comparison long enough to pass the MLM
  plateau within the hour;
- `ours_tiny_mlm`: BERT-tiny on RoBERTa's FULL-SENTENCES records of the same text (one segment, no
  NSP), the paper's "No NSP" ablation (Table 5) in miniature: same steps, batch and schedule;
- `ours_tiny_mask25`, `ours_tiny_onecycle`: ours_tiny_static with one of Cramming's cheap levers
  (arXiv 2212.14034): 25% masking (records and held-out set at 25%, 32 predictions), or a one-cycle
  learning rate (linear up to its peak at half the steps, then linear down);
- `phase2`: ours_static's weights, 10% more steps at seq 512 with 80 predictions (fresh optimizer);
- fine-tuning (run_classifier's library) on --tasks (STS-B, CoLA, MRPC, SST-2), three seeds each,
  from random weights (point 0, once per model size) and from 1/4, 1/2 and all of the steps of every
  --finetune_from run (a comma list); each arm (random weights of a size, or a pretraining run)
  takes the best of a seed-1 learning-rate sweep (--finetune_learning_rate, a comma list: at point 0
  for random weights, at all steps for a run) for all its seeds and points. Fine-tuning runs are
  named finetune:ARM:TASK:POINT:SEED:LR.

--pretraining_text=sst2 pretrains on SST-2's training text without its labels instead (held out:
its dev text), in-domain text for the fine-tuning gain; use a --work_dir of its own.

Each run is a subprocess that writes its results under a folder named by the setting (steps, lr,
batch, dropout, precision; fine-tuning's lr and epochs); a finished run is not repeated, so an
interrupted bench resumes where it was (--rerun=NAME,... repeats some). The last stage draws
docs/pretraining_quality.png (or --plot's file for a part of the bench), --finetune_plot (dev metric
against pretraining steps, per task) and prints the tables of docs/benchmarks/.

--parallel_runs=2 runs two at a time with one core each, in this order: ours_static beside
model_garden (the two compared share the same minutes of a shared machine), then tiny's pair,
ours_dynamic, phase 2 and fine-tuning. On these CPUs one thread keeps most of two threads' speed,
so a pair takes little longer than one run alone. --dropout and --mixed_precision apply to every
pretraining run (fine-tuning keeps dropout 0.1 and float32).
"""

import argparse
import json
import math
import os
import random
import shutil
import statistics
import subprocess
import sys
import time

HERE = os.path.dirname(os.path.abspath(__file__))
REPO = os.path.dirname(HERE)
os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "2")
CORPORA = os.path.join(REPO, "..", "shared", "data", "corpus")
SHARED_DATA = os.path.join(REPO, "..", "shared", "data")
NAMES = ("wikipedia_excerpt.txt", "brown.txt", "jane_austen.txt", "moby_dick.txt")
DEFAULT_SEED = 12345
MODELS = {"mini": (4, 256, 4, 1024), "tiny": (2, 128, 2, 512)}  # layers, hidden, heads, intermediate
# Each pretraining run and the model it trains.
MODEL_OF = {
    "ours_static": "mini",
    "ours_dynamic": "mini",
    "model_garden": "mini",
    "ours_tiny_static": "tiny",
    "model_garden_tiny": "tiny",
    # The paper's "No NSP" (Table 5) in miniature: RoBERTa's FULL-SENTENCES inputs, MLM alone.
    "ours_tiny_mlm": "tiny",
    # Cramming's cheap levers (arXiv 2212.14034) on ours_tiny_static: 25% masking; a one-cycle
    # (triangular) learning rate, its peak at half the steps.
    "ours_tiny_mask25": "tiny",
    "ours_tiny_onecycle": "tiny",
}
PRETRAINING_RUNS = tuple(MODEL_OF)
# The runs fine-tuning can start from, and their model.
FINETUNE_SOURCES = {
    name: MODEL_OF[name]
    for name in ("ours_static", "ours_tiny_static", "ours_tiny_mlm", "ours_tiny_mask25", "ours_tiny_onecycle")
}
# The records each of our runs trains and evaluates on (segment pairs with NSP labels, or full sentences).
RECORDS_OF = {
    "ours_dynamic": ("train_dynamic_128", "heldout_128"),
    "ours_tiny_mlm": ("train_fullsent_128", "heldout_fullsent_128"),
    "ours_tiny_mask25": ("train_static_128_mask25", "heldout_128_mask25"),
}
# 25% of 128 tokens needs 32 prediction slots (20 would cap the masking at 15.6%).
MASK25_PREDICTIONS = 32
# Each lever run's run_pretraining options that differ from ours_tiny_static's.
OPTIONS_OF = {
    "ours_tiny_mask25": lambda args: {"max_predictions_per_seq": MASK25_PREDICTIONS},
    "ours_tiny_onecycle": lambda args: {"num_warmup_steps": args.steps // 2},
}
# Fine-tuning seeds at every pretraining point (0 = random weights), for the spread.
FINETUNE_SEEDS = (1, 2, 3)
# STS-B and CoLA are where random initialisation suffers most (Cramming, arXiv 2212.14034: 17.8
# and 0.0 against 84.6 and 44.5 at BERT-base); SST-2 and MRPC beside them, for contrast.
TASKS = ("SST-2", "MRPC", "STS-B", "CoLA")
# The dev metric reported per task (GLUE's: Pearson for STS-B, Matthews correlation for CoLA).
TASK_METRIC = {"SST-2": "eval_accuracy", "MRPC": "eval_accuracy", "STS-B": "eval_pearson", "CoLA": "eval_mcc"}
DEFAULT_PLOT = os.path.join(REPO, "docs", "pretraining_quality.png")


_RUN = []  # the run this process does, named in its log lines (two runs write to one terminal)


def log(message):
    print(f"[{time.strftime('%H:%M:%S')}]{''.join(f' {name}:' for name in _RUN)} {message}", flush=True)


def tool(name, *flags):
    command = [sys.executable, os.path.join(REPO, "tfrecord_tools", name), *flags]
    done = subprocess.run(command, capture_output=True, text=True)
    if done.returncode:
        sys.exit(f"failed: {' '.join(command)}\n{done.stderr[-3000:]}")
    return done.stderr


def corpora_documents():
    """The four corpora's documents, each file split at its held-out offset."""
    with open(os.path.join(CORPORA, "heldout_split.json"), encoding="utf-8") as reader:
        split = json.load(reader)["files"]
    parts = {"train": [], "heldout": []}
    for name in NAMES:
        with open(os.path.join(CORPORA, name), "rb") as reader:
            text = reader.read()
        offset = split[name]["heldout"]["byte_offset"] if name in split else heldout_offset(text)
        for part, piece in (("train", text[:offset]), ("heldout", text[offset:])):
            parts[part].extend(document for document in piece.split(b"\n\n") if document.strip())
    return parts


def sst2_documents():
    """SST-2's training sentences and phrases without their labels (in-domain text, as in
    Gururangan et al.'s task-adaptive pretraining), ten to a document; held out: the dev sentences,
    which fine-tuning evaluates on and no run trains on. train.tsv lists its phrases in no order, so
    a document's next sentence is as unrelated as NSP's random one: NSP learns nothing here."""
    parts = {}
    for part, split in (("train", "train.tsv"), ("heldout", "dev.tsv")):
        with open(os.path.join(SHARED_DATA, "SST-2", split), encoding="utf-8") as reader:
            lines = [line.rsplit("\t", 1)[0].strip() for line in list(reader)[1:]]
        # The corpora's rule for a sentence line: three words or more.
        lines = [line for line in lines if len(line.split()) >= 3]
        parts[part] = ["\n".join(lines[i : i + 10]).encode("utf-8") for i in range(0, len(lines), 10)]
    return parts


# The unlabeled text pretraining reads (--pretraining_text): its training and held-out documents.
TEXTS = {"corpora": corpora_documents, "sst2": sst2_documents}
TEXT_TITLES = {
    "corpora": "the four shared corpora",
    "sst2": "SST-2's training text without labels (held out: its dev text)",
}


def make_data(work, args):
    """--pretraining_text's documents, a vocabulary from the training part, TFRecords."""
    from keras_bert_common.files import atomic_output

    # A work directory holds the data of one text: the vocabulary and records are made once.
    marker = os.path.join(work, "pretraining_text")
    if os.path.exists(marker):
        with open(marker, encoding="utf-8") as reader:
            made_from = reader.read().strip()
        if made_from != args.pretraining_text:
            sys.exit(f"{work} holds data made from --pretraining_text={made_from}: choose another --work_dir")
    # Documents shuffled into one file per part, as a Wikipedia dump's articles come in no order:
    # the random next sentence of a unit then comes from any corpus, not the same novel (Google's
    # draws it from the whole corpus).
    parts = TEXTS[args.pretraining_text]()
    for part, documents in parts.items():
        random.Random(20261201).shuffle(documents)
        os.makedirs(os.path.join(work, "text", part), exist_ok=True)
        with open(os.path.join(work, "text", part, "shuffled.txt"), "wb") as writer:
            writer.write(b"\n\n".join(document.strip(b"\n") for document in documents) + b"\n")
    with atomic_output(marker) as writer:
        writer.write(args.pretraining_text + "\n")
    train, heldout = os.path.join(work, "text", "train", "*.txt"), os.path.join(work, "text", "heldout", "*.txt")
    vocab = os.path.join(work, "vocab.txt")
    if not os.path.exists(vocab):
        log(f"learning a {args.vocab_size}-token vocabulary from the training part")
        tool("build_vocab.py", f"--input_file={train}", f"--output_file={vocab}", f"--vocab_size={args.vocab_size}")
    records = {
        "train_static_128": (train, 128, 20, [f"--dupe_factor={args.dupe_factor}"]),
        "train_dynamic_128": (train, 128, 20, ["--dupe_factor=1", "--dynamic_masking"]),
        "heldout_128": (heldout, 128, 20, ["--dupe_factor=1", "--random_seed=7"]),
        # RoBERTa's FULL-SENTENCES inputs from the same text: no NSP, one segment.
        "train_fullsent_128": (train, 128, 20, [f"--dupe_factor={args.dupe_factor}", "--nonext_sentence_prediction"]),
        "heldout_fullsent_128": (
            heldout,
            128,
            20,
            ["--dupe_factor=1", "--random_seed=7", "--nonext_sentence_prediction"],
        ),
        "train_static_128_mask25": (
            train,
            128,
            MASK25_PREDICTIONS,
            [f"--dupe_factor={args.dupe_factor}", "--masked_lm_prob=0.25"],
        ),
        "heldout_128_mask25": (
            heldout,
            128,
            MASK25_PREDICTIONS,
            ["--dupe_factor=1", "--random_seed=7", "--masked_lm_prob=0.25"],
        ),
        "train_static_512": (train, 512, 80, ["--dupe_factor=1"]),
        "heldout_512": (heldout, 512, 80, ["--dupe_factor=1", "--random_seed=7"]),
    }
    counts, tokens = {}, {}
    for name, (text, length, predictions, extra) in records.items():
        output = os.path.join(work, "records", f"{name}.tfrecord")
        if not os.path.exists(output):
            log(f"writing {name}")
            os.makedirs(os.path.dirname(output), exist_ok=True)
            tool(
                "create_pretraining_data.py",
                f"--input_file={text}",
                f"--output_file={output}",
                f"--vocab_file={vocab}",
                f"--max_seq_length={length}",
                f"--max_predictions_per_seq={predictions}",
                "--num_workers=2",
                *extra,
            )
        counts[name] = sum(1 for _ in _records(output))
        if name in ("train_static_128", "train_fullsent_128"):
            # Real (unpadded) tokens per instance, over the first 5,000: what one step trains on.
            lengths = [_length(record) for record, _ in zip(_records(output), range(5000))]
            tokens[name] = statistics.mean(lengths)
    # Over the instances an evaluation reads (the first --eval_batches batches of 64).
    heldout_records = _records(os.path.join(work, "records", "heldout_128.tfrecord"))
    random_next = [_next_sentence_label(record) for record, _ in zip(heldout_records, range(64 * args.eval_batches))]
    with open(vocab, encoding="utf-8") as reader:
        vocab_size = sum(1 for _ in reader)
    os.makedirs(run_root(work, args), exist_ok=True)
    for name, (layers, hidden, heads, intermediate), dropout in (
        *((name, shape, args.dropout) for name, shape in MODELS.items()),
        # Fine-tuning on a few thousand examples keeps Google's dropout whatever pretraining used.
        *((f"{name}_finetune", shape, 0.1) for name, shape in MODELS.items()),
    ):
        config = {
            "vocab_size": vocab_size,
            "hidden_size": hidden,
            "num_hidden_layers": layers,
            "num_attention_heads": heads,
            "intermediate_size": intermediate,
            "hidden_act": "gelu",
            "hidden_dropout_prob": dropout,
            "attention_probs_dropout_prob": dropout,
            "max_position_embeddings": 512,
            "type_vocab_size": 2,
            "initializer_range": 0.02,
        }
        with open(config_path(work, args, name), "w", encoding="utf-8") as writer:
            json.dump(config, writer, indent=2)
    share = sum(random_next) / len(random_next)
    return {
        "vocab_size": vocab_size,
        "instances": counts,
        "tokens_per_instance": tokens,
        "nsp_majority": max(share, 1 - share),
    }


def heldout_offset(text):
    """heldout_split.json's rule for a file it does not list (Moby Dick): the byte offset of the
    last round(5%) of the documents (blank-line separated)."""
    starts, at_start = [], True
    position = 0
    for line in text.splitlines(keepends=True):
        if line.strip():
            if at_start:
                starts.append(position)
            at_start = False
        else:
            at_start = True
        position += len(line)
    return starts[len(starts) - round(0.05 * len(starts))]


def _next_sentence_label(record):
    import tensorflow as tf

    return tf.train.Example.FromString(record).features.feature["next_sentence_labels"].int64_list.value[0]


def _length(record):
    import tensorflow as tf

    return sum(tf.train.Example.FromString(record).features.feature["input_mask"].int64_list.value)


def _records(path):
    import tensorflow as tf

    return tf.data.TFRecordDataset(path).as_numpy_iterator()


def pretraining_options(work, args, name, **overrides):
    from keras_bert_impl.runners.run_pretraining import PretrainingOptions

    values = dict(
        bert_config_file=config_path(work, args, "mini"),
        input_file=os.path.join(work, "records", "train_static_128.tfrecord"),
        eval_input_file=os.path.join(work, "records", "heldout_128.tfrecord"),
        output_dir=run_folder(work, args, name),
        do_train=True,
        do_eval=True,
        max_seq_length=128,
        max_predictions_per_seq=20,
        train_batch_size=args.batch_size,
        eval_batch_size=64,
        learning_rate=args.learning_rate,
        num_train_steps=args.steps,
        num_warmup_steps=args.steps // 10,
        save_checkpoints_steps=args.steps // 4,
        iterations_per_loop=args.eval_every,
        eval_every_n_steps=args.eval_every,
        max_eval_steps=args.eval_batches,
        log_every_seconds=30,
        # Model Garden's peer reads the same batches in the same order: Google's fixed shapes.
        pad_to_max_seq_length=True,
        mixed_precision=args.mixed_precision,
        random_seed=args.seed,
    )
    values.update(overrides)
    return PretrainingOptions(**values)


def curve_of(result):
    """Held-out points and training speed from run_pretraining's RunResult."""
    rates = [loop["examples_per_second"] for loop in result.train.history]
    return {
        "evaluations": [
            {key: float(value) for key, value in evaluation.items() if isinstance(value, (int, float))}
            | {"step": int(evaluation["step"])}
            for evaluation in result.train.evaluations
        ],
        # The first loop traces the tf.function: the rate is over the others.
        "examples_per_second": statistics.median(rates[1:] or rates),
    }


def run_ours(work, args, name):
    from keras_bert_impl.runners.run_pretraining import run_pretraining

    overrides = {"bert_config_file": config_path(work, args, MODEL_OF[name])}
    if name in RECORDS_OF:
        train, heldout = RECORDS_OF[name]
        overrides["input_file"] = os.path.join(work, "records", f"{train}.tfrecord")
        overrides["eval_input_file"] = os.path.join(work, "records", f"{heldout}.tfrecord")
    if name in OPTIONS_OF:
        overrides.update(OPTIONS_OF[name](args))
    return curve_of(run_pretraining(pretraining_options(work, args, name, **overrides), log=log))


def run_model_garden(work, args, name):
    """tf-models-official's pretraining on our pipeline's batches (the same records, the same order)."""
    import tf_keras

    from keras_bert_common.progress import format_seconds
    from keras_bert_impl.models.bert_config import BertConfig
    from keras_bert_impl.tasks.pretraining import PretrainingTask
    from keras_bert_impl.training.input_pipeline import make_tfrecord_dataset
    from peers.model_garden_reference import ModelGardenPretraining

    config = BertConfig.from_json_file(config_path(work, args, MODEL_OF[name]))
    spec = PretrainingTask(config, 128, 20).feature_spec()
    train = make_tfrecord_dataset(
        [os.path.join(work, "records", "train_static_128.tfrecord")], spec, args.batch_size, True, seed=args.seed
    )
    heldout = make_tfrecord_dataset([os.path.join(work, "records", "heldout_128.tfrecord")], spec, 64, False).take(
        args.eval_batches
    )
    # Model Garden's initializers draw from the global seed (they take no seed of their own).
    tf_keras.utils.set_random_seed(args.seed)
    peer = ModelGardenPretraining(config, args.learning_rate, args.steps, args.steps // 10, policy=args.mixed_precision)
    iterator = iter(train)
    evaluations, rates = [], []
    # Steps per tf.function call: short enough for a progress line every half minute between evaluations.
    chunk = math.gcd(args.eval_every, 50)
    window_start = last_line = time.perf_counter()
    for step in range(chunk, args.steps + 1, chunk):
        loss = peer.train(iterator, chunk)
        now = time.perf_counter()
        if step % args.eval_every == 0:
            rates.append(args.eval_every * args.batch_size / (now - window_start))
            evaluations.append({"step": step, **peer.evaluate(heldout)})
            log(f"step {step}/{args.steps} loss={loss:.4f} {rates[-1]:.1f} examples/s: {evaluations[-1]}")
            window_start = last_line = time.perf_counter()
        elif now - last_line >= 30:
            rate = (step % args.eval_every) * args.batch_size / (now - window_start)
            eta = (args.steps - step) * args.batch_size / rate
            log(f"step {step}/{args.steps} loss={loss:.4f} {rate:.1f} examples/s ETA {format_seconds(eta)}")
            last_line = now
    return {"evaluations": evaluations, "examples_per_second": statistics.median(rates[1:] or rates)}


def run_phase2(work, args, name):
    """Phase 2 of the paper's recipe: ours_static's output, seq 512 and 80 predictions, 10% of
    the steps of both phases, a fresh optimizer (Google's --init_checkpoint)."""
    from keras_bert_impl.runners.run_pretraining import run_pretraining

    steps = max(args.eval_every_512, round(args.steps / 9))
    common = dict(
        init_checkpoint=run_folder(work, args, "ours_static"),
        input_file=os.path.join(work, "records", "train_static_512.tfrecord"),
        eval_input_file=os.path.join(work, "records", "heldout_512.tfrecord"),
        max_seq_length=512,
        max_predictions_per_seq=80,
        train_batch_size=args.phase2_batch_size,
        eval_batch_size=16,
        num_train_steps=steps,
        num_warmup_steps=steps // 10,
        save_checkpoints_steps=steps,
        iterations_per_loop=args.eval_every_512,
        eval_every_n_steps=args.eval_every_512,
    )
    # Where phase 2 starts: phase 1's weights evaluated at 512 (positions beyond 128 untrained).
    start = run_pretraining(
        pretraining_options(work, args, name + "_start", **{**common, "do_train": False, "eval_every_n_steps": None}),
        log=log,
    ).eval
    curve = curve_of(run_pretraining(pretraining_options(work, args, name, **common), log=log))
    curve["evaluations"].insert(0, {**{k: float(v) for k, v in start.items() if k != "global_step"}, "step": 0})
    curve["phase1_steps"] = args.steps
    return curve


def finetune_name(arm, task, point, seed, learning_rate):
    """One fine-tuning run: arm is a pretraining run (point 1/4, 1/2 or all of its steps) or, at
    point 0, a model size (random weights)."""
    return f"finetune:{arm}:{task}:{point}:{seed}:{learning_rate!r}"


def finetune(work, args, name):
    """run_classifier on one task from one pretraining checkpoint (or none: random weights)."""
    from bench import finetune_acceptance as acceptance

    arm, task, point, seed, learning_rate = name.split(":")[1:]
    checkpoint = None
    if point != "0":
        step = {"1/4": args.steps // 4, "1/2": args.steps // 2, "all": args.steps}[point]
        checkpoint = os.path.join(run_folder(work, args, arm), f"ckpt-{step}")
    out = run_folder(work, args, name)
    overrides = dict(
        bert_config_file=config_path(work, args, MODEL_OF.get(arm, arm) + "_finetune"),
        vocab_file=os.path.join(work, "vocab.txt"),
        init_checkpoint=checkpoint,
        allow_random_weights=checkpoint is None,
        learning_rate=float(learning_rate),
        num_train_epochs=args.finetune_epochs,
        max_seq_length=64 if task == "SST-2" else 128,
        random_seed=int(seed),
    )
    if task == "SST-2":
        results = acceptance.run_sst2(None, out, log, **overrides)
    else:
        results = acceptance.run_glue(task, None, out, log, **overrides)
    return {key: float(value) for key, value in results.items()}


def worker(args):
    """One run in this process: pretraining runs and fine-tuning runs keep no state between them."""
    work, name = args.work_dir, args.worker
    _RUN.append(name)
    if name.startswith("finetune:"):
        result = finetune(work, args, name)
    elif name in ("model_garden", "model_garden_tiny"):
        result = run_model_garden(work, args, name)
    elif name == "phase2":
        result = run_phase2(work, args, name)
    else:
        result = run_ours(work, args, name)
    path = result_path(work, args, name)
    with open(path + ".tmp", "w", encoding="utf-8") as writer:
        json.dump(result, writer, indent=1)
    os.replace(path + ".tmp", path)


def run_root(work, args):
    """Runs of one setting live apart; the data (which does not depend on it) is shared."""
    name = (
        f"steps{args.steps}_lr{args.learning_rate}_batch{args.batch_size}_dropout{args.dropout}_{args.mixed_precision}"
    )
    if args.seed != DEFAULT_SEED:
        name += f"_seed{args.seed}"
    return os.path.join(work, name)


def slug(name):
    """A run's name as a file name: finetune:ours_tiny_static:SST-2:1/4:1:0.001 ->
    finetune_ours_tiny_static_SST-2_1of4_1_0.001."""
    return name.replace(":", "_").replace("/", "of")


def run_folder(work, args, name):
    """Where a run writes its checkpoints (pretraining) or its records and model (fine-tuning)."""
    if name.startswith("finetune:"):
        return os.path.join(finetune_root(work, args), slug(name))
    return os.path.join(run_root(work, args), "runs", name)


def config_path(work, args, model):
    return os.path.join(run_root(work, args), f"bert_config_{model}.json")


def result_path(work, args, name):
    folder = os.path.join(
        finetune_root(work, args) if name.startswith("finetune:") else run_root(work, args), "results"
    )
    os.makedirs(folder, exist_ok=True)
    return os.path.join(folder, slug(name) + ".json")


def finetune_root(work, args):
    return os.path.join(run_root(work, args), f"finetune_epochs{args.finetune_epochs}")


def run_in_subprocess(args, name, rerun, after=()):
    """One run as a subprocess with its share of the cores, after the runs it reads from."""
    for future in after:
        future.result()
    path = result_path(args.work_dir, args, name)
    if os.path.exists(path) and name not in rerun:
        return json.load(open(path, encoding="utf-8"))
    if name in rerun:
        # Afresh: run_pretraining would resume from the finished run's checkpoints and train nothing.
        for folder in (run_folder(args.work_dir, args, name), run_folder(args.work_dir, args, name + "_start")):
            shutil.rmtree(folder, ignore_errors=True)
    log(f"run {name}")
    argv = [arg for arg in sys.argv[1:] if not arg.startswith("--worker")]
    threads = str(args.threads_per_run or max(1, (os.cpu_count() or 1) // args.parallel_runs))
    env = dict(os.environ, OMP_NUM_THREADS=threads, TF_NUM_INTRAOP_THREADS=threads, TF_NUM_INTEROP_THREADS=threads)
    start = time.perf_counter()
    done = subprocess.run([sys.executable, os.path.abspath(__file__), *argv, f"--worker={name}"], env=env)
    if done.returncode:
        raise SystemExit(f"run {name} failed (exit {done.returncode})")
    log(f"run {name} took {time.perf_counter() - start:.0f} s")
    return json.load(open(path, encoding="utf-8"))


def finetune_arms(args):
    """The fine-tuning arms and their points: random weights (point 0) once per model size, then
    each --finetune_from run at its other points."""
    sources, points = args.finetune_from.split(","), args.finetune_points.split(",")
    arms = {}
    if "0" in points:
        for source in sources:
            arms[MODEL_OF[source]] = ["0"]
    for source in sources:
        arms[source] = [point for point in points if point != "0"]
    return arms


def run_all(args, names, rerun):
    """The runs, --parallel_runs at a time in this order (ours_static beside model_garden: the two
    compared share the same minutes of this shared machine), then fine-tuning: per task and arm,
    a learning-rate sweep at seed 1 (of random weights, or of the run's last checkpoint), then the
    other seeds and points at the arm's best rate. A run waits for the runs it reads from, which
    are always submitted before it (so waiting never holds up the pool)."""
    from concurrent.futures import ThreadPoolExecutor

    futures, sweeps, finetuning = {}, {}, {}
    with ThreadPoolExecutor(args.parallel_runs) as pool:
        for name in names:
            after = [futures["ours_static"]] if name == "phase2" and "ours_static" in futures else []
            futures[name] = pool.submit(run_in_subprocess, args, name, rerun, after)
        if "finetune" in args.runs.split(","):
            rates = [float(rate) for rate in args.finetune_learning_rate.split(",")]
            # The arms that wait for a pretraining run of this invocation go last.
            arms = sorted(finetune_arms(args).items(), key=lambda arm: arm[0] in futures)
            for arm, points in arms:
                after = [futures[arm]] if arm in futures else []
                for task in args.tasks.split(","):
                    sweep_point = "0" if arm in MODELS else "all"
                    sweep = {
                        rate: pool.submit(
                            run_in_subprocess, args, finetune_name(arm, task, sweep_point, 1, rate), rerun, after
                        )
                        for rate in rates
                    }
                    sweeps[task, arm] = sweep
                    for point in points:
                        for seed in FINETUNE_SEEDS[: args.max_seeds]:
                            finetuning[task, arm, point, seed] = pool.submit(
                                run_at_best_rate, args, arm, task, point, seed, sweep, rerun
                            )
        pretraining = {name: futures[name].result() for name in names}
        return pretraining, gather_finetuning(args, sweeps, finetuning)


def best_rate(task, sweep):
    """The sweep's rate with the best seed-1 dev metric."""
    metric = {rate: future.result()[TASK_METRIC[task]] for rate, future in sweep.items()}
    return max(metric, key=metric.get)


def run_at_best_rate(args, arm, task, point, seed, sweep, rerun):
    rate = best_rate(task, sweep)
    return rate, run_in_subprocess(args, finetune_name(arm, task, point, seed, rate), rerun)


def gather_finetuning(args, sweeps, finetuning):
    """{task: {arm: {"sweep": {rate: seed-1 metric}, "points": {point: summary}}}}."""
    steps = {"0": 0, "1/4": args.steps // 4, "1/2": args.steps // 2, "all": args.steps}
    gathered = {}
    for (task, arm), sweep in sweeps.items():
        gathered.setdefault(task, {})[arm] = {
            "sweep": {rate: future.result()[TASK_METRIC[task]] for rate, future in sweep.items()},
            "points": {},
        }
    for (task, arm, point, seed), future in finetuning.items():
        rate, result = future.result()
        summary = gathered[task][arm]["points"].setdefault(
            point, {"steps": steps[point], "learning_rate": rate, "seeds": [], "values": []}
        )
        summary["seeds"].append(seed)
        summary["values"].append(result[TASK_METRIC[task]])
    for arms in gathered.values():
        for arm in arms.values():
            for summary in arm["points"].values():
                values = summary["values"]
                summary["mean"] = statistics.mean(values)
                summary["sd"] = statistics.stdev(values) if len(values) > 1 else 0.0
    return gathered


LABELS = {
    "ours_static": "ours, static masking",
    "ours_dynamic": "ours, dynamic masking",
    "model_garden": "tf-models-official BertPretrainerV2",
    "ours_tiny_static": "ours, BERT-tiny (L2/H128), MLM + NSP",
    "model_garden_tiny": "tf-models-official, BERT-tiny",
    "ours_tiny_mlm": "ours, BERT-tiny, MLM only (full sentences)",
    "ours_tiny_mask25": "ours, BERT-tiny, MLM + NSP, 25% masking",
    "ours_tiny_onecycle": "ours, BERT-tiny, MLM + NSP, one-cycle lr",
    "mini": "random weights (BERT-mini)",
    "tiny": "random weights (BERT-tiny)",
}


def _pyplot():
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    return plt


def _save(figure, path):
    os.makedirs(os.path.dirname(os.path.abspath(path)), exist_ok=True)
    figure.savefig(path + ".tmp.png", dpi=110)
    os.replace(path + ".tmp.png", path)


def plot(results, data, args):
    """Held-out MLM accuracy, MLM loss and NSP accuracy against steps, one line per run."""
    plt = _pyplot()
    styles = {
        "ours_static": "-",
        "ours_dynamic": "--",
        "model_garden": ":",
        "ours_tiny_static": "-.",
        "model_garden_tiny": (0, (1, 3)),
        "ours_tiny_mlm": (0, (5, 2, 1, 2, 1, 2)),
        "ours_tiny_mask25": (0, (3, 1)),
        "ours_tiny_onecycle": (0, (1, 1)),
    }
    figure, axes = plt.subplots(1, 3, figsize=(15, 4.6))
    panels = (
        ("masked_lm_accuracy", "held-out MLM accuracy"),
        ("masked_lm_loss", "held-out MLM loss"),
        ("next_sentence_accuracy", "held-out NSP accuracy"),
    )
    for axis, (key, title) in zip(axes, panels):
        for name, result in results.items():
            points = [p for p in result["evaluations"] if key in p]
            if not points:  # an MLM-only run has no NSP curve
                continue
            if name == "phase2":
                offset = result["phase1_steps"]
                axis.plot(
                    [offset + p["step"] for p in points],
                    [p[key] for p in points],
                    "o-",
                    markersize=3,
                    color="black",
                    label=f"ours, phase 2 (seq 512, 80 predictions, batch {args.phase2_batch_size}; held-out at 512)",
                )
                continue
            axis.plot([p["step"] for p in points], [p[key] for p in points], linestyle=styles[name], label=LABELS[name])
        if key == "next_sentence_accuracy":
            axis.axhline(data["nsp_majority"], color="gray", linewidth=0.8, linestyle="--", label="majority class")
            axis.legend(fontsize=7)
        axis.set_title(title)
        axis.set_xlabel(f"training step (batch {args.batch_size})")
        axis.grid(alpha=0.3)
    axes[0].legend(fontsize=7)
    figure.suptitle(f"pretraining text: {TEXT_TITLES[args.pretraining_text]}", fontsize=10)
    figure.tight_layout()
    _save(figure, args.plot)


def plot_finetuning(finetuning, args):
    """One panel per task: the dev metric (mean and sd over seeds) against pretraining steps, a
    line per pretraining run, and random weights as a band (mean +- sd), as the paper's Appendix C.1."""
    plt = _pyplot()
    columns = min(2, len(finetuning))
    rows = math.ceil(len(finetuning) / columns)
    figure, axes = plt.subplots(rows, columns, figsize=(6.4 * columns, 4.4 * rows), squeeze=False)
    for axis, (task, arms) in zip(axes.flat, finetuning.items()):
        for arm, summary in arms.items():
            points = sorted(summary["points"].values(), key=lambda point: point["steps"])
            rate = f" (lr {points[0]['learning_rate']:g})" if points else ""
            if arm in MODELS:
                for point in points:
                    axis.axhline(point["mean"], color="gray", linewidth=1.2, label=LABELS[arm] + rate)
                    axis.axhspan(point["mean"] - point["sd"], point["mean"] + point["sd"], color="gray", alpha=0.2)
                continue
            axis.errorbar(
                [p["steps"] for p in points],
                [p["mean"] for p in points],
                yerr=[p["sd"] for p in points],
                marker="s",
                capsize=3,
                label=LABELS[arm] + rate,
            )
        axis.set_title(f"{task}: dev {TASK_METRIC[task][5:]} (mean and sd of {args.max_seeds} seeds)")
        axis.set_xlabel("pretraining steps")
        axis.set_xticks([0, args.steps // 4, args.steps // 2, args.steps])
        axis.grid(alpha=0.3)
        axis.legend(fontsize=7)
    for axis in list(axes.flat)[len(finetuning) :]:
        axis.set_visible(False)
    figure.suptitle(
        f"fine-tuning {args.finetune_epochs:g} epochs, each arm at the best seed-1 learning rate of "
        f"{args.finetune_learning_rate}; pretraining text: {TEXT_TITLES[args.pretraining_text]}",
        fontsize=10,
    )
    figure.tight_layout()
    _save(figure, args.finetune_plot)


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--work_dir", default="/tmp/pretraining_quality")
    parser.add_argument("--steps", type=int, default=800)
    parser.add_argument("--batch_size", type=int, default=32)
    parser.add_argument("--learning_rate", type=float, default=1e-3)
    parser.add_argument("--eval_every", type=int, default=100)
    parser.add_argument("--eval_every_512", type=int, default=25)
    parser.add_argument("--phase2_batch_size", type=int, default=16)
    parser.add_argument(
        "--eval_batches", type=int, default=16, help="held-out batches of 64 (16 at seq 512) per evaluation"
    )
    parser.add_argument("--dropout", type=float, default=0.1, help="hidden and attention dropout in pretraining")
    parser.add_argument("--mixed_precision", default="float32", help="Keras dtype policy of every pretraining run")
    parser.add_argument(
        "--pretraining_text",
        default="corpora",
        choices=sorted(TEXTS),
        help="; ".join(f"{name}: {title}" for name, title in TEXT_TITLES.items()),
    )
    parser.add_argument("--vocab_size", type=int, default=8000)
    parser.add_argument(
        "--seed", type=int, default=DEFAULT_SEED, help="initial weights and record order of every pretraining run"
    )
    parser.add_argument("--dupe_factor", type=int, default=3)
    parser.add_argument(
        "--finetune_learning_rate",
        default="1e-4,3e-4,1e-3",
        help="comma list: the sweep each fine-tuning arm picks its best rate from (seed 1)",
    )
    parser.add_argument("--finetune_epochs", type=float, default=2.0)
    parser.add_argument(
        "--finetune_from",
        default="ours_static",
        help="comma list of the runs fine-tuning starts from, of " + ", ".join(FINETUNE_SOURCES),
    )
    parser.add_argument(
        "--finetune_points",
        default="0,1/4,1/2,all",
        help="which pretraining points to fine-tune from (0: random weights), e.g. 0,1/4 while the rest trains",
    )
    parser.add_argument("--max_seeds", type=int, default=3, help="fine-tuning seeds per point at most")
    parser.add_argument("--tasks", default=",".join(TASKS), help="the fine-tuning tasks, of " + ", ".join(TASKS))
    parser.add_argument("--parallel_runs", type=int, default=1, help="runs at a time, each with its share of the cores")
    parser.add_argument("--threads_per_run", type=int, default=0, help="0: the cores over --parallel_runs")
    parser.add_argument("--runs", default=",".join((*PRETRAINING_RUNS, "phase2", "finetune")))
    parser.add_argument("--rerun", default="", help="comma list of runs to repeat although they have results")
    parser.add_argument("--plot", default=DEFAULT_PLOT)
    parser.add_argument(
        "--finetune_plot",
        default=os.path.join(REPO, "docs", "pretraining_gain.png"),
        help="the fine-tuning figure: dev metric against pretraining steps, per task",
    )
    parser.add_argument("--worker", default=None, help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.worker:
        return worker(args)
    # Fine-tuning reads its tasks whichever text pretraining reads.
    unknown = set(args.tasks.split(",")) - set(TASKS)
    if unknown:
        sys.exit(f"--tasks: {', '.join(sorted(unknown))}: use some of {', '.join(TASKS)}")
    unknown = set(args.finetune_from.split(",")) - set(FINETUNE_SOURCES)
    if unknown:
        sys.exit(f"--finetune_from: {', '.join(sorted(unknown))}: use some of {', '.join(FINETUNE_SOURCES)}")
    try:
        [float(rate) for rate in args.finetune_learning_rate.split(",")]
    except ValueError:
        sys.exit(f"--finetune_learning_rate={args.finetune_learning_rate}: give numbers, e.g. 1e-4,3e-4")
    needed = [os.path.join(SHARED_DATA, task, "dev.tsv") for task in args.tasks.split(",")]
    if args.pretraining_text == "corpora":
        needed += [os.path.join(CORPORA, name) for name in NAMES]
    missing = [path for path in needed if not os.path.isfile(path)]
    if missing:
        sys.exit(f"{missing[0]}: the shared data are missing")
    os.makedirs(args.work_dir, exist_ok=True)
    data = make_data(args.work_dir, args)
    log(f"vocabulary {data['vocab_size']} tokens; instances {data['instances']}")
    runs, rerun = args.runs.split(","), set(filter(None, args.rerun.split(",")))
    # Each compared pair adjacent, so that --parallel_runs=2 runs it side by side.
    order = (
        "ours_static",
        "model_garden",
        "ours_tiny_static",
        "model_garden_tiny",
        "ours_tiny_mlm",
        "ours_tiny_mask25",
        "ours_tiny_onecycle",
        "ours_dynamic",
        "phase2",
    )
    names = [name for name in order if name in runs]
    pretraining, finetuning = run_all(args, names, rerun)
    results = {name: pretraining[name] for name in order if name in pretraining}
    report(results, finetuning, data, args)
    # The default figure needs every run; a part of the bench draws only where --plot says.
    if results and (args.plot != DEFAULT_PLOT or all(name in results for name in PRETRAINING_RUNS)):
        plot(results, data, args)
        log(f"wrote {args.plot}")
    if finetuning:
        plot_finetuning(finetuning, args)
        log(f"wrote {args.finetune_plot}")


def report(results, finetuning, data, args):
    models = sorted({MODEL_OF[name] for name in results if name in MODEL_OF})
    shapes = ", ".join(f"BERT-{m} L{MODELS[m][0]}/H{MODELS[m][1]}/A{MODELS[m][2]}/I{MODELS[m][3]}" for m in models)
    tokens = data["tokens_per_instance"]
    print(
        f"\n{shapes or 'fine-tuning only'}; vocab {data['vocab_size']}, seq 128, 20 predictions, batch "
        f"{args.batch_size}, lr {args.learning_rate} (warmup {args.steps // 10}, linear decay), {args.steps} steps; "
        f"held-out: {data['instances']['heldout_128']:,} instances; training: "
        f"{data['instances']['train_static_128']:,} static (dupe_factor {args.dupe_factor}, "
        f"{tokens['train_static_128']:.1f} tokens each), {data['instances']['train_dynamic_128']:,} dynamic, "
        f"{data['instances']['train_fullsent_128']:,} full-sentence ({tokens['train_fullsent_128']:.1f} tokens each); "
        f"held-out NSP majority share {data['nsp_majority']:.4f}"
    )
    print("\n| run | step | held-out MLM accuracy | MLM loss | NSP accuracy | NSP loss | examples/s |")
    print("|---|---|---|---|---|---|---|")
    for name, result in results.items():
        if name == "phase2":
            continue
        for point in result["evaluations"]:
            if point["step"] in (args.steps // 4, args.steps // 2, args.steps):
                nsp = (
                    f"{point['next_sentence_accuracy']:.4f} | {point['next_sentence_loss']:.3f}"
                    if "next_sentence_accuracy" in point
                    else "- | -"
                )
                print(
                    f"| {name} | {point['step']} | {point['masked_lm_accuracy']:.4f} | {point['masked_lm_loss']:.3f} "
                    f"| {nsp} | {result['examples_per_second']:.1f} |"
                )
    if "phase2" in results:
        points = results["phase2"]["evaluations"]
        print("\n| phase 2 (seq 512) | held-out MLM accuracy at 512 | NSP accuracy | examples/s |")
        print("|---|---|---|---|")
        for point in (points[0], points[-1]):
            print(
                f"| +{point['step']} steps | {point['masked_lm_accuracy']:.4f} | "
                f"{point['next_sentence_accuracy']:.4f} | {results['phase2']['examples_per_second']:.1f} |"
            )
    if not finetuning:
        return
    rates = args.finetune_learning_rate.split(",")
    print(f"\nLearning-rate sweep (seed 1; random weights at 0 steps, a pretraining run at all {args.steps}):")
    print(f"\n| task (dev metric) | weights | {' | '.join(f'lr {rate}' for rate in rates)} |")
    print("|---|---|" + "---|" * len(rates))
    for task, arms in finetuning.items():
        for arm, summary in arms.items():
            values = " | ".join(f"{value:.4f}" for value in summary["sweep"].values())
            print(f"| {task} ({TASK_METRIC[task]}) | {LABELS[arm]} | {values} |")
    print("\n| task (dev metric) | weights | pretraining steps | lr | mean | sd | seeds 1, 2, 3 |")
    print("|---|---|---|---|---|---|---|")
    for task, arms in finetuning.items():
        for arm, summary in arms.items():
            for point in sorted(summary["points"].values(), key=lambda point: point["steps"]):
                print(
                    f"| {task} ({TASK_METRIC[task]}) | {LABELS[arm]} | {point['steps']} | {point['learning_rate']:g} "
                    f"| {point['mean']:.4f} | {point['sd']:.4f} | {', '.join(f'{v:.4f}' for v in point['values'])} |"
                )


if __name__ == "__main__":
    main()
