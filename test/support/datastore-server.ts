/**
 * A Datastore gRPC server on loopback, built from the .proto files `@google-cloud/datastore` ships
 * (google.datastore.v1; its google/api, google/type and google/protobuf imports come from
 * google-gax's protos). It records every call, decoded, and answers Lookup, BeginTransaction,
 * Commit, Rollback and RunQuery with what the test set (by default: every key found at version 1,
 * every commit applied at version 2), unless told to fail or hang the next calls. Point a real
 * `Datastore` client at it with {@link datastoreFor}.
 */
import path from 'node:path';
import * as grpc from '@grpc/grpc-js';
import * as protoLoader from '@grpc/proto-loader';
import { Datastore } from '@google-cloud/datastore';

/** The RPCs the server answers. */
export type DatastoreMethod = 'lookup' | 'beginTransaction' | 'commit' | 'rollback' | 'runQuery';

/** A decoded request (int64s as decimal strings, enums as names, bytes as Buffers). */
export type Decoded = Record<string, unknown>;

/** One call as the server received it. */
export interface ReceivedCall {
  method: DatastoreMethod;
  request: Decoded;
  /** The call's metadata (headers), e.g. `x-goog-request-params`. */
  metadata: Record<string, string>;
}

type Plan = { kind: 'status'; code: grpc.status; details: string } | { kind: 'hang' };

/** A running fake Datastore. */
export interface DatastoreServer {
  /** The port it listens on, on 127.0.0.1. */
  readonly port: number;
  /** Every call received, in order (also those answered with an error or left hanging). */
  readonly calls: ReceivedCall[];
  /** Sets how `method` answers a request (the default answers are described above). */
  answer(method: DatastoreMethod, respond: (request: Decoded) => Decoded): void;
  /** Answers the next `times` calls (of any method) with `code`, after recording them. */
  failNext(code: grpc.status, times?: number, details?: string): void;
  /** Never answers the next `times` calls (the client's deadline ends them). */
  hangNext(times?: number): void;
  /** Forgets calls, plans and answers. */
  reset(): void;
  /** Stops the server at once, cancelling hanging calls. */
  close(): Promise<void>;
}

const PACKAGE_PROTOS = path.resolve(path.dirname(require.resolve('@google-cloud/datastore')), '../protos');
const GAX_PROTOS = path.resolve(
  path.dirname(require.resolve('google-gax', { paths: [path.dirname(require.resolve('@google-cloud/datastore'))] })),
  '../protos',
);

/** The Datastore service definition, from the package's own .proto files. */
function loadService(): grpc.ServiceDefinition {
  const definition = protoLoader.loadSync('google/datastore/v1/datastore.proto', {
    includeDirs: [PACKAGE_PROTOS, GAX_PROTOS],
    keepCase: false,
    longs: String,
    enums: String,
    bytes: Buffer,
    defaults: false,
    oneofs: false,
  });
  const service = definition['google.datastore.v1.Datastore'];
  if (service === undefined || 'format' in service) throw new Error('Datastore service not found in the protos');
  return service as grpc.ServiceDefinition;
}

/** What each method answers unless the test says otherwise. */
const DEFAULT_ANSWERS: Record<DatastoreMethod, (request: Decoded) => Decoded> = {
  lookup: (request) => ({
    found: ((request.keys as Decoded[] | undefined) ?? []).map((key) => ({
      entity: { key, properties: { n: { integerValue: '0' } } },
      version: '1',
    })),
  }),
  beginTransaction: () => ({ transaction: Buffer.from('transaction-1') }),
  commit: (request) => ({
    mutationResults: ((request.mutations as unknown[] | undefined) ?? []).map(() => ({ version: '2' })),
  }),
  rollback: () => ({}),
  runQuery: () => ({ batch: { entityResultType: 'FULL', moreResults: 'NO_MORE_RESULTS', entityResults: [] } }),
};

const HANDLERS: Record<string, DatastoreMethod> = {
  lookup: 'lookup',
  beginTransaction: 'beginTransaction',
  commit: 'commit',
  rollback: 'rollback',
  runQuery: 'runQuery',
};

function metadataRecord(metadata: grpc.Metadata): Record<string, string> {
  const record: Record<string, string> = {};
  for (const [key, value] of Object.entries(metadata.getMap())) record[key] = value.toString();
  return record;
}

/** Starts the server on 127.0.0.1, on a free port. */
export async function startDatastoreServer(): Promise<DatastoreServer> {
  const calls: ReceivedCall[] = [];
  let plans: Plan[] = [];
  let answers = { ...DEFAULT_ANSWERS };
  const server = new grpc.Server();
  const implementation: grpc.UntypedServiceImplementation = {};
  for (const [name, method] of Object.entries(HANDLERS)) {
    implementation[name] = (call: grpc.ServerUnaryCall<Decoded, Decoded>, callback: grpc.sendUnaryData<Decoded>) => {
      calls.push({ method, request: call.request, metadata: metadataRecord(call.metadata) });
      const plan = plans.shift();
      if (plan?.kind === 'hang') return;
      if (plan?.kind === 'status') return callback({ code: plan.code, details: plan.details });
      callback(null, answers[method](call.request));
    };
  }
  // Methods the store never calls answer UNIMPLEMENTED by default.
  server.addService(loadService(), implementation);
  const port = await new Promise<number>((resolve, reject) => {
    server.bindAsync('127.0.0.1:0', grpc.ServerCredentials.createInsecure(), (err, bound) => (err ? reject(err) : resolve(bound)));
  });
  return {
    port,
    calls,
    answer(method, respond) {
      answers[method] = respond;
    },
    failNext(code, times = 1, details = `test server answers ${grpc.status[code]}`) {
      for (let i = 0; i < times; i++) plans.push({ kind: 'status', code, details });
    },
    hangNext(times = 1) {
      for (let i = 0; i < times; i++) plans.push({ kind: 'hang' });
    },
    reset() {
      calls.length = 0;
      plans = [];
      answers = { ...DEFAULT_ANSWERS };
    },
    async close() {
      server.forceShutdown();
    },
  };
}

/** A real `Datastore` client of project `locker-test` pointed at `server`, without credentials. */
export function datastoreFor(server: DatastoreServer): Datastore {
  return new Datastore({ projectId: 'locker-test', apiEndpoint: `127.0.0.1:${server.port}` });
}
