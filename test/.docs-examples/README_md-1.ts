import { Datastore } from '@google-cloud/datastore';
import { CloudTasksClient } from '../support/docs-tasks-client';
import { CloudTasksQueue, DatastoreStore, EmailAlerter, Locker, oidcAuthenticator } from '../../src/index';

const url = 'https://orders-abc123-ew.a.run.app';
const serviceAccountEmail = 'tasks@my-project.iam.gserviceaccount.com';
const smtpUrl = process.env.SMTP_URL; // e.g. smtps://user:password@smtp.example.com, from a secret
if (!smtpUrl) throw new Error('SMTP_URL is not set: the mail server alerts are sent through');

export const locker = new Locker({
  store: new DatastoreStore(new Datastore()),
  queue: new CloudTasksQueue({
    client: new CloudTasksClient(),
    project: 'my-project',
    location: 'europe-west1',
    queue: 'steps',
    target: { type: 'http', url, oidc: { serviceAccountEmail } },
  }),
  authenticate: oidcAuthenticator({ audience: url, serviceAccountEmail }), // required with CloudTasksQueue
  alerter: new EmailAlerter({ transport: smtpUrl, to: 'ops@example.com', from: 'locker@example.com' }),
});

export {};
