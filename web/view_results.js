// #/results?model=&gpu_model=&label=k=v&metric=&simulated=true: the results grids as `benchctl results
// [--metric M]` prints them. benchd renders them (GET /api/v1/results/grids, report/grid_view.h:
// every title, header and cell's text is benchctl's); this view only lays them out: per
// (model, device kind, GPU model, image size) the metric's grid, the speedup and scaling
// efficiency table (or its "no 1-device cell" note), the vs-baseline table, and for images/s
// a scaling plot per precision × batch from the cells' figures. Each cell links to its runs
// in the jobs view. simulated=true shows the simulated jobs' grids (bench-sim-train, issue
// 26) instead of the real ones, titled "simulated" and marked; the two never mix.
// A cell whose runs include one with a failing check ends in "!" (benchd's
// text) with the footnote under the grids; "strict" (strict=1) leaves those runs out, as
// benchctl results --strict.
import { getJson } from './api.js';
import { h, replace, noData, errorBox, hashHref } from './dom.js';
import { num, precisionName } from './format.js';
import { Chart, color } from './chart.js';

// The metrics benchctl results --metric takes (report/grid.h ParseGridMetric).
const METRICS = ['images_per_second', 'energy_per_image', 'images_per_watt', 'power', 'sm_clock', 'temperature'];

function runsHref(grid, column, devices) {
  return hashHref('#/jobs', {
    model: grid.model, devices, precision: precisionName(column.precision), batch_size: column.batch_size,
    image_size: grid.image_size || '', device_kind: grid.device_kind, gpu_model: grid.gpu_model,
  });
}

function verdictClass(verdict) {
  if (verdict === 'BASELINE_VERDICT_BELOW') return 'flag-bad';
  if (verdict === 'BASELINE_VERDICT_ABOVE') return 'flag-warn';
  return null;
}

// One metric cell: a link to its runs where there are any; "no data" marked as such.
function metricCell(grid, column, row, item) {
  const cell = item.cell;
  const runs = cell ? (num(cell.runs) || 0) + (num(cell.failed_runs) || 0) + (num(cell.pending_runs) || 0) : 0;
  if (!runs) return item.text === 'no data' ? noData() : item.text;
  return h('a', { href: runsHref(grid, column, row.devices), class: verdictClass(cell.baseline && cell.baseline.verdict), title: 'this cell\'s runs' },
    item.text);
}

function cellContent(grid, table, row, item, c) {
  if (table.kind === 'metric') return metricCell(grid, grid.columns[c], row, item);
  if (table.kind === 'baseline') return h('span', { class: verdictClass(item.verdict) }, item.text);
  return item.text;
}

// The figure behind a cell, for sorting and colouring (data-value).
function cellValue(table, item) {
  const value = table.kind === 'metric' ? item.value : table.kind === 'scaling' ? item.speedup : item.ratio;
  return value === null || value === undefined ? null : String(value);
}

function gridTable(grid, table) {
  return h('table', { class: `grid ${{ metric: 'medians', scaling: 'scaling', baseline: 'baselines' }[table.kind]}`, 'data-grid': grid.name },
    h('thead', null, h('tr', null, table.header.map((text) => h('th', null, text)))),
    h('tbody', null, table.rows.map((row) => h('tr', null, h('td', null, row.header),
      row.cells.map((item, c) => h('td', { 'data-value': cellValue(table, item) }, cellContent(grid, table, row, item, c)))))));
}

// images/s vs devices for one column, with the ideal line (1-device median × devices).
function scalingPlot(grid, medians, column, c, charts) {
  const box = h('div', { class: 'chart' });
  const measuredRow = (row) => row.cells[c].cell && (num(row.cells[c].cell.runs) || 0) > 0;
  const rows = medians.rows.filter(measuredRow);
  const one = rows.find((row) => row.devices === 1);
  const base = one ? num(one.cells[c].cell.median_images_per_second) : null;
  const title = `${grid.name} ${column.header}`;
  if (!rows.length) return h('div', { class: 'chart' }, h('h3', null, title), noData());
  const devicesHeader = medians.header[0];
  const devices = [...new Set([1, ...medians.rows.map((r) => r.devices)])].sort((a, b) => a - b);
  const measured = devices.map((d) => {
    const row = rows.find((r) => r.devices === d);
    return row ? num(row.cells[c].cell.median_images_per_second) : null;
  });
  const ideal = devices.map((d) => (base ? base * d : null));
  const chart = new Chart(box, {
    title, xLabel: devicesHeader, xLegend: devicesHeader, height: 240, legend: true,
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
  const strict = h('input', { type: 'checkbox', name: 'strict', id: 'results-strict', checked: params.get('strict') === '1' });
  const chosen = params.get('metric') || METRICS[0];
  const metric = h('select', { name: 'metric' }, METRICS.map((name) => h('option', { value: name, selected: name === chosen }, name)));
  const simulated = h('input', { type: 'checkbox', name: 'simulated', checked: params.get('simulated') === 'true' });
  const form = h('form', { class: 'filters' }, h('label', null, 'model', model), h('label', null, 'GPU model', gpu),
    h('label', null, 'labels', label), h('label', null, 'metric', metric),
    h('label', { title: 'the simulated jobs\' results (bench-sim-train) instead of the real ones' }, 'simulated', simulated),
    h('label', { title: 'leave out runs whose checks failed (benchctl results --strict)' }, strict, 'strict'),
    h('button', { type: 'submit' }, 'Apply'),
    h('a', { href: '#/results' }, 'clear'));
  form.addEventListener('submit', (event) => {
    event.preventDefault();
    ctx.navigate('#/results', {
      model: model.value.trim(), gpu_model: gpu.value.trim(), label: label.value.split(/\s+/).filter(Boolean),
      metric: metric.value === METRICS[0] ? '' : metric.value, simulated: simulated.checked ? 'true' : '',
      strict: strict.checked ? '1' : '',
    });
  });
  return form;
}

export async function render(main, route, ctx) {
  const params = route.params;
  const body = h('div');
  replace(main, h('h1', null, 'Results'), filterForm(params, ctx), body);
  let view;
  try {
    view = await getJson('/api/v1/results/grids', {
      model: params.get('model') || '', gpu_model: params.get('gpu_model') || '', label: params.getAll('label'),
      since: params.get('since') || '', until: params.get('until') || '', metric: params.get('metric') || '',
      simulated: params.get('simulated') === 'true' ? 'true' : '',
      strict: params.get('strict') === '1' ? '1' : '',
    });
  } catch (error) {
    replace(body, errorBox('could not load the results', error));
    ctx.ready();
    return undefined;
  }
  if (!ctx.current()) return undefined;
  const grids = view.grids || [];
  if (!grids.length) {
    replace(body, h('p', { class: 'nodata', id: 'no-results' }, 'no results yet'));
    ctx.ready();
    return undefined;
  }
  const charts = [];
  const parts = [];
  for (const grid of grids) {
    const section = h('section', { class: grid.simulated ? 'grid-section simulated' : 'grid-section', 'data-grid': grid.name });
    if (grid.simulated) {
      section.append(h('p', { class: 'badge simulated' }, 'simulated: every figure below comes from bench-sim-train, not from a GPU'));
    }
    for (const table of grid.tables) {
      if (table.note) {
        section.append(h('p', { class: 'note grid-note' }, table.note));
      } else {
        section.append(h(table.kind === 'metric' ? 'h2' : 'h3', null, table.title), gridTable(grid, table));
      }
    }
    if (view.metric === 'images_per_second' && grid.tables.some((table) => table.kind === 'scaling')) {
      const medians = grid.tables[0];
      section.append(h('h3', null, `${grid.name}: images/s vs ${medians.header[0]}, with the ideal linear scaling`),
        h('div', { class: 'charts' }, grid.columns.map((column, c) => scalingPlot(grid, medians, column, c, charts))));
    }
    parts.push(section);
  }
  replace(body, parts, view.footnote ? h('p', { class: 'note', id: 'results-footnote' }, view.footnote) : null, h('p', { class: 'note' },
    'Median over repeated jobs; in parentheses the spread (min–max, or the 95% confidence interval of the median ' +
    'with 6 or more runs) and the number of runs. Speedup and efficiency are against the 1-device cell of the same ' +
    'precision and batch. The same figures as benchctl results, rendered by benchd.'));
  ctx.ready();
  return () => charts.forEach((chart) => chart.destroy());
}
