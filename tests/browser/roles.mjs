// tests/browser/roles.mjs - the dashboard by role (issue 45), run by http_browser.sh against
// a coordinator with a token: the page, given a viewer's token (localStorage, as its
// token form keeps it), says who the caller is and hides what a viewer cannot use (the
// New job link and button, the submit button, the model upload, a job's Cancel, the
// Cluster page's benchmark) and shows a draining host with its reason and deadline (the
// API's answer rewritten to hold a drain); given the owner's (a member's), it shows Cancel on her job,
// and "Mine" lists it. Her job waits in the queue (http_browser.sh: behind her long job on
// one slot): its row and its page show its position, why it waits and its estimated start,
// and an estimate the API does not have (null: nothing measured yet) is shown as missing,
// never as 0 or 1970 (the API's answer rewritten to null, then to a time: what the row
// makes of each); a shrink for a preemption (a resize naming preempted_by) is on the
// job's page; its charts, without a point yet, say "no data yet" instead of drawing empty
// axes. Exit 0 = pass, 1 = fail.
// usage: node roles.mjs BASE_URL VIEWER_TOKEN MEMBER_TOKEN MEMBER_JOB_ID SCREENSHOT.png
import { chromium } from 'playwright-core';
import { steadyPage } from './chromium.mjs';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';

const [base, viewer, member, jobId, shot] = process.argv.slice(2);
if (!base || !viewer || !member || !jobId || !shot) {
  console.error('usage: node roles.mjs BASE_URL VIEWER_TOKEN MEMBER_TOKEN MEMBER_JOB_ID SCREENSHOT.png');
  process.exit(2);
}
const profile = mkdtempSync(join(tmpdir(), 'pacer-chromium-'));
const errors = [];
let context;

function check(cond, what) {
  if (!cond) throw new Error(what);
  console.log('ok: ' + what);
}

// Opens hash with token saved as the page keeps it; waits until the page knows the caller.
async function open(page, token, hash, who) {
  await page.goto(base + '/#/');
  await page.evaluate((t) => localStorage.setItem('pacer.token', t), token);
  await page.goto(base + '/' + hash);
  await page.reload();
  await page.waitForFunction((w) => document.querySelector('#whoami') && document.querySelector('#whoami').textContent === w,
    who, { timeout: 10000 });
}

try {
  context = await chromium.launchPersistentContext(profile, {
    executablePath: process.env.CHROMIUM || '/usr/bin/chromium',
    headless: true,
    viewport: { width: 1440, height: 1000 },
    args: ['--headless', '--no-sandbox', '--disable-gpu', '--disable-quic', '--no-first-run',
      '--disable-background-networking', '--disable-component-update', '--disable-sync', '--disable-dev-shm-usage'],
  });
  const page = steadyPage(context.pages()[0] || await context.newPage());   // chromium.mjs: survives a network change
  page.on('pageerror', (e) => errors.push('page error: ' + e.message));

  // ---- a viewer
  await open(page, viewer, '#/', 'carol (viewer)');
  await page.waitForSelector(`tr[data-id="${jobId}"]`, { timeout: 10000 });
  check(await page.textContent(`tr[data-id="${jobId}"] td.owner`) === 'alice', 'a viewer sees ' + jobId + "'s owner, alice");
  check(!(await page.isVisible('a[data-nav=new]')) && !(await page.isVisible('a.button[href="#/new"]')),
    'a viewer sees no New job link or button');
  await open(page, viewer, '#/new', 'carol (viewer)');
  await page.waitForSelector('#job-form');
  check(!(await page.isVisible('#submit-job')) && !(await page.isVisible('#model-upload')), 'a viewer\'s form has no Submit or Upload');
  await open(page, viewer, '#/jobs/' + jobId, 'carol (viewer)');
  await page.waitForFunction(() => document.querySelector('#f-owner').textContent === 'alice', null, { timeout: 10000 });
  check(!(await page.isVisible('#job-cancel')), 'a viewer sees the job\'s owner and no Cancel');
  // an admin's drain as GET /api/v1/cluster gives it (rewritten in: this test drains no
  // host): the host's row says draining, why, and by when its jobs go
  const clusterApi = /\/api\/v1\/cluster(\?|$)/;
  await page.route(clusterApi, async (route) => {
    const r = await route.fetch();
    const body = await r.json();
    for (const h of (body.coordinator && body.coordinator.hosts) || [])
      Object.assign(h, { draining: true, drain_reason: 'maintenance', drain_deadline: Date.now() / 1000 + 600 });
    await route.fulfill({ response: r, json: body });
  });
  await open(page, viewer, '#/cluster', 'carol (viewer)');
  await page.waitForSelector('#hosts-body tr[data-host] .host-draining', { timeout: 10000 });
  check(!(await page.isVisible('#bench-run')), 'a viewer sees the cluster but no benchmark button');
  const drainCell = await page.textContent('#hosts-body tr[data-host] td:nth-child(2)');
  check(/draining/.test(drainCell) && /drain: maintenance \(jobs gone by \S/.test(drainCell) && !/1970/.test(drainCell),
    'the Cluster page shows a draining host, why, and its deadline: ' + drainCell);
  await page.unroute(clusterApi);

  // ---- the member who owns the job
  await open(page, member, '#/jobs/' + jobId, 'alice (member)');
  await page.waitForFunction(() => document.querySelector('#f-owner').textContent === 'alice', null, { timeout: 10000 });
  check(await page.isVisible('#job-cancel'), 'the owner sees Cancel on her job');
  await open(page, member, '#/', 'alice (member)');
  await page.check('#filter-mine');
  // The list redraws after the box is ticked (it may fetch again): wait, with a deadline,
  // for a list that holds the job and no row of another owner, then read it.
  await page
    .waitForFunction(
      (id) => {
        const r = [...document.querySelectorAll('#jobs-body tr')];
        return r.some((x) => x.dataset.id === id) && r.every((x) => x.querySelector('td.owner')?.textContent === 'alice');
      },
      jobId,
      { timeout: 10000 },
    )
    .catch(() => {}); // the check below says what the list held
  const rows = await page.$$eval('#jobs-body tr', (r) => r.map((x) => x.querySelector('td.owner').textContent));
  check(rows.length >= 1 && rows.every((o) => o === 'alice'), '"Mine" lists only alice\'s jobs: ' + JSON.stringify(rows));

  // ---- the member's queued job: its row and its page
  const cell = `tr[data-id="${jobId}"] td.reason`;
  await page.waitForSelector(cell, { timeout: 10000 });
  const rowText = await page.textContent(cell);
  check(/^#1 · slots · (start not estimated|estimated start \d)/.test(rowText), jobId + "'s row shows its queue place: " + rowText);
  await page.screenshot({ path: shot, fullPage: true });
  await open(page, member, '#/jobs/' + jobId, 'alice (member)');
  await page.waitForFunction(() => !document.querySelector('#f-queue-row').hidden, null, { timeout: 10000 });
  const pageText = await page.textContent('#f-queue');
  check(/^position 1 · slots · (start not estimated|estimated start \d.*) — \S/.test(pageText), jobId + "'s page shows its queue place: " + pageText);
  // A job that has not started has no points: each chart says "no data yet" over a
  // hidden plot, not empty 0-1 axes.
  await page.waitForTimeout(600);   // a redraw
  const charts = await page.$$eval('[data-chart]:not([hidden])', (cs) => cs.map((c) => {
    const note = c.querySelector('.nodata'), plot = c.querySelector('.plot');
    return { name: c.dataset.chart, note: note && !note.hidden ? note.textContent : '', plot: getComputedStyle(plot).visibility };
  }));
  check(charts.length >= 6 && charts.every((c) => c.note === 'no data yet' && c.plot === 'hidden'),
    'the queued job\'s charts say "no data yet": ' + JSON.stringify(charts));
  const list = /\/api\/v1\/jobs\?/;
  for (const [est, want] of [[null, /^#1 · slots · start not estimated$/], [Date.now() / 1000 + 600, /^#1 · slots · estimated start \d/]]) {
    await page.route(list, async (route) => {
      const r = await route.fetch();
      const body = await r.json();
      for (const j of body.jobs || []) if (j.id === jobId && j.queue) j.queue.estimated_start = est;
      await route.fulfill({ response: r, json: body });
    });
    await open(page, member, '#/', 'alice (member)');
    await page.waitForSelector(cell, { timeout: 10000 });
    const t = await page.textContent(cell);
    check(want.test(t) && !/1970|\b0 ?s\b/.test(t), 'estimated_start ' + est + ' in the row: ' + t);
    await page.unroute(list);
  }
  // A shrink instead of a preemption (--policy fair): a resize naming preempted_by, as the
  // API gives it (rewritten in: this coordinator preempts nothing), is on the job's page.
  const one = new RegExp('/api/v1/jobs/' + jobId + '(\\?|$)');
  await page.route(one, async (route) => {
    const r = await route.fetch();
    const body = await r.json();
    body.resizes = [{ from: 2, to: 1, reason: 'preempted by j-99', hosts: ['localhost'], time: Date.now() / 1000, preempted_by: 'j-99' }];
    body.interruptions = [{ reason: 'drain', host: 'extra', at_step: 41, checkpoint_step: 40, lost_steps: 1, at: Date.now() / 1000 }];
    body.interruptions_total = 3;
    await route.fulfill({ response: r, json: body });
  });
  await open(page, member, '#/jobs/' + jobId, 'alice (member)');
  await page.waitForFunction(() => !document.querySelector('#f-preempted-row').hidden, null, { timeout: 10000 });
  const shrunk = await page.textContent('#f-preempted');
  check(/^shrunk 2 → 1 ranks for j-99 at \S/.test(shrunk), 'the page shows a shrink for a preemption: ' + shrunk);
  // its interruptions (stops with notice, a drain's): how many, and the last one's figures
  const intr = await page.textContent('#f-interrupted');
  check(/^3 × · last: drain on extra, checkpoint of step 40, 1 step lost at \S/.test(intr), 'the page shows the interruptions: ' + intr);
  await page.unroute(one);

  check(errors.length === 0, 'no errors in the page' + (errors.length ? ': ' + errors.join('; ') : ''));
  await context.close();
  rmSync(profile, { recursive: true, force: true });
  process.exit(0);
} catch (e) {
  console.error('FAIL: ' + e.message);
  if (errors.length) console.error(errors.join('\n'));
  if (context) {
    try {
      const p = context.pages()[0];
      if (p) await p.screenshot({ path: shot.replace(/\.png$/, '-failed.png'), fullPage: true });
    } catch (_) { /* the browser is gone */ }
    await context.close().catch(() => {});
  }
  rmSync(profile, { recursive: true, force: true });
  process.exit(1);
}
