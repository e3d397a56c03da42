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
//
// page.goto and page.reload load the page again when Chromium lost it to a change of the
// machine's network (NETWORK_CHANGE: the navigation itself, or a script or stylesheet of
// it, failed so), at most LOAD_TRIES times, saying so on stderr. Chromium's network-change
// notifier watches the host's addresses and links over netlink: a test that creates or
// deletes veth pairs and bridges in the root namespace while a browser test runs beside
// it (make test's lanes) may make a loading page's requests fail with
// net::ERR_NETWORK_CHANGED, and Debian's chromium has no switch to turn the notifier off.
// The page's own reads (static/app.js's api) ask again by themselves.
import { chromium } from 'playwright-core';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';

const PAGE_ERRORS_SHOWN = 20;
const NETWORK_CHANGE = /ERR_NETWORK_CHANGED|ERR_INTERNET_DISCONNECTED|ERR_NETWORK_IO_SUSPENDED/;
const LOAD_TRIES = 3;
const PAGE_PARTS = ['document', 'script', 'stylesheet'];

// load(): page.goto or page.reload as they were; then again (a reload) while the load, or
// a part of the page, was lost to a network change.
async function steadyLoad(page, load, what) {
  for (let t = 1; ; t++) {
    const lost = [];
    const onFail = (r) => {
      const why = (r.failure() || {}).errorText || '';
      if (PAGE_PARTS.includes(r.resourceType()) && NETWORK_CHANGE.test(why)) lost.push(r.url() + ' (' + why + ')');
    };
    page.on('requestfailed', onFail);
    let res;
    try {
      res = await (t === 1 ? load() : page.reload.original());
    } catch (e) {
      if (!NETWORK_CHANGE.test(e.message) || t >= LOAD_TRIES) throw e;
      lost.push(what + ' (' + e.message.split('\n')[0] + ')');
    } finally {
      page.off('requestfailed', onFail);
    }
    if (!lost.length) return res;
    if (t >= LOAD_TRIES) throw new Error(what + ': lost to a network change ' + LOAD_TRIES + ' times: ' + lost.join(', '));
    console.error('  page: ' + what + ': ' + lost.join(', ') + ': a network change; loading it again');
  }
}

export function steadyPage(page) {
  const goto = page.goto.bind(page), reload = page.reload.bind(page);
  page.reload = (opts) => steadyLoad(page, () => reload(opts), 'reload');
  page.reload.original = reload;
  page.goto = (url, opts) => steadyLoad(page, () => goto(url, opts), url);
  return page;
}

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
    page = steadyPage(context.pages()[0] || await context.newPage());
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
