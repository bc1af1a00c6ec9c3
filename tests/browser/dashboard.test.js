// The dashboard of `arbiter serve` in a real browser: Debian's Chromium, headless, driven by
// playwright-core (pinned in package.json). Starts `arbiter serve` on a free loopback port with
// a token file (--token-file: the API and the dashboard authenticate the same tokens) over HTTPS
// (a CA and a server certificate made with the openssl CLI: kubectl sends tokens only to https),
// applies examples/pool.yaml with the real kubectl as the admin, then:
//   - a tenant token logs in and sees only its own namespace (pool, tenants, queue);
//   - an unknown token is refused at the login;
//   - a pending workload's page turns Running after the pod blocking it is deleted, without a
//     page reload (the page watches pods through the API, and polls);
//   - a tenant watches its high-priority pod, applied while the page is open, wait for the
//     low-priority pod it preempts and then run, without a reload (a second daemon, a 2-GPU pool);
//   - the tenants page shows the quota over time, fair share and preemptions; the pool page the
//     utilisation over time, idle cost and MIG slices; the queue page the nominated node;
//   - the bills page of a daemon with a ledger (from `arbiter sim --ledger`) shows the month's
//     invoices, and its CSV download equals `arbiter invoice -o csv` byte for byte, its FOCUS
//     download `arbiter ledger export` (a tenant's: `--namespace` its own);
//   - refreshes fetch only the history's newer samples (?since=SEQ) and append them;
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
  'team-x-token,xavier,4,"arbiter:editors:team-x"',
].join('\n') + '\n';

// The preemption scene: team-y's low-priority batch job holds both GPUs of n0 and takes 4 s to
// shut down; team-x's urgent pod (high priority) will preempt it.
const SMALL_POOL = `
apiVersion: v1
kind: Namespace
metadata: {name: team-x}
---
apiVersion: v1
kind: Namespace
metadata: {name: team-y}
---
apiVersion: v1
kind: Node
metadata:
  name: n0
  labels: {nvidia.com/gpu.product: NVIDIA-A100-SXM4-80GB}
status:
  capacity: {cpu: "16", memory: 64Gi, nvidia.com/gpu: "2"}
---
apiVersion: scheduling.k8s.io/v1
kind: PriorityClass
metadata: {name: low}
value: 10
---
apiVersion: scheduling.k8s.io/v1
kind: PriorityClass
metadata: {name: high}
value: 1000
---
apiVersion: scheduling.k8s.io/v1
kind: PriorityClass
metadata: {name: mid}
value: 100
---
apiVersion: v1
kind: Pod
metadata:
  name: batch
  namespace: team-y
  annotations: {arbiter.dev/shutdown-time: 4s}
spec:
  priorityClassName: low
  terminationGracePeriodSeconds: 30
  containers:
  - name: main
    image: busybox
    resources:
      requests: {cpu: "1", nvidia.com/gpu: "2"}
      limits: {nvidia.com/gpu: "2"}
`;
const URGENT = `
apiVersion: v1
kind: Pod
metadata: {name: urgent, namespace: team-x}
spec:
  priorityClassName: high
  activeDeadlineSeconds: 3600
  containers:
  - name: main
    image: busybox
    resources:
      requests: {cpu: "1", nvidia.com/gpu: "2"}
      limits: {nvidia.com/gpu: "2"}
`;
// Below urgent, which it cannot preempt, above the requeued batch: it heads the queue and gets a
// backfill reservation at urgent's end (its activeDeadlineSeconds).
const NEXT = URGENT.replace('name: urgent', 'name: next').replace('high', 'mid');

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

async function startServe(dir, extra = []) {
  fs.mkdirSync(dir, {recursive: true});
  fs.writeFileSync(path.join(dir, 'tokens.csv'), TOKENS);
  makePki(dir);
  const logPath = path.join(dir, 'serve.log');
  const out = fs.openSync(logPath, 'w');
  const proc = spawn(ARBITER, ['serve', '--data', path.join(dir, 'data'), '--listen',
                               '127.0.0.1:0', '--token-file', path.join(dir, 'tokens.csv'),
                               '--tls-cert-file', path.join(dir, 'server.pem'),
                               '--tls-private-key-file', path.join(dir, 'server.key'), ...extra],
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

async function stopServe(serve) {
  serve.proc.kill('SIGTERM');
  await until('arbiter serve to stop', () => serve.proc.exitCode !== null, 30000)
    .catch(() => serve.proc.kill('SIGKILL'));
}

// A tenant sees its pending workload become Running after a preemption, without a reload.
async function preemptionLive(browser, dir) {
  const serve = await startServe(dir);
  const base = `https://127.0.0.1:${serve.port}`;
  try {
    const kc = writeKubeconfig(dir, serve.port);
    fs.writeFileSync(path.join(dir, 'small.yaml'), SMALL_POOL);
    fs.writeFileSync(path.join(dir, 'urgent.yaml'), URGENT);
    fs.writeFileSync(path.join(dir, 'next.yaml'), NEXT);
    kubectl(kc, 'apply', '-f', path.join(dir, 'small.yaml'));
    kubectl(kc, 'wait', '-n', 'team-y', '--for=condition=Ready', 'pod/batch', '--timeout=30s');
    const context = await browser.newContext({viewport: {width: 1400, height: 1000},
                                              ignoreHTTPSErrors: true});
    const page = await context.newPage();
    await login(page, base, 'team-x-token');
    await page.waitForSelector('#who:has-text("xavier: team-x")');
    await page.click('nav a[data-page=queue]');
    await page.waitForSelector('#queue');
    await page.waitForSelector('#updated:has-text("watching pods")');
    await page.evaluate(() => { window.__sameDocument = true; });
    kubectl(kc, 'apply', '-f', path.join(dir, 'urgent.yaml'));
    const applied = Date.now();
    log('applied team-x/urgent (high priority) while the queue page is open');
    // Pending, nominated to the node its victim is leaving, then Running.
    const row = '#queue [data-workload="team-x/urgent"]';
    await page.waitForSelector(row);
    const cells = await page.$$eval(`${row} td`, (tds) => tds.map((td) => td.textContent));
    log('queue row:', cells.join(' | '));
    assert(cells.includes('n0'), `nominated node n0 in ${cells}`);
    const count = await page.textContent('#queue-count');
    assert(/pending workloads you can see/.test(count), `the queue's count: ${count}`);
    await page.screenshot({path: path.join(SHOTS, 'queue-preempting.png'), fullPage: true});
    await page.click(`${row} a`);
    await page.waitForSelector('#phase[data-phase=Pending]');
    await page.screenshot({path: path.join(SHOTS, 'workload-preempting.png'), fullPage: true});
    await page.waitForSelector('#phase[data-phase=Running]', {timeout: DEADLINE_MS});
    log(`team-x/urgent shown Running ${Date.now() - applied} ms after the apply ` +
        '(its victim shuts down in 4 s)');
    const events = await page.textContent('ol.timeline');
    assert(/preempt/i.test(events), `the timeline tells of the preemption: ${events}`);
    assert.strictEqual(await page.evaluate(() => window.__sameDocument), true,
                       'the page was not reloaded');
    await noRenderingLeaks(page);
    await page.screenshot({path: path.join(SHOTS, 'workload-after-preemption.png'), fullPage: true});
    // The queue shows the backfill reservation of a pod that must wait for urgent's end.
    kubectl(kc, 'apply', '-f', path.join(dir, 'next.yaml'));
    await page.click('nav a[data-page=queue]');
    const reserved = await page.waitForSelector(
      '#queue [data-workload="team-x/next"] .reservation:has-text("reserved on n0 from")');
    log('reservation:', await reserved.textContent());
    await page.screenshot({path: path.join(SHOTS, 'queue-reservation.png'), fullPage: true});
    // The tenants page counts the preemption it caused; the victim's name stays hidden.
    await page.click('nav a[data-page=tenants]');
    await page.waitForSelector('[data-tenant="team-x"] [data-fact=preemptions]:has-text("1 caused")');
    const text = await page.textContent('#view');
    assert(!text.includes('team-y/batch'), 'the victim of another tenant is not named');
    assert(text.includes('another tenant'), 'the victim shows as another tenant');
    await noRenderingLeaks(page);
    await page.screenshot({path: path.join(SHOTS, 'tenants-preemption.png'), fullPage: true});
    await context.close();
  } finally {
    await stopServe(serve);
  }
}

// The bills page on a daemon whose ledger `arbiter sim --ledger` wrote: invoices by month with
// their lines, and a CSV download equal, byte for byte, to `arbiter invoice -o csv` (all
// invoices for the admin; a tenant's own for its token).
async function billsPage(browser, dir) {
  fs.mkdirSync(dir, {recursive: true});
  const ledger = path.join(dir, 'ledger.db');
  execFileSync(ARBITER, ['sim', '-f', path.join(ROOT, 'examples', 'pool.yaml'), '--ledger', ledger],
               {encoding: 'utf8'});
  const month = '2026-01';
  const cli = (...args) => execFileSync(ARBITER, ['invoice', '--db', ledger, '--month', month,
                                                  '-o', 'csv', ...args]);
  const serve = await startServe(dir, ['--ledger', ledger]);
  const base = `https://127.0.0.1:${serve.port}`;
  try {
    const context = await browser.newContext({viewport: {width: 1400, height: 1000},
                                              acceptDownloads: true, ignoreHTTPSErrors: true});
    const page = await context.newPage();
    const focusCli = (...args) => execFileSync(ARBITER, ['ledger', 'export', '--db', ledger,
                                                          '--month', month, ...args]);
    const download = async (button = '#download-csv') => {
      const [d] = await Promise.all([page.waitForEvent('download'), page.click(button)]);
      return fs.readFileSync(await d.path());
    };
    await login(page, base, 'admin-token');
    await page.waitForSelector('#who:has-text("admin: all namespaces")');
    await page.click('nav a[data-page=bills]');
    await page.waitForSelector('[data-invoice="team-a"]');
    const shown = await page.$$eval('[data-invoice]', (es) => es.map((e) => e.dataset.invoice));
    log('invoices shown to the admin:', shown.join(' '));
    assert(['team-a', 'team-b', 'team-c'].every((ns) => shown.includes(ns)), `every tenant: ${shown}`);
    await noRenderingLeaks(page);
    await page.screenshot({path: path.join(SHOTS, 'bills.png'), fullPage: true});
    const all = await download();
    assert(all.equals(cli()), 'the admin\'s CSV is `arbiter invoice -o csv`, byte for byte');
    log(`admin CSV: ${all.length} bytes, equal to arbiter invoice -o csv`);
    const focus = await download('#download-focus');
    assert(focus.equals(focusCli()), 'the admin\'s FOCUS CSV is `arbiter ledger export`, byte for byte');
    log(`admin FOCUS CSV: ${focus.length} bytes, equal to arbiter ledger export --month ${month}`);

    await page.click('#logout');
    await login(page, base, 'team-b-token');
    await page.waitForSelector('#who:has-text("bob: team-b")');
    await page.click('nav a[data-page=bills]');
    await page.waitForSelector('[data-invoice="team-b"]');
    const mine = await page.$$eval('[data-invoice]', (es) => es.map((e) => e.dataset.invoice));
    assert.deepStrictEqual(mine, ['team-b']);
    await noRenderingLeaks(page);
    const own = await download();
    assert(own.equals(cli('--namespace', 'team-b')),
           'a tenant\'s CSV is `arbiter invoice --namespace NS -o csv`, byte for byte');
    log(`team-b CSV: ${own.length} bytes, equal to arbiter invoice --namespace team-b -o csv`);
    const ownFocus = await download('#download-focus');
    assert(ownFocus.equals(focusCli('--namespace', 'team-b')),
           'a tenant\'s FOCUS CSV is `arbiter ledger export --namespace NS`, byte for byte');
    const rows = ownFocus.toString().trim().split('\n').slice(1);
    assert(rows.length > 0 && rows.every((r) => r.includes(',arbiter,team-b,')), 'team-b rows only');
    log(`team-b FOCUS CSV: ${ownFocus.length} bytes, equal to arbiter ledger export --namespace team-b`);
    await page.screenshot({path: path.join(SHOTS, 'bills-team-b.png'), fullPage: true});
    await context.close();
  } finally {
    await stopServe(serve);
  }
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
    // Answers to /ui/api/history?since=SEQ that appended newer samples (incremental refreshes).
    let appended = 0;
    page.on('response', async (r) => {
      if (!/\/ui\/api\/history\?since=\d+$/.test(r.url())) return;
      try {
        const j = await r.json();
        if (!j.full && j.times.length > 0) appended++;
      } catch (e) { /* the page navigated away */ }
    });

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
    // 'attached', not visible: a flat series is a horizontal line, whose box has no height, and
    // Playwright calls an element without area hidden.
    await page.waitForSelector('#utilisation-nvidia-com-gpu path[data-series=allocated]',
                               {state: 'attached'});
    assert(/Idle now: [0-9.]+ GPUs, [0-9.]+ CNY per hour/.test(poolText),
           `idle capacity is priced with the applied PriceBook: ${poolText.slice(0, 600)}`);
    assert(await page.$('[data-mig="a100-mig-0/0"]'), 'MIG devices are on the map');
    await noRenderingLeaks(page);
    await page.screenshot({path: path.join(SHOTS, 'pool.png'), fullPage: true});

    await page.click('nav a[data-page=tenants]');
    await page.waitForSelector('[data-tenant]');
    const tenants = await page.$$eval('[data-tenant]', (es) => es.map((e) => e.dataset.tenant));
    assert.deepStrictEqual(tenants, ['team-b']);
    await page.waitForSelector('[data-tenant="team-b"] [data-fact=fair-share]:has-text("0.")');
    await page.waitForSelector('#quota-team-b path[data-series=used]', {state: 'attached'});
    const alt = await page.getAttribute('#quota-team-b', 'aria-label');
    assert(alt.includes('used from') && alt.includes('borrowed from'),
           `the quota chart has a text alternative: ${alt}`);
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
    // Refreshes fetch only the samples after the newest the page holds (?since=SEQ) and append
    // them: what the page holds is the daemon's history.
    await until('a refresh that appended newer samples', () => appended > 0);
    const held = await page.evaluate(async () => {
      const mine = {times: history.times, gpu: history.pool.allocated['nvidia.com/gpu']};
      const r = await fetch('/ui/api/history', {headers: authHeaders(), cache: 'no-store'});
      return {mine, all: await r.json()};
    });
    const k = held.mine.times.length;
    assert(k > 1, `the page holds the history (${k} samples)`);
    assert.deepStrictEqual(held.all.times.slice(0, k), held.mine.times,
                           'the appended history has the daemon\'s sample times');
    assert.deepStrictEqual(held.all.pool.allocated['nvidia.com/gpu'].slice(0, k), held.mine.gpu,
                           'the appended history has the daemon\'s allocated GPUs');
    log(`history: ${appended} refreshes appended newer samples; the page holds ${k} samples, ` +
        `the daemon ${held.all.times.length}`);
    // The merge itself: columns a side lacks are nulls there, the ring's capacity is kept, a
    // tenant with no sample left goes, an answer to an older seq is dropped.
    const merged = await page.evaluate(() => {
      const none = {used: {}, min: {}, max: {}, borrowed: {}, lent: {}};
      const old = {seq: 2, capacity: 3, times: [1, 2],
                   pool: {allocated: {cpu: [1, 2]}, used: {}, capacity: {}},
                   tenants: {a: {...none, quota: 'qa', cohort: '', fairShare: ['0', '0'],
                                 used: {cpu: [1, 1]}}}};
      const inc = {seq: 4, capacity: 3, full: false, times: [3, 4],
                   pool: {allocated: {cpu: [3, 4], gpu: [5, 6]}, used: {}, capacity: {}},
                   tenants: {b: {...none, quota: 'qb', cohort: 'c', fairShare: ['0.5', '0.5'],
                                 used: {cpu: [2, 2]}}}};
      return {three: mergeHistory(old, inc, 2), two: mergeHistory(old, {...inc, capacity: 2}, 2),
              stale: mergeHistory(old, inc, 1) === old};
    });
    assert.deepStrictEqual(merged.three.times, [2, 3, 4]);
    assert.deepStrictEqual(merged.three.pool.allocated, {cpu: [2, 3, 4], gpu: [null, 5, 6]});
    assert.deepStrictEqual(merged.three.tenants.a.used, {cpu: [1, null, null]});
    assert.deepStrictEqual(merged.three.tenants.b.fairShare, [null, '0.5', '0.5']);
    assert.strictEqual(merged.three.seq, 4);
    assert.deepStrictEqual(Object.keys(merged.two.tenants), ['b']);
    assert.strictEqual(merged.stale, true);
    await page.click('nav a[data-page=tenants]');
    await page.waitForSelector('#quota-team-a');
    const tw = await page.evaluate(() => document.documentElement.scrollWidth);
    assert(tw <= 800, `no horizontal scrolling on tenants at 800 px (scrollWidth ${tw})`);
    await page.screenshot({path: path.join(SHOTS, 'tenants-800.png'), fullPage: true});
    await stopServe(serve);

    await preemptionLive(browser, path.join(dir, 'preemption'));
    await billsPage(browser, path.join(dir, 'bills'));
    log('PASS');
    fs.rmSync(dir, {recursive: true, force: true});  // kept when the test fails, as evidence
  } finally {
    if (browser) await browser.close();
    if (serve.proc.exitCode === null) await stopServe(serve);
  }
}

main().catch((e) => {
  console.error('[dashboard.test] FAIL:', e && e.stack || e);
  process.exit(1);
});
