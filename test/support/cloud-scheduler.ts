/**
 * Cloud Scheduler's HTTP job, on loopback: `gcloud scheduler jobs create http --uri --http-method
 * --oidc-service-account-email --oidc-token-audience --attempt-deadline`. Running the job calls its
 * URI with an OIDC token for its audience (the URI itself when no audience is set, as Scheduler
 * does), signed by the loopback issuer, and gives up on the attempt at the attempt deadline
 * (180 s by default).
 */
import { idTokenClaims, type OidcIssuer } from './oidc-issuer';

/** The job, as the guide creates it. */
export interface SchedulerJob {
  uri: string;
  httpMethod?: 'POST' | 'GET';
  serviceAccountEmail: string;
  /** `--oidc-token-audience`; the URI when left out. */
  audience?: string;
  /** `--attempt-deadline`, in ms; 180 s by default. */
  attemptDeadlineMs?: number;
}

/** One run of the job: the answer's status (0 when the attempt was cut or failed) and body. */
export interface SchedulerRun {
  status: number;
  body: string;
}

/** `gcloud scheduler jobs run`: calls the job's URI once. */
export async function runSchedulerJob(job: SchedulerJob, issuer: OidcIssuer): Promise<SchedulerRun> {
  const token = issuer.sign(idTokenClaims({ aud: job.audience ?? job.uri, email: job.serviceAccountEmail }));
  try {
    const res = await fetch(job.uri, {
      method: job.httpMethod ?? 'POST',
      headers: { authorization: `Bearer ${token}`, 'user-agent': 'Google-Cloud-Scheduler' },
      signal: AbortSignal.timeout(job.attemptDeadlineMs ?? 180_000),
    });
    return { status: res.status, body: await res.text() };
  } catch {
    return { status: 0, body: '' };
  }
}
