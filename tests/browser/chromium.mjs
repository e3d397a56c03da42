// tests/browser/chromium.mjs - one headless Chromium page for a browser test (playwright-core
// with the system's /usr/bin/chromium, or $CHROMIUM), in a throw-away profile.
//
//   process.exit(await withPage({ width: 1280, height: 900 }, async (page) => { ... }, 'fail.png'));
//
// The body throws to fail: its message is printed as "FAIL: ..." and the status is 1; 0
// when it returns. On a failure the page's own errors (uncaught exceptions, console errors,
// requests that failed or were answered 4xx/5xx) are printed after it, since a wait that
// times out says nothing of why, and the page is saved to the optional screenshot path.
// The browser and its profile are gone either way.
import { chromium } from 'playwright-core';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';

const PAGE_ERRORS_SHOWN = 20;

function recordErrors(page, seen) {
  const note = (what) => seen.push(new Date().toISOString().slice(11, 23) + ' ' + what);
  page.on('pageerror', (e) => note('uncaught: ' + (e.stack || e.message)));
  page.on('console', (m) => { if (m.type() === 'error') note('console: ' + m.text()); });
  page.on('requestfailed', (r) => note('request failed: ' + r.url() + ' (' + (r.failure() || {}).errorText + ')'));
  page.on('response', (r) => { if (r.status() >= 400) note('answered ' + r.status() + ': ' + r.url()); });
}

export async function withPage(viewport, body, failShot) {
  const profile = mkdtempSync(join(tmpdir(), 'pacer-chromium-'));
  let context, page, status = 0;
  const seen = [];
  try {
    context = await chromium.launchPersistentContext(profile, {
      executablePath: process.env.CHROMIUM || '/usr/bin/chromium',
      headless: true,
      viewport,
      args: ['--headless', '--no-sandbox', '--disable-gpu', '--no-first-run', '--disable-dev-shm-usage'],
    });
    page = context.pages()[0] || await context.newPage();
    recordErrors(page, seen);
    await body(page);
  } catch (e) {
    console.error('FAIL: ' + e.message);
    for (const line of seen.slice(-PAGE_ERRORS_SHOWN)) console.error('  page: ' + line);
    if (!seen.length && page) console.error('  page: no errors of its own');
    if (failShot && page) await page.screenshot({ path: failShot }).catch(() => {});
    status = 1;
  } finally {
    if (context) await context.close();
    rmSync(profile, { recursive: true, force: true });
  }
  return status;
}
