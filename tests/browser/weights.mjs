// tests/browser/weights.mjs - the job page's "Starting weights" row in headless Chromium
// (playwright-core, the system's /usr/bin/chromium). Run by
// tests/integration/coordinator_safetensors.sh:
//
//   node tests/browser/weights.mjs BASE_URL TOKEN JOB_ID WANT SCREENSHOT.png [TITLE]
//
// The row of job JOB_ID says exactly WANT (what the shell built from the job's summary:
// its trainable and frozen parameters and its init's counts, or 'not reported' for what the
// summary does not give), and its title holds TITLE when given (the names missing or
// unexpected). Exit 0 = pass, 1 = fail.
import { withPage } from './chromium.mjs';

const [base, token, id, want, shot, title] = process.argv.slice(2);
if (!base || !token || !id || !want || !shot) {
  console.error('usage: node weights.mjs BASE_URL TOKEN JOB_ID WANT SCREENSHOT.png [TITLE]');
  process.exit(2);
}
process.exit(await withPage({ width: 1280, height: 900 }, async (page) => {
  await page.goto(base + '/#/');
  await page.evaluate((t) => localStorage.setItem('pacer.token', t), token);
  await page.goto(base + '/#/jobs/' + id);
  await page.reload();
  await page.waitForFunction((w) => {
    const row = document.querySelector('#f-weights-row');
    return row && !row.hidden && document.querySelector('#f-weights').textContent === w;
  }, want, { timeout: 30000 }).catch(async (e) => {
    const seen = await page.evaluate(() => ({ hidden: document.querySelector('#f-weights-row').hidden,
      text: document.querySelector('#f-weights').textContent }));
    throw new Error(e.message + '; the page shows ' + JSON.stringify(seen) + ', want ' + JSON.stringify(want));
  });
  console.log("ok: job " + id + "'s Starting weights: " + want);
  if (title) {
    const got = await page.$eval('#f-weights', (d) => d.title);
    if (!got.includes(title)) throw new Error("the row's title is '" + got + "', want it to hold '" + title + "'");
    console.log("ok: its title names " + title);
  }
  await page.locator('#f-weights').scrollIntoViewIfNeeded();
  await page.screenshot({ path: shot });
}, shot));
