// The web page in a real browser against a real fleet: benchd (temp database, free ports),
// two bench-agents (2 CPU slots; and 2 GPUs from tests/fake_nvml whose ranks run on the
// CPU), real bench-train jobs submitted with benchctl (one named <script>alert(1)</script>),
// and Debian's Chromium driven by playwright-core (web/node_modules). It checks that
//   - every view loads without a console error, a failed request or an HTTP error,
//   - the results grid shows exactly what `benchctl results` prints for the same database
//     (any --metric), rendered by benchd (the page asks /api/v1/results/grids and formats
//     no figure of its own),
//   - the job view of a --data-vs-compute job shows benchctl status's "vs compute" figure,
//   - the job view shows a finished job's diagnosis as benchctl status's section prints it,
//   - the job view's chart grows while a real job runs (its event stream),
//   - a deep link reproduces its view,
//   - the script-named job renders as text (no dialog fires, the text is visible),
//   - the screening view lists a `benchctl screen` of the fake GPUs and shows its verdicts
//     and the text `benchctl screen --show` prints.
// With BENCH_SCREENSHOTS=DIR it saves a 1280x800 PNG of each view into DIR.
//
// Run by ctest (tests/web/CMakeLists.txt) as
//   BENCHD=... BENCH_AGENT=... BENCH_TRAIN=... BENCHCTL=... FAKE_NVML=... \
//     node --test --test-reporter=spec tests/web/web_test.mjs
// CHROMIUM overrides /usr/bin/chromium; BENCH_WEB_KEEP=1 keeps the temp dir and its logs.
import { test, before, after } from 'node:test';
import assert from 'node:assert/strict';
import { spawn, execFile } from 'node:child_process';
import { createRequire } from 'node:module';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { freePort, sleep } from './harness.mjs';
import { promisify } from 'node:util';

const require = createRequire(new URL('../../web/package.json', import.meta.url));
const { chromium } = require('playwright-core');
const run = promisify(execFile);

const env = (name) => {
  const value = process.env[name];
  if (!value) throw new Error(`${name} is not set (the path of the built binary; see tests/web/CMakeLists.txt)`);
  return value;
};
const BIN = {
  benchd: env('BENCHD'), agent: env('BENCH_AGENT'), train: env('BENCH_TRAIN'), benchctl: env('BENCHCTL'),
  fakeNvml: env('FAKE_NVML'),
};
const CHROMIUM = process.env.CHROMIUM || '/usr/bin/chromium';
const SHOTS = process.env.BENCH_SCREENSHOTS || '';
const SCRIPT_NAME = '<script>alert(1)</script>';
// A 40x36 JPEG (a colour gradient, libjpeg quality 75): the ImageFolder of the
// --data-vs-compute job is copies of it.
const JPEG = Buffer.from(
  '/9j/4AAQSkZJRgABAQAAAQABAAD/2wBDAAgGBgcGBQgHBwcJCQgKDBQNDAsLDBkSEw8UHRofHh0aHBwgJC4nICIsIxwcKDcpLDAxNDQ0Hyc5PTgyPC4zNDL/2wBDAQkJCQwLDBgNDRgyIRwhMjIyMjIyMjIyMjIyMjIyMjIyMjIyMjIyMjIyMjIyMjIyMjIyMjIyMjIyMjIyMjIyMjL/wAARCAAkACgDASIAAhEBAxEB/8QAHwAAAQUBAQEBAQEAAAAAAAAAAAECAwQFBgcICQoL/8QAtRAAAgEDAwIEAwUFBAQAAAF9AQIDAAQRBRIhMUEGE1FhByJxFDKBkaEII0KxwRVS0fAkM2JyggkKFhcYGRolJicoKSo0NTY3ODk6Q0RFRkdISUpTVFVWV1hZWmNkZWZnaGlqc3R1dnd4eXqDhIWGh4iJipKTlJWWl5iZmqKjpKWmp6ipqrKztLW2t7i5usLDxMXGx8jJytLT1NXW19jZ2uHi4+Tl5ufo6erx8vP09fb3+Pn6/8QAHwEAAwEBAQEBAQEBAQAAAAAAAAECAwQFBgcICQoL/8QAtREAAgECBAQDBAcFBAQAAQJ3AAECAxEEBSExBhJBUQdhcRMiMoEIFEKRobHBCSMzUvAVYnLRChYkNOEl8RcYGRomJygpKjU2Nzg5OkNERUZHSElKU1RVVldYWVpjZGVmZ2hpanN0dXZ3eHl6goOEhYaHiImKkpOUlZaXmJmaoqOkpaanqKmqsrO0tba3uLm6wsPExcbHyMnK0tPU1dbX2Nna4uPk5ebn6Onq8vP09fb3+Pn6/9oADAMBAAIRAxEAPwDyKKy9qvxWftWlFZe1XorP2r6OpiTmweMM2Ky9qvRWftWnFZe1XorP2rgqYk+rweMM2Kz9qK6GKz9qK45YnU+lo4z3TGisvar0Vn7VpxWXtV6Kz9qxqYk/BsHjDNis/ar0Vl7VpxWftV6Ky9q4KmJPqsHjDMis/aiuhis/aiuOWJ1PpaOM90wook44q9FEnpRRWtRn4pg2y9FEnpV+KJOOKKK4KjPqsG2Xook9KKKK45PU+lot8p//2Q==',
  'base64');
const TINY = ['--image-size', '32', '--bs', '2', '--warmup', '1'];

const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'benchfleet_web_'));
const processes = [];
let grpc = 0;
let http = 0;
let base = '';
let browser = null;
const jobs = {};  // name -> id

function start(name, argv, extraEnv = {}) {
  const log = fs.openSync(path.join(dir, `${name}.log`), 'a');
  const child = spawn(argv[0], argv.slice(1), {
    stdio: ['ignore', log, log], env: { ...process.env, ...extraEnv }, detached: true,
  });
  processes.push({ name, child });
  return child;
}

function tail(name, lines = 30) {
  try {
    return fs.readFileSync(path.join(dir, `${name}.log`), 'utf8').trim().split('\n').slice(-lines).join('\n');
  } catch {
    return '(no log)';
  }
}

async function benchctl(...args) {
  try {
    const { stdout } = await run(BIN.benchctl, ['--server', `127.0.0.1:${grpc}`, ...args], { maxBuffer: 64 << 20 });
    return stdout;
  } catch (error) {
    throw new Error(`benchctl ${args.join(' ')} failed (${error.code}): ${error.stdout}${error.stderr}`);
  }
}

async function api(pathAndQuery) {
  const response = await fetch(`${base}${pathAndQuery}`);
  const text = await response.text();
  if (!response.ok) throw new Error(`GET ${pathAndQuery}: ${response.status} ${text}`);
  return JSON.parse(text);
}

async function waitFor(what, fn, timeoutMs = 60000, everyMs = 200) {
  const deadline = Date.now() + timeoutMs;
  let last;
  while (Date.now() < deadline) {
    try {
      last = await fn();
      if (last) return last;
    } catch (error) {
      last = error;
    }
    await sleep(everyMs);
  }
  throw new Error(`timed out waiting for ${what} (last: ${last instanceof Error ? last.message : JSON.stringify(last)})\n` +
    `benchd:\n${tail('benchd')}`);
}

async function submit(name, args) {
  const out = await benchctl('submit', ...TINY, ...args);
  jobs[name] = out.trim().split('\n')[0].trim();
  assert.match(jobs[name], /^job-/, out);
  return jobs[name];
}

const TERMINAL = ['JOB_STATE_SUCCEEDED', 'JOB_STATE_FAILED', 'JOB_STATE_CANCELLED'];
async function waitEnded(ids, timeoutMs = 120000) {
  return waitFor(`jobs ${ids.join(', ')} to end`, async () => {
    const states = await Promise.all(ids.map((id) => api(`/api/v1/jobs/${id}`)));
    return states.every((s) => TERMINAL.includes(s.state)) ? states : false;
  }, timeoutMs, 300);
}

// A page that records console errors, uncaught exceptions, failed requests, HTTP errors and
// dialogs. An event stream cut when the page moves on (net::ERR_ABORTED) is not a failure.
async function newPage() {
  const context = await browser.newContext({ viewport: { width: 1280, height: 800 } });
  const page = await context.newPage();
  const problems = [];
  const dialogs = [];
  page.on('console', (message) => {
    if (message.type() === 'error') problems.push(`console: ${message.text()}`);
  });
  page.on('pageerror', (error) => problems.push(`page error: ${error.message}`));
  page.on('requestfailed', (request) => {
    const failure = request.failure() ? request.failure().errorText : '';
    if (failure.includes('ERR_ABORTED') && request.url().includes('/events')) return;
    problems.push(`request failed: ${request.url()} ${failure}`);
  });
  page.on('response', (response) => {
    if (response.status() >= 400) problems.push(`HTTP ${response.status()}: ${response.url()}`);
  });
  page.on('dialog', async (dialog) => {
    dialogs.push(dialog.message());
    await dialog.dismiss();
  });
  return { page, problems, dialogs, close: () => context.close() };
}

async function open(page, hash) {
  await page.goto(`${base}/${hash}`);
  await page.waitForSelector('main[data-ready="1"]', { timeout: 30000 });
}

async function screenshot(page, name) {
  if (!SHOTS) return;
  fs.mkdirSync(SHOTS, { recursive: true });
  await page.screenshot({ path: path.join(SHOTS, `${name}.png`) });
}

// The tables of `benchctl results --format markdown`: {title: [[cells of a row]...]}, header
// row first; a line outside a table (a "no 1-GPU cell" note) under {note: [line]}.
function markdownTables(text) {
  const tables = {};
  let title = null;
  for (const line of text.split('\n')) {
    if (line.startsWith('### ')) {
      title = line.slice(4);
      tables[title] = [];
    } else if (title && line.startsWith('|') && !/^\|[-:|]+\|$/.test(line.replace(/\s/g, ''))) {
      tables[title].push(line.slice(1, -1).split('|').map((cell) => cell.trim()));
    } else if (line.trim() && !line.startsWith('|')) {
      tables[line] = ['note'];
    }
  }
  return tables;
}

// The page's results grids in the same shape: each table under the h2/h3 before it, each
// note (and the footnote on runs with failing checks) as {its text: ['note']}.
async function shownTables(page) {
  return page.evaluate(() => {
    const out = {};
    const footnote = document.querySelector('#results-footnote');
    if (footnote) out[footnote.textContent] = ['note'];
    for (const section of document.querySelectorAll('section.grid-section')) {
      let title = null;
      for (const node of section.children) {
        if (node.matches('h2, h3')) title = node.textContent;
        if (node.matches('p.grid-note')) out[node.textContent] = ['note'];
        if (node.matches('table.grid') && title) {
          out[title] = [...node.querySelectorAll('tr')].map((tr) => [...tr.children].map((cell) => cell.textContent.trim()));
        }
      }
    }
    return out;
  });
}

before(async () => {
  for (const file of Object.values(BIN)) assert.ok(fs.existsSync(file), `${file} is missing`);
  assert.ok(fs.existsSync(CHROMIUM), `${CHROMIUM} is missing (apt-get install chromium; deploy/install-deps.sh)`);
  grpc = await freePort();
  http = await freePort();
  base = `http://127.0.0.1:${http}`;
  start('benchd', [BIN.benchd, '--listen', `127.0.0.1:${grpc}`, '--http', `127.0.0.1:${http}`,
    '--db', path.join(dir, 'bench.db')]);
  await waitFor('benchd\'s web port', async () => (await fetch(`${base}/readyz`)).ok, 30000, 100);
  // Two classes of four images, below the CPU agent's --data-root.
  const data = path.join(dir, 'data');
  for (const name of ['cat', 'dog']) {
    fs.mkdirSync(path.join(data, name), { recursive: true });
    for (let i = 0; i < 4; ++i) fs.writeFileSync(path.join(data, name, `${i}.jpg`), JPEG);
  }
  start('agent-cpu', [BIN.agent, '--controller', `127.0.0.1:${grpc}`, '--name', 'cpu-node', '--address', '127.0.0.1',
    '--bench-train', BIN.train, '--cpu-slots', '2', '--state-dir', path.join(dir, 'state-cpu'), '--label', 'rack=a1',
    '--data-root', data]);
  start('agent-gpu', [BIN.agent, '--controller', `127.0.0.1:${grpc}`, '--name', 'gpu-node', '--address', '127.0.0.1',
    '--bench-train', BIN.train, '--nvml-library', BIN.fakeNvml, '--gpu-ranks-on-cpu', '--gpu-sample-hz', '10',
    '--state-dir', path.join(dir, 'state-gpu'), '--label', 'rack=b2']);
  await waitFor('two connected agents', async () => (await api('/api/v1/agents')).agents.filter((a) => a.connected).length === 2);
  const launching = chromium.launch({ executablePath: CHROMIUM, headless: true, args: ['--no-sandbox'] });

  // Finished jobs for every view: two 1-slot runs and a 2-slot run of one configuration
  // (a cell with n=2 and a scaling row), and one run on each fake GPU.
  await submit('script', ['--gpus', '1', '--iters', '6', '--node', 'cpu-node', '--name', SCRIPT_NAME, '--label', 'suite=web']);
  await submit('second', ['--gpus', '1', '--iters', '6', '--node', 'cpu-node', '--label', 'suite=web']);
  await submit('gpu0', ['--gpus', '1', '--iters', '8', '--node', 'gpu-node', '--name', 'fake gpu run']);
  await submit('gpu1', ['--gpus', '1', '--iters', '8', '--node', 'gpu-node', '--name', 'fake gpu run']);
  await submit('two', ['--gpus', '2', '--iters', '6', '--node', 'cpu-node', '--name', 'two slots']);
  // Real data, then again on synthetic data (a grid of its own: another model).
  await submit('real', ['--model', 'resnet18', '--gpus', '1', '--iters', '6', '--node', 'cpu-node', '--data', 'imagefolder',
    '--data-path', data, '--data-vs-compute', '--name', 'data vs compute']);
  browser = await launching;
  const ended = await waitEnded(Object.values(jobs));
  for (const job of ended) assert.equal(job.state, 'JOB_STATE_SUCCEEDED', `${job.id}: ${job.reason}\n${tail('agent-cpu')}`);
  // A tight baseline, so the grid carries a verdict.
  await benchctl('baseline', jobs.script, '--lower', '1', '--upper', '1');
});

after(async () => {
  if (browser) await browser.close();
  for (const { child } of processes.reverse()) {
    try { process.kill(-child.pid, 'SIGTERM'); } catch { /* gone */ }
  }
  await sleep(300);
  for (const { child } of processes) {
    try { process.kill(-child.pid, 'SIGKILL'); } catch { /* gone */ }
  }
  if (!process.env.BENCH_WEB_KEEP) fs.rmSync(dir, { recursive: true, force: true });
});

test('every view loads without console errors or failed requests', async () => {
  const { page, problems, close } = await newPage();
  const views = {
    fleet: '#/fleet',
    jobs: '#/jobs',
    job: `#/job/${jobs.two}`,
    results: '#/results',
    variability: '#/variability',
    history: '#/history?model=resnet50&devices=1&precision=fp32&batch_size=2',
    compare: `#/compare?a=${jobs.script}&b=${jobs.gpu0}`,
    screening: '#/screening',
  };
  for (const [name, hash] of Object.entries(views)) {
    await open(page, hash);
    assert.equal(await page.getAttribute('main', 'data-view'), name);
    assert.equal(await page.locator('main .error').count(), 0, `${name}: ${await page.locator('main .error').allTextContents()}`);
    if (name !== 'job') await screenshot(page, name);
  }
  // Content, not just an absence of errors.
  await open(page, views.variability);
  assert.equal(await page.locator('table.variability tbody tr').count(), 2, 'one row per fake GPU');
  await open(page, views.compare);
  assert.ok(await page.locator('tr.diff[data-field="device kind"]').count() === 1, 'the differing device kind is marked');
  await open(page, views.history);
  assert.ok(await page.locator('section.history-config').count() >= 3, 'cpu, Fake GPU 0 and Fake GPU 1 configurations');
  await open(page, views.job);
  assert.ok(Number(await page.getAttribute('#job-chart', 'data-points')) > 0, 'a finished job has a chart');
  // The fleet's event stream delivers.
  await open(page, views.fleet);
  await page.waitForFunction(() => Number(document.querySelector('main').dataset.fleetEvents || 0) >= 2, null, { timeout: 10000 });
  assert.equal(await page.locator('section.agent').count(), 2);
  assert.equal(await page.locator('section.agent[data-agent="gpu-node"] table.gpus tbody tr').count(), 2);
  assert.deepEqual(problems, []);
  await close();
});

test('the results grid shows exactly what benchctl results prints', async () => {
  const { page, problems, close } = await newPage();
  const requests = [];
  page.on('request', (request) => requests.push(new URL(request.url()).pathname));
  await open(page, '#/results');
  const expected = markdownTables(await benchctl('results', '--format', 'markdown'));
  assert.ok(Object.keys(expected).length >= 5, JSON.stringify(expected));
  // The page's tables under the same titles: header row, then body rows, cell by cell.
  assert.deepEqual(await shownTables(page), expected);
  // benchd rendered them: the page read the grids view, not the cells it once formatted.
  assert.ok(requests.includes('/api/v1/results/grids'), requests.join(' '));
  assert.ok(!requests.includes('/api/v1/results'), requests.join(' '));
  // Figures as the API gives them are benchctl's JSON, byte for byte.
  const json = await benchctl('results', '--format', 'json');
  assert.equal(await (await fetch(`${base}/api/v1/results`)).text(), json);
  const cells = JSON.parse(json);
  assert.ok(cells.some((cell) => cell.baseline && cell.baseline.verdict !== 'BASELINE_VERDICT_UNSPECIFIED'), 'a baseline verdict');
  // Each cell carries its figure: the 2-slot cell's median, as the JSON has it.
  const two = cells.find((cell) => cell.model === 'resnet50' && cell.device_kind === 'cpu' && cell.devices === 2);
  const shown = Number(await page.getAttribute('table.grid.medians a[href*="devices=2"] >> xpath=..', 'data-value'));
  assert.ok(Math.abs(shown - two.median_images_per_second) <= 1e-9 * two.median_images_per_second, `${shown} vs ${two.median_images_per_second}`);
  // A cell links to its runs.
  await page.click('table.grid.medians a[href*="devices=2"]');
  await page.waitForSelector('main[data-view="jobs"][data-ready="1"]');
  assert.deepEqual(await page.locator('table.jobs tbody tr').evaluateAll((rows) => rows.map((r) => r.dataset.job)), [jobs.two]);
  // --strict: without the runs whose checks failed, as benchctl results --strict.
  await open(page, '#/results?strict=1');
  assert.equal(await page.isChecked('#results-strict'), true);
  const strict = await benchctl('results', '--strict', '--format', 'markdown');
  assert.ok(!strict.includes('failing checks'), strict);
  if (strict.startsWith('no results')) {
    assert.equal(await page.locator('#no-results').count(), 1);
  } else {
    assert.deepEqual(await shownTables(page), markdownTables(strict));
  }
  // Another metric: the fake GPUs' power, as benchctl results --metric power.
  await open(page, '#/results?metric=power');
  assert.equal(await page.inputValue('select[name="metric"]'), 'power');
  const power = markdownTables(await benchctl('results', '--metric', 'power', '--format', 'markdown'));
  assert.ok(Object.keys(power).some((title) => title.endsWith(': median GPU power (W)')), JSON.stringify(power));
  assert.deepEqual(await shownTables(page), power);
  assert.deepEqual(problems, []);
  await close();
});

test('the job view shows data vs compute as benchctl status words it', async () => {
  const status = await benchctl('status', jobs.real);
  const line = status.split('\n').find((l) => l.startsWith('vs compute:'));
  assert.ok(line, status);
  const expected = line.replace(/^vs compute:\s*/, '');
  assert.match(expected, /^\d+\.\d\d of compute: /, status);
  const { page, problems, close } = await newPage();
  await open(page, `#/job/${jobs.real}`);
  const shown = await page.evaluate(() => {
    const dt = [...document.querySelectorAll('main .kv dt')].find((d) => d.textContent === 'vs compute');
    return dt ? dt.nextElementSibling.textContent : null;
  });
  assert.equal(shown, expected);
  // A job without --data-vs-compute has no such line, as in benchctl status.
  await open(page, `#/job/${jobs.second}`);
  assert.equal(await page.locator('main .kv dt', { hasText: 'vs compute' }).count(), 0);
  assert.deepEqual(problems, []);
  await close();
});

test('the job view shows the diagnosis as benchctl status prints it', async () => {
  // benchd diagnoses a job just after it ends.
  await waitFor('the two-slot job\'s diagnosis', async () => Boolean((await api(`/api/v1/jobs/${jobs.two}`)).diagnosis));
  const status = await benchctl('status', jobs.two);
  const lines = status.split('\n');
  const from = lines.indexOf('diagnosis:');
  const to = lines.indexOf('history:');
  assert.ok(from >= 0 && to > from, status);
  const expected = lines.slice(from + 1, to).map((l) => l.replace(/^ {2}/, '')).join('\n') + '\n';
  assert.match(expected, /^stragglers: /, status);
  assert.match(expected, /\nchecks: \d+ pass, \d+ fail, \d+ not applicable\n/, status);
  const { page, problems, close } = await newPage();
  await open(page, `#/job/${jobs.two}`);
  await page.waitForSelector('#job-diagnosis', { timeout: 30000 });
  assert.equal(await page.textContent('#job-diagnosis'), expected);
  assert.deepEqual(problems, []);
  await close();
});

test('a deep link reproduces its view', async () => {
  const first = await newPage();
  await open(first.page, '#/jobs');
  await first.page.selectOption('select[name="state"]', 'SUCCEEDED');
  await first.page.fill('input[name="label"]', 'suite=web');
  await first.page.click('form.filters button[type="submit"]');
  await first.page.waitForFunction(() => location.hash.includes('state=SUCCEEDED'));
  await first.page.waitForSelector('main[data-ready="1"]');
  const url = first.page.url();
  assert.match(url, /#\/jobs\?state=SUCCEEDED&.*label=suite%3Dweb/);
  const rows = await first.page.locator('table.jobs tbody tr').evaluateAll((r) => r.map((x) => x.dataset.job));
  assert.deepEqual(new Set(rows), new Set([jobs.script, jobs.second]));

  const second = await newPage();  // a fresh browser context: nothing but the URL carries over
  await second.page.goto(url);
  await second.page.waitForSelector('main[data-ready="1"]');
  assert.equal(await second.page.inputValue('select[name="state"]'), 'SUCCEEDED');
  assert.equal(await second.page.inputValue('input[name="label"]'), 'suite=web');
  assert.deepEqual(await second.page.locator('table.jobs tbody tr').evaluateAll((r) => r.map((x) => x.dataset.job)), rows);
  await open(second.page, `#/compare?a=${jobs.script}&b=${jobs.second}`);
  assert.equal(await second.page.inputValue('input[name="a"]'), jobs.script);
  assert.ok(await second.page.locator('table.compare').isVisible());
  assert.deepEqual([...first.problems, ...second.problems], []);
  await first.close();
  await second.close();
});

test('a job named <script>alert(1)</script> renders as text', async () => {
  const { page, problems, dialogs, close } = await newPage();
  for (const hash of ['#/jobs', `#/job/${jobs.script}`, `#/compare?a=${jobs.script}&b=${jobs.second}`]) {
    await open(page, hash);
    await page.getByText(SCRIPT_NAME, { exact: true }).first().waitFor({ state: 'visible' });
    assert.equal(await page.locator('main script').count(), 0, `${hash}: a <script> element in the view`);
  }
  await sleep(300);
  assert.deepEqual(dialogs, []);
  assert.equal(await page.evaluate(() => typeof window.alertFired), 'undefined');
  assert.deepEqual(problems, []);
  await close();
});

test('the job view follows a running job live', async () => {
  // A long job on a fake GPU (images/s, power and SM clock on one axis) and one queued
  // behind it (it wants both GPUs).
  const live = await submit('live', ['--gpus', '1', '--iters', '2000', '--node', 'gpu-node', '--name', 'live run']);
  const queued = await submit('queued', ['--gpus', '2', '--iters', '6', '--node', 'gpu-node', '--name', 'waits for both GPUs']);
  try {
    const { page, problems, close } = await newPage();
    await open(page, `#/job/${live}`);
    const points = async () => Number(await page.getAttribute('#job-chart', 'data-points')) || 0;
    const iterations = async () => Number(await page.getAttribute('#job-chart', 'data-iterations')) || 0;
    await page.waitForFunction(() => Number(document.querySelector('#job-chart').dataset.iterations || 0) >= 3, null, { timeout: 60000 });
    const before = { points: await points(), iterations: await iterations() };
    await page.waitForFunction((n) => Number(document.querySelector('#job-chart').dataset.iterations || 0) >= n + 5,
      before.iterations, { timeout: 30000 });
    assert.ok(await points() > before.points, 'the chart drew more points');
    assert.equal(await page.locator('.live').first().textContent(), 'live');
    // GPU readings join the chart: power and SM clock series in the legend.
    await page.waitForFunction(() => [...document.querySelectorAll('.u-legend .u-label')].some((l) => l.textContent.includes(' W')),
      null, { timeout: 15000 });
    // The data source shows as benchctl status says it (synthetic here).
    assert.ok(await page.evaluate(() => [...document.querySelectorAll('main .kv dt')].some((dt) =>
      dt.textContent === 'data' && dt.nextElementSibling.textContent === 'synthetic')), 'a data row');
    // The status follows too (progress is read again while samples arrive).
    await page.waitForFunction(() => [...document.querySelectorAll('main .kv dt')].some((dt) =>
      dt.textContent === 'iterations' && !dt.nextElementSibling.textContent.startsWith('0 of')), null, { timeout: 15000 });
    if (SHOTS) {  // a chart worth looking at
      await page.waitForFunction(() => Number(document.querySelector('#job-chart').dataset.iterations || 0) >= 40, null, { timeout: 30000 });
      await page.evaluate(() => document.querySelector('#job-chart').scrollIntoView({ block: 'center' }));
    }
    await screenshot(page, 'job');

    await open(page, '#/jobs');
    const waiting = page.locator(`table.queue tr:has(a[href="#/job/${queued}"])`);
    assert.equal(await waiting.count(), 1, 'the queued job is in the queue');
    assert.ok((await waiting.textContent()).length > 0);
    await screenshot(page, 'jobs');
    await open(page, '#/fleet');
    await page.waitForSelector(`section.agent[data-agent="gpu-node"] a[href="#/job/${live}"]`, { timeout: 10000 });
    await page.waitForFunction(() => Number(document.querySelector('main').dataset.fleetEvents || 0) >= 2, null, { timeout: 10000 });
    await screenshot(page, 'fleet');
    assert.deepEqual(problems, []);
    await close();
  } finally {
    await benchctl('cancel', queued).catch(() => {});
    await benchctl('cancel', live).catch(() => {});
  }
});

test('the screening view shows a benchctl screen as benchctl screen --show prints it', async () => {
  const id = (await benchctl('screen', '--node', 'gpu-node', '--id', 'web-screen', '--iters', '8', ...TINY)).trim();
  assert.equal(id, 'web-screen');
  await waitFor('the screening\'s jobs to end', async () => {
    const found = ((await api('/api/v1/screenings')).screenings || []).find((s) => s.screening_id === id);
    return found && Number(found.pending || 0) === 0;
  }, 120000, 250);
  // Exit 0 (every GPU ok) or 3 (one flagged: two fake GPUs on a shared CPU may differ).
  let shown = '';
  try {
    shown = (await run(BIN.benchctl, ['--server', `127.0.0.1:${grpc}`, 'screen', '--show', id])).stdout;
  } catch (error) {
    assert.equal(error.code, 3, `${error.stdout}${error.stderr}`);
    shown = error.stdout;
  }
  const { page, problems, close } = await newPage();
  await open(page, '#/screening');
  assert.equal(await page.locator('table.screenings tbody tr').count(), 1);
  await page.click(`table.screenings a[href="#/screening/${id}"]`);
  await page.waitForSelector('main[data-ready="1"] table.screening-gpus');
  assert.equal(await page.locator('table.screening-gpus tbody tr').count(), 2, 'one row per fake GPU');
  assert.equal(await page.locator('table.screening-nodes tbody tr').count(), 1);
  assert.equal(await page.locator('pre.screening-text').textContent(), shown);
  await screenshot(page, 'screening');
  assert.deepEqual(problems, []);
  await close();
});
