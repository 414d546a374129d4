"""`get_distribution_strategy`: the tf.distribute strategy a run's flags ask for; which worker
is the chief and which input pipeline is this worker's."""

import json
import os

import tensorflow as tf

from keras_bert_common.errors import UsageError

STRATEGIES = ("auto", "one_device", "mirrored", "multi_worker_mirrored", "tpu")


def _tf_config_workers():
    try:
        cluster = json.loads(os.environ.get("TF_CONFIG", "{}")).get("cluster", {})
    except json.JSONDecodeError as error:
        raise UsageError(f"TF_CONFIG is not valid JSON ({error}); see tf.distribute's TF_CONFIG format") from None
    return len(cluster.get("worker", [])) + len(cluster.get("chief", []))


def get_distribution_strategy(distribution_strategy="auto", tpu=None, tpu_zone=None, gcp_project=None):
    """TPUStrategy for `tpu`; MultiWorkerMirroredStrategy from TF_CONFIG; MirroredStrategy over
    the local GPUs (or logical CPUs, when asked for explicitly); else one device."""
    if distribution_strategy not in STRATEGIES:
        raise UsageError(f"--distribution_strategy={distribution_strategy}: use one of {', '.join(STRATEGIES)}")
    if tpu or distribution_strategy == "tpu":
        try:
            resolver = tf.distribute.cluster_resolver.TPUClusterResolver(
                tpu=tpu or "", zone=tpu_zone, project=gcp_project
            )
            tf.config.experimental_connect_to_cluster(resolver)
            tf.tpu.experimental.initialize_tpu_system(resolver)
        except Exception as error:  # noqa: BLE001 -- the resolver raises many kinds; all mean "no TPU"
            first_line = str(error).strip().splitlines()[0] if str(error).strip() else type(error).__name__
            raise UsageError(
                f"--tpu={tpu or ''}: no TPU found ({first_line}); check --tpu, --tpu_zone and --gcp_project"
            ) from None
        return tf.distribute.TPUStrategy(resolver)
    if distribution_strategy == "multi_worker_mirrored" or (
        distribution_strategy == "auto" and _tf_config_workers() > 1
    ):
        return tf.distribute.MultiWorkerMirroredStrategy()
    gpus = tf.config.list_logical_devices("GPU")
    if distribution_strategy == "mirrored":
        devices = gpus or tf.config.list_logical_devices("CPU")
        return tf.distribute.MirroredStrategy([device.name for device in devices])
    if distribution_strategy == "auto" and len(gpus) > 1:
        return tf.distribute.MirroredStrategy()
    return tf.distribute.OneDeviceStrategy(gpus[0].name if gpus else "/cpu:0")


def is_chief(strategy):
    """Whether this worker writes the shared checkpoints and summaries."""
    resolver = getattr(strategy, "cluster_resolver", None)
    if resolver is None or not isinstance(strategy, tf.distribute.MultiWorkerMirroredStrategy):
        return True
    return resolver.task_type in (None, "chief") or (
        resolver.task_type == "worker" and resolver.task_id == 0 and "chief" not in resolver.cluster_spec().as_dict()
    )


def input_pipeline_of(strategy):
    """(this worker's input pipeline id, number of pipelines): one pipeline per worker."""
    if isinstance(strategy, tf.distribute.MultiWorkerMirroredStrategy):
        resolver = strategy.cluster_resolver
        workers = resolver.cluster_spec().as_dict()
        order = [("chief", i) for i in range(len(workers.get("chief", [])))]
        order += [("worker", i) for i in range(len(workers.get("worker", [])))]
        return order.index((resolver.task_type, resolver.task_id)), len(order)
    return 0, 1
