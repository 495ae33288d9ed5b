/** Escalation prevention on every write path with writes inline (--workers=0); see rbac-escalation.ts. */
import { escalationSuite } from './rbac-escalation.js';

escalationSuite('0');
