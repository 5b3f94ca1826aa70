/**
 * datastore-locker: exactly-once Cloud Tasks steps on leases held on your own Datastore entities.
 * This file only re-exports; each line says why the name is public.
 */

// The Locker and its options: what every user constructs.
export { Locker } from './locker';
export { DEFAULTS, type LockerOptions } from './config/options';
export type { HandleOptions, SweepHandlerOptions } from './http/middleware';
// For apps whose express.json() runs before the task routes: hands non-object JSON bodies on to them.
export { taskBodyRecovery } from './http/payload';

// What a handler receives and returns, and how entities are built from stored properties.
export type { EntityFactory, ScheduleOptions, ScheduledStep, SelfStoring, TaskContext, TaskHandler } from './step/handler-types';
// A store's own key type: a Locker takes and hands out its store's keys (`Locker<K>`; FirestoreStore's are DocumentReferences).
export type { KeyType, KeyedStore } from './keys/key-type';

// Many kickoffs at once: locker.scheduleMany(items, options) and what it answers.
export { SCHEDULE_MANY_DEFAULTS, type KickoffItem, type KickoffProgress, type KickoffResult, type ScheduleManyOptions, type ScheduleManyResult } from './chain/schedule-many-types';

// Fan-out and fan-in: what ctx.fanOut() takes and answers, and what a join reads with ctx.fanIn().
export type { ChildCounts, ChildState, FanIn, FanInChild, FanInPage, FanOutChild, FanOutOptions, FanOutOutcome, FanOutPolicy, FanOutStarted } from './fanout/types';
export type { FailedChild, FanOutView, PendingChild } from './fanout/view';
export type { FanOutState } from './fanout/records';
export type { CancelFanOutOptions, FanOutActionResult, RetryFanOutOptions, SkippedChild } from './fanout/operator';

// Recurring work: locker.recurring(name, options) declares a schedule; what a tick answers and what the operator sees.
export { RECURRING_DEFAULTS, type RecurringOptions, type RecurringTick, type OverlapPolicy, type MisfirePolicy, type TickResult, type LastRun, type ScheduleView } from './recurring/recurring-types';
export type { RunNowResult, SchedulePage } from './recurring/operator';

// Events, for logs and counters.
export type { LockerEvents, StepEvent } from './events/events';
export { DropReason } from './rules/decision';
export { AnswerReason } from './events/events';
export type { SweepResult } from './chain/sweep';

// Errors: test with instanceof; each carries a stable code and the HTTP status it maps to.
export * from './errors/errors';

// The public contracts: lock fields, plug-in interfaces, alert events.
export * from './types';

// Keys in X-Lock-Key: the Go library's legacy url-safe encoding.
export { decodeKey, encodeKey, keyPath } from './keys/key-codec';

// Stores: Datastore in production, in memory for local runs and tests.
export { DatastoreStore, DATASTORE_STORE_DEFAULTS, type DatastoreStoreOptions } from './store/datastore/store';
export { MemoryStore, type MemoryStoreOptions, type MemoryStoreOperation } from './store/memory/store';
// The contention retry the Locker uses, for your own read-check-write transactions.
export { withContentionRetry, CONTENTION_RETRY_DEFAULTS, type ContentionRetryOptions } from './locks/retry';

// Queues: Cloud Tasks in production, the local dispatcher for local runs.
export { CloudTasksQueue, type CloudTasksQueueOptions, type CloudTasksTarget, type HttpTarget, type AppEngineTarget } from './queue/cloud-tasks';
export { LocalQueue, type LocalQueueOptions, type LocalQueueStats } from './queue/local';
export { verifyLocalSignature, type LocalSecret } from './queue/local-signature';

// Authenticators for task requests.
export { oidcAuthenticator, type OidcAuthenticatorOptions, type OidcTokenVerifier } from './auth/oidc';
export { appEngineAuthenticator, type AppEngineAuthenticatorOptions } from './auth/app-engine';
// App Engine cron's requests, for the sweep route that cron.yaml calls.
export { appEngineCronAuthenticator, type AppEngineCronAuthenticatorOptions } from './auth/app-engine-cron';
// Behind Cloud Run's IAM front (--no-allow-unauthenticated), which removes token signatures.
export { cloudRunIamAuthenticator, type CloudRunIamAuthenticatorOptions } from './auth/cloud-run-iam';
export { STRIPPED_SIGNATURE } from './auth/bearer-jwt';
export { anyOf } from './auth/any-of';
// People behind Identity-Aware Proxy, e.g. for the status router.
export { iapAuthenticator, IAP_HEADER, type IapAuthenticatorOptions, type IapTokenVerifier } from './auth/iap';

// The default logger, for your own logs in the same shape (JSON lines on Cloud Run and App Engine).
export { platformLogger, type LogFormat, type LogLevel, type PlatformLoggerOptions } from './log/platform-logger';

// The operator's view: steps by state, one entity's detail.
export { Inspector, type ListQuery, type StepPage, type StepDetail, type KindCounts, type RunProgress, type SearchHit, type AlertsOwed, type ChildOf } from './ops/inspect/inspector';
export type { KickoffRow, FanOutRow, RowProgress, RowPage, OldestPending, EntityRef } from './ops/inspect/runs';
export type { RunKind, KickoffSettled } from './chain/kickoff-run';
export { InspectState, INSPECT_STATES, type StepSummary, type QueuedTask } from './ops/inspect/step-view';
export type { SearchScope, SearchReading } from './ops/inspect/search';
export type { Throughput, ThroughputBucket } from './ops/inspect/throughput';
export type { HistoryEntry, StepOutcome } from './rules/step-history';
export type { LedgerView } from './ops/inspect/ledger-view';
// The operator's actions and the status router.
export type { ActionOptions, ActionResult } from './ops/actions';
export { STATUS_ROUTER_DEFAULTS, type StatusRouterOptions, type StatusColumn } from './ops/status/options';
// Bulk actions (`locker.bulk()`), tracked as operations, and the HTML parts a page of your own can show.
export { BULK_ACTIONS, type BulkAction, type BulkFilter } from './ops/bulk/filter';
export type { BulkOptions, BulkStarted } from './ops/bulk/start';
export { OPERATION_KIND, type Operation, type OperationState } from './ops/bulk/operation';
export type { OperationView } from './ops/bulk/view';
export type { LockQuery, LockPage, FoundEntity } from './store/lock-query';

// The index.yaml entries locker.inspect() and the status router need, for your kinds (also the
// datastore-locker-indexes command).
export { indexYaml } from './store/index-yaml';

// Alerts by email.
export { EmailAlerter, type EmailAlerterOptions } from './alert/email';
export type { RateLimitOptions } from './alert/rate-limit';
export type { Redaction } from './alert/redact';
// The alert's wording, for alerters of your own (chat, pager) that want the same message.
export { formatAlert, type AlertMessage, type MessageOptions } from './alert/message';
