// static/checkpoints.js - the job page's "Checkpoints" panel (job lifecycle): the
// checkpoints the job keeps (checkpoint.keep_last, keep_best; docs/JOB_SPEC.md "Checkpoint
// retention") as GET /api/v1/jobs/{id} lists them in "checkpoints": step, epoch, test
// accuracy, size, which is the latest and which the best, and the space they use. app.js
// calls render with the job's answer each time it loads it.
(function () {
  'use strict';

  function bytes(b) {
    const u = ['B', 'KiB', 'MiB', 'GiB', 'TiB'];
    let i = 0;
    while (b >= 1024 && i < u.length - 1) { b /= 1024; i++; }
    return (i ? b.toFixed(1) : String(b)) + ' ' + u[i];
  }

  function cell(text, cls) {
    const td = document.createElement('td');
    if (cls) td.className = cls;
    td.textContent = text;
    return td;
  }

  // The stored epoch is the count of epochs completed (common/ckptdir.h), where the page
  // counts epochs from 1: shown as "epochs done", the epoch it was written in alongside.
  function epochCell(e) {
    if (e === null || e === undefined) return cell('?', 'num');
    const td = cell(String(e), 'num');
    td.title = e === 0 ? 'no epoch completed: written during epoch 1'
      : e + ' epoch' + (e === 1 ? '' : 's') + ' completed: written at the end of epoch ' + e + ' or during epoch ' + (e + 1);
    return td;
  }

  // card: the panel (hidden until the job has a checkpoint directory); ck: the answer's
  // "checkpoints" (undefined before the launch).
  function render(card, ck) {
    if (!card) return;
    card.hidden = !ck;
    if (!ck) return;
    const items = ck.items || [];
    card.querySelector('.ckpt-total').textContent = items.length + ' kept · ' + bytes(ck.total_bytes || 0) +
      (ck.error ? ' · ' + ck.error : '');
    const body = card.querySelector('tbody');
    body.innerHTML = '';
    for (const c of items) {
      const tr = document.createElement('tr');
      if (c.best) tr.className = 'best';
      const flags = [c.latest ? 'latest' : '', c.best ? 'best' : ''].filter(Boolean).join(', ');
      tr.append(cell(c.step === null ? '?' : c.step.toLocaleString(), 'num'), epochCell(c.epoch),
        cell(c.test_accuracy === null ? '–' : (100 * c.test_accuracy).toFixed(2) + ' %', 'num'), cell(bytes(c.bytes), 'num'),
        cell(flags || ''), cell(c.file));
      body.append(tr);
    }
  }

  window.pacerCheckpoints = { render, bytes };
})();
