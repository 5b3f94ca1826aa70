/**
 * Task names: a hash of the entity's key, the chain id and the sequence. Cloud Tasks advises
 * against sequential names (they crowd one key range), and a name must never repeat for a
 * different step: the chain id is random per kickoff, so an entity deleted and created again under
 * the same key gets new names.
 */
import { createHash, randomBytes } from 'node:crypto';
import type { Key } from '@google-cloud/datastore';
import { keyPath } from '../store/key-codec';

/** The task name of step `seq` of `chain` on `key`: 32 hex digits, then the sequence. */
export function taskName(key: Key, chain: string, seq: number): string {
  const hash = createHash('sha256')
    .update(`${key.namespace ?? ''}\n${keyPath(key)}\n${chain}\n${seq}`)
    .digest('hex')
    .slice(0, 32);
  return `${hash}-${seq}`;
}

/** A new random chain id. */
export function newChainId(): string {
  return randomBytes(9).toString('base64url');
}
