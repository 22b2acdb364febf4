// The web port over a large database, end to end (run by hand; docs/PERFORMANCE.md):
// a real benchd on DB (e.g. the 100,000 jobs and 10,000,000 samples web_api_bench
// builds), timed over HTTP on loopback and in Debian's Chromium (playwright-core).
//
//   node tests/bench/web_page_bench.mjs BENCHD DB [BIG_JOB] [RUNS]
//     BIG_JOB: a job whose chart to load (web_api_bench's 100,000-iteration job is
//     job-1050000); RUNS: repetitions of each timing (default 7).
//
// Prints, in milliseconds (min / median / max):
//   - recovery: benchd's start until /readyz answers 200;
//   - over HTTP (fetch, one connection reused): /api/v1/results, /api/v1/jobs,
//     BIG_JOB's samples downsampled to 1000 points, /metrics and /healthz — the last two
//     also with 20 live event streams open (fleet streams: they send every second and
//     stay open; a finished job's stream would end at once);
//   - in Chromium: each view from navigation until it is usable (main[data-ready="1"]:
//     its data drawn), with a fresh page each time.
// DB is opened by benchd as it is (its jobs are recovered; nothing is submitted).
import { spawn } from 'node:child_process';
import { createRequire } from 'node:module';
import net from 'node:net';
import { performance } from 'node:perf_hooks';

const require = createRequire(new URL('../../web/package.json', import.meta.url));
const { chromium } = require('playwright-core');

const [benchd, db, bigJob = 'job-1050000', runsArg = '7'] = process.argv.slice(2);
if (!benchd || !db) {
  console.error('usage: node tests/bench/web_page_bench.mjs BENCHD DB [BIG_JOB] [RUNS]');
  process.exit(2);
}
const RUNS = Number(runsArg);

const freePort = () => new Promise((resolve, reject) => {
  const server = net.createServer();
  server.once('error', reject);
  server.listen(0, '127.0.0.1', () => {
    const { port } = server.address();
    server.close(() => resolve(port));
  });
});
const sleep = (ms) => new Promise((r) => setTimeout(r, ms));
const stats = (values) => {
  const sorted = [...values].sort((a, b) => a - b);
  const median = sorted[Math.floor(sorted.length / 2)];
  return `${sorted[0].toFixed(1)} / ${median.toFixed(1)} / ${sorted[sorted.length - 1].toFixed(1)}`;
};
const row = (what, values, extra = '') =>
  console.log(`${what.padEnd(58)} ${stats(values).padStart(24)} ms ${extra}`);

const httpPort = await freePort();
const base = `http://127.0.0.1:${httpPort}`;
const started = performance.now();
const daemon = spawn(benchd, ['--listen', '127.0.0.1:0', '--http', `127.0.0.1:${httpPort}`, '--db', db],
  { stdio: ['ignore', 'ignore', 'inherit'] });
let exited = false;
daemon.on('exit', () => { exited = true; });
try {
  for (;;) {
    if (exited) throw new Error('benchd exited before it was ready');
    try {
      if ((await fetch(`${base}/readyz`)).ok) break;
    } catch { /* not listening yet */ }
    if (performance.now() - started > 300000) throw new Error('benchd not ready after 300 s');
    await sleep(50);
  }
  console.log(`recovery (start until /readyz 200)`.padEnd(58), `${(performance.now() - started).toFixed(0).padStart(24)} ms`);

  const timeGet = async (target, runs = RUNS) => {
    const times = [];
    let bytes = 0;
    for (let i = 0; i < runs; i++) {
      const t0 = performance.now();
      const response = await fetch(base + target);
      const body = await response.arrayBuffer();
      times.push(performance.now() - t0);
      if (!response.ok) throw new Error(`${target}: HTTP ${response.status}`);
      bytes = body.byteLength;
    }
    return { times, bytes };
  };
  const targets = ['/api/v1/results', '/api/v1/results?job_ids=false', '/api/v1/results/grids', '/api/v1/jobs', `/api/v1/jobs/${bigJob}/samples?points=1000`,
    '/metrics', '/healthz'];
  console.log('\nover HTTP (fetch on loopback)');
  for (const target of targets) {
    const { times, bytes } = await timeGet(target);
    row(`GET ${target}`, times, `(${bytes} bytes)`);
  }

  const streams = [];
  for (let i = 0; i < 20; i++) {
    const controller = new AbortController();
    const response = await fetch(`${base}/api/v1/fleet/events`, { signal: controller.signal });
    if (!response.ok) throw new Error(`stream ${i}: HTTP ${response.status}`);
    const reader = response.body.getReader();
    const pump = (async () => { try { for (;;) { if ((await reader.read()).done) return; } } catch { /* aborted */ } })();
    streams.push({ controller, pump });
  }
  await sleep(1500);  // every stream has sent at least one event
  console.log('\nwith 20 live event streams open');
  for (const target of ['/metrics', '/healthz', '/api/v1/jobs']) {
    const { times } = await timeGet(target, Math.max(RUNS, 20));
    row(`GET ${target}`, times);
  }
  for (const s of streams) s.controller.abort();
  await Promise.all(streams.map((s) => s.pump));

  console.log('\nin Chromium: navigation until the view is usable (main[data-ready="1"])');
  const browser = await chromium.launch({ executablePath: process.env.CHROMIUM || '/usr/bin/chromium',
    headless: true, args: ['--no-sandbox'] });
  try {
    const context = await browser.newContext({ viewport: { width: 1280, height: 800 } });
    for (const hash of ['#/results', '#/jobs', `#/job/${bigJob}`, '#/fleet']) {
      const times = [];
      for (let i = 0; i < Math.min(RUNS, 5); i++) {
        const page = await context.newPage();
        const t0 = performance.now();
        await page.goto(`${base}/${hash}`);
        await page.waitForSelector('main[data-ready="1"]', { timeout: 60000 });
        times.push(performance.now() - t0);
        await page.close();
      }
      row(`page ${hash}`, times);
    }
  } finally {
    await browser.close();
  }
} finally {
  daemon.kill('SIGTERM');
}
