/**
 * Oversized and deeply nested bodies, as the README states them: `handle()` answers 400 for a body
 * over `maxBodyBytes` (100 KiB by default, Cloud Tasks' largest task) and leaves the store alone,
 * stops reading it once over the limit (or at once, when its Content-Length says so) and closes the
 * connection; a body nesting deeper than 64 levels is answered 400 before it is parsed; with
 * `express.json()` in front, its own limit answers 413 before the route runs.
 */
import { describe, it } from 'node:test';
import assert from 'node:assert/strict';
import express from 'express';
import { connect } from 'node:net';
import { request as httpRequest, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import request from 'supertest';
import { keys, testAuth, TEST_TOKEN, MemoryLogger } from '../support/task-app';
import { Locker } from '../../src/locker';
import { MemoryStore } from '../../src/store/memory/store';
import { StepState } from '../../src/types';
import { ERRORS_REFERENCE_URL } from '../../src/errors/errors';

async function oversized(front: express.RequestHandler[], body: string = JSON.stringify({ text: 'x'.repeat(2000) }), maxBodyBytes: number | null = 1000) {
  const store = new MemoryStore();
  const logger = new MemoryLogger();
  const locker = new Locker({ store, authenticate: testAuth, logger });
  let runs = 0;
  const app = express();
  for (const m of front) app.use(m);
  app.post('/task', locker.handle(() => void (runs += 1), (p) => p, maxBodyBytes === null ? {} : { maxBodyBytes }));
  const key = keys.key(['Thing', `big-${front.length}`]);
  const stored = { lock_ts: new Date(), lock_req: '', lock_seq: 1, lock_try: 0, lock_state: StepState.scheduled };
  await store.transaction(async (tx) => tx.put(key, stored, []));
  const before = await store.read(key);
  const res = await request(app).post('/task').set('x-test-auth', TEST_TOKEN).set('x-lock-key', locker.encodeKey(key)).set('x-lock-seq', '1')
    .set('content-type', 'application/json').send(body);
  const after = await store.read(key);
  return { res, runs, logger, unchanged: JSON.stringify(after?.properties) === JSON.stringify(before?.properties) };
}

/** An app whose task route records how many bytes its connection had read when it answered. */
async function listening(): Promise<{ server: Server; port: number; readAtAnswer: Promise<number>; key: string }> {
  const store = new MemoryStore();
  const locker = new Locker({ store, authenticate: testAuth, logger: new MemoryLogger() });
  const app = express();
  let answered!: (bytes: number) => void;
  const readAtAnswer = new Promise<number>((resolve) => { answered = resolve; });
  app.post('/task', (req, res, next) => { res.on('finish', () => answered(req.socket.bytesRead)); next(); }, locker.handle(() => undefined, (p) => p));
  const key = keys.key(['Thing', 'streamed']);
  await store.transaction(async (tx) => tx.put(key, { lock_ts: new Date(), lock_req: '', lock_seq: 1, lock_try: 0, lock_state: StepState.scheduled }, []));
  const server = app.listen(0, '127.0.0.1');
  await new Promise<void>((resolve) => server.once('listening', () => resolve()));
  return { server, port: (server.address() as AddressInfo).port, readAtAnswer, key: locker.encodeKey(key) };
}

const MB = 1024 * 1024;

describe('oversized bodies', () => {
  it('handle() answers 400 for a body over maxBodyBytes, without running the handler or writing', async () => {
    const { res, runs, unchanged } = await oversized([]);
    assert.equal(res.status, 400);
    assert.equal(res.text, `the body is larger than 1000 bytes (${ERRORS_REFERENCE_URL}#badrequesterror)`);
    assert.equal(runs, 0);
    assert.ok(unchanged);
  });

  it('takes at most 100 KiB by default: what Cloud Tasks sends at most', async () => {
    const fits = await oversized([], JSON.stringify({ text: 'x'.repeat(100 * 1024 - 20) }), null);
    assert.equal(fits.res.status, 200, fits.res.text);
    assert.equal(fits.runs, 1);
    const { res, runs, unchanged, logger } = await oversized([], JSON.stringify({ text: 'x'.repeat(150 * 1024) }), null);
    assert.equal(res.status, 400);
    assert.match(res.text, /^the body is larger than 102400 bytes/);
    assert.equal(runs, 0);
    assert.ok(unchanged);
    assert.ok(logger.lines.some((l) => l.message === 'task request rejected' && String(l.fields?.reason).includes('larger than 102400')), 'a log line says why');
  });

  it('stops reading a body once it is over the limit, and closes the connection', async () => {
    const { server, port, readAtAnswer, key } = await listening();
    try {
      const req = httpRequest({ host: '127.0.0.1', port, method: 'POST', path: '/task', headers: {
        'x-test-auth': TEST_TOKEN, 'x-lock-key': key, 'x-lock-seq': '1', 'content-type': 'application/json', 'transfer-encoding': 'chunked',
      } });
      const answer = new Promise<{ status: number | undefined; connection: string | undefined }>((resolve) => {
        req.on('response', (res) => resolve({ status: res.statusCode, connection: res.headers.connection }));
        req.on('error', () => resolve({ status: undefined, connection: undefined })); // the server may close while we still write
      });
      req.on('error', () => undefined);
      const chunk = Buffer.alloc(64 * 1024, 0x20);
      for (let sent = 0; sent < 8 * MB; sent += chunk.length) req.write(chunk);
      req.end();
      const read = await readAtAnswer;
      assert.ok(read < 2 * MB, `answered after reading ${read} bytes of an 8 MiB body: the rest was not read`);
      const { status, connection } = await answer;
      if (status !== undefined) {
        assert.equal(status, 400);
        assert.equal(connection, 'close');
      }
    } finally {
      server.close();
      server.closeAllConnections();
    }
  });

  it('answers a body whose Content-Length is over the limit before a byte of it is sent', async () => {
    const { server, port, key } = await listening();
    try {
      const socket = connect(port, '127.0.0.1');
      let text = '';
      socket.on('data', (data: Buffer) => { text += data.toString('latin1'); });
      const closed = new Promise<void>((resolve) => socket.on('close', () => resolve()));
      // The headers only: the body never comes. The old reader waited for it (this test then hung).
      socket.write(`POST /task HTTP/1.1\r\nHost: 127.0.0.1\r\nx-test-auth: ${TEST_TOKEN}\r\nx-lock-key: ${key}\r\nx-lock-seq: 1\r\ncontent-type: application/json\r\ncontent-length: ${50 * MB}\r\n\r\n`);
      await closed;
      assert.match(text, /^HTTP\/1\.1 400 /);
      assert.match(text, /\r\nConnection: close\r\n/i);
      assert.match(text, /the body is larger than 102400 bytes/);
    } finally {
      server.close();
      server.closeAllConnections();
    }
  });

  it('answers 400 for a body nesting deeper than 64 levels, before parsing it, also behind express.json()', async () => {
    const deep = (levels: number) => `${'['.repeat(levels)}${']'.repeat(levels)}`;
    for (const front of [[], [express.json({ limit: '1mb' })]]) {
      const { res, runs, unchanged, logger } = await oversized(front, deep(65), null);
      assert.equal(res.status, 400, `${front.length} parsers in front`);
      assert.match(res.text, /^the body nests arrays and objects deeper than 64 levels/);
      assert.equal(runs, 0);
      assert.ok(unchanged);
      assert.ok(logger.lines.some((l) => l.message === 'task request rejected' && String(l.fields?.reason).includes('deeper than 64')));
      const fits = await oversized(front, deep(64), null);
      assert.equal(fits.res.status, 200, 'as deep as allowed: runs');
      assert.equal(fits.runs, 1);
    }
    // Brackets inside strings do not count.
    const { res } = await oversized([], JSON.stringify({ text: '['.repeat(500), quoted: '\\"[[[[' }), null);
    assert.equal(res.status, 200);
  });

  it("express.json() in front answers 413 by its own limit before the route runs", async () => {
    const { res, runs, unchanged } = await oversized([express.json({ limit: 1000 })]);
    assert.equal(res.status, 413);
    assert.equal(runs, 0);
    assert.ok(unchanged);
  });
});
