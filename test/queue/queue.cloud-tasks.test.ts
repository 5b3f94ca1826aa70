/**
 * CloudTasksQueue with the real @google-cloud/tasks client against a CreateTask server on loopback
 * built from the package's own protos: what is sent, and how each answer is handled.
 */
process.env.METADATA_SERVER_DETECTION = 'none';

import { describe, it, before, after, beforeEach } from 'node:test';
import assert from 'node:assert/strict';
import { status } from '@grpc/grpc-js';
import type { CloudTasksClient } from '@google-cloud/tasks';
import { CloudTasksQueue, type CloudTasksQueueOptions } from '../../src/queue/cloud-tasks';
import { ConfigError, QueueError } from '../../src/errors/errors';
import type { TaskRequest } from '../../src/types';
import { connectClient, startCloudTasksServer, type CloudTasksServer } from '../support/cloud-tasks-server';

const QUEUE_PATH = 'projects/my-project/locations/europe-west1/queues/locker';
const SA = 'tasks@my-project.iam.gserviceaccount.com';

function task(overrides: Partial<TaskRequest> = {}): TaskRequest {
  return {
    name: 'a1b2c3-step_7',
    path: '/process',
    headers: { 'X-Lock-Key': 'ahBzfm15LXByb2plY3RyCwsSBU9yZGVyGCoM', 'X-Lock-Seq': '7' },
    body: '{"note":"héllo","n":1}',
    ...overrides,
  };
}

describe('CloudTasksQueue', () => {
  let server: CloudTasksServer;
  let client: CloudTasksClient;

  /** A queue on the test client; options override the HTTP-target defaults. */
  function queue(options: Partial<CloudTasksQueueOptions> = {}): CloudTasksQueue {
    return new CloudTasksQueue({
      client,
      project: 'my-project',
      location: 'europe-west1',
      queue: 'locker',
      target: { type: 'http', url: 'https://app.example.com' },
      callTimeoutMs: 2_000,
      ...options,
    });
  }

  /** The only call the server received. */
  function onlyCall() {
    assert.equal(server.calls.length, 1);
    return server.calls[0];
  }

  before(async () => {
    server = await startCloudTasksServer();
    client = connectClient(server.port);
  });
  after(async () => {
    await client.close();
    await server.close();
  });
  beforeEach(() => server.reset());

  describe('with an HTTP target', () => {
    it('sends the named task to the queue: URL, POST, headers, body', async () => {
      await queue().enqueue(task());
      const call = onlyCall();
      assert.equal(call.parent, QUEUE_PATH);
      assert.equal(call.metadata['x-goog-request-params'], `parent=${encodeURIComponent(QUEUE_PATH)}`);
      assert.equal(call.metadata.authorization, undefined, 'no credentials are sent');
      assert.equal(call.task?.name, `${QUEUE_PATH}/tasks/a1b2c3-step_7`);
      assert.equal(call.task?.appEngineHttpRequest, undefined);
      const http = call.task?.httpRequest;
      assert.equal(http?.url, 'https://app.example.com/process');
      assert.equal(http?.httpMethod, 'POST');
      assert.deepEqual(http?.headers, {
        'X-Lock-Key': 'ahBzfm15LXByb2plY3RyCwsSBU9yZGVyGCoM',
        'X-Lock-Seq': '7',
        'Content-Type': 'application/json',
      });
      assert.deepEqual(http?.body, Buffer.from('{"note":"héllo","n":1}', 'utf8'));
      assert.equal(http?.oidcToken, undefined);
      assert.equal(call.task?.scheduleTime, undefined);
      assert.equal(call.task?.dispatchDeadline, undefined);
    });

    it('sends the schedule time as a Timestamp', async () => {
      await queue().enqueue(task({ scheduleTime: new Date(Date.UTC(2030, 0, 2, 3, 4, 5, 678)) }));
      assert.deepEqual(onlyCall().task?.scheduleTime, { seconds: Date.UTC(2030, 0, 2, 3, 4, 5) / 1000, nanos: 678_000_000 });
    });

    it('sends the configured dispatch deadline as a Duration', async () => {
      await queue({ dispatchDeadlineMs: 90_250 }).enqueue(task());
      assert.deepEqual(onlyCall().task?.dispatchDeadline, { seconds: 90, nanos: 250_000_000 });
    });

    it('asks for an OIDC token whose audience defaults to the base URL', async () => {
      await queue({ target: { type: 'http', url: 'https://app.example.com', oidc: { serviceAccountEmail: SA } } }).enqueue(task());
      assert.deepEqual(onlyCall().task?.httpRequest?.oidcToken, { serviceAccountEmail: SA, audience: 'https://app.example.com' });
    });

    it('asks for an OIDC token with the configured audience', async () => {
      const oidc = { serviceAccountEmail: SA, audience: 'https://audience.example.com/tasks' };
      await queue({ target: { type: 'http', url: 'https://app.example.com', oidc } }).enqueue(task());
      assert.deepEqual(onlyCall().task?.httpRequest?.oidcToken, oidc);
    });

    it('appends the path to a base URL with a path or a trailing slash', async () => {
      await queue({ target: { type: 'http', url: 'https://app.example.com/api/' } }).enqueue(task({ path: '/step/2' }));
      assert.equal(onlyCall().task?.httpRequest?.url, 'https://app.example.com/api/step/2');
    });

    it("gives the base URL's path as its basePath, which handle() takes tasks under", () => {
      assert.equal(queue({ target: { type: 'http', url: 'https://app.example.com/api/' } }).basePath, '/api');
      assert.equal(queue({ target: { type: 'http', url: 'https://app.example.com/a/b' } }).basePath, '/a/b');
      assert.equal(queue().basePath, '');
      assert.equal(queue({ target: { type: 'appengine' } }).basePath, '', 'an App Engine target has none: the path is the relative URI');
    });

    it("replaces a task's own Content-Type with application/json", async () => {
      await queue().enqueue(task({ headers: { 'X-Lock-Seq': '1', 'content-type': 'text/plain' } }));
      assert.deepEqual(onlyCall().task?.httpRequest?.headers, { 'X-Lock-Seq': '1', 'Content-Type': 'application/json' });
    });
  });

  describe('with an App Engine target', () => {
    it('sends the path as relativeUri, with routing, headers and body', async () => {
      const target = { type: 'appengine', service: 'worker', version: 'v2', instance: 'i1' } as const;
      await queue({ target, dispatchDeadlineMs: 3_600_000 }).enqueue(task({ scheduleTime: new Date(1_900_000_000_500) }));
      const call = onlyCall();
      assert.equal(call.task?.name, `${QUEUE_PATH}/tasks/a1b2c3-step_7`);
      assert.equal(call.task?.httpRequest, undefined);
      const request = call.task?.appEngineHttpRequest;
      assert.equal(request?.httpMethod, 'POST');
      assert.equal(request?.relativeUri, '/process');
      assert.deepEqual(request?.appEngineRouting, { service: 'worker', version: 'v2', instance: 'i1' });
      assert.deepEqual(request?.headers, {
        'X-Lock-Key': 'ahBzfm15LXByb2plY3RyCwsSBU9yZGVyGCoM',
        'X-Lock-Seq': '7',
        'Content-Type': 'application/json',
      });
      assert.deepEqual(request?.body, Buffer.from('{"note":"héllo","n":1}', 'utf8'));
      assert.deepEqual(call.task?.scheduleTime, { seconds: 1_900_000_000, nanos: 500_000_000 });
      assert.deepEqual(call.task?.dispatchDeadline, { seconds: 3600, nanos: 0 });
    });

    it('sends only the routing fields that are configured', async () => {
      await queue({ target: { type: 'appengine', service: 'worker' } }).enqueue(task());
      assert.deepEqual(onlyCall().task?.appEngineHttpRequest?.appEngineRouting, { service: 'worker' });
    });
  });

  describe('answers', () => {
    it('resolves on ALREADY_EXISTS: the task was created before', async () => {
      server.failNext(status.ALREADY_EXISTS);
      await queue().enqueue(task());
      assert.equal(server.calls.length, 1);
    });

    it('retries UNAVAILABLE and resolves when the service comes back', async () => {
      server.failNext(status.UNAVAILABLE, 2);
      await queue({ createAttempts: 3 }).enqueue(task());
      assert.equal(server.calls.length, 3);
      assert.ok(server.calls.every((call) => call.task?.name === `${QUEUE_PATH}/tasks/a1b2c3-step_7`));
    });

    it('resolves when a retry meets ALREADY_EXISTS', async () => {
      server.failNext(status.UNAVAILABLE);
      server.failNext(status.ALREADY_EXISTS);
      await queue().enqueue(task());
      assert.equal(server.calls.length, 2);
    });

    it('rejects with QueueError once UNAVAILABLE outlasts createAttempts', async () => {
      server.failNext(status.UNAVAILABLE, 10);
      await assert.rejects(queue({ createAttempts: 3 }).enqueue(task()), (err: unknown) => {
        assert.ok(err instanceof QueueError);
        assert.match(err.message, /a1b2c3-step_7/);
        assert.match(err.message, /UNAVAILABLE/);
        assert.ok(err.cause instanceof Error);
        return true;
      });
      assert.equal(server.calls.length, 3);
    });

    it('retries a call that timed out', async () => {
      server.hangNext(1);
      await queue({ callTimeoutMs: 300, createAttempts: 2 }).enqueue(task());
      assert.equal(server.calls.length, 2);
    });

    it('rejects with QueueError when every call times out', async () => {
      server.hangNext(2);
      await assert.rejects(queue({ callTimeoutMs: 300, createAttempts: 2 }).enqueue(task()), (err: unknown) => {
        assert.ok(err instanceof QueueError);
        assert.match(err.message, /a1b2c3-step_7/);
        assert.match(err.message, /DEADLINE_EXCEEDED/);
        return true;
      });
      assert.equal(server.calls.length, 2);
    });

    it('rejects PERMISSION_DENIED with QueueError carrying the cause, without retrying', async () => {
      server.failNext(status.PERMISSION_DENIED, 1, 'cloudtasks.tasks.create denied');
      await assert.rejects(queue().enqueue(task()), (err: unknown) => {
        assert.ok(err instanceof QueueError);
        assert.equal(err.code, 'QUEUE');
        assert.match(err.message, /"a1b2c3-step_7"/);
        assert.match(err.message, /PERMISSION_DENIED/);
        assert.match(err.message, /cloudtasks\.tasks\.create denied/);
        assert.equal((err.cause as { code?: unknown }).code, status.PERMISSION_DENIED);
        return true;
      });
      assert.equal(server.calls.length, 1);
    });

    it('does not retry INVALID_ARGUMENT', async () => {
      server.failNext(status.INVALID_ARGUMENT, 5);
      await assert.rejects(queue().enqueue(task()), QueueError);
      assert.equal(server.calls.length, 1);
    });
  });

  describe('task validation', () => {
    for (const name of ['', 'a/b', 'a.b', 'a b', 'tâche', 'x'.repeat(501)]) {
      it(`rejects the task name ${JSON.stringify(name.length > 20 ? `${name.slice(0, 5)}… (${name.length})` : name)} without calling`, async () => {
        await assert.rejects(queue().enqueue(task({ name })), (err: unknown) => {
          assert.ok(err instanceof QueueError);
          assert.match(err.message, /task name/);
          return true;
        });
        assert.equal(server.calls.length, 0);
      });
    }

    it('accepts a 500-character name', async () => {
      await queue().enqueue(task({ name: 'x'.repeat(500) }));
      assert.equal(onlyCall().task?.name, `${QUEUE_PATH}/tasks/${'x'.repeat(500)}`);
    });

    it('rejects a path without a leading slash, or an invalid schedule time, without calling', async () => {
      await assert.rejects(queue().enqueue(task({ path: 'process' })), /must start with "\/"/);
      await assert.rejects(queue().enqueue(task({ scheduleTime: new Date(Number.NaN) })), /invalid Date/);
      assert.equal(server.calls.length, 0);
    });
  });

  describe('options', () => {
    const invalid: Array<[string, Partial<CloudTasksQueueOptions> | Record<string, unknown>, RegExp]> = [
      ['a missing client', { client: undefined }, /`client` must be a CloudTasksClient/],
      ['a client without createTask', { client: {} }, /`client` must be a CloudTasksClient/],
      ['an empty project', { project: '' }, /`project` must be a project id/],
      ['a project with a slash', { project: 'a/b' }, /`project`/],
      ['a missing location', { location: undefined }, /`location` must be a location id/],
      ['a queue id with a dot', { queue: 'my.queue' }, /`queue` must be a queue id/],
      ['a missing target', { target: undefined }, /`target.type` must be 'http' or 'appengine'/],
      ['an unknown target type', { target: { type: 'pubsub' } }, /`target.type`/],
      ['a relative target URL', { target: { type: 'http', url: '/process' } }, /`target.url` must be an absolute URL/],
      ['a non-http target URL', { target: { type: 'http', url: 'ftp://example.com' } }, /must be an http\(s\) URL/],
      ['a target URL with a query', { target: { type: 'http', url: 'https://a.example.com/?x=1' } }, /may not have a query/],
      ['an OIDC account that is not an email', { target: { type: 'http', url: 'https://a.example.com', oidc: { serviceAccountEmail: 'me' } } }, /serviceAccountEmail/],
      ['an empty OIDC audience', { target: { type: 'http', url: 'https://a.example.com', oidc: { serviceAccountEmail: SA, audience: '' } } }, /`target.oidc.audience`/],
      ['an empty App Engine service', { target: { type: 'appengine', service: '' } }, /`target.service`/],
      ['a dispatch deadline under 15 s', { dispatchDeadlineMs: 14_999 }, /`dispatchDeadlineMs` .*15 s.*30 min.*got 14999/],
      ['an HTTP dispatch deadline over 30 min', { dispatchDeadlineMs: 1_800_001 }, /`dispatchDeadlineMs`.*http targets/],
      ['an App Engine dispatch deadline over 24 h', { target: { type: 'appengine' }, dispatchDeadlineMs: 86_400_001 }, /24 h\) for appengine targets/],
      ['a fractional dispatch deadline', { dispatchDeadlineMs: 20_000.5 }, /`dispatchDeadlineMs`/],
      ['a zero call timeout', { callTimeoutMs: 0 }, /`callTimeoutMs` must be a positive integer/],
      ['zero attempts', { createAttempts: 0 }, /`createAttempts` must be a positive integer/],
    ];
    for (const [what, overrides, message] of invalid) {
      it(`throws ConfigError for ${what}`, () => {
        assert.throws(() => queue(overrides as Partial<CloudTasksQueueOptions>), (err: unknown) => {
          assert.ok(err instanceof ConfigError);
          assert.match(err.message, message);
          return true;
        });
      });
    }

    it('accepts the dispatch deadline bounds', () => {
      assert.ok(queue({ dispatchDeadlineMs: 15_000 }));
      assert.ok(queue({ dispatchDeadlineMs: 1_800_000 }));
      assert.ok(queue({ target: { type: 'appengine' }, dispatchDeadlineMs: 86_400_000 }));
    });
  });
});
