"""sentence-transformers' pooling files: `modules.json` and `1_Pooling/config.json` beside a model
read into (pooling, normalize), and written so that sentence-transformers loads our exports."""

import json
import os

from keras_bert_common.errors import UsageError
from keras_bert_common.files import atomic_output

MODULES = "modules.json"
POOLING_DIR = "1_Pooling"
# sentence-transformers' pooling_mode_* keys we serve, by our --pooling name.
MODES = {"cls": "pooling_mode_cls_token", "mean": "pooling_mode_mean_tokens", "max": "pooling_mode_max_tokens"}
_TRANSFORMER, _POOLING, _NORMALIZE = (
    "sentence_transformers.models." + name for name in ("Transformer", "Pooling", "Normalize")
)


def model_directory(path):
    """The directory a --init_checkpoint names: itself, or the one holding its checkpoint prefix."""
    return path if os.path.isdir(path) else os.path.dirname(path) or "."


def read_pooling(directory):
    """{"pooling", "normalize_embeddings"} from a sentence-transformers directory, or None when it is not one."""
    modules_file = os.path.join(directory, MODULES)
    if not os.path.isfile(modules_file):
        return None
    try:
        with open(modules_file, encoding="utf-8") as reader:
            modules = json.load(reader)
        pooling = next((module for module in modules if module.get("type") == _POOLING), None)
        if pooling is None:
            return None
        config_file = os.path.join(directory, pooling.get("path", POOLING_DIR), "config.json")
        with open(config_file, encoding="utf-8") as reader:
            config = json.load(reader)
    except (OSError, ValueError, AttributeError) as error:
        raise UsageError(f"{modules_file}: not sentence-transformers' modules ({error}); fix or remove it") from None
    chosen = [name for name, key in MODES.items() if config.get(key)]
    others = sorted(key for key, value in config.items() if key.startswith("pooling_mode_") and value)
    if len(chosen) != 1 or len(others) != 1:
        raise UsageError(
            f"{config_file}: pools with {', '.join(others) or 'nothing'}; only one of "
            f"{', '.join(MODES.values())} is served (pass --pooling to choose)"
        )
    return {"pooling": chosen[0], "normalize_embeddings": any(module.get("type") == _NORMALIZE for module in modules)}


def write_pooling(directory, pooling, normalize, dimension):
    """Writes sentence-transformers' modules.json and 1_Pooling/config.json into `directory`."""
    modules = [
        {"idx": 0, "name": "0", "path": "", "type": _TRANSFORMER},
        {"idx": 1, "name": "1", "path": POOLING_DIR, "type": _POOLING},
    ]
    if normalize:
        modules.append({"idx": 2, "name": "2", "path": "2_Normalize", "type": _NORMALIZE})
    config = {"word_embedding_dimension": dimension, "pooling_mode_mean_sqrt_len_tokens": False}
    config.update({key: name == pooling for name, key in MODES.items()})
    os.makedirs(os.path.join(directory, POOLING_DIR), exist_ok=True)
    with atomic_output(os.path.join(directory, MODULES)) as writer:
        json.dump(modules, writer, indent=2)
    with atomic_output(os.path.join(directory, POOLING_DIR, "config.json")) as writer:
        json.dump(config, writer, indent=2)


def copy_pooling(source_directory, directory, dimension):
    """Carries a sentence-transformers model's pooling into a converted directory; returns it (or None)."""
    found = read_pooling(source_directory)
    if found:
        write_pooling(directory, found["pooling"], found["normalize_embeddings"], dimension)
    return found


def resolve_pooling(pooling, normalize, init_checkpoint, log=print):
    """--pooling / --normalize_embeddings, defaulting to the pooling files beside `init_checkpoint`
    (a sentence-transformers model), else mean pooling without normalisation."""
    found = read_pooling(model_directory(init_checkpoint)) if init_checkpoint else None
    source = f"{model_directory(init_checkpoint)}/{MODULES}" if found else "the default"
    found = found or {"pooling": "mean", "normalize_embeddings": False}
    resolved = {
        "pooling": pooling if pooling is not None else found["pooling"],
        "normalize_embeddings": normalize if normalize is not None else found["normalize_embeddings"],
    }
    log(
        f"sentence embeddings: {resolved['pooling']} pooling"
        f"{', L2-normalised' if resolved['normalize_embeddings'] else ''} (unset flags from {source})"
    )
    return resolved
