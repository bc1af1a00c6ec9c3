// The dashboard of `arbiter serve` in a real browser: Debian's Chromium, headless, driven by
// playwright-core (pinned in package.json). Starts `arbiter serve` on a free loopback port with
// a token file (--token-file: the API and the dashboard authenticate the same tokens) over HTTPS
// (a CA and a server certificate made with the openssl CLI: kubectl sends tokens only to https),
// applies examples/pool.yaml with the real kubectl as the admin, then:
//   - a tenant token logs in and sees only its own namespace (pool, tenants, queue);
//   - an unknown token is refused at the login;
//   - a pending workload's page turns Running after the pod blocking it is deleted, without a
//     page reload (the page watches pods through the API, and polls);
//   - screenshots of each page at 1400 px (and the pool at 800 px) go to docs/screenshots/.
// Waits on conditions with deadlines, never on sleeps alone. Exit code 0 = pass.
'use strict';

const {chromium} = require('playwright-core');
const {spawn, execFileSync} = require('child_process');
const fs = require('fs');
const os = require('os');
const path = require('path');
const assert = require('assert');

const ROOT = path.resolve(__dirname, '..', '..');
const ARBITER = process.env.ARBITER_BINARY || path.join(ROOT, 'build', 'arbiter');
const CHROMIUM = process.env.CHROMIUM || '/usr/bin/chromium';
const SHOTS = process.env.ARBITER_SCREENSHOTS || path.join(ROOT, 'docs', 'screenshots');
const DEADLINE_MS = 30000;

const TOKENS = [
  'admin-token,admin,1,"system:masters"',
  'team-a-token,alice,2,"arbiter:editors:team-a"',
  'team-b-token,bob,3,"arbiter:editors:team-b"',
].join('\n') + '\n';

function log(...a) { console.log('[dashboard.test]', ...a); }

async function until(what, f, ms = DEADLINE_MS) {
  const end = Date.now() + ms;
  let last;
  while (Date.now() < end) {
    try {
      const v = await f();
      if (v) return v;
    } catch (e) { last = e; }
    await new Promise((r) => setTimeout(r, 50));
  }
  throw new Error(`timed out waiting for ${what}${last ? `: ${last.message}` : ''}`);
}

// ca.pem, and server.pem / server.key for 127.0.0.1 signed by it (EC P-256).
function makePki(dir) {
  const f = (name) => path.join(dir, name);
  const ec = ['-newkey', 'ec', '-pkeyopt', 'ec_paramgen_curve:prime256v1', '-nodes'];
  fs.writeFileSync(f('ext.cnf'), 'subjectAltName=IP:127.0.0.1\n');
  const run = (args) => execFileSync('openssl', args, {stdio: ['ignore', 'ignore', 'pipe']});
  run(['req', '-x509', ...ec, '-days', '2', '-subj', '/CN=arbiter-test-ca', '-keyout', f('ca.key'),
       '-out', f('ca.pem')]);
  run(['req', ...ec, '-subj', '/CN=127.0.0.1', '-keyout', f('server.key'), '-out', f('server.csr')]);
  run(['x509', '-req', '-in', f('server.csr'), '-CA', f('ca.pem'), '-CAkey', f('ca.key'),
       '-CAcreateserial', '-days', '2', '-extfile', f('ext.cnf'), '-out', f('server.pem')]);
}

async function startServe(dir) {
  fs.writeFileSync(path.join(dir, 'tokens.csv'), TOKENS);
  makePki(dir);
  const logPath = path.join(dir, 'serve.log');
  const out = fs.openSync(logPath, 'w');
  const proc = spawn(ARBITER, ['serve', '--data', path.join(dir, 'data'), '--listen',
                               '127.0.0.1:0', '--token-file', path.join(dir, 'tokens.csv'),
                               '--tls-cert-file', path.join(dir, 'server.pem'),
                               '--tls-private-key-file', path.join(dir, 'server.key')],
                     {stdio: ['ignore', out, out]});
  const port = await until('arbiter serve to listen', () => {
    if (proc.exitCode !== null) throw new Error(`arbiter serve exited: ${fs.readFileSync(logPath)}`);
    const m = /"address":"127\.0\.0\.1:(\d+)"/.exec(fs.readFileSync(logPath, 'utf8'));
    return m && Number(m[1]);
  });
  return {proc, port, logPath};
}

function kubectl(kubeconfig, ...args) {
  return execFileSync('kubectl', ['--kubeconfig', kubeconfig, ...args], {encoding: 'utf8'});
}

function writeKubeconfig(dir, port) {
  const p = path.join(dir, 'kubeconfig');
  fs.writeFileSync(p, `apiVersion: v1
kind: Config
clusters: [{name: arbiter, cluster: {server: "https://127.0.0.1:${port}",
  certificate-authority: "${path.join(dir, 'ca.pem')}"}}]
users: [{name: admin, user: {token: admin-token}}]
contexts: [{name: arbiter, context: {cluster: arbiter, user: admin}}]
current-context: arbiter
`);
  return p;
}

// A page shows no JavaScript values rendered as text ("[object ...]", "undefined", "NaN").
async function noRenderingLeaks(page) {
  const text = await page.textContent('#view');
  for (const bad of ['[object', 'undefined', 'NaN'])
    assert(!text.includes(bad), `page shows "${bad}": ${text.slice(0, 400)}`);
}

async function login(page, base, token) {
  await page.goto(`${base}/ui/`);
  await page.waitForSelector('#login:not([hidden])');
  await page.fill('#token', token);
  await page.click('#login button[type=submit]');
}

async function main() {
  const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'arbiter-dashboard-'));
  fs.mkdirSync(SHOTS, {recursive: true});
  const serve = await startServe(dir);
  const base = `https://127.0.0.1:${serve.port}`;
  let browser;
  try {
    const kc = writeKubeconfig(dir, serve.port);
    kubectl(kc, 'apply', '--validate=false', '-f', path.join(ROOT, 'examples', 'pool.yaml'));
    log('applied examples/pool.yaml on port', serve.port);

    browser = await chromium.launch({executablePath: CHROMIUM, headless: true,
                                     args: ['--no-sandbox', '--disable-gpu']});
    // The test CA is not the browser's: its certificate errors are ignored (kubectl checks it).
    const context = await browser.newContext({viewport: {width: 1400, height: 1000},
                                              ignoreHTTPSErrors: true});
    const page = await context.newPage();

    // An unknown token is refused at the login.
    await login(page, base, 'no-such-token');
    await page.waitForSelector('#login-error:has-text("not known")');

    // A tenant sees its own namespace only.
    await login(page, base, 'team-b-token');
    await page.waitForSelector('#who:has-text("bob: team-b")');
    await page.waitForSelector('[data-node="a100-0"] .gpu');
    const poolText = await page.textContent('#view');
    assert(poolText.includes('team-b/'), 'pool shows team-b workloads');
    assert(!poolText.includes('team-a/') && !poolText.includes('team-c/'),
           'pool hides other tenants\' workload names');
    assert(poolText.includes('another tenant'), 'other tenants\' devices show as occupied');
    await noRenderingLeaks(page);
    await page.screenshot({path: path.join(SHOTS, 'pool.png'), fullPage: true});

    await page.click('nav a[data-page=tenants]');
    await page.waitForSelector('[data-tenant]');
    const tenants = await page.$$eval('[data-tenant]', (es) => es.map((e) => e.dataset.tenant));
    assert.deepStrictEqual(tenants, ['team-b']);
    await noRenderingLeaks(page);
    await page.screenshot({path: path.join(SHOTS, 'tenants.png'), fullPage: true});

    await page.click('nav a[data-page=queue]');
    await page.waitForSelector('#queue');
    const queued = await page.$$eval('#queue [data-workload]', (es) => es.map((e) => e.dataset.workload));
    assert(queued.every((w) => w.startsWith('team-b/')), `queue shows team-b only: ${queued}`);
    await noRenderingLeaks(page);
    await page.screenshot({path: path.join(SHOTS, 'queue.png'), fullPage: true});

    await page.click('nav a[data-page=bills]');
    await page.waitForSelector('#bills-unavailable');
    await page.screenshot({path: path.join(SHOTS, 'bills.png'), fullPage: true});

    // The admin: every tenant; then a pending workload turns Running without a reload.
    await page.click('#logout');
    await login(page, base, 'admin-token');
    await page.waitForSelector('#who:has-text("admin: all namespaces")');
    await page.click('nav a[data-page=tenants]');
    await until('every tenant', async () => (await page.$$eval('[data-tenant]',
        (es) => es.map((e) => e.dataset.tenant).join(' '))) === 'default team-a team-b team-c');
    await page.click('nav a[data-page=queue]');
    await page.waitForSelector('#queue');
    const pending = await page.$$eval('#queue [data-workload]', (es) => es.map((e) => e.dataset.workload));
    log('pending as admin:', pending.join(' '));
    const target = process.env.DASHBOARD_PENDING || 'team-a/train-a-2';
    const blocker = (process.env.DASHBOARD_BLOCKER || 'team-a/train-a-1').split('/');
    assert(pending.includes(target), `${target} is pending (queue: ${pending})`);
    await page.click(`#queue [data-workload="${target}"] a`);
    await page.waitForSelector('#phase[data-phase=Pending]');
    await page.evaluate(() => { window.__sameDocument = true; });
    await page.waitForSelector('#updated:has-text("watching pods")');
    await page.screenshot({path: path.join(SHOTS, 'workload-pending.png'), fullPage: true});
    kubectl(kc, 'delete', 'pod', '-n', blocker[0], blocker[1], '--grace-period=1', '--wait=false');
    const deleted = Date.now();
    log('deleted', blocker.join('/'));
    await page.waitForSelector('#phase[data-phase=Running]', {timeout: DEADLINE_MS});
    log(`${target} shown Running ${Date.now() - deleted} ms after the delete (grace period 1 s)`);
    assert.strictEqual(await page.evaluate(() => window.__sameDocument), true,
                       'the page was not reloaded');
    await noRenderingLeaks(page);
    await page.screenshot({path: path.join(SHOTS, 'workload.png'), fullPage: true});

    // Readable at 800 px.
    await page.setViewportSize({width: 800, height: 1000});
    await page.click('nav a[data-page=pool]');
    await page.waitForSelector('[data-node="a100-0"] .gpu');
    const overflow = await page.evaluate(() => document.documentElement.scrollWidth);
    assert(overflow <= 800, `no horizontal scrolling at 800 px (scrollWidth ${overflow})`);
    await page.screenshot({path: path.join(SHOTS, 'pool-800.png'), fullPage: true});
    log('PASS');
  } finally {
    if (browser) await browser.close();
    serve.proc.kill('SIGTERM');
    await until('arbiter serve to stop', () => serve.proc.exitCode !== null, 30000)
      .catch(() => serve.proc.kill('SIGKILL'));
  }
}

main().catch((e) => {
  console.error('[dashboard.test] FAIL:', e && e.stack || e);
  process.exit(1);
});
