/** A loopback port for a child process to listen on. */
import { createServer } from 'node:net';

/** A port nothing listened on a moment ago (127.0.0.1); the caller's child binds it right after. */
export async function freePort(): Promise<number> {
  const server = createServer();
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const { port } = server.address() as { port: number };
  await new Promise<void>((resolve) => server.close(() => resolve()));
  return port;
}
