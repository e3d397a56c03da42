// tests/browser/collapse.mjs - the job page of a collapsed job in headless Chromium
// (playwright-core, the system's /usr/bin/chromium). Run by tests/integration/collapse.sh:
//
//   node tests/browser/collapse.mjs BASE_URL COLLAPSED_ID HEALTHY_ID SCREENSHOT.png
//
// The collapsed job's page shows the banner (since when, why, what on_collapse does); the
// healthy job's page shows none. Exit 0 = pass, 1 = fail.
import { chromium } from 'playwright-core';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';

const [base, collapsed, healthy, shot] = process.argv.slice(2);
if (!base || !collapsed || !healthy || !shot) {
  console.error('usage: node collapse.mjs BASE_URL COLLAPSED_ID HEALTHY_ID SCREENSHOT.png');
  process.exit(2);
}
const profile = mkdtempSync(join(tmpdir(), 'pacer-chromium-'));
let context, status = 0;
try {
  context = await chromium.launchPersistentContext(profile, {
    executablePath: process.env.CHROMIUM || '/usr/bin/chromium',
    headless: true,
    viewport: { width: 1280, height: 900 },
    args: ['--headless', '--no-sandbox', '--disable-gpu', '--no-first-run', '--disable-dev-shm-usage'],
  });
  const page = context.pages()[0] || await context.newPage();
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
} catch (e) {
  console.error('FAIL: ' + e.message);
  status = 1;
} finally {
  if (context) await context.close();
  rmSync(profile, { recursive: true, force: true });
}
process.exit(status);
