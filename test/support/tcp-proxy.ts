/**
 * A TCP proxy on loopback in front of a real server (the emulator), whose connections a test can
 * break: `pass` forwards bytes both ways, `reset` destroys every connection (open ones and new
 * ones) at once, `stall` accepts connections and forwards nothing (the server seems hung); back to
 * `pass` after a stall, the stalled connections are closed.
 */
import { createConnection, createServer, type Server, type Socket } from 'node:net';

/** What the proxy does with connections. */
export type ProxyMode = 'pass' | 'reset' | 'stall';

/** A running proxy. */
export interface TcpProxy {
  /** Its port on 127.0.0.1. */
  readonly port: number;
  /** Changes what it does; `reset` and `stall` also break the connections already open. */
  setMode(mode: ProxyMode): void;
  /** Stops it and closes every connection. */
  close(): Promise<void>;
}

/** Starts a proxy to `target` (`host:port`), on `port` of 127.0.0.1 (0: one the system picks). */
export async function startTcpProxy(target: string, port = 0): Promise<TcpProxy> {
  const [host, portText] = splitHostPort(target);
  let mode: ProxyMode = 'pass';
  const sockets = new Set<Socket>();
  const track = (socket: Socket): void => {
    sockets.add(socket);
    socket.on('close', () => sockets.delete(socket));
    socket.on('error', () => socket.destroy());
  };
  const server: Server = createServer((client) => {
    track(client);
    if (mode === 'reset') return void client.resetAndDestroy();
    if (mode === 'stall') return; // held open, nothing forwarded
    const upstream = createConnection({ host, port: Number(portText) });
    track(upstream);
    client.pipe(upstream);
    upstream.pipe(client);
    client.on('close', () => upstream.destroy());
    upstream.on('close', () => client.destroy());
  });
  const listening = await new Promise<number>((resolve, reject) => {
    server.once('error', reject);
    server.listen(port, '127.0.0.1', () => {
      const address = server.address();
      if (typeof address === 'object' && address) resolve(address.port);
      else reject(new Error('no port'));
    });
  });
  return {
    port: listening,
    setMode(next) {
      const previous = mode;
      mode = next;
      if (next === 'pass') {
        // Connections that stalled stay dead (as a hung server's do): the client opens new ones.
        if (previous === 'stall') for (const socket of sockets) socket.destroy();
        return;
      }
      // Open connections break too: reset them all (a stalled server never answers what is in flight).
      for (const socket of sockets) {
        if (next === 'reset') socket.resetAndDestroy();
        else socket.pause();
      }
      if (next === 'stall') for (const socket of sockets) socket.unpipe();
    },
    async close() {
      for (const socket of sockets) socket.destroy();
      await new Promise<void>((resolve) => server.close(() => resolve()));
    },
  };
}

function splitHostPort(target: string): [string, string] {
  const at = target.lastIndexOf(':');
  if (at < 0) throw new Error(`expected host:port, got ${target}`);
  return [target.slice(0, at), target.slice(at + 1)];
}
