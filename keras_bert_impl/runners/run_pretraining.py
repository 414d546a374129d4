"""`run_pretraining`: what run_pretraining.py does, as a library function over `PretrainingOptions`."""

import dataclasses
import json
import os
import time

import tensorflow as tf

from keras_bert_common.errors import UsageError
from keras_bert_common.files import describe_files, expand_file_patterns, is_remote, read_bytes
from keras_bert_impl.checkpoints.google_checkpoint import save_google_checkpoint
from keras_bert_impl.checkpoints.init_checkpoint import restore_optimizer
from keras_bert_impl.models.bert_config import BertConfig
from keras_bert_impl.runners.outputs import write_eval_results
from keras_bert_impl.tasks.pretraining import MaskedLMTask, PretrainingTask
from keras_bert_impl.training.bucketing import training_bucketing
from keras_bert_impl.training.input_pipeline import embedding_tables, make_tfrecord_dataset, reading
from keras_bert_impl.training.run_setup import RunOptions, RunResult, RunSetup
from keras_bert_impl.training.trainer import EvalSchedule
from tfrecord_tools import feature_specs, tfrecord_files


class PretrainingData:
    """The TFRecords of one split: masked ones (Google's) as they are, unmasked ones
    (--dynamic_masking) masked in tf.data every time they are read, with Google's rules."""

    def __init__(self, files, task, options, setup, is_training):
        self.files, self.options, self.setup, self.is_training = files, options, setup, is_training
        self.task = task
        self.dynamic = feature_specs.is_dynamic_pretraining(feature_specs.detect_feature_names(files[0]))
        if self.dynamic:
            if not 0 < options.masked_lm_prob <= 1:
                raise UsageError(f"--masked_lm_prob={options.masked_lm_prob}: must be a probability in (0, 1]")
            self.spec = feature_specs.dynamic_pretraining_spec(options.max_seq_length, task.next_sentence_prediction)
            setup.log(f"{files[0]}: unmasked records: masking in tf.data (dynamic masking)")
        else:
            self.spec = task.feature_spec()
            if options.do_whole_word_mask or options.masked_lm_prob != 0.15:
                raise UsageError(
                    f"{files[0]}: these records are masked already; --do_whole_word_mask and --masked_lm_prob "
                    "apply to records made with create_pretraining_data --dynamic_masking"
                )
        # Every shard before training: whole (about 2 seconds per million records), of the kind
        # and lengths the flags ask for (stale shards of another run beside them fail here, not
        # deep in tf.data), its first records' ids inside the vocabulary; a Wikipedia-size set
        # says how far it is.
        start = last = time.monotonic()
        for done, path in enumerate(files, 1):
            tfrecord_files.check_records_match(
                path, self.spec, "pretraining records", vocab_size=task.bert_config.vocab_size
            )
            if time.monotonic() - last > 30:
                last = time.monotonic()
                setup.log(f"checking the input files: {done}/{len(files)}")
        if last > start:
            setup.log(f"checked {len(files)} input files in {time.monotonic() - start:.0f} s")
        self.vocab_size = task.bert_config.vocab_size

    def input_flags(self, global_batch_size):
        """What the data position in a checkpoint depends on: a resume with other values would fail
        deep in tf.data (other shapes or features) or read another stream (other masks)."""
        options = self.options
        flags = {
            "--input_file": [path if is_remote(path) else os.path.abspath(path) for path in self.files],
            "--train_batch_size": global_batch_size,
            "--next_sentence_prediction": self.task.next_sentence_prediction,
            "--max_seq_length": options.max_seq_length,
            "--max_predictions_per_seq": options.max_predictions_per_seq,
            "--pad_to_max_seq_length": options.pad_to_max_seq_length,
        }
        if self.dynamic:
            flags.update(
                {"--masked_lm_prob": options.masked_lm_prob, "--do_whole_word_mask": options.do_whole_word_mask}
            )
        return flags

    def dataset(self, global_batch_size):
        options, setup = self.options, self.setup
        example_fn = None
        if self.dynamic:
            from tfrecord_tools.dynamic_masking import masker

            # Each worker's stream gets its own masks; evaluation always the same ones.
            seed = options.random_seed * 1000 + setup.pipeline_id if self.is_training else 0
            example_fn = masker(
                self.vocab_size,
                options.max_predictions_per_seq,
                options.masked_lm_prob,
                options.do_whole_word_mask,
                seed,
            )
        # Training batches are length-bucketed (20% of the positions at 512 are padding; see the
        # README); evaluation reads Google's fixed shapes, so --max_eval_steps covers the same examples.
        bucketing = None
        if self.is_training:
            bucketing = training_bucketing(
                self.task, options.max_seq_length, setup.strategy, options.pad_to_max_seq_length
            )
        return make_tfrecord_dataset(
            self.files,
            self.spec,
            setup.per_pipeline_batch(global_batch_size),
            self.is_training,
            setup.pipeline_id,
            setup.num_pipelines,
            seed=options.random_seed if self.is_training else None,
            example_fn=example_fn,
            bucketing=bucketing,
        )


@dataclasses.dataclass(kw_only=True)
class PretrainingOptions(RunOptions):
    """Google's run_pretraining.py flags (same names and defaults) beyond the shared ones."""

    input_file: str
    eval_input_file: str = None
    max_predictions_per_seq: int = 20
    num_train_steps: int = 100000
    num_warmup_steps: int = 10000
    max_eval_steps: int = 100
    export_google_checkpoint: bool = True
    # None: from the records (masked-LM-only records train the masked LM alone); False also trains
    # Google's records without their next-sentence labels (RoBERTa's "SEGMENT-PAIR" without NSP).
    next_sentence_prediction: bool = None
    # Dynamic masking (records from create_pretraining_data.py --dynamic_masking): Google's names.
    masked_lm_prob: float = 0.15
    do_whole_word_mask: bool = False
    # With --init_checkpoint (a run's output_dir): also its optimizer state and step (phase 2 that
    # continues phase 1's schedule); without, the optimizer restarts, as Google's --init_checkpoint.
    continue_optimizer: bool = False


def pretraining_task_class(files, next_sentence_prediction, log=print):
    """`PretrainingTask` (MLM + NSP) or `MaskedLMTask` (MLM alone): what the records hold, unless
    --next_sentence_prediction says otherwise; records without labels cannot train NSP."""
    has_labels = feature_specs.has_next_sentence_labels(feature_specs.detect_feature_names(files[0]))
    if next_sentence_prediction and not has_labels:
        raise UsageError(
            f"{files[0]}: masked-LM-only records (no next_sentence_labels) cannot train next-sentence prediction; "
            "drop --next_sentence_prediction, or remake them without --nonext_sentence_prediction"
        )
    if next_sentence_prediction is False or not has_labels:
        why = "as --nonext_sentence_prediction says" if has_labels else "the records have no next-sentence labels"
        log(f"masked LM only, no next-sentence head ({why})")
        return MaskedLMTask
    return PretrainingTask


# What a resumed run may not change in its bert_config.json (dropout may change between runs).
_ARCHITECTURE_KEYS = (
    "vocab_size",
    "hidden_size",
    "num_hidden_layers",
    "num_attention_heads",
    "intermediate_size",
    "hidden_act",
    "max_position_embeddings",
    "type_vocab_size",
)


def check_output_dir(options, config):
    """Before any work: a run's checkpoints continue only under the config they were trained with
    (a head count or activation keeps every weight's shape, so the checkpoint alone cannot tell),
    and a model put into --output_dir by hand (a released bert_model.ckpt) is never overwritten."""
    output_dir = options.output_dir
    if not tf.io.gfile.isdir(output_dir):  # gs:// too: TPU runs keep their output_dir there
        return
    trained = tf.train.latest_checkpoint(output_dir)
    config_path = os.path.join(output_dir, "bert_config.json")
    if trained and tf.io.gfile.exists(config_path):
        try:
            saved = BertConfig.from_dict(json.loads(read_bytes(config_path)), source=config_path)
        except (UsageError, ValueError):
            return  # not ours: the checkpoint restore compares the shapes
        changed = [key for key in _ARCHITECTURE_KEYS if getattr(saved, key) != getattr(config, key)]
        if changed:
            # No --init_checkpoint alternative: it, too, compares shapes only.
            raise UsageError(
                f"{config_path}: the checkpoints in {output_dir} were trained with "
                + ", ".join(f"{key}={getattr(saved, key)!r}" for key in changed)
                + f", not {', '.join(repr(getattr(config, key)) for key in changed)} as {options.bert_config_file} "
                f"says; resume with --bert_config_file={config_path}, or train this model in a new --output_dir"
            )
    if options.do_train and options.export_google_checkpoint and not trained:
        if tf.io.gfile.glob(os.path.join(output_dir, "bert_model.ckpt*.index")):
            raise UsageError(
                f"{output_dir}: holds a bert_model.ckpt that no run there trained (no ckpt-N beside it), which "
                f"training would overwrite; pass another --output_dir (--init_checkpoint={output_dir} starts "
                "from that model)"
            )


def run_pretraining(options, log=print):
    """Trains and/or evaluates; returns a `RunResult` (the training history, the eval results)."""
    if not (options.do_train or options.do_eval):
        raise UsageError("at least one of --do_train or --do_eval must be True")
    if options.do_train and options.num_train_steps < 1:
        raise UsageError(f"--num_train_steps={options.num_train_steps}: must be at least 1 with --do_train")
    if options.num_warmup_steps < 0:
        raise UsageError(f"--num_warmup_steps={options.num_warmup_steps}: must be 0 or more")
    if not 1 <= options.max_predictions_per_seq <= options.max_seq_length:
        raise UsageError(
            f"--max_predictions_per_seq={options.max_predictions_per_seq}: must be between 1 and "
            f"--max_seq_length={options.max_seq_length} (Google's default at 128 is 20)"
        )
    train_files = expand_file_patterns(options.input_file, example="*.tfrecord", log=log) if options.do_train else None
    eval_files = (
        expand_file_patterns(
            options.eval_input_file or options.input_file,
            "--eval_input_file" if options.eval_input_file else "--input_file",
            example="*.tfrecord",
            log=log,
        )
        if options.do_eval
        else None
    )
    for name, files in (("training", train_files), ("evaluation", eval_files)):
        if files:
            log(f"{name} reads {len(files)} file{'s' if len(files) > 1 else ''}: {describe_files(files)}")
    setup = RunSetup(options, log)
    check_output_dir(options, setup.config)
    task_class = pretraining_task_class(train_files or eval_files, options.next_sentence_prediction, log)
    task = task_class(setup.config, options.max_seq_length, options.max_predictions_per_seq)
    # The records' kind (masked, or unmasked for dynamic masking) and lengths against the flags,
    # before anything is built or written.
    datasets = {}
    for name, files in (("train", train_files), ("eval", eval_files)):
        if files:
            datasets[name] = PretrainingData(files, task, options, setup, is_training=name == "train")
    if options.continue_optimizer and not options.init_checkpoint:
        raise UsageError("--continue_optimizer needs --init_checkpoint (the first phase's --output_dir)")
    model = setup.build(task, options.num_train_steps, options.num_warmup_steps)
    trainer = setup.trainer
    if options.continue_optimizer and not tf.train.latest_checkpoint(options.output_dir):
        step = restore_optimizer(trainer.optimizer, options.init_checkpoint)
        log(f"continuing the optimizer of {options.init_checkpoint} at step {step}")
        if step >= options.num_train_steps:
            raise UsageError(
                f"--num_train_steps={options.num_train_steps}: the first phase already ran {step} steps; "
                "with --continue_optimizer it counts both phases"
            )

    def eval_dataset():
        return datasets["eval"].dataset(options.eval_batch_size)

    schedule = (
        EvalSchedule(
            options.eval_every_n_steps if options.do_train else None,
            lambda: trainer.evaluate(eval_dataset(), options.max_eval_steps),
        )
        if options.do_eval
        else None
    )
    if options.do_train:
        if trainer.is_chief and not tf.train.latest_checkpoint(options.output_dir):
            # Beside the first checkpoint, so a resume after a kill is checked against it too.
            setup.config.to_json_file(os.path.join(options.output_dir, "bert_config.json"))
        dataset = datasets["train"].dataset(options.train_batch_size)
        with reading(train_files + (eval_files or []), embedding_tables(setup.config)):
            result = trainer.train(
                dataset,
                options.num_train_steps,
                options.train_batch_size,
                eval_schedule=schedule,
                input_flags=datasets["train"].input_flags(options.train_batch_size),
            )
        if options.export_google_checkpoint and trainer.is_chief:
            prefix = save_google_checkpoint(model, os.path.join(options.output_dir, "bert_model.ckpt"))
            setup.config.to_json_file(os.path.join(options.output_dir, "bert_config.json"))
            log(f"wrote {prefix} under Google's variable names")
        if schedule is None:
            return RunResult(train=result)
        results = dict(result.evaluations[-1])
    else:
        result = None
        latest = trainer.restore_latest()
        if latest:
            log(f"evaluating {latest}")
        with reading(eval_files, embedding_tables(setup.config)):
            results = trainer.record_evaluation(schedule)
    results.pop("step", None)
    results["global_step"] = trainer.global_step
    if trainer.is_chief:
        write_eval_results(results, os.path.join(options.output_dir, "eval_results.txt"))
    return RunResult(train=result, eval=results)
