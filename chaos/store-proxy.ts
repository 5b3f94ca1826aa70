/**
 * A TCP proxy on loopback between the workers and the emulator, through which store faults are
 * injected (the code under test is not touched): connection resets, a window of delayed traffic,
 * and an outage during which every connection is reset as soon as it opens. It copies bytes and
 * knows no protocol: the Datastore client's gRPC and the Firestore client's (Native mode) pass
 * through it alike, each a long-lived HTTP/2 connection that a reset cuts with every call on it.
 */
import { connect, createServer, type AddressInfo, type Server, type Socket } from 'node:net';

/** What the proxy did. */
export interface ProxyStats {
  connections: number;
  /** Connections reset by a fault (during outages too). */
  resets: number;
  /** Delay windows opened. */
  delayWindows: number;
  /** Outages. */
  outages: number;
}

interface Pair {
  client: Socket;
  upstream: Socket;
}

export class StoreProxy {
  readonly stats: ProxyStats = { connections: 0, resets: 0, delayWindows: 0, outages: 0 };
  private readonly pairs = new Set<Pair>();
  private server: Server | undefined;
  private outageUntil = 0;
  private delayUntil = 0;
  private delayMs = 0;

  constructor(private readonly upstreamHost: string) {}

  /** Listens on 127.0.0.1; resolves with `host:port`. */
  async start(): Promise<string> {
    const [host, port] = splitHost(this.upstreamHost);
    const server = createServer((client) => {
      this.stats.connections++;
      const upstream = connect(port, host);
      const pair = { client, upstream };
      this.pairs.add(pair);
      const close = (): void => {
        this.pairs.delete(pair);
        client.destroy();
        upstream.destroy();
      };
      client.on('error', close).on('close', close);
      upstream.on('error', close).on('close', close);
      if (Date.now() < this.outageUntil) return this.reset(pair);
      this.forward(client, upstream);
      this.forward(upstream, client);
    });
    this.server = server;
    await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
    return `127.0.0.1:${(server.address() as AddressInfo).port}`;
  }

  /** Resets a share of the open connections (at least one when any is open); returns how many. */
  resetSome(share: number, random: () => number): number {
    const open = [...this.pairs];
    let n = 0;
    for (const pair of open) {
      if (random() < share || (n === 0 && pair === open.at(-1))) {
        this.reset(pair);
        n++;
      }
    }
    return n;
  }

  /** Delays every chunk, both ways, by `delayMs` for `forMs`. */
  delay(delayMs: number, forMs: number): void {
    this.stats.delayWindows++;
    this.delayMs = delayMs;
    this.delayUntil = Date.now() + forMs;
  }

  /** Resets every connection, and every new one, for `forMs`. */
  outage(forMs: number): void {
    this.stats.outages++;
    this.outageUntil = Date.now() + forMs;
    for (const pair of [...this.pairs]) this.reset(pair);
  }

  /** Ends any delay window or outage. */
  quiet(): void {
    this.outageUntil = 0;
    this.delayUntil = 0;
  }

  async stop(): Promise<void> {
    for (const pair of [...this.pairs]) {
      pair.client.destroy();
      pair.upstream.destroy();
    }
    const server = this.server;
    if (server) await new Promise<void>((resolve) => server.close(() => resolve()));
  }

  private reset(pair: Pair): void {
    this.stats.resets++;
    this.pairs.delete(pair);
    pair.client.resetAndDestroy();
    pair.upstream.destroy();
  }

  /** Copies `from` to `to`, chunk by chunk, in order, each held back while a delay window is open. */
  private forward(from: Socket, to: Socket): void {
    let queue = Promise.resolve();
    let queued = 0;
    from.on('data', (chunk: Buffer) => {
      const wait = Date.now() < this.delayUntil ? this.delayMs : 0;
      if (wait === 0 && queued === 0) {
        to.write(chunk);
        return;
      }
      queued++;
      queue = queue.then(() => new Promise<void>((resolve) => setTimeout(() => {
        queued--;
        if (!to.destroyed) to.write(chunk);
        resolve();
      }, wait)));
    });
  }
}

function splitHost(host: string): [string, number] {
  const at = host.lastIndexOf(':');
  return [host.slice(0, at), Number(host.slice(at + 1))];
}
