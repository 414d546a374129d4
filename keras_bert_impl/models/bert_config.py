"""`BertConfig`: Google's `bert_config.json`, read, validated and written in the same layout."""

import dataclasses
import json
import os

from keras_bert_common.errors import UsageError
from keras_bert_common.files import atomic_output
from keras_bert_impl.errors import BertConfigError

# Activations a config may name. "gelu" is the tanh approximation, as in Google's modeling.py and
# every released Google checkpoint; "gelu_exact" is the erf form (Hugging Face's "gelu").
HIDDEN_ACTIVATIONS = ("gelu", "gelu_exact", "relu", "tanh", "swish", "linear")

# Keys found in some released Google configs (multilingual) that the model does not use.
_IGNORED_GOOGLE_KEYS = frozenset(
    {
        "directionality",
        "pooler_fc_size",
        "pooler_num_attention_heads",
        "pooler_num_fc_layers",
        "pooler_size_per_head",
        "pooler_type",
    }
)

# The keys that set the model's shape (a file without them gets BERT-base's).
_SIZE_KEYS = (
    "hidden_size",
    "num_hidden_layers",
    "num_attention_heads",
    "intermediate_size",
    "max_position_embeddings",
    "type_vocab_size",
)


@dataclasses.dataclass(frozen=True)
class BertConfig:
    """The 11 hyper-parameters of a BERT model, with Google's names and defaults."""

    vocab_size: int
    hidden_size: int = 768
    num_hidden_layers: int = 12
    num_attention_heads: int = 12
    intermediate_size: int = 3072
    hidden_act: str = "gelu"
    hidden_dropout_prob: float = 0.1
    attention_probs_dropout_prob: float = 0.1
    max_position_embeddings: int = 512
    type_vocab_size: int = 16
    initializer_range: float = 0.02

    def __post_init__(self):
        problems = []
        for name in ("vocab_size", *_SIZE_KEYS):
            value = getattr(self, name)
            if isinstance(value, bool) or not isinstance(value, int) or value < 1:
                problems.append(f"{name} must be a positive integer, got {value!r}")
        for name in ("hidden_dropout_prob", "attention_probs_dropout_prob"):
            value = getattr(self, name)
            if isinstance(value, bool) or not isinstance(value, (int, float)) or not 0 <= value < 1:
                problems.append(f"{name} must be a number in [0, 1), got {value!r}")
        if (
            isinstance(self.initializer_range, bool)
            or not isinstance(self.initializer_range, (int, float))
            or self.initializer_range <= 0
        ):
            problems.append(f"initializer_range must be positive, got {self.initializer_range!r}")
        if self.hidden_act not in HIDDEN_ACTIVATIONS:
            problems.append(f"hidden_act must be one of {', '.join(HIDDEN_ACTIVATIONS)}, got {self.hidden_act!r}")
        if not problems and self.hidden_size % self.num_attention_heads:
            problems.append(
                f"hidden_size ({self.hidden_size}) must be a multiple of num_attention_heads "
                f"({self.num_attention_heads})"
            )
        if problems:
            raise BertConfigError("; ".join(problems))

    @property
    def head_size(self):
        return self.hidden_size // self.num_attention_heads

    def check_max_seq_length(self, max_seq_length, source="bert_config.json"):
        """Every runner's check: the packed sequence must fit the position embeddings, and hold
        [CLS], a token and [SEP]."""
        if max_seq_length < 3:
            raise UsageError(f"--max_seq_length={max_seq_length}: must be at least 3 ([CLS], a token, [SEP])")
        if max_seq_length > self.max_position_embeddings:
            raise UsageError(
                f"--max_seq_length={max_seq_length} exceeds max_position_embeddings="
                f"{self.max_position_embeddings} in {source}; lower --max_seq_length"
            )

    def check_vocab_size(self, vocab_size, vocab_file, source="bert_config.json"):
        """A vocab.txt of another model would train and serve silently wrong ids."""
        if vocab_size != self.vocab_size:
            raise UsageError(
                f"{vocab_file}: has {vocab_size} tokens but {source} says vocab_size={self.vocab_size}; "
                "use the vocab.txt released with the model"
            )

    @classmethod
    def from_dict(cls, values, source="config"):
        """Builds a config from a dict of Google's keys; unknown keys are an error."""
        if not isinstance(values, dict):
            raise BertConfigError(f"{source}: expected a JSON object of BERT hyper-parameters")
        known = {field.name for field in dataclasses.fields(cls)}
        unknown = sorted(set(values) - known - _IGNORED_GOOGLE_KEYS)
        if unknown and {"model_type", "architectures", "_name_or_path", "transformers_version"} & set(values):
            raise BertConfigError(
                f"{source}: a Hugging Face config.json, not Google's bert_config.json; convert the model first: "
                "python convert_hf_checkpoint.py --hf_dir=DIR --output_dir=OUT"
            )
        if unknown:
            raise BertConfigError(
                f"{source}: unknown key(s) {', '.join(unknown)}; a bert_config.json holds only "
                f"{', '.join(sorted(known))}"
            )
        if "vocab_size" not in values:
            raise BertConfigError(f"{source}: missing required key vocab_size")
        try:
            return cls(**{key: value for key, value in values.items() if key in known})
        except BertConfigError as error:
            raise BertConfigError(f"{source}: {error}") from None

    @classmethod
    def from_json_file(cls, path, warn=None):
        """Reads Google's `bert_config.json`. `warn(message)`, when given, hears of the size keys
        the file leaves out: they take Google's BERT-base defaults, as in Google's reader."""
        if os.path.isdir(path):
            inside = os.path.join(path, "bert_config.json")
            hint = (
                f"--bert_config_file={inside}" if os.path.isfile(inside) else "--bert_config_file=PATH/bert_config.json"
            )
            raise BertConfigError(f"{path}: is a directory; pass {hint}")
        if not os.path.isfile(path):
            raise BertConfigError(f"{path}: no such file; pass --bert_config_file=PATH/bert_config.json")
        try:
            with open(path, encoding="utf-8") as reader:
                values = json.load(reader)
        except (json.JSONDecodeError, UnicodeDecodeError) as error:
            raise BertConfigError(f"{path}: not valid JSON ({error}); fix or replace the file") from None
        config = cls.from_dict(values, source=path)
        defaulted = [key for key in _SIZE_KEYS if key not in values]
        if warn and defaulted:
            given = ", ".join(f"{key}={getattr(config, key)}" for key in defaulted)
            warn(f"{path}: has no {', '.join(defaulted)}; using Google's defaults ({given}); add them to be sure")
        return config

    def to_dict(self):
        return dataclasses.asdict(self)

    def to_json_string(self):
        """Google's layout: two-space indent, sorted keys, trailing newline."""
        return json.dumps(self.to_dict(), indent=2, sort_keys=True) + "\n"

    def to_json_file(self, path):
        """Writes atomically: a temporary name, then a rename."""
        with atomic_output(path) as writer:
            writer.write(self.to_json_string())
