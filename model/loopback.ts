/**
 * The one HTTP server of a model run, on 127.0.0.1: a task for instance `ID` is POSTed to
 * `/i/ID/step`, as Cloud Tasks POSTs to a service, and reaches that instance's Express app.
 */
import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import type { Express } from 'express';

/** A loopback server that routes `/i/<id>/...` to the app registered as `id`. */
export class Loopback {
  private constructor(private readonly server: Server, readonly base: string, private readonly apps: Map<string, Express>) {}

  /** Starts listening on a free port of 127.0.0.1. */
  static async start(): Promise<Loopback> {
    const apps = new Map<string, Express>();
    const server = createServer((req, res) => {
      const match = /^\/i\/([^/]+)(\/.*)$/.exec(req.url ?? '');
      const app = match ? apps.get(match[1]!) : undefined;
      if (!match || !app) {
        res.statusCode = 404;
        res.end();
        return;
      }
      req.url = match[2]!;
      app(req, res);
    });
    server.keepAliveTimeout = 60_000;
    await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
    return new Loopback(server, `http://127.0.0.1:${(server.address() as AddressInfo).port}`, apps);
  }

  /** Serves `app` as instance `id`. */
  add(id: string, app: Express): void {
    this.apps.set(id, app);
  }

  /** Stops serving instance `id`. */
  remove(id: string): void {
    this.apps.delete(id);
  }

  /** The URL of `path` on instance `id`. */
  url(id: string, path: string): string {
    return `${this.base}/i/${id}${path}`;
  }

  /** Ends every connection (requests a dead instance never answers included). */
  dropConnections(): void {
    this.server.closeAllConnections();
  }

  /** Stops the server. */
  async stop(): Promise<void> {
    this.server.closeAllConnections();
    await new Promise<void>((resolve) => this.server.close(() => resolve()));
  }
}
