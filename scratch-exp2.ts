import { createServer } from 'node:net';
import { Firestore } from '@google-cloud/firestore';
import { FirestoreStore } from './src/store/firestore/store';
import { Key } from '@google-cloud/datastore';

async function closedPort(): Promise<number> {
  return new Promise((resolve) => { const s = createServer(); s.listen(0, '127.0.0.1', () => { const a = s.address(); s.close(() => resolve(typeof a === 'object' && a ? a.port : 0)); }); });
}
process.on('unhandledRejection', (e, p) => { console.log('UNHANDLED', (e as Error).message); });
async function main() {
  process.env.METADATA_SERVER_DETECTION = 'none';
  const port = await closedPort();
  process.env.FIRESTORE_EMULATOR_HOST = `127.0.0.1:${port}`;
  const client = new Firestore({ projectId: 'x', useBigInt: true });
  const store = new FirestoreStore(client, { callTimeoutMs: 500 });
  const which = process.argv[2];
  const t = Date.now();
  try {
    if (which === 'read') await store.read(new Key({ path: ['Order', 'a'] }));
    if (which === 'txread') await store.transaction(async (tx) => tx.get(new Key({ path: ['Order', 'a'] })));
    if (which === 'txput') await store.transaction(async (tx) => tx.put(new Key({ path: ['Order', 'a'] }), { n: 1 }, []));
    if (which === 'query') await store.listDue(new Date(), 10);
  } catch (e) { console.log(which, Date.now() - t, (e as Error).message.slice(0, 90)); }
  const t2 = Date.now();
  await client.terminate();
  console.log('terminate took', Date.now() - t2);
  process.on('exit', () => console.log('exit after', Date.now() - t2));
}
void main();
