// Opens tiletune report's HTML page in Debian's chromium through playwright-core (no browser
// download) and checks it as a reader sees it: no console or page error, no network request, every
// plot drawn with axes, labels and marks, one plot of each kind at least, a convergence plot with
// two strategies' lines. Writes a full-page screenshot (the CI artefact).
//
// node report_browser_test.js REPORT.html SCREENSHOT.png
'use strict';
const { chromium } = require('playwright-core');
const { pathToFileURL } = require('url');

const [report, screenshot] = process.argv.slice(2);
const executablePath = process.env.CHROMIUM || '/usr/bin/chromium';
const kinds = ['bench', 'roofline', 'sensitivity', 'convergence'];

async function main() {
  const args = process.getuid && process.getuid() === 0 ? ['--no-sandbox'] : [];
  const browser = await chromium.launch({ executablePath, headless: true, args });
  const problems = [];
  try {
    const page = await browser.newPage({ viewport: { width: 1280, height: 900 } });
    page.on('console', (message) => {
      if (message.type() === 'error') problems.push(`console error: ${message.text()}`);
    });
    page.on('pageerror', (error) => problems.push(`page error: ${error.message}`));
    page.on('request', (request) => {
      if (!request.url().startsWith('file:')) problems.push(`network request: ${request.url()}`);
    });
    await page.goto(pathToFileURL(report).href, { waitUntil: 'load' });
    const plots = await page.$$eval('svg.plot', (svgs) => svgs.map((svg) => {
      const box = svg.getBoundingClientRect();
      return {
        kind: [...svg.classList].find((c) => c !== 'plot'),
        title: svg.getAttribute('aria-label'),
        marks: svg.querySelectorAll('.mark').length,
        axes: svg.querySelectorAll('line.axis').length,
        axisLabels: [...svg.querySelectorAll('.axis-label')].filter((t) => t.textContent.trim()).length,
        tickLabels: svg.querySelectorAll('.tick-label').length,
        lines: svg.querySelectorAll('polyline.line').length,
        drawn: box.width > 0 && box.height > 0,
      };
    }));
    for (const plot of plots) {
      if (plot.marks === 0) problems.push(`plot "${plot.title}" (${plot.kind}) has no marks`);
      if (plot.axes !== 2 || plot.axisLabels !== 2 || plot.tickLabels === 0) {
        problems.push(`plot "${plot.title}" lacks axes, axis labels or ticks: ${JSON.stringify(plot)}`);
      }
      if (!plot.drawn) problems.push(`plot "${plot.title}" is not drawn`);
    }
    for (const kind of kinds) {
      const count = plots.filter((p) => p.kind === kind).length;
      if (count === 0) problems.push(`no ${kind} plot`);
    }
    // The shape tuned by two strategies shows both searches, each a line of its own colour.
    if (!plots.some((p) => p.kind === 'convergence' && p.lines >= 2)) {
      problems.push('no convergence plot shows two searches');
    }
    const counterRows = await page.$$eval('#counters ~ div table tbody tr', (rows) => rows.length);
    if (counterRows === 0) problems.push('the counters table has no rows');
    await page.screenshot({ path: screenshot, fullPage: true });
    const byKind = kinds.map((k) => `${k} ${plots.filter((p) => p.kind === k).length}`).join(', ');
    const marks = plots.reduce((sum, p) => sum + p.marks, 0);
    console.log(`${plots.length} plots (${byKind}), ${marks} marks, ${counterRows} counter rows; screenshot ${screenshot}`);
  } finally {
    await browser.close();
  }
  if (problems.length) {
    for (const problem of problems) console.error(`FAIL: ${problem}`);
    process.exit(1);
  }
}

main().catch((error) => {
  console.error(`FAIL: ${error.stack || error}`);
  process.exit(1);
});
