/**
 * Runs the Cloud Run guide's main.ts (a copy the test made, importing the library's source) as a
 * child process, with the two Google clients pointed at loopback stand-ins: the real
 * CloudTasksClient at the test's Cloud Tasks gRPC server (CLOUD_TASKS_TEST_PORT), and an
 * OAuth2Client that takes its signing certificates from the test's OIDC issuer
 * (OIDC_TEST_ISSUER). Everything else (Datastore through DATASTORE_EMULATOR_HOST, SMTP, PORT,
 * SIGTERM) is the file's own.
 */
import { OAuth2Client } from 'google-auth-library';
import type { Server } from 'node:http';
import { connectClient } from './cloud-tasks-server';

interface GuideMain {
  main(env: NodeJS.ProcessEnv, google: { tasks: ReturnType<typeof connectClient>; tokens?: OAuth2Client }): Promise<Server | undefined>;
}

const file = process.env.GUIDE_MAIN;
const issuer = process.env.OIDC_TEST_ISSUER;
const port = Number(process.env.CLOUD_TASKS_TEST_PORT);
if (!file || !issuer || !Number.isInteger(port)) throw new Error('GUIDE_MAIN, OIDC_TEST_ISSUER and CLOUD_TASKS_TEST_PORT are required');

const guide = require(file) as GuideMain;
const tokens = new OAuth2Client({
  endpoints: {
    oauth2FederatedSignonPemCertsUrl: `${issuer}/oauth2/v1/certs`,
    oauth2FederatedSignonJwkCertsUrl: `${issuer}/oauth2/v3/certs`,
  },
});
void guide.main(process.env, { tasks: connectClient(port), tokens });
