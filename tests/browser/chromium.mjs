// tests/browser/chromium.mjs - one headless Chromium page for a browser test (playwright-core
// with the system's /usr/bin/chromium, or $CHROMIUM), in a throw-away profile.
//
//   process.exit(await withPage({ width: 1280, height: 900 }, async (page) => { ... }));
//
// The body throws to fail: its message is printed as "FAIL: ..." and the status is 1; 0
// when it returns. The browser and its profile are gone either way.
import { chromium } from 'playwright-core';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';

export async function withPage(viewport, body) {
  const profile = mkdtempSync(join(tmpdir(), 'pacer-chromium-'));
  let context, status = 0;
  try {
    context = await chromium.launchPersistentContext(profile, {
      executablePath: process.env.CHROMIUM || '/usr/bin/chromium',
      headless: true,
      viewport,
      args: ['--headless', '--no-sandbox', '--disable-gpu', '--no-first-run', '--disable-dev-shm-usage'],
    });
    await body(context.pages()[0] || await context.newPage());
  } catch (e) {
    console.error('FAIL: ' + e.message);
    status = 1;
  } finally {
    if (context) await context.close();
    rmSync(profile, { recursive: true, force: true });
  }
  return status;
}
