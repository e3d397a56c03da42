// static/cluster.js - the dashboard's Cluster page (#/cluster): the hosts of the
// coordinator's launcher with their state (up, slow, failing, down, and why), slots, the
// jobs that hold them, devices, measured speeds per model and device (their profiles: the last benchmark's or
// the jobs'), and the last benchmark; a button runs a benchmark of a model on every host
// that is not down (POST /api/v1/cluster/benchmark, the pre-flight on demand). Polls GET
// /api/v1/cluster every 2 s. app.js routes #/cluster here (window.pacerCluster.mount);
// the API token is the one app.js keeps in localStorage.
(function () {
  'use strict';
  const API = '/api/v1';

  function token() { return localStorage.getItem('pacer.token') || ''; }

  async function call(path, method) {
    const headers = {};
    if (token()) headers.Authorization = 'Bearer ' + token();
    const res = await fetch(API + path, { method: method || 'GET', headers });
    const body = await res.json().catch(() => null);
    if (!res.ok) {
      const err = new Error((body && (body.detail || body.title)) || res.status + ' ' + res.statusText);
      err.status = res.status;
      throw err;
    }
    return body;
  }

  function el(tag, attrs, text) {
    const e = document.createElement(tag);
    for (const k of Object.keys(attrs || {})) e.setAttribute(k, attrs[k]);
    if (text !== undefined && text !== null) e.textContent = text;
    return e;
  }
  function speed(v) { return v > 0 ? Math.round(v).toLocaleString() + ' samples/s' : '–'; }
  function ago(t) {
    if (!t) return 'never';
    const s = Date.now() / 1000 - t;
    if (s < 60) return Math.max(0, Math.round(s)) + ' s ago';
    if (s < 3600) return Math.round(s / 60) + ' min ago';
    return new Date(t * 1000).toLocaleString();
  }

  // What "Last benchmark" says of a host never benchmarked: when one will run (the
  // pre-flight, coordinator/preflight.c: under --preflight auto only before a job on two or
  // more usable hosts one of which has no measured speed for its model; one host's ranks
  // all run at one speed, so there is nothing to balance), never a bare "never".
  function notYet(nhosts) {
    return nhosts >= 2
      ? 'runs before a job\'s first launch when a host has no measured speed for its model (--preflight auto), or with Run benchmark'
      : 'not run before jobs on a single host (its ranks share one speed: nothing to balance; --preflight always would); Run benchmark measures it';
  }

  // One row per host (pure but for the DOM: exposed for tests through rows()); nhosts:
  // how many hosts the cluster has.
  function hostRow(h, nhosts) {
    const tr = el('tr', { 'data-host': h.name });
    tr.append(el('td', {}, h.name));
    const st = el('td');
    st.append(el('span', { class: 'badge host-' + h.state }, h.state));
    if (h.reason) st.append(el('div', { class: 'muted small' }, h.reason));
    // an admin's drain: no new ranks go there, its jobs move away with notice
    if (h.draining) {
      st.append(' ', el('span', { class: 'badge host-draining' }, 'draining'));
      const until = h.drain_deadline ? new Date(h.drain_deadline * 1000).toLocaleString() : '';
      st.append(el('div', { class: 'muted small' },
        'drain' + (h.drain_reason ? ': ' + h.drain_reason : '') + (until ? ' (jobs gone by ' + until + ')' : '')));
    }
    tr.append(st);
    tr.append(el('td', { class: 'num' }, String(h.slots)));
    // who holds it (the jobs whose ranks fill its slots); absent from an older coordinator
    const held = el('td');
    for (const id of h.jobs || []) held.append(el('a', { href: '#/jobs/' + id }, id), ' ');
    if (!(h.jobs || []).length) held.textContent = h.jobs ? 'free' : '–';
    tr.append(held);
    tr.append(el('td', {}, (h.devices || []).join(', ') || '–'));
    const sp = el('td');
    for (const s of h.speeds || []) sp.append(el('div', {}, s.model + ' on ' + s.device + ': ' + speed(s.samples_per_s)));
    if (!(h.speeds || []).length) sp.textContent = '–';
    tr.append(sp);
    const b = h.benchmark;
    const bt = el('td');
    if (!b) bt.append(el('div', { class: 'not-yet' }, 'not yet'), el('div', { class: 'muted small' }, notYet(nhosts)));
    else if (b.running) bt.textContent = b.model + ': running…';
    else if (b.error) bt.append(el('div', {}, b.model + ', ' + ago(b.time) + ': failed'), el('div', { class: 'muted small' }, b.error));
    else bt.textContent = b.model + ', ' + ago(b.time) + ': ' + speed(b.samples_per_s) + ' (' + Math.round(b.ratio * 100) + '% of the median)';
    tr.append(bt);
    return tr;
  }

  function mount(view, banner) {
    view.innerHTML = '';
    const card = el('section', { class: 'card' });
    const head = el('div', { class: 'card-head' });
    head.append(el('h1', {}, 'Cluster'));
    const tools = el('div', { class: 'tools' });
    // The catalog's models (GET /api/v1/models); the benchmark runs each on the data set
    // the catalog trains it on (the coordinator's default when none is asked for).
    const pick = el('select', { id: 'bench-model' });
    call('/models').then((r) => {
      for (const m of (r && r.models) || []) pick.append(el('option', { value: m.name }, m.name));
    }).catch((e) => { if (banner) banner(e.message); });
    const run = el('button', { id: 'bench-run', type: 'button', class: 'primary' }, 'Run benchmark');
    const status = el('span', { id: 'bench-status', class: 'muted' });
    const label = el('label', {}, 'Model ');
    label.append(pick);
    // A benchmark is an admin's: other roles see the results, not the button.
    // (marked data-needs: app.js hides them again once it knows who the caller is)
    label.dataset.needs = run.dataset.needs = 'cluster';
    const role = window.pacerRole;
    if (role && !role.can('cluster')) label.hidden = run.hidden = true;
    tools.append(label, run, status);
    head.append(tools);
    card.append(head);
    const table = el('table', { class: 'nodes', id: 'hosts' });
    const thead = el('thead');
    const htr = el('tr');
    for (const [t, c] of [['Host'], ['State'], ['Slots', 'num'], ['Jobs'], ['Devices'], ['Measured speed'], ['Last benchmark']])
      htr.append(el('th', c ? { class: c } : {}, t));
    thead.append(htr);
    const tbody = el('tbody', { id: 'hosts-body' });
    table.append(thead, tbody);
    card.append(table);
    const empty = el('p', { class: 'empty muted', id: 'hosts-empty', hidden: '' }, 'No daemon has published its hosts yet.');
    card.append(empty);
    view.append(card);

    let stopped = false;
    let timer = null;
    let last = null;
    // The benchmark this page started: its note stays until every host it named has a
    // result newer than the one it had when the button was pressed (the hosts' list comes
    // from the coordinator's published state, a tick behind the POST's answer).
    let pending = null;
    const benchKey = (h) => (h && h.benchmark ? [h.benchmark.time, h.benchmark.model, h.benchmark.running].join() : '');
    async function refresh() {
      try {
        const c = await call('/cluster');
        const hosts = (c.coordinator && c.coordinator.hosts) || [];
        last = hosts;
        tbody.innerHTML = '';
        for (const h of hosts) tbody.append(hostRow(h, hosts.length));
        empty.hidden = hosts.length > 0;
        const running = hosts.some((h) => h.benchmark && h.benchmark.running);
        run.disabled = running;
        if (pending && pending.hosts && !running && pending.hosts.every((name) => {
          const h = hosts.find((x) => x.name === name);
          return !h || (h.benchmark && !h.benchmark.running && benchKey(h) !== pending.before[name]);
        })) {
          status.textContent = '';
          pending = null;
        }
      } catch (e) {
        if (banner) banner(e.status === 401 ? 'The coordinator wants an API token: enter it at the top right.' : e.message);
      }
      if (!stopped) timer = setTimeout(refresh, 2000);
    }
    run.addEventListener('click', async () => {
      run.disabled = true;
      status.textContent = 'starting…';
      const before = {};
      for (const h of last || []) before[h.name] = benchKey(h);
      pending = null;
      try {
        const r = await call('/cluster/benchmark?model=' + encodeURIComponent(pick.value), 'POST');
        status.textContent = 'benchmarking ' + r.model + ' on ' + r.hosts.join(', ') + ' (' + r.steps + ' steps each)';
        pending = { hosts: r.hosts, before };
      } catch (e) {
        status.textContent = e.status === 409 ? 'a benchmark is already running' : 'refused: ' + e.message;
      }
      clearTimeout(timer);
      refresh();
    });
    refresh();
    window.pacerCluster.rows = () => last;
    return { stop() { stopped = true; clearTimeout(timer); } };
  }

  window.pacerCluster = { mount, hostRow, notYet, rows: () => null };
})();
