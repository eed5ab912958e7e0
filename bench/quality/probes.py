"""Two paraphrase probes, with and without the further dense channels.

Issue 30's probes: "rate limiting errors from the blogging platform" must find the
Qiita 429 note, and "copier gets stuck with shiny sheets" the floor-three printer note,
in the top 5. The pool: the generated set's first notes (bench/quality/data) plus
near-distractors written here (same words, other facts), then the two targets, added
through the note service of an in-process owner with the channels configured and every
note embedded. Each probe is searched with the channels (``embedder.channels``) and
with them left out of the search (the same index), and the target's rank printed.

    python bench/quality/probes.py [--notes 400] [--channels use] [--filler conv]
                                   [--no-distractors]
"""

from __future__ import annotations

import argparse
import json
import sys
import tempfile
from pathlib import Path

import anyio

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE.parents[1]))

from mcp_gateway.common.inputs import NoteFields  # noqa: E402
from mcp_gateway.common.settings import KiokuSettings  # noqa: E402
from mcp_gateway.search.answers import AnswerCache  # noqa: E402
from mcp_gateway.search.service import SearchRequest  # noqa: E402
from mcp_gateway.services import Services  # noqa: E402
from mcp_gateway.services.app import open_app  # noqa: E402

PROBES = {
    "rate limiting errors from the blogging platform": (
        "The Qiita API answers 429 Too Many Requests when many updates are sent in a "
        "short time, so the sync script waits a minute between batches."
    ),
    "copier gets stuck with shiny sheets": (
        "The printer on floor three jams whenever glossy paper is used."
    ),
}
DISTRACTORS = [
    "The blog platform's editor loses formatting when text is pasted from Word.",
    "Zenn articles are published from the GitHub repository when a branch is merged.",
    "The Qiita export script skips private drafts and limited-sharing posts.",
    "The GitHub API allows 5,000 requests an hour for an authenticated token.",
    "Failed uploads to the CDN are retried with exponential backoff.",
    "Error logs from the blogging plugin are rotated every week.",
    "The copier on floor two needs a new toner cartridge every month.",
    "Glossy brochures are ordered from the print shop downtown.",
    "The scanner on floor three saves PDFs to the shared drive.",
    "Paper jams in the label maker are cleared by opening the back panel.",
    "The projector in the floor three meeting room flickers with long HDMI cables.",
    "Sheets of the quarterly budget are shared as read-only links.",
]


async def main(notes: int, channels: list[str], filler_set: str, distract: bool) -> None:
    near = DISTRACTORS if distract else []
    filler = [
        json.loads(line)["text"]
        for line in (HERE / filler_set / "memories.jsonl").read_text("utf-8").splitlines()
        if line.strip() and json.loads(line)["kind"] == "note"
    ][: max(0, notes - len(near) - len(PROBES))]
    texts = filler + near + list(PROBES.values())
    with tempfile.TemporaryDirectory() as tmp:
        settings = KiokuSettings(
            data_dir=Path(tmp),
            redis_url=None,
            qdrant_url=None,
            embedder={"channels": channels},  # type: ignore[arg-type]
        )
        async with open_app(settings) as app:
            notes_service = Services.over(app).notes
            ids = {}
            for text in texts:
                fields = NoteFields(text=text, type="knowledge")
                ids[text] = (await notes_service.store(fields, "default")).id
            await app.settle()
            while (await app.reconcile()).drafts:
                await app.settle()
            print(
                f"{len(texts)} notes ({filler_set} first, near-distractors {distract}), "
                f"channels {channels or 'none'}"
            )
            kept = app.search.vectors.channels
            for label, chans in (("without", ()), ("with", kept)):
                app.search.vectors.channels = chans
                app.search.answers = AnswerCache(0)
                for query, target in PROBES.items():
                    found = await app.search.search(
                        SearchRequest(query, namespaces=("default",), top=10)
                    )
                    order = [r.id for r in found.results]
                    rank = order.index(ids[target]) + 1 if ids[target] in order else None
                    print(f"{label:8s} rank {rank!s:5s} {query}")


if __name__ == "__main__":
    ap = argparse.ArgumentParser(description=__doc__)
    ap.add_argument("--notes", type=int, default=400)
    ap.add_argument("--channels", nargs="*", default=["use"])
    ap.add_argument("--filler", default="data", choices=["data", "conv", "heldout"])
    ap.add_argument("--no-distractors", action="store_true", help="leave DISTRACTORS out")
    args = ap.parse_args()
    anyio.run(main, args.notes, args.channels, args.filler, not args.no_distractors)
