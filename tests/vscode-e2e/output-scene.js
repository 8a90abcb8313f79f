// output-scene.js: the Kiln Output panel as a person sees it (issue 36).
// Two cells run one after the other, cell1.py printing and cell2.py
// showing a DataFrame: both runs are sections of the panel (the first is
// not wiped by the second), each titled with its file and its code's
// first line, with its output and result; the DataFrame is a table drawn
// in the theme's colours (no frame, no white browser table in a dark
// theme), labelled "table 1" (no run id). The screenshot is
// docs/img/vscode-output.png. Called by drive.js with its helpers.
'use strict';
const path = require('path');

// What the panel's frame shows, from inside it; undefined until found.
function panelState() {
  const secs = [...document.querySelectorAll('section.section')];
  if (!secs.length) {
    return undefined;
  }
  const table = document.querySelector('.html table');
  const td = table && table.querySelector('td');
  const bodyStyle = getComputedStyle(document.body);
  return {
    sections: secs.map((s) => ({
      title: s.querySelector('h2').textContent,
      output: s.querySelector('.output').textContent,
      labels: [...s.querySelectorAll('.label')].map((l) => l.textContent),
      result: s.querySelector('.result').textContent,
    })),
    iframes: document.querySelectorAll('iframe').length,
    table: td ? {
      cells: [...table.querySelectorAll('td')].map((c) => c.textContent),
      color: getComputedStyle(td).color,
      background: getComputedStyle(td).backgroundColor,
      border: getComputedStyle(td).borderTopColor,
      bodyColor: bodyStyle.color,
      bodyBackground: bodyStyle.backgroundColor,
      height: table.getBoundingClientRect().height,
    } : undefined,
  };
}

// Pick a colour theme as a person does: Ctrl+K Ctrl+T opens the theme
// picker, the name is typed, Enter takes it; then wait for the workbench
// to wear it.
async function theme(page, { until }, name) {
  const chord = async (key) => {
    await page.keyboard.down('Control');
    await page.keyboard.press(key);
    await page.keyboard.up('Control');
  };
  await chord('KeyK');
  await chord('KeyT');
  await page.waitForSelector('.quick-input-widget input', { visible: true, timeout: 20000 });
  await page.keyboard.type(name, { delay: 10 });
  // The picker may put "Browse Additional Color Themes..." first: go
  // down to the theme.
  const focused = new Function(
    `const r = document.querySelector('.quick-input-list .monaco-list-row.focused');
     return !!r && r.textContent.includes(${JSON.stringify(name)})`);
  await until(page, `${name} in the theme picker`, async () => {
    if (await page.evaluate(focused)) {
      return true;
    }
    await page.keyboard.press('ArrowDown');
    return false;
  }, 20000);
  await page.keyboard.press('Enter');
  const cls = /Dark/.test(name) ? 'vs-dark' : 'vs';
  await until(page, `the ${name} theme`, new Function(
    `return document.querySelector('.monaco-workbench').classList.contains(${JSON.stringify(cls)})`), 20000);
}

// sRGB "rgb(r, g, b)" to its relative luminance (0 black .. 1 white).
function luminance(css) {
  const m = /rgba?\((\d+), (\d+), (\d+)/.exec(css);
  if (!m) {
    return undefined;
  }
  const [r, g, b] = m.slice(1, 4).map((x) => {
    const c = Number(x) / 255;
    return c <= 0.03928 ? c / 12.92 : ((c + 0.055) / 1.055) ** 2.4;
  });
  return 0.2126 * r + 0.7152 * g + 0.0722 * b;
}

async function outputScene(page, helpers) {
  const { until, palette, quickOpen, log, shots, docImg } = helpers;
  // The dark theme, where a browser's own white table used to glare.
  await theme(page, helpers, 'Default Dark Modern');
  await quickOpen(page, 'cell1.py', 'first');
  await palette(page, 'Kiln: Run');
  // The first run's section drawn before the next file is opened: the
  // panel opening takes the focus, and on a slow machine it did so while
  // quick open was up, which lost cell2.py's Enter.
  await until(page, 'the first cell\'s section in the Kiln Output panel', async () => {
    for (const f of page.frames()) {
      const st = await f.evaluate(panelState).catch(() => undefined);
      if (st && st.sections.some((x) => /^cell1\.py: /.test(x.title) && /\[exit 0/.test(x.result))) {
        return true;
      }
    }
    return undefined;
  }, 60000);
  await quickOpen(page, 'cell2.py', 'DataFrame');
  await palette(page, 'Kiln: Run');
  const state = await until(page, 'both cells as sections of the Kiln Output panel, with the table', async () => {
    for (const f of page.frames()) {
      const st = await f.evaluate(panelState).catch(() => undefined);
      if (st && st.table && st.sections.some((s) => /^cell1\.py: /.test(s.title) && /\[exit 0/.test(s.result)) &&
        st.sections.some((s) => /^cell2\.py: /.test(s.title) && /\[exit 0/.test(s.result))) {
        return st;
      }
    }
    return undefined;
  }, 60000);
  const one = state.sections.find((s) => /^cell1\.py: /.test(s.title));
  const two = state.sections.find((s) => /^cell2\.py: /.test(s.title));
  const fail = (why) => { throw new Error(`Kiln Output panel: ${why}: ${JSON.stringify(state)}`); };
  if (one.title !== 'cell1.py: print("first cell:", 6 * 7)' || !/first cell: 42/.test(one.output)) {
    fail('the first run\'s section is not its code and output');
  }
  if (!/second cell/.test(two.output) || !two.labels.includes('table 1') || two.labels.some((l) => /\(r\d+\)/.test(l))) {
    fail('the second run\'s section lacks its output or its "table 1" label');
  }
  if (state.sections.indexOf(one) > state.sections.indexOf(two)) {
    fail('the newest run is not at the bottom');
  }
  const t = state.table;
  if (state.iframes !== 0 || !t.cells.includes('17') || !t.cells.includes('<b>x</b>')) {
    fail('the DataFrame is not a table of its own values (markup in a cell shown as text) in the page');
  }
  // The theme's colours: the cell's text is the page's foreground, the
  // page is dark, no cell is painted light under it, and the table is as
  // tall as its two rows, not a fixed frame.
  const cellBg = /rgba\(0, 0, 0, 0\)|transparent/.test(t.background) ? t.bodyBackground : t.background;
  if (t.color !== t.bodyColor || !(luminance(t.bodyBackground) < 0.1) || !(luminance(cellBg) < 0.2) ||
    !(luminance(t.color) > 0.4) || t.height > 150) {
    fail('the table does not follow the dark theme or its size');
  }
  log('Kiln Output panel:', state.sections.length, 'sections;', one.title, '|', two.title, '| table', t.color, 'on', t.bodyBackground);
  await page.screenshot({ path: path.join(shots, '6-output.png') });
  if (docImg) {
    await page.screenshot({ path: docImg });
  }
  // Back to the default theme for whatever comes next.
  await theme(page, helpers, 'Default Light Modern');
}

module.exports = { outputScene };
