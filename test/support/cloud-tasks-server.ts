/**
 * A Cloud Tasks gRPC server on loopback, built from the .proto files `@google-cloud/tasks` ships
 * (their google/api, google/iam, google/rpc and google/protobuf imports come from google-gax's
 * protos). It implements CreateTask only: it records every request, decoded, and answers with the
 * task, unless told to fail or hang the next calls. `connectClient` points the real
 * `CloudTasksClient` at it without any credentials.
 */
import path from 'node:path';
import * as grpc from '@grpc/grpc-js';
import * as protoLoader from '@grpc/proto-loader';
import { CloudTasksClient } from '@google-cloud/tasks';

/** A protobuf Timestamp or Duration as decoded here (longs as numbers). */
export interface DecodedTime {
  seconds?: number;
  nanos?: number;
}

/** The parts of a decoded `google.cloud.tasks.v2.Task` the tests look at. */
export interface DecodedTask {
  name?: string;
  httpRequest?: {
    url?: string;
    httpMethod?: string;
    headers?: Record<string, string>;
    body?: Buffer;
    oidcToken?: { serviceAccountEmail?: string; audience?: string };
    oauthToken?: { serviceAccountEmail?: string; scope?: string };
  };
  appEngineHttpRequest?: {
    httpMethod?: string;
    relativeUri?: string;
    headers?: Record<string, string>;
    body?: Buffer;
    appEngineRouting?: { service?: string; version?: string; instance?: string; host?: string };
  };
  scheduleTime?: DecodedTime;
  dispatchDeadline?: DecodedTime;
}

/** One CreateTask call as the server received it. */
export interface ReceivedCall {
  parent?: string;
  task?: DecodedTask;
  /** The call's metadata (headers), e.g. `x-goog-request-params`. */
  metadata: Record<string, string>;
}

type Plan = { kind: 'status'; code: grpc.status; details: string } | { kind: 'hang' };

interface CreateTaskRequest {
  parent?: string;
  task?: DecodedTask;
}

/** A running fake Cloud Tasks service. */
export interface CloudTasksServer {
  /** The port it listens on, on 127.0.0.1. */
  readonly port: number;
  /** Every CreateTask call received, in order (also those answered with an error or left hanging). */
  readonly calls: ReceivedCall[];
  /** Answers the next `times` calls with `code` (after recording them). */
  failNext(code: grpc.status, times?: number, details?: string): void;
  /** Never answers the next `times` calls (the client's deadline ends them). */
  hangNext(times?: number): void;
  /** Forgets calls and plans. */
  reset(): void;
  /** Stops the server at once, cancelling hanging calls. */
  close(): Promise<void>;
}

const TASKS_PROTOS = path.resolve(path.dirname(require.resolve('@google-cloud/tasks')), '../../protos');
const GAX_PROTOS = path.resolve(
  path.dirname(require.resolve('google-gax', { paths: [path.dirname(require.resolve('@google-cloud/tasks'))] })),
  '../protos',
);

/** The CloudTasks service definition, from the package's own .proto files. */
function loadService(): grpc.ServiceDefinition {
  const definition = protoLoader.loadSync('google/cloud/tasks/v2/cloudtasks.proto', {
    includeDirs: [TASKS_PROTOS, GAX_PROTOS],
    keepCase: false,
    longs: Number,
    enums: String,
    bytes: Buffer,
    defaults: false,
    oneofs: false,
  });
  const service = definition['google.cloud.tasks.v2.CloudTasks'];
  if (service === undefined || 'format' in service) throw new Error('CloudTasks service not found in the protos');
  return service as grpc.ServiceDefinition;
}

function metadataRecord(metadata: grpc.Metadata): Record<string, string> {
  const record: Record<string, string> = {};
  for (const [key, value] of Object.entries(metadata.getMap())) record[key] = value.toString();
  return record;
}

/** Starts the server on 127.0.0.1, on a free port. */
export async function startCloudTasksServer(): Promise<CloudTasksServer> {
  const calls: ReceivedCall[] = [];
  let plans: Plan[] = [];
  const server = new grpc.Server();
  server.addService(loadService(), {
    createTask(
      call: grpc.ServerUnaryCall<CreateTaskRequest, DecodedTask>,
      callback: grpc.sendUnaryData<DecodedTask>,
    ): void {
      const { parent, task } = call.request;
      calls.push({ parent, task, metadata: metadataRecord(call.metadata) });
      const plan = plans.shift();
      if (plan?.kind === 'hang') return;
      if (plan?.kind === 'status') return callback({ code: plan.code, details: plan.details });
      callback(null, task ?? {});
    },
  });
  const port = await new Promise<number>((resolve, reject) => {
    server.bindAsync('127.0.0.1:0', grpc.ServerCredentials.createInsecure(), (err, bound) =>
      err ? reject(err) : resolve(bound),
    );
  });
  return {
    port,
    calls,
    failNext(code, times = 1, details = `test server answers ${grpc.status[code]}`) {
      for (let i = 0; i < times; i++) plans.push({ kind: 'status', code, details });
    },
    hangNext(times = 1) {
      for (let i = 0; i < times; i++) plans.push({ kind: 'hang' });
    },
    reset() {
      calls.length = 0;
      plans = [];
    },
    async close() {
      server.forceShutdown();
    },
  };
}

/**
 * The real client, pointed at the server over an insecure channel. No credentials are looked
 * up: `sslCreds` replaces gax's channel credentials (so no token is ever fetched), and the explicit
 * universe domain stops gax from asking the auth library (and so the metadata server) for one.
 */
export function connectClient(port: number): CloudTasksClient {
  return new CloudTasksClient({
    apiEndpoint: '127.0.0.1',
    port,
    sslCreds: grpc.credentials.createInsecure(),
    universeDomain: 'googleapis.com',
    projectId: 'test-project',
  });
}
