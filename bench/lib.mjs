// Small helpers shared by the benchmark scripts: /proc readings, percentiles, ports, processes.
import { spawn } from 'node:child_process';
import fs from 'node:fs';
import net from 'node:net';

export const sleep = (ms) => new Promise((r) => setTimeout(r, ms));
const CLK_TCK = 100; // USER_HZ on Linux

/** utime+stime (seconds) of one process, or NaN when it is gone. */
export function cpuSeconds(pid) {
  try {
    const stat = fs.readFileSync(`/proc/${pid}/stat`, 'utf8');
    const f = stat.slice(stat.lastIndexOf(')') + 2).split(' ');
    return (Number(f[11]) + Number(f[12])) / CLK_TCK;
  } catch {
    return NaN;
  }
}

/** cutime+cstime of this process: CPU of children that have exited and been waited for. */
export function waitedChildrenCpuSeconds() {
  const stat = fs.readFileSync('/proc/self/stat', 'utf8');
  const f = stat.slice(stat.lastIndexOf(')') + 2).split(' ');
  return (Number(f[13]) + Number(f[14])) / CLK_TCK;
}

/** The pid and every live descendant (found through /proc/<pid>/task/<tid>/children). */
export function processTree(pid) {
  const out = [];
  const visit = (p, depth) => {
    if (depth > 8) return;
    out.push(p);
    let tasks = [];
    try {
      tasks = fs.readdirSync(`/proc/${p}/task`);
    } catch {
      return;
    }
    for (const tid of tasks) {
      let children = '';
      try {
        children = fs.readFileSync(`/proc/${p}/task/${tid}/children`, 'utf8');
      } catch {
        continue;
      }
      for (const c of children.trim().split(/\s+/)) if (c) visit(Number(c), depth + 1);
    }
  };
  visit(pid, 0);
  return out;
}

/** Sum of utime+stime over a process tree, in seconds. */
export function treeCpuSeconds(pid) {
  let sum = 0;
  for (const p of processTree(pid)) {
    const s = cpuSeconds(p);
    if (Number.isFinite(s)) sum += s;
  }
  return sum;
}

function statusField(pid, field) {
  try {
    const m = new RegExp(`${field}:\\s+(\\d+)`).exec(fs.readFileSync(`/proc/${pid}/status`, 'utf8'));
    return m ? Number(m[1]) : 0;
  } catch {
    return 0;
  }
}

/** Resident memory of a process tree in MB: the sum of VmRSS, and the sum of PSS (shared pages split). */
export function treeMemoryMB(pid) {
  let rssKb = 0;
  let pssKb = 0;
  const pids = processTree(pid);
  for (const p of pids) {
    rssKb += statusField(p, 'VmRSS');
    try {
      const m = /Pss:\s+(\d+)/.exec(fs.readFileSync(`/proc/${p}/smaps_rollup`, 'utf8'));
      if (m) pssKb += Number(m[1]);
    } catch {
      /* gone */
    }
  }
  return { rss: rssKb / 1024, pss: pssKb / 1024, processes: pids.length };
}

/** Whole-machine busy share between two readings of /proc/stat. */
export function machineCpu() {
  const l = fs.readFileSync('/proc/stat', 'utf8').split('\n')[0].trim().split(/\s+/).slice(1).map(Number);
  return { busy: l[0] + l[1] + l[2] + l[5] + l[6] + l[7], all: l.slice(0, 8).reduce((a, b) => a + b, 0) };
}

export function percentile(sorted, p) {
  if (sorted.length === 0) return NaN;
  const i = Math.min(sorted.length - 1, Math.max(0, Math.ceil((p / 100) * sorted.length) - 1));
  return sorted[i];
}

/** p50/p90/p99/p99.9/max/mean of a Float64Array (sorted in place). */
export function summarize(values) {
  const a = values instanceof Float64Array ? values : Float64Array.from(values);
  a.sort();
  let sum = 0;
  for (const v of a) sum += v;
  return {
    count: a.length,
    mean: a.length ? sum / a.length : NaN,
    p50: percentile(a, 50),
    p90: percentile(a, 90),
    p99: percentile(a, 99),
    p999: percentile(a, 99.9),
    max: a.length ? a[a.length - 1] : NaN,
  };
}

export async function freePort() {
  return new Promise((resolve, reject) => {
    const s = net.createServer();
    s.once('error', reject);
    s.listen(0, '127.0.0.1', () => {
      const { port } = s.address();
      s.close(() => resolve(port));
    });
  });
}

/** Spawns through bash so the open-files limit can be raised first; `exec` keeps the pid. */
export function spawnWithNofile(command, args, options = {}) {
  const quoted = [command, ...args].map((a) => `'${String(a).replaceAll("'", "'\\''")}'`).join(' ');
  return spawn('bash', ['-c', `ulimit -n 65536 2>/dev/null || ulimit -n $(ulimit -Hn); exec ${quoted}`], options);
}

/** Runs a command to completion, collecting stdout/stderr. */
export function run(command, args, options = {}) {
  return new Promise((resolve) => {
    const child = spawn(command, args, { stdio: ['ignore', 'pipe', 'pipe'], ...options });
    let stdout = '';
    let stderr = '';
    child.stdout.on('data', (d) => (stdout += d));
    child.stderr.on('data', (d) => (stderr += d));
    child.on('error', (error) => resolve({ code: -1, stdout, stderr: stderr + String(error), pid: child.pid }));
    child.on('close', (code) => resolve({ code, stdout, stderr, pid: child.pid }));
    options.onSpawn?.(child);
  });
}

export async function waitForHttp(url, timeoutMs = 20_000) {
  const deadline = Date.now() + timeoutMs;
  let last;
  while (Date.now() < deadline) {
    try {
      // Closed after the answer: an idle probe connection would count among a gateway's own (port sharing).
      const r = await fetch(url, { headers: { connection: 'close' }, signal: AbortSignal.timeout(1000) });
      await r.arrayBuffer();
      if (r.status === 200) return;
      last = `status ${r.status}`;
    } catch (error) {
      last = error.cause?.code ?? error.message;
    }
    await sleep(100);
  }
  throw new Error(`${url} not ready after ${timeoutMs} ms (${last})`);
}

export const round = (x, d = 1) => (Number.isFinite(x) ? Number(x.toFixed(d)) : null);

/** SCAN + UNLINK of every key under the prefix; returns how many there were. */
export async function dropRedisPrefix(redis, prefix) {
  let cursor = '0';
  let n = 0;
  do {
    const [next, keys] = await redis.scan(cursor, 'MATCH', `${prefix}*`, 'COUNT', 1000);
    cursor = next;
    if (keys.length > 0) {
      n += keys.length;
      await redis.unlink(...keys);
    }
  } while (cursor !== '0');
  return n;
}
