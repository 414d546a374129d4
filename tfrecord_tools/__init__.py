"""The data path: text -> WordPiece tokens -> features -> TFRecords.

What lives here: the tokenizer (`tokenization.FullTokenizer` on tensorflow-text ops), vocabulary
learning, every TFRecord feature spec (`feature_specs`, shared by writers and readers), the
pretraining instance maker and its parallel writer, the fine-tuning converters (GLUE, SQuAD,
CoNLL-2003, SWAG) and their data directories (`finetuning_data`). The helpers every package
shares (errors, atomic files, stop requests, progress) live below it, in `keras_bert_common`.
Imports TensorFlow, tensorflow-text and `keras_bert_common`, never `keras_bert_impl`. The scripts
here are shells over `keras_bert_cli`.
"""
