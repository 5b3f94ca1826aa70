/**
 * `@google-cloud/tasks` as a documented example sees it when the docs test runs it: the same
 * module, except that `new CloudTasksClient()` without an endpoint talks to the loopback Cloud
 * Tasks server named by CLOUD_TASKS_TEST_PORT (test/support/cloud-tasks-server.ts) over an
 * insecure channel, with no credentials, as `connectClient()` does. The docs test rewrites an
 * example's `from '@google-cloud/tasks'` to this module, as it rewrites `from 'datastore-locker'`
 * to the library's source; the example's own text is not changed. Without the variable, the
 * client is Google's.
 */
import * as grpc from '@grpc/grpc-js';
import * as tasks from '@google-cloud/tasks';

export * from '@google-cloud/tasks';

type ClientOptions = ConstructorParameters<typeof tasks.CloudTasksClient>[0];

/** The real client; its endpoint, when the example names none, is the loopback server. */
export class CloudTasksClient extends tasks.CloudTasksClient {
  constructor(options: ClientOptions = {}) {
    const port = Number(process.env.CLOUD_TASKS_TEST_PORT);
    const loopback = Number.isInteger(port) && port > 0 && options?.apiEndpoint === undefined;
    super(loopback
      ? { projectId: 'locker-test', ...options, apiEndpoint: '127.0.0.1', port, sslCreds: grpc.credentials.createInsecure(), universeDomain: 'googleapis.com' }
      : options);
  }
}
