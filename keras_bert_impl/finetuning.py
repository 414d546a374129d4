"""What every fine-tuning runner shares: options, checks, model set-up, training and prediction.

The runners (run_classifier.py, run_squad.py, run_ner.py, run_swag.py) only turn their data into
feature arrays and their predictions into output files; everything in between is here.
"""

import dataclasses
import math
import os

import keras
import numpy as np
import tensorflow as tf

from keras_bert_impl.bert_config import BertConfig
from keras_bert_impl.distribution_options import DistributionOptions
from keras_bert_impl.distribution_utils import get_distribution_strategy
from keras_bert_impl.init_checkpoint import initialize_from_checkpoint
from keras_bert_impl.input_pipeline import make_tfrecord_dataset
from keras_bert_impl.optimization import create_optimizer
from keras_bert_impl.trainer import Trainer, input_pipeline_of
from tfrecord_tools import feature_specs


@dataclasses.dataclass(kw_only=True)
class FineTuningOptions(DistributionOptions):
    """Google's common run_classifier.py / run_squad.py flags, plus the scaling flags."""

    bert_config_file: str
    vocab_file: str
    output_dir: str
    init_checkpoint: str = None
    do_lower_case: bool = True
    max_seq_length: int = 128
    do_train: bool = False
    do_eval: bool = False
    do_predict: bool = False
    train_batch_size: int = 32
    eval_batch_size: int = 8
    predict_batch_size: int = 8
    learning_rate: float = 5e-5
    num_train_epochs: float = 3.0
    warmup_proportion: float = 0.1
    save_checkpoints_steps: int = 1000
    iterations_per_loop: int = 1000
    export_dir: str = None


class FineTuningRun:
    """Config, tokenizer, strategy and (once `build` is called) model and trainer of one run."""

    def __init__(self, options, log=print):
        from tfrecord_tools.tokenization import FullTokenizer, validate_case_matches_checkpoint

        if not (options.do_train or options.do_eval or options.do_predict):
            raise ValueError("at least one of --do_train, --do_eval or --do_predict must be True")
        self.options = options
        self.log = log
        self.config = BertConfig.from_json_file(options.bert_config_file)
        if not os.path.isfile(options.vocab_file):
            raise FileNotFoundError(f"{options.vocab_file}: no such file; pass --vocab_file=PATH/vocab.txt")
        self.tokenizer = FullTokenizer(options.vocab_file, do_lower_case=options.do_lower_case)
        self.config.check_vocab_size(len(self.tokenizer.inv_vocab), options.vocab_file, options.bert_config_file)
        validate_case_matches_checkpoint(options.do_lower_case, options.init_checkpoint)
        self.config.check_max_seq_length(options.max_seq_length, options.bert_config_file)
        keras.mixed_precision.set_global_policy(options.mixed_precision)
        keras.utils.set_random_seed(options.random_seed)
        self.strategy = get_distribution_strategy(options.distribution_strategy, options.tpu, options.tpu_zone,
                                                  options.gcp_project)
        os.makedirs(options.output_dir, exist_ok=True)
        self.task = self.model = self.trainer = None

    def build(self, task, num_train_steps=1):
        """Model (from --init_checkpoint), optimizer and trainer for `task`."""
        options = self.options
        self.task = task
        with self.strategy.scope():
            self.model = task.build_model()
            if options.init_checkpoint:
                report = initialize_from_checkpoint(self.model, options.init_checkpoint)
                self.log(f"init_checkpoint {options.init_checkpoint}: {report.summary()}")
            optimizer = create_optimizer(options.learning_rate, num_train_steps,
                                         int(num_train_steps * options.warmup_proportion), options.optimizer)
            if options.mixed_precision == "mixed_float16":
                optimizer = keras.optimizers.LossScaleOptimizer(optimizer)
        self.trainer = Trainer(
            self.strategy, task, self.model, optimizer, options.output_dir,
            steps_per_loop=options.iterations_per_loop, save_checkpoints_steps=options.save_checkpoints_steps,
            jit_compile=options.jit_compile, gradient_accumulation_steps=options.gradient_accumulation_steps,
            log=self.log,
        )
        return self.model

    def num_train_steps(self, num_examples):
        return max(1, int(num_examples / self.options.train_batch_size * self.options.num_train_epochs))

    def train(self, features, num_train_steps):
        """Writes OUTPUT_DIR/train.tf_record from feature arrays (as Google's runners) and trains."""
        options = self.options
        replicas = self.strategy.num_replicas_in_sync * options.gradient_accumulation_steps
        if options.train_batch_size % replicas:
            raise ValueError(f"--train_batch_size={options.train_batch_size} must be a multiple of {replicas}")
        spec = self.task.feature_spec(is_training=True)
        path = os.path.join(options.output_dir, "train.tf_record")
        if self.trainer.is_chief or not os.path.exists(path):
            feature_specs.write_tfrecord(feature_specs.examples_to_bytes(features, spec), path)
        pipeline_id, pipelines = input_pipeline_of(self.strategy)
        dataset = make_tfrecord_dataset([path], spec, options.train_batch_size // pipelines, True, pipeline_id, pipelines,
                                        seed=options.random_seed)
        self.log(f"training {num_train_steps} steps of {options.train_batch_size} examples")
        return self.trainer.train(dataset, num_train_steps, options.train_batch_size)

    def restore_latest(self):
        """For --do_eval / --do_predict without --do_train: the newest checkpoint of output_dir."""
        latest = self.trainer.restore_latest()
        if latest:
            self.log(f"restored {latest}")
        elif not self.options.init_checkpoint:
            self.log("warning: no checkpoint in output_dir and no --init_checkpoint: predicting with random weights")

    def export(self, model_type, label_names=None, **kwargs):
        """With --export_dir: the trained model as a SavedModel serving raw text."""
        if not self.options.export_dir or not self.trainer.is_chief:
            return None
        from keras_bert_impl.export import export_saved_model

        path = export_saved_model(self.model, model_type, self.options.vocab_file, self.options.do_lower_case,
                                  self.options.max_seq_length, self.options.export_dir, label_names, force=True, **kwargs)
        self.log(f"exported a SavedModel to {path}")
        return path

    def predict(self, features, batch_size):
        """Model outputs for feature arrays, as numpy arrays in input order."""
        inputs = {name: np.asarray(features[name], np.int32) for name in ("input_ids", "input_mask", "segment_ids")}
        count = len(inputs["input_ids"])
        # Pad to whole batches (static shapes, as TPUs need); the padding rows are dropped.
        padded = math.ceil(count / batch_size) * batch_size
        inputs = {name: np.concatenate([value, np.zeros((padded - count,) + value.shape[1:], value.dtype)])
                  for name, value in inputs.items()}
        step = tf.function(lambda batch: self.model(self.task.model_inputs(batch), training=False))
        outputs = []
        for batch in tf.data.Dataset.from_tensor_slices(inputs).batch(batch_size):
            outputs.append({name: value.numpy() for name, value in step(batch).items()})
        return {name: np.concatenate([output[name] for output in outputs])[:count] for name in outputs[0]}


def softmax(logits):
    logits = np.asarray(logits, np.float64)
    exps = np.exp(logits - logits.max(axis=-1, keepdims=True))
    return exps / exps.sum(axis=-1, keepdims=True)


def cross_entropy(logits, labels):
    probabilities = softmax(logits)
    return float(np.mean(-np.log(np.take_along_axis(probabilities, np.asarray(labels)[..., None], axis=-1) + 1e-12)))
