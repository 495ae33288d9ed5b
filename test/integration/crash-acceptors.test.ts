/**
 * The kill -9 trial (helpers/crash-trial.ts) on two acceptors: their primary is killed during
 * concurrent writes on both, so each acceptor ends with writes of its own in flight while the server
 * restarted in its place opens the same store; nothing acknowledged may be lost and nothing may hang.
 */
import t from 'tap';
import { sigkillDuringWrites } from '../helpers/crash-trial.js';

t.test('SIGKILL of the primary of two acceptors during writes loses no acknowledged write', (t) => sigkillDuringWrites(t, ['--acceptors=2']));
