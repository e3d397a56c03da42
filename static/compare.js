// static/compare.js - the compare view, #/compare?ids=j-1,j-2[,...]: two or
// more jobs' training loss and test accuracy overlaid against a selectable x axis (time
// since the start, epochs, samples), and their specs side by side with the fields that
// differ highlighted. Reached from the job list (tick two or more jobs, "Compare").
//
// Each job's curves come from GET /api/v1/jobs/{id}/history (the whole run, downsampled on
// the server): "job_loss" is the mean loss of the workers per time bucket with the job's
// samples so far and epoch; "accuracy" the test evaluations. The fractional epoch of a
// loss point is interpolated in time between the epochs' ends (their evaluation records).
// app.js routes here with its helpers (api, el, mount, ...); window.pacer.compare exposes
// what the charts hold, for tests.
(function () {
  'use strict';

  const COLORS = ['#2f6fde', '#e4572e', '#17a2b8', '#f0a202', '#6f42c1', '#28a745', '#d63384', '#795548'];
  const MAX_JOBS = 8;
  const LM = window.pacerLM;   // lm.js: a language model's words
  const POINTS = 1000;

  // Flattens a spec into dotted keys ("algorithm.name") -> JSON text of the value.
  function flatten(o, prefix, out) {
    out = out || {};
    for (const k of Object.keys(o || {})) {
      const v = o[k], key = prefix ? prefix + '.' + k : k;
      if (v && typeof v === 'object' && !Array.isArray(v)) flatten(v, key, out);
      else out[key] = JSON.stringify(v);
    }
    return out;
  }

  // The keys whose values differ between the flattened specs (absent counts as a value).
  function differing(flats) {
    const keys = new Set();
    for (const f of flats) for (const k of Object.keys(f)) keys.add(k);
    return [...keys].sort().filter((k) => new Set(flats.map((f) => (k in f ? f[k] : '(absent)'))).size > 1);
  }

  // time -> fractional epoch for one job: epoch e runs from the end of e-1 (its evaluation
  // record; the job's first record for e = 1) to its own end; a running epoch is assumed
  // as long as the one before it.
  function epochOf(h) {
    const ends = new Map();
    for (const a of h.accuracy) ends.set(a.epoch, Math.max(ends.has(a.epoch) ? ends.get(a.epoch) : -Infinity, a.time));
    return (t, e) => {
      const start = e > 1 ? ends.get(e - 1) : h.from;
      if (start === undefined || start === null) return e - 0.5;
      let end = ends.get(e);
      if (end === undefined) {
        const prev = e > 1 ? ends.get(e - 1) - (e > 2 ? ends.get(e - 2) : h.from) : h.to - start;
        end = start + (prev > 0 ? prev : 1);
      }
      const f = end > start ? (t - start) / (end - start) : 1;
      return e - 1 + Math.min(1, Math.max(0, f));
    };
  }

  // A job's curves against x: {loss: [[x], [y]], acc: [[x], [y]]}, x ascending.
  function curves(job, h, xkind) {
    const sim = job.simulated || (h.from !== null && h.from < 1e8);
    const t0 = sim ? 0 : job.started || h.from || 0;
    const ep = epochOf(h);
    const jl = h.job_loss;
    const lossX = jl.t.map((t, k) => (xkind === 'epoch' ? ep(t, jl.epoch[k]) : xkind === 'samples' ? jl.samples[k] : t - t0));
    // Against epochs, one point per epoch: an evaluation between epoch ends (with a step)
    // only against samples or time.
    const accs = xkind === 'epoch' ? h.accuracy.filter((a) => a.step === undefined) : h.accuracy;
    const accX = accs.map((a) => (xkind === 'epoch' ? a.epoch : xkind === 'samples' ? a.samples : a.time - t0));
    const sorted = (xs, ys) => {
      const idx = xs.map((_, i) => i).sort((a, b) => xs[a] - xs[b]);
      return [idx.map((i) => xs[i]), idx.map((i) => ys[i])];
    };
    return { loss: sorted(lossX, jl.loss), acc: sorted(accX, accs.map((a) => a.test_accuracy)) };
  }

  // Several [x, y] tables -> uPlot data [x, y1, y2, ...] on the union of their x values.
  function join(tables) {
    const xs = [...new Set(tables.flatMap((t) => t[0]))].sort((a, b) => a - b);
    const pos = new Map(xs.map((x, i) => [x, i]));
    const cols = tables.map((t) => {
      const c = new Array(xs.length).fill(null);
      t[0].forEach((x, i) => { c[pos.get(x)] = t[1][i]; });
      return c;
    });
    return [xs].concat(cols);
  }

  function smooth(col, w) {
    return window.pacerHistory && w > 1 ? window.pacerHistory.movingAverage(col, w) : col;
  }

  function view(ctx, ids) {
    const { api, el, mount, $, apiError } = ctx;
    mount('tpl-compare');
    ids = [...new Set(ids)].filter((id) => /^j-[0-9]+$/.test(id)).slice(0, MAX_JOBS);
    $('#cmp-ids').textContent = ids.join(' · ');
    const s = { jobs: [], hist: [], charts: {}, xkind: sessionStorage.getItem('pacer.cmpX') || 'time', diffs: [] };
    $('#cmp-x').value = s.xkind;
    let stopped = false;

    const XLABEL = { time: 'seconds since start', epoch: 'epoch', samples: 'samples (all workers)' };
    const axis = { stroke: '#6b7385', grid: { stroke: '#eef0f4', width: 1 }, ticks: { stroke: '#e2e5eb', width: 1 } };
    const size = (box) => ({ width: Math.max(280, box.clientWidth), height: 260 });

    function draw() {
      for (const u of Object.values(s.charts)) u.destroy();
      s.charts = {};
      if (!s.jobs.length || typeof uPlot !== 'function') return;
      const cs = s.jobs.map((j, i) => curves(j, s.hist[i], s.xkind));
      const w = $('#cmp-ma').checked ? 20 : 0;
      const lossData = join(cs.map((c) => c.loss));
      for (let i = 1; i < lossData.length; i++) lossData[i] = smooth(lossData[i], w);
      const accData = join(cs.map((c) => c.acc));
      const fmt = (d) => (u, v, si, idx) => {
        const x = window.pacerHistory ? window.pacerHistory.valueAt(u.data[si], idx) : v;
        return x === null || x === undefined ? '–' : d(x);
      };
      const series = (label, d) => [{ label: XLABEL[s.xkind], value: (u, v) => (v === null || v === undefined ? '–' : +v.toPrecision(5)) }]
        .concat(s.jobs.map((j, i) => ({ label: j.id + ' ' + (j.name || ''), stroke: COLORS[i % COLORS.length], width: 1.5,
          spanGaps: true, points: { show: label === 'acc', size: 6 }, value: fmt(d) })));
      const mk = (name, data, d, y) => {
        const box = $('[data-cmp="' + name + '"] .plot');
        s.charts[name] = new uPlot(Object.assign(size(box), {
          scales: { x: { time: false }, y: y || {} },
          axes: [Object.assign({ label: XLABEL[s.xkind], labelSize: 18, size: 34 }, axis), Object.assign({ size: window.pacerHistory ? window.pacerHistory.fitAxis : 58 }, axis)],
          series: series(name, d), cursor: { drag: { x: true, y: false } }, legend: { live: true },
        }), data, box);
        if (window.pacerHistory) window.pacerHistory.markEmpty(box.parentNode, !window.pacerHistory.hasPoints(data));
      };
      mk('loss', lossData, (x) => x.toPrecision(4));
      mk('acc', accData, (x) => (100 * x).toFixed(2) + ' %',
        { range: (u, min, max) => [Math.max(0, Math.min(min, 0.5) - 0.05), Math.min(1, Math.max(max, 0.5) + 0.05)] });
    }

    function specs() {
      const table = $('#cmp-specs');
      const flats = s.jobs.map((j) => flatten(j.spec || {}));
      s.diffs = differing(flats);
      const head = el('tr');
      head.append(el('th', {}, 'field'));
      s.jobs.forEach((j, i) => {
        const th = el('th');
        th.append(el('span', { class: 'swatch', style: 'background:' + COLORS[i % COLORS.length] }), el('a', { href: '#/jobs/' + j.id }, j.id));
        head.append(th);
      });
      table.tHead.innerHTML = '';
      table.tHead.append(head);
      const body = table.tBodies[0];
      body.innerHTML = '';
      // The outcome first (not spec fields: never highlighted), then every spec field.
      const outcome = [
        ['state', (j) => j.state],
        // a language model's (lm.js): next-token accuracy, loss in nats per token with its
        // perplexity, tokens per second
        ['test accuracy', (j) => (j.summary && typeof j.summary.test_accuracy === 'number' ? (100 * j.summary.test_accuracy).toFixed(2) + ' %' +
          (LM.info(j) ? ' (next token)' : '') : '–')],
        ['test loss', (j) => {
          const l = j.summary && j.summary.test_loss, ppl = LM.info(j) ? LM.perplexity(l) : null;
          return typeof l === 'number' ? l.toFixed(4) + (ppl !== null ? ' nats per token (perplexity ' + ppl.toFixed(2) + ')' : '') : '–';
        }],
        ['throughput', (j) => {
          const sum = j.summary || {}, lm = LM.info(j);
          const v = lm ? sum.train_tokens_per_s : sum.train_samples_per_s;
          return typeof v === 'number' ? Math.round(v).toLocaleString() + (lm ? ' tokens/s' : ' samples/s') : '–';
        }],
        ['runtime', (j) => (j.started ? Math.round((j.finished || Date.now() / 1000) - j.started) + ' s' : '–')],
      ];
      for (const [name, f] of outcome) {
        const tr = el('tr', { class: 'outcome' });
        tr.append(el('td', {}, name), ...s.jobs.map((j) => el('td', {}, f(j))));
        body.append(tr);
      }
      // The fields that differ first (and, until "show all fields" is ticked, only they:
      // a spec has some 70 fields, most of them the same in jobs worth comparing).
      const all = [...new Set(flats.flatMap((f) => Object.keys(f)))].sort();
      const keys = s.diffs.concat(all.filter((k) => !s.diffs.includes(k)));
      const same = keys.length - s.diffs.length;
      $('#cmp-diff-note').textContent = (s.diffs.length ? s.diffs.length + ' field' + (s.diffs.length === 1 ? ' differs' : 's differ') +
        ' (first, highlighted)' : 'the specs are the same') + '; ' + same + ' the same' + ($('#cmp-all').checked ? '' : ', hidden');
      for (const k of keys) {
        const diff = s.diffs.includes(k);
        const tr = el('tr', diff ? { class: 'diff', 'data-key': k } : { 'data-key': k });
        tr.append(el('td', {}, k), ...flats.map((f) => el('td', {}, k in f ? f[k] : '–')));
        body.append(tr);
      }
    }

    async function load() {
      try {
        const got = await Promise.all(ids.map((id) => Promise.all([api('/jobs/' + id), api('/jobs/' + id + '/history?points=' + POINTS)])));
        if (stopped) return;
        s.jobs = got.map((g) => g[0]);
        s.hist = got.map((g) => g[1]);
        specs();
        draw();
      } catch (e) { apiError(e); }
    }

    $('#cmp-x').addEventListener('change', () => {
      s.xkind = $('#cmp-x').value;
      sessionStorage.setItem('pacer.cmpX', s.xkind);
      draw();
    });
    $('#cmp-ma').addEventListener('change', draw);
    $('#cmp-all').addEventListener('change', () => {
      $('#cmp-specs').classList.toggle('only-diff', !$('#cmp-all').checked);
      if (s.jobs.length) specs();
    });
    const resize = new ResizeObserver(() => {
      for (const [name, u] of Object.entries(s.charts)) {
        const box = $('[data-cmp="' + name + '"] .plot');
        if (box) u.setSize(size(box));
      }
    });
    resize.observe($('#cmp-charts'));
    if (ids.length < 2) ctx.banner('Pick two or more jobs to compare (tick them in the job list).');
    load();
    // Running jobs go on: their curves are fetched again every 5 s.
    const timer = setInterval(() => { if (s.jobs.some((j) => !['SUCCEEDED', 'FAILED', 'CANCELLED'].includes(j.state))) load(); }, 5000);

    window.pacer = {
      compare: {
        ids: () => ids.slice(),
        xkind: () => s.xkind,
        // Per chart, the points each job's series holds (non-null), in the order of ids.
        points: (name) => (s.charts[name] ? s.charts[name].data.slice(1).map((c) => c.filter((v) => v !== null && v !== undefined).length) : []),
        xmax: (name) => (s.charts[name] ? s.charts[name].data[0][s.charts[name].data[0].length - 1] : null),
        diffs: () => s.diffs.slice(),
      },
    };
    return {
      stop() {
        stopped = true;
        clearInterval(timer);
        resize.disconnect();
        for (const u of Object.values(s.charts)) u.destroy();
        window.pacer = undefined;
      },
    };
  }

  window.pacerCompare = { view, flatten, differing, epochOf, join };
})();
