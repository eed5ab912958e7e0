#!/usr/bin/env python3
"""Generate the kioku retrieval-quality benchmark data.

Everything in ``data/`` (memories.jsonl, queries.jsonl, STATS.md) is produced by this
script from the hand-written seeds below.  The script is deterministic: it uses one
fixed random seed and no external input, so running it again reproduces the files
byte-for-byte.  Run it with::

    python bench/quality/generate_corpus.py          # write the files
    python bench/quality/generate_corpus.py --check  # verify files on disk match

Memories are written under symbolic ids ("sids"); keys (m0001, ...) are assigned at
the end in creation order (oldest first), and queries refer to sids that are
resolved to keys.  All labelling rules are asserted in ``validate()``.
"""

from __future__ import annotations

import argparse
import hashlib
import json
import random
import re
import sys
from collections import Counter, defaultdict
from pathlib import Path

SEED = 20240611
RNG = random.Random(SEED)
HERE = Path(__file__).resolve().parent
DATA = HERE / "data"

NOTE_TYPES = {"lesson", "conclusion", "knowledge", "profile", "checkpoint"}
RECORD_TYPES = {"audit", "fix", "verification", "decision", "knowledge"}
LANGS = {"en", "ja", "th"}
QUERY_KINDS = [
    "trigger",
    "contextual",
    "paraphrase",
    "crosslang",
    "buried",
    "superseded",
    "type_filter",
    "outdated",
]
OUTDATED_VARIANTS = ("replaced", "control")
LINK_KINDS = {"supersedes", "resolves", "verifies", "duplicates"}

MEMS: list[dict] = []
SIDS: dict[str, dict] = {}
QUERIES: list[dict] = []


def _add(m: dict) -> None:
    assert m["sid"] not in SIDS, f"duplicate sid {m['sid']}"
    assert m["lang"] in LANGS, m
    assert m["priority"] in ("", "high", "low"), m
    SIDS[m["sid"]] = m
    MEMS.append(m)


def N(sid, type, domain, lang, text, pri="", age=None):
    """A note."""
    assert type in NOTE_TYPES, (sid, type)
    _add(
        dict(
            sid=sid,
            kind="note",
            type=type,
            lang=lang,
            text=text.strip(),
            priority=pri,
            domain=domain,
            age=age,
            links=[],
        )
    )


def R(sid, type, domain, lang, title, text, pri="", age=None, links=()):
    """A record; links are (kind, target_sid) pairs."""
    assert type in RECORD_TYPES, (sid, type)
    for lk, _ in links:
        assert lk in LINK_KINDS, (sid, lk)
    _add(
        dict(
            sid=sid,
            kind="record",
            type=type,
            lang=lang,
            title=title.strip(),
            text=text.strip(),
            priority=pri,
            domain=domain,
            age=age,
            links=list(links),
        )
    )


def Q(
    kind,
    lang,
    query,
    rel,
    type=None,
    domain=None,
    old=None,
    under=None,
    terms=None,
    variant=None,
    pair=None,
):
    """A query.  ``rel`` lists sids.  ``old``: the superseded memory whose wording a
    superseded query uses.  ``under``: the newer distractor notes of a buried query.
    ``terms``: key terms of the answer (Thai paraphrase check).  ``variant`` and
    ``pair`` (outdated queries only): "replaced" or "control", and the other note of
    the pair, which is not relevant."""
    assert kind in QUERY_KINDS, kind
    assert lang in LANGS, lang
    assert (variant is not None) == (pair is not None) == (kind == "outdated"), (kind, query)
    assert variant is None or variant in OUTDATED_VARIANTS, variant
    if isinstance(rel, str):
        rel = [rel]
    QUERIES.append(
        dict(
            kind=kind,
            lang=lang,
            query=query.strip(),
            rel=list(rel),
            type=type,
            domain=domain,
            old=old,
            under=under or [],
            terms=terms or [],
            variant=variant,
            pair=pair,
        )
    )


# ---------------------------------------------------------------------------
# API, HTTP, rate limits
# ---------------------------------------------------------------------------
N(
    "please_24patch",
    "lesson",
    "api",
    "en",
    'When the user says just "please" after I describe a batch of changes, it means "get ready", not "go". '
    "I once took it as the go-ahead and fired 24 PATCH requests at the tracker API at the same moment; "
    "it answered HTTP 429 and our token stayed rate-limited for a whole day. Confirm explicitly before any bulk write.",
    pri="high",
    age=381.5,
)
N(
    "please_ja",
    "lesson",
    "team",
    "ja",
    "ユーザーが「お願い」とだけ返したときは「準備しておいて」の意味のことがある。実行の合図だと決めつけず、"
    "まとめて更新する操作の前には「今すぐ実行してよいですか」と一度確認する。",
    pri="high",
    age=379.0,
)
N(
    "api_retry_after",
    "lesson",
    "api",
    "en",
    "On a 429, read the Retry-After header and sleep that long. Our old loop retried immediately and each retry extended the penalty window.",
    age=41.0,
)
N(
    "api_bulk_endpoint",
    "lesson",
    "api",
    "en",
    "The tracker has a bulk endpoint, POST /issues/bulk_update (up to 100 ids per call). It counts as one request against the quota, so prefer it over per-issue PATCH loops.",
    age=26.0,
)
N(
    "api_pagination_lesson",
    "lesson",
    "api",
    "en",
    "Tracker list endpoints cap page size at 50 even if you ask for 200. Loop on the Link header until there is no rel=next.",
    age=12.0,
)
N(
    "api_ratelimit_headers",
    "knowledge",
    "api",
    "en",
    "Tracker API quota: 60 requests per minute per token. Every response carries X-RateLimit-Remaining and X-RateLimit-Reset (epoch seconds).",
)
N(
    "api_concurrency_ja",
    "lesson",
    "api",
    "ja",
    "外部APIを叩くスクリプトは同時実行数を 4 までに制限する。asyncio.gather で全部まとめて投げると、相手側のレート制限に一瞬で引っかかる。",
    age=33.0,
)
N(
    "api_backoff_th",
    "knowledge",
    "api",
    "th",
    "ไลบรารี http ภายในของเรามี retry แบบ exponential backoff อยู่แล้ว (เริ่ม 0.5 วินาที สูงสุด 5 ครั้ง) ไม่ต้องเขียน loop retry เองซ้ำอีกชั้น",
)

Q("trigger", "en", "please", ["please_24patch", "please_ja"])
Q("trigger", "ja", "お願い", ["please_ja", "please_24patch"])
Q("trigger", "th", "จัดการให้หน่อย", ["please_24patch", "please_ja"])
Q(
    "buried",
    "en",
    "The user listed 24 tickets to update and then replied only 'please'. Should I start sending the PATCH calls to the tracker now?",
    ["please_24patch", "please_ja"],
    under=["api_retry_after", "api_bulk_endpoint", "api_pagination_lesson"],
)
Q(
    "buried",
    "en",
    "user just wrote please after my plan for a bulk ticket update — go?",
    ["please_24patch", "please_ja"],
    under=["api_retry_after", "api_bulk_endpoint", "api_pagination_lesson"],
)
Q(
    "paraphrase",
    "en",
    "customer replied with one polite word; does that authorise executing every edit right away?",
    ["please_24patch"],
)
Q("crosslang", "ja", "「お願い」と言われて一括でPATCHを投げたら429になった件", ["please_24patch"])
Q("crosslang", "th", "ผู้ใช้พิมพ์แค่ please หมายถึงให้เริ่มทำเลยไหม", ["please_24patch", "please_ja"])
Q(
    "type_filter",
    "en",
    "tracker api 429 rate limit",
    ["please_24patch", "api_retry_after"],
    type="lesson",
)
Q("trigger", "en", "Retry-After", ["api_retry_after"])
Q(
    "contextual",
    "en",
    "I need to close 80 stale issues in the tracker. Writing a loop that sends one PATCH per issue; is there a better way that will not burn through the quota?",
    ["api_bulk_endpoint"],
)
Q(
    "contextual",
    "en",
    "Fetching all issues from the tracker with per_page=200 but I only ever get 50 back and the script thinks it is finished. What am I missing?",
    ["api_pagination_lesson"],
)
Q(
    "crosslang",
    "en",
    "how many parallel requests may a script send to an external API",
    ["api_concurrency_ja"],
)
Q(
    "crosslang",
    "en",
    "do I need to write my own retry loop around the internal http client?",
    ["api_backoff_th"],
)

# idempotency cluster (buried)
N(
    "payments_idempotency",
    "lesson",
    "api",
    "en",
    "Never blindly retry POST /charges on a timeout. A timeout does not mean the charge failed: we retried and double-charged 14 customers. "
    "Always send an Idempotency-Key (the order id) so the provider dedupes retries.",
    pri="high",
    age=298.0,
)
N(
    "payments_timeout",
    "lesson",
    "api",
    "en",
    "Payment provider calls: client timeout is 10 s. 30 s made checkout workers pile up during the provider's slow periods.",
    age=60.0,
)
N(
    "payments_request_id",
    "lesson",
    "api",
    "en",
    "Log the provider's request id (header Request-Id) on every payment call; support cannot find anything without it.",
    age=22.0,
)
N(
    "payments_webhook_order",
    "lesson",
    "api",
    "en",
    "Payment webhooks can arrive out of order (refund.created before charge.succeeded). Compare the event's created timestamp before applying state changes.",
    age=9.0,
)
Q(
    "buried",
    "en",
    "The charge request to the payment provider timed out after 10 seconds. I'm about to add a retry so the order goes through; anything to watch out for?",
    ["payments_idempotency"],
    under=["payments_timeout", "payments_request_id", "payments_webhook_order"],
)
Q(
    "buried",
    "ja",
    "決済APIがタイムアウトしたので POST /charges をリトライしようと思う。注意点は？",
    ["payments_idempotency"],
    under=["payments_timeout", "payments_request_id", "payments_webhook_order"],
)
Q(
    "paraphrase",
    "en",
    "card got billed twice after a resend — how do we stop duplicates?",
    ["payments_idempotency"],
)
Q("trigger", "en", "Idempotency-Key", ["payments_idempotency"])
Q(
    "contextual",
    "en",
    "Handling the provider's webhook: I receive refund.created for a charge my database still marks as pending. Should I drop the event or apply it as it comes?",
    ["payments_webhook_order"],
)

# cursor pagination cluster (buried, ja)
N(
    "cursor_pagination_ja",
    "lesson",
    "api",
    "ja",
    "外部APIの一覧取得は next_cursor が空になるまで回すこと。page=1〜10 と決め打ちして「全件取れた」と報告したが、実際は 1,000 件で打ち切られていて集計が全部ずれた。",
    pri="high",
    age=265.0,
)
N(
    "api_ja_newer1",
    "lesson",
    "api",
    "ja",
    "一覧APIのレスポンスは最大 100 件。per_page を増やしても変わらないので無駄に指定しない。",
    age=30.0,
)
N(
    "api_ja_newer2",
    "lesson",
    "api",
    "ja",
    "APIレスポンスの日時は ISO 8601 の UTC で返ってくる。画面表示のときだけ JST に変換する。",
    age=18.0,
)
N(
    "api_ja_newer3",
    "lesson",
    "api",
    "ja",
    "エラー応答の本文は JSON とは限らない。502 のときはロードバランサの HTML が返るので、パース前に Content-Type を見る。",
    age=7.0,
)
Q(
    "buried",
    "ja",
    "一覧APIから全件取得するスクリプトを書いている。ページ番号でループすれば十分？",
    ["cursor_pagination_ja"],
    under=["api_ja_newer1", "api_ja_newer2", "api_ja_newer3"],
)
Q(
    "crosslang",
    "en",
    "exported all records via page numbers 1..10, the totals look too low",
    ["cursor_pagination_ja"],
)
Q(
    "contextual",
    "ja",
    "502 エラーのときに response.json() が例外を投げてスクリプトが落ちる。どう扱うのが正しい？",
    ["api_ja_newer3"],
)

# general API knowledge / conclusions
N(
    "api_versioning_header",
    "knowledge",
    "api",
    "en",
    "Public API clients must send X-Api-Version: 2024-04-01; requests without it get the oldest behaviour, which still returns prices as strings.",
)
N(
    "api_error_shape",
    "knowledge",
    "api",
    "en",
    "All our HTTP errors use the problem+json shape: type, title, status, detail, plus a trace_id we can grep in the logs.",
)
N(
    "api_429_conclusion",
    "conclusion",
    "api",
    "en",
    "Conclusion from the May incident review: the 429 storm was caused by the mobile app retrying without jitter after a 30-second outage, not by a traffic spike.",
)
N(
    "api_timeout_ja",
    "knowledge",
    "api",
    "ja",
    "社内の HTTP クライアントのデフォルトタイムアウトは接続 3 秒・読み取り 30 秒。重いレポート API だけ 120 秒に上書きしている。",
)
N(
    "api_graphql_th",
    "conclusion",
    "api",
    "th",
    "สรุปจากการทดลอง: GraphQL gateway ทำให้ latency เพิ่มขึ้นเฉลี่ย 40ms และ cache ยากกว่า REST เดิม ทีมเลยตัดสินใจยังไม่ย้าย",
)
N(
    "api_webhook_sig",
    "knowledge",
    "api",
    "en",
    "Incoming webhooks are signed with HMAC-SHA256 in the X-Signature header; verify against the raw body bytes, not the re-serialised JSON.",
)
N(
    "api_webhook_sig_lesson",
    "lesson",
    "api",
    "th",
    "ตรวจ signature ของ webhook ต้องใช้ raw body ก่อน parse เคยเอา JSON ที่ parse แล้วมา dump ใหม่ ลำดับ key เปลี่ยน signature เลยไม่ตรงทุกครั้ง",
)
N(
    "api_cors",
    "lesson",
    "api",
    "en",
    "CORS errors in the browser console are often just a 500 without CORS headers. Check the server log before touching the CORS config.",
)
N(
    "api_http2_ja",
    "conclusion",
    "api",
    "ja",
    "調査の結論：社内ゲートウェイ経由だと HTTP/2 の多重化が効かず、クライアント側でコネクションプールを 20 に増やすのが一番効果があった。",
)
N(
    "api_openapi",
    "knowledge",
    "api",
    "en",
    "The OpenAPI spec is generated from the FastAPI app: run `make openapi` and commit docs/openapi.json; CI fails if it is stale.",
)
N(
    "api_deprecation_th",
    "knowledge",
    "api",
    "th",
    "endpoint ที่จะเลิกใช้ต้องส่ง header Deprecation และ Sunset อย่างน้อย 90 วันก่อนปิดจริง",
)
N(
    "api_keepalive",
    "lesson",
    "api",
    "en",
    "Reuse one httpx.AsyncClient per process. Creating a client per request exhausted ephemeral ports on the worker hosts under load.",
)
N(
    "api_json_decimal_ja",
    "lesson",
    "api",
    "ja",
    "金額を JSON で返すときは float にしない。0.1 + 0.2 問題で請求額が 1 円ずれたことがある。文字列か整数（最小単位）で返す。",
)
N(
    "api_utf8_th",
    "lesson",
    "api",
    "th",
    "ชื่อไฟล์ภาษาไทยใน header Content-Disposition ต้องใช้ filename* แบบ RFC 5987 ไม่งั้นเบราว์เซอร์บางตัวแสดงเป็นตัวอักษรเพี้ยน",
)
N(
    "api_429_slack",
    "knowledge",
    "api",
    "en",
    "Slack notifications from the alert bot go through a single queue; Slack's chat.postMessage is limited to about one message per second per channel, so bursts get delayed, not dropped.",
)

Q("trigger", "en", "429", ["please_24patch", "api_retry_after", "api_429_conclusion"])
Q("trigger", "en", "webhook signature", ["api_webhook_sig", "api_webhook_sig_lesson"])
Q(
    "contextual",
    "en",
    "Webhook verification keeps failing even though the secret is correct. I parse the JSON body, then json.dumps it and compute the HMAC over that string.",
    ["api_webhook_sig", "api_webhook_sig_lesson"],
)
Q(
    "paraphrase",
    "en",
    "web client complains about cross-origin but the real cause might be elsewhere",
    ["api_cors"],
)
Q("crosslang", "en", "should monetary amounts be floats in our responses?", ["api_json_decimal_ja"])
Q("crosslang", "ja", "Content-Disposition でタイ語のファイル名が文字化けする", ["api_utf8_th"])
Q("crosslang", "en", "did we decide to move to GraphQL?", ["api_graphql_th"])
Q("type_filter", "en", "what caused the 429 storm", ["api_429_conclusion"], type="conclusion")
Q(
    "contextual",
    "en",
    "Load testing the worker: after a few minutes requests fail with 'cannot assign requested address'. Each request currently creates its own httpx client.",
    ["api_keepalive"],
)
Q(
    "paraphrase",
    "en",
    "which header tells the server what revision of our external interface a caller expects?",
    ["api_versioning_header"],
)
# ---------------------------------------------------------------------------
# git
# ---------------------------------------------------------------------------
N(
    "git_force_push",
    "lesson",
    "git",
    "en",
    "Never force-push a shared branch. I force-pushed release/2.3 after rebasing it and wiped two colleagues' commits; "
    "we had to dig them out of their local reflogs. If history really must be rewritten, use --force-with-lease and announce it in the channel first.",
    pri="high",
    age=352.0,
)
N(
    "git_rebase_before_pr",
    "lesson",
    "git",
    "en",
    "Rebase your feature branch onto the latest main before opening the PR; reviewers see only your commits and the history stays linear.",
    age=34.0,
)
N(
    "git_pull_rebase",
    "lesson",
    "git",
    "en",
    "Set pull.rebase=true globally. Plain `git pull` on a feature branch created noisy merge commits that the squash bot then mangled.",
    age=21.0,
)
N(
    "git_signed_commits",
    "lesson",
    "git",
    "en",
    "Commits to main must be signed (SSH signing is fine). Unsigned commits are rejected by the branch protection, so configure gpg.format=ssh before your first push.",
    age=8.0,
)
Q(
    "buried",
    "en",
    "I rebased release/2.4 to clean up the history and now git refuses my push. Going to run git push -f so the branch matches my local copy.",
    ["git_force_push"],
    under=["git_rebase_before_pr", "git_pull_rebase", "git_signed_commits"],
)
Q(
    "buried",
    "th",
    "rebase branch release เสร็จแล้ว push ไม่ขึ้น จะใช้ git push --force เลยได้ไหม",
    ["git_force_push"],
    under=["git_rebase_before_pr", "git_pull_rebase", "git_signed_commits"],
)
Q("trigger", "en", "force push", ["git_force_push"])
Q("trigger", "ja", "強制プッシュ", ["git_force_push"])
Q("paraphrase", "en", "overwriting the remote log that teammates also work on", ["git_force_push"])

N(
    "git_no_verify_th",
    "lesson",
    "git",
    "th",
    "ห้ามใช้ --no-verify ข้าม pre-commit hook เด็ดขาด ครั้งหนึ่งข้าม hook แล้วเผลอ commit ไฟล์ .env ที่มี API key ของ production ขึ้น GitHub "
    "ต้องนั่ง rotate key ทุกตัวทั้งคืน",
    pri="high",
    age=310.0,
)
N(
    "git_th_newer1",
    "lesson",
    "git",
    "th",
    "ถ้า hook ฟ้องว่าไฟล์ใหญ่เกิน 5MB ให้ย้ายไปเก็บด้วย git lfs แทน อย่า commit ไฟล์ binary ตรง ๆ",
    age=45.0,
)
N(
    "git_th_newer2",
    "lesson",
    "git",
    "th",
    "hook ของ repo ตรวจ commit message ตามรูปแบบ Conventional Commits ถ้าขึ้นต้นด้วย fix: หรือ feat: ไม่ถูก จะ commit ไม่ผ่าน",
    age=19.0,
)
N(
    "git_th_newer3",
    "lesson",
    "git",
    "th",
    "หลัง clone repo ใหม่ต้องรัน pre-commit install หนึ่งครั้ง ไม่งั้น hook จะไม่ทำงานบนเครื่องเรา",
    age=6.0,
)
Q(
    "buried",
    "th",
    "pre-commit hook ช้ามากและ commit ไม่ผ่าน จะใส่ --no-verify เพื่อข้ามไปก่อนได้ไหม",
    ["git_no_verify_th"],
    under=["git_th_newer1", "git_th_newer2", "git_th_newer3"],
)
Q(
    "buried",
    "en",
    "the pre-commit hook is blocking my commit, can I just skip it with --no-verify this once?",
    ["git_no_verify_th"],
    under=["git_th_newer1", "git_th_newer2", "git_th_newer3"],
)
Q("trigger", "en", "--no-verify", ["git_no_verify_th"])
Q(
    "contextual",
    "en",
    "Committing a 40MB sample dataset for the parser tests and the pre-commit hook rejects it as too large. What is the expected way to store that file?",
    ["git_th_newer1"],
)
Q(
    "crosslang",
    "en",
    "freshly cloned the repo but hooks do not run on my commits",
    ["git_th_newer3"],
)

N(
    "git_main_push_ja",
    "lesson",
    "git",
    "ja",
    "main への直接 push は絶対にしない。以前 hotfix を main に直接 push して CI を通さずに本番に出てしまい、決済画面が 2 時間落ちた。急ぎでも PR を作ってチェックを通す。",
    pri="high",
    age=333.0,
)
N(
    "git_ja_newer1",
    "lesson",
    "git",
    "ja",
    "ブランチ名は feature/チケット番号-概要 の形にする。チケット番号がないと自動でリンクされない。",
    age=50.0,
)
N(
    "git_ja_newer2",
    "lesson",
    "git",
    "ja",
    "PR を出す前に main を取り込んでコンフリクトを自分で解消しておく。レビュアーに解消を任せない。",
    age=24.0,
)
N(
    "git_ja_newer3",
    "lesson",
    "git",
    "ja",
    "差分が 400 行を超える PR は分割する。大きい PR はレビューが数日止まりがち。",
    age=11.0,
)
Q(
    "buried",
    "ja",
    "緊急の hotfix なので main に直接 push してしまってもいい？",
    ["git_main_push_ja"],
    under=["git_ja_newer1", "git_ja_newer2", "git_ja_newer3"],
)
Q(
    "buried",
    "en",
    "urgent one-line hotfix — OK to push straight to main and skip the PR?",
    ["git_main_push_ja"],
    under=["git_ja_newer1", "git_ja_newer2", "git_ja_newer3"],
)
Q("crosslang", "th", "ตั้งชื่อ branch ยังไงให้ลิงก์กับ ticket อัตโนมัติ", ["git_ja_newer1"])

N(
    "git_reflog",
    "knowledge",
    "git",
    "en",
    "Lost commits after a bad reset are usually still in `git reflog` for 90 days; `git branch rescue <sha>` brings them back.",
)
N(
    "git_lfs_quota",
    "knowledge",
    "git",
    "en",
    "Our GitHub org has 50 GB of LFS bandwidth per month; CI checkouts skip LFS (GIT_LFS_SKIP_SMUDGE=1) unless the job needs the fixtures.",
)
N(
    "git_bisect",
    "lesson",
    "git",
    "en",
    "For regressions with a clear test, `git bisect run pytest tests/test_x.py -x` finds the commit in minutes; I wasted an afternoon reading diffs by hand.",
)
N(
    "git_submodule_ja",
    "knowledge",
    "git",
    "ja",
    "proto 定義は submodule（shared/proto）で管理している。clone 後に git submodule update --init を忘れるとビルドが通らない。",
)
N(
    "git_crlf_th",
    "lesson",
    "git",
    "th",
    "เครื่อง Windows ของทีม QA ตั้ง core.autocrlf=true ทำให้ shell script กลายเป็น CRLF แล้วรันใน container ไม่ได้ ตอนนี้มี .gitattributes บังคับ *.sh eol=lf แล้ว",
)
N(
    "git_stash_lesson",
    "lesson",
    "git",
    "en",
    "Don't keep work in `git stash` across days; I lost a stash after a `git stash clear` in a different worktree. Commit WIP to a branch instead.",
)
N(
    "git_cherry_pick_ja",
    "lesson",
    "git",
    "ja",
    "リリースブランチへの修正は main で直してから cherry-pick -x で持っていく。逆方向でやると main に修正が入らず、次のリリースで再発した。",
)
N(
    "git_tags",
    "knowledge",
    "git",
    "en",
    "Release tags are annotated and follow vMAJOR.MINOR.PATCH; the release workflow only triggers on tags matching v*.*.*.",
)
N(
    "git_blame_ignore",
    "knowledge",
    "git",
    "en",
    "The big black/ruff reformat commit is listed in .git-blame-ignore-revs; run `git config blame.ignoreRevsFile .git-blame-ignore-revs` so blame skips it.",
)
N(
    "git_merge_conflict_th",
    "lesson",
    "git",
    "th",
    "ถ้า conflict ใน lock file (pnpm-lock.yaml) อย่าแก้ด้วยมือ ให้เอาเวอร์ชันของ main แล้วรัน pnpm install ใหม่",
)
N(
    "git_large_repo_ja",
    "knowledge",
    "git",
    "ja",
    "monorepo は大きいので、CI では git clone --filter=blob:none を使っている。ローカルでも同じ方法で clone 時間が半分になる。",
)
N(
    "git_worktree",
    "knowledge",
    "git",
    "en",
    "The user uses git worktrees (~/src/app-wt/<branch>) for parallel work; never delete a directory there without asking, it may hold uncommitted changes.",
)
N(
    "git_amend_pushed",
    "lesson",
    "git",
    "th",
    "อย่า amend commit ที่ push ขึ้นไปแล้วบน branch ที่คนอื่นดึงไปทำต่อ เพราะต้อง force push ตามมาอีกที",
)

Q("trigger", "en", "rebase", ["git_rebase_before_pr", "git_pull_rebase"])
Q("trigger", "th", "git stash", ["git_stash_lesson"])
Q(
    "contextual",
    "en",
    "I ran git reset --hard on the wrong branch and the last three commits I made this morning are gone from git log. Is there any way to recover them?",
    ["git_reflog"],
)
Q(
    "contextual",
    "en",
    "A bug appeared somewhere in the last 200 commits and there is a failing test that reproduces it. I'm planning to read the diffs one by one to find the culprit.",
    ["git_bisect"],
)
Q(
    "crosslang",
    "en",
    "build fails right after cloning because proto files are missing",
    ["git_submodule_ja"],
)
Q("crosslang", "ja", "シェルスクリプトが CRLF になってコンテナで動かない", ["git_crlf_th"])
Q(
    "crosslang",
    "en",
    "conflict in pnpm-lock.yaml after merging main, how to resolve",
    ["git_merge_conflict_th"],
)
Q(
    "paraphrase",
    "en",
    "annotating lines by author keeps showing the mass formatting change",
    ["git_blame_ignore"],
)
Q(
    "contextual",
    "en",
    "There's a directory ~/src/app-wt/old-spike that looks abandoned and I'd like to delete it to free disk space before continuing with the cleanup task.",
    ["git_worktree"],
)
Q(
    "crosslang",
    "en",
    "how should a fix reach the release branch: fix there first or on main first?",
    ["git_cherry_pick_ja"],
)
Q(
    "type_filter",
    "en",
    "git push force rewrite history",
    ["git_force_push", "git_amend_pushed"],
    type="lesson",
)
Q("paraphrase", "en", "putting unfinished edits aside for a week or so", ["git_stash_lesson"])
# ---------------------------------------------------------------------------
# CI
# ---------------------------------------------------------------------------
N(
    "ci_required_check",
    "lesson",
    "ci",
    "en",
    "Never mark a failing CI check as not-required just to get a PR merged. We did it once for the migration check and shipped a migration "
    "that did not apply on Postgres 15; production deploy failed halfway.",
    pri="high",
    age=287.0,
)
N(
    "ci_pip_cache",
    "lesson",
    "ci",
    "en",
    "Cache ~/.cache/pip keyed on the hash of requirements*.txt; keying on the branch name meant every new branch rebuilt wheels from scratch.",
    age=52.0,
)
N(
    "ci_e2e_nightly",
    "lesson",
    "ci",
    "en",
    "Run the slow e2e suite on main and nightly only; on PRs it tripled the wait and people started ignoring red builds.",
    age=29.0,
)
N(
    "ci_runner_offline",
    "lesson",
    "ci",
    "en",
    "If a job sits in 'queued' for more than five minutes, the self-hosted runner is probably offline; check the runners page before re-pushing.",
    age=10.0,
)
Q(
    "buried",
    "en",
    "The migration check has been red for a day and blocks the release PR. I could uncheck it in branch protection so we can merge and fix it later.",
    ["ci_required_check"],
    under=["ci_pip_cache", "ci_e2e_nightly", "ci_runner_offline"],
)
Q(
    "buried",
    "ja",
    "CI のチェックが落ち続けているので、必須チェックから外してマージしてしまおうか",
    ["ci_required_check"],
    under=["ci_pip_cache", "ci_e2e_nightly", "ci_runner_offline"],
)
Q(
    "contextual",
    "en",
    "My workflow has been stuck in queued state for twenty minutes with no logs at all. Should I push an empty commit to retrigger it?",
    ["ci_runner_offline"],
)
Q(
    "paraphrase",
    "en",
    "each fresh topic line of work recompiles python packages; what identifier should the download store use",
    ["ci_pip_cache"],
)

N(
    "ci_rerun_th",
    "lesson",
    "ci",
    "th",
    "อย่ากด re-run CI ซ้ำ ๆ จนกว่าจะเขียวโดยไม่ดูสาเหตุ เทสต์ที่เราคิดว่า flaky แล้วปล่อยผ่านแบบนี้ จริง ๆ คือ race condition ที่ทำให้ order ซ้ำใน production",
    pri="high",
    age=276.0,
)
N(
    "ci_th_newer1",
    "lesson",
    "ci",
    "th",
    "job lint ใช้ ruff เวอร์ชันที่ pin ไว้ใน pyproject ถ้าผลบนเครื่องไม่ตรงกับ CI ให้เช็กเวอร์ชัน ruff ก่อน",
    age=40.0,
)
N(
    "ci_th_newer2",
    "lesson",
    "ci",
    "th",
    "matrix ของ CI รัน Python 3.11 และ 3.12 ถ้าใช้ syntax ใหม่ของ 3.12 จะพังบน 3.11",
    age=17.0,
)
N(
    "ci_th_newer3",
    "lesson",
    "ci",
    "th",
    "artifact ของ CI เก็บไว้แค่ 7 วัน ถ้าต้องใช้ไฟล์ coverage นานกว่านั้นให้ดาวน์โหลดเก็บเอง",
    age=5.0,
)
Q(
    "buried",
    "th",
    "เทสต์ใน CI แดงบ้างเขียวบ้าง กด re-run ไปเรื่อย ๆ จนผ่านแล้ว merge ได้ไหม",
    ["ci_rerun_th"],
    under=["ci_th_newer1", "ci_th_newer2", "ci_th_newer3"],
)
Q(
    "buried",
    "en",
    "test is red on CI now and then; just hit re-run until it passes and merge?",
    ["ci_rerun_th"],
    under=["ci_th_newer1", "ci_th_newer2", "ci_th_newer3"],
)
Q("crosslang", "en", "ruff passes locally but fails in the CI lint job", ["ci_th_newer1"])
Q("crosslang", "ja", "CI のアーティファクトはいつまで残る？", ["ci_th_newer3"])

N(
    "ci_secret_echo_ja",
    "lesson",
    "ci",
    "ja",
    "CI でシークレットをログに出さない。デバッグのつもりで env を全部 echo したら、公開リポジトリのログに AWS のアクセスキーが残ってしまった。",
    pri="high",
    age=301.0,
)
N(
    "ci_ja_newer1",
    "lesson",
    "ci",
    "ja",
    "ワークフローの actions はタグではなくコミット SHA で固定する。タグが付け替えられて挙動が変わったことがある。",
    age=48.0,
)
N(
    "ci_ja_newer2",
    "lesson",
    "ci",
    "ja",
    "CI の Docker ビルドは buildx のキャッシュを GitHub のキャッシュに保存すると 6 分短くなる。",
    age=27.0,
)
N(
    "ci_ja_newer3",
    "lesson",
    "ci",
    "ja",
    "ジョブの timeout-minutes を必ず設定する。デフォルトの 360 分のまま固まったジョブが runner を占有していた。",
    age=13.0,
)
Q(
    "buried",
    "ja",
    "CI が失敗する原因を調べたいので、ワークフローで環境変数を全部 echo して確認してもいい？",
    ["ci_secret_echo_ja"],
    under=["ci_ja_newer1", "ci_ja_newer2", "ci_ja_newer3"],
)
Q(
    "buried",
    "th",
    "จะ debug CI โดยพิมพ์ env ทั้งหมดออกมาใน log ได้ไหม",
    ["ci_secret_echo_ja"],
    under=["ci_ja_newer1", "ci_ja_newer2", "ci_ja_newer3"],
)
Q("crosslang", "en", "pin GitHub actions by tag or by commit sha?", ["ci_ja_newer1"])
Q("crosslang", "en", "a hung workflow job occupied the runner for six hours", ["ci_ja_newer3"])

N(
    "ci_coverage_gate",
    "knowledge",
    "ci",
    "en",
    "Coverage gate: PRs fail if total coverage drops more than 0.5 points versus main; new files need 80%.",
)
N(
    "ci_workflow_dispatch",
    "knowledge",
    "ci",
    "en",
    "The deploy workflow can be run by hand from the Actions tab (workflow_dispatch) with an input `ref`; only maintainers see the button.",
)
N(
    "ci_concurrency",
    "lesson",
    "ci",
    "en",
    "Add `concurrency: group: ${{ github.ref }}, cancel-in-progress: true` to PR workflows; stacked pushes were running four identical jobs.",
)
N(
    "ci_docker_rate_th",
    "lesson",
    "ci",
    "th",
    "CI ดึง image จาก Docker Hub แบบไม่ login แล้วโดน rate limit (429 Too Many Requests) ช่วงบ่าย ตอนนี้ใช้ mirror ภายในแทน",
)
N(
    "ci_mypy_conclusion",
    "conclusion",
    "ci",
    "en",
    "After a week of trying, strict mypy on the whole repo is not worth it yet: 1,900 errors, mostly in legacy/; we enforce strict only on new packages.",
)
N(
    "ci_nightly_ja",
    "knowledge",
    "ci",
    "ja",
    "nightly ワークフローは毎日 18:00 UTC（日本時間 3:00）に動き、E2E と依存関係の脆弱性スキャンを実行する。",
)
N(
    "ci_flaky_quarantine",
    "knowledge",
    "ci",
    "en",
    "Known-flaky tests are marked @pytest.mark.quarantine; CI runs them in a separate non-blocking job and posts results to #flaky-tests.",
)
N(
    "ci_node_version_th",
    "knowledge",
    "ci",
    "th",
    "CI ฝั่ง frontend อ่านเวอร์ชัน Node จากไฟล์ .nvmrc (ตอนนี้ 20.11) ถ้าจะอัปเกรดให้แก้ที่ไฟล์นี้ที่เดียว",
)
N(
    "ci_test_split",
    "conclusion",
    "ci",
    "en",
    "Splitting the pytest suite into 4 shards by timing data cut CI from 22 to 7 minutes; more shards did not help because setup dominates.",
)
N(
    "ci_self_hosted_disk",
    "lesson",
    "ci",
    "en",
    "Self-hosted runners fill their disks with docker layers; the weekly cleanup cron is on the runner host, not in the workflow. If builds fail with 'no space left', check that cron first.",
)

Q("trigger", "en", "CI flaky", ["ci_rerun_th", "ci_flaky_quarantine"])
Q("trigger", "ja", "CI が遅い", ["ci_test_split", "ci_ja_newer2", "ci_pip_cache", "ci_e2e_nightly"])
Q("trigger", "en", "Docker Hub 429", ["ci_docker_rate_th"])
Q(
    "contextual",
    "en",
    "Every time I push twice in a row to my PR branch, CI runs both commits in parallel and the queue gets long. Is there a setting to stop the older runs?",
    ["ci_concurrency"],
)
Q(
    "contextual",
    "en",
    "Builds on the self-hosted runner started failing with 'no space left on device' during docker build. Before I add a prune step to the workflow, what should I check?",
    ["ci_self_hosted_disk"],
)
Q("crosslang", "ja", "Docker Hub から pull すると CI で 429 になる", ["ci_docker_rate_th"])
Q("crosslang", "en", "where do we set the Node version for frontend CI?", ["ci_node_version_th"])
Q("crosslang", "th", "nightly workflow รันกี่โมง", ["ci_nightly_ja"])
Q(
    "paraphrase",
    "en",
    "how much may the tested-lines percentage fall before a pull request is blocked?",
    ["ci_coverage_gate"],
)
Q("type_filter", "en", "strict mypy whole repo", ["ci_mypy_conclusion"], type="conclusion")
Q("type_filter", "en", "pytest shards CI time", ["ci_test_split"], type="conclusion")
# ---------------------------------------------------------------------------
# deploy
# ---------------------------------------------------------------------------
N(
    "deploy_compat_migration",
    "lesson",
    "deploy",
    "en",
    "Before deploying, make sure the DB migration is backward compatible with the version that is still running. "
    "A deploy that renamed a column broke the old pods during the rolling update and we served 500s for 12 minutes. "
    "Rename = add new column, backfill, switch code, drop old column in a later release.",
    pri="high",
    age=322.0,
)
N(
    "deploy_canary_time",
    "lesson",
    "deploy",
    "en",
    "The canary stage takes about 8 minutes; don't promote early just because the first dashboard looks green, error rates lag by a few minutes.",
    age=44.0,
)
N(
    "deploy_announce",
    "lesson",
    "deploy",
    "en",
    "Announce every production deploy in #deploys with the PR links; support uses that channel to correlate customer reports.",
    age=23.0,
)
N(
    "deploy_tag_first",
    "lesson",
    "deploy",
    "en",
    "Create the release tag before deploying, not after; the rollback script looks up the previous tag and failed when the tag was missing.",
    age=14.0,
)
Q(
    "buried",
    "en",
    "The PR renames users.fullname to users.display_name in a migration and updates the code in the same release. Ready to deploy to production now?",
    ["deploy_compat_migration"],
    under=["deploy_canary_time", "deploy_announce", "deploy_tag_first"],
)
Q(
    "buried",
    "th",
    "PR นี้เปลี่ยนชื่อคอลัมน์ในตาราง users พร้อมแก้โค้ดใน release เดียว deploy ขึ้น prod เลยได้ไหม",
    ["deploy_compat_migration"],
    under=["deploy_canary_time", "deploy_announce", "deploy_tag_first"],
)
Q(
    "paraphrase",
    "en",
    "previous replicas crash mid-rollout once a field is called something else",
    ["deploy_compat_migration"],
)
Q(
    "contextual",
    "en",
    "Canary has been live for two minutes and the error graph is flat. I'd like to promote to 100% right away to save time; is that reasonable?",
    ["deploy_canary_time"],
)

N(
    "deploy_rollback_ja",
    "lesson",
    "deploy",
    "ja",
    "デプロイ前にロールバック手順と戻し先のイメージタグが存在するかを確認する。以前、戻し先のタグがレジストリの自動削除で消えていて、復旧に 1 時間かかった。",
    pri="high",
    age=290.0,
)
N(
    "deploy_ja_newer1",
    "lesson",
    "deploy",
    "ja",
    "本番デプロイ後 15 分はエラー率とレイテンシのダッシュボードを見続ける。すぐ次の作業に移らない。",
    age=39.0,
)
N(
    "deploy_ja_newer2",
    "lesson",
    "deploy",
    "ja",
    "デプロイの PR には「確認手順」欄を必ず書く。当番が深夜に見ても分かるように。",
    age=20.0,
)
N(
    "deploy_ja_newer3",
    "lesson",
    "deploy",
    "ja",
    "ステージングで確認したコミットと本番に出すコミットが同じか、SHA で照合してから出す。",
    age=4.0,
)
Q(
    "buried",
    "ja",
    "これから本番にデプロイする。事前に確認しておくべきことは？ロールバックになった場合が心配",
    ["deploy_rollback_ja"],
    under=["deploy_ja_newer1", "deploy_ja_newer2", "deploy_ja_newer3"],
)
Q(
    "buried",
    "en",
    "about to deploy; what if we need to roll back and the previous image is gone?",
    ["deploy_rollback_ja"],
    under=["deploy_ja_newer1", "deploy_ja_newer2", "deploy_ja_newer3"],
)
Q("trigger", "en", "rollback", ["deploy_rollback_ja", "deploy_tag_first"])

N(
    "deploy_flag_th",
    "lesson",
    "deploy",
    "th",
    "ก่อน deploy ต้องเช็กว่า feature flag ของฟีเจอร์ที่ยังไม่เสร็จปิดอยู่ใน prod ครั้งก่อนลืมปิด flag ผู้ใช้ทุกคนเห็นหน้าชำระเงินแบบใหม่ที่ยังทำไม่เสร็จเป็นชั่วโมง",
    pri="high",
    age=268.0,
)
N(
    "deploy_th_newer1",
    "lesson",
    "deploy",
    "th",
    "deploy ช่วงเย็นให้มีคนที่ดูแล service นั้นออนไลน์อยู่ด้วยอย่างน้อยหนึ่งคน",
    age=35.0,
)
N(
    "deploy_th_newer2",
    "lesson",
    "deploy",
    "th",
    "หลัง deploy ให้เช็ก log ของ worker ด้วย ไม่ใช่ดูแค่ API เพราะ worker ใช้ image เดียวกันแต่ restart ช้ากว่า",
    age=16.0,
)
N(
    "deploy_th_newer3",
    "lesson",
    "deploy",
    "th",
    "ถ้า deploy ค้างที่ขั้น health check เกิน 10 นาที ให้ยกเลิกแล้วดู event ของ pod ก่อนลองใหม่",
    age=3.0,
)
Q(
    "buried",
    "th",
    "ฟีเจอร์หน้าชำระเงินใหม่ยังไม่เสร็จ แต่จะ deploy branch main ขึ้น prod วันนี้ ต้องระวังอะไร",
    ["deploy_flag_th"],
    under=["deploy_th_newer1", "deploy_th_newer2", "deploy_th_newer3"],
)
Q(
    "buried",
    "en",
    "deploying main today while the new checkout page is half-built; anything to double-check first?",
    ["deploy_flag_th"],
    under=["deploy_th_newer1", "deploy_th_newer2", "deploy_th_newer3"],
)
Q("crosslang", "en", "deploy stuck on health check for a long time", ["deploy_th_newer3"])

# decision chain: deploy windows
R(
    "dec_deploy_window_a",
    "decision",
    "deploy",
    "en",
    "Deploy days: Tuesday and Thursday only",
    "Production deploys happen only on Tuesdays and Thursdays between 10:00 and 12:00 JST, with the whole team online.",
    age=410.0,
)
R(
    "dec_deploy_window_b",
    "decision",
    "deploy",
    "en",
    "Deploy any weekday before 15:00 JST, never on Fridays",
    "The two-day window batched too many changes. New rule: deploy any weekday before 15:00 JST; no production deploys on Fridays.",
    age=230.0,
    links=[("supersedes", "dec_deploy_window_a")],
)
R(
    "dec_deploy_window_c",
    "decision",
    "deploy",
    "en",
    "Continuous deployment on merge to main",
    "Every merge to main deploys automatically through the canary pipeline. Manual windows are gone; the only restriction is an announced change freeze.",
    age=55.0,
    links=[("supersedes", "dec_deploy_window_b")],
)
Q(
    "superseded",
    "en",
    "are deploys only allowed on Tuesday and Thursday mornings?",
    ["dec_deploy_window_c"],
    old="dec_deploy_window_a",
)
Q(
    "superseded",
    "en",
    "can I deploy on Friday, or is it before 15:00 on weekdays only?",
    ["dec_deploy_window_c"],
    old="dec_deploy_window_b",
)
Q(
    "superseded",
    "ja",
    "デプロイは火曜と木曜だけ？",
    ["dec_deploy_window_c"],
    old="dec_deploy_window_a",
)
Q("superseded", "th", "ห้าม deploy วันศุกร์ใช่ไหม", ["dec_deploy_window_c"], old="dec_deploy_window_b")

N(
    "deploy_freeze_ja",
    "knowledge",
    "deploy",
    "ja",
    "年末年始（12/27〜1/5）はチェンジフリーズ。緊急の修正だけ CTO の承認を得てデプロイする。",
)
N(
    "deploy_helm_th",
    "knowledge",
    "deploy",
    "th",
    "ค่า config ของแต่ละ environment อยู่ใน helm/values-<env>.yaml ห้ามแก้ค่า prod ด้วย kubectl edit ตรง ๆ เพราะ deploy รอบหน้าจะเขียนทับ",
)
N(
    "deploy_blue_green",
    "conclusion",
    "deploy",
    "en",
    "We evaluated blue/green for the API and dropped it: doubling the DB connection pools during switchover exceeded the RDS max_connections limit.",
)
N(
    "deploy_migrations_job",
    "knowledge",
    "deploy",
    "en",
    "Migrations run as a Kubernetes Job (pre-upgrade hook) before the new pods start; if the Job fails, the release is aborted and the old pods keep serving.",
)
N(
    "deploy_hotfix_process",
    "knowledge",
    "deploy",
    "en",
    "Hotfix process: branch from the release tag, PR into main with the label hotfix, then cherry-pick to the release branch; the pipeline fast-tracks the canary to 2 minutes.",
)
N(
    "deploy_mobile_ja",
    "knowledge",
    "deploy",
    "ja",
    "iOS アプリの審査は通常 1〜2 日かかる。API の破壊的変更は、対応版アプリのシェアが 95% を超えるまで入れない。",
)
N(
    "deploy_cdn_purge",
    "lesson",
    "deploy",
    "en",
    "After deploying the web app, purge only /index.html and /assets/manifest.json from the CDN. A full purge once sent 40k requests per second to the origin.",
)
N(
    "deploy_env_var_th",
    "lesson",
    "deploy",
    "th",
    "เพิ่ม environment variable ใหม่ต้องใส่ใน secret ของทุก environment ก่อน deploy โค้ดที่อ่านค่านั้น ไม่งั้น pod จะ crash loop ตอนสตาร์ท",
)
N(
    "deploy_smoke",
    "knowledge",
    "deploy",
    "en",
    "The post-deploy smoke test hits /healthz, logs in as smoke-user@example.com and loads the dashboard; it runs automatically after the canary.",
)
N(
    "deploy_db_pool_ja",
    "conclusion",
    "deploy",
    "ja",
    "デプロイ直後のレイテンシ悪化は、新しい Pod がコネクションプールを温める前にトラフィックを受けていたのが原因と結論づけた。readiness probe で DB 接続を確認するようにした。",
)

Q(
    "trigger",
    "en",
    "deploy",
    ["deploy_compat_migration", "deploy_rollback_ja", "deploy_flag_th", "dec_deploy_window_c"],
)
Q(
    "trigger",
    "th",
    "จะ deploy แล้ว",
    ["deploy_compat_migration", "deploy_rollback_ja", "deploy_flag_th", "dec_deploy_window_c"],
)
Q("trigger", "en", "change freeze", ["deploy_freeze_ja", "dec_deploy_window_c"])
Q(
    "contextual",
    "en",
    "Production pods are hitting a wrong timeout value. I'm going to kubectl edit the deployment to change the env var directly and then move on to the next ticket.",
    ["deploy_helm_th"],
)
Q(
    "contextual",
    "en",
    "The frontend deploy finished and users still get the old bundle. I'm thinking of purging the entire CDN cache so everybody gets the new version immediately.",
    ["deploy_cdn_purge"],
)
Q(
    "contextual",
    "en",
    "My PR reads a new environment variable FEATURE_LIMITS_URL at startup. It's approved and I'm about to merge, which will deploy it everywhere.",
    ["deploy_env_var_th"],
)
Q("crosslang", "en", "when is the year-end change freeze?", ["deploy_freeze_ja"])
Q("crosslang", "en", "why was latency bad right after each deploy?", ["deploy_db_pool_ja"])
Q("crosslang", "th", "ทำไมไม่ใช้ blue/green deployment กับ API", ["deploy_blue_green"])
Q(
    "paraphrase",
    "en",
    "urgent correction path starting from an already shipped version",
    ["deploy_hotfix_process"],
)
Q("type_filter", "en", "deploy canary promote", ["deploy_canary_time"], type="lesson")
Q(
    "type_filter",
    "en",
    "blue green switchover connections",
    ["deploy_blue_green"],
    type="conclusion",
)
# ---------------------------------------------------------------------------
# databases
# ---------------------------------------------------------------------------
N(
    "db_alter_orders",
    "lesson",
    "db",
    "en",
    "Never run ALTER TABLE on the orders table during business hours. Adding a column with a volatile default took an ACCESS EXCLUSIVE lock "
    "and blocked checkout for 40 minutes. Do it after 22:00 JST with lock_timeout = '3s' and retry.",
    pri="high",
    age=341.0,
)
N(
    "db_index_concurrently",
    "lesson",
    "db",
    "en",
    "Create indexes on big tables with CREATE INDEX CONCURRENTLY, and remember it cannot run inside a transaction block, so the migration needs atomic = False.",
    age=47.0,
)
N(
    "db_migration_names",
    "lesson",
    "db",
    "en",
    "Migration files need a timestamp prefix (20240501_1200_add_x.py); two people using sequence numbers created conflicting heads.",
    age=28.0,
)
N(
    "db_down_migration",
    "lesson",
    "db",
    "en",
    "Always write the downgrade step, even if it only drops the new column; the rollback script runs downgrades automatically.",
    age=15.0,
)
Q(
    "buried",
    "en",
    "I need to add a `gift_wrap boolean default false` column to the orders table. It's lunchtime and the migration is tiny, so I'll just run it on production now.",
    ["db_alter_orders"],
    under=["db_index_concurrently", "db_migration_names", "db_down_migration"],
)
Q(
    "buried",
    "ja",
    "orders テーブルにカラムを追加するマイグレーションを昼間に本番で流して大丈夫？",
    ["db_alter_orders"],
    under=["db_index_concurrently", "db_migration_names", "db_down_migration"],
)
Q("trigger", "en", "ALTER TABLE", ["db_alter_orders"])
Q("trigger", "en", "migration", ["db_alter_orders", "deploy_compat_migration", "db_backup_th"])
Q(
    "contextual",
    "en",
    "Adding an index on events(user_id) which has 300 million rows. My migration wraps CREATE INDEX CONCURRENTLY in the usual transaction and it errors out.",
    ["db_index_concurrently"],
)
Q(
    "paraphrase",
    "en",
    "a pair of developers produced clashing schema-change tips because of counting order",
    ["db_migration_names"],
)

N(
    "db_begin_first_ja",
    "lesson",
    "db",
    "ja",
    "本番 DB で UPDATE / DELETE を手で打つときは、必ず BEGIN してから実行し、影響件数を確認してから COMMIT する。WHERE を付け忘れて users を全件更新したことがある。",
    pri="high",
    age=315.0,
)
N(
    "db_ja_newer1",
    "lesson",
    "db",
    "ja",
    "本番 DB への接続は踏み台経由の読み取り専用ユーザーを基本にする。書き込みユーザーは作業のときだけ申請する。",
    age=42.0,
)
N(
    "db_ja_newer2",
    "lesson",
    "db",
    "ja",
    "大量の UPDATE は 1,000 件ずつに分けてコミットする。一度に流すとレプリカの遅延が数分に伸びる。",
    age=21.0,
)
N(
    "db_ja_newer3",
    "lesson",
    "db",
    "ja",
    "EXPLAIN ANALYZE は本当にクエリを実行するので、本番で重い DELETE に付けて実行しない。",
    age=8.5,
)
Q(
    "buried",
    "ja",
    "本番 DB で不正なデータを直すために UPDATE 文を直接実行したい。気をつけることは？",
    ["db_begin_first_ja"],
    under=["db_ja_newer1", "db_ja_newer2", "db_ja_newer3"],
)
Q(
    "buried",
    "en",
    "going to fix bad rows by running a manual UPDATE in the production psql session",
    ["db_begin_first_ja"],
    under=["db_ja_newer1", "db_ja_newer2", "db_ja_newer3"],
)
Q("crosslang", "en", "does EXPLAIN ANALYZE actually execute the statement?", ["db_ja_newer3"])
Q("crosslang", "th", "อัปเดตข้อมูลจำนวนมากทีเดียวแล้ว replica lag สูง", ["db_ja_newer2"])

N(
    "db_backup_th",
    "lesson",
    "db",
    "th",
    "ก่อนรัน migration ที่ลบหรือแปลงข้อมูลบน prod ต้องสั่ง snapshot ของ RDS ก่อนทุกครั้ง เคยรัน migration ที่แปลง enum ผิด ข้อมูลสถานะ order หายไปครึ่งหนึ่ง กู้จาก backup เมื่อคืนทำให้เสียข้อมูลไป 9 ชั่วโมง",
    pri="high",
    age=296.0,
)
N(
    "db_th_newer1",
    "lesson",
    "db",
    "th",
    "migration ที่เพิ่มคอลัมน์ NOT NULL ต้องใส่ default หรือ backfill ก่อน ไม่งั้นจะ fail บนตารางที่มีข้อมูลอยู่แล้ว",
    age=37.0,
)
N(
    "db_th_newer2",
    "lesson",
    "db",
    "th",
    "ทดสอบ migration กับ dump ของ staging ก่อนเสมอ เพราะข้อมูลบนเครื่อง dev ว่างเกินไปจนไม่เจอปัญหา",
    age=18.0,
)
N(
    "db_th_newer3",
    "lesson",
    "db",
    "th",
    "ชื่อ enum ใหม่ใน Postgres เพิ่มได้ด้วย ALTER TYPE ... ADD VALUE แต่ลบค่าเดิมไม่ได้ ต้องวางแผนก่อน",
    age=6.5,
)
Q(
    "buried",
    "th",
    "จะรัน migration ที่แปลงค่า enum ของสถานะ order บน prod คืนนี้ ต้องเตรียมอะไรบ้าง",
    ["db_backup_th"],
    under=["db_th_newer1", "db_th_newer2", "db_th_newer3"],
)
Q(
    "buried",
    "en",
    "tonight I run a data-converting migration on the production order statuses; what preparation is required?",
    ["db_backup_th"],
    under=["db_th_newer1", "db_th_newer2", "db_th_newer3"],
)
Q("crosslang", "en", "can I remove a value from a Postgres enum type?", ["db_th_newer3"])

# decision chain: ORM
R(
    "dec_orm_a",
    "decision",
    "db",
    "en",
    "Use raw SQL through psycopg2 for all data access",
    "No ORM: all queries are raw SQL strings executed through psycopg2, kept in the queries/ package.",
    age=460.0,
)
R(
    "dec_orm_b",
    "decision",
    "db",
    "en",
    "SQLAlchemy 2.0 ORM for new code",
    "New code uses the SQLAlchemy 2.0 ORM with typed Mapped[] columns; the raw-SQL queries/ package is frozen and migrated as touched.",
    age=190.0,
    links=[("supersedes", "dec_orm_a")],
)
Q(
    "superseded",
    "en",
    "should new data access be raw SQL strings through psycopg2?",
    ["dec_orm_b"],
    old="dec_orm_a",
)
Q("superseded", "th", "โค้ดใหม่ยังเขียน SQL ดิบผ่าน psycopg2 อยู่ไหม", ["dec_orm_b"], old="dec_orm_a")

# decision chain: migration tool usage
R(
    "dec_alembic_a",
    "decision",
    "db",
    "ja",
    "マイグレーションは Alembic の autogenerate で作る",
    "スキーマ変更は alembic revision --autogenerate で生成し、そのままコミットしてよい。",
    age=420.0,
)
R(
    "dec_alembic_b",
    "decision",
    "db",
    "ja",
    "autogenerate の出力は必ず手で見直す",
    "autogenerate はインデックス名や server_default の差分を取りこぼすため、生成後に必ず手で修正・レビューする。",
    age=260.0,
    links=[("supersedes", "dec_alembic_a")],
)
R(
    "dec_alembic_c",
    "decision",
    "db",
    "ja",
    "マイグレーションは手書きのみ、autogenerate は禁止",
    "autogenerate がテーブル削除を生成して本番直前で気付いた件を受けて、マイグレーションはすべて手書きとし autogenerate は使わない。",
    age=70.0,
    links=[("supersedes", "dec_alembic_b")],
)
Q(
    "superseded",
    "ja",
    "マイグレーションは alembic の autogenerate で作ってそのままコミットしていい？",
    ["dec_alembic_c"],
    old="dec_alembic_a",
)
Q(
    "superseded",
    "ja",
    "autogenerate で出したマイグレーションは手で見直せば OK だっけ？",
    ["dec_alembic_c"],
    old="dec_alembic_b",
)
Q(
    "superseded",
    "en",
    "is it fine to commit the output of alembic revision --autogenerate as is?",
    ["dec_alembic_c"],
    old="dec_alembic_a",
)

# decision chain: DB hosting
R(
    "dec_dbhost_a",
    "decision",
    "db",
    "th",
    "ใช้ Postgres 12 ที่ดูแลเองบน VM",
    "ฐานข้อมูลหลักรันบน VM ของเราเอง (Postgres 12) มีสคริปต์ backup ด้วย pg_dump ทุกคืน",
    age=520.0,
)
R(
    "dec_dbhost_b",
    "decision",
    "db",
    "th",
    "ย้ายไป Amazon RDS Postgres 15",
    "ย้ายฐานข้อมูลหลักไป RDS Postgres 15 แบบ Multi-AZ ใช้ automated snapshot แทนสคริปต์ pg_dump",
    age=240.0,
    links=[("supersedes", "dec_dbhost_a")],
)
Q(
    "superseded",
    "th",
    "backup ฐานข้อมูลด้วยสคริปต์ pg_dump บน VM ทุกคืนใช่ไหม",
    ["dec_dbhost_b"],
    old="dec_dbhost_a",
)
Q(
    "superseded",
    "en",
    "is the main database still self-managed Postgres 12 on our VM?",
    ["dec_dbhost_b"],
    old="dec_dbhost_a",
)

# decision chain: timestamps
R(
    "dec_tz_a",
    "decision",
    "db",
    "ja",
    "タイムスタンプは JST で保存する",
    "利用者が全員日本なので、DB の日時カラムは JST（timestamp without time zone）で保存する。",
    age=500.0,
)
R(
    "dec_tz_b",
    "decision",
    "db",
    "ja",
    "タイムスタンプは UTC の timestamptz で保存し、表示時に変換",
    "タイ向けリリースに伴い、日時はすべて UTC の timestamptz で保存し、表示の直前にユーザーのタイムゾーンへ変換する。",
    age=210.0,
    links=[("supersedes", "dec_tz_a")],
)
Q("superseded", "ja", "DB の日時は JST で保存するんだっけ？", ["dec_tz_b"], old="dec_tz_a")
Q(
    "superseded",
    "en",
    "do we store timestamps in JST as timestamp without time zone?",
    ["dec_tz_b"],
    old="dec_tz_a",
)
Q("superseded", "th", "เก็บเวลาใน DB เป็นเวลาญี่ปุ่น JST ใช่ไหม", ["dec_tz_b"], old="dec_tz_a")

# audit -> fix -> verification
R(
    "aud_n_plus_one",
    "audit",
    "db",
    "en",
    "Audit: N+1 queries on GET /orders",
    "GET /orders issues one query per order to load line items; 50 orders = 51 queries, p95 1.8 s.",
    age=130.0,
)
R(
    "fix_n_plus_one",
    "fix",
    "db",
    "en",
    "Fix: eager-load line items with selectinload",
    "Added selectinload(Order.items) in the orders repository; the endpoint now runs 2 queries regardless of page size.",
    age=120.0,
    links=[("resolves", "aud_n_plus_one")],
)
R(
    "ver_n_plus_one",
    "verification",
    "db",
    "en",
    "Verified: GET /orders query count and latency",
    "Load test after the fix: 2 queries per request, p95 210 ms on the staging dataset.",
    age=118.0,
    links=[("verifies", "fix_n_plus_one")],
)
R(
    "aud_missing_fk_idx",
    "audit",
    "db",
    "ja",
    "監査: 外部キーにインデックスがない",
    "order_items.order_id と payments.order_id にインデックスがなく、orders の削除時に全件スキャンが走っている。",
    age=160.0,
)
R(
    "fix_missing_fk_idx",
    "fix",
    "db",
    "ja",
    "修正: 外部キー列にインデックスを追加",
    "CREATE INDEX CONCURRENTLY で order_items(order_id) と payments(order_id) にインデックスを追加した。",
    age=150.0,
    links=[("resolves", "aud_missing_fk_idx")],
)
R(
    "ver_missing_fk_idx",
    "verification",
    "db",
    "ja",
    "検証: 外部キーインデックス追加後の削除速度",
    "orders 1 件の削除が 4.2 秒から 8 ms になったことを本番相当のデータで確認した。",
    age=149.0,
    links=[("verifies", "fix_missing_fk_idx")],
)
R(
    "aud_missing_fk_idx_dup",
    "audit",
    "db",
    "en",
    "Audit: deleting an order is slow (seq scan on order_items)",
    "Deleting one order takes ~4 s; EXPLAIN shows a sequential scan on order_items because order_id has no index.",
    age=148.0,
    links=[("duplicates", "aud_missing_fk_idx")],
)
Q(
    "contextual",
    "en",
    "GET /orders got slow again and I suspect the per-order item loading. Was the N+1 problem on that endpoint already found and fixed, and what is the measured latency?",
    ["aud_n_plus_one", "fix_n_plus_one", "ver_n_plus_one"],
)
Q("type_filter", "en", "N+1 orders endpoint", ["fix_n_plus_one"], type="fix")
Q(
    "type_filter",
    "en",
    "orders delete slow order_items index",
    ["aud_missing_fk_idx", "aud_missing_fk_idx_dup"],
    type="audit",
)
Q(
    "crosslang",
    "en",
    "did the foreign key index fix actually speed up order deletion?",
    ["ver_missing_fk_idx"],
)
Q(
    "type_filter",
    "ja",
    "外部キー インデックス 削除 速度",
    ["ver_missing_fk_idx"],
    type="verification",
)

N(
    "db_pool_knowledge",
    "knowledge",
    "db",
    "en",
    "RDS max_connections is 500; each API pod opens a pool of 20 and we run up to 18 pods, workers take another 100. Check this budget before raising pool sizes.",
)
N(
    "db_replica_lag",
    "lesson",
    "db",
    "en",
    "Don't read your own write from the replica. The profile page read from the replica right after saving and showed stale data; read-after-write must hit the primary.",
)
N(
    "db_vacuum_ja",
    "knowledge",
    "db",
    "ja",
    "events テーブルは更新が多いので autovacuum_vacuum_scale_factor を 0.02 に下げている。デフォルトだと肥大化して検索が遅くなる。",
)
N(
    "db_deadlock_th",
    "conclusion",
    "db",
    "th",
    "สรุปสาเหตุ deadlock ในระบบสต็อก: สอง worker ล็อกแถว product คนละลำดับ แก้โดยเรียง product_id ก่อน SELECT ... FOR UPDATE ทุกครั้ง",
)
N(
    "db_uuid_pk",
    "knowledge",
    "db",
    "en",
    "Primary keys for new tables are ULIDs stored as uuid; they sort by creation time, so indexes don't fragment like with random UUIDv4.",
)
N(
    "db_jsonb_lesson",
    "lesson",
    "db",
    "en",
    "Querying inside the jsonb `attributes` column without a GIN index does a full scan; add the index or promote the field to a real column.",
)
N(
    "db_timezone_query_ja",
    "lesson",
    "db",
    "ja",
    "「今日の注文」を集計するときは created_at AT TIME ZONE 'Asia/Tokyo' で日付を切る。UTC のまま date() すると朝 9 時で日付が変わる。",
)
N(
    "db_count_slow",
    "conclusion",
    "db",
    "en",
    "SELECT count(*) on events takes 30+ s; the admin dashboard now uses pg_class.reltuples as an estimate, which is within 2% and instant.",
)
N(
    "db_sqlite_tests_th",
    "lesson",
    "db",
    "th",
    "อย่าใช้ SQLite แทน Postgres ในเทสต์ของ repository เพราะพฤติกรรม JSON และ ON CONFLICT ต่างกัน เทสต์ผ่านแต่ prod พัง",
)
N(
    "db_redis_keys",
    "lesson",
    "db",
    "en",
    "Never run KEYS * on the production Redis; it blocks the single thread. Use SCAN with a MATCH pattern and COUNT 1000.",
)
N(
    "db_lock_timeout_ja",
    "knowledge",
    "db",
    "ja",
    "マイグレーション用の DB ユーザーには lock_timeout = 3s と statement_timeout = 15min がデフォルトで設定されている。",
)
N(
    "db_partition",
    "conclusion",
    "db",
    "en",
    "Partitioning audit_log by month made retention trivial (DROP the old partition) but did not speed up queries that lack a time filter.",
)

Q("trigger", "en", "KEYS *", ["db_redis_keys"])
Q("trigger", "ja", "デッドロック", ["db_deadlock_th"])
Q(
    "contextual",
    "en",
    "The user saves their profile and the page reloads showing the old display name for a second or two. The read goes through the replica session. Why?",
    ["db_replica_lag"],
)
Q(
    "contextual",
    "en",
    "I want to raise the API's database pool size from 20 to 40 per pod because requests wait on connections during peaks. Anything to consider first?",
    ["db_pool_knowledge"],
)
Q(
    "contextual",
    "en",
    "Writing repository tests for the upsert logic. It would be faster to run them against an in-memory SQLite database instead of spinning up Postgres.",
    ["db_sqlite_tests_th"],
)
Q("crosslang", "en", "daily order totals switch date at 9am", ["db_timezone_query_ja"])
Q("crosslang", "en", "why did stock workers deadlock and how was it fixed?", ["db_deadlock_th"])
Q("crosslang", "th", "events table โตเร็ว autovacuum ตั้งไว้เท่าไหร่", ["db_vacuum_ja"])
Q(
    "paraphrase",
    "en",
    "exact total of rows in the huge activity log is too slow for the back-office screen",
    ["db_count_slow"],
)
Q(
    "paraphrase",
    "en",
    "enumerating every entry of the in-memory cache server in prod",
    ["db_redis_keys"],
)
Q("type_filter", "en", "jsonb attributes query", ["db_jsonb_lesson"], type="lesson")
Q("type_filter", "en", "partition audit log", ["db_partition"], type="conclusion")
# ---------------------------------------------------------------------------
# security
# ---------------------------------------------------------------------------
N(
    "sec_customer_data",
    "lesson",
    "security",
    "en",
    "Never paste production customer data into chat, an issue or a prompt. I pasted a failing row with an email address and phone number "
    "into a GitHub issue; it had to be purged and reported to the privacy officer. Reproduce with the anonymised fixtures instead.",
    pri="high",
    age=344.0,
)
N(
    "sec_newer_1",
    "lesson",
    "security",
    "en",
    "Rotate the staging API keys when someone leaves the team; they were shared in the team vault and nobody owned rotation.",
    age=49.0,
)
N(
    "sec_newer_2",
    "lesson",
    "security",
    "en",
    "Dependabot security PRs get merged within 3 days; batching them monthly left a known-vulnerable jinja2 in production for weeks.",
    age=27.0,
)
N(
    "sec_newer_3",
    "lesson",
    "security",
    "en",
    "Log lines must not contain full request bodies on auth endpoints; the debug logger was printing passwords in plain text.",
    age=9.5,
)
Q(
    "buried",
    "en",
    "To show the user the bug, I'll copy the failing production row (name, email, phone) into the GitHub issue description so they can see exactly what breaks.",
    ["sec_customer_data"],
    under=["sec_newer_1", "sec_newer_2", "sec_newer_3"],
)
Q(
    "buried",
    "th",
    "จะก็อปข้อมูลลูกค้าจริงจาก prod ใส่ใน issue เพื่อให้ทีมดูบั๊ก ได้ไหม",
    ["sec_customer_data"],
    under=["sec_newer_1", "sec_newer_2", "sec_newer_3"],
)
Q("trigger", "en", "customer data", ["sec_customer_data"])
Q(
    "paraphrase",
    "en",
    "sharing a real person's contact details in a public ticket while debugging",
    ["sec_customer_data"],
)

N(
    "sec_hardcode_key_ja",
    "lesson",
    "security",
    "ja",
    "API キーやトークンをコードに直書きしない。テスト用のつもりで Stripe の本番キーをハードコードしてコミットし、GitHub のシークレットスキャンに検知されてキーを失効させることになった。",
    pri="high",
    age=305.0,
)
N(
    "sec_ja_newer1",
    "lesson",
    "security",
    "ja",
    "社内ツールのセッション Cookie には Secure と HttpOnly を必ず付ける。",
    age=43.0,
)
N(
    "sec_ja_newer2",
    "lesson",
    "security",
    "ja",
    "パスワードリセットのトークンは 30 分で失効させ、一度使ったら無効にする。",
    age=22.5,
)
N(
    "sec_ja_newer3",
    "lesson",
    "security",
    "ja",
    "管理画面の CSV エクスポートは、Excel の数式インジェクション対策で先頭の = + - @ をエスケープする。",
    age=7.5,
)
Q(
    "buried",
    "ja",
    "とりあえず動かしたいので Stripe の API キーを settings.py に直接書いてコミットしてもいい？",
    ["sec_hardcode_key_ja"],
    under=["sec_ja_newer1", "sec_ja_newer2", "sec_ja_newer3"],
)
Q(
    "buried",
    "en",
    "quick test: can I hardcode the Stripe secret key in settings.py and commit it for now?",
    ["sec_hardcode_key_ja"],
    under=["sec_ja_newer1", "sec_ja_newer2", "sec_ja_newer3"],
)
Q("crosslang", "en", "CSV export opened in Excel could run formulas", ["sec_ja_newer3"])
Q("crosslang", "th", "token รีเซ็ตรหัสผ่านควรหมดอายุเมื่อไหร่", ["sec_ja_newer2"])

N(
    "sec_sql_injection_th",
    "lesson",
    "security",
    "th",
    "ห้ามต่อ string สร้าง SQL จาก input ของผู้ใช้ แม้แต่ชื่อคอลัมน์สำหรับ sort ครั้งหนึ่งช่อง sort ในหน้า admin โดน SQL injection จนดึงตาราง users ออกไปได้ ให้ใช้ whitelist ของชื่อคอลัมน์",
    pri="high",
    age=318.0,
)
N(
    "sec_th_newer1",
    "lesson",
    "security",
    "th",
    "อัปโหลดไฟล์ต้องตรวจ MIME type จากเนื้อไฟล์จริง ไม่ใช่เชื่อนามสกุลไฟล์",
    age=36.0,
)
N(
    "sec_th_newer2",
    "lesson",
    "security",
    "th",
    "หน้า admin ต้องเปิด 2FA ทุกบัญชี บัญชีที่ไม่เปิดจะถูกล็อกอัตโนมัติ",
    age=15.5,
)
N(
    "sec_th_newer3",
    "lesson",
    "security",
    "th",
    "อย่าส่ง stack trace กลับไปให้ client ใน production ให้ส่งแค่ trace_id",
    age=5.5,
)
Q(
    "buried",
    "th",
    "อยากให้ผู้ใช้เลือกคอลัมน์สำหรับ sort ในหน้า admin จะเอาค่าจาก query string ไปต่อใน ORDER BY ตรง ๆ ได้ไหม",
    ["sec_sql_injection_th"],
    under=["sec_th_newer1", "sec_th_newer2", "sec_th_newer3"],
)
Q(
    "buried",
    "en",
    "admin list: plan to put the ?sort= parameter straight into ORDER BY",
    ["sec_sql_injection_th"],
    under=["sec_th_newer1", "sec_th_newer2", "sec_th_newer3"],
)
Q("crosslang", "en", "validate uploaded files by extension or by content?", ["sec_th_newer1"])

# decision chain: secrets storage
R(
    "dec_secrets_a",
    "decision",
    "security",
    "en",
    "Secrets live in .env files on each server",
    "Each server keeps its secrets in /etc/app/.env, copied by the provisioning script; the file is chmod 600.",
    age=540.0,
)
R(
    "dec_secrets_b",
    "decision",
    "security",
    "en",
    "Move secrets to HashiCorp Vault",
    "Secrets move to HashiCorp Vault; apps fetch them at boot with a Vault agent sidecar. .env files on servers are deleted.",
    age=330.0,
    links=[("supersedes", "dec_secrets_a")],
)
R(
    "dec_secrets_c",
    "decision",
    "security",
    "en",
    "Use AWS Secrets Manager via external-secrets",
    "Vault was too much to operate for a team of our size. Secrets are in AWS Secrets Manager and synced into Kubernetes Secrets by the external-secrets operator.",
    age=95.0,
    links=[("supersedes", "dec_secrets_b")],
)
Q(
    "superseded",
    "en",
    "where is the .env file with the secrets on the app servers?",
    ["dec_secrets_c"],
    old="dec_secrets_a",
)
Q(
    "superseded",
    "en",
    "how do I add a new secret to Vault for the vault agent sidecar?",
    ["dec_secrets_c"],
    old="dec_secrets_b",
)
Q(
    "superseded",
    "ja",
    "シークレットは Vault に入れればいい？",
    ["dec_secrets_c"],
    old="dec_secrets_b",
)
Q(
    "superseded",
    "th",
    "secret ของ server เก็บในไฟล์ .env ใช่ไหม",
    ["dec_secrets_c"],
    old="dec_secrets_a",
)

# audits
R(
    "aud_jwt_alg",
    "audit",
    "security",
    "en",
    "Audit: JWT verification accepts alg=none",
    "auth-gateway decodes tokens with algorithms taken from the token header; a token with alg=none passes verification.",
    age=180.0,
    pri="high",
)
R(
    "fix_jwt_alg",
    "fix",
    "security",
    "en",
    "Fix: pin JWT algorithm to RS256",
    "jwt.decode now passes algorithms=['RS256'] explicitly and rejects any other header value.",
    age=176.0,
    links=[("resolves", "aud_jwt_alg")],
)
R(
    "ver_jwt_alg",
    "verification",
    "security",
    "en",
    "Verified: alg=none and HS256 tokens are rejected",
    "Added regression tests with alg=none and HS256-signed tokens; both get 401. Ran the same check against production.",
    age=175.0,
    links=[("verifies", "fix_jwt_alg")],
)
R(
    "aud_s3_public_th",
    "audit",
    "security",
    "th",
    "ตรวจพบ: bucket ใบเสร็จเปิด public",
    "bucket เก็บไฟล์ใบเสร็จ PDF ตั้ง ACL เป็น public-read ใครมี URL ก็ดาวน์โหลดได้",
    age=140.0,
    pri="high",
)
R(
    "fix_s3_public_th",
    "fix",
    "security",
    "th",
    "แก้ไข: ปิด public และใช้ presigned URL",
    "เปิด Block Public Access ของ bucket และเปลี่ยนลิงก์ดาวน์โหลดใบเสร็จเป็น presigned URL อายุ 5 นาที",
    age=138.0,
    links=[("resolves", "aud_s3_public_th")],
)
R(
    "ver_s3_public_th",
    "verification",
    "security",
    "th",
    "ยืนยัน: URL เก่าของใบเสร็จเข้าไม่ได้แล้ว",
    "ทดสอบ URL แบบเดิมได้ 403 และ presigned URL หมดอายุหลัง 5 นาทีตามที่ตั้งไว้",
    age=137.0,
    links=[("verifies", "fix_s3_public_th")],
)
R(
    "aud_rate_login",
    "audit",
    "security",
    "ja",
    "監査: ログイン API にレート制限がない",
    "POST /login に試行回数の制限がなく、パスワード総当たりが可能。",
    age=100.0,
)
R(
    "fix_rate_login",
    "fix",
    "security",
    "ja",
    "修正: ログイン試行を IP とアカウントごとに制限",
    "IP ごとに 1 分 10 回、アカウントごとに 1 時間 20 回を超えると 429 を返すようにした。",
    age=97.0,
    links=[("resolves", "aud_rate_login")],
)
Q(
    "contextual",
    "en",
    "Reviewing auth-gateway token handling. Is the JWT alg=none weakness still open, or has it been fixed and checked against production?",
    ["aud_jwt_alg", "fix_jwt_alg", "ver_jwt_alg"],
)
Q("crosslang", "en", "receipt PDFs bucket was public — how was it fixed?", ["fix_s3_public_th"])
Q(
    "crosslang",
    "en",
    "is there brute-force protection on the login endpoint now?",
    ["fix_rate_login"],
)
Q("type_filter", "en", "JWT algorithm", ["ver_jwt_alg"], type="verification")
Q("type_filter", "th", "bucket public ใบเสร็จ", ["aud_s3_public_th"], type="audit")
Q("type_filter", "en", "login brute force 429", ["fix_rate_login"], type="fix")

N(
    "sec_secret_scan",
    "knowledge",
    "security",
    "en",
    "GitHub secret scanning and push protection are on for the org; a blocked push shows the secret type and the line, and bypassing requires a reason that security reviews.",
)
N(
    "sec_pii_fixtures_ja",
    "knowledge",
    "security",
    "ja",
    "匿名化済みの本番相当データは s3://qa-fixtures/anonymized/ に週次で作られる。再現にはこちらを使う。",
)
N(
    "sec_csp",
    "conclusion",
    "security",
    "en",
    "CSP rollout conclusion: report-only for two weeks showed 90% of violations came from the chat widget's inline script; we allow its hash instead of 'unsafe-inline'.",
)
N(
    "sec_ssh_keys_th",
    "knowledge",
    "security",
    "th",
    "การเข้า server ต้องผ่าน SSM Session Manager เท่านั้น ปิดพอร์ต 22 หมดแล้ว และไม่มีการแจก SSH key ให้ใคร",
)
N(
    "sec_deps_pin",
    "lesson",
    "security",
    "en",
    "Pin transitive dependencies with hashes (pip-compile --generate-hashes); an unpinned transitive package was typosquatted in a sister project.",
)
N(
    "sec_cors_wildcard_ja",
    "lesson",
    "security",
    "ja",
    "Access-Control-Allow-Origin: * と credentials を同時に使わない。ブラウザは拒否するし、回避しようとして Origin をそのまま反射させるのは危険。",
)

Q("trigger", "en", "API key", ["sec_hardcode_key_ja", "git_no_verify_th", "sec_newer_1"])
Q("trigger", "th", "ข้อมูลลูกค้า", ["sec_customer_data"])
Q(
    "contextual",
    "en",
    "A QA engineer asked me to reproduce a bug with realistic data. I'm thinking about pulling a few rows from the production database directly onto my laptop for that.",
    ["sec_customer_data", "sec_pii_fixtures_ja"],
)
Q(
    "contextual",
    "en",
    "I need shell access to the worker host to inspect a stuck process. Where do I get an SSH key and which port should I connect to?",
    ["sec_ssh_keys_th"],
)
Q("crosslang", "en", "allow any origin with credentials in CORS", ["sec_cors_wildcard_ja"])
Q("crosslang", "th", "ข้อมูลทดสอบแบบ anonymized อยู่ที่ไหน", ["sec_pii_fixtures_ja"])
Q(
    "paraphrase",
    "en",
    "browser content policy: why is one third-party support snippet permitted by digest",
    ["sec_csp"],
)
Q("type_filter", "en", "dependencies pin hashes typosquat", ["sec_deps_pin"], type="lesson")
# ---------------------------------------------------------------------------
# infra, docker, caching
# ---------------------------------------------------------------------------
N(
    "infra_prune",
    "lesson",
    "infra",
    "en",
    "Do not run `docker system prune -a --volumes` on the shared build host. It deleted the Postgres volume of the staging stack and QA lost two days of test data. "
    "Use `docker image prune --filter until=168h` instead.",
    pri="high",
    age=362.0,
)
N(
    "infra_newer_1",
    "lesson",
    "infra",
    "en",
    "Docker layer order matters: copy requirements.txt and install before copying the source, or every code change reinstalls all dependencies.",
    age=38.0,
)
N(
    "infra_newer_2",
    "lesson",
    "infra",
    "en",
    "Containers run as uid 10001; mounting a host directory owned by root makes the app fail with permission denied on startup.",
    age=19.5,
)
N(
    "infra_newer_3",
    "lesson",
    "infra",
    "en",
    "docker compose v2 uses `docker compose`, not `docker-compose`; the old binary on the build host ignores the profiles key.",
    age=4.5,
)
Q(
    "buried",
    "en",
    "The shared build host is out of disk space. I'm going to run docker system prune -a --volumes to clear everything and get builds going again.",
    ["infra_prune"],
    under=["infra_newer_1", "infra_newer_2", "infra_newer_3"],
)
Q(
    "buried",
    "ja",
    "ビルドサーバーのディスクが一杯。docker system prune -a --volumes で全部消していい？",
    ["infra_prune"],
    under=["infra_newer_1", "infra_newer_2", "infra_newer_3"],
)
Q("trigger", "en", "docker prune", ["infra_prune"])

N(
    "infra_tf_plan_ja",
    "lesson",
    "infra",
    "ja",
    "terraform apply の前に plan の差分を必ず最後まで読む。destroy が 1 件だけ紛れ込んでいて、本番の S3 バケットを消しかけた。-auto-approve は使わない。",
    pri="high",
    age=336.0,
)
N(
    "infra_ja_newer1",
    "lesson",
    "infra",
    "ja",
    "Terraform の state は S3 + DynamoDB ロックで管理している。ローカル state を作らないように backend 設定を確認する。",
    age=46.0,
)
N(
    "infra_ja_newer2",
    "lesson",
    "infra",
    "ja",
    "terraform のプロバイダーバージョンは .terraform.lock.hcl ごとコミットする。",
    age=25.5,
)
N(
    "infra_ja_newer3",
    "lesson",
    "infra",
    "ja",
    "手で作ったリソースは terraform import してからコードに書く。二重に作られて課金が倍になった。",
    age=10.5,
)
Q(
    "buried",
    "ja",
    "terraform の変更を急ぎで反映したいので apply -auto-approve で流していい？",
    ["infra_tf_plan_ja"],
    under=["infra_ja_newer1", "infra_ja_newer2", "infra_ja_newer3"],
)
Q(
    "buried",
    "en",
    "want to run terraform apply -auto-approve to push the infra change quickly",
    ["infra_tf_plan_ja"],
    under=["infra_ja_newer1", "infra_ja_newer2", "infra_ja_newer3"],
)
Q("trigger", "en", "terraform apply", ["infra_tf_plan_ja"])
Q(
    "crosslang",
    "en",
    "someone created the bucket by hand in the console; how to bring it under terraform?",
    ["infra_ja_newer3"],
)

N(
    "infra_cache_stampede_th",
    "lesson",
    "infra",
    "th",
    "อย่าตั้ง TTL ของ cache หน้าแรกให้หมดพร้อมกันทุก key ครั้งหนึ่ง cache หมดอายุพร้อมกันตอนเที่ยงคืน request ทั้งหมดวิ่งเข้า DB จน CPU 100% เว็บล่มไป 20 นาที ให้ใส่ jitter ใน TTL",
    pri="high",
    age=280.0,
)
N(
    "infra_th_newer1",
    "lesson",
    "infra",
    "th",
    "key ของ Redis ต้องมี prefix ชื่อ service เช่น orders: เพื่อไม่ให้ชนกันเพราะหลาย service ใช้ Redis ตัวเดียวกัน",
    age=41.5,
)
N(
    "infra_th_newer2",
    "lesson",
    "infra",
    "th",
    "อย่าเก็บ object ใหญ่เกิน 1MB ใน Redis เพราะทำให้ latency ของ key อื่นสูงขึ้นด้วย",
    age=20.5,
)
N(
    "infra_th_newer3",
    "lesson",
    "infra",
    "th",
    "เวลาแก้ format ของข้อมูลที่ cache ไว้ ให้เปลี่ยน version ใน key (v2:) แทนการ flush ทั้งหมด",
    age=2.5,
)
Q(
    "buried",
    "th",
    "จะตั้ง cache หน้าแรกให้ทุก key หมดอายุตอนเที่ยงคืนพร้อมกัน มีปัญหาไหม",
    ["infra_cache_stampede_th"],
    under=["infra_th_newer1", "infra_th_newer2", "infra_th_newer3"],
)
Q(
    "buried",
    "en",
    "setting every homepage cache key to expire at the same fixed time each night — any risk?",
    ["infra_cache_stampede_th"],
    under=["infra_th_newer1", "infra_th_newer2", "infra_th_newer3"],
)
Q(
    "crosslang",
    "en",
    "changed the cached object format; should I flush the whole Redis?",
    ["infra_th_newer3"],
)

# decision chain: docker base image
R(
    "dec_base_image_a",
    "decision",
    "infra",
    "en",
    "Base image: python:3.11 (full Debian)",
    "All Python services build FROM python:3.11 so that compilers are available for native wheels.",
    age=480.0,
)
R(
    "dec_base_image_b",
    "decision",
    "infra",
    "en",
    "Base image: python:3.11-slim",
    "Images were 1.1 GB. Switch to python:3.11-slim; native wheels are built in CI and installed from our wheel cache.",
    age=300.0,
    links=[("supersedes", "dec_base_image_a")],
)
R(
    "dec_base_image_c",
    "decision",
    "infra",
    "en",
    "Multi-stage build onto distroless python3",
    "Build in python:3.11-slim, then copy the virtualenv into gcr.io/distroless/python3-debian12. No shell in the runtime image; debug with an ephemeral container.",
    age=80.0,
    links=[("supersedes", "dec_base_image_b")],
)
Q(
    "superseded",
    "en",
    "which Dockerfile base: FROM python:3.11 full Debian image?",
    ["dec_base_image_c"],
    old="dec_base_image_a",
)
Q(
    "superseded",
    "en",
    "our services use python:3.11-slim as the base image, right?",
    ["dec_base_image_c"],
    old="dec_base_image_b",
)
Q(
    "superseded",
    "th",
    "image หลักของ service Python คือ python:3.11-slim ใช่ไหม",
    ["dec_base_image_c"],
    old="dec_base_image_b",
)
Q(
    "contextual",
    "en",
    "I need to exec into the running API container to check a file, but `kubectl exec -- sh` says there is no shell. How are we supposed to debug these pods?",
    ["dec_base_image_c"],
)

# decision chain: monitoring
R(
    "dec_monitoring_a",
    "decision",
    "observability",
    "ja",
    "監視は Nagios で行う",
    "サーバー監視とアラートは Nagios に集約し、アラートはメールで当番に飛ばす。",
    age=600.0,
)
R(
    "dec_monitoring_b",
    "decision",
    "observability",
    "ja",
    "監視を Prometheus + Grafana + Alertmanager に移行",
    "Kubernetes 移行に合わせて監視は Prometheus と Grafana に移し、アラートは Alertmanager から PagerDuty に送る。Nagios は廃止。",
    age=350.0,
    links=[("supersedes", "dec_monitoring_a")],
)
Q(
    "superseded",
    "ja",
    "Nagios のアラートはメールで当番に届くんだっけ？",
    ["dec_monitoring_b"],
    old="dec_monitoring_a",
)
Q(
    "superseded",
    "en",
    "how do I add a new Nagios check for the server?",
    ["dec_monitoring_b"],
    old="dec_monitoring_a",
)

N(
    "infra_k8s_resources",
    "lesson",
    "infra",
    "en",
    "Set memory limits equal to requests for the API pods; with a higher limit they got OOM-killed at random when nodes were overcommitted.",
)
N(
    "infra_dns_ttl_ja",
    "lesson",
    "infra",
    "ja",
    "DNS を切り替える 1 日前に TTL を 60 秒に下げておく。当日に下げても古い TTL（1 日）が残っていて切り替えが反映されなかった。",
)
N(
    "infra_nat_cost_th",
    "conclusion",
    "infra",
    "th",
    "สรุปค่าใช้จ่าย AWS เดือนที่แล้ว: NAT Gateway แพงผิดปกติเพราะ worker ดึง image จาก ECR ผ่าน NAT แก้โดยเพิ่ม VPC endpoint ของ ECR และ S3",
)
N(
    "infra_healthcheck",
    "knowledge",
    "infra",
    "en",
    "Liveness probes hit /livez (process only); readiness hits /readyz, which checks DB and Redis. Never point liveness at /readyz or a DB blip restarts every pod.",
)
N(
    "infra_compose_profiles",
    "knowledge",
    "infra",
    "en",
    "Local stack: `docker compose --profile full up` starts Postgres, Redis, MinIO and the workers; the default profile starts only Postgres and Redis.",
)
N(
    "infra_cache_headers_ja",
    "knowledge",
    "infra",
    "ja",
    "静的ファイルはハッシュ付きファイル名なので Cache-Control: public, max-age=31536000, immutable。index.html だけ no-cache。",
)
N(
    "infra_redis_eviction",
    "knowledge",
    "infra",
    "en",
    "The shared Redis runs with maxmemory-policy allkeys-lru, so anything stored there can disappear; never keep data there that exists nowhere else.",
)
N(
    "infra_autoscale_th",
    "knowledge",
    "infra",
    "th",
    "HPA ของ API scale ตาม CPU 65% ต่ำสุด 3 pod สูงสุด 18 pod ส่วน worker scale ตามความยาวคิวผ่าน KEDA",
)
N(
    "infra_ntp",
    "conclusion",
    "infra",
    "en",
    "The 'token used before issued' errors were clock skew: two nodes had chrony disabled after the image rebuild. Re-enabled; added a 30 s leeway to JWT iat checks.",
)
N(
    "infra_log_retention_ja",
    "knowledge",
    "observability",
    "ja",
    "アプリのログは Loki に 14 日、監査ログは S3 に 1 年保存。14 日より前の調査は S3 の監査ログを見る。",
)
N(
    "infra_tls_renew",
    "lesson",
    "infra",
    "en",
    "The internal CA certificate for the VPN expires every 398 days and is not managed by cert-manager; renewal is a calendar reminder, and last year we missed it.",
)
N(
    "infra_disk_alert_th",
    "lesson",
    "infra",
    "th",
    "แจ้งเตือนดิสก์เต็มของ DB ตั้งไว้ที่ 80% แต่ WAL โตเร็วมากตอนมี replication slot ค้าง เช็ก pg_replication_slots ก่อนเสมอ",
)

Q("trigger", "en", "OOMKilled", ["infra_k8s_resources"])
Q("trigger", "ja", "DNS 切り替え", ["infra_dns_ttl_ja"])
Q(
    "contextual",
    "en",
    "Tomorrow we cut over api.example.com to the new load balancer. The record currently has a TTL of 86400. I'll change the TTL and the target in one go tomorrow morning.",
    ["infra_dns_ttl_ja"],
)
Q(
    "contextual",
    "en",
    "I'm storing the user's draft invoices in Redis only, to keep the new feature simple, with no table in Postgres. Is that safe in our setup?",
    ["infra_redis_eviction"],
)
Q(
    "contextual",
    "en",
    "Configuring probes for the new service: I'd like liveness to call /readyz so pods that can't reach the database get restarted automatically.",
    ["infra_healthcheck"],
)
Q("crosslang", "en", "why was the NAT gateway bill so high?", ["infra_nat_cost_th"])
Q("crosslang", "en", "how long are application logs retained?", ["infra_log_retention_ja"])
Q("crosslang", "ja", "データベースのディスクが WAL で急に埋まる", ["infra_disk_alert_th"])
Q("crosslang", "ja", "API の Pod は何台までオートスケールする？", ["infra_autoscale_th"])
Q("paraphrase", "en", "failures claiming a credential was minted in the future", ["infra_ntp"])
Q(
    "paraphrase",
    "en",
    "which components boot on a developer machine normally versus the complete set",
    ["infra_compose_profiles"],
)
Q("type_filter", "en", "token issued clock skew", ["infra_ntp"], type="conclusion")
Q("type_filter", "en", "VPN certificate expiry", ["infra_tls_renew"], type="lesson")
# ---------------------------------------------------------------------------
# frontend
# ---------------------------------------------------------------------------
N(
    "fe_safari_date",
    "lesson",
    "frontend",
    "en",
    "Always test date handling in Safari before a release. new Date('2024-05-01 10:00') is Invalid Date in Safari, and that broke checkout for every iPhone user for a morning. "
    "Parse with date-fns parseISO or send ISO 8601 with a T.",
    pri="high",
    age=327.0,
)
N(
    "fe_newer_1",
    "lesson",
    "frontend",
    "en",
    "Use the design-system Button; custom buttons missed the focus ring and failed the accessibility audit.",
    age=44.5,
)
N(
    "fe_newer_2",
    "lesson",
    "frontend",
    "en",
    "Lazy-load the charts bundle; importing recharts on the dashboard added 180 KB to the first load.",
    age=24.5,
)
N(
    "fe_newer_3",
    "lesson",
    "frontend",
    "en",
    "React Query keys must include every variable the fetch depends on; missing the locale made the UI show cached English text after switching to Thai.",
    age=11.5,
)
Q(
    "buried",
    "en",
    "The new delivery-slot picker builds dates with new Date('2024-06-01 14:00'). It works in Chrome on my machine; ready to release?",
    ["fe_safari_date"],
    under=["fe_newer_1", "fe_newer_2", "fe_newer_3"],
)
Q(
    "buried",
    "th",
    "ตัวเลือกเวลาจัดส่งใช้ new Date กับ string วันที่แบบมีช่องว่าง ทดสอบบน Chrome ผ่านแล้ว ปล่อยได้เลยไหม",
    ["fe_safari_date"],
    under=["fe_newer_1", "fe_newer_2", "fe_newer_3"],
)
Q("trigger", "en", "Safari", ["fe_safari_date"])
Q(
    "paraphrase",
    "en",
    "Apple phone browser shows broken timestamps that desktop Chrome reads fine",
    ["fe_safari_date"],
)

N(
    "fe_i18n_th",
    "lesson",
    "frontend",
    "th",
    "ห้ามต่อ string ข้อความแปลเองในโค้ด เช่น t('hello') + name ต้องใช้ placeholder ใน ICU message เคยทำแบบต่อ string แล้วประโยคภาษาไทยกับญี่ปุ่นเรียงคำผิดทั้งหน้า ลูกค้าร้องเรียนเยอะ",
    pri="high",
    age=299.0,
)
N(
    "fe_th_newer1",
    "lesson",
    "frontend",
    "th",
    "ฟอนต์ภาษาไทยต้องเผื่อ line-height อย่างน้อย 1.6 ไม่งั้นสระบนกับวรรณยุกต์จะโดนตัด",
    age=33.5,
)
N(
    "fe_th_newer2",
    "lesson",
    "frontend",
    "th",
    "วันที่ในหน้าภาษาไทยแสดงเป็นพุทธศักราช ใช้ Intl.DateTimeFormat('th-TH') อย่าบวก 543 เอง",
    age=16.5,
)
N(
    "fe_th_newer3",
    "lesson",
    "frontend",
    "th",
    "คีย์ข้อความแปลใหม่ต้องเพิ่มครบทั้งสามภาษา en ja th ไม่งั้น CI ตรวจ i18n จะ fail",
    age=1.5,
)
Q(
    "buried",
    "th",
    "จะแสดงข้อความต้อนรับโดยเอาข้อความแปลมาต่อกับชื่อผู้ใช้ในโค้ดเลย แบบนี้โอเคไหม",
    ["fe_i18n_th"],
    under=["fe_th_newer1", "fe_th_newer2", "fe_th_newer3"],
)
Q(
    "buried",
    "ja",
    "翻訳文とユーザー名を文字列連結して挨拶文を作ろうと思う。問題ある？",
    ["fe_i18n_th"],
    under=["fe_th_newer1", "fe_th_newer2", "fe_th_newer3"],
)
Q(
    "crosslang",
    "en",
    "Thai vowels and tone marks get clipped at the top of the text",
    ["fe_th_newer1"],
)
Q("crosslang", "en", "how to show Buddhist era years on Thai pages", ["fe_th_newer2"])

# decision chain: package manager
R(
    "dec_pkg_a",
    "decision",
    "frontend",
    "en",
    "Use npm for all frontend packages",
    "All frontend projects use npm with package-lock.json committed.",
    age=560.0,
)
R(
    "dec_pkg_b",
    "decision",
    "frontend",
    "en",
    "Switch to Yarn v1 workspaces",
    "The monorepo moves to Yarn v1 workspaces so shared UI packages can be linked locally; package-lock.json files are deleted.",
    age=360.0,
    links=[("supersedes", "dec_pkg_a")],
)
R(
    "dec_pkg_c",
    "decision",
    "frontend",
    "en",
    "Switch to pnpm workspaces",
    "Yarn v1 installs took 4 minutes in CI and hoisting hid missing dependencies. The monorepo uses pnpm workspaces; yarn.lock is removed and `corepack enable` pins the pnpm version.",
    age=110.0,
    links=[("supersedes", "dec_pkg_b")],
)
Q(
    "superseded",
    "en",
    "should I commit package-lock.json after npm install?",
    ["dec_pkg_c"],
    old="dec_pkg_a",
)
Q(
    "superseded",
    "en",
    "add the dependency with yarn add in the workspace?",
    ["dec_pkg_c"],
    old="dec_pkg_b",
)
Q(
    "superseded",
    "ja",
    "フロントエンドのパッケージ管理は Yarn v1 workspaces だよね？",
    ["dec_pkg_c"],
    old="dec_pkg_b",
)
Q(
    "superseded",
    "th",
    "โปรเจกต์ frontend ใช้ npm กับ package-lock.json ใช่ไหม",
    ["dec_pkg_c"],
    old="dec_pkg_a",
)

# decision chain: frontend test runner
R(
    "dec_fe_test_a",
    "decision",
    "frontend",
    "ja",
    "フロントエンドのテストは Jest",
    "フロントエンドのユニットテストは Jest + babel-jest で書く。",
    age=430.0,
)
R(
    "dec_fe_test_b",
    "decision",
    "frontend",
    "ja",
    "Jest から Vitest へ移行",
    "Vite 移行に合わせてテストランナーを Vitest に変更。Jest の設定ファイルは削除し、jest.fn は vi.fn に置き換える。",
    age=150.0,
    links=[("supersedes", "dec_fe_test_a")],
)
Q(
    "superseded",
    "ja",
    "フロントのテストは Jest で書けばいい？",
    ["dec_fe_test_b"],
    old="dec_fe_test_a",
)
Q(
    "superseded",
    "en",
    "frontend unit tests use Jest with babel-jest, correct?",
    ["dec_fe_test_b"],
    old="dec_fe_test_a",
)

N(
    "fe_env_vite",
    "knowledge",
    "frontend",
    "en",
    "Only variables prefixed with VITE_ are exposed to the browser bundle; anything else is undefined at runtime, by design.",
)
N(
    "fe_storybook_ja",
    "knowledge",
    "frontend",
    "ja",
    "デザインシステムのコンポーネントは Storybook に必ずストーリーを追加する。ビジュアルリグレッションは Chromatic で PR ごとに走る。",
)
N(
    "fe_bundle_conclusion",
    "conclusion",
    "frontend",
    "en",
    "Bundle analysis: moment.js with all locales was 230 KB of the 900 KB main chunk. Replacing it with date-fns saved 210 KB gzipped-equivalent.",
)
N(
    "fe_a11y_th",
    "knowledge",
    "frontend",
    "th",
    "ทุกหน้าต้องผ่าน axe ใน Playwright ระดับ WCAG AA ปุ่มที่มีแค่ไอคอนต้องมี aria-label",
)
N(
    "fe_form_double_submit",
    "lesson",
    "frontend",
    "en",
    "Disable the submit button while the mutation is pending; users double-clicked 'Pay' and created two orders before the idempotency key was added.",
)
N(
    "fe_hydration_ja",
    "lesson",
    "frontend",
    "ja",
    "SSR のページで Date.now() や乱数を描画に使うとハイドレーションの不一致が起きる。クライアント側の useEffect で入れる。",
)
N(
    "fe_css_th",
    "knowledge",
    "frontend",
    "th",
    "ใช้ Tailwind กับ design token จาก tailwind.config.ts ห้าม hard-code สีเป็น hex ในคอมโพเนนต์",
)
N(
    "fe_images",
    "lesson",
    "frontend",
    "en",
    "Product images must go through the image proxy (?w=&q=); serving originals made the catalog page 14 MB on mobile.",
)
N(
    "fe_sentry_ja",
    "knowledge",
    "frontend",
    "ja",
    "フロントエンドのエラーは Sentry の web-app プロジェクトに送られる。ソースマップはデプロイ時にアップロードされる。",
)
N(
    "fe_polling",
    "conclusion",
    "frontend",
    "en",
    "Replacing 5-second polling on the order status page with server-sent events cut API traffic by 35%; WebSockets weren't needed.",
)

Q("trigger", "en", "new Date", ["fe_safari_date"])
Q("trigger", "th", "แปลภาษา", ["fe_i18n_th", "fe_th_newer3"])
Q(
    "contextual",
    "en",
    "I added API_BASE_URL to the .env of the web app but import.meta.env.API_BASE_URL is undefined in the browser. The variable is definitely in the file.",
    ["fe_env_vite"],
)
Q(
    "contextual",
    "en",
    "Support reports some customers were charged twice after double-clicking the pay button on slow connections. What should the frontend do about it?",
    ["fe_form_double_submit"],
)
Q(
    "contextual",
    "en",
    "The SSR page logs 'Text content does not match server-rendered HTML' for the timestamp in the header. I render Date.now() directly in the component.",
    ["fe_hydration_ja"],
)
Q("crosslang", "en", "where do frontend errors and source maps go?", ["fe_sentry_ja"])
Q("crosslang", "en", "can I hard-code a hex colour in a component?", ["fe_css_th"])
Q("crosslang", "th", "ทำไมถึงเลิกใช้ moment.js", ["fe_bundle_conclusion"])
Q("paraphrase", "en", "photos of goods made the listing screen enormous on phones", ["fe_images"])
Q(
    "paraphrase",
    "en",
    "swapping periodic refresh for a push stream reduced backend load",
    ["fe_polling"],
)
Q("type_filter", "en", "bundle size moment", ["fe_bundle_conclusion"], type="conclusion")
Q("type_filter", "en", "accessibility icon button", ["fe_a11y_th"], type="knowledge")

# ---------------------------------------------------------------------------
# testing
# ---------------------------------------------------------------------------
N(
    "test_staging_db",
    "lesson",
    "testing",
    "en",
    "Never point the test suite at the shared staging database. A teardown fixture truncated every table on staging and QA lost a day of prepared scenarios. "
    "Tests use the throwaway Postgres started by testcontainers.",
    pri="high",
    age=348.0,
)
N(
    "test_newer_1",
    "lesson",
    "testing",
    "en",
    "Use freezegun (or time-machine) instead of sleeping in tests; two sleep(2) calls made the suite 40 s slower.",
    age=31.5,
)
N(
    "test_newer_2",
    "lesson",
    "testing",
    "en",
    "Factories must generate unique emails with a sequence; hard-coded test@example.com collides when tests run in parallel.",
    age=17.5,
)
N(
    "test_newer_3",
    "lesson",
    "testing",
    "en",
    "Mark tests that need network with @pytest.mark.network; they are skipped in CI's sandboxed job.",
    age=3.5,
)
Q(
    "buried",
    "en",
    "Integration tests need realistic data, so I'm setting DATABASE_URL in the test config to the staging database instead of the local container.",
    ["test_staging_db"],
    under=["test_newer_1", "test_newer_2", "test_newer_3"],
)
Q(
    "buried",
    "ja",
    "テストでステージングの DB を使えばデータ準備が楽になる。DATABASE_URL をステージングに向けてもいい？",
    ["test_staging_db"],
    under=["test_newer_1", "test_newer_2", "test_newer_3"],
)

N(
    "test_mock_time_th",
    "lesson",
    "testing",
    "th",
    "เทสต์ที่เกี่ยวกับวันที่ต้อง fix เวลาเสมอ เคยมีเทสต์คำนวณวันหมดอายุสมาชิกที่พังเฉพาะวันที่ 29 กุมภาพันธ์ แล้วบล็อก release ทั้งวัน",
    pri="high",
    age=271.0,
)
N(
    "test_th_newer1",
    "lesson",
    "testing",
    "th",
    "ใช้ pytest -n auto ได้ แต่ fixture ที่ใช้ไฟล์ชั่วคราวต้องใช้ tmp_path ไม่ใช่ path ตายตัว",
    age=30.5,
)
N(
    "test_th_newer2",
    "lesson",
    "testing",
    "th",
    "snapshot test ของ API ต้องตัด field ที่เปลี่ยนทุกครั้งอย่าง id และ created_at ออกก่อนเทียบ",
    age=14.5,
)
N(
    "test_th_newer3",
    "lesson",
    "testing",
    "th",
    "mock ของ HTTP ใช้ respx สำหรับ httpx อย่า patch ฟังก์ชันภายในของไลบรารี",
    age=2.0,
)
Q(
    "buried",
    "th",
    "เขียนเทสต์ฟังก์ชันคำนวณวันหมดอายุสมาชิกโดยใช้วันที่ปัจจุบันจริง มีอะไรต้องระวังไหม",
    ["test_mock_time_th"],
    under=["test_th_newer1", "test_th_newer2", "test_th_newer3"],
)
Q(
    "buried",
    "en",
    "writing a test for membership expiry using the real current date — fine?",
    ["test_mock_time_th"],
    under=["test_th_newer1", "test_th_newer2", "test_th_newer3"],
)

N(
    "test_flaky_order",
    "conclusion",
    "testing",
    "en",
    "The flaky test_report_totals failure was test-order dependence: a previous test left a row in a module-scoped fixture. pytest-randomly now runs in CI to catch these.",
)
N(
    "test_e2e_playwright_ja",
    "knowledge",
    "testing",
    "ja",
    "E2E テストは Playwright。ログイン済みの状態は storageState に保存して使い回し、各テストで UI からログインしない。",
)
N(
    "test_coverage_th",
    "conclusion",
    "testing",
    "th",
    "สรุปจากการทบทวน: coverage 90% ของ module billing ไม่ได้ช่วยจับบั๊กเรื่องปัดเศษภาษี เพราะเทสต์ไม่มี assert ค่าจริง ตอนนี้เพิ่ม property-based test ด้วย hypothesis",
)
N(
    "test_fixtures_location",
    "knowledge",
    "testing",
    "en",
    "Shared pytest fixtures live in tests/conftest.py; domain-specific ones go in tests/<domain>/conftest.py. Don't import fixtures directly.",
)
N(
    "test_contract",
    "knowledge",
    "testing",
    "en",
    "Contract tests between the mobile app and the API use Pact; the broker is at pact.internal and the API CI verifies all consumer pacts tagged prod.",
)
N(
    "test_load_k6_ja",
    "knowledge",
    "testing",
    "ja",
    "負荷試験は k6 を使い、シナリオは loadtest/ にある。本番ではなく perf 環境に対してだけ実行する。",
)
N(
    "test_timezone_ci",
    "lesson",
    "testing",
    "en",
    "CI runs in UTC while most of us run in JST; set TZ=UTC in pytest.ini's env so date tests behave the same locally.",
)
N(
    "test_hypothesis_ja",
    "lesson",
    "testing",
    "ja",
    "hypothesis のテストが CI だけで落ちるときは、ログに出る @reproduce_failure をローカルで付けて再現する。",
)

Q("trigger", "en", "flaky test", ["test_flaky_order", "ci_rerun_th", "ci_flaky_quarantine"])
Q("trigger", "th", "เทสต์วันที่", ["test_mock_time_th", "test_timezone_ci"])
Q(
    "contextual",
    "en",
    "test_report_totals fails only when the whole suite runs, never when I run the file alone. I'm about to mark it flaky and move on with the release checklist.",
    ["test_flaky_order"],
)
Q(
    "contextual",
    "en",
    "My date-formatting tests pass on my laptop in Tokyo but the same tests fail in CI with values off by nine hours. What's the standard fix here?",
    ["test_timezone_ci"],
)
Q(
    "crosslang",
    "en",
    "where do load test scenarios live and which environment do we hit?",
    ["test_load_k6_ja"],
)
Q("crosslang", "en", "how do E2E tests reuse a logged-in session?", ["test_e2e_playwright_ja"])
Q(
    "crosslang",
    "ja",
    "カバレッジが高いのに税の端数処理のバグが見つからなかった理由",
    ["test_coverage_th"],
)
Q("crosslang", "th", "hypothesis test พังแค่บน CI จะ reproduce ยังไง", ["test_hypothesis_ja"])
Q(
    "paraphrase",
    "en",
    "agreement checks linking the phone client and backend, where is the registry",
    ["test_contract"],
)
Q("type_filter", "en", "test order dependence randomly", ["test_flaky_order"], type="conclusion")
Q("type_filter", "en", "shared fixtures conftest", ["test_fixtures_location"], type="knowledge")
# ---------------------------------------------------------------------------
# refactor
# ---------------------------------------------------------------------------
N(
    "ref_mixed_pr",
    "lesson",
    "refactor",
    "en",
    "Don't mix refactoring and behaviour changes in one PR. A 'pure rename' PR also changed the default currency rounding, nobody noticed in 1,400 lines of moves, "
    "and we sent wrong invoices for a week. Move code in one PR, change logic in the next.",
    pri="high",
    age=356.0,
)
N(
    "ref_newer_1",
    "lesson",
    "refactor",
    "en",
    "Use the IDE's rename refactoring rather than sed; sed also rewrote the string 'status' inside SQL fixtures.",
    age=36.5,
)
N(
    "ref_newer_2",
    "lesson",
    "refactor",
    "en",
    "Before extracting a shared module, check the import graph with `import-linter`; the last extraction created a cycle between billing and orders.",
    age=18.5,
)
N(
    "ref_newer_3",
    "lesson",
    "refactor",
    "en",
    "Keep refactor PRs under about 600 lines of diff when possible, and list moved files in the description so reviewers can use 'hide moved lines'.",
    age=6.0,
)
Q(
    "buried",
    "en",
    "While moving the billing helpers into a new package I also spotted a rounding bug and fixed it in the same branch. Opening one PR for both now.",
    ["ref_mixed_pr"],
    under=["ref_newer_1", "ref_newer_2", "ref_newer_3"],
)
Q(
    "buried",
    "th",
    "ย้ายโค้ด billing ไปแพ็กเกจใหม่และแก้บั๊กการปัดเศษไปด้วยใน PR เดียวกัน ได้ไหม",
    ["ref_mixed_pr"],
    under=["ref_newer_1", "ref_newer_2", "ref_newer_3"],
)
Q("trigger", "en", "refactor", ["ref_mixed_pr"])

N(
    "ref_deprecated_alias_ja",
    "lesson",
    "refactor",
    "ja",
    "公開している関数やモジュールの名前を変えるときは、旧名を DeprecationWarning 付きのエイリアスとして 1 リリース残す。いきなり消して他チームの夜間バッチが壊れた。",
    pri="high",
    age=312.0,
)
N(
    "ref_ja_newer1",
    "lesson",
    "refactor",
    "ja",
    "型ヒントを足すだけのリファクタでも mypy の strict 対象モジュールか確認する。",
    age=40.5,
)
N(
    "ref_ja_newer2",
    "lesson",
    "refactor",
    "ja",
    "大きなクラスを分割するときは、先に振る舞いを固定するテストを書いてから動かす。",
    age=23.5,
)
N(
    "ref_ja_newer3",
    "lesson",
    "refactor",
    "ja",
    "使われていないコードの削除は、本番のアクセスログとジョブ履歴で 30 日呼ばれていないことを確認してから。",
    age=9.0,
)
Q(
    "buried",
    "ja",
    "utils の関数名を整理して古い名前は削除しようと思う。他に影響ある？",
    ["ref_deprecated_alias_ja"],
    under=["ref_ja_newer1", "ref_ja_newer2", "ref_ja_newer3"],
)
Q(
    "buried",
    "en",
    "renaming public helpers in the shared client library and deleting the old names",
    ["ref_deprecated_alias_ja"],
    under=["ref_ja_newer1", "ref_ja_newer2", "ref_ja_newer3"],
)
Q("crosslang", "en", "how do we confirm code is unused before deleting it?", ["ref_ja_newer3"])

N(
    "ref_strangler",
    "conclusion",
    "refactor",
    "en",
    "Rewriting the legacy pricing module in one go failed twice. The strangler approach (route one product category at a time through the new engine) finished in six weeks.",
)
N(
    "ref_service_layer_th",
    "knowledge",
    "refactor",
    "th",
    "โครงสร้างโค้ด backend: router เรียก service, service เรียก repository ห้าม router เรียก repository ตรง ๆ",
)
N(
    "ref_dead_flags",
    "lesson",
    "refactor",
    "en",
    "Remove feature-flag branches within two sprints of full rollout; stale flags made the checkout code have 16 possible paths.",
)
N(
    "ref_pydantic_v2_ja",
    "conclusion",
    "refactor",
    "ja",
    "pydantic v2 への移行は model_validator の挙動差でつまずいた。結論として、v1 互換レイヤーは使わず、モジュールごとに一気に書き換える方が早い。",
)
N(
    "ref_typing_th",
    "lesson",
    "refactor",
    "th",
    "อย่าใช้ Any เพื่อให้ mypy เงียบ ถ้าชนิดซับซ้อนให้ใช้ Protocol หรือ TypedDict แทน",
)
N(
    "ref_async_conclusion",
    "conclusion",
    "refactor",
    "en",
    "Converting the report generator to async gave no speedup: it is CPU-bound. Moved it to a process pool instead and got 3.4x.",
)

Q(
    "contextual",
    "en",
    "Planning the migration of the pricing module to the new engine. I'd like to rewrite the whole thing in one big branch and switch over on a single day.",
    ["ref_strangler"],
)
Q(
    "contextual",
    "en",
    "In the new endpoint I'm calling OrderRepository directly from the FastAPI router function because the service layer feels like boilerplate here.",
    ["ref_service_layer_th"],
)
Q(
    "crosslang",
    "en",
    "is the v1 compatibility layer worth using for the pydantic migration?",
    ["ref_pydantic_v2_ja"],
)
Q("crosslang", "ja", "mypy を黙らせるために Any を使っていい？", ["ref_typing_th"])
Q(
    "paraphrase",
    "en",
    "making the document builder non-blocking did not make it quicker",
    ["ref_async_conclusion"],
)
Q("type_filter", "en", "feature flag cleanup", ["ref_dead_flags"], type="lesson")
Q("type_filter", "en", "pricing rewrite strangler", ["ref_strangler"], type="conclusion")

# decision chain: retries
R(
    "dec_retry_a",
    "decision",
    "api",
    "en",
    "Retry outbound calls 3 times with a fixed 1 s delay",
    "Outbound HTTP calls retry up to 3 times with a fixed 1-second delay on 5xx and timeouts.",
    age=450.0,
)
R(
    "dec_retry_b",
    "decision",
    "api",
    "en",
    "Exponential backoff with jitter for outbound retries",
    "Fixed delays synchronised clients and caused a 429 storm. Retries now use exponential backoff (base 0.5 s, factor 2, max 5 attempts) with full jitter, and honour Retry-After.",
    age=205.0,
    links=[("supersedes", "dec_retry_a")],
)
R(
    "dec_retry_c",
    "decision",
    "api",
    "en",
    "Backoff plus a circuit breaker per upstream",
    "Keep exponential backoff with jitter, and add a circuit breaker per upstream host: open after 10 consecutive failures, half-open after 30 s.",
    age=62.0,
    links=[("supersedes", "dec_retry_b")],
)
Q(
    "superseded",
    "en",
    "retry three times with a fixed one-second delay on 5xx?",
    ["dec_retry_c"],
    old="dec_retry_a",
)
Q(
    "superseded",
    "en",
    "what is our exponential backoff with jitter policy for outbound calls?",
    ["dec_retry_c"],
    old="dec_retry_b",
)
Q(
    "superseded",
    "ja",
    "外部呼び出しのリトライは 1 秒固定で 3 回だっけ？",
    ["dec_retry_c"],
    old="dec_retry_a",
)
Q(
    "superseded",
    "th",
    "retry ของ HTTP ขาออกใช้ exponential backoff แบบมี jitter อย่างเดียวใช่ไหม",
    ["dec_retry_c"],
    old="dec_retry_b",
)

# decision chain: API versioning
R(
    "dec_apiver_a",
    "decision",
    "api",
    "th",
    "ระบุเวอร์ชัน API ใน URL path",
    "API สาธารณะใช้เวอร์ชันใน path เช่น /v1/orders",
    age=470.0,
)
R(
    "dec_apiver_b",
    "decision",
    "api",
    "th",
    "ย้ายไประบุเวอร์ชันผ่าน header Accept",
    "เปลี่ยนเป็นส่งเวอร์ชันผ่าน header Accept: application/vnd.shop.v2+json เพื่อให้ URL คงที่",
    age=280.0,
    links=[("supersedes", "dec_apiver_a")],
)
R(
    "dec_apiver_c",
    "decision",
    "api",
    "th",
    "กลับมาใช้เวอร์ชันใน URL path และใช้ header วันที่สำหรับการเปลี่ยนย่อย",
    "การใช้ header Accept ทำให้ลูกค้าสับสนและ cache ที่ CDN แยกเวอร์ชันไม่ได้ จึงกลับมาใช้ /v2/ ใน path สำหรับการเปลี่ยนใหญ่ และใช้ X-Api-Version แบบวันที่สำหรับการเปลี่ยนย่อย",
    age=75.0,
    links=[("supersedes", "dec_apiver_b")],
)
Q(
    "superseded",
    "th",
    "เวอร์ชันของ API ส่งผ่าน header Accept แบบ vnd ใช่ไหม",
    ["dec_apiver_c"],
    old="dec_apiver_b",
)
Q(
    "superseded",
    "en",
    "do clients select the API version with the Accept vnd media type header?",
    ["dec_apiver_c"],
    old="dec_apiver_b",
)
Q(
    "superseded",
    "ja",
    "API のバージョンは Accept ヘッダーで指定する方式？",
    ["dec_apiver_c"],
    old="dec_apiver_b",
)

# decision chain: sessions
R(
    "dec_session_a",
    "decision",
    "security",
    "en",
    "Store sessions in Redis with a 24 h TTL",
    "User sessions are stored in Redis under session:<id> with a 24-hour TTL.",
    age=510.0,
)
R(
    "dec_session_b",
    "decision",
    "security",
    "en",
    "Move sessions to a Postgres table",
    "Redis evictions (allkeys-lru) logged users out at random. Sessions move to the Postgres user_sessions table; Redis is cache only.",
    age=270.0,
    links=[("supersedes", "dec_session_a")],
)
R(
    "dec_session_c",
    "decision",
    "security",
    "en",
    "Stateless access tokens plus refresh tokens in Postgres",
    "Access is a 15-minute JWT signed by auth-gateway; only refresh tokens are stored (hashed) in Postgres with a 30-day lifetime and rotation on use.",
    age=58.0,
    links=[("supersedes", "dec_session_b")],
)
Q(
    "superseded",
    "en",
    "where do session:<id> keys live in Redis and what TTL do they have?",
    ["dec_session_c"],
    old="dec_session_a",
)
Q(
    "superseded",
    "en",
    "look up a user's session row in the user_sessions table",
    ["dec_session_c"],
    old="dec_session_b",
)
Q(
    "superseded",
    "th",
    "session ของผู้ใช้เก็บใน Redis TTL 24 ชั่วโมงใช่ไหม",
    ["dec_session_c"],
    old="dec_session_a",
)
# ---------------------------------------------------------------------------
# team conventions, code review, process decisions
# ---------------------------------------------------------------------------
N(
    "team_merge_others",
    "lesson",
    "team",
    "en",
    "Never merge someone else's PR, even when it is approved and green, without their explicit OK. I merged a colleague's approved PR to unblock my work; "
    "it was waiting on a config change in another repo and took the notifications service down for an hour.",
    pri="high",
    age=339.0,
)
N(
    "team_newer_1",
    "lesson",
    "team",
    "en",
    "Request review from CODEOWNERS only; pinging the whole team on every PR got PR notifications muted.",
    age=37.5,
)
N(
    "team_newer_2",
    "lesson",
    "team",
    "en",
    "Reply to every review comment before re-requesting review, even if only with 'done'.",
    age=20.0,
)
N(
    "team_newer_3",
    "lesson",
    "team",
    "en",
    "Draft PRs are for early feedback; don't ask for approval until the description has a test plan.",
    age=7.0,
)
Q(
    "buried",
    "en",
    "Alice's PR is approved and CI is green, and my branch depends on it. She's offline today, so I'll click merge on her PR myself to unblock my work.",
    ["team_merge_others"],
    under=["team_newer_1", "team_newer_2", "team_newer_3"],
)
Q(
    "buried",
    "ja",
    "同僚の PR が承認済みで CI も通っている。本人は休みだけど、自分の作業のために代わりにマージしていい？",
    ["team_merge_others"],
    under=["team_newer_1", "team_newer_2", "team_newer_3"],
)

N(
    "team_review_nit_ja",
    "lesson",
    "team",
    "ja",
    "「nit:」と書かれていないレビューコメントは、対応するか理由を返信するまでマージしない。未返信のままマージして、指摘されていた権限チェック漏れが本番に出た。",
    pri="high",
    age=308.0,
)
N(
    "team_ja_newer1",
    "lesson",
    "team",
    "ja",
    "レビュー依頼は 1 日 2 回（朝と夕方）まとめて見る運用。急ぎのときは Slack で一言添える。",
    age=35.5,
)
N(
    "team_ja_newer2",
    "lesson",
    "team",
    "ja",
    "PR の説明には「なぜ」を書く。「何を」はコードを見れば分かる。",
    age=19.0,
)
N(
    "team_ja_newer3",
    "lesson",
    "team",
    "ja",
    "レビューで設計の議論が長引いたら、PR の中で続けずに 15 分の通話に切り替える。",
    age=5.0,
)
Q(
    "buried",
    "ja",
    "レビューコメントがいくつか残っているけど、承認はもらったのでこのままマージしていい？",
    ["team_review_nit_ja"],
    under=["team_ja_newer1", "team_ja_newer2", "team_ja_newer3"],
)
Q(
    "buried",
    "th",
    "PR ได้ approve แล้วแต่ยังมีคอมเมนต์รีวิวที่ยังไม่ได้ตอบ merge เลยได้ไหม",
    ["team_review_nit_ja"],
    under=["team_ja_newer1", "team_ja_newer2", "team_ja_newer3"],
)

N(
    "team_oncall_th",
    "lesson",
    "team",
    "th",
    "ตอนเกิด incident ต้องเปิด thread ใน #incident และเขียน timeline ไปพร้อมกันเสมอ ครั้งหนึ่งแก้กันในแชตส่วนตัว ไม่มีใครรู้ว่าใครทำอะไร จน rollback ซ้อนกันสองรอบ",
    pri="high",
    age=283.0,
)
N(
    "team_th_newer1",
    "lesson",
    "team",
    "th",
    "ส่งต่อเวร on-call ทุกวันจันทร์ 10 โมง พร้อมสรุป alert ที่ยังเปิดอยู่",
    age=34.0,
)
N(
    "team_th_newer2",
    "lesson",
    "team",
    "th",
    "postmortem ต้องเขียนภายใน 5 วันทำการ และเน้นระบบ ไม่โทษตัวบุคคล",
    age=13.0,
)
N(
    "team_th_newer3",
    "lesson",
    "team",
    "th",
    "ถ้า alert เดิมดังซ้ำเกิน 3 ครั้งในสัปดาห์ให้เปิด ticket ปรับ threshold",
    age=1.0,
)
Q(
    "buried",
    "th",
    "ตอนนี้ production มีปัญหา จะคุยแก้กับเพื่อนในแชตส่วนตัวก่อนได้ไหม",
    ["team_oncall_th"],
    under=["team_th_newer1", "team_th_newer2", "team_th_newer3"],
)
Q(
    "buried",
    "en",
    "production is down; I'll coordinate the fix with Bob in a private DM to keep things quiet",
    ["team_oncall_th"],
    under=["team_th_newer1", "team_th_newer2", "team_th_newer3"],
)

# decision chain: branching model
R(
    "dec_branch_a",
    "decision",
    "git",
    "en",
    "Use git-flow with a develop branch",
    "Feature branches merge into develop; release branches are cut from develop and merged into main and back.",
    age=590.0,
)
R(
    "dec_branch_b",
    "decision",
    "git",
    "en",
    "Trunk-based development on main",
    "develop is removed. Short-lived branches off main, merged within two days; incomplete work hides behind feature flags.",
    age=320.0,
    links=[("supersedes", "dec_branch_a")],
)
Q(
    "superseded",
    "en",
    "should my feature branch target the develop branch?",
    ["dec_branch_b"],
    old="dec_branch_a",
)
Q(
    "superseded",
    "ja",
    "feature ブランチは develop にマージするんだっけ？",
    ["dec_branch_b"],
    old="dec_branch_a",
)

# decision chain: CI provider
R(
    "dec_ci_a",
    "decision",
    "ci",
    "ja",
    "CI は build-01 の Jenkins",
    "CI は社内サーバー build-01 上の Jenkins で動かす。ジョブ定義は Jenkinsfile。",
    age=620.0,
)
R(
    "dec_ci_b",
    "decision",
    "ci",
    "ja",
    "CI を GitHub Actions（セルフホストランナー）に移行",
    "Jenkins の保守負担が大きいため GitHub Actions に移行。重いジョブはセルフホストランナーで動かす。Jenkinsfile は削除。",
    age=400.0,
    links=[("supersedes", "dec_ci_a")],
)
Q("superseded", "ja", "Jenkinsfile にジョブを追加すればいい？", ["dec_ci_b"], old="dec_ci_a")
Q("superseded", "en", "how do I add a job to Jenkins on build-01?", ["dec_ci_b"], old="dec_ci_a")

# decision chain: logging
R(
    "dec_log_a",
    "decision",
    "observability",
    "th",
    "log เป็นข้อความธรรมดา",
    "log ของ service เขียนเป็นข้อความธรรมดาบรรทัดเดียว ใช้ logging มาตรฐานของ Python",
    age=550.0,
)
R(
    "dec_log_b",
    "decision",
    "observability",
    "th",
    "log เป็น JSON พร้อม request_id",
    "เปลี่ยน log ทั้งหมดเป็น JSON ผ่าน structlog และต้องมี request_id กับ service ในทุกบรรทัด เพื่อค้นใน Loki ได้",
    age=260.0,
    links=[("supersedes", "dec_log_a")],
)
Q("superseded", "th", "log ของ service เป็นข้อความธรรมดาใช่ไหม", ["dec_log_b"], old="dec_log_a")
Q(
    "superseded",
    "en",
    "is plain text single-line logging with the standard logging module still our format?",
    ["dec_log_b"],
    old="dec_log_a",
)

# decision chain: review approvals
R(
    "dec_review_a",
    "decision",
    "team",
    "en",
    "Two approvals required on every PR",
    "Every PR needs two approvals before merge.",
    age=440.0,
)
R(
    "dec_review_b",
    "decision",
    "team",
    "en",
    "One approval, plus CODEOWNERS for sensitive paths",
    "Two approvals slowed everything down. One approval is enough, but changes under db/, security/ and infra/ also need a CODEOWNERS approval.",
    age=190.0,
    links=[("supersedes", "dec_review_a")],
)
Q("superseded", "en", "does every PR need two approvals?", ["dec_review_b"], old="dec_review_a")
Q("superseded", "th", "PR ต้องได้ approve สองคนก่อน merge ใช่ไหม", ["dec_review_b"], old="dec_review_a")

# decision chain: commit messages
R(
    "dec_commit_a",
    "decision",
    "git",
    "ja",
    "コミットメッセージは自由形式",
    "コミットメッセージの形式は特に決めない。",
    age=640.0,
)
R(
    "dec_commit_b",
    "decision",
    "git",
    "ja",
    "Conventional Commits を採用し commitlint で強制",
    "リリースノート自動生成のため Conventional Commits（feat:, fix:, chore: など）を採用し、commit-msg フックの commitlint で強制する。",
    age=230.0,
    links=[("supersedes", "dec_commit_a")],
)
Q(
    "superseded",
    "ja",
    "コミットメッセージは自由に書いていいんだっけ？",
    ["dec_commit_b"],
    old="dec_commit_a",
)
Q(
    "superseded",
    "en",
    "is the commit message format free-form?",
    ["dec_commit_b"],
    old="dec_commit_a",
)

# decision chain: merge strategy
R(
    "dec_merge_a",
    "decision",
    "git",
    "en",
    "Merge PRs with merge commits",
    "PRs are merged with a merge commit so the full branch history is kept.",
    age=580.0,
)
R(
    "dec_merge_b",
    "decision",
    "git",
    "en",
    "Rebase-merge PRs",
    "Merge commits made history unreadable. PRs are merged with rebase-and-merge.",
    age=380.0,
    links=[("supersedes", "dec_merge_a")],
)
R(
    "dec_merge_c",
    "decision",
    "git",
    "en",
    "Squash-merge only",
    "Rebase-merge put every WIP commit on main and broke bisect. Only squash merging is enabled; the PR title becomes the commit message.",
    age=140.0,
    links=[("supersedes", "dec_merge_b")],
)
Q(
    "superseded",
    "en",
    "should I merge the PR with a merge commit to keep branch history?",
    ["dec_merge_c"],
    old="dec_merge_a",
)
Q("superseded", "en", "use rebase-and-merge for my PR?", ["dec_merge_c"], old="dec_merge_b")
Q("superseded", "ja", "PR は rebase マージ？", ["dec_merge_c"], old="dec_merge_b")

# decision chain: feature flags
R(
    "dec_flags_a",
    "decision",
    "deploy",
    "th",
    "ใช้ environment variable เป็น feature flag",
    "feature flag กำหนดด้วย environment variable ชื่อ FEATURE_* เปลี่ยนค่าแล้ว restart pod",
    age=490.0,
)
R(
    "dec_flags_b",
    "decision",
    "deploy",
    "th",
    "ใช้ Unleash สำหรับ feature flag",
    "ย้าย feature flag ไป Unleash เปิดปิดได้ทันทีไม่ต้อง restart และทำ gradual rollout ตามเปอร์เซ็นต์ผู้ใช้ได้",
    age=210.0,
    links=[("supersedes", "dec_flags_a")],
)
Q(
    "superseded",
    "th",
    "จะเปิด feature flag ต้องแก้ environment variable FEATURE_ แล้ว restart pod ใช่ไหม",
    ["dec_flags_b"],
    old="dec_flags_a",
)
Q(
    "superseded",
    "en",
    "to turn on a feature I set the FEATURE_* env var and restart the pods, right?",
    ["dec_flags_b"],
    old="dec_flags_a",
)

N(
    "team_standup_ja",
    "knowledge",
    "team",
    "ja",
    "デイリースタンドアップは毎朝 9:45（JST）。タイのメンバーがいるので 7:45（ICT）になる点に注意。",
)
N(
    "team_release_notes",
    "knowledge",
    "team",
    "en",
    "Release notes are generated from PR titles by release-drafter; write PR titles for customers, not for yourself.",
)
N(
    "team_adr_th",
    "knowledge",
    "team",
    "th",
    "การตัดสินใจเชิงสถาปัตยกรรมต้องเขียน ADR ไว้ใน docs/adr/ ตามเทมเพลต และลิงก์จาก PR ที่เกี่ยวข้อง",
)
N(
    "team_holidays_ja",
    "knowledge",
    "team",
    "ja",
    "タイのソンクラーン（4 月中旬）はバンコクチームが 3 日間休み。その週はリリースを入れない。",
)
N(
    "team_estimation",
    "conclusion",
    "team",
    "en",
    "Retro conclusion: story-point estimates were off by 2-3x on anything touching billing; we now spike billing work first and estimate after.",
)
N(
    "team_code_style_th",
    "knowledge",
    "team",
    "th",
    "Python ใช้ ruff format และ ruff check ตามค่าใน pyproject.toml บรรทัดยาวสุด 100 ตัวอักษร",
)
N(
    "team_pairing",
    "conclusion",
    "team",
    "en",
    "Pairing on incident follow-ups halved the time to close action items; we now pair by default on postmortem tasks.",
)
N(
    "team_language_ja",
    "knowledge",
    "team",
    "ja",
    "社内ドキュメントは英語で書く。Slack の雑談は日本語・タイ語どちらでもよい。",
)
N(
    "team_pr_size_th",
    "conclusion",
    "team",
    "th",
    "ข้อสรุปจาก retro: PR ที่ใหญ่เกิน 800 บรรทัดใช้เวลารีวิวเฉลี่ย 4 วัน เทียบกับไม่ถึงวันสำหรับ PR เล็ก",
)
N(
    "team_slack_channels",
    "knowledge",
    "team",
    "en",
    "Channels: #deploys for deploy announcements, #incident for live incidents, #dev-help for questions, #flaky-tests for quarantine reports.",
)

Q("trigger", "en", "merge", ["team_merge_others", "team_review_nit_ja", "dec_merge_c"])
Q("trigger", "ja", "インシデント", ["team_oncall_th"])
Q("trigger", "en", "incident", ["team_oncall_th"])
Q(
    "contextual",
    "en",
    "I'm scheduling a release for the week of 13 April. Are there any team holidays or other constraints in that week that I should know about?",
    ["team_holidays_ja"],
)
Q(
    "contextual",
    "en",
    "We just decided to replace the message queue with a different broker. Where and in which format should this architecture decision be written down?",
    ["team_adr_th"],
)
Q("crosslang", "en", "what time is the daily standup for the Bangkok members?", ["team_standup_ja"])
Q("crosslang", "en", "what is the maximum line length for Python code?", ["team_code_style_th"])
Q("crosslang", "ja", "大きい PR はレビューにどのくらい時間がかかっている？", ["team_pr_size_th"])
Q("crosslang", "th", "เอกสารภายในควรเขียนเป็นภาษาอะไร", ["team_language_ja"])
Q(
    "paraphrase",
    "en",
    "headings of pull requests feed the buyer-facing changelog",
    ["team_release_notes"],
)
Q(
    "paraphrase",
    "en",
    "guesses of effort were wildly low for anything involving invoicing",
    ["team_estimation"],
)
Q("type_filter", "en", "story points billing estimates", ["team_estimation"], type="conclusion")
Q(
    "type_filter",
    "en",
    "slack channel for deploy announcements",
    ["team_slack_channels"],
    type="knowledge",
)
# ---------------------------------------------------------------------------
# user profile
# ---------------------------------------------------------------------------
N(
    "prof_pnpm",
    "profile",
    "user",
    "en",
    "The user prefers pnpm over npm and yarn for anything JavaScript, including one-off scripts (pnpm dlx instead of npx).",
)
N(
    "prof_answer_ja",
    "profile",
    "user",
    "ja",
    "ユーザーへの返答は日本語で。コード中のコメントとコミットメッセージは英語のままでよい。",
)
N(
    "prof_concise",
    "profile",
    "user",
    "en",
    "The user wants short answers: the command or the diff first, explanation after, no long preambles.",
)
N("prof_no_emoji_th", "profile", "user", "th", "ผู้ใช้ไม่ชอบให้ใส่อีโมจิในข้อความ commit และในคำตอบ")
N(
    "prof_tabs",
    "profile",
    "user",
    "en",
    "For Go code the user is fine with gofmt defaults, but in YAML they want 2-space indentation and no anchors.",
)
N(
    "prof_editor_ja",
    "profile",
    "user",
    "ja",
    "ユーザーのエディタは Neovim。VS Code 固有の設定ファイル（.vscode/）は作らないでほしいとのこと。",
)
N(
    "prof_ask_before_push",
    "profile",
    "user",
    "en",
    "The user wants to be asked before any git push, even to a personal branch. Committing locally is fine without asking.",
)
N(
    "prof_timezone_th",
    "profile",
    "user",
    "th",
    "ผู้ใช้อยู่กรุงเทพฯ (UTC+7) เวลาพูดถึงเวลานัดหรือ deadline ให้ใช้เวลาไทย",
)
N(
    "prof_tests_first",
    "profile",
    "user",
    "en",
    "The user likes a failing test written first when fixing bugs, and wants to see it fail before the fix.",
)
N(
    "prof_python_ver_ja",
    "profile",
    "user",
    "ja",
    "ユーザーの手元の Python は 3.12（pyenv）。3.13 の新機能は使わないでほしい。",
)
N(
    "prof_explain_why",
    "profile",
    "user",
    "en",
    "When I propose an architecture change the user wants trade-offs listed explicitly, with the option I'd pick marked.",
)
N(
    "prof_macos_th",
    "profile",
    "user",
    "th",
    "ผู้ใช้ใช้ macOS บนชิป Apple Silicon ถ้าจะแนะนำ docker image ต้องมี arm64",
)
N(
    "prof_poetry_no",
    "profile",
    "user",
    "en",
    "The user dislikes Poetry; Python projects use uv with pyproject.toml and uv.lock.",
)
N(
    "prof_naming_ja",
    "profile",
    "user",
    "ja",
    "変数名の省略形（usr, cnt, tmp など）は好まない。多少長くても意味が分かる名前にする。",
)
N(
    "prof_reviewer_th",
    "profile",
    "user",
    "th",
    "ผู้ใช้อยากให้สรุปการเปลี่ยนแปลงเป็น bullet สั้น ๆ ก่อนเปิด PR ทุกครั้ง",
)
N(
    "prof_dark_hours",
    "profile",
    "user",
    "en",
    "The user doesn't want pings or scheduled jobs that notify them between 22:00 and 08:00 JST.",
)
N(
    "prof_sql_style",
    "profile",
    "user",
    "en",
    "The user writes SQL keywords in uppercase and table names in snake_case, and wants generated SQL to match.",
)
N(
    "prof_lang_th",
    "profile",
    "user",
    "th",
    "ผู้ใช้คนนี้ถนัดภาษาไทย ตอบเป็นภาษาไทยได้ แต่ศัพท์เทคนิคให้คงเป็นภาษาอังกฤษ",
)
N(
    "prof_docker_compose_ja",
    "profile",
    "user",
    "ja",
    "ユーザーはローカルで DB をインストールしたくない派。必要なものは docker compose で立ち上げる。",
)
N(
    "prof_no_force",
    "profile",
    "user",
    "en",
    "The user said they never want the assistant to run destructive commands (rm -rf, DROP, force push) without showing the exact command first.",
)
N(
    "prof_commit_size",
    "profile",
    "user",
    "en",
    "The user prefers small commits, one logical change each, with messages in imperative mood.",
)
N(
    "prof_typescript_th",
    "profile",
    "user",
    "th",
    "ในโปรเจกต์ TypeScript ผู้ใช้ต้องการ strict mode เสมอ และไม่ใช้ any",
)

Q("trigger", "en", "npm install", ["prof_pnpm", "dec_pkg_c"])
Q("trigger", "ja", "返答の言語", ["prof_answer_ja"])
Q("trigger", "en", "git push", ["prof_ask_before_push", "git_force_push", "git_main_push_ja"])
Q(
    "contextual",
    "en",
    "I need to scaffold a small Node script for the user to rename files in bulk. I'm about to write the README telling them to run npx ts-node and npm install.",
    ["prof_pnpm"],
)
Q(
    "contextual",
    "en",
    "Setting up a new Python project for the user's CLI tool. Thinking of running poetry init and adding a poetry.lock so dependencies are pinned.",
    ["prof_poetry_no"],
)
Q(
    "contextual",
    "en",
    "The fix is committed on the user's personal branch and tests pass. Going to push it to origin now so the CI run starts while I write the summary.",
    ["prof_ask_before_push"],
)
Q(
    "contextual",
    "en",
    "I want to clean the build directory and drop the scratch database as part of the reset script; I'll just run the commands and report back when done.",
    ["prof_no_force"],
)
Q(
    "crosslang",
    "en",
    "which language should I reply to the user in?",
    ["prof_answer_ja", "prof_lang_th"],
)
Q("crosslang", "en", "can I add a .vscode folder with recommended settings?", ["prof_editor_ja"])
Q("crosslang", "en", "user wants emoji in commit messages?", ["prof_no_emoji_th"])
Q("crosslang", "ja", "ユーザーのマシンは Apple Silicon？", ["prof_macos_th"])
Q(
    "crosslang",
    "en",
    "should I install Postgres natively on the user's machine?",
    ["prof_docker_compose_ja"],
)
Q("crosslang", "th", "ผู้ใช้ชอบตั้งชื่อตัวแปรแบบย่อไหม", ["prof_naming_ja"])
Q("paraphrase", "en", "how lengthy should replies be and what comes at the top", ["prof_concise"])
Q("paraphrase", "en", "quiet period overnight, no alerts to them", ["prof_dark_hours"])
Q("type_filter", "en", "package manager", ["prof_pnpm"], type="profile")
Q("type_filter", "en", "python version", ["prof_python_ver_ja"], type="profile")
Q("type_filter", "en", "TypeScript strict any", ["prof_typescript_th"], type="profile")
Q("type_filter", "en", "commits style", ["prof_commit_size", "prof_no_emoji_th"], type="profile")

# ---------------------------------------------------------------------------
# encoding, timezones, misc tooling
# ---------------------------------------------------------------------------
N(
    "enc_csv_bom_ja",
    "lesson",
    "tooling",
    "ja",
    "Excel で開く CSV は UTF-8 BOM 付き（utf-8-sig）で出力する。BOM なしだと日本語が文字化けすると経理から毎月問い合わせが来ていた。",
)
N(
    "enc_sjis",
    "knowledge",
    "tooling",
    "en",
    "The bank transfer file must be Shift_JIS (cp932), fixed width, CRLF line endings; characters outside cp932 have to be replaced before export.",
)
N(
    "enc_thai_sort_th",
    "lesson",
    "tooling",
    "th",
    "การเรียงชื่อภาษาไทยใน Postgres ต้องใช้ collation th-TH-x-icu ถ้าใช้ C collation ลำดับจะผิดเพราะสระหน้า",
)
N(
    "tz_cron_utc",
    "lesson",
    "tooling",
    "en",
    "Cron schedules in our config are UTC, not JST. I scheduled the billing export for '0 9 * * *' thinking 09:00 JST; it ran at 18:00 JST, after the bank cutoff.",
    pri="high",
    age=358.0,
)
N(
    "tz_newer_1",
    "lesson",
    "tooling",
    "en",
    "Use zoneinfo, not pytz; pytz's localize() pitfalls produced +09:19 offsets in old code.",
    age=32.0,
)
N(
    "tz_newer_2",
    "lesson",
    "tooling",
    "en",
    "Store user-facing schedule times together with their IANA zone name, never just an offset.",
    age=15.0,
)
N(
    "tz_newer_3",
    "lesson",
    "tooling",
    "en",
    "Log timestamps in UTC with the Z suffix; mixing JST logs with UTC logs confused the incident timeline.",
    age=2.2,
)
Q(
    "buried",
    "en",
    "Adding a cron entry so the bank export runs every morning at 9 Japan time. I'll write '0 9 * * *' in the schedule config.",
    ["tz_cron_utc"],
    under=["tz_newer_1", "tz_newer_2", "tz_newer_3"],
)
Q(
    "buried",
    "th",
    "จะตั้ง cron ให้งาน export รันทุกวันตอน 9 โมงเช้า เขียน 0 9 * * * ได้เลยไหม",
    ["tz_cron_utc"],
    under=["tz_newer_1", "tz_newer_2", "tz_newer_3"],
)
Q("trigger", "en", "cron", ["tz_cron_utc"])
Q("trigger", "ja", "文字化け", ["enc_csv_bom_ja", "api_utf8_th"])
Q(
    "contextual",
    "en",
    "Finance opens the monthly CSV report in Excel and the Japanese customer names turn into garbage characters. The export currently writes plain UTF-8.",
    ["enc_csv_bom_ja"],
)
Q("crosslang", "en", "Thai names sort in the wrong order in Postgres", ["enc_thai_sort_th"])
Q("crosslang", "th", "ไฟล์โอนเงินธนาคารต้องใช้ encoding อะไร", ["enc_sjis"])
Q(
    "paraphrase",
    "en",
    "weird nineteen-minute shift in Tokyo times from a legacy library",
    ["tz_newer_1"],
)

N(
    "tool_makefile",
    "knowledge",
    "tooling",
    "en",
    "`make help` lists all targets; `make check` runs ruff, mypy and the fast tests, which is what CI's lint job runs.",
)
N(
    "tool_uv_ja",
    "knowledge",
    "tooling",
    "ja",
    "Python の依存関係は uv で管理している。uv sync で .venv が作られ、uv.lock をコミットする。",
)
N(
    "tool_precommit_th",
    "knowledge",
    "tooling",
    "th",
    "repo นี้ใช้ pre-commit ที่มี ruff, mypy, gitleaks และตรวจ commit message",
)
N(
    "tool_jq_lesson",
    "lesson",
    "tooling",
    "en",
    "jq -r is needed to strip quotes when feeding values into shell variables; without it the token had literal quotes and auth failed.",
)
N(
    "tool_gh_cli_ja",
    "knowledge",
    "tooling",
    "ja",
    "PR の作成は gh pr create --fill を使う。テンプレートは .github/pull_request_template.md が自動で入る。",
)
N(
    "tool_sed_macos",
    "lesson",
    "tooling",
    "en",
    "sed -i on macOS needs an argument ('sed -i \"\"'); scripts written on Linux broke on the user's Mac. Prefer perl -pi -e in shared scripts.",
)
N(
    "tool_scripts_th",
    "knowledge",
    "tooling",
    "th",
    "สคริปต์ดูแลระบบทั้งหมดอยู่ใน ops/scripts และต้องรันได้ทั้งบน Linux และ macOS",
)
N(
    "tool_direnv",
    "knowledge",
    "tooling",
    "en",
    "Each repo has a .envrc for direnv that exports local-only settings; `direnv allow` is needed once after cloning or editing it.",
)

Q(
    "contextual",
    "en",
    "My shell script pulls a token out of a JSON response with jq and passes it in the Authorization header, but the API keeps rejecting it as malformed.",
    ["tool_jq_lesson"],
)
Q(
    "contextual",
    "en",
    "I'm writing a release helper script that edits version strings in place with sed -i. The user will run it on their laptop, which is a Mac.",
    ["tool_sed_macos", "prof_macos_th"],
)
Q(
    "crosslang",
    "en",
    "how do I open a PR from the command line with the template?",
    ["tool_gh_cli_ja"],
)
Q(
    "crosslang",
    "th",
    "จัดการ dependency ของ Python กับไฟล์ lock ด้วยเครื่องมืออะไร",
    ["tool_uv_ja", "prof_poetry_no"],
)
Q("type_filter", "en", "make targets lint", ["tool_makefile"], type="knowledge")
# ---------------------------------------------------------------------------
# Service catalogue: one distinct fact per (service, aspect).  These are the bulk
# of the near-duplicate distractors: thirty services share the same aspects, so a
# query about one service's port / limit / owner must rank that service's memory
# above twenty-nine look-alikes.
# ---------------------------------------------------------------------------
SERVICES = [
    "orders-api",
    "billing-svc",
    "auth-gateway",
    "search-api",
    "notify-worker",
    "inventory-svc",
    "ledger-svc",
    "media-uploader",
    "reporting-api",
    "catalog-svc",
    "shipping-api",
    "pricing-engine",
    "profile-svc",
    "webhook-relay",
    "analytics-ingest",
    "chat-backend",
    "coupon-svc",
    "export-worker",
    "admin-portal",
    "geo-lookup",
    "review-svc",
    "loyalty-svc",
    "tax-calculator",
    "fraud-scorer",
    "recommendation-api",
    "invoice-renderer",
    "sms-gateway",
    "warehouse-sync",
    "payout-svc",
    "feature-store",
]
TEAMS = [
    ("payments", "#team-payments"),
    ("platform", "#team-platform"),
    ("growth", "#team-growth"),
    ("core-data", "#team-core-data"),
    ("identity", "#team-identity"),
    ("fulfilment", "#team-fulfilment"),
    ("search", "#team-search"),
    ("risk", "#team-risk"),
]
RUNTIMES = [
    "Python 3.11 / FastAPI",
    "Python 3.12 / FastAPI",
    "Go 1.22",
    "Go 1.21",
    "Kotlin / Spring Boot 3",
    "Node 20 / NestJS",
    "Python 3.11 / Django 4.2",
    "Rust / axum",
]
DEPLOY_METHODS = [  # (en method, en rollback, ja method, ja rollback, th method, th rollback)
    (
        "Argo CD (auto-sync from the deploy repo)",
        "argocd app rollback {svc}",
        "Argo CD（deploy リポジトリから自動同期）",
        "argocd app rollback {svc}",
        "Argo CD (sync อัตโนมัติจาก repo deploy)",
        "argocd app rollback {svc}",
    ),
    (
        "the GitHub Actions deploy workflow with a canary step",
        "re-run the workflow with ref set to the previous tag",
        "カナリア付きの GitHub Actions デプロイワークフロー",
        "ref に一つ前のタグを指定してワークフローを再実行",
        "workflow deploy ของ GitHub Actions ที่มีขั้น canary",
        "รัน workflow ใหม่โดยตั้ง ref เป็น tag ก่อนหน้า",
    ),
    (
        "Helm via the release pipeline",
        "helm rollback {svc} 0",
        "リリースパイプラインからの Helm",
        "helm rollback {svc} 0",
        "Helm จาก release pipeline",
        "helm rollback {svc} 0",
    ),
    (
        "a nightly batch release (no canary)",
        "revert the merge commit and wait for the next nightly release",
        "夜間の一括リリース（カナリアなし）",
        "マージコミットを revert して次の夜間リリースを待つ",
        "release แบบรวบยอดตอนกลางคืน (ไม่มี canary)",
        "revert merge commit แล้วรอ release รอบกลางคืนถัดไป",
    ),
]
CORE_DEPS = [
    "Postgres",
    "the shared Kafka cluster",
    "OpenSearch",
    "the payment provider",
    "RabbitMQ",
    "auth-gateway",
]
DEP_LOCAL = {  # name -> (ja, th)
    "the shared Kafka cluster": ("共有の Kafka クラスタ", "Kafka cluster กลาง"),
    "the payment provider": ("決済代行会社の API", "API ของผู้ให้บริการชำระเงิน"),
    "the Redis cache": ("Redis キャッシュ", "Redis cache"),
    "the thumbnail bucket on S3": ("S3 のサムネイル用バケット", "bucket รูป thumbnail บน S3"),
}
OPTIONAL_DEPS = [
    "the Redis cache",
    "recommendation-api",
    "the thumbnail bucket on S3",
    "geo-lookup",
    "feature-store",
]
INCIDENT_CAUSES = [
    (
        "connection pool exhaustion after a slow query held connections",
        "プールを使い切った（遅いクエリが接続を握り続けた）",
        "connection pool เต็มเพราะ query ช้าถือ connection ไว้",
    ),
    (
        "an expired TLS certificate on the upstream",
        "上流の TLS 証明書の期限切れ",
        "ใบรับรอง TLS ของ upstream หมดอายุ",
    ),
    (
        "a retry storm from clients without jitter",
        "ジッターなしのクライアントによるリトライの嵐",
        "client retry พร้อมกันโดยไม่มี jitter",
    ),
    (
        "a config typo that set the cache TTL to 0",
        "キャッシュ TTL を 0 にした設定ミス",
        "พิมพ์ config ผิดจน TTL ของ cache เป็น 0",
    ),
    (
        "disk full from unrotated debug logs",
        "ローテーションされないデバッグログでディスクが満杯",
        "ดิสก์เต็มเพราะ debug log ไม่ถูก rotate",
    ),
    (
        "a missing index after a table rewrite",
        "テーブル再作成後にインデックスが消えていた",
        "index หายไปหลังสร้างตารางใหม่",
    ),
    (
        "an N+1 query introduced by a serializer change",
        "シリアライザ変更で入った N+1 クエリ",
        "N+1 query ที่มากับการแก้ serializer",
    ),
    (
        "memory leak from an unbounded in-process cache",
        "上限のないプロセス内キャッシュによるメモリリーク",
        "memory leak จาก cache ในโปรเซสที่ไม่มีขนาดจำกัด",
    ),
    (
        "DNS resolution timeouts after a CoreDNS restart",
        "CoreDNS 再起動後の名前解決タイムアウト",
        "DNS timeout หลัง CoreDNS restart",
    ),
    (
        "a long-running migration holding a table lock",
        "テーブルロックを握り続けた長時間マイグレーション",
        "migration ที่รันนานและถือ lock ตาราง",
    ),
    (
        "clock skew between nodes breaking token validation",
        "ノード間の時刻ずれでトークン検証が失敗",
        "เวลาระหว่าง node ไม่ตรงกันจน token ใช้ไม่ได้",
    ),
    (
        "a dependency upgrade that changed JSON null handling",
        "依存ライブラリ更新で JSON の null の扱いが変わった",
        "อัปเกรด library แล้วการจัดการ null ใน JSON เปลี่ยน",
    ),
    (
        "the upstream rate limit being hit by a backfill job",
        "バックフィルジョブが上流のレート制限に当たった",
        "backfill job ยิงจนชน rate limit ของ upstream",
    ),
    (
        "a feature flag left on in production",
        "本番でフィーチャーフラグがオンのままだった",
        "feature flag ถูกเปิดค้างไว้ใน production",
    ),
    (
        "a poison message blocking the queue",
        "キューを詰まらせた不正メッセージ",
        "poison message ทำให้คิวค้าง",
    ),
]
FLAKY_REASONS = [
    (
        "depends on dict ordering from a JSON fixture",
        "JSON フィクスチャの辞書の順序に依存している",
        "พึ่งลำดับ key ของ dict จาก fixture JSON",
    ),
    (
        "uses the real clock and fails around midnight UTC",
        "実時間を使っていて UTC の 0 時前後に落ちる",
        "ใช้เวลาจริงเลยพังช่วงเที่ยงคืน UTC",
    ),
    (
        "shares a Redis database with another test module",
        "別のテストモジュールと Redis の DB を共有している",
        "ใช้ Redis DB เดียวกับเทสต์ module อื่น",
    ),
    (
        "asserts on log output that a background thread sometimes interleaves",
        "バックグラウンドスレッドのログが混ざる出力を検査している",
        "assert log ที่บางครั้งมี log จาก thread อื่นแทรก",
    ),
    (
        "waits a fixed 100 ms for an async consumer",
        "非同期コンシューマを固定 100ms だけ待っている",
        "รอ consumer แบบ async ตายตัว 100ms",
    ),
    (
        "relies on a port that is sometimes taken on the CI runner",
        "CI ランナーで使われていることがあるポートに依存",
        "ใช้พอร์ตที่บางครั้งถูกใช้อยู่บน CI runner",
    ),
    (
        "compares floats with == after currency conversion",
        "通貨換算後の浮動小数点を == で比較している",
        "เทียบ float ด้วย == หลังแปลงสกุลเงิน",
    ),
    (
        "reads a file written by a previous test",
        "前のテストが書いたファイルを読んでいる",
        "อ่านไฟล์ที่เทสต์ก่อนหน้าเขียนไว้",
    ),
]
CHECKPOINT_TASKS = [
    (
        "moving {svc} to the new Postgres cluster",
        "dual writes enabled, backfill 70% done",
        "verify row counts, then switch reads",
    ),
    (
        "upgrading {svc} to the new base image",
        "Dockerfile updated, staging deployed",
        "watch memory for a day, then prod",
    ),
    (
        "adding structured logging to {svc}",
        "request_id middleware merged",
        "convert the remaining print() calls in jobs/",
    ),
    (
        "splitting {svc}'s monolithic settings module",
        "settings split into base/prod/test",
        "remove the old import shim after the next release",
    ),
    (
        "adding idempotency keys to {svc} write endpoints",
        "POST /items and POST /items/bulk done",
        "PATCH endpoints and the retry tests",
    ),
    (
        "replacing {svc}'s hand-rolled retries with the shared client",
        "3 of 5 call sites migrated",
        "the two call sites in the webhook handler",
    ),
]
CHECKPOINT_JA = [
    "{svc} の新しい Postgres クラスタへの移行：二重書き込みを有効化、バックフィルは 7 割完了。次は件数照合をしてから読み取りを切り替える。",
    "{svc} のベースイメージ更新：Dockerfile を更新しステージングに反映済み。次は 1 日メモリを観察してから本番へ。",
    "{svc} の構造化ログ対応：request_id ミドルウェアはマージ済み。残りは jobs/ の print() の置き換え。",
    "{svc} の設定モジュール分割：base/prod/test に分けた。次のリリース後に旧 import の互換レイヤーを消す。",
    "{svc} の書き込み API への冪等キー導入：POST /items と POST /items/bulk は完了。残りは PATCH 系とリトライのテスト。",
    "{svc} の独自リトライを共通クライアントに置き換え中：5 か所中 3 か所移行済み。残りは Webhook ハンドラの 2 か所。",
]
CHECKPOINT_TH = [
    "ย้าย {svc} ไป Postgres cluster ใหม่: เปิด dual write แล้ว backfill ไป 70% ขั้นต่อไปคือเทียบจำนวนแถวแล้วค่อยสลับการอ่าน",
    "อัปเกรด base image ของ {svc}: แก้ Dockerfile และ deploy บน staging แล้ว ต่อไปดู memory หนึ่งวันก่อนขึ้น prod",
    "เพิ่ม structured logging ให้ {svc}: merge middleware request_id แล้ว เหลือแก้ print() ใน jobs/",
    "แยก settings ของ {svc}: แบ่งเป็น base/prod/test แล้ว จะลบ import shim เก่าหลัง release ถัดไป",
    "เพิ่ม idempotency key ให้ endpoint เขียนข้อมูลของ {svc}: POST /items และ /items/bulk เสร็จแล้ว เหลือ PATCH และเทสต์ retry",
    "เปลี่ยน retry ที่เขียนเองใน {svc} เป็น client กลาง: ย้ายแล้ว 3 จาก 5 จุด เหลือสองจุดใน webhook handler",
]

LANG_CYCLE = ["en", "ja", "en", "th", "en"]


def _svc_attrs(i: int, svc: str) -> dict:
    r = random.Random(f"{SEED}:{svc}")
    team, chan = TEAMS[r.randrange(len(TEAMS))]
    dm, rb, dm_ja, rb_ja, dm_th, rb_th = DEPLOY_METHODS[r.randrange(len(DEPLOY_METHODS))]
    deps = [r.choice(CORE_DEPS), r.choice([d for d in OPTIONAL_DEPS if d != svc])]
    envbase = svc.upper().replace("-", "_")
    return dict(
        svc=svc,
        team=team,
        chan=chan,
        port=8001 + i * 3 + r.randrange(3),
        runtime=RUNTIMES[r.randrange(len(RUNTIMES))],
        rl=r.choice([20, 50, 100, 200, 300, 600, 1000]),
        rl_window=r.choice(["second", "minute"]),
        burst=r.choice([2, 3, 5]),
        retry_after=r.choice([1, 5, 10, 30, 60]),
        envvar=f"{envbase}_DATABASE_URL",
        dbname=svc.replace("-", "_"),
        deploy=dm,
        rollback=rb.format(svc=svc),
        deploy_ja=dm_ja,
        rollback_ja=rb_ja.format(svc=svc),
        deploy_th=dm_th,
        rollback_th=rb_th.format(svc=svc),
        p99=r.choice([80, 120, 150, 200, 250, 300, 400, 800]),
        avail=r.choice(["99.9", "99.95", "99.5"]),
        timeout=r.choice([2, 3, 5, 8, 10, 15, 30]),
        dep1=deps[0],
        dep2=deps[1],
        cache_ttl=r.choice(
            ["30 seconds", "5 minutes", "15 minutes", "1 hour", "6 hours", "24 hours"]
        ),
        queue=f"{svc.replace('-', '.')}.jobs",
        conc=r.choice([2, 4, 8, 16, 32]),
        incident=INCIDENT_CAUSES[i % len(INCIDENT_CAUSES)],
        minutes=r.choice([7, 12, 18, 25, 34, 45, 70]),
        flaky=FLAKY_REASONS[i % len(FLAKY_REASONS)],
        test=f"test_{svc.split('-')[0]}_{r.choice(['totals', 'retry', 'export', 'sync', 'expiry', 'webhook', 'pagination'])}",
        cpu_alert=r.choice([70, 75, 80, 85, 90]),
        err_alert=r.choice(["1%", "2%", "5%", "0.5%"]),
        pitr=r.choice([3, 7, 14]),
        snap=r.choice([7, 14, 30, 35]),
        ci_min=r.choice([4, 6, 9, 12, 15, 21]),
        metric=f"{svc.replace('-', '_')}_{r.choice(['requests_total', 'jobs_processed_total', 'latency_seconds'])}",
    )


SVC = {svc: _svc_attrs(i, svc) for i, svc in enumerate(SERVICES)}

# Each family: (name, note type, domain, templates by language).  Templates are
# rotated so that consecutive services get different sentence structures.
FAMILIES = [
    (
        "port",
        "knowledge",
        "infra",
        {
            "en": [
                "Local dev: {svc} listens on port {port}; docker compose publishes it on the same port.",
                "{svc} binds to :{port} when started with `make dev`.",
                "If {svc} refuses to start locally, check whether something else already holds port {port}; that is its fixed dev port.",
            ],
            "ja": [
                "{svc} のローカル開発用ポートは {port}。docker compose でも同じ番号で公開している。",
                "ローカルで make dev すると {svc} は :{port} で待ち受ける。",
            ],
            "th": [
                "{svc} ตอนรันบนเครื่อง local ใช้พอร์ต {port}",
                "พอร์ต dev ของ {svc} คือ {port} ถ้าสตาร์ทไม่ขึ้นให้เช็กว่ามีโปรเซสอื่นจับพอร์ตนี้อยู่หรือเปล่า",
            ],
        },
    ),
    (
        "owner",
        "knowledge",
        "team",
        {
            "en": [
                "{svc} is owned by the {team} team; incidents and questions go to {chan}.",
                "Questions about {svc}? Ask the {team} team in {chan}; they also approve its CODEOWNERS paths.",
                "Owner of {svc}: {team} ({chan}).",
            ],
            "ja": [
                "{svc} の担当は {team} チーム。障害や質問は {chan} へ。",
                "{svc} について聞きたいときは {chan} で {team} チームに。CODEOWNERS の承認も彼ら。",
            ],
            "th": [
                "{svc} อยู่ในความดูแลของทีม {team} มีปัญหาให้แจ้งที่ {chan}",
                "เจ้าของ {svc} คือทีม {team} ติดต่อได้ทาง {chan}",
            ],
        },
    ),
    (
        "ratelimit",
        "knowledge",
        "api",
        {
            "en": [
                "{svc} allows {rl} requests per {rl_window} per client (burst x{burst}); above that it returns 429 with Retry-After: {retry_after}.",
                "Rate limit on {svc}: {rl}/{rl_window} per API key. Expect HTTP 429 and a Retry-After of {retry_after} s when you exceed it.",
                "Calling {svc} from a batch job? It throttles at {rl} req/{rl_window}; back off for {retry_after} s on 429.",
            ],
            "ja": [
                "{svc} のレート制限はクライアントごとに 1 {rl_window_ja}あたり {rl} リクエスト（バースト {burst} 倍）。超えると 429 と Retry-After: {retry_after} が返る。",
                "バッチから {svc} を呼ぶときは 1 {rl_window_ja} {rl} 件までに抑える。429 が返ったら {retry_after} 秒待つ。",
            ],
            "th": [
                "{svc} จำกัด {rl} request ต่อ{rl_window_th}ต่อ client ถ้าเกินจะได้ 429 พร้อม Retry-After: {retry_after}",
                "rate limit ของ {svc} คือ {rl} ครั้งต่อ{rl_window_th} ถ้าโดน 429 ให้รอ {retry_after} วินาทีก่อนยิงใหม่",
            ],
        },
    ),
    (
        "dbenv",
        "knowledge",
        "db",
        {
            "en": [
                "{svc} reads its database URL from {envvar} (database name {dbname}).",
                "The connection string for {svc} comes from the {envvar} environment variable; locally it points at the {dbname} database in compose.",
            ],
            "ja": ["{svc} の DB 接続先は環境変数 {envvar}（DB 名は {dbname}）。"],
            "th": [
                "{svc} อ่าน URL ของฐานข้อมูลจาก environment variable {envvar} (ชื่อ database {dbname})"
            ],
        },
    ),
    (
        "runtime",
        "knowledge",
        "refactor",
        {
            "en": [
                "{svc} is written in {runtime}.",
                "Stack of {svc}: {runtime}; follow that ecosystem's conventions when editing it.",
            ],
            "ja": ["{svc} の実装は {runtime}。"],
            "th": ["{svc} เขียนด้วย {runtime}"],
        },
    ),
    (
        "deploy",
        "knowledge",
        "deploy",
        {
            "en": [
                "{svc} is deployed by {deploy}. Rollback: {rollback}.",
                "To roll back {svc}: {rollback}. (It ships via {deploy}.)",
            ],
            "ja": ["{svc} は {deploy_ja} でデプロイされる。ロールバックは「{rollback_ja}」。"],
            "th": ["{svc} deploy ผ่าน {deploy_th} ถ้าต้อง rollback: {rollback_th}"],
        },
    ),
    (
        "slo",
        "knowledge",
        "observability",
        {
            "en": [
                "SLO for {svc}: p99 latency under {p99} ms and {avail}% availability over 30 days.",
                "{svc} has a {avail}% monthly availability target and a p99 budget of {p99} ms.",
            ],
            "ja": ["{svc} の SLO は p99 {p99}ms 以下、30 日間の可用性 {avail}%。"],
            "th": ["SLO ของ {svc}: p99 ไม่เกิน {p99}ms และ availability {avail}% ต่อ 30 วัน"],
        },
    ),
    (
        "timeout",
        "knowledge",
        "api",
        {
            "en": [
                "{svc} calls {dep1} with a {timeout} s timeout; if {dep2} is down it serves degraded responses instead of failing.",
                "Timeouts in {svc}: {timeout} s towards {dep1}. It also depends on {dep2}, which is treated as optional.",
            ],
            "ja": [
                "{svc} から {dep1_ja} への呼び出しタイムアウトは {timeout} 秒。{dep2_ja} が落ちているときは縮退動作になる。"
            ],
            "th": [
                "{svc} เรียก {dep1_th} โดยตั้ง timeout {timeout} วินาที ถ้า {dep2_th} ล่มจะตอบแบบลดฟังก์ชันแทนที่จะ error"
            ],
        },
    ),
    (
        "cache",
        "knowledge",
        "infra",
        {
            "en": [
                "{svc} caches its read responses in Redis for {cache_ttl}; keys are prefixed with '{svc}:'.",
                "Stale data from {svc} is usually its Redis cache: TTL is {cache_ttl}, and the keys start with '{svc}:'.",
            ],
            "ja": [
                "{svc} は読み取り結果を Redis に {cache_ttl_ja}キャッシュする。キーのプレフィックスは「{svc}:」。"
            ],
            "th": ["{svc} cache ผลการอ่านไว้ใน Redis นาน {cache_ttl_th} key ขึ้นต้นด้วย '{svc}:'"],
        },
    ),
    (
        "queue",
        "knowledge",
        "infra",
        {
            "en": [
                "{svc} consumes the queue {queue} with concurrency {conc}; raise it only after checking the DB pool budget.",
                "Background work for {svc} goes through {queue}; {conc} consumers per pod.",
            ],
            "ja": ["{svc} のジョブはキュー {queue} を通る。コンシューマの並列数は {conc}。"],
            "th": ["งานเบื้องหลังของ {svc} ผ่านคิว {queue} ใช้ consumer {conc} ตัวต่อ pod"],
        },
    ),
    (
        "runbook",
        "knowledge",
        "observability",
        {
            "en": [
                "Runbook for {svc}: docs/runbooks/{svc}.md; Grafana dashboard '{svc} overview'.",
                "When {svc} pages you, start with docs/runbooks/{svc}.md and the '{svc} overview' dashboard.",
            ],
            "ja": [
                "{svc} の手順書は docs/runbooks/{svc}.md、ダッシュボードは Grafana の「{svc} overview」。"
            ],
            "th": [
                "runbook ของ {svc} อยู่ที่ docs/runbooks/{svc}.md และ dashboard ชื่อ '{svc} overview' ใน Grafana"
            ],
        },
    ),
    (
        "alert",
        "knowledge",
        "observability",
        {
            "en": [
                "{svc} alerts page on-call when the 5xx rate is above {err_alert} for 10 minutes or CPU stays above {cpu_alert}%.",
                "Paging thresholds for {svc}: errors > {err_alert} (10 min window), CPU > {cpu_alert}%.",
            ],
            "ja": ["{svc} のアラート閾値は 5xx 率 {err_alert}（10 分継続）と CPU {cpu_alert}%。"],
            "th": [
                "{svc} จะ page คนเวรเมื่อ 5xx เกิน {err_alert} นาน 10 นาที หรือ CPU เกิน {cpu_alert}%"
            ],
        },
    ),
    (
        "metric",
        "knowledge",
        "observability",
        {
            "en": [
                "The main throughput metric of {svc} is {metric}; the SLO dashboards are built on it.",
                "Use {metric} in PromQL when you want {svc}'s throughput.",
            ],
            "ja": ["{svc} の主要メトリクスは {metric}。SLO のダッシュボードもこれを使っている。"],
            "th": ["metric หลักของ {svc} คือ {metric} dashboard ของ SLO ก็ใช้ตัวนี้"],
        },
    ),
    (
        "incident",
        "conclusion",
        "observability",
        {
            "en": [
                "Postmortem conclusion for the {svc} outage ({minutes} min): root cause was {cause_en}.",
                "Why did {svc} go down for {minutes} minutes? {cause_en_cap}, per the postmortem.",
            ],
            "ja": ["{svc} の障害（{minutes} 分）のポストモーテムの結論：原因は{cause_ja}。"],
            "th": ["สรุป postmortem ของ {svc} ที่ล่มไป {minutes} นาที: สาเหตุคือ{cause_th}"],
        },
    ),
    (
        "staging",
        "knowledge",
        "deploy",
        {
            "en": [
                "Staging URL for {svc}: https://{svc}.staging.internal (VPN required).",
                "{svc} on staging lives at https://{svc}.staging.internal; staging data is reset every Sunday.",
            ],
            "ja": ["{svc} のステージング環境は https://{svc}.staging.internal（VPN 必須）。"],
            "th": ["URL ของ {svc} บน staging คือ https://{svc}.staging.internal ต้องต่อ VPN ก่อน"],
        },
    ),
    (
        "secrets",
        "knowledge",
        "security",
        {
            "en": [
                "Secrets for {svc} are stored in AWS Secrets Manager under prod/{svc}/ and synced by external-secrets into the {svc}-env Secret.",
                "Need a new secret in {svc}? Add it under prod/{svc}/ in Secrets Manager; the {svc}-env Kubernetes Secret picks it up within a minute.",
            ],
            "ja": [
                "{svc} のシークレットは Secrets Manager の prod/{svc}/ 配下。external-secrets が {svc}-env に同期する。"
            ],
            "th": [
                "secret ของ {svc} อยู่ใน Secrets Manager ที่ prod/{svc}/ และ sync เข้า Secret ชื่อ {svc}-env"
            ],
        },
    ),
    (
        "backup",
        "knowledge",
        "db",
        {
            "en": [
                "The {dbname} database has point-in-time recovery for {pitr} days; daily snapshots are kept for {snap} days.",
                "Restoring {svc}'s data: PITR window is {pitr} days, snapshots go back {snap} days (database {dbname}).",
            ],
            "ja": [
                "{svc} の DB（{dbname}）はポイントインタイムリカバリが {pitr} 日、日次スナップショットは {snap} 日保持。"
            ],
            "th": [
                "ฐานข้อมูล {dbname} ของ {svc} กู้แบบ point-in-time ได้ย้อนหลัง {pitr} วัน และเก็บ snapshot รายวันไว้ {snap} วัน"
            ],
        },
    ),
    (
        "cijob",
        "knowledge",
        "ci",
        {
            "en": [
                "CI for {svc} runs in about {ci_min} minutes; the required checks are `{svc} / test` and `{svc} / lint`.",
                "{svc} pipeline: ~{ci_min} min end to end. Branch protection requires the `{svc} / test` job.",
            ],
            "ja": [
                "{svc} の CI は約 {ci_min} 分。必須チェックは `{svc} / test` と `{svc} / lint`。"
            ],
            "th": [
                "CI ของ {svc} ใช้เวลาราว {ci_min} นาที check ที่ต้องผ่านคือ `{svc} / test` และ `{svc} / lint`"
            ],
        },
    ),
    (
        "flaky",
        "lesson",
        "testing",
        {
            "en": [
                "{test} in {svc} is flaky because it {flaky_en}; fix that instead of re-running.",
                "Flaky: {test} ({svc}). It {flaky_en}.",
            ],
            "ja": ["{svc} の {test} が不安定なのは、{flaky_ja}から。再実行でごまかさない。"],
            "th": ["{test} ของ {svc} flaky เพราะ{flaky_th} ต้องแก้ที่ต้นเหตุ"],
        },
    ),
]
_WINDOW_JA = {"second": "秒", "minute": "分"}
_WINDOW_TH = {"second": "วินาที", "minute": "นาที"}
_TTL_JA = {
    "30 seconds": "30 秒",
    "5 minutes": "5 分",
    "15 minutes": "15 分",
    "1 hour": "1 時間",
    "6 hours": "6 時間",
    "24 hours": "24 時間",
}
_TTL_TH = {
    "30 seconds": "30 วินาที",
    "5 minutes": "5 นาที",
    "15 minutes": "15 นาที",
    "1 hour": "1 ชั่วโมง",
    "6 hours": "6 ชั่วโมง",
    "24 hours": "24 ชั่วโมง",
}


def family_sid(fam: str, svc: str) -> str:
    return f"{fam}:{svc}"


def family_lang(fi: int, si: int) -> str:
    return LANG_CYCLE[(fi + si) % len(LANG_CYCLE)]


def build_families() -> None:
    for fi, (fam, ntype, domain, tmpls) in enumerate(FAMILIES):
        for si, svc in enumerate(SERVICES):
            a = dict(SVC[svc])
            a["rl_window_ja"] = _WINDOW_JA[a["rl_window"]]
            a["rl_window_th"] = _WINDOW_TH[a["rl_window"]]
            a["cache_ttl_ja"] = _TTL_JA[a["cache_ttl"]]
            a["cache_ttl_th"] = _TTL_TH[a["cache_ttl"]]
            for d in ("dep1", "dep2"):
                a[d + "_ja"], a[d + "_th"] = DEP_LOCAL.get(a[d], (a[d], a[d]))
            a["cause_en"], a["cause_ja"], a["cause_th"] = a["incident"]
            a["cause_en_cap"] = a["cause_en"][0].upper() + a["cause_en"][1:]
            a["flaky_en"], a["flaky_ja"], a["flaky_th"] = a["flaky"]
            lang = family_lang(fi, si)
            options = tmpls[lang]
            text = options[(si // len(LANG_CYCLE) + fi) % len(options)].format(**a)
            N(family_sid(fam, svc), ntype, domain, lang, text)
    # checkpoints: progress notes for the first 12 services (each task used twice)
    for si, svc in enumerate(SERVICES[:12]):
        ti = si % len(CHECKPOINT_TASKS)
        lang = LANG_CYCLE[(si + 2) % len(LANG_CYCLE)]
        if lang == "en":
            task, done, nxt = CHECKPOINT_TASKS[ti]
            text = f"Checkpoint — {task.format(svc=svc)}. Done: {done}. Next: {nxt}."
        elif lang == "ja":
            text = "チェックポイント：" + CHECKPOINT_JA[ti].format(svc=svc)
        else:
            text = "checkpoint: " + CHECKPOINT_TH[ti].format(svc=svc)
        N(family_sid("checkpoint", svc), "checkpoint", "refactor", lang, text)


build_families()
# ---------------------------------------------------------------------------
# External vendors and big tables: hand-written facts, one per item
# ---------------------------------------------------------------------------
VENDORS = [
    (
        "vendor_parcelly",
        "en",
        "Parcelly (shipping labels) allows 10 label requests per second and returns 429 with no Retry-After; use a 2 s pause. Labels are billed even if you never print them.",
    ),
    (
        "vendor_mailfox",
        "en",
        "MailFox (transactional email) rejects batches over 500 recipients with a 413, not a 4xx validation error, so check the status code, not just the body.",
    ),
    (
        "vendor_smsly",
        "ja",
        "SMS 送信の Smsly は 1 秒 30 通まで。タイの番号は +66 形式でないと黙って捨てられる。",
    ),
    (
        "vendor_taxbase",
        "th",
        "TaxBase API คิดเงินต่อครั้งที่เรียก ดังนั้นผลคำนวณภาษีต้อง cache ตาม (ประเทศ, รหัสสินค้า) ไว้ 24 ชั่วโมง",
    ),
    (
        "vendor_geonow",
        "en",
        "GeoNow geocoding quota is 100k lookups per day, reset at 00:00 UTC; the 429 it sends after that lasts until the reset, so stop the job instead of retrying.",
    ),
    (
        "vendor_paygate_th",
        "th",
        "PayGate ฝั่งไทยส่ง webhook ซ้ำได้สูงสุด 5 ครั้งถ้าเราไม่ตอบ 200 ภายใน 10 วินาที ต้องตอบก่อนแล้วค่อยประมวลผลในคิว",
    ),
    (
        "vendor_kintai",
        "ja",
        "勤怠システム Kintai の API は日本時間の深夜 2 時〜3 時がメンテナンスで 503 を返す。夜間バッチはこの時間を避ける。",
    ),
    (
        "vendor_docsign",
        "en",
        "DocSign envelopes expire after 30 days; the API still returns status 'sent' for expired ones unless you pass include=expiry.",
    ),
    (
        "vendor_fxrates",
        "en",
        "FX rates come from RateHub once an hour; their free tier has a 1,000 calls/month limit, so every service must read the cached copy in the pricing DB, not call RateHub.",
    ),
    (
        "vendor_chatwidget_ja",
        "ja",
        "サポートチャットのウィジェットは iframe で読み込むため、CSP の frame-src に widget.helpchat.example を追加している。",
    ),
    (
        "vendor_storage_th",
        "th",
        "ผู้ให้บริการ CDN รูปภาพคิดเงินตามจำนวน transform ต่อเดือน อย่าใส่ query ?w= แบบสุ่มขนาด ให้ใช้ขนาดมาตรฐาน 320/640/1280",
    ),
    (
        "vendor_tracker_ja",
        "ja",
        "課題管理ツールの API トークンは 90 日で失効する。失効すると 401 ではなく 403 が返るので権限不足と勘違いしやすい。",
    ),
]
for sid, lang, text in VENDORS:
    N(sid, "knowledge", "api", lang, text)

TABLES = [
    (
        "tbl_events",
        "en",
        "events has ~300M rows, partitioned by month on created_at. Always filter by created_at or the planner touches every partition.",
    ),
    (
        "tbl_orders",
        "en",
        "orders: the (customer_id, created_at DESC) index serves the order history page; status lookups use the partial index WHERE status IN ('pending','paid').",
    ),
    (
        "tbl_users_ja",
        "ja",
        "users テーブルの email は citext で一意制約がある。大文字小文字違いの重複登録はここで弾かれる。",
    ),
    (
        "tbl_audit_th",
        "th",
        "ตาราง audit_log เป็น append-only ห้าม UPDATE หรือ DELETE ใช้ role ที่มีแค่สิทธิ์ INSERT",
    ),
    (
        "tbl_sessions",
        "en",
        "refresh_tokens stores only SHA-256 hashes of tokens; a nightly job deletes rows past expires_at.",
    ),
    (
        "tbl_products_ja",
        "ja",
        "products.attributes は jsonb。よく検索する color と size は生成列にしてインデックスを張っている。",
    ),
    (
        "tbl_payments_th",
        "th",
        "ตาราง payments เก็บจำนวนเงินเป็นหน่วยย่อยที่สุด (สตางค์/เซ็น) ชนิด bigint ห้ามใช้ numeric ปนกัน",
    ),
    (
        "tbl_inventory",
        "en",
        "inventory_levels is updated with SELECT ... FOR UPDATE SKIP LOCKED by the reservation worker; don't add long transactions that touch it.",
    ),
    (
        "tbl_outbox_ja",
        "ja",
        "outbox テーブルはトランザクション内でイベントを書き、relay が 1 秒ごとに Kafka へ送る。処理済みは 7 日後に削除。",
    ),
    (
        "tbl_feature_flags_th",
        "th",
        "ตาราง feature_flag_overrides ใช้ override flag รายบัญชีลูกค้า มีผลเหนือค่าจาก Unleash",
    ),
]
for sid, lang, text in TABLES:
    N(sid, "knowledge", "db", lang, text)

Q(
    "contextual",
    "en",
    "The nightly geocoding backfill started getting 429s from GeoNow around 9pm Tokyo time. I'm adding exponential backoff so it keeps retrying until it finishes.",
    ["vendor_geonow"],
)
Q(
    "contextual",
    "en",
    "Our sync script suddenly gets 403 Forbidden from the issue tracker API even though nothing changed in the project permissions. What should I check first?",
    ["vendor_tracker_ja"],
)
Q("crosslang", "en", "SMS to Thai numbers silently not delivered", ["vendor_smsly"])
Q(
    "crosslang",
    "en",
    "tax calculation API costs money per call — should results be cached?",
    ["vendor_taxbase"],
)
Q("crosslang", "ja", "PayGate から同じ webhook が何度も届く", ["vendor_paygate_th"])
Q(
    "crosslang",
    "en",
    "nightly batch fails with 503 from the attendance system around 2am JST",
    ["vendor_kintai"],
)
Q(
    "contextual",
    "en",
    "I'm writing a query that counts events per user for the last quarter's report. It filters on user_id only and takes forever on production data.",
    ["tbl_events"],
)
Q("crosslang", "en", "can I delete old rows from audit_log to save space?", ["tbl_audit_th"])
Q("crosslang", "th", "ตาราง outbox ส่ง event ไป Kafka ยังไง", ["tbl_outbox_ja"])
Q(
    "paraphrase",
    "en",
    "currency conversion figures: which source may each component consult?",
    ["vendor_fxrates"],
)

# ---------------------------------------------------------------------------
# More hand-written notes: checkpoints, lessons, knowledge, conclusions
# ---------------------------------------------------------------------------
N(
    "cp_search_reindex",
    "checkpoint",
    "infra",
    "en",
    "Checkpoint: OpenSearch reindex to the new analyzer. Created products_v7 with the Japanese kuromoji analyzer, reindexed 60% overnight. Next: compare top-20 results for the 50 saved queries, then flip the alias.",
)
N(
    "cp_thai_launch_ja",
    "checkpoint",
    "frontend",
    "ja",
    "チェックポイント：タイ語ローカライズ。翻訳キーは 92% 埋まった。残りは決済画面のエラーメッセージと、仏暦表示の確認。",
)
N(
    "cp_rate_limiter_th",
    "checkpoint",
    "api",
    "th",
    "checkpoint: ทำ rate limiter ใหม่ใน auth-gateway ด้วย Redis token bucket เสร็จส่วน middleware แล้ว ต่อไปคือ load test และตั้งค่าแยกตาม plan ของลูกค้า",
)
N(
    "cp_ci_cache",
    "checkpoint",
    "ci",
    "en",
    "Checkpoint: moving CI caches from actions/cache to the S3-backed cache. Python and pnpm caches done; Docker layer cache still on GitHub. Next: measure hit rate for a week.",
)
N(
    "cp_kioku_ja",
    "checkpoint",
    "tooling",
    "ja",
    "チェックポイント：社内 CLI の Go 移行。login と deploy コマンドは移植済み。次は logs コマンドと、Windows 向けビルドの確認。",
)
N(
    "cp_pg15_th",
    "checkpoint",
    "db",
    "th",
    "checkpoint: อัปเกรด Postgres 14 เป็น 15 บน staging เสร็จแล้ว extension pg_partman ต้องอัปเดตตาม ขั้นต่อไปคือทดสอบ restore จาก snapshot แล้วนัดเวลาทำบน prod",
)
N(
    "cp_sso",
    "checkpoint",
    "security",
    "en",
    "Checkpoint: SAML SSO for the admin portal. Okta app configured, login works on staging; group-to-role mapping and the break-glass local admin account are still to do.",
)
N(
    "cp_mobile_api_ja",
    "checkpoint",
    "api",
    "ja",
    "チェックポイント：モバイル向け API v2。注文一覧と詳細は完成、カートは仕様待ち。古いアプリ向けの v1 は 6 月末まで残す約束。",
)
N(
    "cp_cost_th",
    "checkpoint",
    "infra",
    "th",
    "checkpoint: ลดค่าใช้จ่าย AWS ปิด instance dev ที่ไม่ได้ใช้แล้ว 14 เครื่อง ต่อไปคือย้าย log เก่าไป S3 Glacier",
)
N(
    "cp_flaky_hunt",
    "checkpoint",
    "testing",
    "en",
    "Checkpoint: flaky-test cleanup sprint. Fixed 9 of 23 quarantined tests (mostly shared Redis state). Next: the Playwright checkout tests that time out on CI only.",
)

Q(
    "contextual",
    "en",
    "Picking up the search work from last week: where did we leave the OpenSearch reindex with the new Japanese analyzer, and what is left before switching the alias?",
    ["cp_search_reindex"],
)
Q(
    "contextual",
    "en",
    "Continuing the Postgres 15 upgrade. What was already done on staging and what's the next step before we schedule production?",
    ["cp_pg15_th"],
)
Q("type_filter", "en", "SSO admin portal progress", ["cp_sso"], type="checkpoint")
Q("type_filter", "ja", "タイ語ローカライズ 進捗", ["cp_thai_launch_ja"], type="checkpoint")
Q(
    "type_filter",
    "en",
    "rate limiter auth-gateway token bucket",
    ["cp_rate_limiter_th"],
    type="checkpoint",
)
Q("crosslang", "en", "where are we on the Go rewrite of the internal CLI?", ["cp_kioku_ja"])
Q("crosslang", "th", "API v2 สำหรับมือถือทำถึงไหนแล้ว", ["cp_mobile_api_ja"])

MISC = [
    # (sid, type, domain, lang, text)
    (
        "m_docker_healthcheck",
        "lesson",
        "infra",
        "en",
        "HEALTHCHECK in the Dockerfile is ignored by Kubernetes; define probes in the Helm chart instead.",
    ),
    (
        "m_docker_arm",
        "lesson",
        "infra",
        "en",
        "Images built on an M1 laptop are arm64 only and crash with 'exec format error' on the amd64 nodes. Build with --platform linux/amd64 or let CI build.",
    ),
    (
        "m_docker_secrets_ja",
        "lesson",
        "infra",
        "ja",
        "Dockerfile の ARG でトークンを渡すとイメージ履歴に残る。ビルド時の秘密情報は --secret（BuildKit）で渡す。",
    ),
    (
        "m_docker_dockerignore_th",
        "lesson",
        "infra",
        "th",
        "ลืมใส่ .git กับ node_modules ใน .dockerignore ทำให้ build context ใหญ่ 2GB และ build ช้ามาก",
    ),
    (
        "m_cache_invalidation",
        "lesson",
        "infra",
        "en",
        "When a product price changes, delete the catalog cache entry in the same transaction hook; waiting for TTL showed old prices at checkout for 15 minutes.",
    ),
    (
        "m_cache_negative_ja",
        "lesson",
        "infra",
        "ja",
        "「見つからない」結果もキャッシュする（ネガティブキャッシュ、60 秒）。存在しない ID への連打で DB が詰まった。",
    ),
    (
        "m_http_gzip_th",
        "knowledge",
        "api",
        "th",
        "API ตอบ gzip เฉพาะ response ที่ใหญ่กว่า 1KB และ client ต้องส่ง Accept-Encoding มา",
    ),
    (
        "m_api_limits_conclusion_ja",
        "conclusion",
        "api",
        "ja",
        "検証の結論：社内 API のレート制限はゲートウェイ側で一括管理する方が、各サービスで実装するよりも設定漏れが少ない。",
    ),
    (
        "m_uuid_ja",
        "lesson",
        "api",
        "ja",
        "外部に公開する ID に連番を使わない。URL の数字を変えるだけで他人の注文が見えた。",
    ),
    (
        "m_timezone_th",
        "lesson",
        "tooling",
        "th",
        "เวลาตัดรอบรายงานรายวันของลูกค้าไทยต้องใช้ Asia/Bangkok ไม่ใช่ Asia/Tokyo ที่เป็นค่า default ของระบบ",
    ),
    (
        "m_dst",
        "lesson",
        "tooling",
        "en",
        "Japan and Thailand have no daylight saving time, but our US customers do: never add 24 hours to get 'tomorrow', use the calendar date in the customer's zone.",
    ),
    (
        "m_encoding_filename",
        "lesson",
        "tooling",
        "en",
        "Uploaded filenames from macOS come in NFD; normalise to NFC before comparing, or 'が' in Japanese names fails to match.",
    ),
    (
        "m_encoding_emoji_ja",
        "lesson",
        "db",
        "ja",
        "MySQL 時代の名残で一部の列が utf8（3 バイト）のまま。絵文字を入れると保存で落ちるので utf8mb4 に直してから使う。",
    ),
    (
        "m_thai_search_th",
        "knowledge",
        "infra",
        "th",
        "การค้นหาภาษาไทยใน OpenSearch ใช้ analyzer thai เพราะภาษาไทยไม่มีช่องว่างระหว่างคำ ถ้าใช้ standard จะค้นไม่เจอ",
    ),
    (
        "m_review_checklist",
        "knowledge",
        "team",
        "en",
        "Code review checklist: tests for the bug, migrations reversible, no secrets, feature flag for risky paths, docs updated.",
    ),
    (
        "m_review_tone_ja",
        "knowledge",
        "team",
        "ja",
        "レビューコメントには must / should / nit の重みを付ける。ツッコミの強さが伝わらないと議論が長引く。",
    ),
    (
        "m_review_time_th",
        "conclusion",
        "team",
        "th",
        "สรุปจาก metric ของทีม: PR ที่มีคนรีวิวภายใน 4 ชั่วโมงแรก merge ได้เร็วกว่าเฉลี่ย 2 วัน",
    ),
    (
        "m_secrets_rotation",
        "knowledge",
        "security",
        "en",
        "Database passwords rotate every 30 days automatically; apps must re-read credentials on auth failure instead of caching them at start-up forever.",
    ),
    (
        "m_secrets_local_ja",
        "knowledge",
        "security",
        "ja",
        "ローカル開発用の秘密情報は 1Password の「dev-shared」保管庫にある。.env.local に書き出して使い、コミットしない。",
    ),
    (
        "m_oauth_th",
        "lesson",
        "security",
        "th",
        "redirect_uri ของ OAuth ต้องตรงทุกตัวอักษร รวมถึง / ท้าย URL ไม่งั้น provider ตอบ invalid_redirect",
    ),
    (
        "m_git_hooks_husky",
        "knowledge",
        "git",
        "en",
        "The web repo uses husky + lint-staged: only staged files are linted on commit, the full lint runs in CI.",
    ),
    (
        "m_git_gc_ja",
        "conclusion",
        "git",
        "ja",
        "monorepo の clone が遅い件の結論：履歴に 1.2GB の動画ファイルがあった。filter-repo で削除し、LFS に移した。",
    ),
    (
        "m_git_codeowners_th",
        "knowledge",
        "git",
        "th",
        "ไฟล์ CODEOWNERS อยู่ที่ .github/CODEOWNERS ถ้าเพิ่มโฟลเดอร์ใหม่ต้องใส่เจ้าของด้วย",
    ),
    (
        "m_ci_matrix_ja",
        "conclusion",
        "ci",
        "ja",
        "macOS ランナーは料金が 10 倍なので、macOS のテストは main へのマージ時だけ実行すると決めた。",
    ),
    (
        "m_ci_secrets_fork_th",
        "knowledge",
        "ci",
        "th",
        "PR จาก fork จะไม่ได้รับ secret ของ repo ดังนั้น job ที่ต้องใช้ secret ต้องข้ามเมื่อเป็น fork",
    ),
    (
        "m_ci_artifact_size",
        "lesson",
        "ci",
        "en",
        "Don't upload the whole node_modules as an artifact; it was 1.4 GB and the upload took longer than the tests.",
    ),
    (
        "m_deploy_k8s_drain_ja",
        "lesson",
        "deploy",
        "ja",
        "preStop フックで 10 秒 sleep を入れないと、Pod 終了時に処理中のリクエストが 502 になる。",
    ),
    (
        "m_deploy_version_endpoint",
        "knowledge",
        "deploy",
        "en",
        "Every service exposes GET /version with the git SHA and build time; use it to confirm what is actually running after a deploy.",
    ),
    (
        "m_deploy_th_migration_order",
        "knowledge",
        "deploy",
        "th",
        "ลำดับ deploy ที่มี migration: รัน migration ก่อน แล้วค่อยปล่อยโค้ดที่ใช้ schema ใหม่ ห้ามสลับ",
    ),
    (
        "m_db_conn_leak",
        "lesson",
        "db",
        "en",
        "Background jobs must use `async with session_scope()`; a job that forgot to close its session leaked connections until the pool was exhausted at 3am.",
    ),
    (
        "m_db_statement_timeout_th",
        "knowledge",
        "db",
        "th",
        "API ตั้ง statement_timeout ไว้ 5 วินาที ส่วน worker รายงานตั้งไว้ 5 นาที",
    ),
    (
        "m_db_readonly_replica_ja",
        "knowledge",
        "db",
        "ja",
        "分析用のクエリはレプリカ（reader エンドポイント）に投げる。プライマリで重い集計をしない。",
    ),
    (
        "m_db_orm_bulk",
        "lesson",
        "db",
        "en",
        "For inserting 50k rows use insert().values() in chunks or COPY; session.add() in a loop took 11 minutes.",
    ),
    (
        "m_refactor_feature_toggle_ja",
        "conclusion",
        "refactor",
        "ja",
        "大規模なリファクタは、新旧実装を同時に動かして結果を比較する「シャドー実行」で進めたところ、差分バグを 6 件事前に見つけられた。",
    ),
    (
        "m_refactor_naming_th",
        "knowledge",
        "refactor",
        "th",
        "ชื่อโมดูลใช้ snake_case ชื่อคลาสใช้ PascalCase และห้ามตั้งชื่อไฟล์ว่า utils.py ใหม่อีก",
    ),
    (
        "m_fe_state_ja",
        "knowledge",
        "frontend",
        "ja",
        "サーバーから取るデータは React Query、画面内の状態は useState、グローバル状態は Zustand と使い分けるルール。",
    ),
    (
        "m_fe_pr_preview_th",
        "knowledge",
        "frontend",
        "th",
        "ทุก PR ของ web จะมี preview URL จาก Vercel คอมเมนต์อัตโนมัติใน PR",
    ),
    (
        "m_fe_fonts",
        "lesson",
        "frontend",
        "en",
        "Self-host the Noto Sans JP and Noto Sans Thai subsets; loading the full families from Google Fonts added 1.8 s on 3G.",
    ),
    (
        "m_test_golden_th",
        "lesson",
        "testing",
        "th",
        "ไฟล์ golden ของ PDF ใบแจ้งหนี้ต้องสร้างใหม่ด้วย make update-golden อย่าแก้มือ",
    ),
    (
        "m_test_parallel_db_ja",
        "knowledge",
        "testing",
        "ja",
        "pytest-xdist で並列実行するとき、ワーカーごとに test_db_gw0 のような別 DB が作られる。",
    ),
    (
        "m_observability_trace",
        "knowledge",
        "observability",
        "en",
        "Traces go to Tempo via OpenTelemetry; the trace_id in problem+json errors links straight to the trace in Grafana.",
    ),
    (
        "m_observability_cardinality_ja",
        "lesson",
        "observability",
        "ja",
        "Prometheus のラベルにユーザー ID を入れない。系列数が爆発してメモリ不足で落ちた。",
    ),
    (
        "m_observability_sampling_th",
        "conclusion",
        "observability",
        "th",
        "สรุป: เก็บ trace 100% ทำให้ค่า storage สูงมาก ตอนนี้ sample 10% แต่เก็บ trace ที่ error ทุกตัว",
    ),
    (
        "m_team_oncall_pay",
        "knowledge",
        "team",
        "en",
        "On-call weeks rotate Monday 10:00 JST; swaps are fine if you update the PagerDuty schedule yourself.",
    ),
    (
        "m_team_meeting_th",
        "knowledge",
        "team",
        "th",
        "ประชุม sprint planning ทุกวันจันทร์ที่สองของ sprint เวลา 14:00 ตามเวลาไทย",
    ),
    (
        "m_team_docs_ja",
        "lesson",
        "team",
        "ja",
        "口頭で決まったことは当日中に ADR か Issue に残す。1 か月後に誰も理由を覚えていなかった。",
    ),
    (
        "m_api_pagination_knowledge_th",
        "knowledge",
        "api",
        "th",
        "API ของเราเองใช้ cursor pagination ส่ง next_cursor กลับมา ถ้าเป็น null แปลว่าหมดแล้ว",
    ),
    (
        "m_api_batch_th",
        "lesson",
        "api",
        "th",
        "ถ้าต้องอัปเดตข้อมูลหลายร้อยรายการผ่าน API ภายนอก ให้ทยอยส่งทีละชุดและเว้นระยะ อย่ายิงพร้อมกันทั้งหมด",
    ),
    (
        "m_api_429_ja",
        "knowledge",
        "api",
        "ja",
        "429 Too Many Requests は「少し待てば通る」という意味。401/403 と違い、同じリクエストを後で再送してよい。",
    ),
    (
        "m_api_http_client_th",
        "knowledge",
        "api",
        "th",
        "client HTTP ภายในส่ง header User-Agent เป็นชื่อ service และ version เสมอ เพื่อให้ฝั่งปลายทางติดตามได้",
    ),
]
for sid, typ, dom, lang, text in MISC:
    N(sid, typ, dom, lang, text)

Q("trigger", "en", "exec format error", ["m_docker_arm"])
Q(
    "trigger",
    "en",
    "Dockerfile",
    [
        "m_docker_secrets_ja",
        "m_docker_healthcheck",
        "m_docker_arm",
        "m_docker_dockerignore_th",
        "infra_newer_1",
    ],
)
Q("trigger", "ja", "絵文字", ["m_encoding_emoji_ja"])
Q(
    "trigger",
    "th",
    "โดน 429",
    ["m_api_429_ja", "api_retry_after", "please_24patch", "m_api_batch_th"],
)
Q("trigger", "en", "statement_timeout", ["m_db_statement_timeout_th", "db_lock_timeout_ja"])
Q(
    "contextual",
    "en",
    "I built the worker image on my Apple Silicon laptop and pushed it to the registry; the pods now crash immediately with exec format error. How should I build it?",
    ["m_docker_arm"],
)
Q(
    "contextual",
    "en",
    "Our Dockerfile passes the private npm token as a build ARG so the install step can fetch internal packages. Is there a problem with doing it this way?",
    ["m_docker_secrets_ja"],
)
Q(
    "contextual",
    "en",
    "During rolling deploys we see a burst of 502s from the ingress each time old pods terminate. The app handles SIGTERM correctly as far as I can tell.",
    ["m_deploy_k8s_drain_ja"],
)
Q(
    "contextual",
    "en",
    "I want to add user_id as a label on the request latency histogram so we can see which customers are slow. Any reason not to?",
    ["m_observability_cardinality_ja"],
)
Q(
    "contextual",
    "en",
    "A nightly job needs to insert about fifty thousand rows. Currently it loops over the records calling session.add() for each one, then commits at the end.",
    ["m_db_orm_bulk"],
)
Q(
    "contextual",
    "en",
    "Comparing uploaded file names against the database fails for some Japanese names from Mac users, even though they look identical on screen.",
    ["m_encoding_filename"],
)
Q(
    "contextual",
    "en",
    "Customers can view /orders/10234 and I noticed the ids are sequential. Someone asked whether changing the number in the URL could show another user's order.",
    ["m_uuid_ja"],
)
Q(
    "contextual",
    "en",
    "Scheduling a reminder for a US customer at the same local time tomorrow. My code takes the current timestamp and adds 24 hours. Is that fine?",
    ["m_dst"],
)
Q("crosslang", "en", "should we cache 'not found' lookups?", ["m_cache_negative_ja"])
Q(
    "crosslang",
    "en",
    "Thai full-text search doesn't match anything in OpenSearch",
    ["m_thai_search_th"],
)
Q("crosslang", "en", "OAuth provider returns invalid_redirect", ["m_oauth_th"])
Q("crosslang", "en", "where are local dev secrets kept?", ["m_secrets_local_ja"])
Q("crosslang", "en", "do PRs from forks get repository secrets in CI?", ["m_ci_secrets_fork_th"])
Q("crosslang", "en", "why do we run macOS tests only on merge to main?", ["m_ci_matrix_ja"])
Q("crosslang", "ja", "PDF の golden ファイルを更新する方法", ["m_test_golden_th"])
Q("crosslang", "en", "which timezone for Thai customers' daily report cutoff?", ["m_timezone_th"])
Q(
    "paraphrase",
    "en",
    "container self-check directive is disregarded by the cluster scheduler",
    ["m_docker_healthcheck"],
)
Q(
    "paraphrase",
    "en",
    "how to tell which commit is currently serving once a release finishes",
    ["m_deploy_version_endpoint"],
)
Q(
    "paraphrase",
    "en",
    "nightly workers forgetting to release database handles, starving everything else",
    ["m_db_conn_leak"],
)
Q(
    "paraphrase",
    "en",
    "the DB secret gets swapped periodically; what should programs do when sign-in breaks?",
    ["m_secrets_rotation"],
)
Q(
    "type_filter",
    "en",
    "trace sampling storage cost",
    ["m_observability_sampling_th"],
    type="conclusion",
)
Q("type_filter", "en", "review comments checklist", ["m_review_checklist"], type="knowledge")
Q("type_filter", "en", "cache invalidation price", ["m_cache_invalidation"], type="lesson")
MISC2 = [
    (
        "m2_redis_cluster_ja",
        "knowledge",
        "infra",
        "ja",
        "Redis はクラスタモードではない単一構成（レプリカ 1 台）。MULTI/EXEC はそのまま使えるが、フェイルオーバー時に数秒書き込めない。",
    ),
    (
        "m2_queue_retry_ja",
        "lesson",
        "infra",
        "ja",
        "ワーカーのジョブは最大 5 回リトライしたらデッドレターキューに送る。無限リトライで同じ壊れたメッセージが 1 日中回っていた。",
    ),
    (
        "m2_k8s_ns_th",
        "knowledge",
        "infra",
        "th",
        "namespace บน cluster: prod, staging, perf และ tools ห้าม deploy อะไรลง default",
    ),
    (
        "m2_cost_tags_ja",
        "knowledge",
        "infra",
        "ja",
        "AWS リソースには team と service タグを必ず付ける。タグなしのリソースは毎週月曜に一覧が Slack に流れる。",
    ),
    (
        "m2_s3_lifecycle_th",
        "knowledge",
        "infra",
        "th",
        "bucket ของไฟล์ export ตั้ง lifecycle ลบไฟล์อัตโนมัติหลัง 14 วัน ถ้าลูกค้าต้องการไฟล์เก่าต้อง export ใหม่",
    ),
    (
        "m2_api_docs_ja",
        "knowledge",
        "api",
        "ja",
        "社外向け API ドキュメントは Redocly で docs/openapi.json から生成し、リリースごとに公開される。",
    ),
    (
        "m2_api_status_codes_th",
        "knowledge",
        "api",
        "th",
        "ข้อตกลงของทีม: validation error ตอบ 422, resource ไม่พบตอบ 404, ชนกับข้อมูลเดิมตอบ 409",
    ),
    (
        "m2_webhook_retry_ja",
        "knowledge",
        "api",
        "ja",
        "自社から送る Webhook は失敗すると 1 分、5 分、30 分、2 時間、12 時間後に再送し、それでも失敗したら無効化してメールで通知する。",
    ),
    (
        "m2_git_release_branch_th",
        "knowledge",
        "git",
        "th",
        "branch release/x.y ถูกสร้างอัตโนมัติทุกวันพุธ และ merge ได้เฉพาะ PR ที่มี label backport",
    ),
    (
        "m2_ci_required_ja",
        "knowledge",
        "ci",
        "ja",
        "main の必須チェックは lint、unit、migration-check、build の 4 つ。e2e は必須ではない。",
    ),
    (
        "m2_db_naming_th",
        "knowledge",
        "db",
        "th",
        "ชื่อตารางเป็นพหูพจน์แบบ snake_case เช่น order_items และ foreign key ตั้งชื่อ <ตาราง>_id",
    ),
    (
        "m2_db_soft_delete_ja",
        "lesson",
        "db",
        "ja",
        "論理削除（deleted_at）のテーブルにユニーク制約を張るときは、deleted_at IS NULL の部分インデックスにする。再登録できなくなった。",
    ),
    (
        "m2_fe_error_boundary_th",
        "lesson",
        "frontend",
        "th",
        "ทุก route ต้องมี error boundary ไม่งั้น error ในวิดเจ็ตเล็ก ๆ ตัวเดียวทำให้ทั้งหน้าขาว",
    ),
    (
        "m2_fe_forms_ja",
        "knowledge",
        "frontend",
        "ja",
        "フォームは react-hook-form と zod でバリデーションする。サーバー側のスキーマと zod の定義は OpenAPI から生成している。",
    ),
    (
        "m2_sec_admin_ip_th",
        "knowledge",
        "security",
        "th",
        "หน้า admin เข้าได้เฉพาะผ่าน VPN ของบริษัท IP อื่นจะได้ 403 จาก WAF",
    ),
    (
        "m2_sec_dep_scan_ja",
        "knowledge",
        "security",
        "ja",
        "コンテナイメージは Trivy でスキャンし、CRITICAL の脆弱性があるとデプロイが止まる。",
    ),
    (
        "m2_team_leave_th",
        "knowledge",
        "team",
        "th",
        "ลางานต้องใส่ในปฏิทินทีมและบอกใน #team-general ล่วงหน้าอย่างน้อยสามวัน",
    ),
    (
        "m2_team_onboarding_ja",
        "knowledge",
        "team",
        "ja",
        "新メンバーのオンボーディング手順は docs/onboarding.md。初日に VPN、1Password、GitHub の権限を申請する。",
    ),
    (
        "m2_test_data_th",
        "lesson",
        "testing",
        "th",
        "ข้อมูลทดสอบที่มีชื่อคนไทยต้องมีทั้งชื่อยาวมากและชื่อที่มีสระซ้อน เพราะเคยเจอบั๊กตัดคำตรงวรรณยุกต์ในใบเสร็จ",
    ),
    (
        "m2_tooling_ide_ja",
        "knowledge",
        "tooling",
        "ja",
        "リポジトリの .editorconfig でインデントと改行コードを揃えている。エディタの自動整形はこれに従う。",
    ),
]
for sid, typ, dom, lang, text in MISC2:
    N(sid, typ, dom, lang, text)

Q("crosslang", "en", "what happens to a worker job that keeps failing?", ["m2_queue_retry_ja"])
Q(
    "crosslang",
    "en",
    "which status code for validation errors vs conflicts?",
    ["m2_api_status_codes_th"],
)
Q("crosslang", "th", "webhook ที่เราส่งออกไปล้มเหลวจะส่งซ้ำเมื่อไหร่", ["m2_webhook_retry_ja"])
Q(
    "crosslang",
    "en",
    "unique constraint on a soft-deleted table blocks re-registration",
    ["m2_db_soft_delete_ja"],
)
Q("crosslang", "en", "which checks are required on main?", ["m2_ci_required_ja"])
Q(
    "contextual",
    "en",
    "A third-party widget on the account page threw an error and the whole page went blank for users. How do we normally contain this kind of failure in the frontend?",
    ["m2_fe_error_boundary_th"],
)

# Japanese and Thai paraphrase queries (no shared key-term substrings; see validate())
Q("paraphrase", "ja", "お金の値を小数点型でレスポンスに入れるとずれる？", ["api_json_decimal_ja"])
Q(
    "paraphrase",
    "ja",
    "稼働中のデータベースを手作業で書き換える前に、トランザクションを開始して何行変わるか見るべき？",
    ["db_begin_first_ja"],
)
Q(
    "paraphrase",
    "ja",
    "インフラ定義ツールで反映する前に、変更予定を全部目で追う理由",
    ["infra_tf_plan_ja"],
)
Q("paraphrase", "ja", "緊急修正を主要ブランチへそのまま送り込んでいいか", ["git_main_push_ja"])
Q(
    "paraphrase",
    "ja",
    "サーバーで組み立てた画面とブラウザで作り直した画面が食い違う。現在時刻が原因？",
    ["fe_hydration_ja"],
)
Q(
    "paraphrase",
    "ja",
    "監視メトリクスに顧客ごとの識別子を付けると何が起きる？",
    ["m_observability_cardinality_ja"],
)
Q("paraphrase", "ja", "水かけ祭りの頃に新バージョンを出すのは避けるべき？", ["team_holidays_ja"])
Q("paraphrase", "ja", "無いものを問い合わせた応答も一時保存しておくべき？", ["m_cache_negative_ja"])
Q(
    "paraphrase",
    "th",
    "ปีแบบ พ.ศ. บนเว็บไทย ทำยังไงให้ถูก",
    ["fe_th_newer2"],
    terms=["พุทธศักราช", "บวก", "543", "Intl.DateTimeFormat"],
)
Q(
    "paraphrase",
    "th",
    "ของในหน่วยความจำชั่วคราวของหน้าแรกเลิกใช้ได้ในวินาทีเดียวทุกชิ้น ฝั่ง database รับไม่ไหว",
    ["infra_cache_stampede_th"],
    terms=["หมดอายุ", "พร้อมกัน", "jitter", "TTL", "cache"],
)
Q(
    "paraphrase",
    "th",
    "เอาค่าที่ผู้ใช้กรอกมาประกอบเป็นคำสั่งฐานข้อมูลตรง ๆ อันตรายแค่ไหน",
    ["sec_sql_injection_th"],
    terms=["SQL", "injection", "ต่อ string", "sort", "whitelist", "คอลัมน์"],
)
Q(
    "paraphrase",
    "th",
    "ตอนระบบล่ม ควรคุยประสานงานกันที่ไหนและบันทึกลำดับเหตุการณ์ยังไง",
    ["team_oncall_th"],
    terms=["incident", "thread", "timeline", "แชตส่วนตัว", "rollback"],
)
Q(
    "paraphrase",
    "th",
    "เทสต์ที่พึ่งปฏิทินจริงพังเฉพาะปีอธิกสุรทิน ต้องทำอย่างไร",
    ["test_mock_time_th"],
    terms=["29 กุมภาพันธ์", "fix เวลา", "วันหมดอายุ", "release"],
)
Q(
    "paraphrase",
    "th",
    "สคริปต์ดึงของจากผู้ให้บริการภายนอกเป็นพันชิ้น ควรยิงรวดเดียวไหม",
    ["m_api_batch_th"],
    terms=["อัปเดต", "API", "ทยอย", "เว้นระยะ", "พร้อมกัน"],
)


# ---------------------------------------------------------------------------
# Queries about the service catalogue (answers chosen by service, language is
# whatever the catalogue assigned; crosslang ones are checked in validate()).
# ---------------------------------------------------------------------------
def family_queries() -> None:
    fam_index = {f[0]: i for i, f in enumerate(FAMILIES)}

    def lang_of(fam, svc):
        return family_lang(fam_index[fam], SERVICES.index(svc))

    def pick(fam, want, n, skip=0):
        out = (
            [s for s in SERVICES if (lang_of(fam, s) == want) == (want == "en")]
            if want == "en"
            else [s for s in SERVICES if lang_of(fam, s) == want]
        )
        return out[skip : skip + n]

    def not_en(fam, n, skip=0):
        return [s for s in SERVICES if lang_of(fam, s) != "en"][skip : skip + n]

    for svc in pick("ratelimit", "en", 3):
        Q(
            "contextual",
            "en",
            f"I'm writing a backfill that calls {svc} for about 40,000 records. How fast may I call it before it starts answering 429, and how long should I wait then?",
            [family_sid("ratelimit", svc)],
        )
    for svc in not_en("ratelimit", 4):
        Q("crosslang", "en", f"what is the rate limit of {svc}?", [family_sid("ratelimit", svc)])
    for svc in not_en("port", 3):
        Q("crosslang", "en", f"which local port does {svc} listen on?", [family_sid("port", svc)])
    for svc in pick("owner", "en", 3):
        Q("crosslang", "ja", f"{svc} の担当チームと連絡先は？", [family_sid("owner", svc)])
    for svc in pick("runbook", "en", 2):
        Q("crosslang", "th", f"runbook ของ {svc} อยู่ที่ไหน", [family_sid("runbook", svc)])
    for svc in SERVICES[2:5]:
        Q(
            "type_filter",
            "en",
            f"why did {svc} go down",
            [family_sid("incident", svc)],
            type="conclusion",
        )
    for svc in SERVICES[7:9]:
        Q(
            "type_filter",
            "en",
            f"{SVC[svc]['test']} flaky {svc}",
            [family_sid("flaky", svc)],
            type="lesson",
        )
    for svc in SERVICES[10:13]:
        Q("trigger", "en", f"{svc} rollback", [family_sid("deploy", svc)])
    for svc in SERVICES[13:15]:
        Q(
            "contextual",
            "en",
            f"{svc} keeps returning stale data for a while after we update records. Where does it keep cached responses and for how long before they refresh?",
            [family_sid("cache", svc)],
        )
    for svc in SERVICES[15:17]:
        Q(
            "contextual",
            "en",
            f"I'm adding a new third-party API token to {svc}. Where should the secret be stored so that the pods pick it up?",
            [family_sid("secrets", svc)],
        )
    for svc in SERVICES[17:19]:
        Q(
            "contextual",
            "en",
            f"Someone deleted rows from {svc}'s database by mistake four days ago. How far back can we restore its data?",
            [family_sid("backup", svc)],
        )
    for svc in SERVICES[19:21]:
        Q(
            "contextual",
            "en",
            f"{svc} requests are timing out when one of its upstreams is slow. What timeout does it use, and which dependency is allowed to be down?",
            [family_sid("timeout", svc)],
        )


family_queries()


# ---------------------------------------------------------------------------
# Growth (2026-12): memories written the way assistants write them (session notes
# with causes, fixes and identifiers), the paraphrases a developer would really type,
# and cross-language pairs in every direction (en<->ja<->th). Explicit ages keep the
# seeded age draws of everything above unchanged.
# ---------------------------------------------------------------------------
N(
    "asst_pytest_hang",
    "lesson",
    "testing",
    "en",
    "Lesson (CI): pytest hung for 40 min on the runner but passed locally. Cause: a test "
    "spawned a subprocess that waited on stdin, and the CI runner has no TTY. Fix: pass "
    "stdin=subprocess.DEVNULL and set timeout = 300 in pytest.ini (pytest-timeout).",
    age=33.5,
)
N(
    "asst_tz_naive",
    "lesson",
    "db",
    "en",
    "Summary for future sessions: the reports service stores timestamps as naive datetimes "
    "in UTC. Never call datetime.now() there; use datetime.now(tz=UTC) and strip tzinfo only "
    "at the ORM boundary. Mixing them shifted the nightly report by 9 hours for the Tokyo office.",
    age=58.25,
)
N(
    "asst_ja_migration_lock",
    "lesson",
    "db",
    "ja",
    "学び（2026-10 のセッション）: 本番の users テーブルに ALTER TABLE ... ADD COLUMN ... DEFAULT を"
    "流したらテーブル全体がロックされ、ログインが3分止まった。大きいテーブルはまず NULL 許可で列を"
    "追加し、バックフィルはバッチで流し、最後に DEFAULT を付ける。",
    age=21.75,
)
N(
    "asst_th_docker_cache",
    "lesson",
    "ci",
    "th",
    "บทเรียน: build Docker บน CI ช้ามากเพราะ COPY . . อยู่ก่อน pip install ทำให้ cache หายทุกครั้งที่"
    "แก้โค้ด ให้ COPY requirements.txt แล้ว pip install ก่อน จากนั้นค่อย COPY โค้ดทั้งหมด "
    "เวลา build ลดจาก 9 นาทีเหลือ 1 นาที",
    age=44.0,
)
N(
    "asst_flaky_order",
    "conclusion",
    "testing",
    "en",
    "Conclusion after bisecting: test_invoice_totals only fails when it runs after "
    "test_currency_cache, because that test leaves a module-level dict populated. Added an "
    "autouse fixture that clears CURRENCY_CACHE; do not mark it xfail.",
    age=17.5,
)
N(
    "asst_ja_env_secret",
    "knowledge",
    "security",
    "ja",
    "メモ: ステージングの API キーは .env.staging ではなく 1Password の「kioku-staging」保管庫にある。"
    ".env.* はリポジトリにコミットしない（pre-commit の detect-secrets が止める）。",
    age=73.0,
)
N(
    "asst_th_locale_sort",
    "lesson",
    "frontend",
    "th",
    "บทเรียน: การเรียงชื่อลูกค้าภาษาไทยด้วย sort() ธรรมดาได้ลำดับผิด เพราะสระหน้า (เ แ โ ใ ไ) "
    "ให้ใช้ Intl.Collator('th') แทน และทดสอบด้วยชื่อที่ขึ้นต้นด้วยสระหน้าเสมอ",
    age=64.5,
)
N(
    "asst_feature_flag",
    "conclusion",
    "deploy",
    "en",
    "Decision log from today's session: the new checkout flow ships behind the flag "
    "checkout_v2 (LaunchDarkly), 5% of traffic first, then 25%, then 100% after 48 h without "
    "an error-rate regression. Kill switch: turn the flag off, no redeploy.",
    age=9.5,
)
N(
    "asst_log_pii",
    "lesson",
    "security",
    "en",
    "Note to self: the request logger in api/middleware.py dumped full JSON bodies, including "
    "email and phone, into Loki. Bodies are now logged only at DEBUG and through redact_pii(); "
    "check new log lines with the pii-scan CI step before merging.",
    age=27.0,
)
N(
    "asst_ja_review_size",
    "profile",
    "user",
    "ja",
    "ユーザーの好み: プルリクエストは 400 行以内に分けてほしい。大きい変更は「リファクタ」と"
    "「機能追加」を別の PR にする。レビューコメントは日本語で。",
    age=120.0,
)
N(
    "asst_th_cron_tz",
    "knowledge",
    "infra",
    "th",
    "ข้อมูล: cron บนเซิร์ฟเวอร์ batch-01 ใช้เวลา UTC ไม่ใช่เวลาไทย งานที่ตั้งไว้ 02:00 จึงรันตอน "
    "9 โมงเช้าเวลาไทย ถ้าต้องการตีสองเวลาไทยให้ตั้งเป็น 19:00 UTC ของวันก่อนหน้า",
    age=96.0,
)
N(
    "asst_pnpm",
    "conclusion",
    "tooling",
    "en",
    "Conclusion: CI installs were slow and non-reproducible because some jobs ran npm install "
    "and others pnpm. Standardised on pnpm install --frozen-lockfile everywhere; corepack pins "
    "the version via packageManager in package.json.",
    age=51.0,
)
N(
    "asst_ja_redis_policy",
    "lesson",
    "infra",
    "ja",
    "学び: セッション用の Redis に maxmemory-policy noeviction のままキャッシュも同居させたら、"
    "メモリが一杯になってログインが全部失敗した。キャッシュは別インスタンスに分け、セッション側は "
    "noeviction、キャッシュ側は allkeys-lru にする。",
    age=38.0,
)
N(
    "asst_th_git_lfs",
    "lesson",
    "git",
    "th",
    "บทเรียน: ไฟล์โมเดลขนาด 300 MB ถูก commit เข้า git ตรงๆ ทำให้ clone ช้ามาก ต้องใช้ "
    "git lfs track '*.bin' ก่อน commit และถ้าหลุดเข้าไปแล้วต้องล้างประวัติด้วย git filter-repo",
    age=88.0,
)
N(
    "asst_k8s_probe",
    "lesson",
    "infra",
    "en",
    "Lesson from the outage: the liveness probe hit /health, which checks the database; when "
    "Postgres was slow, Kubernetes restarted every pod and made it worse. Liveness must only "
    "check the process itself; put dependency checks in readiness.",
    age=69.0,
)
N(
    "asst_ja_csv_encoding",
    "knowledge",
    "tooling",
    "ja",
    "知識: 経理から届く CSV は Shift_JIS か BOM 付き UTF-8。読み込みは encoding='utf-8-sig' を先に"
    "試し、失敗したら cp932 で読む。",
    age=140.0,
)
N(
    "asst_th_bank_timeout",
    "conclusion",
    "api",
    "th",
    "สรุป: เรียก API ของธนาคารต้องตั้ง timeout 30 วินาที ไม่ใช่ 5 วินาที เพราะการโอนเงินช่วงสิ้นเดือน"
    "ตอบช้า และห้าม retry อัตโนมัติเพราะอาจโอนซ้ำ ให้เช็กสถานะด้วย GET /transfers/{id} แทน",
    age=29.0,
)

# paraphrases a developer would type (no shared vocabulary with the answer)
Q(
    "paraphrase",
    "en",
    "suite freezes forever on the build machine yet finishes fine on my laptop",
    "asst_pytest_hang",
)
Q(
    "paraphrase",
    "en",
    "daily figures are off by most of a workday for folks in Japan, how should I handle clock values",
    "asst_tz_naive",
)
Q(
    "paraphrase",
    "en",
    "one check breaks solely if another goes first, shared global state?",
    "asst_flaky_order",
)
Q(
    "paraphrase",
    "en",
    "how do we gradually expose the redesigned purchase path to shoppers and back out fast",
    "asst_feature_flag",
)
Q(
    "paraphrase",
    "en",
    "our traces were leaking customers' personal contact details, what's the rule",
    "asst_log_pii",
)
Q(
    "paraphrase",
    "en",
    "builds pull different library releases each run; how to make dependency fetching deterministic",
    "asst_pnpm",
)
Q(
    "paraphrase",
    "en",
    "cluster kept killing all our containers when the db got sluggish, what went wrong",
    "asst_k8s_probe",
)
Q(
    "paraphrase",
    "ja",
    "でかい表に新しい項目を足したら、しばらく誰も入れなくなった。安全な手順は？",
    "asst_ja_migration_lock",
)
Q("paraphrase", "ja", "差分が膨大な修正を一度に提出しても構わない？", "asst_ja_review_size")
Q("paraphrase", "ja", "会計部門から来る表計算の書き出しが文字化けする", "asst_ja_csv_encoding")
Q(
    "paraphrase",
    "th",
    "งานอัตโนมัติที่ตั้งไว้ทำงานตอนสายแทนที่จะเป็นกลางดึก",
    "asst_th_cron_tz",
    terms=["เซิร์ฟเวอร์", "เวลาไทย", "ตีสอง", "โมงเช้า"],
)
Q(
    "paraphrase",
    "th",
    "ทุกครั้งที่เปลี่ยนซอร์ส การสร้างอิมเมจต้องรอนานเกือบสิบนาที",
    "asst_th_docker_cache",
    terms=["แก้โค้ด", "ช้ามาก", "ลดจาก", "เหลือ"],
)

# cross-language, every direction
Q("crosslang", "ja", "CIだけでテストが止まったまま終わらない原因", "asst_pytest_hang")
Q("crosslang", "th", "เทสต์ค้างบน CI นานมาก แต่รันในเครื่องตัวเองผ่าน", "asst_pytest_hang")
Q("crosslang", "th", "รายงานตอนกลางคืนเวลาเพี้ยนไป 9 ชั่วโมง ต้องจัดการ timezone ยังไง", "asst_tz_naive")
Q(
    "crosslang",
    "ja",
    "日次レポートの時刻が9時間ずれる。datetime の扱いのルールは？",
    "asst_tz_naive",
)
Q(
    "crosslang",
    "en",
    "adding a column with a default to a huge table locked logins in production",
    "asst_ja_migration_lock",
)
Q(
    "crosslang",
    "th",
    "เพิ่มคอลัมน์ในตารางใหญ่บน production แล้วตารางล็อกจนล็อกอินไม่ได้",
    "asst_ja_migration_lock",
)
Q(
    "crosslang",
    "en",
    "docker image build takes 9 minutes on CI every time I change code",
    "asst_th_docker_cache",
)
Q(
    "crosslang",
    "ja",
    "コードを変えるたびにDockerのビルドキャッシュが効かない",
    "asst_th_docker_cache",
)
Q(
    "crosslang",
    "ja",
    "テストの実行順で結果が変わる。前のテストの状態が残っている？",
    "asst_flaky_order",
)
Q("crosslang", "th", "เทสต์ผ่านถ้ารันเดี่ยว แต่พังเมื่อรันต่อจากเทสต์อื่น", "asst_flaky_order")
Q("crosslang", "en", "where do I find the staging API key", "asst_ja_env_secret")
Q("crosslang", "th", "คีย์ API ของ staging เก็บไว้ที่ไหน", "asst_ja_env_secret")
Q(
    "crosslang",
    "en",
    "customer names in Thai come out in the wrong alphabetical order",
    "asst_th_locale_sort",
)
Q("crosslang", "ja", "タイ語の名前を並べ替えると順番がおかしい", "asst_th_locale_sort")
Q(
    "crosslang",
    "ja",
    "新しい購入フローは段階的に公開する？何パーセントから始める？",
    "asst_feature_flag",
)
Q("crosslang", "th", "ฟีเจอร์ checkout ใหม่ปล่อยทีละกี่เปอร์เซ็นต์ และถ้าพังจะปิดยังไง", "asst_feature_flag")
Q("crosslang", "ja", "ログにメールアドレスや電話番号が出ていた件の対策", "asst_log_pii")
Q("crosslang", "th", "log มีอีเมลและเบอร์โทรลูกค้าหลุดไป ต้องแก้ยังไง", "asst_log_pii")
Q("crosslang", "en", "how big may my pull requests be for this user", "asst_ja_review_size")
Q("crosslang", "th", "ผู้ใช้อยากให้ PR ยาวไม่เกินกี่บรรทัด", "asst_ja_review_size")
Q(
    "crosslang",
    "en",
    "the nightly cron job on batch-01 runs at 9 am local time instead of 2 am",
    "asst_th_cron_tz",
)
Q("crosslang", "ja", "batch-01 の cron がタイ時間ではなく UTC で動いている", "asst_th_cron_tz")
Q("crosslang", "ja", "npm と pnpm が混在して CI のインストールが遅い", "asst_pnpm")
Q("crosslang", "th", "CI ติดตั้งแพ็กเกจช้าและได้เวอร์ชันไม่ตรงกัน ควรใช้ตัวไหน", "asst_pnpm")
Q(
    "crosslang",
    "en",
    "redis filled up and every login failed; which eviction policy goes where",
    "asst_ja_redis_policy",
)
Q("crosslang", "th", "Redis เต็มแล้วผู้ใช้ล็อกอินไม่ได้ทั้งหมด ควรตั้ง eviction แบบไหน", "asst_ja_redis_policy")
Q(
    "crosslang",
    "en",
    "someone committed a 300 MB model file and now cloning the repo takes forever",
    "asst_th_git_lfs",
)
Q("crosslang", "ja", "大きなバイナリを git に直接コミットしてしまった時の対処", "asst_th_git_lfs")
Q("crosslang", "ja", "DBが遅くなると全Podが再起動される。probe の設定は？", "asst_k8s_probe")
Q("crosslang", "th", "พอฐานข้อมูลช้า pod ถูกรีสตาร์ททั้งหมด ควรตั้ง probe ยังไง", "asst_k8s_probe")
Q("crosslang", "en", "the accounting CSV import shows garbled characters", "asst_ja_csv_encoding")
Q("crosslang", "th", "ไฟล์ CSV จากฝ่ายบัญชีอ่านแล้วตัวอักษรเพี้ยน", "asst_ja_csv_encoding")
Q(
    "crosslang",
    "en",
    "bank transfer API calls time out at month end; should I retry",
    "asst_th_bank_timeout",
)
Q(
    "crosslang",
    "ja",
    "銀行APIのタイムアウトは何秒？自動でリトライしていい？",
    "asst_th_bank_timeout",
)
# ---------------------------------------------------------------------------
# Outdated notes (2027-01): a fact about the project changed over time.  The old note
# states the old fact, a newer note of the same type and domain states the fact that
# replaced it; a query about the current state has only the newer note relevant
# (variant "replaced").  Controls punish a blunt "newer wins" rule: two same-topic
# notes that both still hold, and the query asks for the OLDER one's fact (variant
# "control").  Explicit ages (old 60-500 days, new 0.5-20) keep the seeded age draws
# of everything above unchanged; sids end in _old / _new.
# ---------------------------------------------------------------------------
# (sid, type, domain, lang, old age, old text, new age, new text, query)
OUTDATED = [
    (
        "od_en_lambda_node",
        "knowledge",
        "infra",
        "en",
        212.0,
        "The image-resize Lambda runs on the nodejs18.x runtime; the runtime is set in "
        "infra/lambda/image-resize/template.yaml.",
        6.5,
        "image-resize Lambda: redeployed on nodejs20.x because nodejs18.x is reaching end of "
        "support. infra/lambda/image-resize/template.yaml carries the new runtime.",
        "Which Node.js runtime does the image-resize Lambda run on?",
    ),
    (
        "od_en_notebook_python",
        "knowledge",
        "tooling",
        "en",
        340.0,
        "The analytics notebook image (images/notebook/Dockerfile) is built on python:3.10-slim, "
        "so notebook code cannot use 3.11+ syntax.",
        11.25,
        "images/notebook/Dockerfile starts FROM python:3.12-slim; pandas 2.2 and polars come "
        "preinstalled for the analytics notebooks.",
        "What Python version is the analytics notebook image built on?",
    ),
    (
        "od_en_private_pypi",
        "knowledge",
        "tooling",
        "en",
        275.5,
        "Internal Python packages (kioku-common, kioku-auth) are published to devpi at "
        "https://devpi.internal/root/prod/+simple; pip needs --extra-index-url for it.",
        3.75,
        "Internal Python packages such as kioku-common and kioku-auth live in AWS CodeArtifact "
        "(domain kioku, repository python). `make codeartifact-login` fetches a 12-hour token; "
        "devpi.internal has been shut down.",
        "Where do we publish internal Python packages like kioku-common?",
    ),
    (
        "od_en_upload_limit",
        "knowledge",
        "api",
        "en",
        148.0,
        "media-uploader rejects files larger than 25 MB with HTTP 413; the limit is "
        "MAX_UPLOAD_MB in its config.",
        2.5,
        "MAX_UPLOAD_MB for media-uploader is 100 since the video attachments feature; anything "
        "bigger still gets a 413 and has to go through the multipart upload endpoint.",
        "What's the maximum file size media-uploader accepts?",
    ),
    (
        "od_en_js_lint",
        "knowledge",
        "frontend",
        "en",
        188.25,
        "Frontend linting: ESLint with the airbnb config plus Prettier for formatting; "
        "`pnpm lint` runs both.",
        9.0,
        "The frontend lints and formats with Biome (biome.json at the repo root). The ESLint and "
        "Prettier configs were deleted; `pnpm lint` runs `biome check`.",
        "Which linter and formatter does the frontend use?",
    ),
    (
        "od_en_mobile_release",
        "knowledge",
        "deploy",
        "en",
        410.0,
        "The mobile app goes to the App Store and Play Store every second Tuesday; the release "
        "branch is cut the Thursday before.",
        14.0,
        "Mobile store releases are weekly: the App Store and Play Store submission goes out every "
        "Thursday, and the release branch is cut on Monday.",
        "How often does the mobile app ship to the stores, and on which day?",
    ),
    (
        "od_en_password_hash",
        "knowledge",
        "security",
        "en",
        455.0,
        "User passwords are hashed with bcrypt (cost 12) in auth-gateway's passwords module.",
        18.5,
        "auth-gateway hashes passwords with Argon2id (64 MB memory, 3 iterations). Remaining "
        "bcrypt hashes are rehashed on the user's next successful login.",
        "Which algorithm does auth-gateway use to hash user passwords?",
    ),
    (
        "od_en_e2e_workers",
        "lesson",
        "testing",
        "en",
        96.0,
        "Lesson: run the Playwright e2e job on CI with --workers=2. With more workers the shared "
        "staging test account hit its login rate limit and half the suite failed.",
        4.0,
        "Lesson: every Playwright worker now logs in with its own seeded test account, so the "
        "e2e job runs with --workers=8 and finishes in 6 minutes; capping it at 2 only wastes "
        "runner time.",
        "How many Playwright workers should the e2e job use on CI?",
    ),
    (
        "od_en_orjson",
        "conclusion",
        "api",
        "en",
        133.0,
        "Conclusion from the serializer benchmark: orjson is not worth it for orders-api; the "
        "p99 of GET /orders moved by less than 2 ms.",
        1.5,
        "Serializer benchmark redone with the large order payloads: orjson cuts the p99 of "
        "orders-api's GET /orders by about 35 ms, so its responses use ORJSONResponse.",
        "Is orjson worth using for orders-api responses?",
    ),
    (
        "od_en_upgrade_rfc",
        "knowledge",
        "team",
        "en",
        300.0,
        "Major-version dependency upgrades need an RFC in docs/rfcs/ and sign-off from two "
        "teams before the PR is opened.",
        0.5,
        "Major dependency upgrades no longer need an RFC: a short risk note in the PR description "
        "and a green canary are enough.",
        "Do major-version dependency upgrades need an RFC?",
    ),
    (
        "od_ja_opsctl_go",
        "knowledge",
        "tooling",
        "ja",
        260.0,
        "社内 CLI の opsctl（tools/opsctl）は Go 1.21 でビルドしている。go.mod の go ディレクティブも 1.21。",
        7.5,
        "opsctl のビルドは Go 1.23 に上げた。tools/opsctl/go.mod も go 1.23 で、CI の setup-go も同じバージョン。",
        "opsctl は Go のどのバージョンでビルドする？",
    ),
    (
        "od_ja_docs_tool",
        "knowledge",
        "team",
        "ja",
        390.0,
        "設計ドキュメントと議事録は Confluence の ENG スペースに置く。",
        12.0,
        "設計ドキュメントと議事録は Notion の Engineering ワークスペースに書く。Confluence の ENG スペースは読み取り専用になった。",
        "設計ドキュメントはどこに書けばいい？",
    ),
    (
        "od_ja_invoice_pdf",
        "knowledge",
        "api",
        "ja",
        175.0,
        "請求書 PDF の取得は GET /v1/invoices/{id}/pdf。invoice-renderer が同期で生成してそのまま返す。",
        5.25,
        "請求書 PDF は GET /v2/invoices/{id}/document で取る。生成は非同期で、準備中は 202 と Retry-After が返る。",
        "請求書の PDF を取得する API エンドポイントは？",
    ),
    (
        "od_ja_dwh",
        "knowledge",
        "db",
        "ja",
        480.0,
        "分析用 DWH は Redshift（クラスタ名 kioku-dwh）。本番 Postgres のデータは夜間バッチでロードされる。",
        16.0,
        "分析基盤は BigQuery（データセット kioku_analytics）。本番 Postgres からは Datastream で数分遅れで同期される。",
        "分析用のデータウェアハウスは何を使っている？",
    ),
    (
        "od_ja_staging_deploy",
        "knowledge",
        "deploy",
        "ja",
        150.5,
        "ステージングへのデプロイは毎晩 22:00 JST に、その時点の main をまとめて出す。",
        0.75,
        "main にマージされるたびにステージングへ自動でデプロイされる。夜のまとめデプロイは廃止した。",
        "ステージングにはいつデプロイされる？",
    ),
    (
        "od_ja_image_format",
        "conclusion",
        "frontend",
        "ja",
        230.0,
        "結論: 商品画像は WebP で配信する。AVIF は画質は良いがエンコードが遅く、アップロード処理が詰まった。",
        8.75,
        "結論（再検証）: 画像変換を CDN 側でやるようになり、AVIF のエンコード時間は問題でなくなった。"
        "商品画像は AVIF を優先し、非対応ブラウザには WebP を返す。",
        "商品画像はどの画像フォーマットで配信する？",
    ),
    (
        "od_ja_partner_key",
        "knowledge",
        "security",
        "ja",
        320.0,
        "パートナー向け API キーの有効期限は 180 日。期限の 2 週間前に自動でメールが届く。",
        10.5,
        "パートナー向け API キーは発行から 90 日で失効する。通知メールは期限の 14 日前と 3 日前の 2 回。",
        "パートナーに発行する API キーは何日で失効する？",
    ),
    (
        "od_ja_renovate",
        "lesson",
        "ci",
        "ja",
        85.0,
        "学び: Renovate の PR は月曜の朝にまとめて出す設定（schedule: before 9am on monday）にする。"
        "毎日出すと PR が多すぎてレビューが追いつかなかった。",
        3.0,
        "学び: Renovate のパッチ更新は automerge にしたので、毎日 PR が出ても負担にならない。"
        "schedule は外し、週次のまとめはメジャー更新だけにしている。",
        "Renovate の PR はいつ出る設定になっている？",
    ),
    (
        "od_ja_log_agent",
        "knowledge",
        "observability",
        "ja",
        365.0,
        "各ノードのログは DaemonSet の Fluentd が集めて Loki に送っている。",
        13.5,
        "ノードのログ転送エージェントは Fluent Bit（DaemonSet）。Fluentd よりメモリ使用量が 5 分の 1 で、送り先は引き続き Loki。",
        "ノードのログを Loki に送っているエージェントは何？",
    ),
    (
        "od_ja_batch_update",
        "lesson",
        "db",
        "ja",
        66.0,
        "学び: 本番のバッチ UPDATE は 1 回 5,000 行ずつ流す。1 万行にしたらレプリカの遅延が 30 秒を超えた。",
        19.0,
        "学び: レプリカを r6g.2xlarge に上げてからは、バッチ UPDATE を 1 回 20,000 行にしても遅延は数秒で済む。"
        "5,000 行刻みでは遅すぎる。",
        "本番でバッチ UPDATE を流すとき、1 回何行ずつにする？",
    ),
    (
        "od_th_react",
        "knowledge",
        "frontend",
        "th",
        420.0,
        "เว็บ frontend ยังใช้ React 17 อยู่ ห้ามใช้ useId หรือ useTransition เพราะเป็น API ของ React 18",
        4.5,
        "frontend อัปเกรดเป็น React 18.3 แล้ว ใช้ createRoot และเรียก useId กับ useTransition ได้ตามปกติ",
        "เว็บ frontend ใช้ React เวอร์ชันไหน",
    ),
    (
        "od_th_code_scan",
        "knowledge",
        "security",
        "th",
        250.0,
        "การสแกนช่องโหว่ในโค้ดใช้ SonarQube ที่ sonar.internal รันทุก PR",
        9.5,
        "สแกนช่องโหว่ในโค้ดด้วย CodeQL ของ GitHub ผลจะขึ้นในแท็บ Security ของ repo ทุก PR "
        "ส่วนเซิร์ฟเวอร์ sonar.internal ปิดไปแล้ว",
        "PR ถูกสแกนหาช่องโหว่ในโค้ดด้วยเครื่องมืออะไร",
    ),
    (
        "od_th_eks",
        "knowledge",
        "infra",
        "th",
        190.0,
        "cluster prod รัน EKS 1.27 ถ้าจะใช้ฟีเจอร์ใหม่ของ Kubernetes ต้องเช็กก่อนว่ามีใน 1.27",
        15.5,
        "cluster prod อยู่บน EKS 1.30 แล้ว manifest ที่ยังใช้ apiVersion เก่าต้องแก้ก่อน deploy",
        "cluster prod ใช้ EKS เวอร์ชันอะไร",
    ),
    (
        "od_th_products_limit",
        "knowledge",
        "api",
        "th",
        128.0,
        "GET /v1/products รับพารามิเตอร์ limit ได้สูงสุด 200 รายการต่อหน้า",
        2.0,
        "limit สูงสุดของ GET /v1/products คือ 100 ถ้าส่งเกินจะได้ 400 กลับไป ไม่ได้ตัดให้อัตโนมัติ",
        "GET /v1/products ขอได้สูงสุดกี่รายการต่อหน้า",
    ),
    (
        "od_th_alert_channel",
        "knowledge",
        "observability",
        "th",
        305.0,
        "alert ของ staging ส่งเข้าช่อง Slack #alerts-staging",
        6.0,
        "alert จาก staging ไปที่ช่อง Slack #stg-alerts ส่วนช่อง #alerts-staging ถูก archive แล้ว",
        "alert ของ staging ส่งไปที่ช่อง Slack ไหน",
    ),
    (
        "od_th_seed_cmd",
        "knowledge",
        "tooling",
        "th",
        470.0,
        "ใส่ข้อมูลตัวอย่างลงฐานข้อมูลบนเครื่องด้วยคำสั่ง python manage.py seed_demo",
        17.25,
        "คำสั่ง seed ข้อมูลตัวอย่างบนเครื่องคือ make seed (เรียก scripts/seed.py) "
        "ส่วน manage.py seed_demo ถูกลบไปแล้ว",
        "จะใส่ข้อมูลตัวอย่างลงฐานข้อมูลบนเครื่องใช้คำสั่งอะไร",
    ),
    (
        "od_th_rollout_deadline",
        "lesson",
        "deploy",
        "th",
        110.0,
        "บทเรียน: ตั้ง progressDeadlineSeconds ของ Deployment เป็น 300 ไม่งั้น rollout ที่ค้างจะไม่ถูกรายงานว่าล้มเหลว",
        1.25,
        "บทเรียน: progressDeadlineSeconds 300 สั้นไปสำหรับ service ที่ต้อง warm cache นาน rollout "
        "ถูกตัดว่าล้มเหลวทั้งที่ไม่ได้พัง ตอนนี้ตั้งเป็น 600",
        "ควรตั้ง progressDeadlineSeconds ของ Deployment เป็นเท่าไร",
    ),
    (
        "od_th_uptime",
        "conclusion",
        "observability",
        "th",
        355.0,
        "สรุป: uptime check ของหน้าเว็บใช้ UptimeRobot เช็กทุก 5 นาทีก็พอ",
        7.0,
        "สรุปหลังเว็บล่ม 3 นาทีโดยไม่มีใครรู้: เช็กทุก 5 นาทีไม่พอ uptime check ย้ายไปใช้ Checkly "
        "เช็กทุก 1 นาทีจากสามภูมิภาค",
        "uptime check ของหน้าเว็บใช้อะไร และเช็กถี่แค่ไหน",
    ),
    (
        "od_th_support_bugs",
        "knowledge",
        "team",
        "th",
        200.0,
        "บั๊กที่ฝ่าย support เจอจะส่งมาทาง Google Form แล้วไปขึ้นในช่อง #support-bugs",
        12.5,
        "ฝ่าย support แจ้งบั๊กผ่าน Jira Service Management โปรเจกต์ SUP ทีมเจ้าของต้องตอบภายใน 1 วันทำการ",
        "ฝ่าย support แจ้งบั๊กเข้ามาทางไหน",
    ),
    (
        "od_th_runner_label",
        "lesson",
        "ci",
        "th",
        75.0,
        "บทเรียน: job build image ต้องใช้ runs-on: [self-hosted, linux-large] ไม่งั้นไปตกเครื่องเล็กแล้ว OOM",
        5.5,
        "บทเรียน: label linux-large เลิกใช้แล้ว job build image ให้ใส่ runs-on: build-xl "
        "ถ้ายังใช้ label เก่า job จะค้างรอ runner ไปเรื่อย ๆ",
        "job build image ต้องใช้ runs-on label อะไร",
    ),
]
# Controls: both notes still hold; the query asks for the OLDER note's fact.
OUTDATED_CONTROLS = [
    (
        "odc_en_kubectl",
        "knowledge",
        "infra",
        "en",
        260.5,
        "kubectl: `kubectl logs <pod> --previous` shows the logs of the container that crashed "
        "before the current restart.",
        8.25,
        "kubectl: `kubectl get events -n <namespace> --sort-by=.lastTimestamp` lists recent "
        "scheduling and probe failures in order.",
        "How do I read the logs of a container that crashed before the pod restarted?",
    ),
    (
        "odc_en_git_checkout",
        "knowledge",
        "git",
        "en",
        188.0,
        "git worktree: `git worktree add ../kioku-hotfix origin/main` gives a second checkout for "
        "a hotfix, so half-done work never needs stashing.",
        2.25,
        "git sparse-checkout: `git sparse-checkout set services/orders-api libs/common` keeps "
        "the monorepo checkout small; other services stay out of the working tree.",
        "How can I work on an urgent hotfix without stashing my unfinished changes?",
    ),
    (
        "odc_en_snapshots",
        "lesson",
        "testing",
        "en",
        142.0,
        "Lesson: review the .ambr diff of syrupy snapshot tests in the PR. Someone ran "
        "--snapshot-update blindly and accepted a broken price format.",
        12.75,
        "Lesson: mask timestamps and UUIDs with a syrupy matcher before snapshotting; unmasked "
        "values made every snapshot test fail on the next run.",
        "Snapshot tests are failing; can I just run --snapshot-update and commit?",
    ),
    (
        "odc_en_csv_export",
        "conclusion",
        "api",
        "en",
        96.5,
        "Conclusion: the account CSV export timed out for large accounts because it built the "
        "whole file in memory; it now streams rows with StreamingResponse.",
        15.0,
        "Conclusion: the account CSV export showed amounts in the wrong number format because it "
        "used the server locale; it now formats with the account's locale.",
        "Why did the account CSV export time out for large accounts?",
    ),
    (
        "odc_ja_git_stage",
        "knowledge",
        "git",
        "ja",
        230.25,
        "一部の変更だけをコミットしたいときは git add -p で hunk ごとに選んでステージする。",
        4.25,
        "レビュー指摘の修正は git commit --fixup <SHA> で作り、git rebase -i --autosquash で元のコミットに畳む。",
        "ファイルの変更の一部だけをステージしたいときはどうする？",
    ),
    (
        "odc_ja_pg_stats",
        "knowledge",
        "db",
        "ja",
        310.0,
        "どのクエリが DB の時間を食っているかは pg_stat_statements を total_exec_time の降順で見る。",
        9.75,
        "テーブルの実サイズはインデックス込みで pg_total_relation_size('orders') のように確認する。",
        "一番 DB の時間を使っているクエリを調べるには？",
    ),
    (
        "odc_ja_react_pitfall",
        "lesson",
        "frontend",
        "ja",
        170.0,
        "学び: useEffect の依存配列にオブジェクトリテラルを渡すと毎回のレンダーで再実行される。useMemo で参照を固定する。",
        13.0,
        "学び: リストの key に配列の index を使うと、並べ替えたときに入力欄の値が別の行にずれる。key には必ず ID を使う。",
        "useEffect が毎回のレンダーで走ってしまうのはなぜ？",
    ),
    (
        "odc_ja_alerting",
        "knowledge",
        "observability",
        "ja",
        415.0,
        "メンテナンス中のアラートは Alertmanager の silence で止める。終了時刻を必ず設定すること。",
        1.0,
        "アラートルールは alerts/ ディレクトリの YAML を PR で変更する。Grafana の UI で直接編集しない。",
        "メンテナンス中にアラートを一時的に止めるには？",
    ),
    (
        "odc_th_kubectl",
        "knowledge",
        "infra",
        "th",
        135.0,
        "ดูว่า pod ใช้ CPU และ memory จริงเท่าไรด้วย kubectl top pod -n <namespace>",
        3.5,
        "ถ้า namespace ค้างสถานะ Terminating ให้ดู finalizers ของ resource ที่ยังเหลือก่อน อย่าลบ finalizer ทิ้งแบบไม่ดู",
        "จะดูว่า pod กิน CPU กับ memory จริงเท่าไรต้องใช้คำสั่งอะไร",
    ),
    (
        "odc_th_ci_postgres",
        "lesson",
        "ci",
        "th",
        62.0,
        "บทเรียน: service Postgres ใน workflow ของ GitHub Actions ต้องตั้ง health-cmd pg_isready "
        "ไม่งั้นเทสต์เริ่มก่อน DB พร้อมแล้วพังแบบสุ่ม",
        19.5,
        "บทเรียน: image ของ service Postgres ใน workflow ต้อง pin เป็น postgres:15 ให้ตรงกับ prod "
        "เคยใช้ latest แล้ว migration ผ่านบน CI แต่พังบน prod",
        "เทสต์บน CI พังแบบสุ่มเพราะเริ่มก่อน Postgres ใน services พร้อม ต้องตั้งอะไร",
    ),
    (
        "odc_th_ci_auth",
        "knowledge",
        "security",
        "th",
        445.0,
        "token GitHub ที่ใช้ใน CI ต้องเป็น fine-grained token ที่จำกัดเฉพาะ repo ที่ต้องใช้ และหมดอายุไม่เกิน 90 วัน",
        11.0,
        "workflow ที่ต้องเข้าถึง AWS ให้ใช้ OIDC กับ IAM role ที่ผูกกับ repo แทน access key ถาวร",
        "token GitHub สำหรับ CI ต้องสร้างแบบไหน",
    ),
    (
        "odc_th_sales_report",
        "conclusion",
        "db",
        "th",
        380.0,
        "สรุป: query รายงานยอดขายรายวันช้าเพราะไม่มี index บน (shop_id, created_at) "
        "เพิ่มแล้วเวลาลดจาก 12 วินาทีเหลือ 200ms",
        5.0,
        "สรุป: ย้ายรายงานยอดขายรายเดือนไปอ่านจาก read replica เพราะช่วงสิ้นเดือนไปแย่ง CPU กับ checkout บน primary",
        "ทำไม query รายงานยอดขายรายวันถึงช้า แก้ยังไง",
    ),
]
# Cross-language queries about the current state, reusing replaced pairs: (sid, query language, query)
OUTDATED_CROSS = [
    ("od_ja_opsctl_go", "en", "Which Go version is opsctl built with?"),
    ("od_th_react", "en", "Which React version does our frontend use?"),
    (
        "od_en_password_hash",
        "ja",
        "auth-gateway のパスワードは何のアルゴリズムでハッシュしている？",
    ),
    ("od_th_eks", "ja", "本番クラスタの EKS のバージョンは？"),
    ("od_en_lambda_node", "th", "Lambda image-resize ใช้ runtime ของ Node เวอร์ชันไหน"),
    ("od_ja_staging_deploy", "th", "staging ถูก deploy ตอนไหน ทุกคืนหรือทุกครั้งที่ merge"),
    ("od_ja_dwh", "en", "Which data warehouse do we use for analytics?"),
    ("od_en_mobile_release", "ja", "モバイルアプリのストアリリースは何曜日？"),
    ("od_en_upload_limit", "th", "media-uploader รับไฟล์ได้ใหญ่สุดกี่ MB"),
    ("od_th_support_bugs", "en", "How does the support team report bugs to us?"),
]


def build_outdated() -> None:
    for sid, typ, dom, lang, old_age, old, new_age, new, query in OUTDATED:
        N(f"{sid}_old", typ, dom, lang, old, age=old_age)
        N(f"{sid}_new", typ, dom, lang, new, age=new_age)
        Q("outdated", lang, query, f"{sid}_new", variant="replaced", pair=f"{sid}_old")
    for sid, typ, dom, lang, old_age, old, new_age, new, query in OUTDATED_CONTROLS:
        N(f"{sid}_old", typ, dom, lang, old, age=old_age)
        N(f"{sid}_new", typ, dom, lang, new, age=new_age)
        Q("outdated", lang, query, f"{sid}_old", variant="control", pair=f"{sid}_new")
    for sid, lang, query in OUTDATED_CROSS:
        assert SIDS[f"{sid}_new"]["lang"] != lang, (sid, lang)
        Q("outdated", lang, query, f"{sid}_new", variant="replaced", pair=f"{sid}_old")


build_outdated()
# ===========================================================================
# Build, validate, write
# ===========================================================================
STOPWORDS = set(
    """
a an the and or but if then else of to in on at by for with from into onto over under about as is are was were be been
being am do does did done doing have has had having it its it's this that these those there here i me my we our us you
your he she they them their his her what which who whom whose when where why how all any both each few more most other
some such no nor not only own same so than too very can could will would shall should may might must just also now one
once up down out off again further s t don't isn't aren't wasn't weren't won't can't cannot get got go goes going gone
let lets like use used using uses need needs make makes made still even ever every anything something nothing
is it whether before after while until because via per vs i'm i'll i'd what's
""".split()
)


def _stem(w: str) -> str:
    for suf in ("ing", "ed", "es", "s"):
        if len(w) > 4 and w.endswith(suf):
            return w[: -len(suf)]
    return w


def en_content_words(text: str) -> set[str]:
    words = re.findall(r"[a-z0-9]+", text.lower())
    return {_stem(w) for w in words if w not in STOPWORDS}


_KANJI = re.compile(r"[\u4e00-\u9fff\u3005]+")
_KATA = re.compile(r"[\u30a1-\u30fa\u30fc]+")
_LATIN = re.compile(r"[A-Za-z0-9]+")


def ja_key_bigrams(text: str) -> set[str]:
    grams = set()
    for run in _KANJI.findall(text) + _KATA.findall(text):
        for i in range(len(run) - 1):
            grams.add(run[i : i + 2])
    return grams


def latin_words(text: str) -> set[str]:
    return {w.lower() for w in _LATIN.findall(text)}


def th_term_grams(terms: list[str]) -> set[str]:
    grams = set()
    for t in terms:
        if _LATIN.fullmatch(t.replace(".", "").replace(" ", "")):
            continue
        t = t.replace(" ", "")
        if len(t) < 3:
            grams.add(t)
        for i in range(len(t) - 2):
            grams.add(t[i : i + 3])
    return grams


def mem_text(m: dict) -> str:
    return (m.get("title", "") + " " + m["text"]).strip()


# ---------------------------------------------------------------------------
# Dev/test split, by memory: memories that answer a common query form one group
# (union-find over each query's relevant set); a group goes to test when a stable
# hash of its smallest sid says so, and each query follows its relevant memories.
# Tuning looks at dev queries only, so no test answer is ever seen while tuning.
# Memories that answer no query are distractors for both splits (their own hash
# decides their label, which nothing uses). Hashing sids, not keys, keeps a
# group's split when the data set grows.  Outdated queries also join the two notes of
# their pair, so a pair never straddles the splits; those groups are split evenly
# within each (language, variant) by ranking them on the same hash, because 10 or 4
# pairs left to the hash alone can land lopsided.
# ---------------------------------------------------------------------------
TEST_SHARE = 0.5


def _split_hash(sid: str) -> float:
    digest = hashlib.blake2b(f"kioku-split\0{sid}".encode(), digest_size=8).digest()
    return int.from_bytes(digest, "big") / 2**64


def _split_of(sid: str) -> str:
    return "test" if _split_hash(sid) < TEST_SHARE else "dev"


def assign_splits() -> dict[str, str]:
    parent: dict[str, str] = {}

    def find(x: str) -> str:
        parent.setdefault(x, x)
        while parent[x] != x:
            parent[x] = parent[parent[x]]
            x = parent[x]
        return x

    for q in QUERIES:
        members = q["rel"] + ([q["pair"]] if q["pair"] else [])
        for s in members[1:]:
            a, b = find(members[0]), find(s)
            if a != b:
                parent[max(a, b)] = min(a, b)
    groups: dict[str, list[str]] = defaultdict(list)
    for sid in SIDS:
        groups[find(sid)].append(sid)
    split = {sid: _split_of(min(members)) for members in groups.values() for sid in members}

    strata: dict[tuple[str, str], set[str]] = defaultdict(set)
    for q in QUERIES:
        if q["kind"] == "outdated":
            root = find(q["rel"][0])
            assert sorted(groups[root]) == sorted(q["rel"] + [q["pair"]]), groups[root]
            strata[SIDS[q["rel"][0]]["lang"], q["variant"]].add(root)
    for roots in strata.values():
        ranked = sorted(roots, key=lambda r: (_split_hash(min(groups[r])), r))
        n_test = round(len(ranked) * TEST_SHARE)
        for i, r in enumerate(ranked):
            for sid in groups[r]:
                split[sid] = "test" if i < n_test else "dev"
    return split


def build() -> tuple[list[dict], list[dict]]:
    age_rng = random.Random(SEED + 1)
    for m in MEMS:  # MEMS order is authoring order: deterministic
        if m["age"] is None:
            m["age"] = round(age_rng.uniform(1.0, 420.0), 2)
    ordered = sorted(MEMS, key=lambda m: (-m["age"], m["sid"]))
    for i, m in enumerate(ordered, 1):
        m["key"] = f"m{i:04d}"
        m["order"] = i
    key = {m["sid"]: m["key"] for m in ordered}
    split = assign_splits()

    memories = []
    for m in ordered:
        out = {
            "key": m["key"],
            "kind": m["kind"],
            "type": m["type"],
            "lang": m["lang"],
            "text": m["text"],
        }
        if m["kind"] == "record":
            out["title"] = m["title"]
        out["priority"] = m["priority"]
        out["domain"] = m["domain"]
        out["age_days"] = float(m["age"])
        out["split"] = split[m["sid"]]
        if m["kind"] == "record":
            out["links"] = [f"{lk}:{key[t]}" for lk, t in m["links"]]
        memories.append(out)

    queries = []
    n = 0
    for kind in QUERY_KINDS:
        for q in QUERIES:
            if q["kind"] != kind:
                continue
            n += 1
            for s in q["rel"] + q["under"] + [x for x in (q["old"], q["pair"]) if x is not None]:
                assert s in SIDS, f"query {q['query']!r} refers to unknown sid {s}"
            out = {
                "qid": f"q{n:03d}",
                "query": q["query"],
                "lang": q["lang"],
                "kind": kind,
                "relevant": [key[s] for s in q["rel"]],
                "split": split[q["rel"][0]],
            }
            if q["type"]:
                out["type"] = q["type"]
            if q["domain"]:
                out["domain"] = q["domain"]
            if q["old"]:
                out["superseded_from"] = key[q["old"]]
            if q["under"]:
                out["buried_under"] = [key[s] for s in q["under"]]
            if q["variant"]:
                out["variant"] = q["variant"]
                out["outdated_pair"] = key[q["pair"]]
            q["qid"] = out["qid"]
            queries.append(out)
    return memories, queries


def validate(memories: list[dict], queries: list[dict]) -> list[str]:
    """Assert every labelling rule; return human-readable check results."""
    res = []
    by_key = {m["key"]: m for m in memories}
    assert len(by_key) == len(memories), "duplicate memory keys"
    assert len({q["qid"] for q in queries}) == len(queries), "duplicate qids"
    assert len({q["query"] for q in queries}) == len(queries), "duplicate query texts"
    assert len({m["text"] for m in memories}) == len(memories), "duplicate memory texts"
    res.append(
        f"unique keys ({len(memories)}), qids ({len(queries)}), memory texts and query texts"
    )

    assert len(memories) >= 1000
    for m in memories:
        assert m["kind"] in ("note", "record")
        assert m["type"] in (NOTE_TYPES if m["kind"] == "note" else RECORD_TYPES), m
        assert m["lang"] in LANGS and m["text"]
        assert isinstance(m["age_days"], float) and m["age_days"] > 0
        if m["kind"] == "record":
            assert m["title"]
        else:
            assert "links" not in m and "title" not in m
    ages = [m["age_days"] for m in memories]
    assert ages == sorted(ages, reverse=True), "keys must follow creation order (oldest first)"
    res.append(
        "keys follow creation order (m0001 is the oldest); notes have no title/links, records have titles"
    )

    superseded_by: dict[str, str] = {}
    n_links = Counter()
    for m in memories:
        for link in m.get("links", []):
            lk, tgt = link.split(":")
            n_links[lk] += 1
            assert lk in LINK_KINDS
            assert tgt in by_key, link
            t = by_key[tgt]
            assert t["kind"] == "record", f"{m['key']} links to a note"
            assert t["key"] < m["key"] and t["age_days"] > m["age_days"], (
                f"{m['key']} links to a newer record"
            )
            if lk == "supersedes":
                assert tgt not in superseded_by, f"{tgt} superseded twice"
                superseded_by[tgt] = m["key"]
                assert t["type"] == m["type"] == "decision"
            if lk == "resolves":
                assert m["type"] == "fix" and t["type"] == "audit"
            if lk == "verifies":
                assert m["type"] == "verification" and t["type"] == "fix"
            if lk == "duplicates":
                assert m["type"] == t["type"]
    res.append(
        f"referential integrity: {sum(n_links.values())} links, every target an older record; "
        "supersedes decision->decision, resolves fix->audit, verifies verification->fix"
    )

    def head_of(k: str) -> str:
        while k in superseded_by:
            k = superseded_by[k]
        return k

    langs = Counter(m["lang"] for m in memories)
    for lg in ("ja", "th"):
        share = langs[lg] / len(memories)
        assert share >= 0.15, (lg, share)
    res.append(
        "language shares: "
        + ", ".join(f"{lg} {langs[lg] / len(memories):.1%}" for lg in ("en", "ja", "th"))
        + " (ja, th >= 15%)"
    )

    kinds = Counter(q["kind"] for q in queries)
    assert len(queries) >= 300
    for k in QUERY_KINDS:
        assert kinds[k] >= (20 if k == "type_filter" else 40), (k, kinds[k])
    res.append("query counts: " + ", ".join(f"{k} {kinds[k]}" for k in QUERY_KINDS))

    sid_by_key = {m["key"]: m["sid"] for m in MEMS}
    src = {q["qid"]: q for q in QUERIES}
    para_min = 99
    sup_margin = []
    outdated_pairs: dict[str, tuple[str, str, str]] = {}  # relevant key -> (partner, variant, lang)
    outdated_cross = Counter()
    for q in queries:
        rel = [by_key[k] for k in q["relevant"]]
        assert rel, q
        assert len(set(q["relevant"])) == len(rel), q
        for r in rel:
            assert r["key"] not in superseded_by, f"{q['qid']}: relevant {r['key']} is superseded"
        kind, lang, text = q["kind"], q["lang"], q["query"]
        if kind == "trigger":
            if lang == "en":
                assert len(text.split()) <= 3, q
            else:
                assert len(text) <= 16, q
        elif kind == "contextual":
            if lang == "en":
                assert 15 <= len(text.split()) <= 40, (q["qid"], len(text.split()), text)
            else:
                assert 30 <= len(text) <= 160, q
        elif kind == "paraphrase":
            for r in rel:
                assert r["lang"] == lang, q
                if lang == "en":
                    shared = en_content_words(text) & en_content_words(mem_text(r))
                    assert not shared, (
                        f"{q['qid']} paraphrase shares {shared} with {r['key']}: {text}"
                    )
                elif lang == "ja":
                    shared = {g for g in ja_key_bigrams(mem_text(r)) if g in text}
                    shared |= latin_words(text) & latin_words(mem_text(r))
                    assert not shared, (
                        f"{q['qid']} paraphrase shares {shared} with {r['key']}: {text}"
                    )
                else:
                    terms = src[q["qid"]]["terms"]
                    assert terms, f"{q['qid']}: Thai paraphrase needs key terms"
                    for t in terms:
                        assert t.replace(" ", "") in mem_text(r).replace(" ", ""), (q["qid"], t)
                    shared = {g for g in th_term_grams(terms) if g in text}
                    shared |= latin_words(text) & latin_words(mem_text(r))
                    assert not shared, (
                        f"{q['qid']} paraphrase shares {shared} with {r['key']}: {text}"
                    )
        elif kind == "crosslang":
            for r in rel:
                assert r["lang"] != lang, f"{q['qid']}: crosslang answer {r['key']} is also {lang}"
        elif kind == "buried":
            under = [by_key[k] for k in q.get("buried_under", [])]
            for r in rel:
                assert r["kind"] == "note" and r["type"] == "lesson" and r["priority"] == "high", (
                    q["qid"],
                    r["key"],
                )
            a = rel[0]
            assert len(under) >= 2, q
            for u in under:
                assert (
                    u["kind"] == "note" and u["type"] == a["type"] and u["domain"] == a["domain"]
                ), (q["qid"], u["key"])
                assert u["priority"] != "high" and u["age_days"] < a["age_days"], (
                    q["qid"],
                    u["key"],
                )
                assert u["key"] not in q["relevant"]
            newer = [
                m
                for m in memories
                if m["kind"] == "note"
                and m["type"] == a["type"]
                and m["domain"] == a["domain"]
                and m["priority"] != "high"
                and m["age_days"] < a["age_days"]
            ]
            assert len(newer) >= 2, q
        elif kind == "superseded":
            old = q["superseded_from"]
            assert old in superseded_by, f"{q['qid']}: {old} is not superseded"
            assert old not in q["relevant"]
            assert len(rel) == 1 and head_of(old) == rel[0]["key"], (
                f"{q['qid']}: relevant is not the chain head"
            )
            if lang == "en" and by_key[old]["lang"] == "en":
                qw = en_content_words(text)
                m_old = len(qw & en_content_words(mem_text(by_key[old])))
                m_new = len(qw & en_content_words(mem_text(rel[0])))
                sup_margin.append(m_old - m_new)
                assert m_old >= 1, (q["qid"], "superseded query must echo the old wording")
        elif kind == "type_filter":
            assert q.get("type"), q
            for r in rel:
                assert r["type"] == q["type"], (q["qid"], r["key"], r["type"])
        elif kind == "outdated":
            variant = q.get("variant")
            assert variant in OUTDATED_VARIANTS and variant == src[q["qid"]]["variant"], q
            assert len(rel) == 1, q
            a = rel[0]
            b = by_key[SIDS[src[q["qid"]]["pair"]]["key"]]
            assert b["key"] not in q["relevant"], q
            for m in (a, b):
                assert m["kind"] == "note" and m["type"] in ("knowledge", "lesson", "conclusion"), (
                    q["qid"],
                    m["key"],
                )
            assert (a["type"], a["domain"], a["lang"]) == (b["type"], b["domain"], b["lang"]), (
                q["qid"],
                a["key"],
                b["key"],
            )
            assert a["split"] == b["split"], (q["qid"], "pair straddles the splits")
            old, new = (b, a) if variant == "replaced" else (a, b)
            assert 60 <= old["age_days"] <= 500 and 0.5 <= new["age_days"] <= 20, (
                q["qid"],
                old,
                new,
            )
            assert old["key"] < new["key"], q["qid"]
            assert outdated_pairs.setdefault(a["key"], (b["key"], variant, a["lang"])) == (
                b["key"],
                variant,
                a["lang"],
            ), (q["qid"], "a note belongs to two pairs")
            if lang != a["lang"]:
                assert variant == "replaced", (q["qid"], "controls are same-language")
                outdated_cross[lang, a["lang"]] += 1
    res.append("every relevant key exists and no relevant memory is superseded by a newer decision")
    res.append(
        "trigger queries are short (en <= 3 words); contextual queries are 15-40 words (en) / 30-160 chars (ja, th)"
    )
    res.append(
        "paraphrase: en queries share no content word (lower-cased, stop-words removed, crude suffix stemming) "
        "with any relevant memory; ja queries share no kanji/katakana bigram or Latin word with the answer; "
        "th queries contain no 3-character substring of the answer's listed key terms and no shared Latin word"
    )
    res.append("crosslang: every relevant memory is in a language other than the query's")
    res.append(
        "buried: every relevant memory is an old high-priority lesson; each query lists >= 2 newer non-high "
        "lessons of the same domain (buried_under), which are not relevant"
    )
    res.append(
        "superseded: superseded_from is superseded, relevant is exactly the head of its chain; English queries "
        f"echo the old decision's wording (old-minus-head content-word overlap: min {min(sup_margin)}, "
        f"mean {sum(sup_margin) / len(sup_margin):.2f})"
    )
    res.append("type_filter: every relevant memory has the filtered type")
    relevant_anywhere = {k for q in queries for k in q["relevant"]}
    partners = [p for p, _, _ in outdated_pairs.values()]
    assert len(set(partners) | set(outdated_pairs)) == 2 * len(outdated_pairs), "pairs overlap"
    for partner, variant, _ in outdated_pairs.values():
        if variant == "replaced":
            assert partner not in relevant_anywhere, (
                f"replaced note {partner} is relevant somewhere"
            )
    n_var = Counter(v for _, v, _ in outdated_pairs.values())
    res.append(
        f"outdated: {n_var['replaced']} replaced pairs, relevant is only the newer note (0.5-20 days) "
        "of a same-type, same-domain, same-language pair whose older note (60-500 days) is relevant "
        f"to no query; {n_var['control']} control pairs, relevant is only the older note, both notes "
        f"still valid; {sum(outdated_cross.values())} cross-language queries reuse replaced pairs ("
        + ", ".join(f"{a}->{b} {n}" for (a, b), n in sorted(outdated_cross.items()))
        + ")"
    )

    for q in queries:
        assert q["split"] in ("dev", "test"), q
        for k in q["relevant"]:
            assert by_key[k]["split"] == q["split"], f"{q['qid']}: relevant {k} in the other split"
    per = Counter((q["split"], q["kind"]) for q in queries)
    for k in QUERY_KINDS:
        assert per["dev", k] >= 10 and per["test", k] >= 10, (k, per["dev", k], per["test", k])
    pair_split = Counter(
        (by_key[k]["split"], variant, lg) for k, (_, variant, lg) in outdated_pairs.items()
    )
    for variant in OUTDATED_VARIANTS:
        for lg in ("en", "ja", "th"):
            d, t = pair_split["dev", variant, lg], pair_split["test", variant, lg]
            assert d + t > 0 and abs(d - t) <= 1, (variant, lg, d, t)
    res.append(
        "dev/test split by memory: every query's relevant memories lie in the query's split; "
        + ", ".join(f"{k} {per['dev', k]}/{per['test', k]}" for k in QUERY_KINDS)
        + " (dev/test); outdated pairs split evenly per language and variant ("
        + ", ".join(
            f"{v} {lg} {pair_split['dev', v, lg]}/{pair_split['test', v, lg]}"
            for v in OUTDATED_VARIANTS
            for lg in ("en", "ja", "th")
        )
        + ")"
    )
    return res


def render_stats(memories: list[dict], queries: list[dict], checks: list[str]) -> str:
    L = []
    L.append("# Benchmark data statistics\n")
    L.append(
        "Generated by `bench/quality/generate_corpus.py` (seed %d). Do not edit by hand.\n" % SEED
    )
    L.append(f"## Memories: {len(memories)}\n")

    def table(title, counter, total):
        L.append(f"### {title}\n")
        L.append("| value | count | share |")
        L.append("|---|---:|---:|")
        for k, v in sorted(counter.items(), key=lambda kv: (-kv[1], str(kv[0]))):
            L.append(f"| {k if k != '' else '(none)'} | {v} | {v / total:.1%} |")
        L.append("")

    table("By kind", Counter(m["kind"] for m in memories), len(memories))
    table("By kind/type", Counter(f"{m['kind']}/{m['type']}" for m in memories), len(memories))
    table("By language", Counter(m["lang"] for m in memories), len(memories))
    table("By priority", Counter(m["priority"] for m in memories), len(memories))
    table("By domain", Counter(m["domain"] for m in memories), len(memories))
    links = Counter(l.split(":")[0] for m in memories for l in m.get("links", []))
    table("Links by kind", links, max(1, sum(links.values())))
    sup = {
        l.split(":")[1] for m in memories for l in m.get("links", []) if l.startswith("supersedes:")
    }
    heads = [
        m
        for m in memories
        if m["type"] == "decision"
        and m["key"] not in sup
        and any(l.startswith("supersedes:") for l in m.get("links", []))
    ]
    by_key = {m["key"]: m for m in memories}

    def chain_len(m):
        n = 1
        while True:
            prev = [l.split(":")[1] for l in m.get("links", []) if l.startswith("supersedes:")]
            if not prev:
                return n
            m = by_key[prev[0]]
            n += 1

    table("Decision chains by length", Counter(chain_len(h) for h in heads), len(heads))
    words = [len(m["text"].split()) for m in memories if m["lang"] == "en"]
    chars = [len(m["text"]) for m in memories if m["lang"] != "en"]
    L.append(
        f"Text length: en {min(words)}-{max(words)} words (mean {sum(words) / len(words):.1f}); "
        f"ja/th {min(chars)}-{max(chars)} characters (mean {sum(chars) / len(chars):.1f}).\n"
    )
    L.append(
        f"Age: {min(m['age_days'] for m in memories):.2f}-{max(m['age_days'] for m in memories):.2f} days.\n"
    )

    L.append(f"## Queries: {len(queries)}\n")
    table("By kind", Counter(q["kind"] for q in queries), len(queries))
    table("By language", Counter(q["lang"] for q in queries), len(queries))
    table("By split", Counter(q["split"] for q in queries), len(queries))
    L.append("### Kind x language\n")
    L.append("| kind | en | ja | th | total |")
    L.append("|---|---:|---:|---:|---:|")
    for k in QUERY_KINDS:
        c = Counter(q["lang"] for q in queries if q["kind"] == k)
        L.append(f"| {k} | {c['en']} | {c['ja']} | {c['th']} | {sum(c.values())} |")
    L.append("")
    table(
        "Number of relevant memories per query",
        Counter(len(q["relevant"]) for q in queries),
        len(queries),
    )
    table(
        "Type filters",
        Counter(q["type"] for q in queries if q.get("type")),
        max(1, sum(1 for q in queries if q.get("type"))),
    )
    cov = {k for q in queries for k in q["relevant"]}
    L.append(
        f"Distinct memories used as answers: {len(cov)} of {len(memories)}; the rest act only as distractors.\n"
    )
    L.append("## Validation (all asserted by the generator)\n")
    for c in checks:
        L.append(f"- OK: {c}")
    L.append("")
    return "\n".join(L)


def dump_jsonl(rows: list[dict]) -> str:
    return "".join(json.dumps(r, ensure_ascii=False) + "\n" for r in rows)


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument(
        "--check", action="store_true", help="verify that the files on disk are up to date"
    )
    args = ap.parse_args()
    memories, queries = build()
    checks = validate(memories, queries)
    files = {
        DATA / "memories.jsonl": dump_jsonl(memories),
        DATA / "queries.jsonl": dump_jsonl(queries),
        DATA / "STATS.md": render_stats(memories, queries, checks),
    }
    if args.check:
        stale = [
            p.name
            for p, body in files.items()
            if not p.exists() or p.read_text(encoding="utf-8") != body
        ]
        if stale:
            print("out of date:", ", ".join(stale))
            return 1
        print("data files are up to date")
        return 0
    DATA.mkdir(parents=True, exist_ok=True)
    for p, body in files.items():
        p.write_text(body, encoding="utf-8", newline="\n")
    print(f"wrote {len(memories)} memories and {len(queries)} queries to {DATA}")
    for c in checks:
        print(" -", c)
    return 0


if __name__ == "__main__":
    sys.exit(main())
