/**
 * A recording gRPC proxy on loopback: cleartext HTTP/2 in front of an emulator (`host:port`), each
 * call forwarded as it comes (headers, messages, trailers) and recorded: its method, and for each
 * message each way how often each top-level protobuf field occurs. No proto definitions are
 * needed: what the costs test asks (how many documents a `Commit` writes, how many a
 * `BatchGetDocuments` asks for, how many a `RunQuery` returns) is the count of one field number.
 * Only loopback, only this test's own client: the seam is the wire, the client is untouched.
 */
import http2, { type ClientHttp2Session, type IncomingHttpHeaders, type OutgoingHttpHeaders } from 'node:http2';
import type { AddressInfo } from 'node:net';

/** One gRPC call: its method and its messages, each as counts by top-level field number. */
export interface RecordedCall {
  /** The method's short name: `Commit`, `BatchGetDocuments`, `RunQuery`, `BeginTransaction`… */
  method: string;
  requests: Array<Map<number, number>>;
  responses: Array<Map<number, number>>;
  /** Why a message could not be read, if one could not (it was forwarded all the same). */
  unreadable?: string;
}

/** The proxy: point a client at `host`. */
export interface GrpcRecorder {
  host: string;
  calls: RecordedCall[];
  clear(): void;
  close(): Promise<void>;
}

/** Counts the top-level fields of one protobuf message by field number (wire types 0, 1, 2, 5). */
export function topLevelFields(message: Buffer): Map<number, number> {
  const counts = new Map<number, number>();
  let at = 0;
  const varint = (): number => {
    let value = 0;
    let shift = 0;
    for (;;) {
      if (at >= message.length) throw new RangeError('a protobuf varint runs past the message');
      const byte = message[at++]!;
      value += (byte & 0x7f) * 2 ** shift;
      if ((byte & 0x80) === 0) return value;
      shift += 7;
    }
  };
  while (at < message.length) {
    const tag = varint();
    const field = Math.floor(tag / 8);
    const wire = tag % 8;
    if (wire === 0) varint();
    else if (wire === 1) at += 8;
    else if (wire === 2) {
      const length = varint(); // read before `at` is: `at += varint()` would add to the old `at`
      at += length;
    }
    else if (wire === 5) at += 4;
    else throw new RangeError(`protobuf wire type ${wire} (groups) is not expected here`);
    counts.set(field, (counts.get(field) ?? 0) + 1);
  }
  if (at !== message.length) throw new RangeError('a protobuf field runs past the message');
  return counts;
}

/** Splits gRPC's length-prefixed frames (a flag byte, a 4-byte length, the message) as they arrive. */
class Frames {
  private pending = Buffer.alloc(0);
  constructor(private readonly into: Array<Map<number, number>>) {}
  push(chunk: Buffer): void {
    this.pending = Buffer.concat([this.pending, chunk]);
    while (this.pending.length >= 5) {
      const length = this.pending.readUInt32BE(1);
      if (this.pending.length < 5 + length) return;
      if (this.pending[0] !== 0) throw new Error('a compressed gRPC message: the recorder reads only uncompressed ones');
      this.into.push(topLevelFields(this.pending.subarray(5, 5 + length)));
      this.pending = this.pending.subarray(5 + length);
    }
  }
}

/** Headers as the next hop takes them: HTTP/2's connection-level ones left out. */
function forwardable(headers: IncomingHttpHeaders, request: boolean): OutgoingHttpHeaders {
  const out: OutgoingHttpHeaders = {};
  for (const [name, value] of Object.entries(headers)) {
    if (value === undefined || name === ':scheme' || name === ':authority' || (!request && name.startsWith(':') && name !== ':status')) continue;
    out[name] = value;
  }
  return out;
}

/** Starts the proxy in front of `target` (`host:port`), on a free loopback port. */
export async function startGrpcRecorder(target: string): Promise<GrpcRecorder> {
  const calls: RecordedCall[] = [];
  let upstream: ClientHttp2Session | undefined;
  const session = (): ClientHttp2Session => {
    if (!upstream || upstream.closed || upstream.destroyed) upstream = http2.connect(`http://${target}`);
    return upstream;
  };
  const server = http2.createServer();
  // Its clients' sessions, ended by close(): a client not yet terminated would keep the server open.
  const sessions = new Set<http2.ServerHttp2Session>();
  server.on('session', (s) => { sessions.add(s); s.once('close', () => sessions.delete(s)); });
  server.on('stream', (stream, headers) => {
    const call: RecordedCall = { method: String(headers[':path'] ?? '').split('/').pop() ?? '', requests: [], responses: [] };
    calls.push(call);
    const requests = new Frames(call.requests);
    const responses = new Frames(call.responses);
    const next = session().request(forwardable(headers, true));
    let trailers: OutgoingHttpHeaders = {};
    const read = (frames: Frames, chunk: Buffer): void => {
      try {
        frames.push(chunk);
      } catch (err) {
        call.unreadable ??= err instanceof Error ? err.message : String(err);
      }
    };
    stream.on('data', (chunk: Buffer) => { next.write(chunk); read(requests, chunk); });
    stream.on('end', () => next.end());
    stream.on('close', () => { if (!next.closed) next.close(); });
    next.on('response', (answer, flags) => {
      if (stream.closed) return;
      // A trailers-only answer (an error before any message) ends with its headers.
      if ((flags & http2.constants.NGHTTP2_FLAG_END_STREAM) !== 0) stream.respond(forwardable(answer, false), { endStream: true });
      else stream.respond(forwardable(answer, false), { waitForTrailers: true });
    });
    next.on('data', (chunk: Buffer) => { if (!stream.closed) stream.write(chunk); read(responses, chunk); });
    next.on('trailers', (t) => { trailers = forwardable(t, false); });
    next.on('end', () => { if (!stream.closed && stream.headersSent) stream.end(); });
    stream.on('wantTrailers', () => stream.sendTrailers(trailers));
    next.on('error', () => { if (!stream.closed) stream.close(http2.constants.NGHTTP2_INTERNAL_ERROR); });
    stream.on('error', () => { if (!next.closed) next.close(http2.constants.NGHTTP2_CANCEL); });
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const { port } = server.address() as AddressInfo;
  return {
    host: `127.0.0.1:${port}`,
    calls,
    clear: () => { calls.length = 0; },
    close: async () => {
      const closed = new Promise<void>((resolve) => server.close(() => resolve()));
      for (const s of sessions) s.destroy();
      upstream?.destroy();
      await closed;
    },
  };
}
