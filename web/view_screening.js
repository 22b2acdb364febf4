// #/screening: the fleet screenings (`benchctl screen`), newest first, with their job counts;
// #/screening/ID: one screening's verdicts, flagged GPUs first (as the API orders them), a
// verdict per node, and benchctl screen --show's text (rendered by benchd, report/
// screen_view.h, so the page and the terminal say the same).
import { getJson } from './api.js';
import { h, replace, noData, errorBox, table, jobLink, hashHref } from './dom.js';
import { fixed, formatTime, num, precisionName } from './format.js';

function verdictBadge(gpu) {
  const verdict = gpu.verdict || 'ok';
  if (verdict === 'ok') return h('span', { class: 'badge ok' }, 'ok');
  const pct = num(gpu.slow_pct) || 0;
  const text = verdict === 'slow' ? `slow ${pct >= 0 ? '+' : ''}${fixed(pct, 1)} %` : verdict;
  return h('span', { class: 'badge lost' }, text);
}

function vsFleet(gpu) {
  if (gpu.median_step_s === undefined) return noData('-');
  const pct = num(gpu.slow_pct) || 0;
  return `${pct >= 0 ? '+' : ''}${fixed(pct, 1)} %`;
}

function configurationText(c) {
  return `${c.model || '?'} bs ${num(c.batch_size) || 0} ${precisionName(c.precision)} on ${c.gpu_model || c.device_kind || '?'}: ` +
    `${num(c.gpus) || 0} GPUs, fleet median step ${fixed(num(c.fleet_median_step_s), 4)} s, ` +
    `spread ${fixed(num(c.spread_mad_pct), 1)} %, slow above +${fixed(num(c.threshold_pct), 1)} %`;
}

async function renderList(main, ctx) {
  const body = h('div');
  replace(main, h('h1', null, 'Screening'),
    h('p', { class: 'note' }, 'Fleet screenings: one single-GPU job on every GPU at once (benchctl screen), ' +
      'each GPU judged against the fleet median of its configuration.'), body);
  let answer;
  try {
    answer = await getJson('/api/v1/screenings');
  } catch (error) {
    replace(body, errorBox('could not load the screenings', error));
    ctx.ready();
    return;
  }
  if (!ctx.current()) return;
  const screenings = answer.screenings || [];
  if (!screenings.length) {
    replace(body, h('p', { class: 'nodata' }, 'no screenings yet: run benchctl screen --wait.'));
    ctx.ready();
    return;
  }
  replace(body, table(['screening', 'created', 'jobs', 'pending', 'succeeded', 'failed', 'nodes'],
    screenings.map((s) => ({
      cells: [h('a', { href: hashHref(`#/screening/${encodeURIComponent(s.screening_id)}`) }, s.screening_id),
        formatTime(num(s.created_unix_ms)), String(num(s.jobs) || 0), String(num(s.pending) || 0),
        String(num(s.succeeded) || 0), String(num(s.failed) || 0), (s.nodes || []).join(', ')],
    })), { class: 'screenings' }, (r, c) => (c >= 2 && c <= 5 ? { class: 'num' } : null)));
  ctx.ready();
}

async function renderOne(main, id, ctx) {
  const body = h('div');
  replace(main, h('h1', null, `Screening ${id}`), h('p', null, h('a', { href: '#/screening' }, 'all screenings')), body);
  let report;
  try {
    report = await getJson(`/api/v1/screenings/${encodeURIComponent(id)}`);
  } catch (error) {
    replace(body, errorBox(`could not load screening ${id}`, error));
    ctx.ready();
    return;
  }
  if (!ctx.current()) return;
  const gpus = report.gpus || [];
  const flagged = gpus.filter((g) => g.flagged).length;
  const nodes = report.nodes || [];
  const parts = [
    h('p', { class: flagged ? 'flag-bad' : 'note' },
      `${flagged} of ${gpus.length} GPUs flagged on ${nodes.length} nodes` +
      (num(report.pending) ? `; ${num(report.pending)} jobs still queued or running (not judged yet)` : '')),
  ];
  for (const c of report.configurations || []) parts.push(h('p', { class: 'note' }, configurationText(c)));
  if (gpus.length) {
    parts.push(table(['node', 'GPU', 'verdict', 'vs fleet', 'cause', 'evidence', 'job'],
      gpus.map((g) => ({
        attrs: { class: g.flagged ? 'slow' : null },
        cells: [g.node || '-', String(num(g.gpu_index) || 0), verdictBadge(g), vsFleet(g),
          g.failed ? 'job failed' : ((g.cause_descriptions || []).join(', ') || '-'),
          g.failed ? (g.failure_reason || '-') : (g.evidence || '-'), g.job_id ? jobLink(g.job_id) : '-'],
      })), { class: 'screening-gpus' }, (r, c) => (c === 1 || c === 3 ? { class: 'num' } : null)));
  } else {
    parts.push(h('p', { class: 'nodata' }, 'no GPU judged yet.'));
  }
  if (nodes.length) {
    parts.push(h('h2', null, 'Nodes'), table(['node', 'GPUs', 'verdict'], nodes.map((n) => ({
      cells: [n.node, String(num(n.gpus) || 0), n.ok ? h('span', { class: 'badge ok' }, 'ok')
        : h('span', { class: 'badge lost' }, `flagged: GPU ${(n.flagged_gpu_indexes || []).join(', ')}`)],
    })), { class: 'screening-nodes' }));
  }
  parts.push(h('h2', null, 'As benchctl screen --show prints it'), h('pre', { class: 'screening-text' }, report.text || ''));
  replace(body, ...parts);
  ctx.ready();
}

export async function render(main, route, ctx) {
  if (route.arg) return renderOne(main, route.arg, ctx);
  return renderList(main, ctx);
}
