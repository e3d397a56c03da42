// tests/browser/collapse.mjs - the job page of a collapsed job in headless Chromium
// (playwright-core, the system's /usr/bin/chromium). Run by tests/integration/collapse.sh:
//
//   node tests/browser/collapse.mjs BASE_URL COLLAPSED_ID HEALTHY_ID SCREENSHOT.png
//
// The collapsed job's page shows the banner (since when, why, what on_collapse does); the
// healthy job's page shows none. Exit 0 = pass, 1 = fail.
import { withPage } from './chromium.mjs';

const [base, collapsed, healthy, shot] = process.argv.slice(2);
if (!base || !collapsed || !healthy || !shot) {
  console.error('usage: node collapse.mjs BASE_URL COLLAPSED_ID HEALTHY_ID SCREENSHOT.png');
  process.exit(2);
}
process.exit(await withPage({ width: 1280, height: 900 }, async (page) => {
  await page.goto(base + '/#/jobs/' + collapsed);
  await page.waitForSelector('#job-collapse:not([hidden])', { timeout: 30000 });
  const text = await page.textContent('#job-collapse');
  if (!/^Training collapsed since step \d+: .+ Training goes on \(on_collapse: continue\)\.$/.test(text))
    throw new Error('banner of ' + collapsed + ': ' + text);
  console.log('ok: the page of ' + collapsed + ' says: ' + text);
  await page.screenshot({ path: shot });
  await page.goto(base + '/#/jobs/' + healthy);
  await page.waitForFunction(() => document.querySelector('#f-restarts') && document.querySelector('#f-restarts').textContent !== '', null, { timeout: 30000 });
  if (await page.isVisible('#job-collapse')) throw new Error('the page of ' + healthy + ' shows a collapse banner');
  console.log('ok: the page of ' + healthy + ' shows none');
}));
