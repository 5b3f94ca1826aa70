import { describe, it, before, after, beforeEach, afterEach } from 'node:test';
import assert from 'node:assert/strict';
import { Datastore } from '@google-cloud/datastore';
import nodemailer from 'nodemailer';
import { EmailAlerter, SMTP_TIMEOUT_DEFAULTS, type EmailAlerterOptions } from '../../src/alert/email';
import { ConfigError } from '../../src/errors/errors';
import { AlertReason, type AlertEvent } from '../../src/types';
import { TestSmtpServer, type ReceivedMail } from '../support/smtp';

const datastore = new Datastore({ projectId: 'alert-test' });
const AT = new Date('2030-04-05T06:07:08.009Z');
const BLOB = Buffer.alloc(32, 7);
const CREATED_AT = new Date('2029-12-31T23:59:58.000Z');
const STACK = 'Error: card declined\n    at charge (/srv/app/charge.ts:10:5)\n    at step (/srv/app/step.ts:3:1)';

/** A permanent-failure event with every field set. */
function failureEvent(overrides: Partial<AlertEvent> = {}): AlertEvent {
  return {
    id: '5f1c0a9e2b7d4c31a8e6f0b2d9c47e13',
    reason: AlertReason.failure,
    key: datastore.key({ namespace: 'tenant-a', path: ['Order', 42] }),
    kind: 'Order',
    namespace: 'tenant-a',
    keyPath: 'Order:42',
    seq: 3,
    retries: 10,
    previousAttempt: 'attempt-failed-7f3a',
    error: { message: 'card declined', stack: STACK },
    task: { source: 'cloud-tasks', name: 'task-7c1e9b', queue: 'orders-queue' },
    properties: { customer: 'customer-ann-7781', total: 12.5, createdAt: CREATED_AT, blob: BLOB },
    at: AT,
    ...overrides,
  };
}

/** A lease-overwrite event with every field set. */
function overwriteEvent(overrides: Partial<AlertEvent> = {}): AlertEvent {
  return {
    ...failureEvent(),
    reason: AlertReason.overwrite,
    retries: 1,
    previousAttempt: 'attempt-stale-11aa',
    newAttempt: 'attempt-new-22bb',
    leaseAgeMs: 125_000,
    error: undefined,
    ...overrides,
  };
}

/** The value of a `label: value` line of the plain-text body. */
function textField(text: string, label: string): string | undefined {
  const line = text.split('\n').find((l) => l.trimStart().startsWith(`${label}:`));
  return line?.trimStart().slice(label.length + 1).trim();
}

/** The (still escaped) value of a `<th>label</th><td>value</td>` row of the HTML body. */
function htmlField(html: string, label: string): string | undefined {
  const match = new RegExp(`<th[^>]*>${label}</th><td>([\\s\\S]*?)</td></tr>`).exec(html);
  return match?.[1];
}

/** A manual clock for the rate limit. */
function manualClock(): { now: () => number; set: (ms: number) => void } {
  let time = 1_700_000_000_000;
  const start = time;
  return { now: () => time, set: (ms) => (time = start + ms) };
}

describe('EmailAlerter', () => {
  let smtp: TestSmtpServer;
  let alerters: EmailAlerter[] = [];

  before(async () => {
    smtp = await TestSmtpServer.start();
  });
  after(async () => {
    await smtp.stop();
  });
  beforeEach(() => {
    smtp.mode = 'accept';
    smtp.messages.length = 0;
  });
  afterEach(async () => {
    await Promise.all(alerters.map((alerter) => alerter.shutdown()));
    alerters = [];
  });

  function alerter(options: Partial<EmailAlerterOptions> = {}): EmailAlerter {
    const created = new EmailAlerter({
      transport: smtp.transportOptions(),
      to: ['ops@example.com', 'On Call <oncall@example.com>'],
      from: 'Locker <locker@example.com>',
      ...options,
    });
    alerters.push(created);
    return created;
  }

  async function sendOne(event: AlertEvent, options: Partial<EmailAlerterOptions> = {}): Promise<ReceivedMail> {
    await alerter(options).send(event);
    assert.equal(smtp.messages.length, 1);
    return smtp.messages[0];
  }

  describe('addressing', () => {
    it('sends to exactly the configured recipients, from the configured sender', async () => {
      const mail = await sendOne(failureEvent());
      assert.deepEqual(mail.envelope, { from: 'locker@example.com', to: ['ops@example.com', 'oncall@example.com'] });
      assert.deepEqual(mail.to, ['ops@example.com', 'oncall@example.com']);
      assert.deepEqual(mail.from, ['locker@example.com']);
    });

    it('makes the alert\'s stable id the Message-ID, so an alert sent twice is one message', async () => {
      const first = await sendOne(failureEvent());
      const id = /^Message-ID: *(.+)$/im.exec(first.raw)?.[1]?.trim();
      assert.equal(id, '<5f1c0a9e2b7d4c31a8e6f0b2d9c47e13@datastore-locker>');
      smtp.messages.length = 0;
      const other = await sendOne(failureEvent({ id: 'another-id' }));
      assert.equal(/^Message-ID: *(.+)$/im.exec(other.raw)?.[1]?.trim(), '<another-id@datastore-locker>');
    });

    it('lets the transport pick a Message-ID when the id is not fit for one', async () => {
      const mail = await sendOne(failureEvent({ id: 'a b<c>' }));
      const id = /^Message-ID: *(.+)$/im.exec(mail.raw)?.[1]?.trim() ?? '';
      assert.match(id, /^<[^<> ]+@[^<> ]+>$/);
      assert.ok(!id.includes('a b'), id);
    });

    it('accepts a single recipient as a string', async () => {
      const mail = await sendOne(failureEvent(), { to: 'solo@example.com' });
      assert.deepEqual(mail.envelope.to, ['solo@example.com']);
      assert.deepEqual(mail.to, ['solo@example.com']);
    });
  });

  describe('a permanent failure', () => {
    it('has a subject naming the failed step', async () => {
      const mail = await sendOne(failureEvent());
      assert.equal(mail.subject, '[datastore-locker] step failed: Order:42 seq 3');
    });

    it('uses the configured subject prefix', async () => {
      const mail = await sendOne(failureEvent(), { subjectPrefix: '[shop prod]' });
      assert.equal(mail.subject, '[shop prod] step failed: Order:42 seq 3');
    });

    it('says what happened and what to do, in text and HTML', async () => {
      const mail = await sendOne(failureEvent());
      for (const body of [mail.text, mail.html]) {
        assert.match(body, /Step 3 of Order:42 failed for good after 10 failed attempts/);
        assert.match(body, /chain stopped/);
        assert.match(body, /Fix the cause of the error below, then retry the step \(locker\.retry\(key\)\)/);
        assert.match(body, /fresh retry budget and a new task/);
        assert.match(body, /leave it failed: a kickoff \(locker\.schedule\) starts a new chain/);
        assert.doesNotMatch(body, /may have run twice/);
      }
    });

    it('gives every fact of the event, in text and HTML', async () => {
      const { text, html } = await sendOne(failureEvent());
      const expected: Record<string, string> = {
        kind: 'Order',
        'key path': 'Order:42',
        namespace: 'tenant-a',
        sequence: '3',
        retries: '10',
        'failed attempt': 'attempt-failed-7f3a',
        name: 'task-7c1e9b',
        queue: 'orders-queue',
        message: 'card declined',
        time: AT.toISOString(),
      };
      for (const [label, value] of Object.entries(expected)) {
        assert.equal(textField(text, label), value, `text field ${label}`);
        assert.equal(htmlField(html, label), value, `html field ${label}`);
      }
      for (const line of STACK.split('\n')) {
        assert.ok(text.includes(line), `text has stack line ${line}`);
        assert.ok(html.includes(line.replace(/</g, '&lt;')), `html has stack line ${line}`);
      }
    });

    it('renders the properties JSON-like: Dates as ISO strings, Buffers summarised', async () => {
      const { text, html } = await sendOne(failureEvent());
      const lines = [
        '"customer": "customer-ann-7781"',
        '"total": 12.5',
        `"createdAt": "${CREATED_AT.toISOString()}"`,
        '"blob": "[Buffer: 32 bytes]"',
      ];
      for (const line of lines) {
        assert.ok(text.includes(line), `text has ${line}`);
        assert.ok(html.includes(line.replace(/"/g, '&quot;')), `html has ${line}`);
      }
      assert.ok(!text.includes(BLOB.toString('base64')), 'the buffer content is not dumped');
    });

    it('shows the default namespace when the key has none', async () => {
      const { text, html } = await sendOne(failureEvent({ namespace: undefined }));
      assert.equal(textField(text, 'namespace'), '(default)');
      assert.equal(htmlField(html, 'namespace'), '(default)');
    });
  });

  describe('a lease overwrite', () => {
    it('has a subject naming the step', async () => {
      const mail = await sendOne(overwriteEvent());
      assert.equal(mail.subject, '[datastore-locker] lease overwritten: Order:42 seq 3');
    });

    it('says the step may have run twice and to check its side effects', async () => {
      const mail = await sendOne(overwriteEvent());
      for (const body of [mail.text, mail.html]) {
        assert.match(body, /Attempt attempt-stale-11aa held the lease on step 3 of Order:42/);
        assert.match(body, /attempt attempt-new-22bb took the step over/);
        assert.match(body, /may have run twice/);
        assert.match(body, /Check the side effects of this step/);
        assert.doesNotMatch(body, /failed for good/);
      }
    });

    it('names both attempts and the lease age in words', async () => {
      const { text, html } = await sendOne(overwriteEvent());
      const expected: Record<string, string> = {
        'held by attempt': 'attempt-stale-11aa',
        'taken over by attempt': 'attempt-new-22bb',
        'lease age': '2 min 5 s (125000 ms)',
        retries: '1',
        'key path': 'Order:42',
        name: 'task-7c1e9b',
        queue: 'orders-queue',
        time: AT.toISOString(),
      };
      for (const [label, value] of Object.entries(expected)) {
        assert.equal(textField(text, label), value, `text field ${label}`);
        assert.equal(htmlField(html, label), value, `html field ${label}`);
      }
      assert.equal(textField(text, 'message'), undefined, 'no error section without an error');
    });
  });

  describe('where it came from and how to act', () => {
    const origin = {
      project: 'shop-prod',
      service: 'orders (orders-00042-abc)',
      encodedKey: 'ahBzfnNob3AtcHJvZHIJCgVPcmRlchAq',
      stepUrl: 'https://orders.example.com/ops/locker/step?key=ahBzfnNob3AtcHJvZHIJCgVPcmRlchAq',
    };

    it('names the project and service, and links to the step on the status page', async () => {
      const { text, html } = await sendOne(failureEvent(origin));
      assert.equal(textField(text, 'project'), 'shop-prod');
      assert.equal(textField(text, 'service'), 'orders (orders-00042-abc)');
      assert.equal(textField(text, 'status page'), origin.stepUrl);
      assert.equal(textField(text, 'X-Lock-Key'), origin.encodedKey);
      assert.ok(text.includes(`The step: ${origin.stepUrl}`));
      assert.equal(htmlField(html, 'project'), 'shop-prod');
      assert.equal(htmlField(html, 'status page'), `<a href="${origin.stepUrl}">${origin.stepUrl}</a>`);
      assert.ok(html.includes(`<p><a href="${origin.stepUrl}">Open the step on the status page</a></p>`));
    });

    it('names the real action for a failure: retry, with the call for this key', async () => {
      const { text, html } = await sendOne(failureEvent(origin));
      for (const body of [text, html.replace(/&#39;/g, "'")]) {
        assert.ok(body.includes(`retry the step (the Retry button on the step's status page, or locker.retry(locker.decodeKey('${origin.encodedKey}')))`), body);
      }
    });

    it('names resend and cancel for an overwrite whose step does not finish', async () => {
      const { text } = await sendOne(overwriteEvent(origin));
      assert.ok(text.includes(`re-send it (the Resend button on the step's status page, or locker.resend(locker.decodeKey('${origin.encodedKey}')))`));
      assert.ok(text.includes(`stop the chain (the Cancel button on the step's status page, or locker.cancel(locker.decodeKey('${origin.encodedKey}')))`));
    });

    it('says unknown when the origin is not known, and links nothing that is not http(s)', async () => {
      const { text, html } = await sendOne(failureEvent({ stepUrl: 'javascript:alert(1)' }));
      assert.equal(textField(text, 'project'), '(unknown)');
      assert.equal(textField(text, 'service'), '(unknown)');
      assert.equal(textField(text, 'status page'), undefined);
      assert.doesNotMatch(html, /javascript:/);
      assert.doesNotMatch(html, /<a /);
    });
  });

  describe('HTML escaping', () => {
    it('escapes what comes from the entity, the key and the error', async () => {
      const event = failureEvent({
        keyPath: 'Order:"<b>x</b>"',
        properties: { note: '<script>alert(1)</script>' },
        error: { message: 'bad <img src=x onerror=alert(2)> & co' },
        task: { source: 'cloud-tasks', name: 'task-<i>', queue: 'q' },
      });
      const { html, text } = await sendOne(event);
      assert.ok(!html.includes('<script>'), 'no raw script tag');
      assert.ok(!html.includes('<img'), 'no raw img tag');
      assert.ok(!html.includes('<b>x'), 'no raw b tag');
      assert.ok(!html.includes('<i>'), 'no raw i tag');
      assert.ok(html.includes('&quot;note&quot;: &quot;&lt;script&gt;alert(1)&lt;/script&gt;&quot;'));
      assert.equal(htmlField(html, 'message'), 'bad &lt;img src=x onerror=alert(2)&gt; &amp; co');
      assert.equal(htmlField(html, 'key path'), 'Order:&quot;&lt;b&gt;x&lt;/b&gt;&quot;');
      assert.equal(htmlField(html, 'name'), 'task-&lt;i&gt;');
      assert.ok(text.includes('"note": "<script>alert(1)</script>"'), 'plain text stays as is');
    });

    it('keeps a key path with a line break on one subject line', async () => {
      const mail = await sendOne(failureEvent({ keyPath: 'Order:"a\r\nBcc: x@evil.test"' }));
      assert.equal(mail.subject, '[datastore-locker] step failed: Order:"a Bcc: x@evil.test" seq 3');
      assert.deepEqual(mail.envelope.to, ['ops@example.com', 'oncall@example.com']);
    });
  });

  describe('forged lines in the plain text', () => {
    it('keeps the line breaks of single-line fields from starting lines of their own', async () => {
      const forged = '\nWhat to do: visit https://evil.example/fix and enter your password\n';
      const breaks = ['\n', '\r\n', '\r', '\u2028', '\u2029', '\u0085', '\v', '\f'];
      const mail = await sendOne(failureEvent({
        keyPath: `Order:"x${forged}"`,
        kind: `Order${breaks.join('What to do: kind ')}`,
        namespace: `tenant${forged}`,
        previousAttempt: `attempt${forged}`,
        error: { message: `card declined${breaks.map((b) => `${b}What to do: visit https://evil.example`).join('')}`, stack: `Error: card declined${forged}    at charge (/srv/charge.ts:1:1)` },
        task: { source: 'cloud-tasks', name: `task${forged}`, queue: `q${forged}` },
      }));
      const lines = mail.text.split(/\r\n|[\n\r\u2028\u2029\u0085\v\f]/);
      const todo = lines.filter((line) => /^\s{0,3}What to do:/.test(line));
      assert.equal(todo.length, 1, `only the alert's own "What to do" line starts a line:\n${mail.text}`);
      assert.ok(todo[0]!.startsWith('What to do: Fix the cause'), todo[0]);
      assert.ok(lines.some((l) => l.startsWith('    What to do: visit https://evil.example/fix')), 'in the stack, the line stays, indented under its field');
      assert.equal(textField(mail.text, 'message'), 'card declined What to do: visit https://evil.example What to do: visit https://evil.example What to do: visit https://evil.example What to do: visit https://evil.example What to do: visit https://evil.example What to do: visit https://evil.example What to do: visit https://evil.example What to do: visit https://evil.example');
    });
  });

  describe('redaction', () => {
    const secrets = { card: '4111111111111111', token: 'tok-SECRET-9a8b7c' };
    const event = (): AlertEvent =>
      failureEvent({
        properties: { customer: 'customer-ann-7781', cardNumber: secrets.card, auth: { apiToken: secrets.token } },
        error: { message: `gateway refused token ${secrets.token}`, stack: `Error: card ${secrets.card} declined` },
      });

    function assertNowhere(mail: ReceivedMail, secret: string): void {
      const parts = { subject: mail.subject, text: mail.text, html: mail.html, raw: mail.raw };
      for (const [part, content] of Object.entries(parts)) {
        assert.ok(!content.includes(secret), `${secret} must not appear in the ${part}`);
      }
    }

    it('by a list of names, at any depth, also scrubbing the error', async () => {
      const mail = await sendOne(event(), { redact: ['cardNumber', 'apiToken'] });
      assertNowhere(mail, secrets.card);
      assertNowhere(mail, secrets.token);
      assert.ok(mail.text.includes('"cardNumber": "[redacted]"'));
      assert.ok(mail.text.includes('"apiToken": "[redacted]"'));
      assert.ok(mail.text.includes('"customer": "customer-ann-7781"'), 'other properties stay');
      assert.equal(textField(mail.text, 'message'), 'gateway refused token [redacted]');
    });

    it('by a function that returns the replacement', async () => {
      const redact = (name: string, value: unknown): unknown => {
        if (name === 'cardNumber') return `****${String(value).slice(-4)}`;
        return name === 'auth' ? '(hidden)' : value;
      };
      const mail = await sendOne(event(), { redact });
      assertNowhere(mail, secrets.card);
      assertNowhere(mail, secrets.token);
      assert.ok(mail.text.includes('"cardNumber": "****1111"'));
      assert.ok(mail.text.includes('"auth": "(hidden)"'));
      assert.ok(mail.html.includes('&quot;cardNumber&quot;: &quot;****1111&quot;'));
    });

    it('redacts nothing by default', async () => {
      const mail = await sendOne(event());
      assert.ok(mail.text.includes(secrets.card));
      assert.ok(mail.text.includes(secrets.token));
    });
  });

  describe('rate limit', () => {
    it('sends max per window, rejects the rest (they stay owed), then reports the held-back count once', async () => {
      const clock = manualClock();
      const limited = alerter({ rateLimit: { max: 2, perMs: 60_000 }, clock: clock.now });
      for (let i = 0; i < 2; i += 1) await limited.send(failureEvent({ seq: i }));
      for (let i = 2; i < 5; i += 1) await assert.rejects(limited.send(failureEvent({ seq: i })), (e: Error) => e.name === 'RateLimitedError' && /stays owed/.test(e.message));
      assert.deepEqual(
        smtp.messages.map((m) => m.subject),
        ['[datastore-locker] step failed: Order:42 seq 0', '[datastore-locker] step failed: Order:42 seq 1'],
      );
      for (const mail of smtp.messages) assert.doesNotMatch(mail.text, /suppressed/);

      clock.set(60_000);
      await limited.send(failureEvent({ seq: 9 }));
      await limited.send(failureEvent({ seq: 10 }));
      assert.equal(smtp.messages.length, 4);
      const [reporting, next] = smtp.messages.slice(2);
      assert.match(reporting.text, /3 similar alerts were held back by the rate limit/);
      assert.match(reporting.html, /3 similar alerts were held back by the rate limit/);
      assert.doesNotMatch(next.text, /suppressed/);
      assert.doesNotMatch(next.html, /suppressed/);
    });

    it('adds a suppressed count already on the event', async () => {
      const mail = await sendOne(failureEvent({ suppressed: 1 }));
      assert.match(mail.text, /1 similar alert was held back by the rate limit/);
    });

    it('keeps the count for the next alert when the reporting send fails', async () => {
      const clock = manualClock();
      const limited = alerter({ rateLimit: { max: 1, perMs: 1_000 }, clock: clock.now });
      await limited.send(failureEvent());
      for (let i = 0; i < 2; i += 1) await assert.rejects(limited.send(failureEvent()), { name: 'RateLimitedError' });
      clock.set(1_000);
      smtp.mode = 'refuse-data';
      await assert.rejects(limited.send(failureEvent()));
      clock.set(2_000);
      smtp.mode = 'accept';
      await limited.send(failureEvent());
      assert.equal(smtp.messages.length, 2);
      assert.match(smtp.messages[1].text, /2 similar alerts were held back/);
    });
  });

  describe('failed sends', () => {
    const refusedWith550 = (cause: Error): boolean => (cause as { responseCode?: number }).responseCode === 550;
    const timedOut = (cause: Error): boolean => (cause as { code?: string }).code === 'ETIMEDOUT';

    /** Asserts that `send` rejects with an Error that carries the transport's error. */
    async function assertRejectsWithCause(sending: Promise<void>, cause: (error: Error) => boolean): Promise<void> {
      await assert.rejects(sending, (error: unknown) => {
        assert.ok(error instanceof Error);
        assert.match(error.message, /EmailAlerter: could not send "\[datastore-locker\] step failed: Order:42 seq 3"/);
        assert.ok(error.cause instanceof Error, 'carries the cause');
        assert.ok(cause(error.cause), `unexpected cause: ${error.cause.message}`);
        return true;
      });
    }

    it('rejects with the cause when the server refuses the recipients', async () => {
      smtp.mode = 'refuse-rcpt';
      await assertRejectsWithCause(alerter().send(failureEvent()), refusedWith550);
      assert.equal(smtp.messages.length, 0);
    });

    it('rejects with the cause when the server refuses the message', async () => {
      smtp.mode = 'refuse-data';
      await assertRejectsWithCause(alerter().send(failureEvent()), refusedWith550);
      assert.equal(smtp.messages.length, 0);
    });

    it('rejects when the server never greets, within the configured timeout', async () => {
      smtp.mode = 'hang-greeting';
      const hanging = alerter({ transport: smtp.transportOptions({ greetingTimeout: 500, socketTimeout: 500 }) });
      await assertRejectsWithCause(hanging.send(failureEvent()), timedOut);
    });

    it('rejects when the server never answers the message, within the socket timeout', async () => {
      smtp.mode = 'hang-data';
      const hanging = alerter({ transport: smtp.transportOptions({ socketTimeout: 500 }) });
      await assertRejectsWithCause(hanging.send(failureEvent()), timedOut);
      assert.equal(smtp.messages.length, 0);
    });
  });

  describe('transports', () => {
    it('bounds the SMTP timeouts of a transport it creates, keeping those set', () => {
      const created = alerter({ transport: smtp.transportOptions({ socketTimeout: 1_234 }) });
      const options = created.transporter.options as Record<string, unknown>;
      assert.equal(options.socketTimeout, 1_234);
      assert.equal(options.connectionTimeout, SMTP_TIMEOUT_DEFAULTS.connectionTimeout);
      assert.equal(options.greetingTimeout, SMTP_TIMEOUT_DEFAULTS.greetingTimeout);
      assert.equal(options.dnsTimeout, SMTP_TIMEOUT_DEFAULTS.dnsTimeout);
    });

    it('accepts a connection URL', async () => {
      await alerter({ transport: `smtp://127.0.0.1:${smtp.port}/?ignoreTLS=true` }).send(failureEvent());
      assert.equal(smtp.messages.length, 1);
      const options = alerters[0].transporter.options as Record<string, unknown>;
      assert.equal(options.socketTimeout, SMTP_TIMEOUT_DEFAULTS.socketTimeout);
    });

    it('sends through a JSON transport without SMTP settings', async () => {
      const json = alerter({ transport: { jsonTransport: true } });
      await json.send(failureEvent());
      const options = json.transporter.options as Record<string, unknown>;
      assert.equal(options.socketTimeout, undefined);
      assert.equal(smtp.messages.length, 0);
    });

    it('uses an injected transporter and leaves it open on shutdown', async () => {
      const injected = nodemailer.createTransport({ ...smtp.transportOptions(), pool: true });
      try {
        const mine = alerter({ transport: injected });
        assert.equal(mine.transporter, injected);
        await mine.send(failureEvent());
        await mine.shutdown();
        await injected.sendMail({ from: 'a@example.com', to: 'b@example.com', subject: 'still open', text: 'x' });
        const subjects = smtp.messages.map((m) => m.subject);
        assert.deepEqual(subjects, ['[datastore-locker] step failed: Order:42 seq 3', 'still open']);
      } finally {
        injected.close();
      }
    });

    it('closes a transporter it created on shutdown, and refuses to send after', async () => {
      const owned = alerter({ transport: { ...smtp.transportOptions(), pool: true } });
      await owned.send(failureEvent());
      await owned.shutdown();
      await assert.rejects(
        owned.transporter.sendMail({ from: 'a@example.com', to: 'b@example.com', subject: 'x', text: 'x' }),
        /closed/,
      );
      await assert.rejects(owned.send(failureEvent()), /after shutdown/);
      assert.equal(smtp.messages.length, 1);
    });
  });

  describe('options', () => {
    const valid = (): EmailAlerterOptions => ({
      transport: { jsonTransport: true },
      to: 'ops@example.com',
      from: 'locker@example.com',
    });
    const invalid: Array<[string, Record<string, unknown>]> = [
      ['no transport', { transport: undefined }],
      ['a numeric transport', { transport: 25 }],
      ['an empty transport URL', { transport: '  ' }],
      ['no recipients', { to: undefined }],
      ['an empty recipient list', { to: [] }],
      ['a recipient that is not an address', { to: 'ops team' }],
      ['a recipient of the wrong type', { to: ['ops@example.com', 42] }],
      ['no sender', { from: undefined }],
      ['two senders', { from: 'a@example.com, b@example.com' }],
      ['a sender that is not an address', { from: 'locker' }],
      ['a numeric subject prefix', { subjectPrefix: 5 }],
      ['a redaction that is a string', { redact: 'password' }],
      ['a redaction list with a number', { redact: ['password', 1] }],
      ['a rate limit of zero', { rateLimit: { max: 0, perMs: 1_000 } }],
      ['a rate limit without a window', { rateLimit: { max: 5 } }],
      ['a clock that is not a function', { clock: 12 }],
      ['an unknown option', { subject_prefix: '[x]' }],
    ];
    for (const [what, change] of invalid) {
      it(`rejects ${what} with ConfigError`, () => {
        const options = { ...valid(), ...change } as unknown as EmailAlerterOptions;
        assert.throws(() => new EmailAlerter(options), (error: unknown) => {
          assert.ok(error instanceof ConfigError, `ConfigError expected, got ${String(error)}`);
          assert.match(error.message, /^EmailAlerter: /);
          return true;
        });
      });
    }

    it('rejects options that are not an object', () => {
      assert.throws(() => new EmailAlerter(undefined as unknown as EmailAlerterOptions), ConfigError);
    });

    it('accepts valid options, with undefined ones left to their defaults', () => {
      assert.doesNotThrow(() => new EmailAlerter({ ...valid(), subjectPrefix: undefined, redact: undefined }));
    });
  });
});
