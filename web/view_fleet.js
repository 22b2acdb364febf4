// #/fleet: the agents and their GPUs (or CPU slots), live from /api/v1/fleet/events (one
// `fleet` event a second: the agents and the latest GPU reading of each running rank).
// A disconnected agent is marked LOST. Nothing is estimated: a reading NVML did not give
// reads "no data".
import { getJson, followEvents } from './api.js';
import { h, replace, table, noData, errorBox, jobLink } from './dom.js';
import { figure, formatAge, formatTime, num } from './format.js';

// {"agents": [AgentStatus...], "gpus": [{job_id, rank, node, gpu_index, gpu_uuid,
// time_unix_ns, power_w, sm_clock_mhz, temperature_c, gpu_utilization_pct}...]}
// (server/http/live_streams.h): the latest reading of each running rank.
function readingsOf(event) {
  return event.gpus || [];
}

function agentsOf(event) {
  return event.agents || [];
}

// The latest reading of each GPU, by "agent/index" and by UUID.
function indexReadings(readings) {
  const byKey = new Map();
  for (const r of readings) {
    const sample = r.sample || r;
    const entry = { ...sample, agent: r.node || r.agent || sample.agent || '' };
    if (sample.gpu_uuid) byKey.set(`uuid:${sample.gpu_uuid}`, entry);
    if (entry.agent) byKey.set(`idx:${entry.agent}/${num(sample.gpu_index)}`, entry);
  }
  return byKey;
}

function gpuTable(agent, readings) {
  const gpus = (agent.inventory && agent.inventory.gpus) || [];
  const rows = gpus.map((gpu) => {
    const reading = readings.get(`uuid:${gpu.uuid}`) || readings.get(`idx:${agent.inventory.name}/${num(gpu.index)}`);
    const busy = !!(reading && reading.job_id);
    return {
      attrs: { 'data-gpu': gpu.uuid || String(gpu.index) },
      cells: [
        String(num(gpu.index) || 0),
        gpu.name || noData('-'),
        h('span', { class: `badge busy-${busy ? 'busy' : 'idle'}` }, busy ? 'busy' : 'idle'),
        busy ? [jobLink(reading.job_id), ` rank ${num(reading.rank) || 0}`] : noData('-'),
        reading ? figure(reading.power_w ?? reading.power_average_w, 0, 'W') : noData(),
        reading ? figure(reading.sm_clock_mhz, 0, 'MHz') : noData(),
        reading ? figure(reading.temperature_c, 0, '°C') : noData(),
        reading ? figure(reading.gpu_utilization_pct, 0, '%') : noData(),
      ],
    };
  });
  return table(['GPU', 'name', 'state', 'job', 'power', 'SM clock', 'temperature', 'utilisation'], rows,
    { class: 'gpus' }, (r, c) => (c >= 4 ? { class: 'num' } : null));
}

function agentCard(agent, readings) {
  const inv = agent.inventory || {};
  const connected = !!agent.connected;
  const gpus = inv.gpus || [];
  const labels = Object.entries(inv.labels || {}).sort();
  const versions = Object.entries(inv.versions || {}).sort();
  const total = num(agent.devices_total) || 0;
  const busy = num(agent.devices_busy) || 0;
  return h('section', { class: 'card agent', 'data-agent': inv.name || '' },
    h('h3', null, inv.name || '(unnamed agent)',
      connected ? h('span', { class: 'badge ok' }, 'connected')
        : h('span', { class: 'badge lost', title: `last seen ${formatTime(agent.last_seen_unix_ms)}` },
          `LOST · last seen ${formatAge(agent.last_seen_unix_ms)} ago`)),
    h('dl', { class: 'kv' },
      h('dt', null, 'host'), h('dd', null, inv.hostname || noData('-'), inv.address ? ` (${inv.address})` : ''),
      h('dt', null, 'devices'), h('dd', null, gpus.length ? `${gpus.length} GPUs` : `${num(inv.cpu_slots) || 0} CPU slots`,
        `, ${busy} of ${total} busy`),
      h('dt', null, 'running'), h('dd', null, (agent.running_jobs || []).length
        ? (agent.running_jobs || []).map((id, i) => [i ? ', ' : '', jobLink(id)]) : noData('no job')),
      labels.length ? [h('dt', null, 'labels'), h('dd', null, labels.map(([k, v]) => h('span', { class: 'chip' }, `${k}=${v}`)))] : null,
      versions.length ? [h('dt', null, 'versions'), h('dd', null, versions.map(([k, v]) => h('span', { class: 'chip' }, `${k} ${v}`)))] : null),
    gpus.length ? gpuTable(agent, readings)
      : h('p', { class: 'note' }, 'CPU slots: no GPU telemetry on this node.'));
}

export async function render(main, route, ctx) {
  const summary = h('p', { class: 'note' });
  const status = h('span', { class: 'live stale' }, 'connecting…');
  const list = h('div', { class: 'cards' });
  replace(main, h('h1', null, 'Fleet ', status), summary, list);

  let agents = [];
  let readings = new Map();
  const draw = () => {
    const lost = agents.filter((a) => !a.connected).length;
    let total = 0;
    let busy = 0;
    for (const a of agents) {
      total += num(a.devices_total) || 0;
      busy += num(a.devices_busy) || 0;
    }
    replace(summary, agents.length
      ? `${agents.length} agent${agents.length === 1 ? '' : 's'} (${agents.length - lost} connected` +
        `${lost ? `, ${lost} LOST` : ''}); ${busy} of ${total} devices busy.`
      : 'No agent has registered yet: start bench-agent --controller HOST:PORT on a node.');
    const sorted = [...agents].sort((a, b) => (a.inventory?.name || '').localeCompare(b.inventory?.name || ''));
    replace(list, sorted.map((a) => agentCard(a, readings)));
  };

  try {
    const answer = await getJson('/api/v1/agents');
    agents = answer.agents || [];
    draw();
  } catch (error) {
    replace(list, errorBox('could not load the agents', error));
  }
  ctx.ready();
  if (!ctx.current()) return undefined;

  return followEvents('/api/v1/fleet/events', {
    fleet: (event) => {
      agents = agentsOf(event);
      readings = indexReadings(readingsOf(event));
      status.className = 'live';
      status.textContent = `live · ${new Date().toLocaleTimeString()}`;
      main.dataset.fleetEvents = String((Number(main.dataset.fleetEvents) || 0) + 1);
      draw();
    },
  }, () => {
    status.className = 'live stale';
    status.textContent = 'reconnecting…';
  });
}
