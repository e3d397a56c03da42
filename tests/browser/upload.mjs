// tests/browser/upload.mjs - the dashboard's model upload in headless Chromium
// (playwright-core, the system's /usr/bin/chromium). Run by
// tests/integration/model_upload.sh when both are there:
//
//   node tests/browser/upload.mjs BASE_URL TOKEN FILE.onnx SHA256
//
// On the new-job form: a model uploaded from FILE (PUT /api/v1/models/ui-net) is then the
// form's chosen model, listed as uploaded, and the spec the form builds names it as
// {"onnx": "ui-net"}; a job submitted so (on MNIST) has the model's summary on its page:
// input 1×28×28, 10 classes, its parameters and the sha256 the job pinned, shortened to 12
// digits (the whole 64 wrapped into a tall column, issue 42) with the full value in its
// title. Exit 0 = pass.
import { withPage } from './chromium.mjs';

const [base, token, file, sha] = process.argv.slice(2);
if (!base || !token || !file || !sha) {
  console.error('usage: node upload.mjs BASE_URL TOKEN FILE.onnx SHA256');
  process.exit(2);
}

function check(cond, what) {
  if (!cond) throw new Error(what);
  console.log('ok: ' + what);
}

process.exit(await withPage({ width: 1280, height: 720 }, async (page) => {
  await page.goto(base + '/');
  await page.evaluate((t) => localStorage.setItem('pacer.token', t), token);
  await page.goto(base + '/#/new');
  await page.waitForSelector('select[name=model] option[value=lenet5]', { state: 'attached' });
  await page.click('#model-upload summary');
  await page.fill('input[name=upload_name]', 'ui-net');
  await page.setInputFiles('input[name=upload_file]', file);
  await page.click('#upload-btn');
  await page.waitForFunction(() => /^Stored ui-net/.test(document.querySelector('#upload-note').textContent), null,
    { timeout: 30000 });
  check(/1×28×28, 10 classes/.test(await page.textContent('#upload-note')), 'the upload says what it stored: ' +
    await page.textContent('#upload-note'));
  await page.waitForSelector('select[name=model] option[value=ui-net]', { state: 'attached' });
  check(await page.$eval('select[name=model]', (s) => s.value) === 'ui-net' &&
    /uploaded/.test(await page.$eval('select[name=model]', (s) => s.selectedOptions[0].textContent)),
  'the uploaded model is listed, as uploaded, and chosen');
  await page.selectOption('select[name=dataset]', 'mnist');
  await page.fill('input[name=name]', 'ui-upload');
  await page.fill('input[name=train_subset]', '256');
  await page.fill('input[name=test_subset]', '128');
  await page.fill('input[name=epochs]', '1');
  await page.fill('input[name=batch_size]', '32');
  await page.fill('input[name=workers]', '1');
  await page.dispatchEvent('input[name=workers]', 'change');
  await page.selectOption('select[name=algorithm]', 'sgd');
  const preview = JSON.parse(await page.textContent('#spec-preview'));
  check(JSON.stringify(preview.model) === '{"onnx":"ui-net"}', 'the form names it {"onnx": "ui-net"}');
  await page.click('#submit-job');
  await page.waitForURL(/#\/jobs\/j-[0-9]+$/, { timeout: 10000 });
  // the sha256 shows at once (the job's spec), the rest once GET /api/v1/models/ui-net answers
  const short = sha.slice(0, 12) + '…';
  await page.waitForFunction((h) => {
    const t = document.querySelector('#f-onnx').textContent;
    return t.includes(h) && t.includes('parameters');
  }, short, { timeout: 20000 }).catch(() => {});
  const facts = await page.textContent('#f-onnx');
  check(/input 1×28×28 · 10 classes · [0-9,.]+ parameters · sha256 /.test(facts) && facts.includes(short) && !facts.includes(sha),
    'the job page shows the model summary, the sha256 shortened: ' + facts);
  check(await page.$eval('#f-onnx', (e) => e.title) === 'sha256 ' + sha, 'the full sha256 is in its title');
}));
