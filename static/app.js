/* static/app.js - the pacer dashboard: plain JavaScript, no framework, served by the
 * coordinator itself. Three views, chosen by the URL hash:
 *
 *   #/           the job list (polled every 2 s, and refreshed on every state event of
 *                GET /api/v1/events)
 *   #/new        the submit form (POST /api/v1/jobs; a refused spec highlights its field)
 *   #/jobs/ID    one job, live over Server-Sent Events (GET /api/v1/jobs/ID/events):
 *                per-rank charts of loss, throughput, staleness mean and p95, batch size,
 *                gradient noise scale, and the goodput planner's global batch and goodput
 *                over the whole run (GET /api/v1/jobs/ID/history, downsampled on the
 *                server; history.js), test accuracy per epoch, a staleness histogram per
 *                node, where the time goes (breakdown.js)
 *   #/compare?ids=j-1,j-2   two or more jobs overlaid, specs side by side (compare.js)
 *
 * The API token (if the coordinator has one) is kept in localStorage and sent as a
 * bearer header, or as ?access_token= where EventSource cannot send headers.
 * window.pacer exposes the charts so that tests can read what they plotted.
 */
'use strict';

(function () {
  const API = '/api/v1';
  const COLORS = ['#2f6fde', '#e4572e', '#17a2b8', '#f0a202', '#6f42c1', '#28a745', '#d63384', '#795548'];
  const FINAL = ['SUCCEEDED', 'FAILED', 'CANCELLED'];
  const HISTORY_POINTS = 1000;    // points per series the server downsamples the run to (history.js)
  const LIVE_POINTS = 3000;       // live points per rank appended before the history is asked again
  const REDRAW_MS = 400;          // charts redraw at most this often while data arrives
  const HIST_LABELS = ['0', '1', '2', '3', '4-7', '8-15', '16-31', '32-63', '64+'];
  const NOISE_RECENT = 50;        // the noise-scale values the header's median and IQR are of

  const $ = (sel, root) => (root || document).querySelector(sel);
  const view = $('#view');
  let current = null;             // the mounted view: { stop() }

  /* ---- API ------------------------------------------------------------------------------ */

  function token() { return localStorage.getItem('pacer.token') || ''; }

  // A read that got no answer at all (the browser's network changed under it:
  // net::ERR_NETWORK_CHANGED; a dropped connection) is asked again, 0.3 s and then 1 s
  // later, before the page says it failed: a GET changes nothing. Other methods are never
  // repeated, and an answer, whatever its status, is the answer.
  const API_RETRY_MS = [300, 1000];
  async function api(path, opts) {
    opts = opts || {};
    const headers = Object.assign({}, opts.headers || {});
    if (token()) headers.Authorization = 'Bearer ' + token();
    let res;
    for (let k = 0; !res; k++) {
      try {
        res = await fetch(API + path, Object.assign({}, opts, { headers }));
      } catch (e) {
        if ((opts.method && opts.method !== 'GET') || e.name === 'AbortError' || k >= API_RETRY_MS.length) throw e;
        await new Promise((r) => setTimeout(r, API_RETRY_MS[k]));
      }
    }
    const type = res.headers.get('Content-Type') || '';
    const body = type.includes('json') ? await res.json().catch(() => null) : null;
    if (!res.ok) {
      const err = new Error((body && (body.detail || body.title)) || res.status + ' ' + res.statusText);
      err.status = res.status;
      err.problem = body;
      throw err;
    }
    return body;
  }

  function events(path, handlers, onOpen, onError) {
    let url = API + path;
    if (token()) url += (url.includes('?') ? '&' : '?') + 'access_token=' + encodeURIComponent(token());
    const es = new EventSource(url);
    for (const type of Object.keys(handlers)) {
      es.addEventListener(type, (e) => {
        let data;
        try { data = JSON.parse(e.data); } catch (_) { return; }
        handlers[type](data, e);
      });
    }
    if (onOpen) es.addEventListener('open', onOpen);
    if (onError) es.addEventListener('error', onError);
    return es;
  }

  function banner(msg) {
    const b = $('#banner');
    b.textContent = msg || '';
    b.hidden = !msg;
  }

  function apiError(e) {
    if (e.status === 401) banner('The coordinator wants an API token: enter it at the top right.');
    else banner(e.message);
  }

  /* ---- formatting ------------------------------------------------------------------------ */

  function el(tag, attrs, text) {
    const e = document.createElement(tag);
    for (const k of Object.keys(attrs || {})) e.setAttribute(k, attrs[k]);
    if (text !== undefined && text !== null) e.textContent = text;
    return e;
  }
  function num(v, digits) {
    if (v === null || v === undefined || v === '' || Number.isNaN(Number(v))) return '–';
    const x = Number(v);
    if (digits === undefined) return Number.isInteger(x) ? x.toLocaleString() : x.toFixed(2);
    return x.toFixed(digits);
  }
  function duration(s) {
    if (!(s >= 0)) return '–';
    s = Math.round(s);
    if (s < 60) return s + ' s';
    if (s < 3600) return Math.floor(s / 60) + ' min ' + (s % 60) + ' s';
    return Math.floor(s / 3600) + ' h ' + Math.floor((s % 3600) / 60) + ' min';
  }
  function when(t) {
    if (!t) return '–';
    const d = new Date(t * 1000);
    const ago = Date.now() / 1000 - t;
    if (ago < 60) return Math.max(0, Math.round(ago)) + ' s ago';
    if (ago < 3600) return Math.round(ago / 60) + ' min ago';
    return d.toLocaleString();
  }
  function runtime(job) {
    if (!job.started) return '–';
    return duration((job.finished || Date.now() / 1000) - job.started);
  }
  // A queued job's estimated start (the API's queue.estimated_start, unix s): null means
  // the jobs it waits for have measured no progress, shown as missing, never as now or 0.
  function queueStart(q) {
    return typeof q.estimated_start === 'number'
      ? 'estimated start ' + new Date(q.estimated_start * 1000).toLocaleTimeString()
      : 'start not estimated';
  }
  function badge(node, state) {
    node.className = 'badge ' + (state || '');
    node.textContent = state || '…';
  }

  /* ---- header: token and cluster line -------------------------------------------------- */

  $('#token').value = token();
  $('#token-form').addEventListener('submit', (e) => {
    e.preventDefault();
    localStorage.setItem('pacer.token', $('#token').value.trim());
    banner('');
    loadMe().then(route);
  });

  // Who the token is (GET /api/v1/whoami): the page shows only the buttons the
  // role can use. The server decides in any case (403 naming the rule); unknown (an old
  // coordinator, a wrong token) shows everything.
  let me = null;
  async function loadMe() {
    try { me = await api('/whoami'); } catch (_) { me = null; }
    const who = $('#whoami');
    if (who) who.textContent = me && me.name ? me.name + ' (' + me.role + ')' : '';
    applyRole(document);
  }
  // May the caller do act ('submit', 'upload', 'cancel', 'cluster') to something owned by
  // owner? The rule of common/users.h: admins anything, viewers nothing, members their own.
  function can(act, owner) {
    if (!me) return true;
    if (me.role === 'admin') return true;
    // the coordinator's --viewers-generate: every user with a token, on any job
    if (act === 'generate' && me.viewers_generate && me.name) return true;
    if (me.role !== 'member') return false;
    if (act === 'submit' || act === 'upload') return true;
    if (act === 'cluster') return false;
    return !!owner && owner === me.name;
  }
  // Elements marked data-needs="submit" (or upload, cluster, cancel with data-owner) are
  // hidden from roles that cannot use them.
  function applyRole(root) {
    for (const n of root.querySelectorAll('[data-needs]')) n.hidden = !can(n.dataset.needs, n.dataset.owner);
  }
  window.pacerRole = { can, me: () => me };   // cluster.js, and tests

  // The processes of the running jobs (their ranks, parameter servers included) on the
  // launcher's slots; more than there are is said in words, not as "5/2".
  function slotsText(used, slots) {
    if (used <= slots) return used + '/' + slots + ' slots';
    return used + ' processes on ' + slots + ' slot' + (slots === 1 ? '' : 's') + ': oversubscribed ' +
      Number((used / slots).toFixed(2)) + 'x';
  }
  window.pacerText = { slots: slotsText };   // for tests

  async function clusterLine() {
    const line = $('#cluster-line');
    try {
      const c = await api('/cluster');
      const co = c.coordinator || {};
      line.innerHTML = '';
      line.append(el('span', { class: 'dot ' + (c.alive ? 'up' : 'down') }));
      const parts = [c.alive ? 'coordinator up' : 'coordinator not running'];
      if (co.slots) parts.push(slotsText(co.slots_used || 0, co.slots));
      parts.push(c.queued + ' queued', c.active + ' active', c.jobs + ' jobs');
      if (co.host) parts.push(co.host);
      line.append(document.createTextNode(parts.join(' · ')));
    } catch (e) {
      line.innerHTML = '';
      line.append(el('span', { class: 'dot down' }), document.createTextNode(e.status === 401 ? 'token needed' : 'API unreachable'));
    }
  }
  setInterval(clusterLine, 5000);
  clusterLine();
  loadMe();

  /* ---- routing ----------------------------------------------------------------------------- */

  function mount(id) {
    view.innerHTML = '';
    view.append(document.getElementById(id).content.cloneNode(true));
    applyRole(view);
  }

  function route() {
    if (current && current.stop) current.stop();
    current = null;
    banner('');
    const h = location.hash || '#/';
    const m = h.match(/^#\/jobs\/(j-[0-9]+)$/);
    const cmp = h.match(/^#\/compare\?ids=([^&]*)$/);
    const xm = h.match(/^#\/experiments\/(e-[0-9]+)$/);
    let nav = 'jobs';
    if (m) current = jobView(m[1]);
    else if (cmp && window.pacerCompare) {   // compare.js
      current = window.pacerCompare.view({ api, el, mount, $, banner, apiError }, decodeURIComponent(cmp[1]).split(','));
    } else if (h === '#/new') { current = newView(); nav = 'new'; }
    else if (h === '#/cluster' && window.pacerCluster) { current = window.pacerCluster.mount(view, banner); nav = 'cluster'; }   // cluster.js
    else if (h === '#/experiments' && window.pacerExperiments) { current = window.pacerExperiments.list(view, banner); nav = 'experiments'; }   // experiments.js
    else if (xm && window.pacerExperiments) { current = window.pacerExperiments.page(view, banner, xm[1]); nav = 'experiments'; }
    else current = jobsView();
    for (const a of document.querySelectorAll('[data-nav]')) a.classList.toggle('active', a.dataset.nav === nav && !m);
  }
  window.addEventListener('hashchange', route);

  /* ---- the job list ---------------------------------------------------------------------- */

  // A job's name, with a badge when it ran (or runs) on a simulated cluster.
  function nameCell(j) {
    const td = el('td', {}, j.name);
    if (j.simulated) td.append(' ', el('span', { class: 'badge sim', title: 'run by pacer-sim on a simulated cluster' }, 'simulated'));
    return td;
  }

  // A job's test accuracy and last loss for the job list, from its answer (a final job's:
  // null otherwise) and its nodes answer: the summary's final evaluation, else rank 0's
  // latest (it evaluates: the parameter server, or a synchronous job's root); the mean of
  // the workers' latest training loss, else the summary's loss over the last epoch.
  // Unmeasured is null (shown '–'), never 0.
  function listFigures(job, nodes) {
    const isNum = (v) => typeof v === 'number' && Number.isFinite(v);
    const sum = (job && job.summary) || {};
    const ranks = (nodes && Array.isArray(nodes.ranks) ? nodes.ranks : []).filter((r) => r && typeof r === 'object');
    const evaluator = ranks.find((r) => r.rank === 0 && isNum(r.test_accuracy)) || ranks.find((r) => isNum(r.test_accuracy));
    const losses = ranks.filter((r) => r.role !== 'ps' && isNum(r.loss)).map((r) => r.loss);
    return {
      acc: isNum(sum.test_accuracy) ? sum.test_accuracy : evaluator ? evaluator.test_accuracy : null,
      loss: losses.length ? losses.reduce((a, b) => a + b, 0) / losses.length : isNum(sum.train_loss_running) ? sum.train_loss_running : null,
      lm: !!window.pacerLM.info(job),   // a language model's accuracy is the next token's (lm.js)
    };
  }
  window.pacerList = { figures: listFigures };   // for tests

  function jobsView() {
    mount('tpl-jobs');
    const limit = 25;
    let offset = 0, total = 0, pending = null;
    const sel = $('#filter-state');
    sel.value = sessionStorage.getItem('pacer.state') || '';
    // Jobs ticked for the compare view (compare.js), kept across pages and reloads.
    const picked = new Set((sessionStorage.getItem('pacer.picked') || '').split(',').filter((x) => x));
    const compareBtn = $('#jobs-compare');
    const pickedChanged = () => {
      sessionStorage.setItem('pacer.picked', [...picked].join(','));
      compareBtn.disabled = picked.size < 2;
      compareBtn.textContent = 'Compare' + (picked.size ? ' (' + picked.size + ')' : '');
    };
    compareBtn.addEventListener('click', () => { location.hash = '#/compare?ids=' + [...picked].join(','); });
    pickedChanged();

    // "Mine": the caller's jobs only. The API has no owner filter: the newest 1000 jobs
    // (its page limit) are read and filtered here, then paged.
    const mine = $('#filter-mine');
    mine.checked = sessionStorage.getItem('pacer.mine') === '1';
    // Loads overlap (the 2 s timer, a ticked box, a new page): only the newest one's answer
    // is drawn, so that an older unfiltered answer never lands after a filtered one.
    let loads = 0;
    async function load() {
      const mineNow = mine.checked && me && me.name;
      const seq = ++loads;
      try {
        const st = sel.value ? '&state=' + sel.value : '';
        if (mineNow) {
          const all = (await api('/jobs?limit=1000' + st)).jobs.filter((j) => j.owner === me.name);
          if (seq !== loads) return;
          total = all.length;
          render(all.slice(offset, offset + limit));
        } else {
          const page = await api('/jobs?limit=' + limit + '&offset=' + offset + st);
          if (seq !== loads) return;
          total = page.total;
          render(page.jobs);
        }
        banner('');
      } catch (e) { apiError(e); }
    }
    mine.addEventListener('change', () => { sessionStorage.setItem('pacer.mine', mine.checked ? '1' : ''); offset = 0; load(); });
    // A queued job's row: its place in the queue (the page has the sentence); others: the reason.
    function reasonCell(j) {
      const q = j.state === 'QUEUED' ? j.queue : null;
      if (!q) return el('td', { class: 'reason', title: j.reason || '' }, j.reason || '');
      return el('td', { class: 'reason queue', title: q.detail || '' }, '#' + q.position + ' · ' + q.reason + ' · ' + queueStart(q));
    }
    // Test accuracy and last loss: not in the list's answer, so read per job shown (its
    // answer and nodes); a final job's once, a running one's again at most every 5 s.
    const figures = new Map();   // id -> { acc, loss, at, final, busy }
    function figureCells(id) {
      const f = figures.get(id) || {};
      return [el('td', { class: 'num acc' }, typeof f.acc === 'number' ? (100 * f.acc).toFixed(2) + ' %' + (f.lm ? ' (next token)' : '') : '–'),
        el('td', { class: 'num loss' }, typeof f.loss === 'number' ? f.loss.toFixed(4) : '–')];
    }
    async function readFigures(j) {
      const final = FINAL.includes(j.state);
      const f = figures.get(j.id);
      if (j.state === 'QUEUED' || (f && (f.busy || f.final || Date.now() - f.at < 5000))) return;
      figures.set(j.id, Object.assign({}, f, { busy: true }));
      try {
        const [job, nodes] = await Promise.all([final ? api('/jobs/' + j.id) : null, api('/jobs/' + j.id + '/nodes').catch(() => null)]);
        // A job that has just ended may write its summary after this read: read again then.
        const settled = final && !!job && (!!job.summary || !(job.finished > Date.now() / 1000 - 30));
        figures.set(j.id, Object.assign(listFigures(job, nodes), { at: Date.now(), final: settled }));
      } catch (e) {
        figures.set(j.id, Object.assign({}, f, { busy: false, at: Date.now() }));
        return;
      }
      const tr = $('#jobs-body tr[data-id="' + j.id + '"]');
      if (tr) {
        const [acc, loss] = figureCells(j.id);
        tr.querySelector('td.acc').replaceWith(acc);
        tr.querySelector('td.loss').replaceWith(loss);
      }
    }
    function render(jobs) {
      const body = $('#jobs-body');
      if (!body) return;
      body.innerHTML = '';
      for (const j of jobs) readFigures(j);
      for (const j of jobs) {
        const tr = el('tr', { 'data-id': j.id });
        const state = el('span', {});
        badge(state, j.state);
        const cells = [
          el('td', {}, j.id), nameCell(j), null, el('td', { class: 'owner' }, j.owner || '–'), el('td', {}, j.model), el('td', {}, j.algorithm),
          el('td', { class: 'num' }, j.workers), el('td', { title: j.submitted ? new Date(j.submitted * 1000).toLocaleString() : '' }, when(j.submitted)),
          el('td', { class: 'num' }, runtime(j)), ...figureCells(j.id), el('td', { class: 'num' }, j.restarts || 0),
          reasonCell(j),
        ];
        const st = el('td');
        st.append(state);
        cells[2] = st;
        const pick = el('td', { class: 'pick' });
        const box = el('input', { type: 'checkbox', 'data-pick': j.id, title: 'compare' });
        box.checked = picked.has(j.id);
        box.addEventListener('click', (e) => e.stopPropagation());
        box.addEventListener('change', () => { if (box.checked) picked.add(j.id); else picked.delete(j.id); pickedChanged(); });
        pick.addEventListener('click', (e) => e.stopPropagation());
        pick.append(box);
        tr.append(pick, ...cells);
        tr.addEventListener('click', () => { location.hash = '#/jobs/' + j.id; });
        body.append(tr);
      }
      $('#jobs-empty').hidden = jobs.length > 0 || offset > 0;
      $('#jobs-count').textContent = total ? (offset + 1) + '–' + (offset + jobs.length) + ' of ' + total : '';
      $('#page-prev').disabled = offset === 0;
      $('#page-next').disabled = offset + limit >= total;
    }
    sel.addEventListener('change', () => { sessionStorage.setItem('pacer.state', sel.value); offset = 0; load(); });
    $('#page-prev').addEventListener('click', () => { offset = Math.max(0, offset - limit); load(); });
    $('#page-next').addEventListener('click', () => { offset += limit; load(); });

    // State changes refresh at once (debounced); the poll catches anything else.
    const soon = () => { if (!pending) pending = setTimeout(() => { pending = null; load(); }, 150); };
    const es = events('/events', { state: soon });
    const timer = setInterval(load, 2000);
    load();
    return { stop() { clearInterval(timer); clearTimeout(pending); es.close(); } };
  }

  /* ---- the submit form ------------------------------------------------------------------- */

  const ALGO_PARAMS = ['dynamic_batch', 'replan_steps', 'k_steps', 'group_size', 'local_steps', 'n', 'dc_variant', 'lambda0', 'tau_max'];

  // The chosen data set as the spec gives it: a built-in by name, a user's image folder or
  // .npz (its catalog entry's format and path, set on the option by fillCatalog) by where it
  // is, resized to the model's input when its images are of another or an unknown size.
  function datasetFromForm(f) {
    const d = f.elements.dataset.selectedOptions[0], m = f.elements.model.selectedOptions[0];
    if (!d || !d.dataset.path) return { name: f.elements.dataset.value };
    const out = { format: d.dataset.format, path: d.dataset.path };
    if (m && m.dataset.hw && d.dataset.hw !== m.dataset.hw) out.resize = m.dataset.hw.split('x').map(Number);
    return out;
  }

  function specFromForm(f) {
    const v = (n) => f.elements[n].value.trim();
    const int = (n) => parseInt(v(n), 10);
    const float = (n) => Number(v(n));
    const alg = v('algorithm');
    // An uploaded model is named as one: {"onnx": NAME} (the coordinator pins its sha256).
    const mo = f.elements.model.selectedOptions[0];
    const spec = {
      name: v('name') || 'job',
      model: mo && mo.dataset.source === 'uploaded' ? { onnx: mo.value } : v('model'),
      dataset: datasetFromForm(f),
      epochs: int('epochs'),
      batch_size: int('batch_size'),
      workers: int('workers'),
      seed: int('seed'),
      optimizer: { lr: float('lr'), momentum: float('momentum') },
      algorithm: { name: alg },
    };
    if (int('train_subset') > 0) spec.dataset.train_subset = int('train_subset');
    if (int('test_subset') > 0) spec.dataset.test_subset = int('test_subset');
    const a = spec.algorithm;
    const uses = (name) => {
      const label = f.elements[name].closest('label');
      return label && label.dataset.alg.split(' ').includes(alg);
    };
    for (const p of ALGO_PARAMS) {
      if (!uses(p)) continue;
      const input = f.elements[p];
      if (p === 'dynamic_batch') { if (input.checked || alg === 'dbs-sgd') a.dynamic_batch = true; continue; }
      if (p === 'replan_steps' && !a.dynamic_batch) continue;
      if (input.value.trim() === '') continue;
      if (p === 'dc_variant') a.dc_variant = input.value;
      else if (p === 'lambda0') a.lambda0 = Number(input.value);
      else if (p === 'tau_max') { if (int(p) > 0) a.tau_max = int(p); }
      else a[p] = parseInt(input.value, 10);
    }
    const slow = v('slowdown').split(/[\s,]+/).filter((s) => s !== '').map(Number);
    if (f.elements.simulate.checked) {
      // A simulated cluster: the slowdowns become the simulated hosts' speeds (a named
      // platform file sets its own), nothing is emulated by waiting.
      const sim = { enabled: true, deterministic: f.elements.deterministic.checked };
      if (v('platform')) sim.platform = v('platform');
      else {
        if (slow.length) sim.slowdown = slow;
        sim.gflops = float('gflops');
        sim.bandwidth_gbps = float('bandwidth_gbps');
        sim.latency_us = float('latency_us');
        if (int('gpus_per_node') > 1) sim.gpus_per_node = int('gpus_per_node');
      }
      spec.simulate = sim;
    } else if (slow.length) spec.emulate = { slowdown: slow };
    if (int('every_steps') > 0) spec.checkpoint = { every_steps: int('every_steps') };
    return spec;
  }

  // The catalog's models and data sets into the form's selects (GET /api/v1/models and
  // /api/v1/datasets): the names a spec may use, so the page lists none of its own. Choosing
  // a model picks the data set it trains on; a note says what the model is.
  async function fillCatalog(f, onChange) {
    const [ml, dl] = await Promise.all([api('/models'), api('/datasets')]);
    const models = (ml && ml.models) || [], sets = (dl && dl.datasets) || [];
    const msel = f.elements.model, dsel = f.elements.dataset;
    msel.innerHTML = '';
    dsel.innerHTML = '';
    const hw = (s) => (s ? s.height + 'x' + s.width : '');
    for (const m of models) {
      const o = el('option', { value: m.name }, m.title + (m.source === 'builtin' ? '' : ' (' + m.source + ')'));
      o.dataset.hw = hw(m.input);
      o.dataset.source = m.source;
      msel.append(o);
    }
    // One list, the catalog's: the built-ins, then what the data roots hold (source user).
    for (const d of sets) {
      const user = d.source === 'user' && d.path;
      const o = el('option', { value: d.name }, d.title + (user ? ' (' + d.format + ', ' + d.classes + ' classes, ' +
        d.train_samples.toLocaleString() + ' training images)' : '') + (d.present ? '' : ' (not found on the coordinator)'));
      if (user) Object.assign(o.dataset, { format: d.format, path: d.path, hw: hw(d.input) });
      dsel.append(o);
    }
    const byName = new Map(models.map((m) => [m.name, m]));
    if (byName.has(msel.dataset.default)) msel.value = msel.dataset.default;
    const note = () => {
      const m = byName.get(msel.value);
      $('#model-note').textContent = m ? m.parameters.toLocaleString() + ' parameters, input ' + m.input.channels + '×' +
        m.input.height + '×' + m.input.width + ', ' + m.classes + ' classes, ' +
        (m.flops_per_sample / 1e6).toFixed(1) + ' MFLOP a sample' : '';
    };
    const follow = () => {
      const m = byName.get(msel.value);
      if (m && m.dataset && sets.some((d) => d.name === m.dataset)) dsel.value = m.dataset;
      note();
    };
    // filled again after an upload: one listener, reading this fill's lists
    msel.onchange = () => { follow(); onChange(); };
    follow();
    onChange();
  }

  // The form's default workers and slowdowns on a coordinator of `slots` slots: the demo's
  // four workers [1, 1, 2, 4] where four fit, else one per slot with slowdowns that still
  // differ ([1, 2] on two). Four emulated ranks on two cores would measure how the OS
  // shares the cores, not the slowdowns (the job page says "not faithful").
  function formDefaults(slots) {
    const n = Math.max(1, Math.min(4, Math.floor(slots) || 4));
    return { workers: n, slowdown: [[1], [1, 2], [1, 1, 2], [1, 1, 2, 4]][n - 1].join(', ') };
  }
  window.pacerForm = { defaults: formDefaults };   // for tests

  function newView() {
    mount('tpl-new');
    const f = $('#job-form');
    // Fields the user has typed in keep what they typed when the defaults arrive.
    const touched = new Set();
    f.addEventListener('input', (e) => { if (e.target && e.target.name) touched.add(e.target.name); }, true);
    const preview = () => { $('#spec-preview').textContent = JSON.stringify(specFromForm(f), null, 2); };
    fillCatalog(f, preview).catch(apiError);
    // An ONNX file of the user's: PUT /api/v1/models/NAME, then the lists again with it chosen.
    $('#upload-btn').addEventListener('click', async () => {
      const name = f.elements.upload_name.value.trim(), file = f.elements.upload_file.files[0];
      const note = $('#upload-note');
      if (!name || !file) { note.textContent = 'Give a name and choose an .onnx file.'; return; }
      note.textContent = 'Uploading ' + file.name + '…';
      try {
        const m = await api('/models/' + encodeURIComponent(name), {
          method: 'PUT', headers: { 'Content-Type': 'application/octet-stream' }, body: await file.arrayBuffer(),
        });
        note.textContent = 'Stored ' + m.name + ': input ' + m.input.join('×') + ', ' + m.classes + ' classes, ' +
          m.parameters.toLocaleString() + ' parameters, sha256 ' + m.sha256.slice(0, 12) + '…';
        f.elements.model.dataset.default = m.name;
        await fillCatalog(f, preview);
      } catch (e) {
        note.textContent = 'Refused: ' + e.message;
      }
    });
    const showParams = () => {
      const alg = f.elements.algorithm.value;
      for (const label of f.querySelectorAll('[data-alg]')) label.hidden = !label.dataset.alg.split(' ').includes(alg);
      const sim = f.elements.simulate.checked, named = f.elements.platform.value !== '';
      for (const label of f.querySelectorAll('[data-sim]')) label.hidden = !sim || (label.dataset.sim === 'gen' && named);
      // Where a refused slowdown list is reported: the field it went into.
      f.elements.slowdown.dataset.field = sim ? 'simulate.slowdown' : 'emulate.slowdown';
      f.elements.slowdown.disabled = sim && named;
    };
    // What this coordinator can simulate (GET /api/v1/cluster): its platform files, or why not.
    // A coordinator that has just started may not have published its record yet (no
    // slots): asked again each second for a while.
    let stopped = false, asked = 0;
    const askCluster = () => api('/cluster').then((cl) => {
      if (stopped) return;
      const co = (cl && cl.coordinator) || {};
      const slots = co.slots_usable > 0 ? co.slots_usable : co.slots;
      if (!(slots > 0) && ++asked < 30) { setTimeout(askCluster, 1000); return; }
      if (slots > 0) {
        const d = formDefaults(slots);
        if (!touched.has('workers') && !touched.has('slowdown')) {
          f.elements.workers.value = d.workers;
          f.elements.slowdown.value = d.slowdown;
        }
        f.elements.workers.title = 'default: this coordinator\'s ' + slots + ' slot' + (slots === 1 ? '' : 's') + ', at most 4';
        f.setAttribute('data-slots', slots);   // (f.dataset is the form's "dataset" select)
      }
      const sim = co.simulator;
      const box = f.elements.simulate;
      if (!sim || !sim.available) {
        box.disabled = true;
        box.checked = false;
        $('#sim-note').textContent = 'This coordinator cannot simulate' + (sim && sim.reason ? ': ' + sim.reason : '.');
      } else {
        for (const p of sim.platforms || []) f.elements.platform.append(el('option', { value: p }, p));
        $('#sim-note').textContent = 'Up to ' + sim.slots + ' simulation' + (sim.slots === 1 ? '' : 's') +
          ' at a time on the coordinator\'s machine; platform files from ' + (sim.platforms_dir || 'nowhere (generated only)') + '.';
      }
      showParams();
      preview();
    }).catch(() => { if (!stopped) $('#sim-note').textContent = 'Could not ask the coordinator whether it can simulate.'; });
    askCluster();
    // Keep one slowdown per worker when the worker count changes.
    f.elements.workers.addEventListener('change', () => {
      const n = parseInt(f.elements.workers.value, 10);
      const cur = f.elements.slowdown.value.split(/[\s,]+/).filter((s) => s !== '');
      if (!cur.length || !(n > 0)) return;
      while (cur.length < n) cur.push('1');
      f.elements.slowdown.value = cur.slice(0, n).join(', ');
      preview();
    });
    f.addEventListener('input', () => {
      for (const x of f.querySelectorAll('.invalid')) x.classList.remove('invalid');
      $('#form-error').hidden = true;
      showParams();
      preview();
    });
    f.addEventListener('submit', async (e) => {
      e.preventDefault();
      const btn = $('#submit-job');
      btn.disabled = true;
      try {
        const job = await api('/jobs', {
          method: 'POST',
          headers: { 'Content-Type': 'application/json' },
          body: JSON.stringify(specFromForm(f)),
        });
        location.hash = '#/jobs/' + job.id;
      } catch (err) {
        const box = $('#form-error');
        box.hidden = false;
        box.textContent = err.status === 401 ? 'Refused: this coordinator needs the API token (top right).' : err.message;
        const field = err.problem && err.problem.field;
        if (field) {
          for (const input of f.querySelectorAll('[data-field]')) {
            const df = input.dataset.field;
            if (field === df || field.startsWith(df + '[') || field.startsWith(df + '.')) {
              input.classList.add('invalid');
              input.focus();
            }
          }
        }
      } finally {
        btn.disabled = false;
      }
    });
    showParams();
    preview();
    return { stop() { stopped = true; } };
  }

  /* ---- one job ------------------------------------------------------------------------------ */

  // The per-rank charts: one uPlot each, x = seconds since the job started, one series per
  // rank (worker-only charts leave the parameter server out). Their data, the whole run
  // downsampled by the server plus the live records, is history.js's.
  const HIST = window.pacerHistory;
  const RANK_CHARTS = HIST.CHARTS;
  const LM = window.pacerLM;   // lm.js: a language model's words

  function jobView(id) {
    mount('tpl-job');
    const s = {
      job: null, ranks: [], roles: {}, t0: null, dirty: false, charts: {}, acc: new Map(), tloss: new Map(), lm: null,
      last: {}, lastEvent: 0, events: 0, finished: false, plan: null, simClock: false, emulation: null,
      // history.js: the stores, the history's stream cursor, live records since it, smoothing
      stores: {}, next: null, live: [], appended: 0, reloading: false, lastReload: 0, reloads: 0, ma: 0,
    };
    for (const k of Object.keys(RANK_CHARTS)) s.stores[k] = HIST.createStore();
    $('#job-id').textContent = id;
    s.breakdown = window.pacerBreakdown ? window.pacerBreakdown.create($('#breakdown')) : null;   // breakdown.js

    const rankLabel = (r) => 'rank ' + r + (s.roles[r] === 'ps' ? ' (ps)' : '');
    const color = (r) => COLORS[r % COLORS.length];

    function chartSize(box) { return { width: Math.max(280, box.clientWidth), height: 220 }; }

    function buildCharts() {
      if (s.stopped) return;
      for (const u of Object.values(s.charts)) u.destroy();
      s.charts = {};
      const axis = { stroke: '#6b7385', grid: { stroke: '#eef0f4', width: 1 }, ticks: { stroke: '#e2e5eb', width: 1 } };
      for (const name of Object.keys(RANK_CHARTS)) {
        const box = $('[data-chart="' + name + '"] .plot');
        // An optional chart (noise scale, goodput) shows once a record has its value.
        if (RANK_CHARTS[name].optional) box.parentNode.hidden = !s.stores[RANK_CHARTS[name].showWith || name].ranks.length;
        const series = [{ label: 't (s)', value: (u, v) => (v === null || v === undefined ? '–' : v.toFixed(1)) }];
        for (const r of s.stores[name].ranks) {
          // Hover: each rank's latest value at the cursor (a row holds one rank's point).
          const value = (u, v, si, idx) => {
            const x = HIST.valueAt(u.data[si], idx);
            return x === null ? '–' : Math.abs(x) >= 100 ? x.toFixed(0) : x.toPrecision(4);
          };
          const ser = { label: rankLabel(r), stroke: color(r), width: 1.5, spanGaps: true, points: { show: false }, value };
          if (name === 'batch' && uPlot.paths && uPlot.paths.stepped) ser.paths = uPlot.paths.stepped({ align: 1 });
          series.push(ser);
        }
        // Staleness and batch sizes are small non-negative integers: start at 0, and keep a
        // flat line of zeros (every synchronous algorithm) at the bottom, not mid-chart.
        // The noise scale spans decades (a few hundred samples mid-run, spikes of 10^5-10^6
        // where |G|^2 nears 0 late in training): a log axis keeps the bulk readable.
        const y = name === 'loss' ? {} : name === 'noise' ? { distr: 3, log: 10 }
          : { range: (u, min, max) => [0, Math.max(name.startsWith('st_') ? 1 : 0, max) * 1.12 || 1] };
        const opts = Object.assign(chartSize(box), {
          scales: { x: { time: false }, y },
          axes: [Object.assign({ label: s.simClock ? 'simulated seconds since start' : 'seconds since start', labelSize: 18, size: 34 }, axis),
            Object.assign({ size: HIST.fitAxis }, axis)],
          series,
          cursor: { drag: { x: true, y: false } },
          legend: { live: true },
        });
        s.charts[name] = new uPlot(opts, chartData(name), box);
      }
      const box = $('[data-chart="acc"] .plot');
      if (s.lm) { s.charts.acc = lossChart(box, axis); emptyNotes(); return; }
      s.charts.acc = new uPlot(Object.assign(chartSize(box), {
        scales: { x: { time: false }, y: { range: (u, min, max) => [Math.max(0, Math.min(min, 0.5) - 0.05), Math.min(1, Math.max(max, 0.5) + 0.05)] } },
        axes: [Object.assign({ label: 'epoch', labelSize: 18, size: 34, incrs: [1, 2, 5, 10, 20, 50, 100] }, axis), Object.assign({ size: HIST.fitAxis }, axis)],
        series: [{ label: 'epoch' }, { label: 'test accuracy', stroke: '#1f8a4c', width: 2, points: { show: true, size: 6 },
          value: (u, v) => (v === null || v === undefined ? '–' : (100 * v).toFixed(2) + ' %') }],
        legend: { live: true },
      }), accData(), box);
      emptyNotes();
    }

    // Every chart without points says so instead of drawing empty 0-1 axes.
    function emptyNotes() {
      for (const [name, u] of Object.entries(s.charts)) HIST.markEmpty($('[data-chart="' + name + '"]'), !HIST.hasPoints(u.data));
    }

    // A language model's evaluations: validation loss (nats per token) and its perplexity,
    // on two axes.
    function lossChart(box, axis) {
      const fmt = (d) => (u, v) => (v === null || v === undefined ? '–' : v.toFixed(d));
      return new uPlot(Object.assign(chartSize(box), {
        scales: { x: { time: false }, y: {}, ppl: {} },
        axes: [Object.assign({ label: 'epoch', labelSize: 18, size: 34, incrs: [1, 2, 5, 10, 20, 50, 100] }, axis),
          Object.assign({ size: HIST.fitAxis, label: 'nats per token', labelSize: 18 }, axis),
          Object.assign({ scale: 'ppl', side: 1, size: HIST.fitAxis, label: 'perplexity', labelSize: 18 }, axis, { grid: { show: false } })],
        series: [{ label: 'epoch' },
          { label: 'validation loss', stroke: '#1f8a4c', width: 2, points: { show: true, size: 6 }, value: fmt(4) },
          { label: 'perplexity', scale: 'ppl', stroke: '#7a4cc2', width: 2, dash: [6, 4], points: { show: true, size: 6 }, value: fmt(2) }],
        legend: { live: true },
      }), lossData(), box);
    }

    function chartData(name) {
      const d = HIST.chartData(s.stores[name], RANK_CHARTS[name].smooth ? s.ma : 0);
      return name === 'sps' && s.lm ? LM.tokenColumns(d, s.lm) : d;   // a language model's node speed: tokens/s
    }
    function accData() {
      const epochs = [...s.acc.keys()].sort((a, b) => a - b);
      return [epochs, epochs.map((e) => s.acc.get(e))];
    }
    function lossData() {
      const epochs = [...s.tloss.keys()].sort((a, b) => a - b);
      return [epochs, epochs.map((e) => s.tloss.get(e)), epochs.map((e) => LM.perplexity(s.tloss.get(e)))];
    }

    // The record's time on the charts' axis: seconds since the start. A simulated job's
    // records carry simulated seconds from its start; a real one's, unix time.
    function xOf(time) {
      if (time < 1e8 && !s.simClock) { s.simClock = true; s.t0 = 0; s.axisChanged = true; }
      if (s.t0 === null) s.t0 = s.simClock ? 0 : (s.job && s.job.started) || time;
      return time - s.t0;
    }

    // One metrics record -> a point in every per-rank chart it has a value for.
    function addRecord(rec, again) {
      if (typeof rec.rank !== 'number' || typeof rec.time !== 'number') return;
      if (rec.role) s.roles[rec.rank] = rec.role;
      if (s.breakdown && !again) s.breakdown.add(rec);
      const t = xOf(rec.time);
      let rebuilt = false;
      if (rec.kind === 'step') {
        for (const k of Object.keys(RANK_CHARTS)) {
          if (RANK_CHARTS[k].workerOnly && rec.role === 'ps') continue;
          rebuilt = HIST.addPoint(s.stores[k], rec.rank, t, RANK_CHARTS[k].value(rec)) || rebuilt;
        }
        s.appended++;
      }
      if ((rec.kind === 'epoch' || rec.kind === 'final') && rec.test_accuracy !== null && rec.test_accuracy !== undefined)
        s.acc.set(rec.epoch, rec.test_accuracy);
      if ((rec.kind === 'epoch' || rec.kind === 'final') && typeof rec.test_loss === 'number') s.tloss.set(rec.epoch, rec.test_loss);
      noteSample(rec);
      const prev = s.last[rec.rank];
      if (!prev || prev.time <= rec.time) s.last[rec.rank] = rec;
      if (!s.ranks.includes(rec.rank)) {
        s.ranks.push(rec.rank);
        s.ranks.sort((a, b) => a - b);
      }
      if (rebuilt || s.axisChanged) { s.axisChanged = false; buildCharts(); }
      s.dirty = true;
      // Beyond the budget of live points, ask the server for the run downsampled again.
      if (s.appended > LIVE_POINTS * Math.max(1, s.ranks.length) && Date.now() - s.lastReload > 10000) loadHistory();
    }

    // The spec's eval_sample: the newest evaluation's text (a record or a history point).
    function noteSample(e) {
      if (typeof e.eval_sample !== 'string' || (s.sample && s.sample.time > e.time)) return;
      s.sample = { time: e.time, epoch: e.epoch, step: e.step, text: e.eval_sample };
    }

    function showSample() {
      const card = $('#sample-card');
      if (!card) return;
      card.hidden = !s.sample;
      if (!s.sample) return;
      card.querySelector('.sample-text').textContent = s.sample.text;
      card.querySelector('.sample-when').textContent = 'epoch ' + s.sample.epoch + (s.sample.step !== undefined ? ', step ' + s.sample.step : '');
    }

    // A live record (event stream): after the history's cursor only; kept until the next
    // history answer covers it.
    function liveRecord(rec, streamId, again) {
      if (s.next === null) { s.live.push([streamId, rec]); return; }   // the history is on its way
      if (streamId && !HIST.idAfter(streamId, s.next)) return;
      s.live.push([streamId, rec]);
      if (s.live.length > 20000) s.live.splice(0, s.live.length - 20000);
      addRecord(rec, again);
    }

    // The whole run, downsampled by the server (GET .../history), then the live records
    // that came after it.
    async function loadHistory() {
      if (s.reloading) return;
      s.reloading = true;
      s.lastReload = Date.now();
      try {
        const h = await api('/jobs/' + id + '/history?points=' + HISTORY_POINTS);
        if (h.from !== null && h.from < 1e8) { s.simClock = true; s.t0 = 0; }
        // A page opened before the job started has neither a start nor a first record: t0
        // stays unset until one comes (xOf, loadJob), or the axis would count unix time.
        if (s.t0 === null) s.t0 = s.simClock ? 0 : (s.job && s.job.started) || (typeof h.from === 'number' ? h.from : null);
        for (const r of h.ranks) s.roles[r.rank] = r.role;
        s.stores = HIST.fromHistory(h, s.t0);
        // per epoch: the evaluations between epoch ends (eval_every_steps: with a step) are not
        for (const a of h.accuracy) if (a.step === undefined) s.acc.set(a.epoch, a.test_accuracy);
        for (const a of h.accuracy) if (a.step === undefined && typeof a.test_loss === 'number') s.tloss.set(a.epoch, a.test_loss);
        for (const a of h.accuracy) noteSample(a);
        s.ranks = h.ranks.map((r) => r.rank);
        s.history = h;
        s.next = h.next;
        s.appended = 0;
        const pending = s.live;
        s.live = [];
        buildCharts();
        for (const [sid, rec] of pending) liveRecord(rec, sid, s.reloads > 0);
        s.reloads++;
        s.dirty = true;
      } catch (e) {
        if (s.next === null) { s.next = '0'; const p = s.live; s.live = []; for (const [sid, rec] of p) liveRecord(rec, sid); }
      } finally {
        s.reloading = false;
      }
    }

    // What the charts hold: the server's downsampled history, then the live records.
    function historyNote() {
      const note = $('#history-note'), h = s.history;
      if (!note || !h) return;
      note.textContent = 'whole run: ' + h.records.toLocaleString() + ' records downsampled by the server to at most ' + h.points +
        ' points per series' + (h.truncated ? ' (the oldest not read)' : '') + (s.appended ? ', then ' + s.appended.toLocaleString() + ' live' : '');
    }

    function redraw() {
      if (!s.dirty || s.stopped) return;
      s.dirty = false;
      historyNote();
      for (const name of Object.keys(RANK_CHARTS)) if (s.charts[name]) s.charts[name].setData(chartData(name));
      if (s.breakdown) s.breakdown.render();
      if (s.charts.acc) s.charts.acc.setData(s.lm ? lossData() : accData());
      showSample();
      emptyNotes();
      facts();
    }

    // A user's data set is its path (and format), a built-in one its name.
    function datasetName(d) {
      return ['imagefolder', 'npz', 'text', 'tokens'].includes(d.format) ? d.path + ' (' + d.format + ')' : d.name;
    }

    // What the worker found (the summary's dataset: classes, sizes, shape, the decoded
    // cache); until a summary says, what the spec asked for.
    function datasetFacts(j) {
      if (s.lm) return LM.datasetFacts(s.lm, j, datasetName(j.spec.dataset));
      const d = j.summary && j.summary.dataset;
      if (!d || typeof d !== 'object') {
        const sd = j.spec && j.spec.dataset;
        if (!sd) return '–';
        const sub = [sd.train_subset ? sd.train_subset.toLocaleString() + ' train' : '', sd.test_subset ? sd.test_subset.toLocaleString() + ' test' : '']
          .filter(Boolean).join(' / ');
        return datasetName(sd) + (sub ? ' · subsets of ' + sub : '') + ' · classes and sizes when the job ends';
      }
      let t = d.classes + ' classes · ' + d.train_samples.toLocaleString() + ' train / ' +
        d.test_samples.toLocaleString() + ' test · ' + (d.shape || []).join('×');
      if (d.cache) t += ' · cache ' + d.cache.path + ' (' + (d.cache.bytes / 1048576).toFixed(1) + ' MiB, ' +
        (d.cache.built ? 'decoded by this job' : 'mapped, nothing decoded') + ')';
      else if (d.cache_note) t += ' · no cache: ' + d.cache_note;
      return t;
    }

    // An uploaded model's summary (GET /api/v1/models/NAME, once per job page): input,
    // classes, parameters and the sha256 the job pinned; a summary that is gone or now of
    // other bytes is said so, never shown as this job's.
    function onnxFacts(j) {
      const m = j.spec && j.spec.model && typeof j.spec.model === 'object' && j.spec.model.onnx ? j.spec.model : null;
      $('#f-onnx-row').hidden = !m;
      if (!m) return;
      if (s.onnxFor !== m.onnx) {
        s.onnxFor = m.onnx;
        s.onnxDoc = undefined;
        api('/models/' + encodeURIComponent(m.onnx))
          .then((d) => { s.onnxDoc = d; onnxFacts(s.job); })
          .catch(() => { s.onnxDoc = null; onnxFacts(s.job); });
      }
      const d = s.onnxDoc, sha = m.sha256 ? m.sha256.slice(0, 12) + '…' : '–';
      let text = 'sha256 ' + sha;
      if (d && (!m.sha256 || d.sha256 === m.sha256)) {
        text = 'input ' + d.input.channels + '×' + d.input.height + '×' + d.input.width + ' · ' + d.classes + ' classes · ' +
          d.parameters.toLocaleString() + ' parameters · ' + text;
      } else if (d === null || d) {
        text += ' (the upload ' + m.onnx + (d ? ' holds other bytes now)' : ' is gone)');
      }
      $('#f-onnx').textContent = text;
      $('#f-onnx').title = m.sha256 ? 'sha256 ' + m.sha256 : '';
    }

    // The spec's precision and the kernels the summary says the products and the
    // convolutions ran on (kernels.gemm and kernels.conv: one name, or where ranks differed,
    // each distinct one; null where no rank reported one, a GPU's). Until there is a
    // summary, the spec's word only.
    function precisionFact(j) {
      const p = (j.spec && j.spec.precision) || 'fp32';
      const k = j.summary && j.summary.kernels;
      if (!k || typeof k !== 'object') return p + ' · kernels when the job ends';
      const g = k.gemm;
      if (g === null || g === undefined) return p + ' · gemm not reported (no CPU rank)';
      const c = k.conv;
      const conv = c === null || c === undefined ? '' : ' · conv ' + (Array.isArray(c) ? c.join(', ') + ' (ranks differ)' : c);
      return p + ' · gemm ' + (Array.isArray(g) ? g.join(', ') + ' (ranks differ)' : g) + conv;
    }

    // A language model's words (lm.js) and its perplexity, the exp of the newest validation loss.
    function lmFacts(j) {
      const losses = lossData()[1];
      const loss = losses.length ? losses[losses.length - 1] : j.summary && j.summary.test_loss;
      const ppl = LM.perplexity(loss);
      $('#f-perplexity-row').hidden = !s.lm;
      $('#f-perplexity').textContent = ppl === null ? '–' : ppl.toFixed(2) + ' (exp of the validation loss, ' + loss.toFixed(4) + ' nats per token)';
    }

    function facts() {
      const j = s.job;
      // An answer that comes back after the page has left this job (stop) has no page to fill.
      if (!j || s.stopped) return;
      const lm = LM.info(j);
      if (JSON.stringify(lm) !== JSON.stringify(s.lm)) {
        s.lm = lm;
        LM.apply($('#view'), lm);
        buildCharts();
        if (s.nodeRanks) loadNodes();
      }
      badge($('#job-state'), j.state);
      $('#job-name').textContent = j.name || '';
      $('#f-model').textContent = j.model + (j.spec && j.spec.dataset ? ' · ' + datasetName(j.spec.dataset) : '');
      $('#f-dataset').textContent = datasetFacts(j);
      onnxFacts(j);
      $('#f-algorithm').textContent = j.algorithm + (j.dynamic_batch ? ' · dynamic batch' : '');
      $('#f-precision').textContent = precisionFact(j);
      $('#f-workers').textContent = j.workers + (j.world && j.world !== j.workers ? ' (+ parameter server)' : '');
      const sim = j.simulated && j.spec && j.spec.simulate;
      const slow = sim ? sim.slowdown : j.spec && j.spec.emulate && j.spec.emulate.slowdown;
      $('#f-slowdown').textContent = slow && slow.length ? '[' + slow.join(', ') + ']' + (sim ? ' (host speeds)' : '') : 'none';
      emulationNote(j, !sim && slow && slow.length);
      $('#job-sim').hidden = !j.simulated;
      stalenessNote(j);
      $('#f-cluster').textContent = !sim ? 'real' : 'simulated: ' + (sim.platform ? sim.platform.split('/').pop()
        : sim.gflops + ' Gflop/s hosts, ' + sim.bandwidth_gbps + ' Gbit/s links' + (sim.gpus_per_node > 1 ? ', ' + sim.gpus_per_node + ' per node' : '')) +
        (sim.deterministic ? ', deterministic' : '');
      $('#f-started').textContent = j.started ? new Date(j.started * 1000).toLocaleTimeString() : '–';
      $('#f-runtime').textContent = runtime(j);
      $('#f-restarts').textContent = (j.restarts || 0) + (j.attempts > 1 ? ' (' + j.attempts + ' attempts)' : '');
      $('#f-reason').textContent = j.reason || '–';
      collapseBanner(j);
      // Ranks stuck in a collective (the coordinator's words, counted to the GET).
      $('#f-waiting-row').hidden = !j.stall_text;
      $('#f-waiting').textContent = j.stall_text || '';
      // A queued job's place (the API's queue, coordinator/policy.h): position, why it
      // waits, and its estimated start, or why there is none (null is not "now").
      const q = j.state === 'QUEUED' ? j.queue : null;
      $('#f-queue-row').hidden = !q;
      if (q) {
        $('#f-queue').textContent = 'position ' + q.position + ' · ' + q.reason + ' · ' + queueStart(q) + ' — ' + q.detail;
      }
      $('#f-oversub-row').hidden = !j.oversubscribed;
      $('#f-oversub').textContent = j.oversubscribed || '';
      const recs = Object.values(s.last);
      // A page opened on a finished job has no live records: the ranks' last ones, as the
      // nodes answer keeps them.
      const lasts = recs.length ? recs : (s.nodeRanks || []).filter((r) => typeof r.step === 'number' && typeof r.epoch === 'number');
      if (lasts.length) {
        const top = lasts.reduce((a, b) => (b.step > a.step ? b : a));
        const epochs = j.spec ? j.spec.epochs : '?';
        $('#f-progress').textContent = top.epoch + ' / ' + epochs + ' · step ' + top.step.toLocaleString();
      } else if (j.summary && typeof j.summary.steps === 'number') {
        // the ranks' records expired (JOB_KEYS_TTL_S): the summary's step count
        $('#f-progress').textContent = 'step ' + j.summary.steps.toLocaleString();
      } else {
        $('#f-progress').textContent = '–';
      }
      goodputFacts(recs);
      compressionFact(j, recs);
      weightsFact(j);
      const accs = accData()[1];
      const acc = accs.length ? accs[accs.length - 1] : j.summary && j.summary.test_accuracy;
      $('#f-accuracy').textContent = acc !== undefined && acc !== null ? (100 * acc).toFixed(2) + ' %' : '–';
      lmFacts(j);
      const active = !FINAL.includes(j.state);
      $('#f-owner').textContent = j.owner || 'none (from before users: only admins may change it)';
      // --policy fair: the last preemption (stopped, requeued, resumed from its checkpoint),
      // and the last shrink instead of one (a resize naming preempted_by)
      const shrink = (j.resizes || []).filter((x) => x.preempted_by).pop();
      const at = (t) => (typeof t === 'number' ? ' at ' + new Date(1000 * t).toLocaleString() : '');
      $('#f-preempted-row').hidden = !j.preempted_by && !shrink;
      $('#f-preempted').textContent = [
        j.preempted_by ? 'by ' + j.preempted_by + at(j.preempted_at) : '',
        shrink ? 'shrunk ' + shrink.from + ' → ' + shrink.to + ' ranks for ' + shrink.preempted_by + at(shrink.time) : '',
      ].filter(Boolean).join('; ');
      // stops with notice (SIGTERM, a drain): how many, and the last one's host and steps lost
      const ints = j.interruptions || [];
      const li = ints[ints.length - 1];
      $('#f-interrupted-row').hidden = !li;
      $('#f-interrupted').textContent = li
        ? (j.interruptions_total || ints.length) + ' × · last: ' + li.reason + (li.host ? ' on ' + li.host : '') +
          (li.deadline_passed ? ', killed at the drain\'s deadline' : '') +
          (typeof li.checkpoint_step === 'number'
            ? ', checkpoint of step ' + li.checkpoint_step + ', ' + li.lost_steps + ' step' + (li.lost_steps === 1 ? '' : 's') + ' lost'
            : ', no checkpoint of its own') + at(li.at)
        : '';
      // --policy hetero|agnostic: the hosts it was placed on, by class, and the policy's reason
      const pl = j.placement && j.placement.hosts_by_class;
      $('#f-placement-row').hidden = !pl;
      $('#f-placement').textContent = pl
        ? Object.keys(pl).map((k) => k + ': ' + pl[k].join(', ')).join('; ') + ' — ' + j.placement.reason
        : '';
      // its owner kept on the button: a job page drawn before /whoami answered (me still
      // null, everything shown) is corrected by loadMe's applyRole, not at the next poll
      $('#job-cancel').dataset.owner = j.owner || '';
      $('#job-cancel').hidden = !can('cancel', j.owner);
      $('#job-cancel').disabled = !active || !!j.cancel_requested;
      $('#job-cancel').textContent = j.cancel_requested && active ? 'Cancelling…' : 'Cancel';
      if (window.pacerCheckpoints) window.pacerCheckpoints.render($('#ckpts'), j.checkpoints);   // checkpoints.js
      if (window.pacerGenerate) window.pacerGenerate.render($('#gen-card'), j, can('generate', j.owner));   // generate.js
      // Only while the worker has written the file (the API names it then).
      $('#job-onnx').hidden = !j.model_onnx;
    }

    // A synchronous algorithm (no parameter server: world = workers) whose ranks recorded
    // staleness 0 for every update (ssgd applies every update on every rank at once;
    // hpsgd's and local-sgd's rounds are stale, and charted) would show two charts of flat
    // zeros: each says why there is nothing to chart instead (its data stays, for window.pacer).
    function stalenessNote(j) {
      const st = s.jobStaleness;
      const sync = j.world === j.workers && !!st && st.count > 0 && st.max === 0;
      for (const name of ['st_mean', 'st_p95']) {
        const card = $('[data-chart="' + name + '"]');
        card.querySelector('.plot').hidden = sync;
        card.querySelector('.sync-note').hidden = !sync;
        card.querySelector('.sync-note').textContent = sync ? j.algorithm + ' is synchronous: every rank applies every update at once, so ' +
          'there is no staleness (all ' + st.count.toLocaleString() + ' updates: 0). Asynchronous algorithms have one.' : '';
      }
    }

    // The noise scale in the header: the median of the chart's last NOISE_RECENT values and
    // their interquartile range, not the latest value. One estimate is a ratio of two small
    // differences of gradient norms (tr(Sigma) from the local norms less the reduced one's,
    // |G|^2 from the reduced norm less tr(Sigma) / B; common/gns.h), so the latest value of
    // two runs of one spec can differ by orders of magnitude, above all late in training
    // where |G|^2 nears 0. Without charted values: the latest record's, else the summary's.
    // The estimator's ceiling is not a measurement: records carry null, the summary says
    // noise_scale_beyond (common/gns.h gns_reported).
    function noiseText(recs, sum) {
      const whole = (v) => Math.round(v).toLocaleString();
      const unit = s.lm ? ' windows' : ' samples';   // a language model's sample is a window of tokens
      const beyond = sum.noise_scale_beyond ? 'beyond ' + whole(sum.noise_scale_beyond) + unit + ' (noise dominates)' : '';
      const spread = HIST.recentSpread(s.stores.noise, NOISE_RECENT);
      if (spread) {
        return 'median ' + whole(spread.median) + unit + ' · IQR ' + whole(spread.q1) + '–' + whole(spread.q3) + ' (last ' +
          spread.n + ' charted estimate' + (spread.n === 1 ? '' : 's') + ')' + (beyond ? ' · at the end ' + beyond : '');
      }
      const noise = recs.map((r) => r.noise_scale).filter((v) => v !== null && v !== undefined);
      const phi = noise.length ? noise[noise.length - 1] : sum.noise_scale;
      return phi !== null && phi !== undefined ? whole(phi) + unit : beyond || '–';
    }

    // The noise scale and, with algorithm.goodput, the plan in force: from the latest
    // records (rank 0's for the job-wide figures; every rank says whether it is left out).
    // A finished job without live records: its summary's figures.
    function goodputFacts(recs) {
      const sum = (s.job && s.job.summary) || {};
      const r0 = s.last[0] || recs.find((r) => r.noise_scale !== undefined);
      $('#f-noise').textContent = noiseText(recs, sum);
      const g = sum.goodput;
      const planned = (r0 && r0.lr_scale !== undefined) || !!g;
      $('#f-goodput-row').hidden = !planned;
      if (!planned) return;
      const live = r0 && r0.lr_scale !== undefined;
      const out = live ? recs.filter((r) => r.left_out).map((r) => r.rank).sort((a, b) => a - b)
        : (g.nodes_left_out || []).map((n) => n.rank);
      const why = g ? (g.nodes_left_out || []).map((n) => 'rank ' + n.rank + ': ' + n.reason).join('; ') : '';
      $('#f-goodput').textContent = 'global batch ' + num(live ? r0.global_batch : g.global_batch_final) +
        ' · efficiency ' + num(live ? r0.efficiency : g.efficiency, 3) + ' · learning rate x ' + num(live ? r0.lr_scale : g.lr_scale, 2) +
        ' · nodes left out: ' + (out.length ? 'rank ' + out.join(', ') : 'none') + (why ? ' (' + why + ')' : '');
    }

    // algorithm.compression (worker/compress.h): the kind, the ratio and the bytes per step
    // as measured: rank 0's latest step record, else the nodes answer's rank 0, else the
    // summary. A figure nobody measured is 'not measured', never 0.
    function compressionFact(j, recs) {
      const c = j.spec && j.spec.algorithm && j.spec.algorithm.compression;
      const kind = c && c.kind;
      $('#f-compression-row').hidden = !kind || kind === 'none';
      if (!kind || kind === 'none') return;
      const sum = j.summary || {};
      const node = (s.nodeRanks || []).find((r) => r.rank === 0) || {};
      const live = recs.find((r) => r.rank === 0) || {};
      const pick = (...v) => v.find((x) => typeof x === 'number');
      const ratio = pick(live.compression_ratio, node.compression_ratio, sum.compression && sum.compression.ratio);
      const bytes = pick(node.comm_bytes_per_step, sum.comm_bytes_per_step);
      $('#f-compression').textContent = kind + (kind === 'powersgd' && c.rank ? ' rank ' + c.rank : '') +
        ' · ratio ' + (ratio !== undefined ? num(ratio, 1) + 'x' : 'not measured') +
        ' · ' + (bytes !== undefined ? num(bytes, 0) + ' bytes per step' : 'bytes per step not measured');
    }

    // Fine-tuning (docs/JOB_SPEC.md "Starting from trained weights"): the summary's trainable
    // and frozen parameter counts and its init (tensors loaded, missing, unexpected), for a
    // job with init, freeze or lora. A figure the summary does not give is 'not reported',
    // never 0; the names missing or unexpected are in the title.
    function weightsFact(j) {
      const sp = j.spec || {}, sum = j.summary || {}, init = sum.init && typeof sum.init === 'object' ? sum.init : null;
      const src = sp.init && (sp.init.job ? 'job ' + sp.init.job : sp.init.safetensors || sp.init.checkpoint);
      const show = !!(src || init || (Array.isArray(sp.freeze) && sp.freeze.length) || sp.lora || sum.frozen_parameters);
      $('#f-weights-row').hidden = !show;
      if (!show) return;
      const count = (v) => typeof v === 'number' ? v.toLocaleString() : 'not reported';
      const list = (v) => Array.isArray(v) ? v.length.toLocaleString() : 'not reported';
      let text = 'trainable parameters ' + count(sum.trainable_parameters) + ' · frozen ' + count(sum.frozen_parameters);
      if (init) {
        text += ' · init from ' + (init.job ? 'job ' + init.job : init.source || src || '?') +
          (init.names === 'hf' ? ' (Hugging Face GPT-2 names)' : '') + ': ' + count(init.loaded) + ' tensors loaded, ' +
          list(init.missing) + ' missing, ' + list(init.unexpected) + ' unexpected' +
          (Array.isArray(init.mismatched) && init.mismatched.length ? ', ' + init.mismatched.length + ' of another shape' : '');
      } else if (src) {
        text += ' · init from ' + src + ': tensors loaded, missing and unexpected not reported yet';
      }
      $('#f-weights').textContent = text;
      const names = (k) => init && Array.isArray(init[k]) && init[k].length ? k + ': ' + init[k].join(', ') : '';
      $('#f-weights').title = ['missing', 'unexpected', 'mismatched'].map(names).filter(Boolean).join('\n');
    }

    // A collapse of training (worker/health.h): the current attempt's health, else the
    // summary's; the banner says since when, why, and what on_collapse does about it.
    function collapseBanner(j) {
      const b = $('#job-collapse');
      if (!b) return;
      const h = (j.health && j.health.state) ? j.health : j.summary && j.summary.health;
      if (!h || h.state !== 'collapsed') { b.hidden = true; return; }
      const act = j.spec && j.spec.on_collapse;
      const what = act === 'restart' ? ' The job restarts from the last checkpoint before it with the learning rate halved (on_collapse: restart).'
        : act === 'fail' ? ' The job stops and fails (on_collapse: fail).'
        : ' Training goes on (on_collapse: continue).';
      b.textContent = 'Training collapsed since step ' + h.since_step + ': ' + h.reason + '.' + what;
      b.hidden = false;
    }

    // Whether the emulated speeds are what the slowdowns say (worker/emulate.h): the
    // summary's verdict once the job has one, else the ranks' start-up check from the
    // nodes answer (emulation_demand_cores of emulation_cores, the most loaded host; the
    // parameter server's share is only counted in the summary). A profile that asks for
    // more cores than there are measures how the OS shares them: never shown without a word.
    function emulationNote(j, slowed) {
      const note = $('#f-emulation');
      const e = j.summary && j.summary.emulation;
      let text = '', cls = '', faithful = null;
      const final = !!(e && typeof e.demand_cores === 'number' && typeof e.cores === 'number');
      const fig = final ? { demand: e.demand_cores, cores: e.cores } : s.emulation;
      if (e && e.simulated) {
        text = '';   // simulated time: nothing is emulated by waiting
      } else if (fig) {
        faithful = final ? !!e.faithful : fig.demand <= fig.cores + 1e-9;
        const ask = 'the ranks ask for ' + fig.demand.toFixed(2) + ' of ' + fig.cores + ' cores';
        const ps = !final && j.world > j.workers ? ', the parameter server\'s share not yet counted' : '';
        if (!faithful) {
          text = 'not faithful: ' + ask + (slowed ? '; the speed and staleness charts show how the OS shares the cores, not these slowdowns'
            : '; measured speeds include core sharing');
          cls = 'bad';
        } else if (slowed) {
          text = 'faithful: ' + ask + ps;
          cls = 'ok';
        }
      } else if (slowed) {
        text = 'faithful? not known until the ranks have started';
      }
      note.textContent = text;
      note.className = 'emulation' + (cls ? ' ' + cls : '');
      note.dataset.faithful = faithful === null ? '' : String(faithful);
    }

    function liveLine() {
      const live = $('#live');
      if (!live) return;
      if (s.finished) { live.className = 'live'; live.textContent = '• finished'; return; }
      if (!s.lastEvent) return;
      const ago = (Date.now() - s.lastEvent) / 1000;
      live.className = 'live on';
      live.textContent = '• live' + (ago > 2 ? ' · last event ' + Math.round(ago) + ' s ago' : '');
    }

    // Requests can answer out of order (the 2 s poll and the one a state event starts): only
    // the answer to the latest request is used. And the API caches a job's answer for up to
    // half a second (the coordinator's --api-cache-ms): after a state event (RUNNING, or a
    // final state) an answer from before it can still come back, so the event's state stays
    // and the page asks again until the API has caught up.
    let jobSeq = 0;
    const stage = (st) => (!st || st === 'QUEUED' ? 0 : FINAL.includes(st) ? 2 : 1);
    async function loadJob() {
      const seq = ++jobSeq;
      try {
        const j = await api('/jobs/' + id);
        if (seq !== jobSeq) return;
        // A job's state only moves forward (QUEUED, then RUNNING or RESTARTING, then a final
        // one): an answer behind the latest state event is an older, cached one, so the
        // event's state stays and the page asks again.
        if (stage(j.state) < stage(s.eventState)) { setTimeout(loadJob, 700); return; }
        s.job = j;
        if (s.job.simulated && !s.simClock) {   // its records' times are simulated seconds
          s.simClock = true;
          s.t0 = 0;
          buildCharts();
        }
        if (s.t0 === null && s.job.started && !s.simClock) s.t0 = s.job.started;
        if (FINAL.includes(s.job.state) && !s.finished) {
          s.finished = true;
          loadNodes();   // its heartbeat column says "ended" from now on
        }
        facts();
        banner('');
      } catch (e) { apiError(e); }
    }

    async function loadNodes() {
      let n;
      try { n = await api('/jobs/' + id + '/nodes'); } catch (e) {
        // A finished job's page polls no more: one failed answer would leave its table
        // empty. Asked again unless the answer says the request itself is wrong (4xx).
        if (s.finished && !s.stopped && !(e.status >= 400 && e.status < 500)) setTimeout(loadNodes, 2000);
        return;
      }
      const body = $('#nodes-body');
      if (!body) return;
      body.innerHTML = '';
      s.plan = n.assignment;
      s.nodeRanks = n.ranks;
      s.jobStaleness = n.staleness;
      // The emulation check each rank published (the same for every rank of a host): the
      // most loaded host of the current attempt; the last one seen while no rank has it.
      let worst = null;
      for (const r of n.ranks) {
        const d = r.emulation_demand_cores, c = r.emulation_cores;
        if (typeof d !== 'number' || typeof c !== 'number' || !(c > 0)) continue;
        if (!worst || d / c > worst.demand / worst.cores) worst = { demand: d, cores: c };
      }
      if (worst) s.emulation = worst;
      // algorithm.shard: each rank's range of the parameters (its share of their sum) and
      // the optimizer state and gradient it keeps (the node hash's shard fields).
      const sharded = n.ranks.reduce((t, r) => t + (typeof r.shard_params === 'number' ? r.shard_params : 0), 0);
      const shardCell = (r) => {
        if (!(sharded > 0) || typeof r.shard_params !== 'number') return '–';
        const mib = (b) => (typeof b === 'number' ? (b / 1048576).toFixed(1) : '?') + ' MiB';
        return (100 * r.shard_params / sharded).toFixed(1) + ' % · state ' + mib(r.shard_state_bytes) +
          ' · gradient ' + mib(r.shard_gradient_bytes);
      };
      for (const r of n.ranks) {
        if (r.role) s.roles[r.rank] = r.role;
        const tr = el('tr');
        const rank = el('td');
        rank.append(el('span', { class: 'swatch', style: 'background:' + color(r.rank) }), document.createTextNode(r.rank));
        const st = r.staleness || {};
        const hist = el('td');
        const bars = el('span', { class: 'hist', title: (st.hist || []).map((c, b) => HIST_LABELS[b] + ': ' + c).join('\n') });
        const peak = Math.max(1, ...(st.hist || [0]));
        (st.hist || []).forEach((c) => {
          const bar = el('span', { class: c ? '' : 'zero' });
          bar.style.height = Math.max(1, Math.round((28 * c) / peak)) + 'px';
          bars.append(bar);
        });
        hist.append(bars);
        tr.append(rank, el('td', {}, r.host || '–'), el('td', {}, r.role || '–'), el('td', { class: 'num' }, num(r.slowdown)),
          el('td', { class: 'num' }, r.left_out === 1 ? 'left out' : num(r.batch)), el('td', { class: 'num' }, num(s.lm ? LM.tokensPerS(r.samples_per_s, s.lm) : r.samples_per_s, 0)),
          el('td', { class: 'num' }, num(r.step)), el('td', { class: 'num' }, num(r.loss, 4)),
          el('td', { class: 'num' }, st.count ? num(st.mean, 2) + ' / ' + num(st.p95, 0) : '–'), hist,
          // A finished job's ranks beat no more: their last beat's age would count up forever.
          el('td', { class: 'num heartbeat' }, s.finished ? 'ended' : r.heartbeat_age_s !== undefined ? num(r.heartbeat_age_s, 1) + ' s' : '–'),
          // GPU ranks with NVML (worker/nvml.h); empty elsewhere.
          el('td', { class: 'num gpu-util' }, r.gpu_util_pct !== undefined ? num(r.gpu_util_pct, 0) + ' %' : '–'),
          el('td', { class: 'num gpu-mem' }, r.gpu_mem_total_bytes ? (r.gpu_mem_used_bytes / 1073741824).toFixed(1) + ' / ' +
            (r.gpu_mem_total_bytes / 1073741824).toFixed(1) + ' GiB' : '–'),
          el('td', { class: 'num shard', title: typeof r.shard_params === 'number' ? r.shard_params.toLocaleString() + ' parameters' : '' },
            shardCell(r)));
        body.append(tr);
      }
      if (s.job) facts();   // after the table: the facts read s.nodeRanks, the table does not read them
    }

    // The time breakdown (breakdown.js) wants each rank's newest step records, which the
    // downsampled history does not keep: the stream's last two minutes before the
    // history's cursor (their stream ids are milliseconds), once, when the page opens.
    async function backfillBreakdown() {
      if (!s.breakdown || !s.next || s.next === '0') return;
      const since = Math.max(0, Number(s.next.split('-')[0]) - 120000) + '-0';
      try {
        const p = await api('/jobs/' + id + '/metrics?limit=10000&since=' + since);
        for (const rec of p.items) if (!HIST.idAfter(rec.id, s.next)) s.breakdown.add(rec);
      } catch (e) { /* the live records fill it */ }
    }

    // Live: state changes, new batch plans and every metrics record as it is written.
    const es = events('/jobs/' + id + '/events', {
      metrics: (rec, e) => {
        s.lastEvent = Date.now();
        s.events++;
        liveRecord(rec, (e.lastEventId || '').split(',')[1] || '');
      },
      state: (ev) => {
        s.lastEvent = Date.now();
        s.events++;
        if (stage(ev.state) >= stage(s.eventState)) s.eventState = ev.state;
        if (s.job) { s.job.state = ev.state; if (ev.reason !== undefined) s.job.reason = ev.reason; }
        if (FINAL.includes(ev.state)) { s.finished = true; es.close(); loadJob(); loadNodes(); }
        else if (!ev.snapshot) loadJob();
        s.dirty = true;
      },
      plan: () => { s.lastEvent = Date.now(); s.events++; loadNodes(); },
      health: () => { s.lastEvent = Date.now(); s.events++; loadJob(); },
    }, null, () => {
      if (s.finished) return;
      const live = $('#live');
      if (live) { live.className = 'live off'; live.textContent = '• reconnecting'; }
    });

    $('#job-cancel').addEventListener('click', async () => {
      try {
        s.job = await api('/jobs/' + id, { method: 'DELETE' });
        facts();
      } catch (e) { apiError(e); }
    });
    // A job's file as a download: with a token it needs the header, so it is fetched and
    // handed over as a blob; an error answer is the API's problem detail in the banner.
    const download = (link, path, name, none) => {
      link.href = API + '/jobs/' + id + path;
      link.addEventListener('click', async (e) => {
        e.preventDefault();
        try {
          const res = await fetch(link.href, { headers: token() ? { Authorization: 'Bearer ' + token() } : {} });
          if (!res.ok) {
            const p = await res.json().catch(() => null);
            banner((p && p.detail) || none);
            return;
          }
          const url = URL.createObjectURL(await res.blob());
          const a = el('a', { href: url, download: name });
          document.body.append(a);
          a.click();
          a.remove();
          setTimeout(() => URL.revokeObjectURL(url), 10000);
        } catch (err) { banner(err.message); }
      });
    };
    download($('#job-ckpt'), '/checkpoint', id + '.ckpt', 'no checkpoint');
    download($('#job-onnx'), '/model.onnx', id + '.onnx', 'no trained model yet');
    let logTimer = null;
    async function loadLog() {
      try {
        const l = await api('/jobs/' + id + '/logs?tail=60');
        const pre = $('#job-log');
        if (pre) { pre.textContent = l.text || '(empty)'; pre.scrollTop = pre.scrollHeight; }
      } catch (e) { /* the poll retries */ }
    }
    $('#job-logs-toggle').addEventListener('click', () => {
      const pre = $('#job-log');
      pre.hidden = !pre.hidden;
      clearInterval(logTimer);
      if (!pre.hidden) { loadLog(); logTimer = setInterval(loadLog, 3000); }
    });

    const resize = new ResizeObserver(() => {
      for (const [name, u] of Object.entries(s.charts)) {
        const box = $('[data-chart="' + name + '"] .plot');
        if (box) u.setSize(chartSize(box));
      }
    });
    resize.observe($('#charts'));

    // The moving average (history.js): off, or over the last W points of each rank.
    const maOn = $('#ma-on'), maWin = $('#ma-window');
    maOn.checked = localStorage.getItem('pacer.ma') === 'on';
    maWin.value = localStorage.getItem('pacer.maWindow') || '20';
    const smoothing = () => {
      s.ma = maOn.checked ? parseInt(maWin.value, 10) : 0;
      localStorage.setItem('pacer.ma', maOn.checked ? 'on' : 'off');
      localStorage.setItem('pacer.maWindow', maWin.value);
      s.dirty = true;
    };
    maOn.addEventListener('change', smoothing);
    maWin.addEventListener('change', smoothing);
    smoothing();

    buildCharts();
    loadJob().then(loadHistory).then(backfillBreakdown).then(() => { s.dirty = true; redraw(); });
    loadNodes();
    const timers = [
      setInterval(redraw, REDRAW_MS),
      setInterval(liveLine, 500),
      setInterval(() => { if (!s.finished) loadJob(); else facts(); }, 2000),
      setInterval(() => { if (!s.finished) loadNodes(); }, 2000),
    ];

    // For tests and the curious: what each chart holds.
    window.pacer = {
      job: () => s.job,
      ranks: () => s.ranks.slice(),
      clock: () => (s.simClock ? 'simulated' : 'real'),
      tmax: () => Math.max(...Object.values(s.stores).map((st) => (st.t.length ? st.t[st.t.length - 1] : -Infinity))),
      history: () => s.history,
      acc: () => accData(),
      smoothing: () => s.ma,
      xlabel: () => (s.charts.loss ? s.charts.loss.axes[0].label : null),
      events: () => s.events,
      // A chart's y scale: its distribution (3: logarithmic) and range.
      scale: (name) => {
        const u = s.charts[name];
        return u ? { distr: u.scales.y.distr, log: u.scales.y.log, min: u.scales.y.min, max: u.scales.y.max } : null;
      },
      // A chart's y axis: its width and what its widest tick label needs (label + tick + gap).
      axisRoom: (name) => {
        const u = s.charts[name];
        if (!u) return null;
        const a = u.axes[1];
        u.ctx.font = a.font[0];
        const w = Math.max(0, ...(a._values || []).map((v) => u.ctx.measureText(String(v)).width / devicePixelRatio));
        return { size: a._size, need: Math.ceil(w + a.ticks.size + a.gap), labels: (a._values || []).map(String) };
      },
      // The values a chart plots (every rank's column, no x): what a test checks for values
      // that are not measurements.
      values: (name) => {
        const u = s.charts[name];
        return u ? u.data.slice(1).map((col) => Array.from(col).filter((v) => v !== null && v !== undefined)) : [];
      },
      points: (name) => {
        const u = s.charts[name];
        if (!u) return [];
        return u.data.slice(1).map((col) => col.filter((v) => v !== null && v !== undefined).length);
      },
    };

    return {
      stop() {
        s.stopped = true;
        es.close();
        timers.forEach(clearInterval);
        clearInterval(logTimer);
        resize.disconnect();
        for (const u of Object.values(s.charts)) u.destroy();
        window.pacer = undefined;
      },
    };
  }

  route();
})();
