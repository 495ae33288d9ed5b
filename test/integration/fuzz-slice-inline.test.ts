/**
 * Issue 7, item 12: the fuzzer's deterministic slice without the worker pool (--workers=0: decode,
 * merge and store on the main thread, whose stack is the smallest); see fuzz-slice.test.ts.
 */
import t from 'tap';
import { fuzzSlice } from '../helpers/fuzz-slice.js';

fuzzSlice(t, '0', 20260102);
