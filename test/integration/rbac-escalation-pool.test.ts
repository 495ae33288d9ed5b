/** Escalation prevention on every write path with the worker pool (--workers=2); see rbac-escalation.ts. */
import { escalationSuite } from './rbac-escalation.js';

escalationSuite('2');
