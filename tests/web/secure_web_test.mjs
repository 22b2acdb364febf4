// The web page with security on, in Debian's Chromium: benchd serves HTTPS with a
// certificate and a token file made by deploy/pki (the operators' scripts), and
//   - the page loads, its API calls are answered 401, and it asks for a token;
//   - a wrong token is refused (the page asks again);
//   - a view token, typed into the form, is kept in the bench_token cookie and the fleet
//     view then loads with its event stream (EventSource sends the cookie) and no error;
//   - node's own client, trusting the fleet's CA, sees the same 401/200 answers.
// Chromium is told to accept the test CA's certificate (ignoreHTTPSErrors): importing a
// CA into headless Chromium needs an NSS database; node's checks verify it properly.
//
// Run by ctest (tests/web/CMakeLists.txt) as
//   BENCHD=... BENCH_SOURCE_DIR=... node --test --test-reporter=spec tests/web/secure_web_test.mjs
// With BENCH_SCREENSHOTS=DIR it also saves the token prompt as DIR/token.png.
import { test, before, after } from 'node:test';
import assert from 'node:assert/strict';
import { spawn, execFileSync } from 'node:child_process';
import { createRequire } from 'node:module';
import fs from 'node:fs';
import https from 'node:https';
import os from 'node:os';
import path from 'node:path';
import { freePort, sleep } from './harness.mjs';

const require = createRequire(new URL('../../web/package.json', import.meta.url));
const { chromium } = require('playwright-core');

const BENCHD = process.env.BENCHD;
const SOURCE = process.env.BENCH_SOURCE_DIR;
const CHROMIUM = process.env.CHROMIUM || '/usr/bin/chromium';
const PKI = path.join(SOURCE || '.', 'deploy', 'pki');

const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'benchfleet_secure_web_'));
const ca = path.join(dir, 'ca');
let benchd = null;
let browser = null;
let base = '';
let viewToken = '';

function pki(script, ...args) {
  return execFileSync(path.join(PKI, script), args, { encoding: 'utf8', stdio: ['ignore', 'pipe', 'ignore'] }).trim();
}

// GET over HTTPS, verifying benchd against the test CA: {status, body}.
function get(pathAndQuery, headers = {}) {
  return new Promise((resolve, reject) => {
    const request = https.get(`${base}${pathAndQuery}`, { ca: fs.readFileSync(path.join(ca, 'ca.pem')), headers },
      (response) => {
        let body = '';
        response.setEncoding('utf8');
        response.on('data', (chunk) => { body += chunk; });
        response.on('end', () => resolve({ status: response.statusCode, body }));
      });
    request.on('error', reject);
  });
}

before(async () => {
  assert.ok(BENCHD && fs.existsSync(BENCHD), 'BENCHD is not set to the built benchd');
  assert.ok(SOURCE && fs.existsSync(PKI), 'BENCH_SOURCE_DIR is not set to the source tree');
  assert.ok(fs.existsSync(CHROMIUM), `${CHROMIUM} is missing (apt-get install chromium; deploy/install-deps.sh)`);
  pki('make-ca.sh', ca, '2');
  pki('make-server-cert.sh', ca, 'benchd', 'DNS:localhost,IP:127.0.0.1');
  const tokens = path.join(dir, 'tokens');
  viewToken = pki('new-token.sh', 'view', 'browser', tokens);
  assert.match(viewToken, /^[0-9a-f]{64}$/);
  const grpc = await freePort();
  const http = await freePort();
  base = `https://localhost:${http}`;
  const log = fs.openSync(path.join(dir, 'benchd.log'), 'a');
  benchd = spawn(BENCHD, ['--listen', `127.0.0.1:${grpc}`, '--http', `127.0.0.1:${http}`,
    '--db', path.join(dir, 'bench.db'), '--tls-cert', path.join(ca, 'benchd.pem'),
    '--tls-key', path.join(ca, 'benchd.key'), '--client-ca', path.join(ca, 'ca.pem'), '--tokens', tokens],
  { stdio: ['ignore', log, log] });
  const deadline = Date.now() + 30000;
  for (;;) {
    try {
      if ((await get('/readyz')).status === 200) break;
    } catch (error) {
      if (Date.now() > deadline) throw new Error(`benchd did not answer: ${fs.readFileSync(path.join(dir, 'benchd.log'), 'utf8')}`);
    }
    await sleep(100);
  }
  browser = await chromium.launch({ executablePath: CHROMIUM, headless: true, args: ['--no-sandbox'] });
});

after(async () => {
  if (browser) await browser.close();
  if (benchd) benchd.kill('SIGTERM');
  if (!process.env.BENCH_WEB_KEEP) fs.rmSync(dir, { recursive: true, force: true });
});

test('node, trusting the fleet CA, gets 401 without a token and 200 with one', async () => {
  const none = await get('/api/v1/agents');
  assert.equal(none.status, 401);
  assert.equal(JSON.parse(none.body).error.code, 'UNAUTHENTICATED');
  assert.equal((await get('/metrics')).status, 401);
  assert.equal((await get('/api/v1/agents', { Authorization: `Bearer ${viewToken}` })).status, 200);
  assert.equal((await get('/metrics', { Cookie: `bench_token=${viewToken}` })).status, 200);
  assert.equal((await get('/healthz')).status, 200);
});

test('the page asks for a token, refuses a wrong one, and loads with a view token', async () => {
  const context = await browser.newContext({ ignoreHTTPSErrors: true });
  const page = await context.newPage();
  const problems = [];
  page.on('pageerror', (error) => problems.push(`page error: ${error.message}`));
  // Each response is counted for the document that asked for it: a request the previous
  // document (refused, with no or a wrong token) sent just before a reload can be answered
  // after it, on a loaded machine, and must not be taken for the new document's.
  let generation = 0;
  const askedIn = new WeakMap();
  page.on('framenavigated', (frame) => {
    if (frame === page.mainFrame()) generation += 1;
  });
  page.on('request', (request) => askedIn.set(request, generation));
  const statuses = [];
  page.on('response', (response) => {
    if (askedIn.get(response.request()) !== generation) return;
    statuses.push([new URL(response.url()).pathname, response.status()]);
  });

  await page.goto(`${base}/#/fleet`);
  await page.waitForSelector('#token-form', { timeout: 30000 });
  assert.ok(statuses.some(([p, s]) => p.startsWith('/api/') && s === 401), JSON.stringify(statuses));
  assert.match(await page.textContent('#token-form'), /no credentials/);
  if (process.env.BENCH_SCREENSHOTS) {
    await page.setViewportSize({ width: 1280, height: 400 });
    await page.screenshot({ path: path.join(process.env.BENCH_SCREENSHOTS, 'token.png') });
  }

  await page.fill('#token-input', 'not-a-token');
  await Promise.all([page.waitForNavigation(), page.click('#token-form button')]);
  await page.waitForSelector('#token-form', { timeout: 30000 });

  statuses.length = 0;
  await page.fill('#token-input', viewToken);
  await Promise.all([page.waitForNavigation(), page.click('#token-form button')]);
  await page.waitForSelector('main[data-ready="1"]', { timeout: 30000 });
  assert.equal(await page.$('#token-form'), null);
  assert.equal(await page.$('main .error'), null, await page.textContent('main'));
  const cookies = await context.cookies();
  const cookie = cookies.find((c) => c.name === 'bench_token');
  assert.ok(cookie && cookie.secure && cookie.sameSite === 'Strict', JSON.stringify(cookies));
  // The fleet view's live stream is an EventSource: it carries the cookie, not a header.
  const deadline = Date.now() + 10000;
  while (!statuses.some(([p]) => p === '/api/v1/fleet/events') && Date.now() < deadline) await sleep(100);
  const stream = statuses.find(([p]) => p === '/api/v1/fleet/events');
  assert.ok(stream, `no fleet event stream: ${JSON.stringify(statuses)}`);
  assert.equal(stream[1], 200);
  assert.ok(statuses.every(([, s]) => s < 400), JSON.stringify(statuses));
  assert.deepEqual(problems, []);
  await context.close();
});
