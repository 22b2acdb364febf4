// #/jobs?state=&model=&label=k=v&devices=&precision=&batch_size=&image_size=&page_token=
// The queue (in the scheduler's order, each job's place and why it waits) and the jobs that
// match the filters, a page at a time. The filters live in the URL.
import { getJson } from './api.js';
import { h, replace, table, noData, errorBox, jobLink, hashHref } from './dom.js';
import { formatRate, formatAge, num, precisionName, stateName, has } from './format.js';

const STATES = ['', 'QUEUED', 'RUNNING', 'SUCCEEDED', 'FAILED', 'CANCELLED'];
const PAGE_SIZE = 25;
// Filters the API takes (docs/web-api.md), and those of a results cell's runs (devices,
// precision, batch_size, image_size), which the page applies to a large page itself.
const API_FILTERS = ['state', 'model', 'label', 'name', 'since', 'until'];
const CELL_FILTERS = ['devices', 'precision', 'batch_size', 'image_size', 'device_kind', 'gpu_model'];
const FILTERS = [...API_FILTERS, ...CELL_FILTERS];
const CELL_PAGE_SIZE = 1000;

export function stateBadge(state) {
  const name = stateName(state);
  return h('span', { class: `badge state-${name}` }, name);
}

function labelsText(spec) {
  return Object.entries((spec && spec.labels) || {}).sort().map(([k, v]) => h('span', { class: 'chip' }, `${k}=${v}`));
}

function rate(job) {
  return job.has_throughput && has(job.images_per_second) ? formatRate(num(job.images_per_second)) : noData();
}

function shape(spec) {
  const devices = num(spec.devices) || 0;
  const nodes = num(spec.nodes) || 0;
  return nodes ? `${devices} (${nodes}×${num(spec.devices_per_node) || 0})` : String(devices);
}

function matches(job, params) {
  const spec = job.spec || {};
  if (params.get('devices') && String(num(spec.devices)) !== params.get('devices')) return false;
  if (params.get('batch_size') && String(num(spec.batch_size)) !== params.get('batch_size')) return false;
  if (params.get('image_size') && String(num(spec.image_size)) !== params.get('image_size')) return false;
  if (params.get('precision') && precisionName(spec.precision) !== params.get('precision').toLowerCase()) return false;
  if (params.get('device_kind') && job.device_kind !== params.get('device_kind')) return false;
  if (params.get('gpu_model') && !(job.rank_devices || []).every((r) => r.gpu_name === params.get('gpu_model'))) return false;
  return true;
}

function queueTable(jobs) {
  if (!jobs.length) return h('p', { class: 'note' }, 'The queue is empty.');
  return table(['#', 'job', 'name', 'model', 'devices', 'precision', 'batch', 'waiting', 'why it waits'],
    jobs.map((job) => {
      const spec = job.spec || {};
      return [String(num(job.queue_position) || '-'), jobLink(job.id), spec.name || noData('-'), spec.model || '',
        shape(spec), precisionName(spec.precision), String(num(spec.batch_size) || 0),
        formatAge(job.created_unix_ms), job.reason || noData('-')];
    }), { class: 'queue' });
}

function jobsTable(jobs) {
  return table(['job', 'name', 'state', 'model', 'devices', 'precision', 'batch', 'images/s', 'submitted', 'labels', 'reason'],
    jobs.map((job) => {
      const spec = job.spec || {};
      const progress = stateName(job.state) === 'RUNNING'
        ? ` ${num(job.iterations_done) || 0}/${num(spec.iterations) || 0}` : '';
      return { attrs: { 'data-job': job.id }, cells: [jobLink(job.id), spec.name || noData('-'), [stateBadge(job.state), progress],
        spec.model || '', shape(spec), precisionName(spec.precision), String(num(spec.batch_size) || 0), rate(job),
        `${formatAge(job.created_unix_ms)} ago`, labelsText(spec), job.reason || ''] };
    }), { class: 'jobs' }, (r, c) => (c === 7 ? { class: 'num' } : null));
}

function filterForm(params, ctx) {
  const state = h('select', { name: 'state' }, STATES.map((s) => h('option', { value: s }, s || 'any')));
  state.value = params.get('state') || '';
  const model = h('input', { name: 'model', value: params.get('model') || '', placeholder: 'resnet50', size: 12 });
  const name = h('input', { name: 'name', value: params.get('name') || '', placeholder: 'part of a name', size: 14 });
  const label = h('input', { name: 'label', value: params.getAll('label').join(' '), placeholder: 'k=v k2=v2', size: 18 });
  const form = h('form', { class: 'filters' },
    h('label', null, 'state', state),
    h('label', null, 'model', model),
    h('label', null, 'name', name),
    h('label', null, 'labels', label),
    h('button', { type: 'submit' }, 'Apply'),
    h('a', { href: '#/jobs' }, 'clear'));
  form.addEventListener('submit', (event) => {
    event.preventDefault();
    const next = {};
    for (const key of FILTERS) if (params.get(key) && !['state', 'model', 'label', 'name'].includes(key)) next[key] = params.get(key);
    next.state = state.value;
    next.model = model.value.trim();
    next.name = name.value.trim();
    next.label = label.value.split(/\s+/).filter(Boolean);
    ctx.navigate('#/jobs', next);
  });
  return form;
}

export async function render(main, route, ctx) {
  const params = route.params;
  const queueBox = h('div');
  const jobsBox = h('div');
  const extra = CELL_FILTERS.filter((k) => params.get(k))
    .map((k) => h('span', { class: 'chip' }, `${k}=${params.get(k)}`));
  replace(main, h('h1', null, 'Jobs'), filterForm(params, ctx),
    extra.length ? h('p', { class: 'note' }, 'Only the runs of one results cell: ', extra) : null,
    h('h2', null, 'Queue'), queueBox, h('h2', null, 'Jobs'), jobsBox);

  const cellFilter = CELL_FILTERS.some((k) => params.get(k));
  const query = { page_size: cellFilter ? CELL_PAGE_SIZE : PAGE_SIZE, page_token: params.get('page_token') || '' };
  for (const key of API_FILTERS) {
    if (key === 'label') query.label = params.getAll('label');
    else if (params.get(key)) query[key] = params.get(key);
  }
  const load = () => Promise.allSettled([getJson('/api/v1/queue'), getJson('/api/v1/jobs', query)]).then(([queue, list]) => {
    if (ctx.current()) show(queue, list);
  });
  const show = (queue, list) => {
    if (queue.status === 'fulfilled') replace(queueBox, queueTable(queue.value.jobs || []));
    else replace(queueBox, errorBox('could not load the queue', queue.reason));
    if (list.status === 'fulfilled') {
      const jobs = (list.value.jobs || []).filter((job) => matches(job, params));
      const next = list.value.next_page_token || '';
      const here = Object.fromEntries(FILTERS.filter((k) => k !== 'label' && params.get(k)).map((k) => [k, params.get(k)]));
      here.label = params.getAll('label');
      const pager = h('p', { class: 'pager' },
        params.get('page_token') ? h('a', { href: hashHref('#/jobs', here) }, '« first page') : null,
        next ? h('a', { href: hashHref('#/jobs', { ...here, page_token: next }), class: 'next-page' }, 'next page »') : null);
      replace(jobsBox, jobs.length ? jobsTable(jobs) : h('p', { class: 'note' }, 'No job matches.'), pager);
    } else {
      replace(jobsBox, errorBox('could not load the jobs', list.reason));
    }
  };
  await load();
  ctx.ready();
  // While anything waits or runs, refresh every 5 s (progress, places, states).
  const timer = setInterval(() => {
    if (jobsBox.querySelector('.state-RUNNING, .state-QUEUED') || queueBox.querySelector('table')) load();
  }, 5000);
  return () => clearInterval(timer);
}
