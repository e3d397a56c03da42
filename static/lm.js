// static/lm.js - a language model's words for the job page and the compare view. A job
// whose data set is text or token files (dataset.format text | tokens: the built-in GPT,
// or an imported model over token ids) trains on windows of block_size tokens: its
// classes are a vocabulary (of a tokenizer: bytes, chars, BPE, or ids read from token
// files), a sample is a window, its node speed is shown in tokens per second (the ranks'
// samples/s x block_size, the same measurement; none measured shows as missing, never 0),
// its test accuracy is the next-token accuracy and its test loss is in nats per token,
// with perplexity exp(loss). Elements of the page that name an image classifier's figure
// carry the language model's words in data-lm (and data-lm-title), {T} standing for the
// window's length: apply() swaps them in and back. Pure functions, window.pacerLM.
(function () {
  'use strict';

  const FORMATS = ['text', 'tokens'];
  const pos = (v) => (typeof v === 'number' && v > 0 ? v : null);

  // How the data became tokens, for people: the summary's word when the worker wrote one,
  // else the spec's.
  function tokenizerName(sd, d) {
    const w = d.tokenizer || (sd.format === 'tokens' ? 'tokens' : sd.tokenizer && typeof sd.tokenizer === 'object' ? 'bpe' : sd.tokenizer || 'bytes');
    return w === 'tokens' ? 'token files' : w === 'bpe' ? 'BPE' : w;
  }

  // null for an image job; else what is known of the language model: block (tokens per
  // window), vocab (the vocabulary's size) and tokenizer, each null until known (the
  // summary says them when the job ends; the built-in GPT's spec before).
  function info(j) {
    const sd = j && j.spec && j.spec.dataset;
    if (!sd || !FORMATS.includes(sd.format)) return null;
    const sum = j.summary && typeof j.summary === 'object' ? j.summary : {};
    const d = sum.dataset && typeof sum.dataset === 'object' ? sum.dataset : {};
    const gpt = j.spec.model && typeof j.spec.model === 'object' && j.spec.model.gpt ? j.spec.model.gpt : null;
    const tokenizer = tokenizerName(sd, d);
    return {
      // the built-in GPT's window defaults to 64 tokens when neither the model nor the data set gives one
      block: pos(sum.block_size) || pos(d.block_size) || (gpt && pos(gpt.block_size)) || pos(sd.block_size) || (gpt ? 64 : null),
      vocab: pos(sum.vocab_size) || pos(d.vocab_size) || (gpt && pos(gpt.vocab_size)) || pos(sd.vocab_size) || (tokenizer === 'bytes' ? 256 : null),
      tokenizer,
    };
  }

  function tokensPerS(samplesPerS, lm) {
    return typeof samplesPerS === 'number' && lm && lm.block ? samplesPerS * lm.block : null;
  }

  function perplexity(loss) {
    return typeof loss === 'number' && Number.isFinite(loss) ? Math.exp(loss) : null;
  }

  // The Data set line: what the worker found, else what the spec asked for.
  function datasetFacts(lm, j, name) {
    const d = j.summary && j.summary.dataset && typeof j.summary.dataset === 'object' ? j.summary.dataset : null;
    const sd = j.spec.dataset;
    const vocab = lm.vocab ? 'vocabulary ' + lm.vocab.toLocaleString() + ' (' + lm.tokenizer + ')' : 'vocabulary of the ' + lm.tokenizer + ' tokenizer';
    const windows = lm.block ? 'windows of ' + lm.block + ' tokens' : 'windows of the model\'s length';
    if (!d) {
      const sub = [sd.train_subset ? sd.train_subset.toLocaleString() + ' train' : '', sd.test_subset ? sd.test_subset.toLocaleString() + ' test' : '']
        .filter(Boolean).join(' / ');
      return name + ' · ' + vocab + ' · ' + windows + (sub ? ' · subsets of ' + sub + ' windows' : '') + ' · window counts when the job ends';
    }
    const tr = typeof d.train_windows === 'number' ? d.train_windows : d.train_samples;
    const te = typeof d.test_windows === 'number' ? d.test_windows : d.test_samples;
    let t = vocab + ' · ' + windows + ' · ' + tr.toLocaleString() + ' train / ' + te.toLocaleString() + ' test windows';
    if (d.cache) t += ' · token cache ' + d.cache.path + ' (' + (d.cache.bytes / 1048576).toFixed(1) + ' MiB)';
    return t;
  }

  // The node-speed chart's columns (samples/s per rank) in tokens/s; missing stays missing.
  function tokenColumns(data, lm) {
    return [data[0], ...data.slice(1).map((col) => col.map((v) => (v === null || v === undefined ? null : tokensPerS(v, lm))))];
  }

  // The page's words: the language model's (data-lm, {T} = the window) or, lm null, the
  // image classifier's they replaced.
  function apply(root, lm) {
    for (const e of root.querySelectorAll('[data-lm]')) {
      if (e.dataset.img === undefined) e.dataset.img = e.textContent;
      e.textContent = lm ? e.dataset.lm.replace('{T}', lm.block || 'T') : e.dataset.img;
    }
    for (const e of root.querySelectorAll('[data-lm-title]')) {
      if (e.dataset.imgTitle === undefined) e.dataset.imgTitle = e.title;
      e.title = lm ? e.dataset.lmTitle.replace('{T}', lm.block || 'T') : e.dataset.imgTitle;
    }
  }

  window.pacerLM = { info, tokensPerS, perplexity, datasetFacts, tokenColumns, apply };
})();
