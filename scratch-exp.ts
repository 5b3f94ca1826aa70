import { createServer } from 'node:net';
import { Firestore } from '@google-cloud/firestore';
import { FirestoreStore } from './src/store/firestore/store';
import { Key } from '@google-cloud/datastore';

async function closedPort(): Promise<number> {
  return new Promise((resolve) => { const s = createServer(); s.listen(0, '127.0.0.1', () => { const a = s.address(); s.close(() => resolve(typeof a === 'object' && a ? a.port : 0)); }); });
}
async function main() {
  process.env.METADATA_SERVER_DETECTION = 'none';
  const port = await closedPort();
  process.env.FIRESTORE_EMULATOR_HOST = `127.0.0.1:${port}`;
  const client = new Firestore({ projectId: 'x', useBigInt: true });
  const store = new FirestoreStore(client, { callTimeoutMs: 500 });
  let t = Date.now();
  for (const [name, run] of [
    ['read', () => store.read(new Key({ path: ['Order', 'a'] }))],
    ['transaction', () => store.transaction(async (tx) => tx.put(new Key({ path: ['Order', 'a'] }), { n: 1 }, []))],
    ['transaction-read', () => store.transaction(async (tx) => tx.get(new Key({ path: ['Order', 'a'] })))],
    ['listDue', () => store.listDue(new Date(), 10)],
  ] as const) {
    t = Date.now();
    try { await run(); console.log(name, 'resolved?'); } catch (e) { console.log(name, Date.now() - t, (e as Error).constructor.name, (e as Error).message.slice(0, 200)); }
  }
  t = Date.now();
  await client.terminate();
  console.log('terminate took', Date.now() - t);
  const started = Date.now();
  process.on('exit', () => console.log('exit after', Date.now() - started));
}
void main();
