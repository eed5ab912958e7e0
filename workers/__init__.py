"""``kioku worker`` processes: arq workers that run kioku's jobs over Redis.

A worker opens the truth store (SQLite), the embedder and the activity log -- never
the index: it embeds, tunes, re-ranks and exports, and the owner of the data dir
applies what it wrote. Any number of workers run beside one owner (``python -m
workers``, which ``kioku worker`` runs).
"""
