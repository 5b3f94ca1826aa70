// Any JSON payload reaches the handler, on Express 4 and 5, whatever body parser runs in front of
// handle() as the README says to mount it: none, express.json() non-strict, express.json() in
// strict mode followed by taskBodyRecovery(), express.text(). On Express 4 a body of another content
// type still reaches the handler; form-encoded bodies (the Go library's tasks with parameters) arrive
// as an object of their fields.
import { describe, it } from 'node:test';
import assert from 'node:assert/strict';
import express5 from 'express';
import express4 from 'express4';
import type { Express, RequestHandler, ErrorRequestHandler } from 'express';
import request from 'supertest';
import { keys, testAuth, TEST_TOKEN, MemoryLogger } from '../support/task-app';
import { Locker } from '../../src/locker';
import { MemoryStore } from '../../src/store/memory/store';
import { taskBodyRecovery } from '../../src/http/payload';
import { StepState, type Json } from '../../src/types';

type Factory = () => Express;
type Mount = { name: string; front: (e: typeof express5) => Array<RequestHandler | ErrorRequestHandler> };

const EXPRESSES: Array<[string, Factory, typeof express5]> = [
  ['Express 5', express5, express5],
  ['Express 4', express4 as unknown as Factory, express4 as unknown as typeof express5],
];
const MOUNTS: Mount[] = [
  { name: 'no body parser', front: () => [] },
  { name: 'express.json({ strict: false })', front: (e) => [e.json({ strict: false })] },
  { name: 'express.json() then taskBodyRecovery()', front: (e) => [e.json(), taskBodyRecovery()] },
  { name: 'express.text({ type: "*/*" })', front: (e) => [e.text({ type: '*/*' })] },
];
const PAYLOADS: Json[] = [42, 'x', null, true, [1, 'two'], { a: 1, nested: { b: [2] } }, 0, ''];

let n = 0;

/** An app with `front` mounted app-wide, then one task route that records the payloads it got. */
async function app(factory: Factory, front: Array<RequestHandler | ErrorRequestHandler>) {
  const store = new MemoryStore();
  const logger = new MemoryLogger();
  const locker = new Locker({ store, authenticate: testAuth, logger });
  const got: unknown[] = [];
  const a = factory();
  for (const m of front) a.use(m);
  a.post('/task', locker.handle((ctx) => { got.push(ctx.payload); }, (p) => p));
  const send = async (body: string | undefined, contentType?: string) => {
    const key = keys.key(['Thing', `p${++n}`]);
    await store.transaction(async (tx) => {
      tx.put(key, { lock_ts: new Date(), lock_req: '', lock_seq: 1, lock_try: 0, lock_state: StepState.scheduled }, []);
    });
    let req = request(a).post('/task').set('x-test-auth', TEST_TOKEN).set('x-lock-key', locker.encodeKey(key)).set('x-lock-seq', '1');
    if (contentType) req = req.set('content-type', contentType);
    return body === undefined ? req : req.send(body);
  };
  return { got, send, logger };
}

for (const [version, factory, e] of EXPRESSES) {
  describe(`payloads on ${version}`, () => {
    for (const mount of MOUNTS) {
      it(`${mount.name}: every JSON value reaches the handler as sent`, async () => {
        const t = await app(factory, mount.front(e));
        for (const payload of PAYLOADS) {
          const res = await t.send(JSON.stringify(payload), 'application/json');
          assert.equal(res.status, 200, `${JSON.stringify(payload)}: ${res.text}`);
        }
        assert.deepEqual(t.got, PAYLOADS);
      });
      it(`${mount.name}: an empty body is undefined; a body that is not JSON is a 400, logged`, async () => {
        const t = await app(factory, mount.front(e));
        assert.equal((await t.send(undefined)).status, 200);
        assert.equal((await t.send('', 'application/json')).status, 200);
        assert.deepEqual(t.got, [undefined, undefined]);
        const bad = await t.send('{not json', 'application/json');
        assert.equal(bad.status, 400);
        assert.equal(t.got.length, 2);
      });
      it(`${mount.name}: a JSON body under another content type reaches the handler`, async () => {
        const t = await app(factory, mount.front(e));
        assert.equal((await t.send('{"a":1}', 'text/plain')).status, 200);
        assert.equal((await t.send('7', 'application/octet-stream')).status, 200);
        assert.deepEqual(t.got, [{ a: 1 }, 7]);
      });
      it(`${mount.name}: a form-encoded body (Go's tasks with parameters) arrives as its fields`, async () => {
        const t = await app(factory, mount.front(e));
        assert.equal((await t.send('id=42&tag=a&tag=b&note=hello+world', 'application/x-www-form-urlencoded')).status, 200);
        assert.equal((await t.send('', 'application/x-www-form-urlencoded')).status, 200, "Go's tasks without parameters: empty");
        assert.deepEqual(t.got, [{ id: '42', tag: ['a', 'b'], note: 'hello world' }, undefined]);
      });
    }
    it('express.urlencoded() in front: a form body arrives as what it parsed', async () => {
      const t = await app(factory, [e.urlencoded({ extended: false })]);
      assert.equal((await t.send('id=42&tag=a&tag=b', 'application/x-www-form-urlencoded')).status, 200);
      assert.deepEqual(t.got.map((g) => ({ ...(g as object) })), [{ id: '42', tag: ['a', 'b'] }]);
    });
    it('taskBodyRecovery() passes on errors of requests that are not tasks', async () => {
      const a = factory();
      a.use(e.json());
      a.use(taskBodyRecovery());
      a.post('/other', (_req, res) => { res.send('ok'); });
      a.use(((error, _req, res, _next) => { res.status(418).send(String((error as Error).message)); }) as ErrorRequestHandler);
      const res = await request(a).post('/other').set('content-type', 'application/json').send('42');
      assert.equal(res.status, 418);
    });
  });
}
