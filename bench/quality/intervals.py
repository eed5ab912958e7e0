"""Bootstrap confidence intervals for the quality bench's per-query scores.

A benchmark mean over 15 questions of one kind moves a lot with which 15 were written, so
every figure ``run.py`` prints carries a 95 % percentile-bootstrap interval: the queries of
a group are resampled with replacement (``resamples`` times, a fixed seed per group, so a
rerun prints the same interval) and the 2.5th and 97.5th percentiles of the resampled means
are reported. A comparison of two rankings is **paired**: both ran the same queries, so the
per-query differences are resampled together, which is far tighter than comparing two
independent intervals. A group of at least ``MIN_FLAGGED`` queries is flagged ``WORSE``
when the whole interval of the difference lies below zero (``better``: above zero).

Rows are the per-query dicts of ``run.run_mode`` (``qid``, ``kind``, ``lang``, ``split`` and
one float per metric).
"""

from __future__ import annotations

import zlib
from collections.abc import Iterator, Sequence
from typing import Any

import numpy as np

SPLITS = ("dev", "test")
RESAMPLES = 2000
SEED = 30
# a resampled group of a few queries has a degenerate interval (one query: a single
# point), so a difference is flagged only in groups at least this large
MIN_FLAGGED = 10
Row = dict[str, Any]


def bootstrap(
    values: Sequence[float], *, resamples: int = RESAMPLES, seed: int = SEED, label: str = ""
) -> tuple[float, float, float]:
    """Mean of ``values`` and its 95 % percentile-bootstrap interval (``lo``, ``hi``).

    ``label`` names the group: it is mixed into the seed so that groups do not share one
    stream of resamples, while the same group always gets the same interval.
    """
    data = np.asarray(values, dtype=float)
    if data.size == 0:
        return float("nan"), float("nan"), float("nan")
    rng = np.random.default_rng([seed, zlib.crc32(label.encode())])
    means = data[rng.integers(0, data.size, size=(resamples, data.size))].mean(axis=1)
    lo, hi = np.percentile(means, [2.5, 97.5])
    return float(data.mean()), float(lo), float(hi)


def groups(rows: Sequence[Row], split: str) -> Iterator[tuple[str, list[Row]]]:
    """``ALL``, then each kind, then each language, of one split (empty groups skipped)."""
    in_split = [r for r in rows if r["split"] == split]
    yield "ALL", in_split
    for kind in sorted({r["kind"] for r in in_split}):
        yield kind, [r for r in in_split if r["kind"] == kind]
    for lang in ("en", "ja", "th"):
        chosen = [r for r in in_split if r["lang"] == lang]
        if chosen and len(chosen) < len(in_split):
            yield f"lang:{lang}", chosen


def fmt(mean: float, lo: float, hi: float) -> str:
    return f"{mean:.3f} [{lo:.2f},{hi:.2f}]"


def print_report(
    name: str,
    results: Sequence[dict[str, Any]],
    metrics: Sequence[str],
    *,
    resamples: int = RESAMPLES,
    seed: int = SEED,
) -> None:
    """One table per split: every group, every mode, each metric with its interval."""
    for split in SPLITS:
        if not any(r["split"] == split for r in results[0]["queries"]):
            continue
        print(f"== {name} / {split} (mean [95% CI], {resamples} resamples) ==")
        header = f"{'group':22s} {'mode':8s} " + " ".join(f"{m:>18s}" for m in metrics)
        print(header)
        print("-" * len(header))
        for group, _ in groups(results[0]["queries"], split):
            for res in results:
                rows = dict(groups(res["queries"], split))[group]
                label = f"{group} ({len(rows)})" if res is results[0] else ""
                cells = [
                    fmt(
                        *bootstrap(
                            [r[m] for r in rows],
                            resamples=resamples,
                            seed=seed,
                            label=f"{name}/{split}/{group}/{m}",
                        )
                    )
                    for m in metrics
                ]
                print(f"{label:22s} {res['mode']:8s} " + " ".join(f"{c:>18s}" for c in cells))
        print()


def paired(
    base: Sequence[Row],
    cand: Sequence[Row],
    metric: str,
    *,
    resamples: int = RESAMPLES,
    seed: int = SEED,
    label: str = "",
) -> tuple[float, float, float]:
    """Mean of ``cand - base`` per query (matched by ``qid``) and its paired interval."""
    by_qid = {r["qid"]: r[metric] for r in base}
    missing = [r["qid"] for r in cand if r["qid"] not in by_qid]
    if missing:
        raise ValueError(
            f"baseline lacks {len(missing)} queries (first: {missing[0]}); "
            "compare runs over the same query file"
        )
    diffs = [r[metric] - by_qid[r["qid"]] for r in cand]
    return bootstrap(diffs, resamples=resamples, seed=seed, label=label)


def print_paired(
    name: str,
    base: dict[str, Any],
    cand: dict[str, Any],
    metrics: Sequence[str],
    *,
    base_label: str,
    cand_label: str,
    resamples: int = RESAMPLES,
    seed: int = SEED,
) -> list[str]:
    """Candidate minus baseline per split and group; returns the groups that got worse.

    ``base`` and ``cand`` are one mode's results (``run.run_mode``) on the same queries.
    """
    worse: list[str] = []
    print(
        f"== {name} / {cand['mode']}: {cand_label} minus {base_label} (paired, "
        f"{resamples} resamples) =="
    )
    header = f"{'split':5s} {'group':22s} " + " ".join(f"{'d ' + m:>22s}" for m in metrics)
    print(header)
    print("-" * len(header))
    for split in SPLITS:
        if not any(r["split"] == split for r in cand["queries"]):
            continue
        base_groups = dict(groups(base["queries"], split))
        for group, rows in groups(cand["queries"], split):
            cells, flags = [], []
            for m in metrics:
                d, lo, hi = paired(
                    base_groups.get(group, []),
                    rows,
                    m,
                    resamples=resamples,
                    seed=seed,
                    label=f"{name}/{split}/{group}/{m}/paired",
                )
                cells.append(f"{d:+.3f} [{lo:+.2f},{hi:+.2f}]")
                if len(rows) < MIN_FLAGGED:
                    continue
                if hi < 0:
                    flags.append(f"WORSE {m}")
                elif lo > 0:
                    flags.append(f"better {m}")
            if any(f.startswith("WORSE") for f in flags):
                worse.append(f"{name}/{cand['mode']}/{split}/{group}")
            line = f"{split:5s} {group + f' ({len(rows)})':22s} " + " ".join(
                f"{c:>22s}" for c in cells
            )
            print(line + ("  " + ", ".join(flags) if flags else ""))
    print()
    return worse
