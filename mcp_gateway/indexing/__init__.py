"""Keeping the index current from the truth store: points, the applier, reconcile,
write-behind; and ``lexical``, the BM25 terms of a text, which the points carry and
search (the layer above) reads queries with."""
