// #/history?model=resnet50&devices=8&precision=amp&batch_size=256&gpu_model=...: one
// configuration's throughput over time (each SUCCEEDED job when it finished) against its
// baseline band (baseline × (1 − lower) … × (1 + upper)), regressions marked. With only some
// of the filters given, one chart per matching configuration. Without a model: the
// configurations that have results, as links. benchd groups the runs by configuration and
// gives each its baseline band (/api/v1/history's configurations); the page matches nothing.
import { getJson } from './api.js';
import { h, replace, table, noData, errorBox, jobLink, hashHref } from './dom.js';
import { formatBaselineComparison, formatRate, formatTime, general, gridName, num, precisionName } from './format.js';
import { Chart, shadeY } from './chart.js';

const PARAMS = ['model', 'devices', 'precision', 'batch_size', 'gpu_model'];

function configTitle(p) {
  const grid = { model: p.model, image_size: num(p.image_size) || 0, device_kind: p.device_kind, gpu_model: p.gpu_model };
  const unit = p.device_kind === 'cpu' ? 'CPU slots' : 'GPUs';
  return `${gridName(grid)}: ${num(p.devices)} ${unit}, ${precisionName(p.precision)}, batch ${num(p.batch_size)}`;
}

function timeOf(p) {
  return (num(p.finished_unix_ms) || num(p.submitted_unix_ms) || 0) / 1000;
}

function configurationChart(points, baseline, charts) {
  const box = h('div', { class: 'chart' });
  const sorted = [...points].sort((a, b) => timeOf(a) - timeOf(b));
  const xs = sorted.map(timeOf);
  const ok = sorted.map((p) => (p.regression ? null : num(p.images_per_second)));
  const bad = sorted.map((p) => (p.regression ? num(p.images_per_second) : null));
  const series = [
    { label: 'images/s', scale: 'ips', color: '#1f5fbf', points: true, width: 1.5 },
    { label: 'REGRESSION', scale: 'ips', color: '#b42318', points: true, noLine: true },
  ];
  const data = [xs, ok, bad];
  if (baseline) {
    const mid = num(baseline.images_per_second);
    series.push({ label: `baseline (job ${baseline.job_id})`, scale: 'ips', color: '#067647', dash: [6, 4] });
    data.push(xs.map(() => mid));
  }
  const lower = baseline ? num(baseline.lower_images_per_second) : null;
  const upper = baseline ? num(baseline.upper_images_per_second) : null;
  const values = [...sorted.map((p) => num(p.images_per_second)), lower, upper].filter((v) => v !== null && v !== undefined);
  const chart = new Chart(box, {
    time: true, height: 260, series,
    scales: { ips: { label: 'images/s', range: () => [Math.min(...values) * 0.9, Math.max(...values) * 1.1] } },
    // At least ten minutes wide, so that runs of one sitting do not fill the axis.
    xRange: xs[xs.length - 1] - xs[0] < 600 ? [xs[0] - 300, xs[xs.length - 1] + 300] : undefined,
    drawClear: (u) => { if (baseline) shadeY(u, 'ips', lower, upper, 'rgba(6, 118, 71, 0.10)'); },
  });
  charts.push(chart);
  queueMicrotask(() => chart.set(data));
  return box;
}

async function configurations(body, ctx) {
  const cells = await getJson('/api/v1/results');
  if (!ctx.current()) return;
  // One results cell per configuration (the results grid's cells are configurations).
  const seen = [];
  for (const cell of cells) {
    if (!(num(cell.runs) > 0)) continue;
    const params = { model: cell.model, devices: num(cell.devices), precision: precisionName(cell.precision),
      batch_size: num(cell.batch_size), gpu_model: cell.gpu_model || '' };
    seen.push([configTitle(cell), hashHref('#/history', params)]);
  }
  replace(body, seen.length
    ? [h('p', { class: 'note' }, 'Pick a configuration (or fill in the form):'),
      h('ul', null, seen.map(([title, href]) => h('li', null, h('a', { href }, title))))]
    : h('p', { class: 'nodata' }, 'no data: no job has succeeded yet.'));
}

export async function render(main, route, ctx) {
  const params = route.params;
  const inputs = {
    model: h('input', { name: 'model', value: params.get('model') || '', placeholder: 'resnet50', size: 10 }),
    devices: h('input', { name: 'devices', value: params.get('devices') || '', placeholder: 'any', size: 4 }),
    precision: h('input', { name: 'precision', value: params.get('precision') || '', placeholder: 'any', size: 5 }),
    batch_size: h('input', { name: 'batch_size', value: params.get('batch_size') || '', placeholder: 'any', size: 5 }),
    gpu_model: h('input', { name: 'gpu_model', value: params.get('gpu_model') || '', placeholder: 'any', size: 18 }),
  };
  const form = h('form', { class: 'filters' },
    h('label', null, 'model', inputs.model), h('label', null, 'devices', inputs.devices),
    h('label', null, 'precision', inputs.precision), h('label', null, 'batch size', inputs.batch_size),
    h('label', null, 'GPU model', inputs.gpu_model), h('button', { type: 'submit' }, 'Show'));
  form.addEventListener('submit', (event) => {
    event.preventDefault();
    ctx.navigate('#/history', Object.fromEntries(PARAMS.map((k) => [k, inputs[k].value.trim()])));
  });
  const body = h('div');
  replace(main, h('h1', null, 'History'), form, body);
  const charts = [];
  try {
    if (!params.get('model')) {
      await configurations(body, ctx);
      ctx.ready();
      return undefined;
    }
    const query = {};
    for (const k of PARAMS) if (params.get(k) !== null) query[k] = params.get(k);
    const answer = await getJson('/api/v1/history', query);
    if (!ctx.current()) return undefined;
    const points = answer.points || [];
    if (!points.length) {
      replace(body, h('p', { class: 'nodata' }, 'no data: no job of this configuration has succeeded yet.'));
      ctx.ready();
      return undefined;
    }
    const byJob = new Map(points.map((p) => [p.job_id, p]));
    const sections = [];
    for (const configuration of answer.configurations || []) {
      const group = configuration.job_ids.map((id) => byJob.get(id)).filter(Boolean);
      const baseline = configuration.baseline;
      const regressions = group.filter((p) => p.regression).length;
      sections.push(h('section', { class: 'history-config' },
        h('h2', null, configTitle(configuration)),
        h('p', { class: 'note' }, baseline
          ? `Baseline ${formatRate(num(baseline.images_per_second))} images/s (job ${baseline.job_id}), band ` +
            `${formatRate(num(baseline.lower_images_per_second))}–${formatRate(num(baseline.upper_images_per_second))} ` +
            `(−${general(num(baseline.lower_tolerance_pct), 6)}% / +${general(num(baseline.upper_tolerance_pct), 6)}%); ` +
            `${regressions} of ${group.length} runs below it (REGRESSION).`
          : `No baseline for this configuration (benchctl baseline JOB sets one); ${group.length} runs.`),
        configurationChart(group, baseline, charts),
        table(['finished', 'job', 'images/s', 'vs baseline'],
          [...group].sort((a, b) => timeOf(b) - timeOf(a)).map((p) => ({
            attrs: { class: p.regression ? 'regression' : null },
            cells: [formatTime(num(p.finished_unix_ms) || num(p.submitted_unix_ms)), jobLink(p.job_id),
              formatRate(num(p.images_per_second)),
              p.baseline && (p.baseline.verdict !== 'BASELINE_VERDICT_UNSPECIFIED' || p.baseline.ratio !== undefined)
                ? h('span', { class: p.regression ? 'flag-bad' : null }, formatBaselineComparison(p.baseline)) : noData('-')],
          })), { class: 'history-runs' }, (r, c) => (c === 2 ? { class: 'num' } : null))));
    }
    replace(body, sections);
  } catch (error) {
    replace(body, errorBox('could not load the history', error));
  }
  ctx.ready();
  return () => charts.forEach((chart) => chart.destroy());
}
