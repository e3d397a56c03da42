// tests/browser/shard.mjs - the job page's node table of a sharded job in headless Chromium
// (playwright-core, the system's /usr/bin/chromium). Run by tests/integration/shard_nodes.sh:
//
//   node tests/browser/shard.mjs BASE_URL JOB_ID NODES.json SCREENSHOT.png
//
// Each rank's Shard cell says its share of the parameters, its optimizer state and its
// gradient, as the nodes answer (NODES.json, read by the script) gives them: the share
// to 0.1 %, state and gradient in MiB. Exit 0 = pass, 1 = fail.
import { readFileSync } from 'node:fs';
import { withPage } from './chromium.mjs';

const [base, id, nodesPath, shot] = process.argv.slice(2);
if (!base || !id || !nodesPath || !shot) {
  console.error('usage: node shard.mjs BASE_URL JOB_ID NODES.json SCREENSHOT.png');
  process.exit(2);
}
const ranks = JSON.parse(readFileSync(nodesPath, 'utf8')).ranks;
const total = ranks.reduce((t, r) => t + r.shard_params, 0);
process.exit(await withPage({ width: 1280, height: 900 }, async (page) => {
  await page.goto(base + '/#/jobs/' + id);
  await page.waitForFunction((n) => {
    const cells = [...document.querySelectorAll('td.shard')];
    return cells.length >= n && cells.every((c) => c.textContent.includes('%'));
  }, ranks.length, { timeout: 30000 }).catch(async (e) => {
    const seen = await page.evaluate(() => ({ cells: [...document.querySelectorAll('td.shard')].map((c) => c.textContent),
      rows: document.querySelectorAll('#nodes-body tr').length, banner: document.querySelector('#banner').textContent }));
    throw new Error(e.message + '; the page shows ' + JSON.stringify(seen));
  });
  const cells = await page.$$eval('td.shard', (cs) => cs.map((c) => c.textContent.trim()));
  if (cells.length !== ranks.length) throw new Error(cells.length + ' Shard cells for ' + ranks.length + ' ranks');
  const mib = (b) => (b / 1048576).toFixed(1);
  ranks.forEach((r, i) => {
    const want = (100 * r.shard_params / total).toFixed(1) + ' % · state ' + mib(r.shard_state_bytes) +
      ' MiB · gradient ' + mib(r.shard_gradient_bytes) + ' MiB';
    if (cells[i] !== want)
      throw new Error('rank ' + i + "'s Shard cell says '" + cells[i] + "'; from the nodes answer: '" + want + "'");
    console.log('ok: rank ' + i + "'s Shard cell: " + cells[i]);
  });
  // At 1280 px the page does not scroll sideways: the Shard cells wrap, and the table
  // scrolls inside its card if it must.
  const wide = await page.evaluate(() => [document.documentElement.scrollWidth, window.innerWidth]);
  if (wide[0] > wide[1]) throw new Error('the page is ' + wide[0] + ' px wide in a ' + wide[1] + ' px window');
  await page.locator('td.shard').first().scrollIntoViewIfNeeded();
  await page.screenshot({ path: shot });
}, shot));
