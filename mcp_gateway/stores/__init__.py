"""The truth store's tables, one owner each: the database, notes, vectors, the activity log."""
