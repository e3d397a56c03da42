// static/breakdown.js - the job page's "Where the time goes" panel: per rank, a
// stacked bar of the mean step over its last N step records, split into the phases the
// worker measures (common/phases.h: data, compute, comm, compress, wait, optimizer,
// emulated, other; they add up to step_s), and the rank that holds the job back.
//
// Who holds the job back: the worker rank with the most busy time per step (step_s
// minus wait: the others wait for it at the barrier, or, asynchronously, it pushes the
// fewest gradients). "By how much": its busy time minus the next busiest worker's, the
// most a step could shorten if it were no slower than that one. app.js feeds every
// metrics record in (add) and calls render when it redraws.
(function () {
  'use strict';
  const PHASES = ['data', 'compute', 'emulated', 'compress', 'comm', 'optimizer', 'wait', 'other'];
  const COLORS = { data: '#8e6c8a', compute: '#3b6fd4', emulated: '#9fb7e8', compress: '#f2c14e', comm: '#e08a2c', optimizer: '#2f9e6e',
                   wait: '#c9ccd3', other: '#5b606b' };
  const N = 50;

  function ms(v) { return (v * 1000).toFixed(v < 0.01 ? 2 : 1) + ' ms'; }

  // Pure: {ranks: [{rank, role, steps, step_s, phases: {...}, busy_s}], straggler, by_s}
  // from a map rank -> array of step records (newest last). Exposed for tests.
  function summarise(byRank) {
    const ranks = [];
    for (const [rank, recs] of byRank) {
      if (!recs.length) continue;
      const ph = {};
      let wall = 0;
      for (const p of PHASES) ph[p] = 0;
      for (const r of recs) {
        wall += r.step_s;
        for (const p of PHASES) ph[p] += (r.phases[p] || 0);
      }
      const n = recs.length;
      for (const p of PHASES) ph[p] /= n;
      ranks.push({ rank, role: recs[recs.length - 1].role || 'worker', steps: n, step_s: wall / n, phases: ph,
                   busy_s: wall / n - ph.wait });
    }
    ranks.sort((a, b) => a.rank - b.rank);
    const workers = ranks.filter((r) => r.role !== 'ps').sort((a, b) => b.busy_s - a.busy_s);
    let straggler = null, by = 0;
    if (workers.length > 1) {
      straggler = workers[0].rank;
      by = workers[0].busy_s - workers[1].busy_s;
    }
    return { ranks, straggler, by_s: by };
  }

  function create(box) {
    const byRank = new Map();
    let dirty = false;
    function add(rec) {
      if (rec.kind !== 'step' || !rec.phases || typeof rec.step_s !== 'number' || typeof rec.rank !== 'number') return;
      let a = byRank.get(rec.rank);
      if (!a) { a = []; byRank.set(rec.rank, a); }
      // Keep the newest N by step number (records can arrive slightly out of order).
      let i = a.length;
      while (i > 0 && a[i - 1].step > rec.step) i--;
      a.splice(i, 0, { step: rec.step, step_s: rec.step_s, phases: rec.phases, role: rec.role });
      if (a.length > N) a.splice(0, a.length - N);
      dirty = true;
    }
    function render() {
      if (!dirty || !box) return;
      dirty = false;
      const sum = summarise(byRank);
      box.innerHTML = '';
      if (!sum.ranks.length) return;
      const widest = Math.max(...sum.ranks.map((r) => r.step_s)) || 1;
      const who = document.createElement('p');
      who.className = 'breakdown-verdict';
      who.dataset.straggler = sum.straggler === null ? '' : String(sum.straggler);
      who.textContent = sum.straggler === null
        ? 'One worker: nothing to compare.'
        : 'Rank ' + sum.straggler + ' holds the job back: ' + ms(sum.by_s) +
          ' more busy time per step than the next slowest worker (step time minus waiting, last ' + N + ' steps).';
      box.append(who);
      for (const r of sum.ranks) {
        const row = document.createElement('div');
        row.className = 'breakdown-row';
        row.dataset.rank = String(r.rank);
        row.style.cssText = 'display:flex;align-items:center;gap:8px;margin:3px 0;font-size:13px';
        const label = document.createElement('span');
        label.style.cssText = 'width:110px;flex:none' + (r.rank === sum.straggler ? ';font-weight:600' : '');
        label.textContent = 'rank ' + r.rank + (r.role === 'ps' ? ' (ps)' : '');
        const bar = document.createElement('span');
        bar.style.cssText = 'display:flex;height:16px;flex:none;width:' + Math.max(1, (60 * r.step_s) / widest) + '%';
        bar.title = PHASES.map((p) => p + ': ' + ms(r.phases[p])).join('\n');
        for (const p of PHASES) {
          const seg = document.createElement('span');
          seg.dataset.phase = p;
          seg.style.cssText = 'height:100%;background:' + COLORS[p] + ';width:' + ((100 * r.phases[p]) / (r.step_s || 1)) + '%';
          bar.append(seg);
        }
        const val = document.createElement('span');
        val.className = 'muted';
        val.textContent = ms(r.step_s) + ' / step (' + r.steps + ' steps)';
        row.append(label, bar, val);
        box.append(row);
      }
      const legend = document.createElement('p');
      legend.className = 'muted';
      legend.style.cssText = 'font-size:12px';
      for (const p of PHASES) {
        const sw = document.createElement('span');
        sw.style.cssText = 'display:inline-block;width:10px;height:10px;margin:0 4px 0 10px;background:' + COLORS[p];
        legend.append(sw, document.createTextNode(p));
      }
      box.append(legend);
    }
    return { add, render, summarise: () => summarise(byRank) };
  }

  window.pacerBreakdown = { create, summarise, PHASES };
})();
