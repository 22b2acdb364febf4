// #/results?model=&gpu_model=&label=k=v: the results grid as `benchctl results` prints it
// (report/grid.cc, ported in format.js): per (model, device kind, GPU model, image size) a
// grid of GPUs × precision × batch with median, spread, n, failed and pending counts and
// baseline flags; speedup and scaling efficiency vs 1 device; a vs-baseline table; and a
// scaling plot (images/s vs devices with the ideal linear line) per precision × batch.
// Each cell links to its runs in the jobs view.
import { getJson } from './api.js';
import { h, replace, noData, errorBox, hashHref } from './dom.js';
import {
  buildGrids, devicesHeader, formatBaselineComparison, formatCellText, formatScaling, gridHasBaselines,
  gridHasOneDeviceRow, gridHasScaling, gridName, num, precisionName,
} from './format.js';
import { Chart, color } from './chart.js';

function runsHref(grid, column, devices) {
  return hashHref('#/jobs', {
    model: grid.model, devices, precision: precisionName(column.precision), batch_size: column.batch_size,
    image_size: grid.image_size || '', device_kind: grid.device_kind, gpu_model: grid.gpu_model,
  });
}

function gridTable(grid, kind, rowsOf, cellOf) {
  return h('table', { class: `grid ${kind}`, 'data-grid': gridName(grid) },
    h('thead', null, h('tr', null, h('th', null, devicesHeader(grid.device_kind)),
      grid.columns.map((c) => h('th', null, c.header)))),
    h('tbody', null, rowsOf(grid).map((row) => h('tr', null, h('td', null, String(row.devices)),
      grid.columns.map((column, c) => h('td', null, cellOf(row, column, c)))))));
}

function cellClass(cell) {
  const verdict = cell && cell.baseline && cell.baseline.verdict;
  if (verdict === 'BASELINE_VERDICT_BELOW') return 'flag-bad';
  if (verdict === 'BASELINE_VERDICT_ABOVE') return 'flag-warn';
  return null;
}

function medianTable(grid) {
  return gridTable(grid, 'medians', (g) => g.rows, (row, column, c) => {
    const cell = row.cells[c];
    const text = cell ? formatCellText(cell) : 'no data';
    if (!cell || (num(cell.runs) || 0) + (num(cell.failed_runs) || 0) + (num(cell.pending_runs) || 0) === 0) {
      return text === 'no data' ? noData() : text;
    }
    return h('a', { href: runsHref(grid, column, row.devices), class: cellClass(cell), title: 'this cell\'s runs' }, text);
  });
}

function scalingTable(grid) {
  return gridTable(grid, 'scaling', (g) => g.rows.filter((row) => row.devices > 1),
    (row, column, c) => formatScaling(row.scaling[c]));
}

function baselineTable(grid) {
  return gridTable(grid, 'baselines', (g) => g.rows, (row, column, c) => {
    const cell = row.cells[c];
    const text = cell ? formatBaselineComparison(cell.baseline) : '-';
    return h('span', { class: cellClass(cell) }, text);
  });
}

// images/s vs devices for one column, with the ideal line (1-device median × devices).
function scalingPlot(grid, column, c, charts) {
  const box = h('div', { class: 'chart' });
  const rows = grid.rows.filter((row) => row.cells[c] && (num(row.cells[c].runs) || 0) > 0);
  const one = grid.rows.find((row) => row.devices === 1);
  const oneCell = one ? one.cells[c] : null;
  const base = oneCell && (num(oneCell.runs) || 0) > 0 ? num(oneCell.median_images_per_second) : null;
  const title = `${gridName(grid)} ${column.header}`;
  if (!rows.length) return h('div', { class: 'chart' }, h('h3', null, title), noData());
  const devices = [...new Set([1, ...grid.rows.map((r) => r.devices)])].sort((a, b) => a - b);
  const measured = devices.map((d) => {
    const row = rows.find((r) => r.devices === d);
    return row ? num(row.cells[c].median_images_per_second) : null;
  });
  const ideal = devices.map((d) => (base ? base * d : null));
  const chart = new Chart(box, {
    title, xLabel: devicesHeader(grid.device_kind), xLegend: devicesHeader(grid.device_kind), height: 240, legend: true,
    xRange: [0, devices[devices.length - 1] + 1], xIncrs: [1, 2, 4, 8, 16, 32, 64, 128, 256, 512, 1024],
    scales: { ips: { label: 'images/s', range: (u, min, max) => [0, (max || 1) * 1.1] } },
    series: [
      { label: 'median images/s', scale: 'ips', color: color(0), points: true, width: 2 },
      { label: base ? 'ideal (linear from 1)' : 'ideal: no data (no 1-device cell)', scale: 'ips', color: '#999', dash: [5, 5] },
    ],
  });
  charts.push(chart);
  chart.setWhenVisible([devices, measured, ideal]);
  return box;
}

function filterForm(params, ctx) {
  const model = h('input', { name: 'model', value: params.get('model') || '', placeholder: 'any', size: 12 });
  const gpu = h('input', { name: 'gpu_model', value: params.get('gpu_model') || '', placeholder: 'any', size: 22 });
  const label = h('input', { name: 'label', value: params.getAll('label').join(' '), placeholder: 'k=v', size: 14 });
  const form = h('form', { class: 'filters' }, h('label', null, 'model', model), h('label', null, 'GPU model', gpu),
    h('label', null, 'labels', label), h('button', { type: 'submit' }, 'Apply'), h('a', { href: '#/results' }, 'clear'));
  form.addEventListener('submit', (event) => {
    event.preventDefault();
    ctx.navigate('#/results', { model: model.value.trim(), gpu_model: gpu.value.trim(), label: label.value.split(/\s+/).filter(Boolean) });
  });
  return form;
}

export async function render(main, route, ctx) {
  const params = route.params;
  const body = h('div');
  replace(main, h('h1', null, 'Results'), filterForm(params, ctx), body);
  let cells;
  try {
    cells = await getJson('/api/v1/results', {
      model: params.get('model') || '', gpu_model: params.get('gpu_model') || '', label: params.getAll('label'),
      since: params.get('since') || '', until: params.get('until') || '',
      job_ids: 'false',  // the cells' job ids are not shown (a cell links to its runs by filters)
    });
  } catch (error) {
    replace(body, errorBox('could not load the results', error));
    ctx.ready();
    return undefined;
  }
  if (!ctx.current()) return undefined;
  const grids = buildGrids(Array.isArray(cells) ? cells : cells.cells || []);
  if (!grids.length) {
    replace(body, h('p', { class: 'nodata', id: 'no-results' }, 'no results yet'));
    ctx.ready();
    return undefined;
  }
  const charts = [];
  const parts = [];
  for (const grid of grids) {
    const section = h('section', { class: 'grid-section', 'data-grid': gridName(grid) });
    section.append(h('h2', null, `${gridName(grid)}: median images/s`), medianTable(grid));
    const one = grid.device_kind === 'cpu' ? 'CPU slot' : 'GPU';
    if (gridHasScaling(grid) && !gridHasOneDeviceRow(grid)) {
      section.append(h('p', { class: 'note' }, `${gridName(grid)}: speedup and scaling efficiency vs 1 ${one}: no data (no 1-${one} cell)`));
    } else if (gridHasScaling(grid)) {
      section.append(h('h3', null, `${gridName(grid)}: speedup and scaling efficiency vs 1 ${one}`), scalingTable(grid));
    }
    if (gridHasBaselines(grid)) {
      section.append(h('h3', null, `${gridName(grid)}: median vs baseline`), baselineTable(grid));
    }
    if (gridHasScaling(grid)) {
      section.append(h('h3', null, `${gridName(grid)}: images/s vs ${grid.device_kind === 'cpu' ? 'CPU slots' : 'GPUs'}, with the ideal linear scaling`),
        h('div', { class: 'charts' }, grid.columns.map((column, c) => scalingPlot(grid, column, c, charts))));
    }
    parts.push(section);
  }
  replace(body, parts, h('p', { class: 'note' },
    'Median over repeated jobs; in parentheses the spread (min–max, or the 95% confidence interval of the median ' +
    'with 6 or more runs) and the number of runs. Speedup and efficiency are against the 1-device cell of the same ' +
    'precision and batch. The same figures as benchctl results.'));
  ctx.ready();
  return () => charts.forEach((chart) => chart.destroy());
}
