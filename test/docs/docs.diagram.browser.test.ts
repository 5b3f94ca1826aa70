// The state diagram of docs/concepts/life-of-a-step.md is a hand-written SVG, rendered here by a
// real renderer (headless Chromium, as a document and as an <img>). It must be referenced by the
// page, parse, draw every step state and name every lock transition of src/rules/transitions.ts (on an
// edge from one state to another, or in its legend when the state does not change), and nothing
// the code lacks; its labels stay inside the picture and do not overlap.
import { after, before, describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { existsSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { dirname, join } from 'node:path';
import { pathToFileURL } from 'node:url';
import { chromium, type Browser, type Page } from 'playwright-core';
import { INSPECT_STATES } from '../../src/ops/inspect/step-view';
import { transitions } from '../../src/rules/transitions';
import { StepState } from '../../src/types';

const CHROMIUM = '/usr/bin/chromium';
const root = join(__dirname, '..', '..');
const svgPath = join(root, 'docs', 'concepts', 'step-states.svg');
const svgUrl = pathToFileURL(svgPath).href;

interface Box { x: number; y: number; width: number; height: number }
interface Drawn {
  root: string;
  viewBox: Box;
  states: Array<{ name: string; box: Box }>;
  edges: Array<{ name: string; from: { x: number; y: number }; to: { x: number; y: number } }>;
  labels: Array<{ name: string; text: string; box: Box }>;
  legend: string[];
  start: { x: number; y: number; r: number };
}

/** What the renderer drew, read in the page: boxes from getBBox(), edge ends from the paths' geometry. */
const COLLECT = `(() => {
  const box = (e) => { const b = e.getBBox(); return { x: b.x, y: b.y, width: b.width, height: b.height }; };
  const vb = document.documentElement.viewBox.baseVal;
  const dot = document.querySelector('circle');
  return {
    root: document.documentElement.nodeName,
    viewBox: { x: vb.x, y: vb.y, width: vb.width, height: vb.height },
    states: [...document.querySelectorAll('g[data-state]')].map((g) => ({ name: g.dataset.state, box: box(g.querySelector('rect')) })),
    edges: [...document.querySelectorAll('path[data-transition]')].map((p) => {
      const a = p.getPointAtLength(0);
      const b = p.getPointAtLength(p.getTotalLength());
      return { name: p.dataset.transition, from: { x: a.x, y: a.y }, to: { x: b.x, y: b.y } };
    }),
    labels: [...document.querySelectorAll('text')].map((t) => ({ name: t.dataset.label || '', text: t.textContent || '', box: box(t) })),
    legend: [...document.querySelectorAll('text[data-legend]')].map((t) => t.dataset.legend),
    start: { x: dot.cx.baseVal.value, y: dot.cy.baseVal.value, r: dot.r.baseVal.value },
  };
})()`;

const overlap = (a: Box, b: Box): boolean => a.x < b.x + b.width && b.x < a.x + a.width && a.y < b.y + b.height && b.y < a.y + a.height;
const inside = (a: Box, b: Box): boolean => a.x >= b.x && a.y >= b.y && a.x + a.width <= b.x + b.width && a.y + a.height <= b.y + b.height;
/** How far a point is from a box's border (0 on it, positive outside). */
function distance(p: { x: number; y: number }, b: Box): number {
  const dx = Math.max(b.x - p.x, 0, p.x - (b.x + b.width));
  const dy = Math.max(b.y - p.y, 0, p.y - (b.y + b.height));
  return Math.hypot(dx, dy);
}

describe('the step-state diagram (docs/concepts/step-states.svg)', { timeout: 60_000 }, () => {
  let browser: Browser;
  let page: Page;
  let drawn: Drawn;

  before(async () => {
    if (!existsSync(CHROMIUM)) throw new Error(`${CHROMIUM} is missing: install Debian's chromium to run the browser test.`);
    browser = await chromium.launch({ executablePath: CHROMIUM, args: ['--headless', '--no-sandbox', '--disable-gpu', '--no-first-run', '--disable-background-networking', '--disable-component-update'] });
    page = await browser.newPage();
    await page.goto(svgUrl);
    // Sent as text: the test's own functions, as tsx compiles them, call helpers the page does not have.
    drawn = await page.evaluate(COLLECT) as Drawn;
  });
  after(async () => {
    await browser?.close();
  });

  it('is the picture the life-of-a-step page shows', () => {
    const markdown = readFileSync(join(root, 'docs', 'concepts', 'life-of-a-step.md'), 'utf8');
    assert.match(markdown, /!\[[^\]]+\]\(step-states\.svg\)/);
  });

  it('parses as SVG and renders as an image', async () => {
    assert.equal(drawn.root, 'svg', 'no parser error page');
    const html = join(mkdtempSync(join(tmpdir(), 'datastore-locker-diagram-')), 'page.html');
    writeFileSync(html, `<!doctype html><img src="${svgUrl}">`);
    const viewer = await browser.newPage();
    await viewer.goto(pathToFileURL(html).href);
    rmSync(dirname(html), { recursive: true, force: true });
    const size = await viewer.evaluate('document.querySelector("img").decode().then(() => [document.querySelector("img").naturalWidth, document.querySelector("img").naturalHeight])');
    assert.deepEqual(size, [drawn.viewBox.width, drawn.viewBox.height]);
  });

  it('draws each state once: every stored step state, and only states locker.inspect() reports', () => {
    const names = drawn.states.map((s) => s.name);
    assert.equal(new Set(names).size, names.length);
    for (const state of Object.values(StepState)) assert.ok(names.includes(state), `${state} is drawn`);
    for (const name of names) assert.ok((INSPECT_STATES as readonly string[]).includes(name), `${name} is a state`);
  });

  it('names every lock transition of src/rules/transitions.ts, as an edge or in the legend, and no other', () => {
    const named = new Set([...drawn.edges.flatMap((e) => e.name.split(' ')), ...drawn.legend]);
    assert.deepEqual([...named].sort(), Object.keys(transitions).sort());
  });

  it('connects each edge from a state (or the start) to another state, and labels it', () => {
    const near = (p: { x: number; y: number }): string | undefined => drawn.states.find((s) => distance(p, s.box) <= 4)?.name;
    for (const edge of drawn.edges) {
      const from = near(edge.from) ?? (Math.hypot(edge.from.x - drawn.start.x, edge.from.y - drawn.start.y) <= drawn.start.r + 8 ? 'start' : undefined);
      const to = near(edge.to);
      assert.ok(from, `${edge.name} starts at a state or the start`);
      assert.ok(to, `${edge.name} ends at a state`);
      for (const name of edge.name.split(' ')) assert.ok(drawn.labels.some((l) => l.name === name && l.text.startsWith(name)), `${name} is labelled`);
    }
  });

  it('keeps every text inside the picture, and no two texts overlap', () => {
    for (const label of drawn.labels) {
      assert.ok(label.box.width > 0 && label.box.height > 0, `"${label.text}" is drawn`);
      assert.ok(inside(label.box, drawn.viewBox), `"${label.text}" is inside the picture`);
    }
    for (let i = 0; i < drawn.labels.length; i++) {
      for (let j = i + 1; j < drawn.labels.length; j++) {
        assert.ok(!overlap(drawn.labels[i]!.box, drawn.labels[j]!.box), `"${drawn.labels[i]!.text}" and "${drawn.labels[j]!.text}" do not overlap`);
      }
    }
  });
});
