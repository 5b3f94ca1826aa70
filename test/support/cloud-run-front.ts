/**
 * Cloud Run's front, on loopback: what stands between every caller and a Cloud Run service. For a
 * service deployed with `--no-allow-unauthenticated` it checks the bearer token (RS256 signature
 * against the loopback issuer's key, expiry, audience = one of the service's audiences) and that
 * its `email` holds `roles/run.invoker` (the `invokers` list), answers 401 or 403 itself, and hands
 * the request on with the token's signature replaced by `SIGNATURE_REMOVED_BY_GOOGLE` (Cloud Run's
 * service-to-service authentication docs). When the request carries `X-Serverless-Authorization`,
 * that header is the one checked and stripped, and `Authorization` goes on untouched. For a public service (`--allow-unauthenticated`) it
 * hands every request on untouched. Either way it cuts a request at `--timeout` (504). Its log
 * says who answered each request: the front or the app.
 */
import { createServer, request as httpRequest, type IncomingMessage, type Server, type ServerResponse } from 'node:http';
import { createVerify } from 'node:crypto';
import type { AddressInfo } from 'node:net';
import type { OidcIssuer } from './oidc-issuer';

/** How the service was deployed, as far as the front is concerned. */
export interface CloudRunFrontOptions {
  /** Where the container listens: `http://127.0.0.1:PORT`. */
  upstream: string;
  /** `iam` for `--no-allow-unauthenticated`, `public` for `--allow-unauthenticated`. */
  auth: 'iam' | 'public';
  /** The issuer whose key stands for Google's. Needed for `iam`. */
  issuer?: OidcIssuer;
  /** Accounts granted `roles/run.invoker` on the service. */
  invokers?: readonly string[];
  /** Audiences the front accepts besides its own URL (Cloud Run's custom audiences). */
  audiences?: readonly string[];
  /** `--timeout`, in ms. */
  timeoutMs: number;
}

/** One request as the front saw it. */
export interface FrontEntry {
  method: string;
  path: string;
  status: number;
  /** Who answered: the front itself (401, 403, 504) or the app. */
  by: 'front' | 'app';
}

/** The running front. */
export interface CloudRunFront {
  /** The service's URL, as callers use it: `http://127.0.0.1:PORT`. */
  readonly url: string;
  readonly log: readonly FrontEntry[];
  close(): Promise<void>;
}

/** The literal Cloud Run puts where the signature was. */
export const STRIPPED = 'SIGNATURE_REMOVED_BY_GOOGLE';

/** Starts the front on a free loopback port. */
export async function startCloudRunFront(options: CloudRunFrontOptions): Promise<CloudRunFront> {
  if (options.auth === 'iam' && options.issuer === undefined) throw new Error('an IAM front needs the issuer');
  const log: FrontEntry[] = [];
  let url = '';
  const server = createServer((req, res) => {
    const entry = (status: number, by: FrontEntry['by']) => log.push({ method: req.method ?? '', path: req.url ?? '', status, by });
    const headers = { ...req.headers };
    if (options.auth === 'iam') {
      const serverless = req.headers['x-serverless-authorization'];
      const checked = typeof serverless === 'string' ? 'x-serverless-authorization' : 'authorization';
      const verdict = checkToken(typeof serverless === 'string' ? serverless : req.headers.authorization, options, [url, ...(options.audiences ?? [])]);
      if (verdict.status !== 200) {
        entry(verdict.status, 'front');
        res.writeHead(verdict.status, { 'content-type': 'text/html' }).end(verdict.status === 401 ? 'Unauthorized\n' : 'Forbidden\n');
        req.resume();
        return;
      }
      headers[checked] = verdict.stripped;
    }
    forward(req, res, headers, options, entry);
  });
  url = await listen(server);
  return { url, log, close: () => stop(server) };
}

/** The front's check of the bearer token: 401 when it does not verify, 403 when its account may not invoke. */
function checkToken(header: string | undefined, options: CloudRunFrontOptions, audiences: readonly string[]): { status: 200; stripped: string } | { status: 401 | 403 } {
  const token = /^Bearer (\S+)$/.exec(header ?? '')?.[1];
  const parts = token?.split('.') ?? [];
  if (parts.length !== 3) return { status: 401 };
  const [head, body, signature] = parts as [string, string, string];
  let claims: Record<string, unknown>;
  try {
    const header = JSON.parse(Buffer.from(head, 'base64url').toString('utf8')) as Record<string, unknown>;
    if (header.alg !== 'RS256' || header.kid !== options.issuer!.key.kid) return { status: 401 };
    const verified = createVerify('RSA-SHA256').update(`${head}.${body}`).verify(options.issuer!.key.publicKey, Buffer.from(signature, 'base64url'));
    if (!verified) return { status: 401 };
    claims = JSON.parse(Buffer.from(body, 'base64url').toString('utf8')) as Record<string, unknown>;
  } catch {
    return { status: 401 };
  }
  const now = Date.now() / 1000;
  if (typeof claims.exp !== 'number' || claims.exp < now) return { status: 401 };
  if (claims.iss !== 'https://accounts.google.com' && claims.iss !== 'accounts.google.com') return { status: 401 };
  if (typeof claims.aud !== 'string' || !audiences.some((a) => a === claims.aud || `${a}/` === claims.aud)) return { status: 401 };
  const email = typeof claims.email === 'string' ? claims.email.toLowerCase() : '';
  if (!(options.invokers ?? []).some((invoker) => invoker.toLowerCase() === email)) return { status: 403 };
  return { status: 200, stripped: `Bearer ${head}.${body}.${STRIPPED}` };
}

/** Hands the request to the container and its answer back; cuts it at the timeout with a 504. */
function forward(req: IncomingMessage, res: ServerResponse, headers: IncomingMessage['headers'], options: CloudRunFrontOptions, entry: (status: number, by: FrontEntry['by']) => void): void {
  const target = new URL(req.url ?? '/', options.upstream);
  const upstream = httpRequest(target, { method: req.method, headers: { ...headers, host: target.host } });
  const timer = setTimeout(() => {
    upstream.destroy();
    if (!res.headersSent) {
      entry(504, 'front');
      res.writeHead(504, { 'content-type': 'text/plain' }).end('upstream request timeout\n');
    } else res.destroy();
  }, options.timeoutMs);
  upstream.on('response', (answer) => {
    res.writeHead(answer.statusCode ?? 502, answer.headers);
    answer.pipe(res);
    answer.on('end', () => {
      clearTimeout(timer);
      entry(answer.statusCode ?? 502, 'app');
    });
  });
  upstream.on('error', () => {
    clearTimeout(timer);
    if (!res.headersSent) {
      entry(503, 'front');
      res.writeHead(503, { 'content-type': 'text/plain' }).end('Service Unavailable\n');
    }
  });
  req.pipe(upstream);
}

function listen(server: Server): Promise<string> {
  return new Promise((resolve, reject) => {
    server.once('error', reject);
    server.listen(0, '127.0.0.1', () => resolve(`http://127.0.0.1:${(server.address() as AddressInfo).port}`));
  });
}

function stop(server: Server): Promise<void> {
  return new Promise((resolve) => {
    server.close(() => resolve());
    server.closeAllConnections();
  });
}
