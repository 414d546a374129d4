"""Models: `BertConfig` (Google's bert_config.json), `BertEncoder`, and the task models
(`BertPretrainer`, `BertMaskedLM`, `BertClassifier`, `BertSpanLabeler`, `BertTokenClassifier`,
`BertMultipleChoice`, `BertSentenceEncoder`, `BertFeatureTagger`), each built around a given
encoder instance.

May import `layers` and `errors`; never checkpoints, tasks, training, serving or runners.
"""
