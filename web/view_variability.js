// #/variability?threshold_pct=5&model=: every GPU's median step time against the fleet's for
// the same configuration (>1 is slower), slowest first, SLOW past the threshold, as
// `benchctl gpus` prints it; and a node × GPU heatmap of the same figure.
import { getJson } from './api.js';
import { h, replace, noData, errorBox, table } from './dom.js';
import { fixed, general, num } from './format.js';

function nodeOf(gpu) {
  const agent = gpu.agent || '-';
  if (!gpu.hostname || gpu.hostname === gpu.agent) return agent;
  return `${agent}/${gpu.hostname}`;
}

function measured(gpu) {
  return (num(gpu.iterations) || 0) > 0 && (num(gpu.normalized_step_time) || 0) > 0;
}

function p50(p, digits) {
  if (!p || !num(p.count)) return noData();
  return fixed(num(p.p50), digits);
}

function p50Range(p, digits) {
  if (!p || !num(p.count)) return noData();
  return `${fixed(num(p.p50), digits)} (${fixed(num(p.p5), digits)}-${fixed(num(p.p95), digits)})`;
}

// White at the fleet's pace, deeper red the slower, blue when faster.
function heat(value, threshold) {
  if (!(value > 0)) return '#eef1f5';
  const d = value - 1;
  const span = Math.max(threshold * 2, 0.02);
  const t = Math.max(-1, Math.min(1, d / span));
  if (t >= 0) return `rgb(255, ${Math.round(255 - 170 * t)}, ${Math.round(255 - 190 * t)})`;
  return `rgb(${Math.round(255 + 120 * t)}, ${Math.round(255 + 60 * t)}, 255)`;
}

function heatmap(gpus, threshold) {
  const nodes = [...new Set(gpus.map(nodeOf))].sort();
  const indexes = [...new Set(gpus.map((g) => num(g.gpu_index) || 0))].sort((a, b) => a - b);
  const grid = h('div', { class: 'heatmap', style: { gridTemplateColumns: `max-content repeat(${indexes.length}, minmax(70px, auto))` } });
  grid.append(h('div', { class: 'head' }, 'node \\ GPU'));
  for (const i of indexes) grid.append(h('div', { class: 'head' }, `GPU ${i}`));
  for (const node of nodes) {
    grid.append(h('div', { class: 'head', style: { textAlign: 'left' } }, node));
    for (const i of indexes) {
      const gpu = gpus.find((g) => nodeOf(g) === node && (num(g.gpu_index) || 0) === i);
      if (!gpu) {
        grid.append(h('div', { style: { background: '#f6f7f9' } }, noData('-')));
        continue;
      }
      const v = num(gpu.normalized_step_time);
      grid.append(h('div', {
        style: { background: heat(measured(gpu) ? v : 0, threshold) },
        title: `${gpu.gpu_name || ''} ${gpu.gpu_uuid || ''}`,
        class: gpu.outlier ? 'flag-bad' : null,
      }, measured(gpu) ? `${fixed(v, 2)}x${gpu.outlier ? ' SLOW' : ''}` : 'no data'));
    }
  }
  return grid;
}

export async function render(main, route, ctx) {
  const params = route.params;
  const thresholdInput = h('input', { name: 'threshold_pct', value: params.get('threshold_pct') || '', placeholder: '5', size: 4 });
  const model = h('input', { name: 'model', value: params.get('model') || '', placeholder: 'any', size: 12 });
  const form = h('form', { class: 'filters' }, h('label', null, 'SLOW past (% slower)', thresholdInput),
    h('label', null, 'model', model), h('button', { type: 'submit' }, 'Apply'));
  form.addEventListener('submit', (event) => {
    event.preventDefault();
    ctx.navigate('#/variability', { threshold_pct: thresholdInput.value.trim(), model: model.value.trim() });
  });
  const body = h('div');
  replace(main, h('h1', null, 'GPU variability'), form, body);
  let answer;
  try {
    answer = await getJson('/api/v1/variability', { threshold_pct: params.get('threshold_pct') || '', model: params.get('model') || '' });
  } catch (error) {
    replace(body, errorBox('could not load the variability', error));
    ctx.ready();
    return;
  }
  if (!ctx.current()) return;
  const gpus = answer.gpus || [];
  const threshold = num(answer.threshold_pct) > 0 ? num(answer.threshold_pct) : 5;
  if (!gpus.length) {
    replace(body, h('p', { class: 'nodata' }, 'no data: no finished job has run on a GPU yet (only single-GPU jobs on CUDA count).'));
    ctx.ready();
    return;
  }
  const slow = gpus.filter((g) => g.outlier).length;
  replace(body,
    h('p', { class: 'note' }, `STEP TIME: median step time vs the fleet's for the same configuration (>1 is slower); ` +
      `${slow} of ${gpus.length} GPUs SLOW (more than ${general(threshold, 6)}% slower). Single-GPU jobs only.`),
    table(['UUID', 'name', 'node', 'index', 'jobs', 'iterations', 'step time', 'CV', 'SM MHz p50 (p5-p95)', 'power W p50', 'temp °C p50', 'flag'],
      gpus.map((g) => ({
        attrs: { class: g.outlier ? 'slow' : null },
        cells: [h('span', { class: 'mono' }, g.gpu_uuid || '-'), g.gpu_name || '-', nodeOf(g), String(num(g.gpu_index) || 0),
          String(num(g.jobs) || 0), String(num(g.iterations) || 0),
          measured(g) ? `${fixed(num(g.normalized_step_time), 2)}x` : noData(),
          (num(g.iterations) || 0) >= 2 && g.step_time_cv !== undefined ? `${fixed(num(g.step_time_cv) * 100, 1)}%` : noData(),
          p50Range(g.sm_clock_mhz, 0), p50(g.power_w, 1), p50(g.temperature_c, 0),
          g.outlier ? h('span', { class: 'badge lost' }, 'SLOW') : ''],
      })), { class: 'variability' }, (r, c) => (c >= 3 && c <= 10 ? { class: 'num' } : null)),
    h('h2', null, 'Node × GPU'), heatmap(gpus, threshold / 100));
  ctx.ready();
}
