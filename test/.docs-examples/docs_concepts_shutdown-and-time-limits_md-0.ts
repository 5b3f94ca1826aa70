import { Locker, MemoryStore, LocalQueue, type TaskContext } from '../../src/index';

interface Order { id: string; charged: boolean }

const locker = new Locker({ store: new MemoryStore(), queue: new LocalQueue({ baseUrl: 'http://127.0.0.1:8080' }) });

export const charge = locker.handle<Order>(async (ctx: TaskContext<Order>) => {
  // fetch rejects with an AbortError whose cause is ctx.signal.reason: a silent hand-back.
  const res = await fetch('https://payments.example.com/charge', { method: 'POST', signal: ctx.signal });
  if (!res.ok) throw new Error(`charge failed: ${res.status}`);
  // The charge is made: from here on, do not stop on the signal. Finish the step (the write goes
  // through within the grace), or the next attempt charges again.
  ctx.entity.charged = true;
}, (props) => ({ id: String(props.id ?? ''), charged: props.charged === true }));

export {};
