// web/format.js against the figures report/grid_test.cc and report/compare.cc expect, and
// printf's rounding (ties to even on the exact binary value), without a browser.
//   node --test tests/web/format_test.mjs
import { test } from 'node:test';
import assert from 'node:assert/strict';
import {
  buildGrids, fixed, formatBaselineComparison, formatBaselineVerdict, formatCellText, formatScaling, general,
} from '../../web/format.js';

function cell(model, devices, precision, bs, median, kind = 'cuda') {
  return {
    model, devices, precision, batch_size: bs, median_images_per_second: median, min_images_per_second: median - 1,
    max_images_per_second: median + 1, runs: 3, job_ids: [`j-${devices}`], device_kind: kind, gpu_model: '',
    failed_runs: 0, pending_runs: 0, image_size: 0, baseline: { verdict: 'BASELINE_VERDICT_UNSPECIFIED', baseline_job_id: '' },
  };
}

test('fixed() rounds as printf does', () => {
  const cases = [[0.25, 1, '0.2'], [0.75, 1, '0.8'], [1.25, 1, '1.2'], [2.5, 0, '2'], [3.5, 0, '4'],
    [0.05, 1, '0.1'], [1316.75, 1, '1316.8'], [-0.25, 1, '-0.2'], [-0.01, 1, '-0.0'], [123456.65, 1, '123456.6'],
    [2.675, 2, '2.67'], [1e22, 1, '10000000000000000000000.0'], [1405.25, 1, '1405.2'], [0, 1, '0.0'], [9.96, 1, '10.0']];
  for (const [x, digits, want] of cases) assert.equal(fixed(x, digits), want, `${x} %.${digits}f`);
  const g = [[0.2125, 4, '0.2125'], [123456, 4, '1.235e+05'], [0.00001234, 4, '1.234e-05'], [5, 6, '5'], [2.5, 6, '2.5'],
    [1000, 4, '1000'], [99999, 4, '1e+05'], [0.0001, 4, '0.0001']];
  for (const [x, p, want] of g) assert.equal(general(x, p), want, `${x} %.${p}g`);
});

test('the grid, its cells and scaling read as benchctl prints them', () => {
  const cells = [
    cell('resnet50', 8, 'PRECISION_AMP', 256, 10440.0), cell('resnet50', 1, 'PRECISION_AMP', 128, 1316.7),
    cell('resnet50', 8, 'PRECISION_FP32', 256, 2987.9), cell('resnet50', 1, 'PRECISION_FP32', 256, 384.72),
    cell('resnet50', 1, 'PRECISION_FP32', 128, 381.46), cell('resnet50', 8, 'PRECISION_FP32', 128, 2948.2),
    cell('resnet50', 1, 'PRECISION_AMP', 256, 1412.0),
  ];
  const [grid] = buildGrids(cells);
  assert.deepEqual(grid.columns.map((c) => c.header), ['FP32 bs128', 'FP32 bs256', 'AMP bs128', 'AMP bs256']);
  assert.deepEqual(grid.rows.map((r) => r.devices), [1, 8]);
  assert.deepEqual(grid.rows[0].cells.map((c) => formatCellText(c)),
    ['381.5 (380.5–382.5, n=3)', '384.7 (383.7–385.7, n=3)', '1316.7 (1315.7–1317.7, n=3)', '1412.0 (1411.0–1413.0, n=3)']);
  assert.deepEqual(grid.rows[1].cells.map((c) => (c ? formatCellText(c) : 'no data')),
    ['2948.2 (2947.2–2949.2, n=3)', '2987.9 (2986.9–2988.9, n=3)', 'no data', '10440.0 (10439.0–10441.0, n=3)']);
  assert.deepEqual(grid.rows[1].scaling.map(formatScaling), ['7.73x (96.6%)', '7.77x (97.1%)', 'no data', '7.39x (92.4%)']);
  const numeric = buildGrids([cell('m', 1, 'PRECISION_FP32', 1024, 1), cell('m', 1, 'PRECISION_FP32', 64, 2)]);
  assert.deepEqual(numeric[0].columns.map((c) => c.header), ['FP32 bs64', 'FP32 bs1024']);
});

test('cell text: spread, counts, honest gaps and baseline flags', () => {
  const c = cell('m', 1, 'PRECISION_AMP', 256, 1412.0);
  c.min_images_per_second = 1400.1;
  c.max_images_per_second = 1420.3;
  assert.equal(formatCellText(c), '1412.0 (1400.1–1420.3, n=3)');
  c.failed_runs = 1;
  assert.equal(formatCellText(c), '1412.0 (1400.1–1420.3, n=3; 1 failed)');
  c.pending_runs = 2;
  assert.equal(formatCellText(c), '1412.0 (1400.1–1420.3, n=3; 1 failed; 2 pending)');
  const ci = { ...cell('m', 1, 'PRECISION_AMP', 256, 1412.0), runs: 8, ci95_low_images_per_second: 1405.25, ci95_high_images_per_second: 1418.0 };
  assert.equal(formatCellText(ci), '1412.0 (95% CI 1405.2–1418.0, n=8)');
  assert.equal(formatCellText({ ...cell('m', 1, 'PRECISION_AMP', 256, 1412.0), runs: 1 }), '1412.0 (n=1)');
  const none = { model: 'm', devices: 1, runs: 0, failed_runs: 0, pending_runs: 0, baseline: {} };
  assert.equal(formatCellText(none), 'no data');
  assert.equal(formatCellText({ ...none, failed_runs: 1 }), 'no data (1 failed)');
  assert.equal(formatCellText({ ...none, pending_runs: 1 }), 'no data (1 pending)');
  const below = { ...cell('m', 1, 'PRECISION_AMP', 256, 1300.0), baseline: { verdict: 'BASELINE_VERDICT_BELOW', ratio: 0.9207, baseline_images_per_second: 1412.0 } };
  assert.equal(formatCellText(below), '1300.0 (1299.0–1301.0, n=3) REGRESSION');
  assert.equal(formatBaselineComparison(below.baseline), '0.92x REGRESSION');
  assert.equal(formatBaselineComparison({ verdict: 'BASELINE_VERDICT_WITHIN', ratio: 1.01 }), '1.01x within');
  assert.equal(formatBaselineComparison({ verdict: 'BASELINE_VERDICT_ABOVE', ratio: 1.0536 }), '1.05x ABOVE');
  assert.equal(formatBaselineComparison({}), '-');
  assert.equal(formatBaselineVerdict({ ...below.baseline, baseline_job_id: 'j-1' }),
    '0.921x of 1412.0 images/s (job j-1): REGRESSION (below the lower bound)');
  const above = { ...cell('m', 8, 'PRECISION_AMP', 256, 11000.0), baseline: { verdict: 'BASELINE_VERDICT_ABOVE', ratio: 1.0536 } };
  assert.equal(formatCellText(above), '11000.0 (10999.0–11001.0, n=3) ABOVE');
  const [grid] = buildGrids([below, above]);
  assert.equal(formatScaling(grid.rows[1].scaling[0]), '8.46x (105.8%)');
});
