"""The data path: text -> WordPiece tokens -> features -> TFRecords.

What lives here: the tokenizer (`tokenization.FullTokenizer` on tensorflow-text ops), vocabulary
learning, every TFRecord feature spec (`feature_specs`, shared by writers and readers), the
pretraining instance maker and its parallel writer, the fine-tuning converters (GLUE, SQuAD,
CoNLL-2003, SWAG) and their data directories (`finetuning_data`), and the generic helpers every
tool uses (`files`: atomic outputs and checks; `progress`; `stop`: Ctrl-C and SIGTERM requests). Imports TensorFlow and
tensorflow-text, never `keras_bert_impl`. The scripts here are shells over `keras_bert_cli`.
"""
