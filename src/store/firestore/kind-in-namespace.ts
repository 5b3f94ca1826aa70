/**
 * A lockable kind in one namespace as a Firestore query: the kind at every depth, as a Datastore
 * kind query reads it. Its own file: it loads `@google-cloud/firestore`'s values, which `paths.ts`
 * (read by the indexes command, where that package is an optional peer) must not.
 */
import { FieldPath, Filter, type Firestore, type Query } from '@google-cloud/firestore';
import { NAMESPACES_COLLECTION, kindCollection, namespaceDocument } from './paths';

/**
 * Every document of `kind` in `namespace`, at any depth (below an ancestor too), as a Datastore
 * kind query lists them: the kind's collection group kept to the namespace's documents by ranges of
 * document names. Names order segment by segment, so a namespace's documents are one range, those
 * below `LockerNamespaces/ns` (up to `LockerNamespaces/ns\u0000`, the next possible name), and the
 * default namespace's are everything else, the two ranges around the collection `LockerNamespaces`.
 * In a real database a range on the document name beside a range or an order on a field is a
 * query with inequalities on several fields, served by the same composite index with
 * collection-group scope (the name closes every index).
 */
export function kindInNamespace(firestore: Firestore, namespace: string | undefined, kind: string): Query {
  kindCollection(firestore, namespace, kind); // the same checks of the kind
  const group = firestore.collectionGroup(kind);
  const name = FieldPath.documentId();
  if (namespace) {
    const home = namespaceDocument(firestore, namespace);
    const next = firestore.collection(NAMESPACES_COLLECTION).doc(`${home.id}\u0000`);
    return group.where(name, '>', home).where(name, '<', next);
  }
  const first = firestore.collection(NAMESPACES_COLLECTION).doc('\u0000');
  const after = firestore.collection(`${NAMESPACES_COLLECTION}\u0000`).doc('\u0000');
  return group.where(Filter.or(Filter.where(name, '<', first), Filter.where(name, '>=', after)));
}
