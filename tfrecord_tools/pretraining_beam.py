"""The Apache Beam pipeline of create_pretraining_data: the local tool's units and its per-unit
instance maker (`UnitMaker`), on any Beam runner (DirectRunner, DataflowRunner, FlinkRunner,
SparkRunner), reading and writing through Beam's file systems (local, gs://, hdfs://).

    Create(units) -> Reshuffle -> ParDo(the unit's records) -> WriteToTFRecord(OUTPUT, num_shards)

gives OUTPUT-00000-of-000NN: the same set of serialized tf.train.Examples as the local tool with the
same flags, in another order. The shards are written under a temporary prefix and renamed when the
pipeline succeeded; a failed or stopped run removes them and Beam's temporary directory.
`--beam_pipeline_options` follows TensorFlow Datasets: comma-separated `key=value` pipeline flags.
Needs `pip install .[beam]`; nothing else in the project imports this module.
"""

import dataclasses
import os

from keras_bert_common import stop
from keras_bert_common.errors import UsageError
from keras_bert_common.files import is_temporary, temporary_name
from tfrecord_tools.pretraining_data import Summary, UnitMaker, check_vocab
from tfrecord_tools.pretraining_units import plan_units

DEFAULT_BEAM_SHARDS = 16
_COUNTERS = "create_pretraining_data"


def pipeline_options(text):
    """TFDS's convention: "runner=DirectRunner,direct_num_workers=2" -> PipelineOptions. The SDK
    workers log at WARNING unless the options say otherwise (their INFO lines are per bundle)."""
    from apache_beam.options.pipeline_options import PipelineOptions

    flags = [f"--{option.strip()}" for option in text.split(",") if option.strip()]
    if not any(flag.startswith("--default_sdk_harness_log_level") for flag in flags):
        flags.append("--default_sdk_harness_log_level=WARNING")
    return PipelineOptions(flags)


def check_file_system(path, flag):
    """Before any work: Beam has a working file system for `path` (gs:// needs apache-beam[gcp],
    s3:// apache-beam[aws] and its credentials), asked with one `exists`."""
    from apache_beam.io.filesystems import FileSystems

    extra = "install its extra (pip install apache-beam[gcp] for gs://, [aws] for s3://)"
    try:
        FileSystems.get_filesystem(path)
    except ValueError:
        scheme = path.split("://", 1)[0] if "://" in path else "this"
        raise UsageError(
            f"{path}: Apache Beam has no file system for {scheme} paths here; {extra} or check {flag}"
        ) from None
    try:
        FileSystems.exists(path)
    except Exception as error:  # noqa: BLE001 -- each file system fails its own way (BeamIOError, ValueError, ...)
        causes = getattr(error, "exception_details", None) or {}
        reason = "; ".join(str(cause) for cause in causes.values()) or str(error)
        raise UsageError(f"{path}: Apache Beam cannot reach it ({reason}); {extra}, or check {flag}") from None


def _match(patterns):
    """(path, size) of every file the comma list of globs matches, through Beam's file systems."""
    from apache_beam.io.filesystems import FileSystems

    files = []
    for pattern in filter(None, (part.strip() for part in patterns.split(","))):
        check_file_system(pattern, "--input_file")
        found = sorted((m.path, m.size_in_bytes) for m in FileSystems.match([pattern])[0].metadata_list)
        found = [(path, size) for path, size in found if not is_temporary(path)]  # an interrupted writer's
        if not found:
            raise FileNotFoundError(f"{pattern}: no file matches; check --input_file")
        files.extend(found)
    return files


def _make_records_fn(options):
    import apache_beam as beam
    from apache_beam.io.filesystems import FileSystems

    class MakeRecords(beam.DoFn):
        """One unit -> its serialized instances; the summary goes to Beam counters."""

        def __init__(self, options):
            self._options = options
            self._maker = None

        def setup(self):
            self._maker = UnitMaker(self._options)

        def process(self, unit):
            records, summary = self._maker.make(unit, opener=lambda path: FileSystems.open(path))
            for field in dataclasses.fields(summary):
                beam.metrics.Metrics.counter(_COUNTERS, field.name).inc(getattr(summary, field.name))
            yield from records

    return MakeRecords(options)


def _summary(result):
    from apache_beam.metrics.metric import MetricsFilter

    summary = Summary()
    for counter in result.metrics().query(MetricsFilter().with_namespace(_COUNTERS))["counters"]:
        setattr(summary, counter.key.metric.name, getattr(summary, counter.key.metric.name) + counter.committed)
    return summary


def _shard_names(prefix, num_shards):
    return [f"{prefix}-{index:05d}-of-{num_shards:05d}" for index in range(num_shards)]


def run_beam_pipeline(
    input_patterns, output_prefix, options, beam_pipeline_options, num_shards=DEFAULT_BEAM_SHARDS, log=print
):
    """Runs the pipeline; returns the `Summary` (from Beam's counters) and the shard paths."""
    import apache_beam as beam
    from apache_beam.io.filesystems import FileSystems

    check_vocab(options.vocab_file)
    check_file_system(output_prefix, "--output_file")
    files = _match(input_patterns)
    sizes = dict(files)
    units = plan_units([path for path, _ in files], options.unit_bytes, size_of=sizes.__getitem__)
    if not sum(unit.text_bytes for unit in units):
        raise UsageError(f"{input_patterns}: hold no text; check --input_file")
    temporary = temporary_name(output_prefix)
    final, staged = _shard_names(output_prefix, num_shards), _shard_names(temporary, num_shards)
    log(f"{len(units)} units of text in {len(files)} file(s) -> {output_prefix}-*-of-{num_shards:05d}")
    committed = False
    try:
        pipeline = beam.Pipeline(options=pipeline_options(beam_pipeline_options))
        _ = (
            pipeline
            | "Units" >> beam.Create(units)
            | "Spread" >> beam.Reshuffle()
            | "Instances" >> beam.ParDo(_make_records_fn(options))
            | "Write" >> beam.io.WriteToTFRecord(temporary, num_shards=num_shards)
        )
        result = pipeline.run()
        result.wait_until_finish()
        summary = _summary(result)
        if not summary.documents:
            raise UsageError(f"{input_patterns}: hold no text (only blank lines); check --input_file")
        stop.raise_if_requested()  # a signal while Beam ran: keep nothing
        FileSystems.rename(staged, final)
        committed = True
    finally:
        if not committed:
            leftovers = [path for path in staged if FileSystems.exists(path)]
            directory = os.path.dirname(output_prefix) or "."
            prefix = f"beam-temp-{os.path.basename(temporary)}-"
            leftovers += [
                m.path for m in FileSystems.match([FileSystems.join(directory, prefix + "*")])[0].metadata_list
            ]
            if leftovers:
                FileSystems.delete(sorted({path.rstrip("/") for path in leftovers}))
    return summary, final
