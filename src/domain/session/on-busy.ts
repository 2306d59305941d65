/**
 * What a user message does when it arrives while the session has work ahead
 * of it (issue #33): wait its turn (`enqueue`, the default), be refused
 * (`reject`, 409 `session_busy`), or end the running message as `cancelled`
 * and start at once (`interrupt`), also leaving the cancelled turn out of the
 * model's history from then on (`rollback`).
 */
export const ON_BUSY = ['enqueue', 'reject', 'interrupt', 'rollback'] as const;
export type OnBusy = (typeof ON_BUSY)[number];

/** The policies that cancel the running message, as its `cancelled` status records them. */
export type Interruption = Extract<OnBusy, 'interrupt' | 'rollback'>;

/** The JSON schema of the field, for request bodies and session creation. */
export const onBusySchema = {
  type: 'string',
  enum: [...ON_BUSY],
  description:
    'What the message does when the session is busy: `enqueue` (wait its turn, the default), `reject` (409 `session_busy`, nothing recorded), `interrupt` (the running message ends `cancelled`, keeping its output, and this one starts at once) or `rollback` (as `interrupt`, and the cancelled turn is left out of the model\'s history).',
} as const;
