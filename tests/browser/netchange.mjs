// tests/browser/netchange.mjs - the dashboard survives a change of the browser's network
// (headless Chromium through chromium.mjs). Run by tests/integration/lm_words.sh:
//
//   node tests/browser/netchange.mjs BASE_URL JOB_ID JOB_NAME
//
// The first request for the page's script (static/app.js), for the job
// (GET /api/v1/jobs/JOB_ID), its nodes and its history fails as a network change makes it fail
// (Playwright's abort 'internetdisconnected': net::ERR_INTERNET_DISCONNECTED; a real
// change of the host's addresses gives net::ERR_NETWORK_CHANGED, which a test cannot
// cause on demand): the launcher loads the page again (chromium.mjs) and the page asks
// again (static/app.js's api), so the job page still shows JOB_NAME, its nodes and its
// loss chart (the history is asked for once) within 20 s. Exit 0 = pass.
import { withPage } from './chromium.mjs';

const [base, id, name] = process.argv.slice(2);
if (!base || !id || !name) {
  console.error('usage: node netchange.mjs BASE_URL JOB_ID JOB_NAME');
  process.exit(2);
}

process.exit(await withPage({ width: 1280, height: 900 }, async (page) => {
  const job = '/api/v1/jobs/' + id;
  const cut = new Map([['/static/app.js', 0], [job, 0], [job + '/nodes', 0], [job + '/history', 0]]);
  const asked = new Map([...cut.keys()].map((k) => [k, 0]));
  await page.route((url) => cut.has(url.pathname), (route) => {
    const path = new URL(route.request().url()).pathname;
    asked.set(path, asked.get(path) + 1);
    if (cut.get(path) === 0) {
      cut.set(path, 1);
      return route.abort('internetdisconnected');
    }
    return route.continue();
  });
  await page.goto(base + '/#/jobs/' + id);
  await page.waitForFunction((n) => document.querySelector('#job-name') && document.querySelector('#job-name').textContent === n,
    name, { timeout: 20000 });
  await page.waitForSelector('#nodes-body tr', { timeout: 20000 });
  // the history, asked once when the page opens: the charts draw the whole run
  await page.waitForFunction(() => { const c = document.querySelector('[data-chart="loss"]'); return c && c.querySelector('.uplot') && !c.classList.contains('empty'); },
    null, { timeout: 20000 });
  for (const [path, n] of asked) if (n < 2) throw new Error(path + ' asked ' + n + ' time(s): its loss was not met by a second request');
  console.log('ok: the job page came through a network change of its script, job, nodes and history requests (' +
    JSON.stringify(Object.fromEntries(asked)) + ')');
}));
