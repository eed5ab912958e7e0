// bench/peers.py --client ts: the timed MCP calls, made by the official TypeScript SDK
// (Client + StdioClientTransport), as editors (VS Code Copilot, Claude Code, Cursor) make them.
//
// One long-lived process, driven over its own stdin/stdout with JSON lines; stdout carries
// nothing else (logs go to stderr, and so does each server's stderr):
//
//   -> {"servers": {"k": {command, args, env, cwd}, "p": {...}}}
//   <- {"ready": true}            (both connected, tools/list called once on each: editors
//                                  do, and the client then checks structured output against
//                                  the tools' output schemas)
//   -> {"ops": [{"side": "k", "tool": "search_memory", "args": {...}, "check": true},
//               {"side": "p", "ping": true}, ...]}
//   <- {"ms": [...], "errors": [...]}
//                                 (strictly sequential; each op timed around the awaited call
//                                  only; an isError result of an op with check (the default)
//                                  is an error, as is a thrown one; the first error ends the
//                                  request, so "ms" may be shorter than "ops")
//   -> {"quit": true}             (closes both clients, exits)
//
// Run from peers.py, which installs it with its package.json under --cache (ts_client/).
import { createInterface } from "node:readline";
import { performance } from "node:perf_hooks";
import { Client } from "@modelcontextprotocol/sdk/client/index.js";
import { StdioClientTransport } from "@modelcontextprotocol/sdk/client/stdio.js";

const clients = {};

function send(obj) {
  process.stdout.write(JSON.stringify(obj) + "\n");
}

async function connect(servers) {
  for (const [side, s] of Object.entries(servers)) {
    const client = new Client({ name: "kioku-bench-ts", version: "1.0.0" });
    const transport = new StdioClientTransport({
      command: s.command,
      args: s.args ?? [],
      env: s.env ?? undefined,
      cwd: s.cwd ?? undefined,
      stderr: "inherit",
    });
    await client.connect(transport);
    clients[side] = client;
    const { tools } = await client.listTools();
    const withSchema = tools.filter((t) => t.outputSchema).length;
    console.error(`ts driver: ${side} connected, ${tools.length} tools, ${withSchema} with an output schema`);
  }
}

function errorText(res) {
  const text = (res.content ?? []).filter((c) => c.type === "text").map((c) => c.text);
  return text.length ? text.join("\n") : JSON.stringify(res.content);
}

async function runOps(ops) {
  const ms = [];
  const errors = [];
  for (const op of ops) {
    const client = clients[op.side];
    const what = op.ping ? `${op.side} ping` : `${op.side} ${op.tool}`;
    let res;
    let failure;
    const t = performance.now();
    try {
      res = op.ping ? await client.ping() : await client.callTool({ name: op.tool, arguments: op.args ?? {} });
    } catch (e) {
      failure = e;
    }
    ms.push(performance.now() - t);
    if (failure) {
      errors.push(`${what}: ${failure?.message ?? failure}`);
    } else if (!op.ping && res.isError && op.check !== false) {
      errors.push(`${what}: ${errorText(res)}`);
    }
    if (errors.length) break;
  }
  return { ms, errors };
}

async function closeAll() {
  await Promise.allSettled(Object.values(clients).map((c) => c.close()));
}

const lines = createInterface({ input: process.stdin, crlfDelay: Infinity });
for await (const line of lines) {
  if (!line.trim()) continue;
  const msg = JSON.parse(line);
  if (msg.quit) break;
  if (msg.servers) {
    try {
      await connect(msg.servers);
      send({ ready: true });
    } catch (e) {
      console.error(e);
      send({ ready: false, error: String(e?.message ?? e) });
      await closeAll();
      process.exit(1);
    }
  } else if (msg.ops) {
    send(await runOps(msg.ops));
  } else {
    send({ error: `unknown request: ${line.slice(0, 200)}` });
  }
}
await closeAll();
process.exit(0);
