// web/format.js, what the views other than the results grid still format themselves:
// printf's rounding (ties to even on the exact binary value) and the baseline comparison's
// words, without a browser. (The results grid's text comes from benchd: report/grid_view.h,
// tested there and, on the page, by web_test.mjs against benchctl.)
//   node --test tests/web/format_test.mjs
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { fixed, formatBaselineComparison, formatBaselineVerdict, general } from '../../web/format.js';

test('fixed() rounds as printf does', () => {
  const cases = [[0.25, 1, '0.2'], [0.75, 1, '0.8'], [1.25, 1, '1.2'], [2.5, 0, '2'], [3.5, 0, '4'],
    [0.05, 1, '0.1'], [1316.75, 1, '1316.8'], [-0.25, 1, '-0.2'], [-0.01, 1, '-0.0'], [123456.65, 1, '123456.6'],
    [2.675, 2, '2.67'], [1e22, 1, '10000000000000000000000.0'], [1405.25, 1, '1405.2'], [0, 1, '0.0'], [9.96, 1, '10.0']];
  for (const [x, digits, want] of cases) assert.equal(fixed(x, digits), want, `${x} %.${digits}f`);
  const g = [[0.2125, 4, '0.2125'], [123456, 4, '1.235e+05'], [0.00001234, 4, '1.234e-05'], [5, 6, '5'], [2.5, 6, '2.5'],
    [1000, 4, '1000'], [99999, 4, '1e+05'], [0.0001, 4, '0.0001']];
  for (const [x, p, want] of g) assert.equal(general(x, p), want, `${x} %.${p}g`);
});

test('baseline comparisons read as benchctl prints them', () => {
  const below = { verdict: 'BASELINE_VERDICT_BELOW', ratio: 0.9207, baseline_images_per_second: 1412.0 };
  assert.equal(formatBaselineComparison(below), '0.92x REGRESSION');
  assert.equal(formatBaselineComparison({ verdict: 'BASELINE_VERDICT_WITHIN', ratio: 1.01 }), '1.01x within');
  assert.equal(formatBaselineComparison({ verdict: 'BASELINE_VERDICT_ABOVE', ratio: 1.0536 }), '1.05x ABOVE');
  assert.equal(formatBaselineComparison({}), '-');
  assert.equal(formatBaselineVerdict({ ...below, baseline_job_id: 'j-1' }),
    '0.921x of 1412.0 images/s (job j-1): REGRESSION (below the lower bound)');
});
