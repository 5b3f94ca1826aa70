/**
 * Who may use the example's status page and start chains (see `OperatorConfig`): an authenticator
 * for the library's status router, and the same check, plus a same-site check, for the app's own
 * routes that start chains and serve /status.json.
 */
import type { NextFunction, Request, Response } from 'express';
import { iapAuthenticator, type Authenticator } from '../src/index';
import type { OperatorConfig } from './config';

/** The authenticator of the status page. */
export function operatorAuthenticator(config: OperatorConfig): Authenticator {
  if (config.type === 'iap') return iapAuthenticator({ audience: config.audience, ...(config.allow ? { allow: config.allow } : {}) });
  if (config.type === 'closed') {
    return () => ({ ok: false, status: 403, reason: 'the status page of a deployed app is closed until EXAMPLE_IAP_AUDIENCE names Identity-Aware Proxy\'s audience' });
  }
  // A local run trusts whoever reaches it, as `npm start` always did.
  return () => ({ ok: true });
}

/**
 * Express middleware for the app's own operator routes: open on a local run; deployed, only for
 * requests the authenticator accepts, and a POST only from this site (`Sec-Fetch-Site`, `Origin`).
 */
export function operatorOnly(config: OperatorConfig, authenticate: Authenticator) {
  return async (req: Request, res: Response, next: NextFunction): Promise<void> => {
    if (config.type === 'local') return next();
    const verdict = await authenticate({ method: req.method, url: req.originalUrl, headers: req.headers });
    if (!verdict.ok) {
      res.status(verdict.status).type('text').send(verdict.status === 401 ? 'authentication required\n' : 'forbidden\n');
      return;
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
