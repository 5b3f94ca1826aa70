import { Locker, MemoryStore, type AnswerReason } from '../../src/index';

const locker = new Locker({ store: new MemoryStore(), authenticate: false });
const byReason = new Map<AnswerReason, number>();
locker.on('retryLater', ({ reason }) => byReason.set(reason, (byReason.get(reason) ?? 0) + 1));

export {};
