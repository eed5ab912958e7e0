"""Raw static rows for exploration: every kept piece through the exact e5 graph.

Writes ``<out>.npz``: ``ids`` (piece ids), ``mean`` (mean-pooled states of
``<s> [prefix] piece </s>``) and ``own`` (the piece's own state), float16, for tuning the
static table's projection and weights without rerunning
the model. Run niced; ~10-20 min of one core for ~140k pieces.
"""

from __future__ import annotations

import argparse
import sys
import time
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))  # training/ is not installed

from training.static_build import BATCH, PieceRunner, kept_pieces


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__)
    ap.add_argument("--out", required=True)
    ap.add_argument("--prefix", default="")
    ap.add_argument("--latin", type=int, default=200_000)
    ap.add_argument("--han", type=int, default=200_000)
    ap.add_argument("--limit", type=int, default=0, help="first N kept pieces only (timing)")
    args = ap.parse_args()
    runner = PieceRunner()
    ids = kept_pieces(runner.model, args.latin, args.han)
    if args.limit:
        ids = ids[: args.limit]
    head = [runner.tokenizer.bos, *runner.prefix_ids(args.prefix)]
    mean = np.zeros((len(ids), runner.model.hidden), np.float16)
    own = np.zeros_like(mean)
    t0 = time.monotonic()
    for a in range(0, len(ids), BATCH):
        part = ids[a : a + BATCH]
        seq = np.empty((len(part), len(head) + 2), np.int64)
        seq[:, : len(head)] = head
        seq[:, len(head)] = part
        seq[:, -1] = runner.tokenizer.eos
        emb = runner.model.word_rows(seq) + runner.positions[: seq.shape[1]] + runner.type0
        feed = {"emb": emb.astype(np.float32), "mask": np.ones(seq.shape, np.float32)}
        (hidden,) = runner.session.run(None, feed)
        mean[a : a + len(part)] = hidden.astype(np.float64).mean(axis=1)
        own[a : a + len(part)] = hidden[:, len(head)]
        if a // BATCH % 50 == 0:
            print(f"{a + len(part)}/{len(ids)} {time.monotonic() - t0:.0f}s", file=sys.stderr)
    np.savez(args.out, ids=ids, mean=mean, own=own, prefix=np.array(args.prefix))
    print(f"{len(ids)} rows in {time.monotonic() - t0:.0f}s -> {args.out}", file=sys.stderr)


if __name__ == "__main__":
    main()
