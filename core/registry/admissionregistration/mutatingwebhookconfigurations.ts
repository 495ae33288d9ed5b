/**
 * MutatingWebhookConfiguration (admissionregistration.svc.io/v1, cluster-scoped): webhooks the
 * MutatingAdmissionWebhook plugin calls for the requests they match (core/admission/webhook/). Defaults
 * and validation are upstream's v1 rules (./webhooks.ts); generation starts at 1 and follows the webhooks.
 */
import { metadataAgeColumn, metadataNameColumn } from '../../api/objectmeta.js';
import type { ApiObject } from '../../api/types.js';
import { objectSchema } from '../../schema/meta.js';
import type { ResourceType } from '../resource-type.js';
import { ADMISSIONREGISTRATION_GROUP } from './match.js';
import { defaultWebhooks, validateWebhooks, webhookCountCell, webhooksField, type WebhookConfiguration } from './webhooks.js';

export const mutatingWebhookConfigurationSchema = objectSchema(
  'io.svc.api.admissionregistration.v1.MutatingWebhookConfiguration',
  { webhooks: webhooksField('MutatingWebhook') },
  [],
  'Webhooks that may change the objects written to the API, and the requests each one is called for.',
);

export const mutatingWebhookConfigurations: ResourceType = {
  group: ADMISSIONREGISTRATION_GROUP,
  version: 'v1',
  protobufPackage: 'svc.io.api.admissionregistration.v1',
  kind: 'MutatingWebhookConfiguration',
  plural: 'mutatingwebhookconfigurations',
  singular: 'mutatingwebhookconfiguration',
  namespaced: false,
  categories: ['api-extensions'],
  schema: mutatingWebhookConfigurationSchema,
  defaults: (obj: ApiObject) => defaultWebhooks(obj, true),
  validateCreate: (obj: ApiObject) => validateWebhooks(obj, true),
  validateUpdate: (obj: ApiObject) => validateWebhooks(obj, true),
  generationOf: (obj: ApiObject) => (obj as WebhookConfiguration).webhooks ?? [],
  tableColumns: [
    metadataNameColumn,
    { name: 'Webhooks', type: 'integer', description: 'The number of webhooks.', cell: webhookCountCell },
    metadataAgeColumn,
  ],
};
