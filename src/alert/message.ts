/**
 * The words of an alert: a subject, and a body in plain text and HTML built from one model, that
 * say what happened, what a person should do, and every fact of the event. Whatever comes from
 * the entity, the error or the task is escaped in the HTML.
 */
import { escapeHtml } from '../http/html';
import { AlertReason, type AlertEvent } from '../types';
import { renderValue } from './render-value';
import { formatAge } from '../ops/status/age';

/** A formatted alert. */
export interface AlertMessage {
  /** One line: `subjectPrefix`, what happened, the key path and the step. */
  subject: string;
  /** The plain-text body. */
  text: string;
  /** The HTML body; whatever came from the entity, the error or the task is escaped. */
  html: string;
}

/** How alerts are worded. */
export interface MessageOptions {
  /** Put before every subject, e.g. `[datastore-locker]`; may be empty. */
  subjectPrefix: string;
}

/** One labelled fact; a block is multi-line text shown preformatted. */
interface Field {
  label: string;
  value: string;
  block?: boolean;
  /** A link: the value is shown as an anchor to this URL in HTML. */
  href?: string;
}

interface Section {
  title: string;
  fields: Field[];
}

/** What both renderings say. */
interface Model {
  headline: string;
  happened: string;
  todo: string;
  /** The step's page on the status router, where the actions are buttons. */
  stepUrl?: string;
  sections: Section[];
  notes: string[];
}

const SUBJECT_MAX = 200;
const STACK_MAX = 10_000;
const UNKNOWN = '(unknown)';

/** Formats an alert. `event.suppressed` is reported when above zero. */
export function formatAlert(event: AlertEvent, options: MessageOptions): AlertMessage {
  const model = buildModel(event);
  const subject = oneLine([options.subjectPrefix, model.headline].filter(Boolean).join(' '));
  return { subject: subject.slice(0, SUBJECT_MAX), text: renderText(model), html: renderHtml(model) };
}

/** A duration in words, as the status page shows ages (the two largest units), e.g. `2 min 5 s` or `850 ms`. */
export function formatDuration(ms: number): string {
  return Number.isFinite(ms) && ms >= 0 ? formatAge(ms) : UNKNOWN;
}


// ---------------------------------------------------------------------------------------------
// The model

function buildModel(event: AlertEvent): Model {
  const story = event.reason === AlertReason.overwrite ? overwriteStory(event) : failureStory(event);
  const sections = [originSection(event), entitySection(event), leaseSection(event), taskSection(event)];
  if (event.error) sections.push(errorSection(event.error));
  const values: Field = { label: 'values (lock fields left out)', value: renderValue(event.properties), block: true };
  sections.push({ title: 'Properties', fields: [values] });
  sections.push({ title: 'When', fields: [{ label: 'time', value: isoTime(event.at) }] });
  const model: Model = { ...story, sections, notes: suppressedNote(event.suppressed ?? 0) };
  if (event.stepUrl && isWebUrl(event.stepUrl)) model.stepUrl = event.stepUrl;
  return model;
}

type Story = Pick<Model, 'headline' | 'happened' | 'todo'>;

function overwriteStory(event: AlertEvent): Story {
  const step = `step ${event.seq} of ${event.keyPath}`;
  const age = event.leaseAgeMs === undefined ? '' : ` ${formatDuration(event.leaseAgeMs)} ago`;
  return {
    headline: `lease overwritten: ${event.keyPath} seq ${event.seq}`,
    happened:
      `A stale lease was overwritten. Attempt ${event.previousAttempt ?? UNKNOWN} held the lease on ${step} ` +
      `but last renewed it${age} (it crashed, or its event loop was blocked), so attempt ` +
      `${event.newAttempt ?? UNKNOWN} took the step over. The step may have run twice.`,
    todo:
      'Check the side effects of this step (payments, emails, writes to other systems) for a duplicate, ' +
      'and undo it if needed. The step goes on under the new attempt; if it does not finish, re-send it ' +
      `(${action(event, 'resend')}), or stop the chain (${action(event, 'cancel')}). ` +
      'If this repeats, look for a handler that blocks the event loop or outlives its lease.',
  };
}

/** How to act: the status page's button when it is linked, and the call that does the same. */
function action(event: AlertEvent, name: 'retry' | 'cancel' | 'resend'): string {
  const button = name.charAt(0).toUpperCase() + name.slice(1);
  const key = event.encodedKey ? `locker.decodeKey('${event.encodedKey}')` : 'key';
  const call = `locker.${name}(${key})`;
  return event.stepUrl ? `the ${button} button on the step's status page, or ${call}` : call;
}

function failureStory(event: AlertEvent): Story {
  return {
    headline: `step failed: ${event.keyPath} seq ${event.seq}`,
    happened:
      `Step ${event.seq} of ${event.keyPath} failed for good after ${plural(event.retries, 'failed attempt')}. ` +
      'Its chain stopped: no later step will run until someone acts.',
    todo:
      `Fix the cause of the error below, then retry the step (${action(event, 'retry')}): it runs again ` +
      'with a fresh retry budget and a new task. To give the chain up instead, leave it failed: a kickoff ' +
      '(locker.schedule) starts a new chain on the entity.',
  };
}

function originSection(event: AlertEvent): Section {
  const fields: Field[] = [
    { label: 'project', value: event.project ?? UNKNOWN },
    { label: 'service', value: event.service ?? UNKNOWN },
  ];
  if (event.stepUrl && isWebUrl(event.stepUrl)) fields.push({ label: 'status page', value: event.stepUrl, href: event.stepUrl });
  if (event.encodedKey) fields.push({ label: 'X-Lock-Key', value: event.encodedKey });
  return { title: 'From', fields };
}

function entitySection(event: AlertEvent): Section {
  return {
    title: 'Entity',
    fields: [
      { label: 'kind', value: event.kind },
      { label: 'key path', value: event.keyPath },
      { label: 'namespace', value: event.namespace ? event.namespace : '(default)' },
      { label: 'sequence', value: String(event.seq) },
      { label: 'retries', value: String(event.retries) },
    ],
  };
}

function leaseSection(event: AlertEvent): Section {
  if (event.reason === AlertReason.failure) {
    return { title: 'Lease', fields: [{ label: 'failed attempt', value: event.previousAttempt ?? UNKNOWN }] };
  }
  const age = event.leaseAgeMs === undefined ? UNKNOWN : `${formatDuration(event.leaseAgeMs)} (${event.leaseAgeMs} ms)`;
  return {
    title: 'Lease',
    fields: [
      { label: 'held by attempt', value: event.previousAttempt ?? UNKNOWN },
      { label: 'taken over by attempt', value: event.newAttempt ?? UNKNOWN },
      { label: 'lease age', value: age },
    ],
  };
}

function taskSection(event: AlertEvent): Section {
  return {
    title: 'Task',
    fields: [
      { label: 'name', value: event.task.name ?? UNKNOWN },
      { label: 'queue', value: event.task.queue ?? UNKNOWN },
    ],
  };
}

function errorSection(error: NonNullable<AlertEvent['error']>): Section {
  const fields: Field[] = [{ label: 'message', value: error.message }];
  if (error.stack) fields.push({ label: 'stack', value: bound(error.stack, STACK_MAX), block: true });
  return { title: 'Error', fields };
}

function suppressedNote(suppressed: number): string[] {
  if (suppressed <= 0) return [];
  const verb = suppressed === 1 ? 'was' : 'were';
  return [`${plural(suppressed, 'similar alert')} ${verb} held back by the rate limit since the last alert was sent; each stays owed and is sent again in a later window.`];
}

// ---------------------------------------------------------------------------------------------
// Renderings

function renderText(model: Model): string {
  const lines = [oneLine(capitalise(model.headline)), '', oneLine(model.happened), '', `What to do: ${oneLine(model.todo)}`];
  if (model.stepUrl) lines.push('', `The step: ${oneLine(model.stepUrl)}`);
  for (const section of model.sections) {
    lines.push('', section.title);
    for (const field of section.fields) lines.push(...textField(field));
  }
  if (model.notes.length > 0) lines.push('', ...model.notes.map(oneLine));
  return `${lines.join('\n')}\n`;
}

/**
 * One field's lines. A single-line field is kept on its line (its line breaks collapsed), and each
 * line of a block is indented under its label: nothing that comes from the entity, the error or the
 * task can start a line of its own, such as a forged "What to do: visit …".
 */
function textField(field: Field): string[] {
  if (!field.block) return [`  ${`${field.label}:`.padEnd(24)}${oneLine(field.value)}`];
  return [`  ${field.label}:`, ...field.value.split(LINE_BREAK).map((line) => `    ${oneLine(line)}`)];
}

function renderHtml(model: Model): string {
  const parts = [
    '<!doctype html>',
    '<html><body style="font-family: sans-serif; font-size: 14px;">',
    `<h2>${escapeHtml(capitalise(model.headline))}</h2>`,
    `<p>${escapeHtml(model.happened)}</p>`,
    `<p><strong>What to do:</strong> ${escapeHtml(model.todo)}</p>`,
    ...(model.stepUrl ? [`<p><a href="${escapeHtml(model.stepUrl)}">Open the step on the status page</a></p>`] : []),
    ...model.sections.map(htmlSection),
    ...model.notes.map((note) => `<p><em>${escapeHtml(note)}</em></p>`),
    '</body></html>',
  ];
  return `${parts.join('\n')}\n`;
}

function htmlSection(section: Section): string {
  const rows = section.fields.map(htmlField).join('\n');
  return `<h3>${escapeHtml(section.title)}</h3>\n<table cellpadding="4">\n${rows}\n</table>`;
}

function htmlField(field: Field): string {
  const value = field.block
    ? `<pre style="margin: 0; white-space: pre-wrap;">${escapeHtml(field.value)}</pre>`
    : field.href ? `<a href="${escapeHtml(field.href)}">${escapeHtml(field.value)}</a>` : escapeHtml(field.value);
  return `<tr><th align="left" valign="top">${escapeHtml(field.label)}</th><td>${value}</td></tr>`;
}

// ---------------------------------------------------------------------------------------------
// Small helpers

function plural(count: number, noun: string): string {
  return `${count} ${noun}${count === 1 ? '' : 's'}`;
}

function capitalise(text: string): string {
  return text.charAt(0).toUpperCase() + text.slice(1);
}

/** Whatever a mail reader may break a line at. */
const LINE_BREAK = /\r\n|[\n\r\v\f\u0085\u2028\u2029]/;

/** Control characters (line breaks included, Unicode's too) become spaces: a subject, or a field, is one line. */
function oneLine(text: string): string {
  return text.replace(/[\u0000-\u001f\u007f-\u009f\u2028\u2029]+/g, ' ');
}

function bound(text: string, max: number): string {
  return text.length <= max ? text : `${text.slice(0, max)}\n… (${text.length - max} more characters)`;
}

/** Only http(s) URLs become links. */
function isWebUrl(url: string): boolean {
  return /^https?:\/\//i.test(url);
}

function isoTime(at: Date): string {
  return at instanceof Date && !Number.isNaN(at.getTime()) ? at.toISOString() : UNKNOWN;
}
