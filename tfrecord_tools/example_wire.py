"""`examples_to_bytes`: batches of features as serialized tf.train.Example records, written in the
protobuf wire format directly (numpy varints, cached framing); `to_example_bytes`, one record
through protobuf. The feature specs they check against live in `feature_specs`."""

import numpy as np
import tensorflow as tf

from keras_bert_common.errors import UsageError


def to_example_bytes(features, spec):
    """Serializes {name: values} as a tf.train.Example, checking names and lengths against `spec`."""
    if set(features) != set(spec):
        raise UsageError(f"features {sorted(features)} do not match the spec {sorted(spec)}")
    proto = {}
    for name, feature_spec in spec.items():
        if feature_spec.dtype == tf.string:  # one bytes value (shape [])
            proto[name] = tf.train.Feature(bytes_list=tf.train.BytesList(value=[bytes(features[name])]))
            continue
        values = np.asarray(features[name]).reshape(-1)
        if values.shape[0] != feature_spec.shape[0]:
            raise UsageError(f"feature {name} has {values.shape[0]} values, the spec wants {feature_spec.shape[0]}")
        if feature_spec.dtype == tf.float32:
            proto[name] = tf.train.Feature(float_list=tf.train.FloatList(value=values.astype(np.float32).tolist()))
        else:
            proto[name] = tf.train.Feature(int64_list=tf.train.Int64List(value=values.astype(np.int64).tolist()))
    return tf.train.Example(features=tf.train.Features(feature=proto)).SerializeToString()


def _varint_bytes(values):
    """Unsigned LEB128 of non-negative ints below 2**35, all at once: the encoded bytes of every
    value, concatenated in order, and the number of bytes of each value."""
    largest = int(values.max()) if values.size else 0
    values = values.astype(np.int32 if largest < 2**31 else np.int64)
    width = 1
    count = np.ones(values.shape, np.int8)
    while largest >= 1 << (7 * width):
        count += values >= (1 << (7 * width))
        width += 1
    groups = np.empty(values.shape + (width,), np.uint8)
    for k in range(width):
        groups[..., k] = (values >> (7 * k)) & 0x7F
        if k < width - 1:
            groups[..., k] |= (count > k + 1).astype(np.uint8) << 7
    used = np.arange(width, dtype=np.int8) < count[..., None]
    return groups[used].tobytes(), count


def _varint(value):
    out = bytearray()
    while True:
        byte = value & 0x7F
        value >>= 7
        if value:
            out.append(byte | 0x80)
        else:
            out.append(byte)
            return bytes(out)


_SMALL_VARINTS = [_varint(value) for value in range(1 << 14)]


def _framed(field_tag, payload):
    """A length-delimited protobuf field: tag byte, varint length, payload."""
    size = len(payload)
    return field_tag + (_SMALL_VARINTS[size] if size < 16384 else _varint(size)) + payload


def examples_to_bytes(features, spec):
    """Serializes a batch {name: [N, length] array} as N tf.train.Example records.

    Writes the protobuf wire format directly: the varints of a whole batch are computed at once in
    numpy and each feature's framing depends only on its payload length, so it is cached. Several
    times faster than building tf.train.Example objects. Rows holding negative or huge ints fall
    back to protobuf.
    """
    names = sorted(spec)
    if not names or not len(features[names[0]]):
        return []
    rows = {name: np.asarray(features[name]).reshape(len(features[name]), -1) for name in names}
    count = len(rows[names[0]]) if names else 0
    columns = []  # per feature: N entries of the Features map, each key + framed Feature
    fallback = np.zeros(count, bool)
    for name in names:
        feature_spec = spec[name]
        values = rows[name]
        if values.shape != (count, feature_spec.shape[0]):
            raise UsageError(
                f"feature {name} has shape {values.shape}, the spec wants ({count}, {feature_spec.shape[0]})"
            )
        if feature_spec.dtype == tf.float32:
            data = values.astype("<f4").tobytes()
            width = 4 * values.shape[1]
            payloads = [data[i * width : (i + 1) * width] for i in range(count)]
            kind = b"\x12"  # Feature.float_list
        else:
            values = values.astype(np.int64)
            fallback |= np.any((values < 0) | (values >= 2**35), axis=1)
            data, sizes = _varint_bytes(np.clip(values, 0, 2**35 - 1))
            ends = np.cumsum(sizes.sum(axis=1, dtype=np.int64)).tolist()
            payloads = [data[begin:end] for begin, end in zip([0] + ends[:-1], ends)]
            kind = b"\x1a"  # Feature.int64_list
        key = _framed(b"\x0a", name.encode())
        headers = {}  # payload length -> everything of the map entry before the payload
        entries = []
        for payload in payloads:
            header = headers.get(len(payload))
            if header is None:
                entry = _framed(b"\x0a", key + _framed(b"\x12", _framed(kind, _framed(b"\x0a", payload))))
                header = headers[len(payload)] = entry[: len(entry) - len(payload)]
            entries.append(header + payload)
        columns.append(entries)
    records = []
    for index, parts in enumerate(zip(*columns)):
        if fallback[index]:
            records.append(to_example_bytes({name: rows[name][index] for name in names}, spec))
        else:
            records.append(_framed(b"\x0a", b"".join(parts)))  # Example.features
    return records
