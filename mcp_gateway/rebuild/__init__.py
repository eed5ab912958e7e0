"""Filling a new collection from the truth store: in-process (``fill.py``, shared by
``services/reindex.py``) or in a separate process that also builds the HNSW graph
(``build.py``). It sits above ``index/`` and ``indexing.py``: it writes the points
``indexing`` defines into collections ``index`` provides."""
