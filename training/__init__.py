"""Offline training of the packaged static tables (``mcp_gateway/embedders/static_*.npy``).

Not installed with kioku: the product only loads the tables these modules build. Run from
a checkout (``python -m training.static_build``; ``bench/static_train.py`` drives the
trainer), where the repository root is on the path.
"""
