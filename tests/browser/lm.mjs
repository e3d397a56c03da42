// tests/browser/lm.mjs - a language model's job page and compare view in headless Chromium
// (playwright-core, the system's /usr/bin/chromium). Run by tests/integration/lm_words.sh:
//
//   node tests/browser/lm.mjs BASE_URL JOB_ID OTHER_JOB_ID DATA_PATH BLOCK SAMPLE SCREENSHOT.png
//
// JOB_ID is a finished GPT job on the text data set DATA_PATH (windows of BLOCK tokens,
// the byte tokenizer; SAMPLE its newest eval_sample text, for the Sample card); OTHER_JOB_ID a second
// job for the compare view. The page must speak of a vocabulary, windows, tokens per
// second, validation loss and perplexity (charted per evaluation), next-token accuracy,
// and never of classes, samples per second or a built-in image data set. Exit 0 = pass.
import { withPage } from './chromium.mjs';

const [base, id, other, dataPath, block, sample, shot] = process.argv.slice(2);
if (!base || !id || !other || !dataPath || !block || sample === undefined || !shot) {
  console.error('usage: node lm.mjs BASE_URL JOB_ID OTHER_JOB_ID DATA_PATH BLOCK SAMPLE SCREENSHOT.png');
  process.exit(2);
}
const must = (cond, what) => { if (!cond) throw new Error(what); };

process.exit(await withPage({ width: 1280, height: 2000 }, async (page) => {
  // the job list: a language model's accuracy is the next token's
  await page.goto(base + '/');
  await page.waitForFunction((j) => / %/.test((document.querySelector('#jobs-body tr[data-id="' + j + '"] td.acc') || {}).textContent || ''),
    id, { timeout: 30000 });
  const listed = await page.textContent('#jobs-body tr[data-id="' + id + '"] td.acc');
  must(/^\d+\.\d\d % \(next token\)$/.test(listed), 'the job list\'s accuracy reads ' + JSON.stringify(listed));
  await page.goto(base + '/#/jobs/' + id);
  await page.waitForFunction(() => /vocabulary/.test(document.querySelector('#f-dataset').textContent), null, { timeout: 30000 });
  // the charts and the Sample card fill from the history
  await page.waitForSelector('#sample-card:not([hidden])', { timeout: 30000 });
  await page.waitForSelector('#nodes-body tr', { timeout: 30000 });
  const text = (sel) => page.textContent(sel);
  const model = await text('#f-model'), dataset = await text('#f-dataset');
  must(model === 'gpt · ' + dataPath + ' (text)', 'Model reads ' + JSON.stringify(model) + ', want the text data set');
  const want = 'vocabulary 256 (bytes) · windows of ' + block + ' tokens · ';
  must(dataset.startsWith(want) && / train \/ [\d,]+ test windows$/.test(dataset), 'Data set reads ' + JSON.stringify(dataset));
  // what is shown (innerText: no hidden card), in lower case (the facts' labels are upper case by CSS)
  const view = (await page.innerText('#view')).toLowerCase();
  for (const words of ['next-token accuracy', 'perplexity', 'tokens per wall-clock second of compute', 'windows of ' + block + ' tokens',
    'validation loss and perplexity', 'tokens/s', 'vocabulary 256']) must(view.includes(words), 'the page does not say ' + JSON.stringify(words));
  for (const words of [/\bclasses\b/, /\bsamples\b/, /fashion-mnist/, /test accuracy/])
    must(!words.test(view), 'the page says ' + words + ': ' + JSON.stringify((view.match(new RegExp('.{0,60}' + words.source + '.{0,60}', 'i')) || [''])[0]));
  const ppl = await text('#f-perplexity');
  must(/^\d+\.\d\d \(exp of the validation loss, \d+\.\d{4} nats per token\)$/.test(ppl), 'Perplexity reads ' + JSON.stringify(ppl));
  const [l, p] = ppl.match(/[\d.]+/g).map(Number).reverse();
  must(Math.abs(Math.exp(l) - p) < 0.01 * p, 'perplexity ' + p + ' is not exp(' + l + ')');
  // the evaluations' chart: validation loss and its exp, one point per evaluation
  const series = await page.evaluate(() => {
    const u = document.querySelector('[data-chart="acc"] .uplot');
    return u ? [...u.querySelectorAll('.u-legend .u-series .u-label')].map((e) => e.textContent) : null;
  });
  must(series && series.includes('validation loss') && series.includes('perplexity'), 'the evaluations chart has series ' + JSON.stringify(series));
  must(await page.evaluate(() => !document.querySelector('[data-chart="acc"]').classList.contains('empty')), 'the evaluations chart is empty');
  // the Nodes table's speed: tokens/s, a number (a finished job's ranks keep their last)
  const speed = await page.evaluate(() => [...document.querySelectorAll('#nodes-body tr')].map((tr) => tr.children[5].textContent));
  must(speed.length > 0 && speed.every((v) => /^[\d,]+$/.test(v) || v === '–'), 'Tokens/s column ' + JSON.stringify(speed));
  const shown = await text('#sample-card .sample-text');
  must(shown === sample, 'Sample card ' + JSON.stringify(shown) + ', want the newest evaluation\'s ' + JSON.stringify(sample));
  await page.screenshot({ path: shot });
  console.log('ok: the job page of a GPT on text reads ' + JSON.stringify(dataset) + ', perplexity ' + ppl);

  // the compare view: a language model's outcome rows in its words
  await page.goto(base + '/#/compare?ids=' + id + ',' + other);
  await page.waitForSelector('#cmp-specs tr.outcome', { timeout: 30000 });
  const rows = await page.evaluate(() => Object.fromEntries([...document.querySelectorAll('#cmp-specs tr.outcome')]
    .map((tr) => [tr.children[0].textContent, tr.children[1].textContent])));
  must(/ % \(next token\)$/.test(rows['test accuracy'] || ''), 'compare: test accuracy ' + JSON.stringify(rows['test accuracy']));
  must(/ nats per token \(perplexity [\d.]+\)$/.test(rows['test loss'] || ''), 'compare: test loss ' + JSON.stringify(rows['test loss']));
  must(/^[\d,]+ tokens\/s$/.test(rows.throughput || ''), 'compare: throughput ' + JSON.stringify(rows.throughput));
  console.log('ok: the compare view reads ' + JSON.stringify(rows));
}, shot.replace(/\.png$/, '-failed.png')));
