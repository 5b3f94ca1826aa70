/**
 * CSRF protection of the status router's POST actions, two checks that must both pass:
 *
 * - **The browser says the form comes from this site.** `Sec-Fetch-Site`, when sent, must be
 *   `same-origin`; `Origin`, when sent, must be this request's own origin (its `Host`).
 * - **A double-submit token.** Every page sets a random token in a cookie (HttpOnly,
 *   SameSite=Strict, Secure over HTTPS) and repeats it in each form; a POST must carry both, equal.
 *   Another site can neither read the cookie nor set it through the browser's SameSite rules.
 */
import { randomBytes, timingSafeEqual } from 'node:crypto';
import type { Request, Response } from 'express';

/** The cookie's name (`__Host-` prefixed over HTTPS, which pins it to this host and path /). */
export function csrfCookieName(secure: boolean): string {
  return secure ? '__Host-locker-csrf' : 'locker-csrf';
}

/** The form field that repeats the token. */
export const CSRF_FIELD = 'csrf';

/** The token for this page: the one the browser already has, or a new one set in a cookie. */
export function csrfToken(req: Request, res: Response): string {
  const secure = isSecure(req);
  const existing = readCookie(req, csrfCookieName(secure));
  if (existing && /^[A-Za-z0-9_-]{32,64}$/.test(existing)) return existing;
  const token = randomBytes(24).toString('base64url');
  const attributes = ['Path=/', 'HttpOnly', 'SameSite=Strict', ...(secure ? ['Secure'] : [])];
  res.append('Set-Cookie', `${csrfCookieName(secure)}=${token}; ${attributes.join('; ')}`);
  return token;
}

/** Why a POST is refused, or undefined when it passes both checks. */
export function csrfRefusal(req: Request, formToken: unknown): string | undefined {
  const site = req.get('sec-fetch-site');
  if (site !== undefined && site !== 'same-origin') return `the form was sent from another site (Sec-Fetch-Site: ${site})`;
  const origin = req.get('origin');
  if (origin !== undefined && originHost(origin) !== req.get('host')) return `the form was sent from another origin (${origin})`;
  const cookie = readCookie(req, csrfCookieName(isSecure(req)));
  if (!cookie || typeof formToken !== 'string' || !sameText(cookie, formToken)) return 'the form\'s token does not match this browser\'s (reload the page)';
  return undefined;
}

/** The host of an `Origin` header (the scheme is left out: behind Cloud Run's or App Engine's proxy the app sees http). */
function originHost(origin: string): string | undefined {
  try {
    return new URL(origin).host;
  } catch {
    return undefined; // "null" (an opaque origin) or garbage
  }
}

/** HTTPS as the browser sees it: directly, or through the platform's proxy. */
function isSecure(req: Request): boolean {
  return req.secure || req.get('x-forwarded-proto')?.split(',')[0]?.trim() === 'https';
}

function readCookie(req: Request, name: string): string | undefined {
  const header = req.get('cookie');
  if (!header) return undefined;
  for (const part of header.split(';')) {
    const eq = part.indexOf('=');
    if (eq > 0 && part.slice(0, eq).trim() === name) return part.slice(eq + 1).trim();
  }
  return undefined;
}

function sameText(a: string, b: string): boolean {
  const x = Buffer.from(a);
  const y = Buffer.from(b);
  return x.length === y.length && timingSafeEqual(x, y);
}
