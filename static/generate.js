// static/generate.js - the job page's "Generate" card for a language model job (a GPT on a
// text or token data set): a prompt box under the charts whose answer streams in token by token from
// POST /api/v1/jobs/{id}/generate with Accept: text/event-stream (docs/openapi.json). Only
// shown to who may generate (the job's owner or an admin; every user under the coordinator's
// --viewers-generate, which GET /api/v1/whoami says); app.js calls render with the
// job's answer each time it loads it.
(function () {
  'use strict';

  function isTextModel(j) {
    const s = j && j.spec;
    // text, or tokens (`pacer tokenize` leaves the tokenizer beside them; without one the
    // ids are read as bytes)
    if (!s || !s.dataset || (s.dataset.format !== 'text' && s.dataset.format !== 'tokens')) return false;
    return s.model === 'gpt' || (s.model && typeof s.model === 'object' && !!s.model.gpt) || !!s.gpt;
  }

  function token() { return localStorage.getItem('pacer.token') || ''; }

  // The frames of an SSE body as they come: calls onFrame(type, data) for each.
  async function readFrames(resp, onFrame) {
    const reader = resp.body.getReader(), dec = new TextDecoder();
    let buf = '';
    for (;;) {
      const { value, done } = await reader.read();
      if (done) break;
      buf += dec.decode(value, { stream: true });
      let cut;
      while ((cut = buf.indexOf('\n\n')) >= 0) {
        const frame = buf.slice(0, cut);
        buf = buf.slice(cut + 2);
        let type = 'message', data = '';
        for (const line of frame.split('\n')) {
          if (line.startsWith('event: ')) type = line.slice(7);
          else if (line.startsWith('data: ')) data += line.slice(6);
        }
        try { onFrame(type, JSON.parse(data)); } catch (e) { /* a frame that is no JSON: skipped */ }
      }
    }
  }

  async function generate(card, id) {
    const f = card.querySelector('form'), out = card.querySelector('.gen-out'), note = card.querySelector('.gen-note');
    const body = { prompt: f.elements.prompt.value };
    const n = parseInt(f.elements.max_tokens.value, 10), t = parseFloat(f.elements.temperature.value);
    if (n > 0) body.max_tokens = n;
    if (t >= 0) body.temperature = t;
    out.textContent = '';
    note.textContent = 'generating…';
    f.elements.go.disabled = true;
    const headers = { 'Content-Type': 'application/json', Accept: 'text/event-stream' };
    if (token()) headers.Authorization = 'Bearer ' + token();
    try {
      const resp = await fetch('/api/v1/jobs/' + encodeURIComponent(id) + '/generate',
        { method: 'POST', headers, body: JSON.stringify(body) });
      if (!resp.ok) {
        const p = await resp.json().catch(() => ({}));
        note.textContent = 'refused (' + resp.status + '): ' + (p.detail || p.title || resp.statusText);
        return;
      }
      await readFrames(resp, (type, d) => {
        if (type === 'token') out.textContent += d.text;
        else if (type === 'done') {
          const rate = typeof d.tokens_per_s === 'number' ? d.tokens_per_s.toFixed(1) : '–';
          note.textContent = d.tokens + ' tokens, ' + rate + ' tokens/s' +
            (d.prompt_truncated ? '; the prompt was cut to its last ' + d.prompt_tokens + ' tokens (the window)' : '');
        } else if (type === 'error') note.textContent = 'failed: ' + d.error;
      });
    } catch (e) {
      note.textContent = 'failed: ' + e.message;
    } finally {
      f.elements.go.disabled = false;
    }
  }

  // Shows the card for a text GPT job the caller may generate from; wires it once per job.
  function render(card, j, allowed) {
    if (!card) return;
    card.hidden = !(isTextModel(j) && allowed);
    if (card.hidden || card.dataset.job === j.id) return;
    card.dataset.job = j.id;
    card.querySelector('.gen-out').textContent = '';
    card.querySelector('.gen-note').textContent = '';
    card.querySelector('form').onsubmit = (e) => {
      e.preventDefault();
      generate(card, j.id);
    };
  }

  window.pacerGenerate = { render, isTextModel };
})();
