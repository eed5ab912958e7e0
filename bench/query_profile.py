"""Where a new query's embedding time goes, on template and on real questions.

The e5 engine directly (no server): each question's tokens, the query graph alone
(terms off) and with the latent terms (the autoencoder over the same pass), one thread,
interleaved template / real. Template: ``peers.py``'s generator (6-9 words); real: the
conversational quality set's 359 hand-written questions (en/ja/th).

    flock "${TMPDIR:-/tmp}/kioku-bench.lock" python bench/query_profile.py [--n 100]
"""

# ruff: noqa: E402
from __future__ import annotations

import sys
from pathlib import Path

_HERE = Path(__file__).resolve().parent
sys.path[:] = [p for p in sys.path if Path(p or ".").resolve() != _HERE]
sys.path.append(str(_HERE))

import argparse
import os
import time

import numpy as np
from peers import queries, real_questions

from mcp_gateway.embedders.local import _onnx_engine
from mcp_gateway.graphs import e5_latent


def main(args: argparse.Namespace) -> None:
    print(f"load {' '.join(f'{x:.1f}' for x in os.getloadavg())}")
    engine = _onnx_engine("original", True, True, True, False)
    engine.warm(1)
    sets = {"template": queries(seed=1)[: args.n], "real": real_questions(seed=1)[: args.n]}
    times: dict[tuple[str, bool], list[float]] = {}
    tokens: dict[str, list[int]] = {}
    for name, qs in sets.items():
        tokens[name] = [engine.token_count(q, "query: ") for q in qs]
        engine.encode(qs[:5], "query: ", 1, terms=True, keep=e5_latent.QUERY_TERMS)
    for i in range(args.n):
        for name, qs in sets.items():
            for terms in (False, True):
                t = time.perf_counter()
                engine.encode([qs[i]], "query: ", 1, terms=terms, keep=e5_latent.QUERY_TERMS)
                times.setdefault((name, terms), []).append((time.perf_counter() - t) * 1000)
    for name in sets:
        dense = np.array(times[(name, False)])
        full = np.array(times[(name, True)])
        tok = np.array(tokens[name])
        print(
            f"{name:9s} tokens p50 {np.median(tok):.0f} (p95 {np.percentile(tok, 95):.0f}); "
            f"graph p50 {np.median(dense):.2f} ms, with terms {np.median(full):.2f} ms "
            f"(terms {np.median(full) - np.median(dense):.2f}); "
            f"{np.median(dense / tok):.3f} ms a token"
        )


if __name__ == "__main__":
    ap = argparse.ArgumentParser(description=__doc__)
    ap.add_argument("--n", type=int, default=100)
    main(ap.parse_args())
