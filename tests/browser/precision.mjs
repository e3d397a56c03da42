// tests/browser/precision.mjs - the job page's Precision fact in headless Chromium
// (playwright-core, the system's /usr/bin/chromium). Run by tests/integration/bf16_page.sh:
//
//   node tests/browser/precision.mjs BASE_URL SCREENSHOT.png JOB_ID WANT [JOB_ID WANT ...]
//
// Each job's page says WANT in its Precision fact: the spec's precision and the kernels
// its summary's kernels.gemm and kernels.conv name (bf16_page.sh builds WANT from the summary). Exit 0 =
// pass, 1 = fail.
import { withPage } from './chromium.mjs';

const [base, shot, ...pairs] = process.argv.slice(2);
if (!base || !shot || pairs.length < 2 || pairs.length % 2) {
  console.error('usage: node precision.mjs BASE_URL SCREENSHOT.png JOB_ID WANT [JOB_ID WANT ...]');
  process.exit(2);
}
process.exit(await withPage({ width: 1280, height: 900 }, async (page) => {
  for (let i = 0; i < pairs.length; i += 2) {
    const [id, want] = [pairs[i], pairs[i + 1]];
    await page.goto(base + '/#/jobs/' + id);
    await page.waitForFunction((w) => document.querySelector('#f-precision').textContent === w, want,
      { timeout: 30000 }).catch(async (e) => {
      const seen = await page.textContent('#f-precision');
      throw new Error(e.message + "; job " + id + "'s Precision says '" + seen + "', want '" + want + "'");
    });
    console.log("ok: job " + id + "'s Precision: " + want);
  }
  await page.locator('#f-precision').scrollIntoViewIfNeeded();
  await page.screenshot({ path: shot });
}, shot));
