import { formatAlert, Locker, MemoryStore, type AlertEvent } from '../../src/index';

async function postToChat(event: AlertEvent): Promise<void> {
  const { subject, text } = formatAlert(event, { subjectPrefix: '[orders]' });
  const response = await fetch('https://chat.example.com/hooks/ops', {
    method: 'POST',
    headers: { 'content-type': 'application/json' },
    body: JSON.stringify({ title: subject, text, dedupKey: event.id }), // the same id on a repeat
  });
  if (!response.ok) throw new Error(`chat answered ${response.status}`); // logged; the sweep re-sends a failure's alert
}

export const locker = new Locker({ store: new MemoryStore(), authenticate: false, alerter: postToChat });

export {};
