/**
 * Cloud Tasks' own request headers, parsed for the handler: `X-CloudTasks-*` for HTTP targets,
 * `X-AppEngine-*` for App Engine targets. Malformed values are left out, never fatal.
 */
import type { IncomingHttpHeaders } from 'node:http';
import type { TaskInfo } from '../types';

/** Reads the task metadata of a request. */
export function parseTaskInfo(headers: IncomingHttpHeaders): TaskInfo {
  const cloudTasks = header(headers, 'x-cloudtasks-taskname') !== undefined || header(headers, 'x-cloudtasks-queuename') !== undefined;
  const prefix = cloudTasks ? 'x-cloudtasks-' : 'x-appengine-';
  const name = header(headers, `${prefix}taskname`);
  const queue = header(headers, `${prefix}queuename`);
  if (!cloudTasks && name === undefined && queue === undefined) return { source: 'none' };
  const info: TaskInfo = { source: cloudTasks ? 'cloud-tasks' : 'app-engine' };
  if (name !== undefined) info.name = name;
  if (queue !== undefined) info.queue = queue;
  assign(info, 'retryCount', count(header(headers, `${prefix}taskretrycount`)));
  assign(info, 'executionCount', count(header(headers, `${prefix}taskexecutioncount`)));
  assign(info, 'eta', eta(header(headers, `${prefix}tasketa`)));
  assign(info, 'previousResponse', count(header(headers, `${prefix}taskpreviousresponse`)));
  assign(info, 'retryReason', header(headers, `${prefix}taskretryreason`));
  return info;
}

function assign<K extends keyof TaskInfo>(info: TaskInfo, name: K, value: TaskInfo[K] | undefined): void {
  if (value !== undefined) info[name] = value;
}

function header(headers: IncomingHttpHeaders, name: string): string | undefined {
  const value = headers[name];
  const text = Array.isArray(value) ? value[0] : value;
  return text === undefined || text === '' ? undefined : text.slice(0, 1024);
}

function count(text: string | undefined): number | undefined {
  return text !== undefined && /^\d{1,9}$/.test(text) ? Number(text) : undefined;
}

/** ETA: seconds since the epoch, with a fraction. */
function eta(text: string | undefined): Date | undefined {
  if (text === undefined || !/^\d{1,12}(\.\d{1,9})?$/.test(text)) return undefined;
  return new Date(Math.round(Number(text) * 1000));
}
