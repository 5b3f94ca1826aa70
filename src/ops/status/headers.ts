/**
 * The status router's security headers, on every answer it gives: a Content-Security-Policy that
 * allows nothing but the page's own inline style sheet (by its hash: the page has no script, image
 * or font), forms posting back to the router only (`form-action 'self'`), and no framing
 * (`frame-ancestors 'none'` and `X-Frame-Options: DENY` for older browsers), so another site can
 * neither show the page in a frame to trick a click on its buttons nor load anything into it.
 */
import { createHash } from 'node:crypto';
import type { NextFunction, Request, Response } from 'express';
import { STYLE } from './style';

/** The policy: nothing by default; the page's style sheet by hash; forms to this origin; never framed. */
export const STATUS_PAGE_CSP = [
  "default-src 'none'",
  `style-src 'sha256-${createHash('sha256').update(STYLE).digest('base64')}'`,
  "form-action 'self'",
  "frame-ancestors 'none'",
  "base-uri 'none'",
].join('; ');

/** Sets the headers on every answer of a status route (refusals and errors included). */
export function statusPageHeaders(_req: Request, res: Response, next: NextFunction): void {
  res.setHeader('Content-Security-Policy', STATUS_PAGE_CSP);
  res.setHeader('X-Frame-Options', 'DENY');
  res.setHeader('X-Content-Type-Options', 'nosniff');
  next();
}
