/**
 * Issue 7, item 12: a short deterministic slice of the fuzzer (`npm run fuzz`) in the test suite, with
 * the worker pool (fuzz-slice-inline.test.ts runs it without). A fixed seed replays the same cases
 * against a real server process; after every case no 5xx, a rejected write (or a dry run) changed
 * nothing, every error was a Status, every request was answered, the process is alive and under the
 * RSS bound.
 */
import t from 'tap';
import { fuzzSlice } from '../helpers/fuzz-slice.js';

fuzzSlice(t, '2', 20260101);
