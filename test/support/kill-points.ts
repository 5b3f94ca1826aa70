/** The named points at which `crash-app.ts` kills itself (see there for what each one is). */
export const KILL_POINTS = ['kickoff-commit', 'handler-running', 'after-side-effect', 'after-release', 'in-schedule'] as const;
export type KillPoint = (typeof KILL_POINTS)[number];
