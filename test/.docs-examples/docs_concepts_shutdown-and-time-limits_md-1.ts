import express from 'express';
import { DatastoreStore, Locker, CloudTasksQueue } from '../../src/index';
import { Datastore } from '@google-cloud/datastore';
import { CloudTasksClient } from '../support/docs-tasks-client';

const locker = new Locker({
  store: new DatastoreStore(new Datastore()),
  queue: new CloudTasksQueue({
    client: new CloudTasksClient(), project: 'my-project', location: 'europe-west1', queue: 'locker',
    target: { type: 'http', url: 'https://orders-abc.a.run.app', oidc: { serviceAccountEmail: 'tasks@my-project.iam.gserviceaccount.com' } },
    dispatchDeadlineMs: 900_000,
  }),
  authenticate: false, // behind your own check; see the deployment guide for oidcAuthenticator
  requestTimeout: 900_000, // gcloud run deploy --timeout=900
});

const app = express();
const server = app.listen(Number(process.env.PORT ?? 8080));
process.once('SIGTERM', () => {
  // Once stopping, task routes answer 503 with Connection: close, so keep-alive connections end.
  void locker.shutdown().then(() => server.close());
});

export {};
