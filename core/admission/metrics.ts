/**
 * What admission reports, with upstream's metric names (core/metrics/apiserver.ts declares the
 * families): each step and plugin timed, each webhook call timed and counted, its rejections and
 * fail-open outcomes counted, and each policy check counted and timed.
 */
import type { AdmissionOperation } from './attributes.js';
import type { AdmissionObserver } from './chain.js';

/** upstream's webhook step types: `admit` for mutating webhooks, `validating` for validating ones. */
export type WebhookStepType = 'admit' | 'validating';

/** Why a webhook refused: its own answer, a failed call, or the server's own error around it. */
export type WebhookErrorType = 'no_error' | 'calling_webhook_error' | 'apiserver_internal_error';

export interface AdmissionMetrics extends AdmissionObserver {
  webhook(name: string, type: WebhookStepType, operation: AdmissionOperation, rejected: boolean, code: number, seconds: number): void;
  webhookRejection(name: string, type: WebhookStepType, operation: AdmissionOperation, errorType: WebhookErrorType, code: number): void;
  webhookFailOpen(name: string, type: WebhookStepType): void;
  /** error_type: no_error, compile_error or invalid_error; enforcement_action: deny, warn, audit or allow. */
  policyCheck(policy: string, binding: string, errorType: string, enforcementAction: string, seconds: number): void;
}

/** Reports nothing (unit tests of plugins that do not look at metrics). */
export const NO_ADMISSION_METRICS: AdmissionMetrics = {
  step: () => undefined,
  plugin: () => undefined,
  webhook: () => undefined,
  webhookRejection: () => undefined,
  webhookFailOpen: () => undefined,
  policyCheck: () => undefined,
};
