"""The data path: text -> WordPiece tokens -> features -> TFRecords, module by stage.

- tokenization: `bert_text_tokenizer` (Google's rules on tensorflow-text ops), `tokenization`
  (Google's `FullTokenizer` API), `vocab_file`, `vocab_builder` (learning a vocabulary),
  `vocab_extension` (adding a domain's words to a released one);
- records: `feature_specs` (every feature spec, shared by writers and readers), `example_wire`
  (tf.train.Examples in the protobuf wire format), `tfrecord_files` (atomic writing, reading,
  the checks before training);
- pretraining data: `pretraining_instances`, `pretraining_units`, `pretraining_data` (the
  parallel writer), `pretraining_beam`, `dynamic_masking`;
- fine-tuning data: `classification_data`, `squad_data`, `ner_data`, `swag_data` and their data
  directories (`finetuning_data`).

The helpers every package shares (errors, atomic files, stop requests, progress) live below it,
in `keras_bert_common`. Imports TensorFlow, tensorflow-text and `keras_bert_common`, never
`keras_bert_impl`. The scripts here are shells over `keras_bert_cli`.
"""
