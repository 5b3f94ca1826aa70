/**
 * A request answered before its body was read to the end (refused by the authenticator, a body
 * over `maxBodyBytes`, malformed headers): Node would read the rest, however long, to drop it and
 * keep the connection. Here the rest is read only up to {@link DRAIN_LIMIT} bytes, so that a client
 * that sent a little too much reads its answer on a connection that stays usable; past that (or
 * when `Content-Length` already says more), the answer closes the connection and nothing more is
 * read.
 */
import type { Request, Response } from 'express';

/** The most of an unread body dropped to keep its connection, bytes. */
export const DRAIN_LIMIT = 256 * 1024;

/** Before an answer is sent: closes the connection when the unread rest of the body is too long to drop. */
export function beforeAnswer(req: Request, res: Response): void {
  if (req.complete || res.headersSent) return;
  const declared = Number(req.headers['content-length']);
  if (!(declared <= DRAIN_LIMIT)) res.setHeader('Connection', 'close'); // chunked, or more than the limit: never read
}

/** After an answer is sent: drops the rest of the body up to the limit, then ends the connection. */
export function afterAnswer(req: Request, res: Response): void {
  if (req.complete) return;
  if (res.getHeader('Connection') === 'close') {
    req.pause();
    return;
  }
  let dropped = 0;
  req.on('data', (chunk: Buffer) => {
    dropped += chunk.length;
    if (dropped > DRAIN_LIMIT) req.socket.destroy();
  });
  req.resume();
}
