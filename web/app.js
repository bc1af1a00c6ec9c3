// Arbiter dashboard: reads /ui/api/* of `arbiter serve` with the bearer token kept in
// sessionStorage and renders the page named by the URL hash. Live, without page reloads: it
// watches pods through the Kubernetes API (/api/v1/...pods?watch=true, per namespace for a
// tenant) and refreshes on each change; it also polls every few seconds (quota and queue
// changes that touch no pod). No framework, no network beyond the daemon.
'use strict';

const TOKEN_KEY = 'arbiterToken';
const REFRESH_MS = 5000;  // polling, besides the watch
const SVG = 'http://www.w3.org/2000/svg';
const PALETTE = 7;  // --c0 .. --c6 (Okabe-Ito)

// ---------------------------------------------------------------- DOM helpers (text only)
function h(tag, attrs, ...kids) {
  const e = document.createElement(tag);
  for (const [k, v] of Object.entries(attrs || {})) {
    if (v === null || v === undefined || v === false) continue;
    e.setAttribute(k, v === true ? '' : String(v));
  }
  for (const k of kids.flat(Infinity)) {
    if (k === null || k === undefined) continue;
    e.append(k instanceof Node ? k : document.createTextNode(String(k)));
  }
  return e;
}
function s(tag, attrs, ...kids) {
  const e = document.createElementNS(SVG, tag);
  for (const [k, v] of Object.entries(attrs || {})) e.setAttribute(k, String(v));
  for (const k of kids) e.append(k instanceof Node ? k : document.createTextNode(String(k)));
  return e;
}
function colourOf(ns) {
  let x = 0;
  for (const ch of ns) x = (x * 31 + ch.charCodeAt(0)) >>> 0;
  return `var(--c${x % PALETTE})`;
}
function gpus(milli) { return (milli / 1000).toLocaleString('en', {maximumFractionDigits: 3}); }
function quantity(v) { return v === undefined || v === null ? '–' : String(v); }

// ---------------------------------------------------------------- API
function authHeaders() {
  const token = sessionStorage.getItem(TOKEN_KEY);
  return token ? {Authorization: `Bearer ${token}`} : {};
}

async function api(path) {
  const headers = authHeaders();
  const r = await fetch(`/ui/api/${path}`, {headers, cache: 'no-store'});
  if (r.status === 401) throw Object.assign(new Error('unauthorized'), {status: 401});
  if (!r.ok) throw Object.assign(new Error(`HTTP ${r.status}`), {status: r.status});
  return r.json();
}

// ---------------------------------------------------------------- pages
// A horizontal bar: `parts` [{value, colour, label}] out of `total`; its text alternative says
// the same in words.
function bar(parts, total, label) {
  const w = 300, hgt = 14;
  const svg = s('svg', {width: w, height: hgt, viewBox: `0 0 ${w} ${hgt}`, role: 'img',
                        'aria-label': label});
  svg.append(s('title', {}, label));
  svg.append(s('rect', {x: 0, y: 0, width: w, height: hgt, fill: 'var(--free)',
                        stroke: '#999'}));
  let x = 0;
  for (const p of parts) {
    const pw = total > 0 ? Math.min(w - x, (p.value / total) * w) : 0;
    svg.append(s('rect', {x, y: 0, width: pw, height: hgt, fill: p.colour}));
    x += pw;
  }
  return svg;
}

function gpuCell(node, g) {
  const label = g.occupants.length === 0 ? 'free' :
    g.occupants.map((o) => o.hidden ? `another tenant (${gpus(o.milli)})`
                                     : `${o.namespace}/${o.name} (${gpus(o.milli)})`).join(', ');
  const alt = `${node.name} GPU ${g.index}: ${label}`;
  const parts = g.occupants.map((o) => ({value: o.milli,
                                         colour: o.hidden ? '#888' : colourOf(o.namespace)}));
  const svg = bar(parts, 1000, alt);
  svg.setAttribute('width', '100%');
  return h('div', {class: 'gpu', 'data-gpu': `${node.name}/${g.index}`},
           h('div', {}, `GPU ${g.index}`), svg,
           h('div', {class: 'occupant'}, label));
}

// GPUs allocated at each refresh since this page was opened (the daemon keeps no history).
const history = [];
const HISTORY_POINTS = 300;

function sparkline(points, capacity) {
  const w = 300, hgt = 40;
  const label = points.length < 2 ? 'Allocation history: not enough samples yet' :
    `GPUs allocated over the last ${points.length} samples: from ${gpus(points[0])} to ` +
    `${gpus(points[points.length - 1])} of ${gpus(capacity)} (min ${gpus(Math.min(...points))}, ` +
    `max ${gpus(Math.max(...points))})`;
  const svg = s('svg', {width: w, height: hgt, viewBox: `0 0 ${w} ${hgt}`, role: 'img',
                        'aria-label': label, id: 'allocation-history'});
  svg.append(s('title', {}, label));
  svg.append(s('rect', {x: 0, y: 0, width: w, height: hgt, fill: 'var(--free)', stroke: '#999'}));
  if (points.length >= 2 && capacity > 0) {
    const step = w / (HISTORY_POINTS - 1);
    const xy = points.map((p, i) => `${(i * step).toFixed(1)},${(hgt - (p / capacity) * hgt).toFixed(1)}`);
    svg.append(s('polyline', {points: xy.join(' '), fill: 'none', stroke: 'var(--c0)',
                              'stroke-width': 2}));
  }
  return svg;
}

function renderPool(d) {
  const a = d.gpuMilli.allocated, c = d.gpuMilli.capacity;
  history.push(a);
  if (history.length > HISTORY_POINTS) history.shift();
  const namespaces = new Set();
  let hidden = false;
  for (const n of d.nodes) for (const g of n.gpus) for (const o of g.occupants)
    if (o.hidden) hidden = true; else namespaces.add(o.namespace);
  return [
    h('h2', {}, 'Pool'),
    h('p', {}, `GPUs allocated: ${gpus(a)} of ${gpus(c)} `,
      bar([{value: a, colour: 'var(--c0)'}], c, `${gpus(a)} of ${gpus(c)} GPUs allocated`)),
    h('p', {}, 'Since this page opened: ', sparkline(history, c)),
    h('p', {class: 'legend'}, 'Legend: ',
      [...namespaces].sort().map((ns) => h('span', {},
        h('span', {class: 'swatch', style: `background:${colourOf(ns)}`}), ns)),
      hidden ? h('span', {}, h('span', {class: 'swatch', style: 'background:#888'}),
                 'another tenant') : null,
      h('span', {}, h('span', {class: 'swatch', style: 'background:var(--free)'}), 'free')),
    d.nodes.map((n) => h('div', {class: 'node', 'data-node': n.name},
      h('h3', {}, n.name, n.schedulable ? '' : ' (cordoned)'),
      h('div', {class: 'meta'}, `${n.gpuModel || 'no GPU'} · CPU ${n.cpuMilli.used / 1000}` +
        ` of ${n.cpuMilli.capacity / 1000} cores · memory ` +
        `${(n.memoryBytes.used / 2 ** 30).toFixed(0)} of ` +
        `${(n.memoryBytes.capacity / 2 ** 30).toFixed(0)} GiB`),
      h('div', {class: 'gpus'}, n.gpus.map((g) => gpuCell(n, g))))),
  ];
}

// What a tenant's running workloads request of resource `r`, in the quota's units.
function usedOf(t, r) {
  if (r === 'nvidia.com/gpu') return gpus(t.used.gpuMilli);
  if (r === 'cpu') return String(t.used.cpuMilli / 1000);
  if (r === 'memory') return `${(t.used.memoryBytes / 2 ** 30).toFixed(1)}Gi`;
  return String(t.requests[r] || 0);  // MIG profiles and other extended resources: counts
}

function renderTenants(d) {
  if (d.tenants.length === 0) return [h('h2', {}, 'Tenants'), h('p', {}, 'No namespaces visible.')];
  return [
    h('h2', {}, 'Tenants'),
    d.tenants.map((t) => {
      const q = t.elasticQuota;
      const minG = q && q.min['nvidia.com/gpu'] !== undefined ? Number(q.min['nvidia.com/gpu']) * 1000 : null;
      const maxG = q && q.max['nvidia.com/gpu'] !== undefined ? Number(q.max['nvidia.com/gpu']) * 1000 : null;
      const used = t.used.gpuMilli, borrowed = t.borrowedGpuMilli;
      const scale = Math.max(maxG || 0, used, 1000);
      const alt = `${t.namespace}: ${gpus(used)} GPUs used (${gpus(borrowed)} borrowed)` +
                  (q ? `, min ${gpus(minG)}, max ${gpus(maxG)}` : ', no ElasticQuota');
      return h('section', {class: 'node', 'data-tenant': t.namespace},
        h('h3', {}, t.namespace),
        h('p', {}, `${t.running} running, ${t.pending} pending, ${t.preemptions} ` +
          `preemption${t.preemptions === 1 ? '' : 's'} suffered by live workloads. `, alt),
        bar([{value: used - borrowed, colour: colourOf(t.namespace)},
             {value: borrowed, colour: 'var(--c5)'}], scale, alt),
        h('p', {class: 'legend'},
          h('span', {}, h('span', {class: 'swatch', style: `background:${colourOf(t.namespace)}`}),
            'GPUs within its quota'),
          h('span', {}, h('span', {class: 'swatch', style: 'background:var(--c5)'}),
            'GPUs borrowed from the cohort'),
          h('span', {}, `bar: 0 to ${gpus(scale)} GPUs`)),
        h('div', {class: 'scroll'}, h('table', {},
          h('caption', {}, 'Quota'),
          h('tr', {}, h('th', {}, 'Quota'), h('th', {}, 'Resource'), h('th', {}, 'Used'),
            h('th', {}, 'Min / hard'), h('th', {}, 'Max')),
          q ? Object.keys(q.min).map((r) => h('tr', {},
            h('td', {}, `ElasticQuota ${q.name}`), h('td', {}, r),
            h('td', {}, usedOf(t, r)),
            h('td', {}, quantity(q.min[r])), h('td', {}, quantity(q.max[r])))) : [],
          t.resourceQuotas.map((rq) => Object.keys(rq.hard).map((r) => h('tr', {},
            h('td', {}, `ResourceQuota ${rq.name}`), h('td', {}, r),
            h('td', {}, quantity(rq.used[r])), h('td', {}, quantity(rq.hard[r])),
            h('td', {}, '')))))),
        t.pendingWorkloads.length ? h('div', {class: 'scroll'}, h('table', {},
          h('caption', {}, 'Pending'),
          h('tr', {}, h('th', {}, 'Workload'), h('th', {}, 'Reason'), h('th', {}, 'Message')),
          t.pendingWorkloads.map((p) => h('tr', {},
            h('td', {}, h('a', {href: `#workload/${t.namespace}/${p.name}`}, p.name)),
            h('td', {class: 'reason'}, p.reason), h('td', {}, p.message))))) : null);
    }),
  ];
}

function renderQueue(d) {
  return [
    h('h2', {}, 'Queue'),
    h('p', {}, `${d.pending.length} of ${d.total} pending workloads visible, in queue order ` +
      '(priority, then submission).'),
    h('div', {class: 'scroll'}, h('table', {id: 'queue'},
      h('tr', {}, ['#', 'Workload', 'Priority', 'Reason', 'Message', 'Nominated node', 'Waiting']
        .map((c) => h('th', {}, c))),
      d.pending.map((p) => h('tr', {'data-workload': `${p.namespace}/${p.name}`},
        h('td', {}, p.position),
        h('td', {}, h('a', {href: `#workload/${p.namespace}/${p.name}`}, `${p.namespace}/${p.name}`)),
        h('td', {}, p.priority), h('td', {class: 'reason'}, p.reason), h('td', {}, p.message),
        h('td', {}, p.nominatedNode || '–'), h('td', {}, `${p.pendingSeconds} s`))))),
  ];
}

function renderWorkload(d) {
  return [
    h('h2', {}, `Workload ${d.namespace}/${d.name}`),
    h('p', {}, 'Phase: ', h('strong', {id: 'phase', 'data-phase': d.phase}, d.phase),
      d.node ? ` on ${d.node}` : '', d.nominatedNode ? ` (nominated: ${d.nominatedNode})` : ''),
    d.reason ? h('p', {}, 'Why pending: ', h('span', {class: 'reason'}, d.reason), ' — ',
                 d.message) : null,
    h('h3', {}, 'Events'),
    h('ol', {class: 'timeline'}, d.events.map((e) => h('li', {},
      h('time', {datetime: e.time}, e.time),
      h('span', {class: e.type === 'Warning' ? 'warning' : ''}, e.reason), ' ', e.message))),
  ];
}

function renderBills(d) {
  if (!d.available) return [h('h2', {}, 'Bills'), h('p', {id: 'bills-unavailable'}, d.why)];
  return [h('h2', {}, 'Bills')];
}

const PAGES = {
  pool: {path: () => 'pool', render: renderPool},
  tenants: {path: () => 'tenants', render: renderTenants},
  queue: {path: () => 'queue', render: renderQueue},
  bills: {path: () => 'bills', render: renderBills},
  workload: {
    path: (ns, name) => `workload?namespace=${encodeURIComponent(ns)}&name=${encodeURIComponent(name)}`,
    render: renderWorkload,
  },
};

// ---------------------------------------------------------------- shell
let timer = null;
let watching = 0;  // open pod watches
let watchAbort = null;

// A refresh soon (changes come in bursts: one refresh for a burst).
function soon() {
  clearTimeout(timer);
  timer = setTimeout(refresh, 150);
}

// Watches pods (all namespaces, or each of `namespaces`) and refreshes on every change;
// reconnects after an error.
function watchPods(namespaces) {
  if (watchAbort) watchAbort.abort();
  watchAbort = new AbortController();
  const signal = watchAbort.signal;
  const paths = namespaces === null ? ['/api/v1/pods?watch=true'] :
    namespaces.map((ns) => `/api/v1/namespaces/${encodeURIComponent(ns)}/pods?watch=true`);
  for (const path of paths) {
    (async () => {
      while (!signal.aborted) {
        try {
          const r = await fetch(path, {headers: authHeaders(), signal, cache: 'no-store'});
          if (!r.ok) throw new Error(`HTTP ${r.status}`);
          const reader = r.body.getReader();
          watching++;
          try {
            for (;;) {
              const {done} = await reader.read();
              if (done) break;
              soon();
            }
          } finally {
            watching--;
          }
        } catch (e) {
          if (signal.aborted) return;
        }
        await new Promise((res) => setTimeout(res, 2000));
      }
    })();
  }
}

function route() {
  const [page, ...args] = (location.hash.slice(1) || 'pool').split('/').map(decodeURIComponent);
  return PAGES[page] ? {page, args} : {page: 'pool', args: []};
}

async function refresh() {
  clearTimeout(timer);
  const {page, args} = route();
  for (const a of document.querySelectorAll('nav a')) {
    if (a.dataset.page === page) a.setAttribute('aria-current', 'page');
    else a.removeAttribute('aria-current');
  }
  try {
    const data = await api(PAGES[page].path(...args));
    const view = document.getElementById('view');
    view.replaceChildren(...PAGES[page].render(data).flat().filter((x) => x));
    view.dataset.page = page;
    document.getElementById('updated').textContent =
      `Updated ${new Date().toISOString().slice(11, 19)} UTC (` +
      (watching > 0 ? 'watching pods, ' : '') + `polling every ${REFRESH_MS / 1000} s)`;
  } catch (e) {
    if (e.status === 401) return showLogin('That token is not known to the daemon.');
    document.getElementById('view').replaceChildren(h('p', {role: 'alert'}, `Error: ${e.message}`));
  }
  timer = setTimeout(refresh, REFRESH_MS);
}

function showLogin(message) {
  clearTimeout(timer);
  if (watchAbort) watchAbort.abort();
  sessionStorage.removeItem(TOKEN_KEY);
  document.getElementById('login').hidden = false;
  document.getElementById('nav').hidden = true;
  document.getElementById('logout').hidden = true;
  document.getElementById('view').replaceChildren();
  document.getElementById('who').textContent = '';
  document.getElementById('login-error').textContent = message || '';
}

async function start() {
  try {
    const who = await api('whoami');
    document.getElementById('login').hidden = true;
    document.getElementById('nav').hidden = false;
    document.getElementById('logout').hidden = !sessionStorage.getItem(TOKEN_KEY);
    document.getElementById('who').textContent = who.user ?
      `${who.user}: ${who.all ? 'all namespaces' : [...who.namespaces].join(', ') || 'no namespaces'}` :
      'no authentication';
    watchPods(who.all ? null : [...who.namespaces]);
    refresh();
  } catch (e) {
    showLogin(sessionStorage.getItem(TOKEN_KEY) ? 'That token is not known to the daemon.' : '');
  }
}

document.getElementById('login').addEventListener('submit', (ev) => {
  ev.preventDefault();
  sessionStorage.setItem(TOKEN_KEY, document.getElementById('token').value.trim());
  start();
});
document.getElementById('logout').addEventListener('click', () => showLogin(''));
window.addEventListener('hashchange', refresh);
start();
