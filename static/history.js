// static/history.js - the job page's chart data: the whole run, as the server
// downsampled it (GET /api/v1/jobs/{id}/history?points=N: min/max per time bucket,
// coordinator/jobhistory.h), with the live records of the event stream appended after it.
// When the appended points outgrow their budget (app.js: 3000 per rank) the page fetches
// the history again (the server downsamples the longer run), so a long job stays light
// in the browser too.
//
// One store per chart: x (seconds since the start) and one column per rank, a row per
// point (that rank's value, nulls for the others; uPlot's spanGaps joins them). Worker-only
// charts (node speed, staleness, batch size) never get the parameter server's rank.
// Also: the optional moving average (per rank, over its last W points) and the hover
// value (a rank's latest value at or before the cursor, not the row's null). app.js owns
// the charts; this file owns their data (and their y axes' width, fitAxis). Pure
// functions, exposed as window.pacerHistory.
(function () {
  'use strict';

  // The job page's per-rank charts and where a metrics record keeps each value; the
  // history endpoint's series names; whether the parameter server is left out.
  const CHARTS = {
    loss: { series: 'loss', value: (r) => r.loss, workerOnly: false, smooth: true },
    // The worker's node speed (common/planner.h planner_speed): samples per wall-clock
    // second of compute, the same figure the planner and the coordinator's profiles use.
    sps: { series: 'samples_per_s', value: (r) => r.samples_per_s, workerOnly: true, smooth: true },
    st_mean: { series: 'staleness_mean', value: (r) => (r.staleness ? r.staleness.mean : null), workerOnly: true, smooth: true },
    st_p95: { series: 'staleness_p95', value: (r) => (r.staleness ? r.staleness.p95 : null), workerOnly: true, smooth: true },
    batch: { series: 'batch', value: (r) => r.batch, workerOnly: true, smooth: false },
    // The gradient noise scale (common/gns.h: ssgd and hier-bsp ranks, the parameter
    // server for the asynchronous family) and, with algorithm.goodput, the global batch the
    // planner chose and the goodput measured (global batch x efficiency / step time).
    // Optional: their cards show only when a record has them. Every ssgd record carries
    // its global batch, which is news only when a planner chooses it: that card shows
    // with the goodput one (showWith), whose value only the planner's records have.
    noise: { series: 'noise_scale', value: (r) => r.noise_scale, workerOnly: false, smooth: true, optional: true },
    gbatch: { series: 'global_batch', value: (r) => r.global_batch, workerOnly: true, smooth: false, optional: true, showWith: 'goodput' },
    goodput: { series: 'goodput', value: (r) => r.goodput, workerOnly: true, smooth: true, optional: true },
  };

  // Stream ids ("1715000000123-4") in order; a missing id sorts first.
  function idAfter(a, b) {
    if (!a) return false;
    if (!b || b === '0') return true;
    const [am, as] = a.split('-').map(Number), [bm, bs] = b.split('-').map(Number);
    return am > bm || (am === bm && as > bs);
  }

  function createStore() {
    return { ranks: [], t: [], cols: [] };
  }

  // The column of rank r, added (in rank order) when first seen; true when it was new.
  function ensureRank(st, r) {
    if (st.ranks.includes(r)) return false;
    const pos = st.ranks.filter((x) => x < r).length;
    st.ranks.splice(pos, 0, r);
    st.cols.splice(pos, 0, new Array(st.t.length).fill(null));
    return true;
  }

  // One point; rows stay sorted by x (points arrive nearly in order: search from the end).
  function addPoint(st, r, x, v) {
    if (v === null || v === undefined || !Number.isFinite(v)) return false;
    const rebuilt = ensureRank(st, r);
    let i = st.t.length;
    while (i > 0 && st.t[i - 1] > x) i--;
    const ri = st.ranks.indexOf(r);
    st.t.splice(i, 0, x);
    st.cols.forEach((col, c) => col.splice(i, 0, c === ri ? v : null));
    return rebuilt;
  }

  // The stores of every chart from a history answer; x = time - t0.
  function fromHistory(h, t0) {
    const stores = {};
    for (const name of Object.keys(CHARTS)) {
      const st = createStore();
      const list = (h.series && h.series[CHARTS[name].series]) || [];
      // Merge the ranks' (already sorted) points: one row each.
      const pts = [];
      for (const s of list) for (let k = 0; k < s.t.length; k++) pts.push([s.t[k] - t0, s.rank, s.v[k]]);
      pts.sort((a, b) => a[0] - b[0]);
      for (const s of list) ensureRank(st, s.rank);
      const idx = new Map(st.ranks.map((r, i) => [r, i]));
      st.t = pts.map((p) => p[0]);
      st.cols = st.ranks.map(() => new Array(pts.length).fill(null));
      pts.forEach((p, k) => { st.cols[idx.get(p[1])][k] = p[2]; });
      stores[name] = st;
    }
    return stores;
  }

  // A trailing moving average over each column's last w non-null values; nulls stay.
  function movingAverage(col, w) {
    const out = new Array(col.length).fill(null);
    const win = [];
    let sum = 0;
    for (let i = 0; i < col.length; i++) {
      const v = col[i];
      if (v === null || v === undefined) continue;
      win.push(v);
      sum += v;
      if (win.length > w) sum -= win.shift();
      out[i] = sum / win.length;
    }
    return out;
  }

  // uPlot data for a store: [x, col...], each column smoothed when w > 1.
  function chartData(st, w) {
    return [st.t].concat(w > 1 ? st.cols.map((c) => movingAverage(c, w)) : st.cols);
  }

  // The hover value of series column col at row idx: its value there, or else its latest
  // value before (a row holds one rank's point; the legend shows every rank's).
  function valueAt(col, idx) {
    if (!col || idx === null || idx === undefined) return null;
    for (let i = idx; i >= 0; i--) if (col[i] !== null && col[i] !== undefined) return col[i];
    return null;
  }

  // A y axis as wide as its longest tick label (uPlot's size callback, for the job page's
  // and the compare view's charts: a fixed width clipped labels such as "12,000").
  function fitAxis(u, values, i, cycle) {
    const a = u.axes[i];
    if (cycle > 1 && a._size) return a._size;
    // (a log axis leaves the ticks it does not label null)
    const longest = (values || []).reduce((m, v) => (v !== null && v !== undefined && String(v).length > m.length ? String(v) : m), '');
    u.ctx.font = a.font[0];
    return Math.ceil(a.ticks.size + a.gap + (longest ? u.ctx.measureText(longest).width / devicePixelRatio : 0) + 8);
  }

  // The q-quantile (0..1) of sorted numbers, interpolated between the two nearest.
  function quantile(sorted, q) {
    if (!sorted.length) return null;
    const pos = (sorted.length - 1) * q, lo = Math.floor(pos), hi = Math.ceil(pos);
    return sorted[lo] + (sorted[hi] - sorted[lo]) * (pos - lo);
  }

  // A steadier figure than a store's latest value: the median and the quartiles of the
  // last k values of its lowest rank that has any (every ssgd rank carries the same noise
  // scale; the asynchronous family's is the parameter server's). null without a value.
  function recentSpread(st, k) {
    const col = st.cols.find((c) => c.some((v) => v !== null && v !== undefined));
    if (!col) return null;
    const vals = [];
    for (let i = col.length - 1; i >= 0 && vals.length < k; i--) if (col[i] !== null && col[i] !== undefined) vals.push(col[i]);
    vals.sort((a, b) => a - b);
    return { n: vals.length, median: quantile(vals, 0.5), q1: quantile(vals, 0.25), q3: quantile(vals, 0.75) };
  }

  // Whether uPlot data [x, col...] holds a point.
  function hasPoints(data) {
    return data.slice(1).some((col) => Array.prototype.some.call(col, (v) => v !== null && v !== undefined));
  }

  // A chart card without points says "no data yet" over its plot instead of showing empty
  // axes (uPlot draws 0-1 axes for no data); the plot keeps its place, so its width stays.
  function markEmpty(card, empty) {
    if (!card) return;
    let note = card.querySelector('.nodata');
    if (!note) {
      note = document.createElement('p');
      note.className = 'nodata muted';
      note.textContent = 'no data yet';
      card.append(note);
    }
    card.classList.toggle('empty', empty);
    note.hidden = !empty;
  }

  window.pacerHistory = {
    CHARTS, idAfter, createStore, ensureRank, addPoint, fromHistory, movingAverage, chartData, valueAt, fitAxis, quantile,
    recentSpread, hasPoints, markEmpty,
  };
})();
