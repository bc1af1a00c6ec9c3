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

// ---------------------------------------------------------------- charts over time
// Amount in a resource's canonical unit (milli-CPU, bytes, milli-GPU, counts) as text.
function amount(r, v) {
  if (v === null || v === undefined) return '–';
  if (r === 'nvidia.com/gpu') return gpus(v);
  if (r === 'cpu') return (v / 1000).toLocaleString('en', {maximumFractionDigits: 3});
  if (r === 'memory') return `${(v / 2 ** 30).toLocaleString('en', {maximumFractionDigits: 1})}Gi`;
  return String(v);
}
function unitOf(r) {
  return {'nvidia.com/gpu': 'GPUs', cpu: 'cores', memory: 'memory'}[r] || r.replace('nvidia.com/', '');
}
function clock(ms) { return new Date(ms).toISOString().slice(11, 19); }

// Series are drawn with a colour AND a dash pattern, so they differ without colour too.
const DASHES = ['', '6 3', '2 3', '8 3 2 3', '1 2'];

// A step chart of `series` [{label, values (one per time, null: absent), colour, dash}] at
// `times` (Unix ms), each value held until the next sample and the newest until `now`. Its text
// alternative: the aria-label (first, newest, min, max of each series) and a table of the
// samples (newest 20) in a <details>.
function lineChart({times, series, now, fmt, title, id}) {
  const w = 640, hgt = 150, left = 54, bottom = 18, top = 6;
  const t0 = times.length ? times[0] : now, t1 = Math.max(now, t0 + 1);
  let max = 0;
  for (const sr of series) for (const v of sr.values) if (v !== null && v > max) max = v;
  if (max <= 0) max = 1;
  const X = (t) => left + ((t - t0) / (t1 - t0)) * (w - left - 4);
  const Y = (v) => top + (1 - v / max) * (hgt - top - bottom);
  const describe = (sr) => {
    const vs = sr.values.filter((v) => v !== null);
    if (!vs.length) return `${sr.label}: no samples`;
    return `${sr.label} from ${fmt(vs[0])} to ${fmt(vs[vs.length - 1])} ` +
      `(min ${fmt(Math.min(...vs))}, max ${fmt(Math.max(...vs))})`;
  };
  const label = times.length === 0 ? `${title}: no samples yet` :
    `${title}, ${clock(t0)} to ${clock(t1)} UTC, ${times.length} samples: ` +
    series.map(describe).join('; ');
  const svg = s('svg', {viewBox: `0 0 ${w} ${hgt}`, width: '100%', role: 'img',
                        'aria-label': label, class: 'chart', ...(id ? {id} : {})});
  svg.append(s('title', {}, label));
  svg.append(s('rect', {x: left, y: top, width: w - left - 4, height: hgt - top - bottom,
                        fill: 'var(--free)', stroke: '#999'}));
  for (const [v, text] of [[0, fmt(0)], [max, fmt(max)]]) {
    svg.append(s('text', {x: left - 4, y: Y(v) + 4, 'text-anchor': 'end', class: 'axis'}, text));
  }
  svg.append(s('text', {x: left, y: hgt - 4, class: 'axis'}, clock(t0)));
  svg.append(s('text', {x: w - 4, y: hgt - 4, 'text-anchor': 'end', class: 'axis'},
               `${clock(t1)} UTC`));
  series.forEach((sr, k) => {
    let d = '';
    for (let i = 0; i < times.length; ++i) {
      const v = sr.values[i];
      if (v === null || v === undefined) continue;
      const next = i + 1 < times.length ? times[i + 1] : t1;
      d += `${d && sr.values[i - 1] !== null && sr.values[i - 1] !== undefined ? 'L' : 'M'}` +
           `${X(times[i]).toFixed(1)},${Y(v).toFixed(1)}L${X(next).toFixed(1)},${Y(v).toFixed(1)}`;
    }
    if (d) svg.append(s('path', {d, fill: 'none', stroke: sr.colour, 'stroke-width': 2,
                                 'stroke-dasharray': sr.dash ?? DASHES[k % DASHES.length],
                                 'data-series': sr.label}));
  });
  // Legend entries: a short line in the series' colour and dash, then its name.
  const legend = h('p', {class: 'legend'}, series.map((sr, k) => {
    const sw = s('svg', {width: 28, height: 10, 'aria-hidden': 'true'});
    sw.append(s('line', {x1: 0, y1: 5, x2: 28, y2: 5, stroke: sr.colour, 'stroke-width': 2,
                         'stroke-dasharray': sr.dash ?? DASHES[k % DASHES.length]}));
    return h('span', {}, sw, ' ', sr.label);
  }));
  const rows = [];
  for (let i = Math.max(0, times.length - 20); i < times.length; ++i)
    rows.push(h('tr', {}, h('td', {}, `${clock(times[i])} UTC`),
                series.map((sr) => h('td', {}, sr.values[i] === null ? '–' : fmt(sr.values[i])))));
  const table = h('details', {class: 'chart-table'},
    h('summary', {}, `${title}: table of the samples` +
      (times.length > 20 ? ' (newest 20)' : '')),
    h('div', {class: 'scroll'}, h('table', {},
      h('tr', {}, h('th', {}, 'Time'), series.map((sr) => h('th', {}, sr.label))),
      rows.reverse())));
  return h('figure', {class: 'over-time'}, svg, legend, table);
}

// The daemon's history (/ui/api/history), kept between refreshes: fetched whole once, then only
// the samples after its newest (?since=SEQ), appended.
let history = null;

// `history` with the answer `inc` of ?since=`since` appended (columns a side lacks are nulls
// there), the oldest beyond the ring's capacity dropped; `inc` itself when the daemon sent all
// (full). An answer to an older `since` (a refresh overtaken by another) is dropped: the next
// refresh asks from the newer seq.
function mergeHistory(old, inc, since) {
  if (!old || inc.full) return inc;
  if (old.seq !== since) return old;
  const n0 = old.times.length, n1 = inc.times.length;
  const cols = (a, b) => {
    const out = {};
    for (const k of new Set([...Object.keys(a || {}), ...Object.keys(b || {})]))
      out[k] = [...((a && a[k]) || Array(n0).fill(null)), ...((b && b[k]) || Array(n1).fill(null))];
    return out;
  };
  const tenants = {};
  for (const ns of new Set([...Object.keys(old.tenants), ...Object.keys(inc.tenants)])) {
    const a = old.tenants[ns], b = inc.tenants[ns];
    const t = {quota: (b || a).quota, cohort: (b || a).cohort,
               fairShare: cols({x: a && a.fairShare}, {x: b && b.fairShare}).x};
    for (const f of ['used', 'min', 'max', 'borrowed', 'lent']) t[f] = cols(a && a[f], b && b[f]);
    tenants[ns] = t;
  }
  const pool = {};
  for (const f of ['allocated', 'used', 'capacity']) pool[f] = cols(old.pool[f], inc.pool[f]);
  const merged = {...inc, full: false, times: [...old.times, ...inc.times], pool, tenants};
  const drop = merged.times.length - merged.capacity;
  if (drop <= 0) return merged;
  const trim = (o) => Object.fromEntries(Object.entries(o).map(([k, v]) => [k, v.slice(drop)]));
  merged.times = merged.times.slice(drop);
  for (const f of Object.keys(pool)) pool[f] = trim(pool[f]);
  for (const [ns, t] of Object.entries(tenants)) {
    t.fairShare = t.fairShare.slice(drop);
    if (t.fairShare.every((v) => v === null)) { delete tenants[ns]; continue; }
    for (const f of ['used', 'min', 'max', 'borrowed', 'lent']) t[f] = trim(t[f]);
  }
  return merged;
}

function column(obj, r) { return (obj && obj[r]) || history.times.map(() => null); }

function utilisation(r) {
  const p = history.pool;
  return lineChart({
    times: history.times, now: Date.now(), fmt: (v) => amount(r, v),
    title: `${unitOf(r)}: allocated and used of capacity`, id: `utilisation-${r.replace(/[^a-z0-9]/gi, '-')}`,
    series: [
      {label: 'capacity', values: column(p.capacity, r), colour: '#555', dash: '2 3'},
      {label: 'allocated', values: column(p.allocated, r), colour: 'var(--c0)', dash: ''},
      {label: 'used', values: column(p.used, r), colour: 'var(--c1)', dash: '6 3'},
    ]});
}

function idleCost(idle) {
  if (!idle.priceBook) return h('p', {id: 'idle-cost'}, `Idle capacity: ${idle.why}.`);
  const cur = idle.currency;
  return h('section', {id: 'idle-cost'},
    h('h3', {}, 'Idle capacity and its cost'),
    h('p', {}, `Idle now: ${idle.nowGpus} GPUs, ${idle.nowCostPerHour} ${cur} per hour. ` +
      `Since ${clock(idle.since)} UTC: ${idle.gpuHours} idle GPU-hours, ` +
      `${idle.cost} ${cur} (PriceBook ${idle.priceBook}).`),
    h('div', {class: 'scroll'}, h('table', {},
      h('tr', {}, ['GPU model', 'Idle now (GPUs)', 'Idle GPU-hours', `Price per GPU-hour (${cur})`,
                   `Cost (${cur})`].map((c) => h('th', {}, c))),
      idle.byModel.map((m) => h('tr', {}, h('td', {}, m.model || 'unknown'),
        h('td', {}, m.nowGpus), h('td', {}, m.gpuHours),
        h('td', {}, m.pricePerGpuHour ?? 'no price'), h('td', {}, m.cost ?? '–'))))));
}

// A MIG device: its slices, each free or held by a workload (the engine counts slices per node;
// the map fills devices in order).
function migCell(node, m, i) {
  const name = (o) => o === null ? 'free' : o.hidden ? 'another tenant' : `${o.namespace}/${o.name}`;
  const held = m.slots.filter((o) => o !== null).length;
  const alt = `${node.name} MIG device ${i} (${m.profile}): ${held} of ${m.slots.length} slices ` +
    `used` + (held ? `: ${m.slots.filter((o) => o !== null).map(name).join(', ')}` : '');
  const w = 300, hgt = 14, sw = w / m.slots.length;
  const svg = s('svg', {width: '100%', height: hgt, viewBox: `0 0 ${w} ${hgt}`, role: 'img',
                        'aria-label': alt});
  svg.append(s('title', {}, alt));
  m.slots.forEach((o, k) => svg.append(s('rect', {x: k * sw, y: 0, width: sw, height: hgt,
    fill: o === null ? 'var(--free)' : o.hidden ? '#888' : colourOf(o.namespace),
    stroke: '#fff'})));
  const names = [...new Set(m.slots.filter((o) => o !== null).map(name))];
  return h('div', {class: 'gpu mig', 'data-mig': `${node.name}/${i}`},
           h('div', {}, `MIG ${i} · ${m.profile}`), svg,
           h('div', {class: 'occupant'}, `${held}/${m.slots.length} slices` +
             (names.length ? `: ${names.join(', ')}` : ' free')));
}

function renderPool(d) {
  const a = d.gpuMilli.allocated, c = d.gpuMilli.capacity;
  const namespaces = new Set();
  let hidden = false;
  for (const n of d.nodes) for (const g of n.gpus) for (const o of g.occupants)
    if (o.hidden) hidden = true; else namespaces.add(o.namespace);
  return [
    h('h2', {}, 'Pool'),
    h('p', {}, `GPUs allocated: ${gpus(a)} of ${gpus(c)} `,
      bar([{value: a, colour: 'var(--c0)'}], c, `${gpus(a)} of ${gpus(c)} GPUs allocated`)),
    h('h3', {}, 'Utilisation over time'),
    h('div', {class: 'charts'}, ['nvidia.com/gpu', 'cpu', 'memory',
      ...Object.keys(history.pool.capacity).filter((r) => r.startsWith('nvidia.com/mig-'))]
      .filter((r) => history.pool.capacity[r]).map(utilisation)),
    idleCost(history.idle),
    h('h3', {}, 'GPU map'),
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
      h('div', {class: 'gpus'}, n.gpus.map((g) => gpuCell(n, g)),
        (n.migDevices || []).map((m, i) => migCell(n, m, i))))),
  ];
}

// What a tenant's running workloads request of resource `r`, in the quota's units.
function usedOf(t, r) {
  if (r === 'nvidia.com/gpu') return gpus(t.used.gpuMilli);
  if (r === 'cpu') return String(t.used.cpuMilli / 1000);
  if (r === 'memory') return `${(t.used.memoryBytes / 2 ** 30).toFixed(1)}Gi`;
  return String(t.requests[r] || 0);  // MIG profiles and other extended resources: counts
}

// A tenant's quota over time for resource `r`: used, min, max, borrowed, lent.
function quotaChart(ns, r) {
  const t = history.tenants[ns];
  if (!t) return h('p', {}, 'No history yet.');
  return lineChart({
    times: history.times, now: Date.now(), fmt: (v) => amount(r, v),
    title: `${ns}: ${unitOf(r)} over time`, id: `quota-${ns}`,
    series: [
      {label: 'used', values: column(t.used, r), colour: 'var(--c0)', dash: ''},
      {label: 'min', values: column(t.min, r), colour: 'var(--c2)', dash: '2 3'},
      {label: 'max', values: column(t.max, r), colour: '#555', dash: '8 3 2 3'},
      {label: 'borrowed', values: column(t.borrowed, r), colour: 'var(--c5)', dash: '6 3'},
      {label: 'lent', values: column(t.lent, r), colour: 'var(--c3)', dash: '1 2'},
    ]});
}

// This month's bills (/ui/api/bills?month=current), fetched with the tenants page.
let monthBills = null;
function thisMonth() { return new Date().toISOString().slice(0, 7); }

function costLine(ns) {
  const b = monthBills;
  if (!b) return null;
  if (!b.available) return h('span', {'data-fact': 'cost'}, `Cost this month: ${b.why}`);
  const inv = b.invoices.find((i) => i.namespace === ns);
  if (!inv) return h('span', {'data-fact': 'cost'}, `Cost this month (${thisMonth()}): nothing billed yet`);
  return h('span', {'data-fact': 'cost'}, `Cost so far this month (${thisMonth()}): `,
    h('strong', {}, `${inv.total} ${inv.currency}`),
    ` (request track ${inv.requestTotal}, usage track ${inv.usageTotal}, credits ${inv.creditTotal})`);
}

function preemptionRows(t) {
  const name = (x) => x === null ? 'another tenant' : x;
  return h('div', {class: 'scroll'}, h('table', {},
    h('caption', {}, 'Recent preemptions (newest last)'),
    h('tr', {}, ['Time', 'Type', 'Victim', 'By'].map((c) => h('th', {}, c))),
    t.recentPreemptions.map((p) => h('tr', {}, h('td', {}, p.time), h('td', {}, p.type),
      h('td', {}, name(p.victim)), h('td', {}, p.by === undefined ? '–' : name(p.by))))));
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
      const lent = t.lent['nvidia.com/gpu'] || 0;
      const scale = Math.max(maxG || 0, used, 1000);
      const alt = `${t.namespace}: ${gpus(used)} GPUs used (${gpus(borrowed)} borrowed, ` +
                  `${gpus(lent)} lent)` +
                  (q ? `, min ${gpus(minG)}, max ${gpus(maxG)}` : ', no ElasticQuota');
      return h('section', {class: 'node', 'data-tenant': t.namespace},
        h('h3', {}, t.namespace),
        h('p', {}, `${t.running} running, ${t.pending} pending. `, alt, '.'),
        h('p', {class: 'facts'},
          h('span', {'data-fact': 'fair-share'}, 'Fair share: ',
            h('strong', {}, t.fairShare === null ? 'not in a cohort' : t.fairShare),
            t.fairShare === null ? '' : ' (weighted dominant share of what the cohort lends)'),
          h('span', {'data-fact': 'preemptions'}, 'Preemptions: ',
            h('strong', {}, `${t.preemptionsSuffered} suffered`), ', ',
            h('strong', {}, `${t.preemptionsCaused} caused`)),
          costLine(t.namespace)),
        bar([{value: used - borrowed, colour: colourOf(t.namespace)},
             {value: borrowed, colour: 'var(--c5)'}], scale, alt),
        h('p', {class: 'legend'},
          h('span', {}, h('span', {class: 'swatch', style: `background:${colourOf(t.namespace)}`}),
            'GPUs within its quota'),
          h('span', {}, h('span', {class: 'swatch', style: 'background:var(--c5)'}),
            'GPUs borrowed from the cohort'),
          h('span', {}, `bar: 0 to ${gpus(scale)} GPUs`)),
        q || history.tenants[t.namespace] ? quotaChart(t.namespace, 'nvidia.com/gpu') : null,
        h('div', {class: 'scroll'}, h('table', {},
          h('caption', {}, 'Quota'),
          h('tr', {}, ['Quota', 'Resource', 'Used', 'Min / hard', 'Max', 'Borrowed', 'Lent']
            .map((c) => h('th', {}, c))),
          q ? Object.keys(q.min).map((r) => h('tr', {},
            h('td', {}, `ElasticQuota ${q.name}`), h('td', {}, r),
            h('td', {}, usedOf(t, r)),
            h('td', {}, quantity(q.min[r])), h('td', {}, quantity(q.max[r])),
            h('td', {}, amount(r, t.borrowed[r] || 0)), h('td', {}, amount(r, t.lent[r] || 0)))) : [],
          t.resourceQuotas.map((rq) => Object.keys(rq.hard).map((r) => h('tr', {},
            h('td', {}, `ResourceQuota ${rq.name}`), h('td', {}, r),
            h('td', {}, quantity(rq.used[r])), h('td', {}, quantity(rq.hard[r])),
            h('td', {}, ''), h('td', {}, ''), h('td', {}, '')))))),
        t.recentPreemptions.length ? preemptionRows(t) : null,
        t.pendingWorkloads.length ? h('div', {class: 'scroll'}, h('table', {},
          h('caption', {}, 'Pending'),
          h('tr', {}, h('th', {}, 'Workload'), h('th', {}, 'Reason'), h('th', {}, 'Message')),
          t.pendingWorkloads.map((p) => h('tr', {},
            h('td', {}, h('a', {href: `#workload/${t.namespace}/${p.name}`}, p.name)),
            h('td', {class: 'reason'}, p.reason), h('td', {}, p.message))))) : null);
    }),
  ];
}

// "14:20 UTC" today, else the date too.
function clockOrDate(rfc3339) {
  const t = new Date(rfc3339);
  const today = new Date().toISOString().slice(0, 10);
  const iso = t.toISOString();
  return iso.slice(0, 10) === today ? `${iso.slice(11, 16)} UTC` : `${iso.slice(0, 16).replace('T', ' ')} UTC`;
}

function renderQueue(d) {
  return [
    h('h2', {}, 'Queue'),
    h('p', {id: 'queue-count'}, (d.pending.length < d.visible
      ? `The first ${d.pending.length} of ${d.visible} pending workloads you can see`
      : `${d.visible} pending workloads you can see`) +
      `${d.visible < d.total ? ` (${d.total} in the whole queue)` : ''}, in queue order ` +
      '(priority, then submission).'),
    h('div', {class: 'scroll'}, h('table', {id: 'queue'},
      h('tr', {}, ['#', 'Workload', 'Priority', 'Reason', 'Message', 'Nominated node',
                   'Reservation (backfill)', 'Waiting']
        .map((c) => h('th', {}, c))),
      d.pending.map((p) => h('tr', {'data-workload': `${p.namespace}/${p.name}`},
        h('td', {}, p.position),
        h('td', {}, h('a', {href: `#workload/${p.namespace}/${p.name}`}, `${p.namespace}/${p.name}`)),
        h('td', {}, p.priority), h('td', {class: 'reason'}, p.reason),
        // The reservation has its own column (the engine's note gives its start as a duration).
        h('td', {}, p.reservation ? p.message.split('; reserved on ')[0] : p.message),
        h('td', {}, p.nominatedNode || '–'),
        h('td', {class: 'reservation'}, p.reservation ? `reserved on ${p.reservation.nodes.join(',')}` +
          (p.reservation.from ? ` from ${clockOrDate(p.reservation.from)}` : '') : '–'),
        h('td', {}, `${p.pendingSeconds} s`))))),
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

// Fetches a download of the month's bills with the bearer token and hands it to the browser:
// `bills.csv` (the bytes `arbiter invoice -o csv` prints) or `bills.focus.csv` (the FOCUS rows of
// `arbiter ledger export`).
async function download(path, month, filename) {
  const r = await fetch(`/ui/api/${path}?month=${encodeURIComponent(month)}`,
                        {headers: authHeaders(), cache: 'no-store'});
  if (!r.ok) throw new Error(`HTTP ${r.status}`);
  const url = URL.createObjectURL(await r.blob());
  const a = h('a', {href: url, download: filename, hidden: true});
  document.body.append(a);
  a.click();
  a.remove();
  setTimeout(() => URL.revokeObjectURL(url), 60000);
}

function downloadButton(id, text, path, month, filename) {
  const button = h('button', {type: 'button', id}, text);
  button.addEventListener('click', () => download(path, month, filename).catch((e) => {
    button.after(h('span', {role: 'alert'}, ` Download failed: ${e.message}`));
  }));
  return button;
}

function invoiceSection(inv) {
  const cur = inv.currency;
  return h('section', {class: 'node', 'data-invoice': inv.namespace},
    h('h3', {}, `${inv.namespace}: ${inv.total} ${cur}`),
    h('p', {}, `Request track ${inv.requestTotal} ${cur} · usage track ${inv.usageTotal} ${cur}` +
      ` · credits ${inv.creditTotal} ${cur} · ${inv.from} to ${inv.to}`),
    h('div', {class: 'scroll'}, h('table', {},
      h('caption', {}, `Invoice lines of ${inv.namespace}`),
      h('tr', {}, ['Resource', 'GPU model', 'Kind', 'Mode', 'Requested', 'Used', 'Billed',
                   `Unit price per hour (${cur})`, `Amount (${cur})`].map((c) => h('th', {}, c))),
      inv.lines.map((l) => h('tr', {},
        h('td', {}, l.resource), h('td', {}, l.gpuModel || '–'), h('td', {}, l.kind),
        h('td', {}, l.mode), h('td', {}, l.requestQuantity), h('td', {}, l.usageQuantity),
        h('td', {}, `${l.billedQuantity} ${l.unit}`), h('td', {}, l.unitPrice),
        h('td', {class: 'amount'}, l.amount))))));
}

function renderBills(d) {
  if (!d.available) return [h('h2', {}, 'Bills'), h('p', {id: 'bills-unavailable'}, d.why)];
  if (!d.month) return [h('h2', {}, 'Bills'), h('p', {id: 'no-invoices'}, 'The ledger has no rows yet.')];
  return [
    h('h2', {}, `Bills: ${d.month}`),
    h('nav', {'aria-label': 'Months', class: 'months'}, 'Month: ', d.months.map((m) =>
      h('a', {href: `#bills/${m}`, 'aria-current': m === d.month ? 'page' : null}, m))),
    h('p', {}, `From ${d.from} to ${d.to}. ` +
      (d.sealedBefore ? `Hours before ${d.sealedBefore} are sealed (final). ` : 'No hour is sealed yet. ') +
      (d.meteredUntil ? `Metered until ${d.meteredUntil}.` : '')),
    h('p', {class: 'downloads'},
      downloadButton('download-csv', `Download invoices CSV (${d.month})`, 'bills.csv', d.month,
                     `invoices-${d.month}.csv`), ' ',
      downloadButton('download-focus', `Download FOCUS CSV (${d.month}, hourly rows)`,
                     'bills.focus.csv', d.month, `focus-${d.month}.csv`)),
    d.invoices.length ? d.invoices.map(invoiceSection) :
      h('p', {id: 'no-invoices'}, 'No invoices for this month.'),
  ];
}

const PAGES = {
  pool: {path: () => 'pool', render: renderPool, history: true},
  tenants: {path: () => 'tenants', render: renderTenants, history: true, bills: true},
  queue: {path: () => 'queue', render: renderQueue},
  bills: {path: (month) => month ? `bills?month=${encodeURIComponent(month)}` : 'bills',
          render: renderBills},
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
  for (const a of document.querySelectorAll('#nav a')) {
    if (a.dataset.page === page) a.setAttribute('aria-current', 'page');
    else a.removeAttribute('aria-current');
  }
  try {
    const since = history ? history.seq : null;
    const [data, hist, bills] = await Promise.all([
      api(PAGES[page].path(...args)),
      PAGES[page].history ? api(since === null ? 'history' : `history?since=${since}`) : null,
      PAGES[page].bills ? api(`bills?month=${thisMonth()}`).catch(() => null) : null]);
    if (hist) history = mergeHistory(history, hist, since);
    monthBills = bills;
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
  history = null;  // another token sees another part of it
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
