"""Task models built around a given `BertEncoder`."""
