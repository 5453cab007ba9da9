// Opens tiletune report's HTML page in Debian's chromium through playwright-core (no browser
// download) and checks it as a reader sees it in a 1200-pixel window: no console or page error, no
// network request, every plot drawn with axes, labels and marks, no table or plot wider than what
// holds it (nor the page wider than the window), the ratio charts' 1.0 line drawn at 1.0 on their
// axis, and the plots each database must have. Writes a screenshot of the page (the CI artefact).
//
// node report_browser_test.js stand-in|fixture REPORT.html SCREENSHOT.png
//   stand-in: the CPU-backend tunes with stand-in bench rows and counters (report_browser_test.sh):
//     a plot of every kind, a convergence plot with two searches, counter rows;
//   fixture: the H200 selection fixture's suite: long configurations, no bench rows.
'use strict';
const { chromium } = require('playwright-core');
const { pathToFileURL } = require('url');

const [database, report, screenshot] = process.argv.slice(2);
const executablePath = process.env.CHROMIUM || '/usr/bin/chromium';
const kindsOf = {
  'stand-in': ['bench', 'choice', 'roofline', 'sensitivity', 'convergence'],
  fixture: ['choice', 'roofline', 'sensitivity'],
};
const ratioKinds = ['bench', 'choice'];  // ratio charts: their 1.0 line is a series of its own

async function main() {
  if (!kindsOf[database]) throw new Error(`unknown database kind "${database}" (stand-in or fixture)`);
  const kinds = kindsOf[database];
  const args = process.getuid && process.getuid() === 0 ? ['--no-sandbox'] : [];
  const browser = await chromium.launch({ executablePath, headless: true, args });
  const problems = [];
  try {
    const page = await browser.newPage({ viewport: { width: 1200, height: 900 } });
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
      // Where 1.0 lies on the y axis, interpolated between its tick labels (in the SVG's own
      // coordinates: each label sits 4 units below its tick), and where the 1.0 line is drawn.
      const yTicks = [...svg.querySelectorAll('.tick-label[text-anchor="end"]:not([transform])')]
        .map((t) => ({ value: Number(t.textContent), y: Number(t.getAttribute('y')) - 4 }))
        .filter((t) => Number.isFinite(t.value));
      let oneAt = null;
      if (yTicks.length >= 2) {
        const [a, b] = [yTicks[0], yTicks[yTicks.length - 1]];
        oneAt = a.y + (1 - a.value) / (b.value - a.value) * (b.y - a.y);
      }
      const unity = [...svg.querySelectorAll('polyline.line.unity')].map((line) =>
        line.getAttribute('points').trim().split(/\s+/).map((p) => Number(p.split(',')[1])));
      return {
        kind: [...svg.classList].find((c) => c !== 'plot'),
        title: svg.getAttribute('aria-label'),
        marks: svg.querySelectorAll('.mark').length,
        axes: svg.querySelectorAll('line.axis').length,
        axisLabels: [...svg.querySelectorAll('.axis-label')].filter((t) => t.textContent.trim()).length,
        tickLabels: svg.querySelectorAll('.tick-label').length,
        lines: svg.querySelectorAll('polyline.line').length,
        drawn: box.width > 0 && box.height > 0,
        oneAt,
        unity,
      };
    }));
    for (const plot of plots) {
      if (plot.marks === 0) problems.push(`plot "${plot.title}" (${plot.kind}) has no marks`);
      if (plot.axes !== 2 || plot.axisLabels !== 2 || plot.tickLabels === 0) {
        problems.push(`plot "${plot.title}" lacks axes, axis labels or ticks: ${JSON.stringify(plot)}`);
      }
      if (!plot.drawn) problems.push(`plot "${plot.title}" is not drawn`);
      if (ratioKinds.includes(plot.kind)) {
        if (plot.unity.length !== 1) {
          problems.push(`ratio chart "${plot.title}" has ${plot.unity.length} 1.0 lines, not one`);
        } else if (plot.oneAt === null || plot.unity[0].some((y) => Math.abs(y - plot.oneAt) > 0.6)) {
          problems.push(`ratio chart "${plot.title}": its 1.0 line at y ${plot.unity[0]}, 1.0 on its axis at ${plot.oneAt}`);
        }
      }
    }
    for (const kind of kinds) {
      const count = plots.filter((p) => p.kind === kind).length;
      if (count === 0) problems.push(`no ${kind} plot`);
    }
    // Tables and plots fit what holds them, and the page fits the window: long configuration
    // texts wrap instead of widening their table.
    const overflows = await page.$$eval('table, svg.plot', (elements) => elements.flatMap((element) => {
      const width = element.getBoundingClientRect().width, room = element.parentElement.clientWidth;
      const what = element.tagName === 'TABLE'
        ? `table after "${element.closest('div').previousElementSibling?.textContent.slice(0, 60)}"`
        : `plot "${element.getAttribute('aria-label')}"`;
      return width > room + 0.5 ? [`${what} is ${width.toFixed(0)} px wide in ${room} px`] : [];
    }));
    problems.push(...overflows);
    const page_width = await page.evaluate(() => [document.documentElement.scrollWidth, window.innerWidth]);
    if (page_width[0] > page_width[1]) problems.push(`the page is ${page_width[0]} px wide in a ${page_width[1]} px window`);
    const tables = await page.$$eval('table', (t) => t.length);

    // The choice at untuned shapes: its section, a table of templates and one of hidden shapes.
    const choiceRows = await page.evaluate(() => {
      let rows = 0;
      const heading = document.querySelector('h2#choice');
      for (let e = heading && heading.nextElementSibling; e && e.tagName !== 'H2'; e = e.nextElementSibling) {
        rows += e.querySelectorAll('table tbody tr').length;
      }
      return rows;
    });
    if ((await page.$('h2#choice')) === null) problems.push('no "Choice at untuned shapes" section');
    if (choiceRows === 0) problems.push('the choice section has no table rows');
    let counterRows = 0;
    if (database === 'stand-in') {
      // The shape tuned by two strategies shows both searches, each a line of its own colour.
      if (!plots.some((p) => p.kind === 'convergence' && p.lines >= 2)) {
        problems.push('no convergence plot shows two searches');
      }
      counterRows = await page.$$eval('#counters ~ div table tbody tr', (rows) => rows.length);
      if (counterRows === 0) problems.push('the counters table has no rows');
    }
    // The fixture's page is some 70,000 pixels of sensitivity plots: its screenshot stops before
    // the roofline, where the tables and the choice have been shown.
    const clip = database === 'fixture'
      ? await page.evaluate(() => ({
        x: 0, y: 0, width: document.documentElement.clientWidth,
        height: document.querySelector('h2#roofline').getBoundingClientRect().top + window.scrollY,
      }))
      : undefined;
    await page.screenshot({ path: screenshot, fullPage: true, clip });
    const byKind = kinds.map((k) => `${k} ${plots.filter((p) => p.kind === k).length}`).join(', ');
    const marks = plots.reduce((sum, p) => sum + p.marks, 0);
    console.log(`${database}: ${plots.length} plots (${byKind}), ${marks} marks, ${tables} tables, ` +
                `${choiceRows} choice rows, ${counterRows} counter rows; screenshot ${screenshot}`);
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
