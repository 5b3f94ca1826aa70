/**
 * Who may use the example's status page and start chains (see `OperatorConfig`): an authenticator
 * for the library's status router, and the same check, plus a same-site check, for the app's own
 * routes that start chains and serve /status.json.
 */
import type { NextFunction, Request, Response } from 'express';
import { iapAuthenticator, type Authenticator } from '../src/index';
import { isLoopback, type OperatorConfig } from './config';

/** The authenticator of the status page. */
export function operatorAuthenticator(config: OperatorConfig): Authenticator {
  if (config.type === 'iap') return iapAuthenticator({ audience: config.audience, ...(config.allow ? { allow: config.allow } : {}) });
  if (config.type === 'closed') {
    return () => ({ ok: false, status: 403, reason: 'the status page is closed outside a local run (loopback only) until EXAMPLE_IAP_AUDIENCE names Identity-Aware Proxy\'s audience' });
  }
  // A local run listens on loopback only, and takes only requests for a loopback host (see localHostOnly).
  return () => ({ ok: true });
}

/**
 * Express middleware for every route of a local run: a request must name a loopback host
 * (`localhost`, `127.0.0.1`, `[::1]`). A page on another site whose name a DNS answer points at
 * 127.0.0.1 (DNS rebinding) sends its own name, and is refused.
 */
export function localHostOnly(req: Request, res: Response, next: NextFunction): void {
  const host = req.get('host') ?? '';
  const name = host.replace(/:\d+$/, '');
  if (isLoopback(name)) return next();
  res.status(421).type('text').send('a local run answers requests for localhost or a loopback address only\n');
}

/**
 * Express middleware for the app's own operator routes: a request the authenticator accepts (on a
 * local run, any: see operatorAuthenticator), and a POST only from this site's own pages
 * (`Sec-Fetch-Site`, `Origin`), on a local run too.
 */
export function operatorOnly(config: OperatorConfig, authenticate: Authenticator) {
  return async (req: Request, res: Response, next: NextFunction): Promise<void> => {
    if (config.type !== 'local') {
      const verdict = await authenticate({ method: req.method, url: req.originalUrl, headers: req.headers });
      if (!verdict.ok) {
        res.status(verdict.status).type('text').send(verdict.status === 401 ? 'authentication required\n' : 'forbidden\n');
        return;
      }
    }
    const site = req.get('sec-fetch-site');
    const origin = req.get('origin');
    if (req.method === 'POST' && ((site !== undefined && site !== 'same-origin') || (origin !== undefined && hostOf(origin) !== req.get('host')))) {
      res.status(403).type('text').send('a chain is started from this site\'s own page\n');
      return;
    }
    next();
  };
}

function hostOf(origin: string): string | undefined {
  try {
    return new URL(origin).host;
  } catch {
    return undefined;
  }
}
