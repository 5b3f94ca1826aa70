import { Datastore } from '@google-cloud/datastore';
import { CloudTasksClient } from '../support/docs-tasks-client';
import { CloudTasksQueue, DatastoreStore, Locker, oidcAuthenticator } from '../../src/index';

const url = 'https://orders-abc123-ew.a.run.app';
const serviceAccountEmail = 'tasks@my-project.iam.gserviceaccount.com';

export const locker = new Locker({
  store: new DatastoreStore(new Datastore()),
  queue: new CloudTasksQueue({
    client: new CloudTasksClient(), project: 'my-project', location: 'europe-west1', queue: 'steps',
    target: { type: 'http', url, oidc: { serviceAccountEmail } },
  }),
  authenticate: oidcAuthenticator({ audience: url, serviceAccountEmail }),
  lockFailedStatus: 409, // a held lease answers 409: only the refused task waits, the queue keeps its rate
});

export {};
