// tests/browser/generate.mjs - the job page's Generate card in headless Chromium
// (playwright-core, the system's /usr/bin/chromium). Run by tests/integration/generate_endpoint.sh:
//
//   node tests/browser/generate.mjs BASE_URL TOKEN JOB_ID PROMPT WANT_TEXT SCREENSHOT.png [SAMPLE]
//
// Types PROMPT into the prompt box of a text GPT job's page with temperature 0, presses
// Generate and reads the streamed answer: it must be WANT_TEXT (the API's greedy answer),
// with the summary line under it. With SAMPLE: the Sample card (the spec's eval_sample of the
// newest evaluation) shows that text. Exit 0 = pass, 1 = fail.
import { withPage } from './chromium.mjs';

const [base, token, id, prompt, want, shot, sample] = process.argv.slice(2);
if (!base || !token || !id || !prompt || want === undefined || !shot) {
  console.error('usage: node generate.mjs BASE_URL TOKEN JOB_ID PROMPT WANT_TEXT SCREENSHOT.png');
  process.exit(2);
}
process.exit(await withPage({ width: 1280, height: 1400 }, async (page) => {
  await page.addInitScript((t) => localStorage.setItem('pacer.token', t), token);
  await page.goto(base + '/#/jobs/' + id);
  await page.waitForSelector('#gen-card:not([hidden])', { timeout: 30000 });
  if (sample !== undefined) {
    await page.waitForSelector('#sample-card:not([hidden])', { timeout: 30000 });
    const shown = await page.textContent('#sample-card .sample-text');
    if (shown !== sample) throw new Error('Sample card ' + JSON.stringify(shown) + ', want ' + JSON.stringify(sample));
    console.log('ok: the Sample card shows ' + JSON.stringify(shown));
  }
  await page.fill('#gen-card textarea[name=prompt]', prompt);
  await page.fill('#gen-card input[name=max_tokens]', '12');
  await page.fill('#gen-card input[name=temperature]', '0');
  await page.click('#gen-card button[name=go]');
  await page.waitForFunction(() => / tokens, /.test(document.querySelector('#gen-card .gen-note').textContent), null,
    { timeout: 60000 });
  const got = await page.textContent('#gen-card .gen-out');
  const note = await page.textContent('#gen-card .gen-note');
  await page.screenshot({ path: shot });
  if (got !== want) throw new Error('streamed answer ' + JSON.stringify(got) + ', want ' + JSON.stringify(want));
  if (!/^12 tokens, /.test(note)) throw new Error('summary line: ' + note);
  console.log('ok: the Generate card streamed ' + JSON.stringify(got) + ' (' + note + ')');
}));
