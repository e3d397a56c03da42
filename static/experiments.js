// static/experiments.js - the dashboard's Experiments pages (docs/EXPERIMENTS.md):
//   #/experiments        the experiments, newest first (GET /api/v1/experiments, every 3 s)
//   #/experiments/ID     one experiment: each trial's metric per epoch on one chart (from
//                        its job's history, GET /api/v1/jobs/JOB/history), the metric
//                        against the first searched parameter as a scatter plot, and the
//                        trials' table linking each job's page; stopped trials are grey,
//                        the best is highlighted. PBT: a trial's curve joins its jobs (each
//                        exploit's cancelled job up to the exploit's epoch, then the next),
//                        every exploit is marked on it (a line from the trial's value to the
//                        better trial's at that epoch) and listed (#experiment-exploits:
//                        which trial copied which, at which epoch, from which job).
//                        Polled every 3 s while it runs.
// app.js routes both here (window.pacerExperiments.list / .page); the API token is the one
// app.js keeps in localStorage.
(function () {
  'use strict';
  const API = '/api/v1';
  const POLL_MS = 3000;
  const COLORS = ['#2f6fde', '#1f8a4c', '#b7791f', '#8e44ad', '#c8372d', '#16a5a5', '#d35400', '#2c3e50'];
  const GREY = '#b8bec9';
  const SVGNS = 'http://www.w3.org/2000/svg';

  function token() { return localStorage.getItem('pacer.token') || ''; }

  async function call(path) {
    const headers = {};
    if (token()) headers.Authorization = 'Bearer ' + token();
    const res = await fetch(API + path, { headers });
    const body = await res.json().catch(() => null);
    if (!res.ok) throw new Error((body && (body.detail || body.title)) || res.status + ' ' + res.statusText);
    return body;
  }

  function el(tag, attrs, text) {
    const e = document.createElement(tag);
    for (const k of Object.keys(attrs || {})) e.setAttribute(k, attrs[k]);
    if (text !== undefined && text !== null) e.textContent = text;
    return e;
  }
  function num(v, digits) { return typeof v === 'number' && isFinite(v) ? v.toFixed(digits === undefined ? 4 : digits) : '–'; }
  function params(p) {
    return Object.keys(p || {}).map((k) => k + '=' + (typeof p[k] === 'number' ? +p[k].toPrecision(6) : p[k])).join(' ');
  }
  function ago(t) {
    const s = Date.now() / 1000 - t;
    if (s < 60) return Math.max(0, Math.round(s)) + ' s ago';
    if (s < 3600) return Math.round(s / 60) + ' min ago';
    return new Date(t * 1000).toLocaleString();
  }

  /* ---- the list ------------------------------------------------------------------------- */

  function list(view, banner) {
    view.innerHTML = '';
    const card = el('section', { class: 'card' });
    const head = el('div', { class: 'card-head' });
    head.append(el('h1', {}, 'Experiments'));
    card.append(head);
    const table = el('table', { class: 'jobs', id: 'experiments' });
    const hr = el('tr');
    for (const h of ['ID', 'State', 'Name', 'Method', 'Trials', 'Best', 'Owner', 'Submitted']) hr.append(el('th', {}, h));
    const thead = el('thead');
    thead.append(hr);
    const tbody = el('tbody');
    table.append(thead, tbody);
    const empty = el('p', { class: 'muted' }, 'No experiment yet: `pacer experiment submit FILE` starts one.');
    card.append(table, empty);
    view.append(card);
    let stopped = false, timer = null;
    async function poll() {
      try {
        const r = await call('/experiments?limit=200');
        tbody.innerHTML = '';
        for (const x of r.experiments || []) {
          const tr = el('tr', { 'data-id': x.id });
          const best = x.best ? num(x.best.metric) : '–';
          for (const c of [x.id, x.state, x.name, x.method, String(x.trials_total), best, x.owner || '–', ago(x.submitted)])
            tr.append(el('td', {}, c));
          tr.addEventListener('click', () => { location.hash = '#/experiments/' + x.id; });
          tbody.append(tr);
        }
        empty.hidden = (r.experiments || []).length > 0;
        if (banner) banner('');
      } catch (e) { if (banner) banner(e.message); }
      if (!stopped) timer = setTimeout(poll, POLL_MS);
    }
    poll();
    return { stop() { stopped = true; clearTimeout(timer); } };
  }

  /* ---- one experiment ------------------------------------------------------------------- */

  // The trial's color: grey when ASHA stopped it (or it failed), else one of COLORS.
  function color(t, i) { return t.state === 'STOPPED' || t.state === 'FAILED' || t.state === 'CANCELLED' ? GREY : COLORS[i % COLORS.length]; }

  // One job's evaluations, epoch -> metric, from its history (rank 0's); cached once it ended.
  async function jobPoints(job, field, done, cache) {
    const known = cache[job];
    if (known && known.done) return known.points;
    let points = {};
    try {
      const h = await call('/jobs/' + encodeURIComponent(job) + '/history?points=200');
      for (const a of h.accuracy || []) if (typeof a[field] === 'number') points[a.epoch] = a[field];
    } catch (e) { points = (known && known.points) || {}; }
    cache[job] = { points, done };
    return points;
  }

  // Each trial's evaluations as [epoch, metric] pairs. A PBT trial's are its jobs' in turn:
  // each exploit's (cancelled) job up to the exploit's epoch, then the job after it, which
  // went on from the better trial's checkpoint.
  async function curves(x, cache) {
    const field = x.metric === 'test_loss' || x.metric === 'loss' ? 'test_loss' : 'test_accuracy';
    const out = [];
    for (const t of x.trials) {
      const byEpoch = {};
      let from = 0;
      for (const ex of t.exploits || []) {
        if (!ex.job) continue;
        const p = await jobPoints(ex.job, field, true, cache);
        for (const e of Object.keys(p).map(Number)) if (e > from && e <= ex.epoch) byEpoch[e] = p[e];
        from = ex.epoch;
      }
      if (t.job) {
        const p = await jobPoints(t.job, field, ['SUCCEEDED', 'FAILED', 'CANCELLED', 'STOPPED'].includes(t.state), cache);
        for (const e of Object.keys(p).map(Number)) if (e > from) byEpoch[e] = p[e];
      }
      out.push(Object.keys(byEpoch).map(Number).sort((a, b) => a - b).map((e) => [e, byEpoch[e]]));
    }
    return out;
  }

  // PBT's exploits, oldest first: {trial, from, epoch, job, from_job, metric, from_metric, params}.
  function exploits(x) {
    const out = [];
    x.trials.forEach((t, i) => { for (const ex of t.exploits || []) out.push(Object.assign({ trial: i }, ex)); });
    return out.sort((a, b) => a.epoch - b.epoch || a.trial - b.trial);
  }

  function drawCurves(box, x, pts, bestTrial) {
    box.innerHTML = '';
    const epochs = [];
    const last = Math.min((x.spec && x.spec.epochs) || 1, 10000);
    for (let e = 1; e <= last; e++) epochs.push(e);
    if (!pts.some((p) => p.length)) { box.append(el('p', { class: 'muted' }, 'no data yet')); return null; }
    const data = [epochs];
    const series = [{ label: 'epoch' }];
    x.trials.forEach((t, i) => {
      const m = {};
      for (const [e, v] of pts[i]) m[e] = v;
      data.push(epochs.map((e) => (e in m ? m[e] : null)));
      const best = i === bestTrial;
      series.push({ label: 'trial ' + i, stroke: best ? '#e0a000' : color(t, i), width: best ? 3 : 1.5, spanGaps: false,
                    points: { show: true, size: best ? 7 : 4 } });
    });
    const width = Math.max(320, box.clientWidth || 600);
    // each exploit: a dashed line at its epoch from the trial's value up to the better
    // trial's (where the trial went on from), in the better trial's color, a dot at the bottom
    const marks = exploits(x).filter((m) => typeof m.metric === 'number' && typeof m.from_metric === 'number');
    box.dataset.exploitMarks = String(marks.length);
    const draw = (u) => {
      const ctx = u.ctx;
      ctx.save();
      for (const m of marks) {
        const px = u.valToPos(m.epoch, 'x', true), y0 = u.valToPos(m.metric, 'y', true), y1 = u.valToPos(m.from_metric, 'y', true);
        ctx.strokeStyle = ctx.fillStyle = m.from === bestTrial ? '#e0a000' : color(x.trials[m.from] || {}, m.from);
        ctx.lineWidth = 2;
        ctx.setLineDash([4, 3]);
        ctx.beginPath(); ctx.moveTo(px, y0); ctx.lineTo(px, y1); ctx.stroke();
        ctx.setLineDash([]);
        ctx.beginPath(); ctx.arc(px, y0, 4, 0, 2 * Math.PI); ctx.fill();
      }
      ctx.restore();
    };
    // eslint-disable-next-line no-undef
    return new uPlot({ width, height: 260, series, legend: { show: false }, hooks: { draw: [draw] },
                       axes: [{ label: 'epoch' }, { label: x.metric }], scales: { x: { time: false } } }, data, box);
  }

  // PBT's exploits as a list under the charts, one line each (hidden for other methods).
  function fillExploits(box, x) {
    box.innerHTML = '';
    const all = exploits(x);
    box.hidden = x.method !== 'pbt';
    if (box.hidden) return;
    box.append(el('h2', {}, 'Exploits (' + all.length + ')'));
    if (!all.length) { box.append(el('p', { class: 'muted' }, 'no exploit yet')); return; }
    const ul = el('ul', { id: 'experiment-exploits' });
    for (const m of all) {
      const li = el('li', { class: 'exploit', 'data-trial': String(m.trial), 'data-from': String(m.from),
                            'data-epoch': String(m.epoch), 'data-job': m.job || '', 'data-from-job': m.from_job || '' });
      li.append(el('span', {}, 'epoch ' + m.epoch + ': trial ' + m.trial + ' (' + num(m.metric) + ') copied trial ' +
                   m.from + ' (' + num(m.from_metric) + '): job '));
      li.append(el('a', { href: '#/jobs/' + m.job }, m.job), el('span', {}, ' stopped, went on from '));
      li.append(el('a', { href: '#/jobs/' + m.from_job }, m.from_job),
                el('span', {}, '\'s checkpoint with ' + params(m.params)));
      ul.append(li);
    }
    box.append(ul);
  }

  // The metric against the first searched parameter (log axis for log_uniform), one dot per
  // trial that has a metric.
  function drawScatter(box, x, bestTrial) {
    box.innerHTML = '';
    const space = (x.search && x.search.space) || {};
    const key = Object.keys(space)[0];
    const pts = x.trials.map((t, i) => ({ i, t, p: t.params && t.params[key], m: t.metric }))
      .filter((d) => typeof d.p === 'number' && typeof d.m === 'number');
    if (!key || !pts.length) { box.append(el('p', { class: 'muted' }, 'no data yet')); return; }
    const log = !!space[key].log_uniform && pts.every((d) => d.p > 0);
    const fx = (v) => (log ? Math.log10(v) : v);
    let x0 = Math.min(...pts.map((d) => fx(d.p))), x1 = Math.max(...pts.map((d) => fx(d.p)));
    let y0 = Math.min(...pts.map((d) => d.m)), y1 = Math.max(...pts.map((d) => d.m));
    if (x1 === x0) { x0 -= 1; x1 += 1; }
    if (y1 === y0) { y0 -= 0.05; y1 += 0.05; }
    const W = 420, H = 240, L = 50, B = 30;
    const svg = document.createElementNS(SVGNS, 'svg');
    svg.setAttribute('viewBox', '0 0 ' + W + ' ' + H);
    svg.setAttribute('class', 'scatter');
    const sx = (v) => L + ((fx(v) - x0) / (x1 - x0)) * (W - L - 10);
    const sy = (v) => 10 + (1 - (v - y0) / (y1 - y0)) * (H - B - 10);
    const text = (tx, ty, s, anchor) => {
      const t = document.createElementNS(SVGNS, 'text');
      t.setAttribute('x', tx); t.setAttribute('y', ty); t.setAttribute('font-size', '11');
      t.setAttribute('fill', '#6b7385'); t.setAttribute('text-anchor', anchor || 'start');
      t.textContent = s;
      svg.append(t);
    };
    text(L, H - 8, key + (log ? ' (log)' : ''), 'start');
    text(L - 4, 18, num(y1, 3), 'end');
    text(L - 4, H - B, num(y0, 3), 'end');
    for (const d of pts) {
      const c = document.createElementNS(SVGNS, 'circle');
      const best = d.i === bestTrial;
      c.setAttribute('cx', sx(d.p).toFixed(1));
      c.setAttribute('cy', sy(d.m).toFixed(1));
      c.setAttribute('r', best ? 7 : 5);
      c.setAttribute('fill', best ? '#e0a000' : color(d.t, d.i));
      c.setAttribute('data-trial', String(d.i));
      c.setAttribute('class', 'dot' + (best ? ' best' : '') + (d.t.state === 'STOPPED' ? ' stopped' : ''));
      const title = document.createElementNS(SVGNS, 'title');
      title.textContent = 'trial ' + d.i + ': ' + params(d.t.params) + ' -> ' + num(d.m);
      c.append(title);
      svg.append(c);
    }
    box.append(svg);
  }

  function fillTable(tbody, x, bestTrial) {
    tbody.innerHTML = '';
    x.trials.forEach((t, i) => {
      const tr = el('tr', { 'data-trial': String(i), class: (t.state === 'STOPPED' ? 'stopped' : '') + (i === bestTrial ? ' best' : '') });
      tr.append(el('td', {}, String(i)));
      const jc = el('td');
      if (t.job) jc.append(el('a', { href: '#/jobs/' + t.job }, t.job));
      else jc.textContent = '–';
      tr.append(jc);
      for (const c of [t.state, String(t.rung), String(t.epochs_trained), num(t.metric), params(t.params)]) tr.append(el('td', {}, c));
      // PBT: the trials it copied, "t1@1" for trial 1 at epoch 1
      if (x.method === 'pbt')
        tr.append(el('td', { class: 'exploits' }, (t.exploits || []).map((m) => 't' + m.from + '@' + m.epoch).join(' ') || '–'));
      tbody.append(tr);
    });
  }

  function page(view, banner, id) {
    view.innerHTML = '';
    const card = el('section', { class: 'card' });
    const head = el('div', { class: 'card-head' });
    const title = el('h1', { id: 'experiment-title' }, id);
    const summary = el('span', { class: 'muted', id: 'experiment-summary' });
    head.append(title, summary);
    const charts = el('div', { class: 'charts' });
    const c1 = el('section', { class: 'card' }), c2 = el('section', { class: 'card' });
    c1.append(el('h2', {}, 'Each trial\'s metric per epoch'));
    c2.append(el('h2', {}, 'Metric against the first searched parameter'));
    const curveBox = el('div', { id: 'experiment-curves' }), scatterBox = el('div', { id: 'experiment-scatter' });
    c1.append(curveBox);
    c2.append(scatterBox);
    charts.append(c1, c2);
    const table = el('table', { class: 'jobs trials', id: 'trials' });
    const hr = el('tr');
    for (const h of ['Trial', 'Job', 'State', 'Rung', 'Epochs', 'Metric', 'Params']) hr.append(el('th', {}, h));
    const thead = el('thead');
    thead.append(hr);
    const tbody = el('tbody');
    table.append(thead, tbody);
    const exploitBox = el('section', { class: 'card', id: 'experiment-exploit-card' });
    exploitBox.hidden = true;
    card.append(head, charts, exploitBox, table);
    view.append(card);
    let stopped = false, timer = null, plot = null;
    const cache = {};
    async function poll() {
      let running = true;
      try {
        const x = await call('/experiments/' + encodeURIComponent(id));
        running = x.state === 'RUNNING';
        const bestTrial = x.best ? x.best.trial : -1;
        title.textContent = x.id + '  ' + x.name;
        summary.textContent = x.state + ' · ' + x.method + ' search of ' + x.trials_total + ' trials · ' + x.metric +
          ' (' + ((x.search && x.search.mode) || '') + ')' + (x.best ? ' · best ' + num(x.best.metric) + ' (trial ' + x.best.trial + ')' : '');
        if (x.method === 'pbt' && hr.children.length === 7) hr.append(el('th', {}, 'Copied'));
        fillTable(tbody, x, bestTrial);
        fillExploits(exploitBox, x);
        drawScatter(scatterBox, x, bestTrial);
        const pts = await curves(x, cache);
        if (plot) plot.destroy();
        plot = drawCurves(curveBox, x, pts, bestTrial);
        if (banner) banner('');
      } catch (e) { if (banner) banner(e.message); }
      if (!stopped && running) timer = setTimeout(poll, POLL_MS);
    }
    poll();
    return { stop() { stopped = true; clearTimeout(timer); if (plot) plot.destroy(); } };
  }

  window.pacerExperiments = { list, page };
})();
