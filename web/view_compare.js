// #/compare?a=JOB&b=JOB: two jobs side by side, as `benchctl compare` prints them
// (report/compare.cc): state, spec, labels, images/s, energy, baseline verdicts, every
// version of the environment, hosts and each rank's device; the lines that differ marked.
import { getJson } from './api.js';
import { h, replace, errorBox, jobLink } from './dom.js';
import { fixed, formatBaselineVerdict, formatRate, general, has, num, precisionName, stateName } from './format.js';

function orDash(text) {
  return text ? String(text) : '-';
}

function labels(spec) {
  const entries = Object.entries((spec && spec.labels) || {}).sort(([a], [b]) => (a < b ? -1 : a > b ? 1 : 0));
  return entries.length ? entries.map(([k, v]) => `${k}=${v}`).join(', ') : '-';
}

function rate(job) {
  return job.has_throughput && has(job.images_per_second) ? formatRate(num(job.images_per_second)) : 'no data';
}

function energy(job) {
  return has(job.energy_per_image_j) ? `${general(num(job.energy_per_image_j), 4)} J` : 'no data';
}

function rankText(rank) {
  let node = orDash(rank.agent);
  if (rank.hostname && rank.hostname !== rank.agent) node += `/${rank.hostname}`;
  let text = `${node} #${num(rank.device_index) || 0}`;
  if (rank.gpu_name) text += ` ${rank.gpu_name}`;
  if (rank.gpu_uuid) text += ` ${rank.gpu_uuid}`;
  return text;
}

// report/compare.cc Lines(): [field, a, b, compared].
export function compareLines(a, b) {
  const lines = [['job', a.id, b.id, false]];
  const add = (field, x, y) => lines.push([field, x, y, true]);
  const sa = a.spec || {};
  const sb = b.spec || {};
  const int = (v) => String(num(v) || 0);
  add('state', stateName(a.state), stateName(b.state));
  add('model', sa.model || '', sb.model || '');
  add('devices', int(sa.devices), int(sb.devices));
  add('device kind', orDash(a.device_kind), orDash(b.device_kind));
  add('precision', precisionName(sa.precision), precisionName(sb.precision));
  add('batch size', int(sa.batch_size), int(sb.batch_size));
  add('iterations', int(sa.iterations), int(sb.iterations));
  add('warm-up', int(sa.warmup_iterations), int(sb.warmup_iterations));
  add('image size', int(sa.image_size), int(sb.image_size));
  add('name', orDash(sa.name), orDash(sb.name));
  add('labels', labels(sa), labels(sb));
  add('images/s', rate(a), rate(b));
  add('energy/image', energy(a), energy(b));
  add('baseline', formatBaselineVerdict(a.baseline) || '-', formatBaselineVerdict(b.baseline) || '-');
  const va = (a.environment && a.environment.versions) || {};
  const vb = (b.environment && b.environment.versions) || {};
  for (const key of [...new Set([...Object.keys(va), ...Object.keys(vb)])].sort()) {
    add(`version ${key}`, key in va ? va[key] : '-', key in vb ? vb[key] : '-');
  }
  const hosts = (job) => ((job.environment && job.environment.hostnames) || []).join(', ') || '-';
  add('hosts', hosts(a), hosts(b));
  const ranks = new Map();
  for (const r of a.rank_devices || []) ranks.set(num(r.rank) || 0, [rankText(r), ranks.get(num(r.rank) || 0)?.[1]]);
  for (const r of b.rank_devices || []) ranks.set(num(r.rank) || 0, [ranks.get(num(r.rank) || 0)?.[0], rankText(r)]);
  for (const rank of [...ranks.keys()].sort((x, y) => x - y)) {
    const [x, y] = ranks.get(rank);
    add(`rank ${rank}`, orDash(x), orDash(y));
  }
  return lines;
}

export async function render(main, route, ctx) {
  const params = route.params;
  const a = h('input', { name: 'a', value: params.get('a') || '', placeholder: 'job A', size: 24 });
  const b = h('input', { name: 'b', value: params.get('b') || '', placeholder: 'job B', size: 24 });
  const form = h('form', { class: 'filters' }, h('label', null, 'A', a), h('label', null, 'B', b), h('button', { type: 'submit' }, 'Compare'));
  form.addEventListener('submit', (event) => {
    event.preventDefault();
    ctx.navigate('#/compare', { a: a.value.trim(), b: b.value.trim() });
  });
  const body = h('div');
  replace(main, h('h1', null, 'Compare two jobs'), form, body);
  if (!params.get('a') || !params.get('b')) {
    replace(body, h('p', { class: 'note' }, 'Name two jobs (their ids, as the jobs view lists them).'));
    ctx.ready();
    return;
  }
  let answer;
  try {
    answer = await getJson('/api/v1/compare', { a: params.get('a'), b: params.get('b') });
  } catch (error) {
    replace(body, errorBox('could not compare', error));
    ctx.ready();
    return;
  }
  if (!ctx.current()) return;
  const lines = compareLines(answer.a, answer.b);
  const differing = lines.filter(([, x, y, compared]) => compared && x !== y).length;
  const ratio = has(answer.throughput_ratio) ? num(answer.throughput_ratio) : null;
  const missing = [];
  if (rate(answer.a) === 'no data') missing.push(`A (${answer.a.id})`);
  if (rate(answer.b) === 'no data') missing.push(`B (${answer.b.id})`);
  const sign = (x) => (x < 0 || Object.is(x, -0) ? '' : '+');
  const ratioText = ratio !== null
    ? `throughput B/A: ${fixed(ratio, 3)}x (${sign((ratio - 1) * 100)}${fixed((ratio - 1) * 100, 1)}%)`
    : `throughput B/A: no data (${missing.join(' and ')}${missing.length === 1 ? ' has' : ' have'} no throughput)`;
  replace(body,
    h('table', { class: 'compare' },
      h('thead', null, h('tr', null, h('th', null, ''), h('th', null, 'field'), h('th', null, 'A'), h('th', null, 'B'))),
      h('tbody', null, lines.map(([field, x, y, compared]) => {
        const differs = compared && x !== y;
        return h('tr', { class: differs ? 'diff' : null, 'data-field': field }, h('td', null, differs ? '*' : ''), h('td', null, field),
          h('td', null, field === 'job' ? jobLink(x) : x), h('td', null, field === 'job' ? jobLink(y) : y));
      }))),
    h('p', { class: 'ratio' }, ratioText),
    h('p', { class: 'note' }, differing === 0 ? 'no differences' : `* marks the ${differing} ${differing === 1 ? 'line' : 'lines'} that differ`));
  ctx.ready();
}
