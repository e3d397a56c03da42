// tests/browser/experiment.mjs - the dashboard's Experiments pages (static/experiments.js),
// run by tests/integration/experiment.sh against a finished ASHA experiment: the list has
// its row, which opens its page; the page has one chart of every trial's metric per epoch
// (a uPlot canvas), a scatter of the metric against the searched parameter with a dot per
// evaluated trial, the stopped ones grey and the best one highlighted, and a table row per
// trial whose job links to the job's page; no page error. A PBT experiment (run by
// tests/integration/experiment_pbt.sh): a line per exploit saying which trial copied which
// at which epoch and from which jobs, each trial's "Copied" cell, and a mark per exploit on
// the chart. Exit 0 = pass, 1 = fail.
// usage: node experiment.mjs BASE_URL TOKEN EXPERIMENT_ID SCREENSHOT.png
import { chromium } from 'playwright-core';
import { steadyPage } from './chromium.mjs';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';

const [base, token, id, shot] = process.argv.slice(2);
if (!base || !token || !id || !shot) {
  console.error('usage: node experiment.mjs BASE_URL TOKEN EXPERIMENT_ID SCREENSHOT.png');
  process.exit(2);
}
const profile = mkdtempSync(join(tmpdir(), 'pacer-chromium-'));
const errors = [];
let context;

function check(cond, what) {
  if (!cond) throw new Error(what);
  console.log('ok: ' + what);
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
  await page.goto(base + '/#/');
  await page.evaluate((t) => localStorage.setItem('pacer.token', t), token);
  await page.goto(base + '/#/experiments');
  await page.reload();
  await page.waitForSelector(`#experiments tr[data-id="${id}"]`, { timeout: 15000 });
  check(true, 'the Experiments list has ' + id);
  await page.click(`#experiments tr[data-id="${id}"]`);
  await page.waitForFunction((x) => location.hash === '#/experiments/' + x, id, { timeout: 10000 });
  await page.waitForSelector('#trials tbody tr[data-trial]', { timeout: 15000 });
  const api = await page.evaluate(async (x) => {
    const r = await fetch('/api/v1/experiments/' + x, { headers: { Authorization: 'Bearer ' + localStorage.getItem('pacer.token') } });
    return r.json();
  }, id);
  const rows = await page.$$eval('#trials tbody tr[data-trial]', (trs) => trs.map((tr) => ({
    trial: +tr.dataset.trial, cls: tr.className, link: tr.querySelector('a') ? tr.querySelector('a').getAttribute('href') : null,
    state: tr.children[2].textContent,
  })));
  check(rows.length === api.trials.length, 'a table row per trial (' + rows.length + ')');
  for (const r of rows) {
    const t = api.trials[r.trial];
    check(r.state === t.state && r.link === '#/jobs/' + t.job, `trial ${r.trial}: ${t.state}, linking #/jobs/${t.job}`);
    check((t.state === 'STOPPED') === r.cls.includes('stopped'), `trial ${r.trial}: greyed exactly when stopped`);
    check((api.best && api.best.trial === r.trial) === r.cls.includes('best'), `trial ${r.trial}: highlighted exactly when best`);
  }
  await page.waitForSelector('#experiment-curves canvas', { timeout: 20000 });
  check(true, 'every trial\'s metric per epoch is drawn on one chart');
  const dots = await page.$$eval('#experiment-scatter circle.dot', (cs) => cs.map((c) => ({
    trial: +c.dataset.trial, fill: c.getAttribute('fill'), cls: c.getAttribute('class') })));
  check(dots.length === api.trials.filter((t) => typeof t.metric === 'number').length,
    'the scatter has a dot per evaluated trial (' + dots.length + ')');
  check(dots.filter((d) => d.cls.includes('best')).length === 1, 'one dot, the best trial\'s, is highlighted');
  check(dots.filter((d) => d.cls.includes('stopped')).every((d) => d.fill === '#b8bec9'), 'the stopped trials\' dots are grey');
  if (api.method === 'pbt') {
    const key = (m) => [m.epoch, m.trial, m.from, m.job, m.from_job].join(' ');
    const want = api.trials.flatMap((t, i) => (t.exploits || []).map((m) => key(Object.assign({ trial: i }, m)))).sort();
    await page.waitForSelector('#experiment-exploits li.exploit', { timeout: 15000 }).catch(() => {});
    const got = await page.$$eval('#experiment-exploits li.exploit', (ls) => ls.map((l) => [l.dataset.epoch,
      l.dataset.trial, l.dataset.from, l.dataset.job, l.dataset.fromJob].join(' ')));
    check(want.length > 0 && got.sort().join('|') === want.join('|'),
      'a line per exploit: which trial copied which, at which epoch, from which jobs (' + got.join('; ') + ')');
    const copied = await page.$$eval('#trials tbody tr[data-trial] td.exploits', (tds) => tds.map((td) => td.textContent));
    check(copied.length === api.trials.length && api.trials.every((t, i) =>
      copied[i] === ((t.exploits || []).map((m) => 't' + m.from + '@' + m.epoch).join(' ') || '–')),
      'each trial\'s Copied cell names the trials it copied and the epochs (' + copied.join(', ') + ')');
    const marks = await page.$eval('#experiment-curves', (b) => b.dataset.exploitMarks);
    check(+marks === want.length, 'a mark per exploit on the chart (' + marks + ')');
  }
  const link = rows[0].link;
  await page.click(`#trials a[href="${link}"]`);
  await page.waitForFunction((l) => location.hash === l, link, { timeout: 10000 });
  check(true, 'a trial\'s job link opens its job page');
  await page.goto(base + '/#/experiments/' + id);
  await page.waitForSelector('#experiment-curves canvas', { timeout: 20000 });
  await page.screenshot({ path: shot, fullPage: true });
  check(errors.length === 0, 'no page error' + (errors.length ? ': ' + errors.join('; ') : ''));
  await context.close();
  rmSync(profile, { recursive: true, force: true });
  process.exit(0);
} catch (e) {
  console.error('FAIL: ' + e.message);
  if (errors.length) console.error(errors.join('\n'));
  if (context) await context.close().catch(() => {});
  rmSync(profile, { recursive: true, force: true });
  process.exit(1);
}
