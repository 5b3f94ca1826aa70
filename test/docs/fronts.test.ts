/**
 * The models of Google's fronts in test/support, checked against what the platform docs say they
 * do, with a plain loopback server standing for the app: the Cloud Run front's 401/403, its
 * signature stripping and its cut at --timeout; the Cloud Tasks dispatcher's backoff on 429 and
 * 5xx that ignores Retry-After, and its cut at the dispatch deadline.
 */
import { describe, it, before, after } from 'node:test';
import assert from 'node:assert/strict';
import { createServer, type IncomingMessage, type Server, type ServerResponse } from 'node:http';
import type { AddressInfo } from 'node:net';
import { generateSigningKey, idTokenClaims, startOidcIssuer, type OidcIssuer } from '../support/oidc-issuer';
import { startCloudRunFront, STRIPPED, type CloudRunFront } from '../support/cloud-run-front';
import { connectClient, startCloudTasksServer, type CloudTasksServer } from '../support/cloud-tasks-server';
import { backoffMs, startDispatcher } from '../support/cloud-tasks-dispatcher';

/** A loopback app whose answers the test decides, request by request. */
async function stubApp(answer: (req: IncomingMessage, res: ServerResponse) => void): Promise<{ server: Server; url: string; seen: IncomingMessage[] }> {
  const seen: IncomingMessage[] = [];
  const server = createServer((req, res) => { seen.push(req); answer(req, res); });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  return { server, url: `http://127.0.0.1:${(server.address() as AddressInfo).port}`, seen };
}

const close = (server: Server) => new Promise<void>((resolve) => { server.close(() => resolve()); server.closeAllConnections(); });

describe('the modelled Cloud Run front (--no-allow-unauthenticated)', () => {
  let issuer: OidcIssuer;
  let app: Awaited<ReturnType<typeof stubApp>>;
  let front: CloudRunFront;
  const hanging: ServerResponse[] = [];
  before(async () => {
    issuer = await startOidcIssuer();
    app = await stubApp((req, res) => {
      if (req.url === '/slow') hanging.push(res);
      else res.end('ok');
    });
    front = await startCloudRunFront({ upstream: app.url, auth: 'iam', issuer, invokers: ['tasks@p.iam.gserviceaccount.com'], timeoutMs: 300 });
  });
  after(async () => {
    for (const res of hanging) res.destroy();
    await Promise.all([front.close(), close(app.server), issuer.close()]);
  });

  it('answers 401 and 403 itself, and hands the token on with its signature removed', async () => {
    const token = (claims = {}, key = issuer.key) => issuer.sign(idTokenClaims({ aud: front.url, email: 'tasks@p.iam.gserviceaccount.com', ...claims }), { key });
    const get = (authorization?: string) => fetch(`${front.url}/x`, { headers: authorization ? { authorization } : {} }).then((r) => r.status);
    assert.equal(await get(), 401);
    assert.equal(await get(`Bearer ${token({}, generateSigningKey(issuer.key.kid))}`), 401, 'another key');
    assert.equal(await get(`Bearer ${token({ aud: 'https://elsewhere' })}`), 401, 'another audience');
    assert.equal(await get(`Bearer ${token({ exp: Math.floor(Date.now() / 1000) - 10 })}`), 401, 'expired');
    assert.equal(await get(`Bearer ${token({ email: 'eve@example.com' })}`), 403, 'not an invoker');
    assert.equal(app.seen.length, 0, 'none reached the app');
    const good = token();
    assert.equal(await get(`Bearer ${good}`), 200);
    assert.equal(app.seen[0]!.headers.authorization, `Bearer ${good.split('.').slice(0, 2).join('.')}.${STRIPPED}`);
    assert.deepEqual(front.log.map((e) => e.by), ['front', 'front', 'front', 'front', 'front', 'app']);
  });

  it('cuts a request at --timeout with 504', async () => {
    const res = await fetch(`${front.url}/slow`, { headers: { authorization: `Bearer ${issuer.sign(idTokenClaims({ aud: front.url, email: 'tasks@p.iam.gserviceaccount.com' }))}` } });
    assert.equal(res.status, 504);
    assert.deepEqual(front.log.at(-1), { method: 'GET', path: '/slow', status: 504, by: 'front' });
  });
});

describe('the modelled Cloud Tasks dispatcher', () => {
  let tasks: CloudTasksServer;
  let app: Awaited<ReturnType<typeof stubApp>>;
  const plan: Array<(res: ServerResponse) => void> = [];
  const hanging: ServerResponse[] = [];
  before(async () => {
    tasks = await startCloudTasksServer();
    app = await stubApp((_req, res) => (plan.shift() ?? ((r) => r.end('ok')))(res));
  });
  after(async () => {
    for (const res of hanging) res.destroy();
    await Promise.all([tasks.close(), close(app.server)]);
  });

  it('computes Cloud Tasks’ backoff: doubling from minBackoff, maxDoublings times, then linear, capped at maxBackoff', () => {
    const retry = { minBackoffMs: 100, maxBackoffMs: 1000, maxDoublings: 2, maxAttempts: -1 };
    assert.deepEqual([1, 2, 3, 4, 5, 6, 7].map((n) => backoffMs(retry, n)), [100, 200, 400, 800, 1000, 1000, 1000]);
  });

  it('backs off on 429 and 5xx alike, ignoring Retry-After, and cuts an attempt at the dispatch deadline', async () => {
    plan.push((res) => res.writeHead(429, { 'retry-after': '3600' }).end());
    plan.push((res) => res.writeHead(503, { 'retry-after': '3600' }).end());
    plan.push((res) => hanging.push(res));
    const client = connectClient(tasks.port);
    await client.createTask({
      parent: client.queuePath('p', 'l', 'q'),
      task: { name: client.taskPath('p', 'l', 'q', 't1'), httpRequest: { url: `${app.url}/step`, httpMethod: 'POST', body: Buffer.from('{}') }, dispatchDeadline: { seconds: 1 } },
    });
    await client.close();
    const dispatcher = startDispatcher({ server: tasks, queue: 'q', retry: { minBackoffMs: 50, maxBackoffMs: 1000, maxDoublings: 5, maxAttempts: -1 } });
    while (!dispatcher.attempts.some((a) => a.status === 200)) await new Promise((resolve) => setTimeout(resolve, 20));
    await dispatcher.stop();
    assert.deepEqual(dispatcher.attempts.map((a) => [a.status, a.retryAfter, a.backoffMs]), [
      [429, '3600', 50], [503, '3600', 100], [0, undefined, 200], [200, undefined, undefined],
    ]);
    assert.deepEqual(app.seen.map((req) => req.headers['x-cloudtasks-taskretrycount']), ['0', '1', '2', '3']);
  });
});
