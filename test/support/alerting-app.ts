/**
 * A child-process instance for the "nothing owed after the answer" tests: a Locker on the Datastore
 * emulator serving one task route, whose alerts go by email to a loopback SMTP server the test
 * runs (one that holds the message, to play a mail server slower than `alertTimeout`). The test
 * freezes it (SIGSTOP) after its answer and kills it (SIGKILL), as Cloud Run does to an instance
 * with no request in flight, then checks that another instance's sweep sends what it still owed.
 *
 * Environment: `NAMESPACE`, `SMTP_PORT`, `ALERT_TIMEOUT_MS`, `LEASE_MS`, `MAX_RETRIES`, and
 * `HANDLER`: `complete` (the step finishes) or `fail` (it fails for good: a failure alert).
 * It prints `alerting-app listening on URL` once it serves.
 */
import express from 'express';
import { Datastore } from '@google-cloud/datastore';
import { DatastoreStore, EmailAlerter, Locker, PermanentError } from '../../src/index';
import { testAuth } from './task-app';

const env = process.env;
const namespace = env.NAMESPACE!;
const datastore = new Datastore({ projectId: env.DATASTORE_PROJECT_ID ?? 'locker-test', apiEndpoint: env.DATASTORE_EMULATOR_HOST });
const failing = env.HANDLER === 'fail';

const locker = new Locker({
  store: new DatastoreStore(datastore, { namespaces: [namespace] }),
  authenticate: testAuth,
  alerter: new EmailAlerter({
    transport: { host: '127.0.0.1', port: Number(env.SMTP_PORT), secure: false, ignoreTLS: true },
    to: 'ops@example.com', from: 'locker@example.com',
  }),
  alertTimeout: Number(env.ALERT_TIMEOUT_MS ?? '500'),
  leaseDuration: Number(env.LEASE_MS ?? '10000'),
  maxRetries: Number(env.MAX_RETRIES ?? '3'),
  logFormat: 'json',
});

const app = express();
app.post('/task', locker.handle(() => {
  if (failing) throw new PermanentError('the card was declined');
}, (props) => props));
const server = app.listen(0, '127.0.0.1', () => {
  const address = server.address();
  const port = typeof address === 'object' && address ? address.port : 0;
  console.log(`alerting-app listening on http://127.0.0.1:${port}`);
});
