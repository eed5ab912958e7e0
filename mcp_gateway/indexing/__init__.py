"""Keeping the index current from the truth store: points, the applier, reconcile, write-behind."""
