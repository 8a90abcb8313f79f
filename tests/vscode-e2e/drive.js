// drive.js URL FILE SHOTS: a person at code-server, through headless
// Chromium (puppeteer-core, Debian's chromium): open FILE (a Python file in
// the opened folder), run "Kiln: Validate" from the command palette and
// find the validator's finding in the Problems view, then "Kiln: Run" and
// find the program's output in the Kiln output. Then chart.py of the same
// folder, which writes monthly.png and adds a row to sales.csv: its run
// offers the changes, the offer's Apply has kiln write them, and the files
// on disk are what the run wrote (the PNG's SHA-256 as the run printed
// it), the open sales.csv editor shows the new row, and the PNG is shown
// as an image in the Kiln Output panel.
// Before those, the review (issue 36; kiln is pointed at tests/fake-model
// by code-server-e2e.sh): Kiln: Ask replaces a line of review.py, and the
// proposed lines are found in the document with the added-line colour,
// the old line struck through, and the hunk's CodeLens with its verdict,
// Accept and Reject (review.png); Reject All leaves the document as it
// was with no kiln tab open. A denied proposal in deny.py shows `verdict
// deny` and its rule on the lens and the error squiggle on the proposed
// line it is about (review-denied.png).
// Screenshots go to SHOTS. Exits 0 when all of that is so; every
// wait is bounded.
'use strict';
const crypto = require('crypto');
const fs = require('fs');
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

// Quick open NAME and wait for its editor to show MARK. A panel that
// takes the focus while quick open is up (a webview opening on a slow
// machine) loses the Enter: then Escape and once more, three tries.
async function quickOpen(page, name, mark) {
  const shown = new Function(
    `return [...document.querySelectorAll('.editor-instance .view-lines')].some(v => v.textContent.includes(${JSON.stringify(mark)}))`);
  for (let attempt = 1; ; attempt++) {
    await page.keyboard.down('Control');
    await page.keyboard.press('KeyP');
    await page.keyboard.up('Control');
    await page.waitForSelector('.quick-input-widget input', { visible: true, timeout: 20000 });
    await page.keyboard.type(name, { delay: 10 });
    await until(page, `${name} in quick open`, new Function(
      `const i = document.querySelector('.quick-input-widget input'); return !!i && i.value.endsWith(${JSON.stringify(name)}) && [...document.querySelectorAll('.quick-input-list .monaco-list-row')].some(r => r.textContent.includes(${JSON.stringify(name)}))`), 20000);
    await page.keyboard.press('Enter');
    try {
      await until(page, `the editor with ${name}`, shown, attempt < 3 ? 15000 : 30000);
      return;
    } catch (e) {
      if (attempt >= 3) {
        throw e;
      }
      log(`quick open of ${name} did not show it (try ${attempt}): again`);
      await page.keyboard.press('Escape');
    }
  }
}


// --- the review (issue 36) --------------------------------------------------

// The state of the editor that shows MARK: its lines (text and top), the
// overlay rows (top and class names), the CodeLens texts, the tabs, and
// which CSS classes paint the added-line colour.
function editorState(mark) {
  const ed = [...document.querySelectorAll('.monaco-editor')].find((e) =>
    [...e.querySelectorAll('.view-lines .view-line')].some((l) => l.textContent.replace(/\u00a0/g, ' ').includes(mark)));
  if (!ed) {
    return undefined;
  }
  const lines = [...ed.querySelectorAll('.view-lines .view-line')].map((l) => ({
    text: l.textContent.replace(/\u00a0/g, ' '),
    top: l.style.top,
    struck: [...l.querySelectorAll('span')].some((sp) => getComputedStyle(sp).textDecorationLine.includes('line-through')),
  }));
  const overlays = [...ed.querySelectorAll('.view-overlays > div')].map((o) => ({
    top: o.style.top,
    classes: [...o.querySelectorAll('*')].map((x) => x.className).join(' '),
  }));
  // The added-line colour as the theme resolves it, and the rows painted with it.
  const probe = document.createElement('div');
  probe.style.backgroundColor = 'var(--vscode-diffEditor-insertedLineBackground)';
  ed.appendChild(probe);
  const addedColour = getComputedStyle(probe).backgroundColor;
  probe.remove();
  const greenTops = [...ed.querySelectorAll('.view-overlays > div')].filter((o) =>
    [...o.querySelectorAll('*')].some((x) => getComputedStyle(x).backgroundColor === addedColour)).map((o) => o.style.top);
  const lenses = [...ed.querySelectorAll('.codelens-decoration')].map((c) => c.textContent.replace(/\u00a0/g, ' '));
  const tabs = [...document.querySelectorAll('.tabs-container .tab')].map((t) => t.getAttribute('aria-label') || t.textContent);
  return { lines, overlays, addedColour, greenTops, lenses, tabs };
}

// The overlay classes of the row that shows text.
function rowClasses(st, text) {
  const line = st.lines.find((l) => l.text.includes(text));
  return line ? st.overlays.filter((o) => o.top === line.top).map((o) => o.classes).join(' ') : undefined;
}

async function state(page, mark) {
  return page.evaluate(editorState, mark);
}

// Click the CodeLens link titled exactly TITLE in the editor showing MARK,
// as a person does (a mouse click at its place).
async function clickLens(page, mark, title) {
  const box = await page.evaluate((m, t) => {
    const ed = [...document.querySelectorAll('.monaco-editor')].find((e) =>
      [...e.querySelectorAll('.view-lines .view-line')].some((l) => l.textContent.replace(/\u00a0/g, ' ').includes(m)));
    const a = ed && [...ed.querySelectorAll('.codelens-decoration a')].find((x) => x.textContent.replace(/\u00a0/g, ' ').trim() === t);
    if (!a) {
      return undefined;
    }
    const r = a.getBoundingClientRect();
    return { x: r.x + r.width / 2, y: r.y + r.height / 2 };
  }, mark, title);
  if (!box) {
    throw new Error(`no CodeLens "${title}" in the editor with ${mark}`);
  }
  await page.mouse.click(box.x, box.y);
}

async function ask(page, intent) {
  await palette(page, 'Kiln: Ask');
  // The palette's own row also reads "Kiln: Ask", and on a slow machine it
  // is still shown after its Enter: wait for the input box's prompt, empty
  // and focused, or the intent is typed into the closing palette.
  await until(page, 'the Kiln: Ask input box', () => {
    const w = document.querySelector('.quick-input-widget');
    const input = w && w.querySelector('input');
    return !!w && w.getClientRects().length > 0 && /What should the code do/.test(w.textContent) &&
      !!input && input.value === '' && document.activeElement === input;
  }, 20000);
  await page.keyboard.type(intent, { delay: 5 });
  await until(page, 'the intent typed into the Kiln: Ask input box', new Function(
    `const i = document.querySelector('.quick-input-widget input'); return !!i && i.value === ${JSON.stringify(intent)};`), 20000);
  await page.keyboard.press('Enter');
}

async function reviewScene(page) {
  await quickOpen(page, 'review.py', 'review-e2e');
  // Line 2 selected: the proposal replaces it.
  await page.keyboard.down('Control');
  await page.keyboard.press('Home');
  await page.keyboard.up('Control');
  await page.keyboard.press('ArrowDown');
  await page.keyboard.down('Shift');
  await page.keyboard.press('ArrowDown');
  await page.keyboard.up('Shift');
  await ask(page, 'count until it is enough [[answer:warnloop]]');
  const st = await until(page, 'the proposed lines inline with the added-line colour and the verdict CodeLens', async () => {
    const s = await state(page, 'review-e2e');
    if (!s || !s.lines.some((l) => l.text.includes("print('looped', flush=True)"))) {
      return undefined;
    }
    const line = s.lines.find((l) => l.text.includes("print('looped', flush=True)"));
    const green = /rgba?\(/.test(s.addedColour) && s.greenTops.includes(line.top);
    const old = s.lines.find((l) => l.text.includes('old line, to be replaced'));
    const lens = s.lenses.find((t) => /kiln 1\/1: Accept/.test(t) && /Reject All/.test(t) && /\(\+7 −1\) verdict warn: PY-/.test(t));
    return green && old && old.struck && !s.greenTops.includes(old.top) && lens ? s : undefined;
  }, 90000, async () => JSON.stringify(await state(page, 'review-e2e').catch(() => 'unreadable')).slice(0, 1500));
  log('review:', st.lenses.join(' / '));
  // Every proposed line is shown, in order, below the struck one.
  const texts = st.lines.map((l) => l.text);
  const at = texts.findIndex((t) => t.includes('old line, to be replaced'));
  if (!texts[at + 1].includes('import os') || !texts[at + 7].includes('os._exit(0)')) {
    throw new Error(`the proposed lines are not below the old one: ${JSON.stringify(texts)}`);
  }
  const proposedTops = st.lines.slice(at + 1, at + 8).map((l) => l.top);
  if (!proposedTops.every((t) => st.greenTops.includes(t))) {
    throw new Error(`not every proposed line is green: ${JSON.stringify({ proposedTops, green: st.greenTops })}`);
  }
  await page.screenshot({ path: path.join(shots, 'review.png') });
  await clickLens(page, 'review-e2e', 'Reject All');
  await until(page, 'the document as it was, and no kiln tab', async () => {
    const s = await state(page, 'review-e2e');
    return s && !s.lines.some((l) => l.text.includes('looped')) && s.lines.some((l) => l.text.includes('old line, to be replaced')) &&
      !s.lines.some((l) => l.struck) && s.lenses.length === 0 &&
      !s.tabs.some((t) => /kiln-preview|kiln proposal|kiln-proposal/.test(t));
  }, 30000, async () => JSON.stringify(await state(page, 'review-e2e').catch(() => 'unreadable')).slice(0, 1500));
  log('Reject All: the document as it was, no kiln tab left');
}

async function deniedScene(page) {
  await quickOpen(page, 'deny.py', 'deny-e2e');
  await page.keyboard.down('Control');
  await page.keyboard.press('Home');
  await page.keyboard.up('Control');
  await ask(page, 'connect somewhere [[answer:taildeny]]');
  const st = await until(page, 'the denied proposal: verdict deny on the lens, the error squiggle on the proposed line', async () => {
    const s = await state(page, 'deny-e2e');
    if (!s || !s.lines.some((l) => l.text.includes('import socket'))) {
      return undefined;
    }
    const lens = s.lenses.find((t) => /verdict deny: [A-Z]+-[A-Z-]+/.test(t) && /Accept Denied/.test(t));
    const rows = rowClasses(s, 'import socket') || '';
    return lens && /squiggly-error/.test(rows) && !/squiggly-error/.test(rowClasses(s, 'deny-e2e') || '') ? s : undefined;
  }, 90000, async () => JSON.stringify(await state(page, 'deny-e2e').catch(() => 'unreadable')).slice(0, 1500));
  log('denied:', st.lenses.join(' / '));
  await until(page, 'the error notification naming the denial', () =>
    [...document.querySelectorAll('.notification-toast')].some((t) => /DENIED by the validator/.test(t.textContent)), 20000);
  await page.screenshot({ path: path.join(shots, 'review-denied.png') });
  await clickLens(page, 'deny-e2e', 'Reject All');
  await until(page, 'deny.py as it was', async () => {
    const s = await state(page, 'deny-e2e');
    return s && !s.lines.some((l) => l.text.includes('import socket')) && s.lenses.length === 0;
  }, 30000);
  log('denied proposal rejected');
}

(async () => {
  const browser = await puppeteer.launch({
    executablePath: process.env.CHROMIUM || '/usr/bin/chromium',
    headless: true,
    args: ['--no-sandbox', '--disable-gpu', '--disable-dev-shm-usage', '--window-size=1400,900'],
    defaultViewport: { width: 1400, height: 900 },
  });
  const timer = setTimeout(() => { log('overall time limit'); process.exit(3); }, 600000);
  try {
    const page = await browser.newPage();
    page.on('pageerror', (e) => log('page error:', e.message));
    await page.goto(url, { waitUntil: 'domcontentloaded', timeout: 60000 });
    await page.waitForSelector('.monaco-workbench', { timeout: 90000 });
    log('workbench up');
    await until(page, 'the explorer', () => !!document.querySelector('.explorer-folders-view, .explorer-viewlet'), 60000);
    await reviewScene(page);
    await deniedScene(page);
    await quickOpen(page, path.basename(file), 'kiln-e2e');
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

    // A run that changes the folder, and the offer's Apply.
    const ws = path.dirname(file);
    // sales.csv open in an editor (no unsaved change): VS Code reloads it after Apply.
    await quickOpen(page, 'sales.csv', '2026-02,17');
    await quickOpen(page, 'chart.py', 'monthly.png');
    await palette(page, 'Kiln: Run');
    const pngSha = await until(page, 'the chart run\'s output', () => {
      const m = /png[\s\u00a0]([0-9a-f]{64})/.exec(document.body.innerText);
      return m ? m[1] : undefined;
    }, 90000);
    // The offer is a notification toast; its Apply button is what a person presses.
    await until(page, 'the offer\'s Apply button', () => {
      const toast = [...document.querySelectorAll('.notification-toast')].find((t) => /the run changed 2 files/.test(t.textContent));
      const apply = toast && [...toast.querySelectorAll('.monaco-button')].find((b) => b.textContent.trim() === 'Apply');
      if (apply) {
        apply.click();
      }
      return !!apply;
    }, 60000);
    log('offer: Apply pressed');
    await until(page, 'kiln\'s word that both changes were applied', () =>
      /kiln: applied 2 changes to your files/.test(document.body.innerText), 60000,
    () => page.evaluate(() => [...document.querySelectorAll('.notification-toast')].map((t) => t.textContent).join(' | ')));
    await page.screenshot({ path: path.join(shots, '4-applied.png') });
    const png = fs.readFileSync(path.join(ws, 'monthly.png'));
    const got = crypto.createHash('sha256').update(png).digest('hex');
    if (got !== pngSha) {
      throw new Error(`monthly.png on disk (${png.length} bytes, sha256 ${got}) is not what the run wrote (${pngSha})`);
    }
    const csv = fs.readFileSync(path.join(ws, 'sales.csv'), 'utf8');
    if (csv !== 'month,total\n2026-01,12\n2026-02,17\n2026-03,31\n') {
      throw new Error(`sales.csv on disk is ${JSON.stringify(csv)}`);
    }
    log(`applied: monthly.png (${png.length} bytes) and sales.csv byte for byte`);
    // Back to its tab (a click, again while it does not show: a click
    // that lands while a toast takes the focus can be lost).
    await until(page, 'the sales.csv editor with the applied row', async () => {
      const showing = await page.evaluate(() => [...document.querySelectorAll('.editor-instance .view-lines')]
        .some((v) => v.textContent.includes('2026-03,31')));
      if (!showing) {
        await page.evaluate(() => {
          const tab = [...document.querySelectorAll('.tabs-container .tab')].find((t) => /^sales\.csv\b/.test(t.textContent.trim()));
          tab?.dispatchEvent(new MouseEvent('mousedown', { bubbles: true, button: 0 }));
          tab?.click();
        });
      }
      return showing;
    }, 30000);
    log('the open sales.csv shows the applied row');
    // The PNG as an image in the Kiln Output panel (a webview: frames in frames).
    const alt = await until(page, 'monthly.png as an image in the Kiln Output panel', async () => {
      for (const f of page.frames()) {
        const a = await f.evaluate(() => {
          const img = [...document.querySelectorAll('img')].find((i) => /^data:image\/png;base64,/.test(i.src) && /monthly\.png/.test(i.alt));
          return img && img.complete && img.naturalWidth === 32 ? img.alt : undefined;
        }).catch(() => undefined);
        if (a) {
          return a;
        }
      }
      return undefined;
    }, 30000, async () => `frames: ${page.frames().map((f) => f.url().slice(0, 80)).join(', ')}`);
    log('image shown:', alt);
    await page.screenshot({ path: path.join(shots, '5-image.png') });
    // The Kiln Output panel keeps runs as sections (output-scene.js).
    await require('./output-scene').outputScene(page, {
      until, palette, quickOpen, log, shots, docImg: process.env.KILN_E2E_DOC_IMG,
    });
    console.log('review inline and rejected, denied shown as denied, validate showed in Problems, run output on screen, Apply wrote the PNG and the CSV, two runs kept as sections');
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
