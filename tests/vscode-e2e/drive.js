// drive.js URL FILE SHOTS: a person at code-server, through headless
// Chromium (puppeteer-core, Debian's chromium): open FILE (a Python file in
// the opened folder), run "Kiln: Validate" from the command palette and
// find the validator's finding in the Problems view, then "Kiln: Run" and
// find the program's output in the Kiln output. Screenshots go to SHOTS.
// Exits 0 when both are on screen; every wait is bounded.
'use strict';
const path = require('path');
const puppeteer = require('puppeteer-core');

const [url, file, shots] = process.argv.slice(2);
const log = (...a) => console.log('[drive]', ...a);

// until(page, what, fn, ms, why): fn is a page function, or an async node
// function (taking no arguments) that does its own page work; why, when
// given, says what the page showed when the wait ran out.
async function until(page, what, fn, ms = 60000, why = undefined) {
  const end = Date.now() + ms;
  for (;;) {
    const v = fn.constructor.name === 'AsyncFunction' ? await fn().catch(() => undefined)
      : await page.evaluate(fn).catch(() => undefined);
    if (v) {
      return v;
    }
    if (Date.now() > end) {
      await page.screenshot({ path: path.join(shots, 'timeout.png') }).catch(() => undefined);
      const seen = why ? ` (${await why()})` : '';
      throw new Error(`timed out waiting for ${what}${seen}`);
    }
    await new Promise((r) => setTimeout(r, 250));
  }
}

async function palette(page, command) {
  await page.keyboard.press('F1');
  await page.waitForSelector('.quick-input-widget input', { visible: true, timeout: 20000 });
  await page.keyboard.type(command, { delay: 10 });
  // The entry must be listed before Enter picks it.
  await until(page, `"${command}" in the palette`, new Function(
    `return [...document.querySelectorAll('.quick-input-list .monaco-list-row')].some(r => r.textContent.includes(${JSON.stringify(command)}))`), 20000);
  await page.keyboard.press('Enter');
}

(async () => {
  const browser = await puppeteer.launch({
    executablePath: process.env.CHROMIUM || '/usr/bin/chromium',
    headless: true,
    args: ['--no-sandbox', '--disable-gpu', '--disable-dev-shm-usage', '--window-size=1400,900'],
    defaultViewport: { width: 1400, height: 900 },
  });
  const timer = setTimeout(() => { log('overall time limit'); process.exit(3); }, 240000);
  try {
    const page = await browser.newPage();
    page.on('pageerror', (e) => log('page error:', e.message));
    await page.goto(url, { waitUntil: 'domcontentloaded', timeout: 60000 });
    await page.waitForSelector('.monaco-workbench', { timeout: 90000 });
    log('workbench up');
    // Quick open the file.
    await until(page, 'the explorer', () => !!document.querySelector('.explorer-folders-view, .explorer-viewlet'), 60000);
    await page.keyboard.down('Control');
    await page.keyboard.press('KeyP');
    await page.keyboard.up('Control');
    await page.waitForSelector('.quick-input-widget input', { visible: true, timeout: 20000 });
    await page.keyboard.type(path.basename(file), { delay: 10 });
    await until(page, 'the file in quick open', new Function(
      `return [...document.querySelectorAll('.quick-input-list .monaco-list-row')].some(r => r.textContent.includes(${JSON.stringify(path.basename(file))}))`), 20000);
    await page.keyboard.press('Enter');
    await until(page, 'the editor with the file', () => !!document.querySelector('.editor-instance .view-lines') &&
      document.querySelector('.editor-instance .view-lines').textContent.includes('kiln-e2e'), 30000);
    log('file open');
    await page.screenshot({ path: path.join(shots, '1-open.png') });

    await palette(page, 'Kiln: Validate');
    // The Problems view (Ctrl+Shift+M) lists the finding. The shortcut
    // toggles the panel, and on a busy machine a press that lands while the
    // palette is still closing is lost: press it again only while the view
    // is not on screen.
    const problemsShown = () => {
      const p = document.querySelector('.markers-panel');
      return !!p && p.getClientRects().length > 0;
    };
    const problem = await until(page, 'the validator\'s finding in the Problems view', async () => {
      if (!await page.evaluate(problemsShown).catch(() => false)) {
        await page.keyboard.down('Control');
        await page.keyboard.down('Shift');
        await page.keyboard.press('KeyM');
        await page.keyboard.up('Shift');
        await page.keyboard.up('Control');
        await new Promise((r) => setTimeout(r, 1000));
      }
      return page.evaluate(() => {
        const p = document.querySelector('.markers-panel');
        return p && /PY-FILE-DELETE/.test(p.textContent) ? p.textContent : undefined;
      }).catch(() => undefined);
    }, 90000, () => page.evaluate(() => {
      const p = document.querySelector('.markers-panel');
      const st = document.querySelector('#status\\.problems, [id="status.problems"]');
      return `Problems view ${p ? 'present: ' + JSON.stringify(p.textContent.slice(0, 300)) : 'absent'}; ` +
        `status bar problems: ${st ? JSON.stringify(st.textContent) : 'none'}`;
    }).catch((e) => `(page state unreadable: ${e.message})`));
    log('problems:', problem.slice(0, 200));
    await page.screenshot({ path: path.join(shots, '2-problems.png') });

    await palette(page, 'Kiln: Run');
    const out = await until(page, 'the program\'s output in the Kiln output', () => {
      const t = document.body.innerText.replace(/\u00a0/g, ' ');
      return /kiln-e2e 42/.test(t) && /\[exit 0, \d+ ms\]/.test(t) ? t : undefined;
    }, 90000);
    log('output:', (out.match(/kiln run: .*\n[\s\S]*?\[exit 0, \d+ ms\]/) || [''])[0].replace(/\n/g, ' | '));
    await page.screenshot({ path: path.join(shots, '3-run.png') });
    console.log('validate showed in Problems, run output on screen');
    clearTimeout(timer);
    await browser.close();
    process.exit(0);
  } catch (e) {
    log('FAIL:', e.message);
    clearTimeout(timer);
    await browser.close().catch(() => undefined);
    process.exit(1);
  }
})();
