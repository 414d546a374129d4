"""`build_vocab`: build_vocab.py's work. A WordPiece vocab.txt learned from raw text (tensorflow-text's
learner), or, with `base_vocab`, a released vocabulary extended with a domain's words (`extend_vocab`)."""

import dataclasses
import os

from keras_bert_common.errors import UsageError
from keras_bert_common.files import (
    atomic_output,
    check_outputs_distinct,
    check_text_files,
    check_writable,
    expand_file_patterns,
)
from keras_bert_impl.runners.extend_vocab import extend_vocabulary
from tfrecord_tools.vocab_builder import build_wordpiece_vocab, check_vocab_size, read_lines


@dataclasses.dataclass
class VocabOptions:
    """build_vocab.py's flags."""

    input_file: str  # a comma list of files or globs
    output_file: str = None  # the learned vocab.txt
    vocab_size: int = 8000
    do_lower_case: bool = True
    reserved_tokens: list = dataclasses.field(default_factory=lambda: ["[PAD]", "[UNK]", "[CLS]", "[SEP]", "[MASK]"])
    min_count: int = 2
    base_vocab: str = None  # extend this vocabulary instead, into output_dir
    num_new_tokens: int = 1000
    init_checkpoint: str = None
    bert_config_file: str = None
    output_dir: str = None
    force: bool = False


def build_vocab(options, log=print):
    """Learns `output_file`, or with `base_vocab` writes `output_dir` (returning the `VocabExtension`)."""
    paths = expand_file_patterns(options.input_file, log=log)
    if options.base_vocab:
        if not options.output_dir or options.output_file:
            raise UsageError("--base_vocab writes a directory: pass --output_dir (not --output_file)")
        return extend_vocabulary(
            paths,
            options.base_vocab,
            options.output_dir,
            num_new_tokens=options.num_new_tokens,
            init_checkpoint=options.init_checkpoint,
            bert_config_file=options.bert_config_file,
            do_lower_case=options.do_lower_case,
            min_count=options.min_count,
            force=options.force,
            log=log,
        )
    if not options.output_file:
        raise UsageError("--output_file is required (where vocab.txt goes)")
    check_vocab_size(options.vocab_size, options.reserved_tokens)
    check_writable(options.output_file, "--output_file")
    check_outputs_distinct([options.output_file], paths)
    check_text_files(paths, "--input_file")
    vocab = build_wordpiece_vocab(
        read_lines(paths, warn=getattr(log, "warning", log)),
        options.vocab_size,
        options.do_lower_case,
        options.reserved_tokens,
        options.min_count,
        source=", ".join(paths),
        log=log,
        total_bytes=sum(os.path.getsize(path) for path in paths),
    )
    with atomic_output(options.output_file) as writer:
        writer.write("\n".join(vocab) + "\n")
    log(f"wrote {options.output_file}: {len(vocab)} tokens")
    return vocab
