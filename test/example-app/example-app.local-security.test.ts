// The example app's local mode, run as a child process: it listens on loopback unless HOST says
// otherwise, answers only requests for a loopback host (DNS rebinding), keeps its same-site checks
// on the routes that start chains and sweep, and is closed, not open, when it listens wider
// without being on App Engine or Cloud Run (GKE, a VM, Docker).
import { describe, it, after } from 'node:test';
import assert from 'node:assert/strict';
import { readFileSync } from 'node:fs';
import { request as httpRequest, type OutgoingHttpHeaders } from 'node:http';
import { exampleEnv, startExample, TSX_ENTRY, type ExampleProcess } from '../support/example-process';

interface Reply { status: number; text: string }

/** One request to 127.0.0.1:port, with the headers given (Host included: fetch would not send it). */
function call(port: number, method: string, path: string, headers: OutgoingHttpHeaders = {}): Promise<Reply> {
  return new Promise((resolve, reject) => {
    const req = httpRequest({ host: '127.0.0.1', port, method, path, headers: { host: `127.0.0.1:${port}`, ...headers }, agent: false }, (res) => {
      let text = '';
      res.setEncoding('utf8');
      res.on('data', (chunk: string) => { text += chunk; });
      res.on('end', () => resolve({ status: res.statusCode ?? 0, text }));
    });
    req.on('error', reject);
    req.end();
  });
}

/** The local addresses (hex, as /proc/net/tcp{,6} lists them) of the sockets listening on `port`. */
function listeningAddresses(port: number): string[] {
  const hexPort = port.toString(16).toUpperCase().padStart(4, '0');
  return ['/proc/net/tcp', '/proc/net/tcp6'].flatMap((file) => readFileSync(file, 'utf8').split('\n').slice(1)
    .map((line) => line.trim().split(/\s+/))
    .filter((f) => f[3] === '0A' && f[1]?.endsWith(`:${hexPort}`))
    .map((f) => f[1]!.split(':')[0]!));
}

const portOf = (app: ExampleProcess) => Number(new URL(app.url).port);

describe('example app, local mode: loopback, Host checked, same-site checks kept', () => {
  const started: ExampleProcess[] = [];
  after(async () => { for (const app of started) await app.stop(); });

  it('listens on 127.0.0.1 when HOST is not set', async () => {
    const env = exampleEnv({ EXAMPLE_AUTOSTART: '0' });
    delete env.HOST;
    const app = await startExample({}, TSX_ENTRY, env);
    started.push(app);
    const port = portOf(app);
    assert.deepEqual(listeningAddresses(port), ['0100007F'], 'one listening socket, on 127.0.0.1 only');
  });

  it('refuses a start or a sweep from another site, and a request for another host', async () => {
    const app = await startExample({ EXAMPLE_AUTOSTART: '0' });
    started.push(app);
    const port = portOf(app);
    const evil = { origin: 'https://evil.example', 'sec-fetch-site': 'cross-site' };
    for (const path of ['/start/counter', '/start/order', '/start/counters?count=1000', '/local/sweep']) {
      assert.equal((await call(port, 'POST', path, evil)).status, 403, `${path} from another site`);
      assert.equal((await call(port, 'POST', path, { origin: 'https://evil.example' })).status, 403, `${path} with a foreign Origin`);
      assert.equal((await call(port, 'POST', path, { 'sec-fetch-site': 'cross-site' })).status, 403, `${path} cross-site`);
    }
    const status = JSON.parse((await call(port, 'GET', '/status.json')).text) as { chains: unknown[] };
    assert.equal(status.chains.length, 0, 'nothing was started');
    for (const path of ['/status.json', '/', '/start/counter']) {
      const rebound = await call(port, path === '/start/counter' ? 'POST' : 'GET', path, { host: `evil.example:${port}` });
      assert.equal(rebound.status, 421, `${path} for a foreign Host`);
    }
    // Its own page still works: same-origin POSTs, and a loopback host by name.
    const own = await call(port, 'POST', '/start/counter', { origin: `http://127.0.0.1:${port}`, 'sec-fetch-site': 'same-origin' });
    assert.equal(own.status, 303);
    assert.equal((await call(port, 'GET', '/status.json', { host: `localhost:${port}` })).status, 200);
  });

  it('is closed, not open, when it listens wider without being on App Engine or Cloud Run', async () => {
    const app = await startExample({ EXAMPLE_AUTOSTART: '0', HOST: '0.0.0.0' });
    started.push(app);
    const port = portOf(app);
    assert.equal((await call(port, 'GET', '/')).status, 403);
    assert.equal((await call(port, 'GET', '/status.json')).status, 403);
    assert.equal((await call(port, 'POST', '/start/counter', { 'sec-fetch-site': 'same-origin' })).status, 403);
  });
});
