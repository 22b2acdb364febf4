// #/job/ID: one job. Its status, images/s per rank and in total with each GPU's power and
// SM clock on one time axis (the measured window, after warm-up, shaded), following
// /api/v1/jobs/ID/events while it runs; its environment, devices, history, errors, GPU
// telemetry and baseline; links to its logs as DLLogger, MLLOG or JSON lines. With
// --data-vs-compute its "vs compute" figure as benchctl status words it (benchd renders it:
// /api/v1/jobs/ID/text, report/job_figures.h); once it ended SUCCEEDED or FAILED its
// diagnosis (stragglers, excess time by cause, checks) as benchctl status's "diagnosis:"
// section, rendered by benchd too (report/diagnosis_view.h).
import { getJson, followEvents, apiUrl } from './api.js';
import { h, replace, table, noData, errorBox, jobLink, hashHref } from './dom.js';
import {
  figure, formatRate, formatTime, formatBaselineVerdict, general, has, isTerminal, num, precisionName, stateName,
} from './format.js';
import { Chart, color, shadeX } from './chart.js';
import { stateBadge } from './view_jobs.js';

const CHART_POINTS = 600;

function kv(pairs, wide = false) {
  return h('dl', { class: wide ? 'kv wide' : 'kv' }, pairs.filter(Boolean).map(([k, v]) => [h('dt', null, k), h('dd', null, v)]));
}

function chips(map, sep = '=') {
  const entries = Object.entries(map || {}).sort();
  if (!entries.length) return noData('-');
  return entries.map(([k, v]) => h('span', { class: 'chip' }, `${k}${sep}${v}`));
}

// As benchctl status says it (ctl/views.cc DescribeData): the source (proto JSON:
// DATA_SOURCE_*), its folder on the nodes, the decode threads per rank.
function dataText(spec) {
  const source = String(spec.data || '').replace(/^DATA_SOURCE_/, '').toLowerCase();
  const name = !source || source === 'unspecified' ? 'synthetic' : source;
  const threads = num(spec.loader_threads) || 0;
  if (name === 'synthetic' && !threads) return name;
  const where = spec.data_path ? ` at ${spec.data_path}` : '';
  return `${name}${where}, ${threads ? `${threads} loader thread${threads === 1 ? '' : 's'} per rank` : "bench-train's default loader threads"}`;
}

// figures: /api/v1/jobs/ID/text's answer, or null (not loaded).
function summary(job, figures) {
  const spec = job.spec || {};
  const s = stateName(job.state);
  const ips = job.has_throughput && has(job.images_per_second) ? `${formatRate(num(job.images_per_second))} images/s` : noData();
  // A simulated job's figures (bench-sim-train, issue 26) say so next to their heading.
  const fig = (heading) => (job.simulated ? `${heading} (simulated)` : heading);
  return kv([
    ['state', [stateBadge(job.state), job.reason ? ` ${job.reason}` : '']],
    job.simulated ? ['simulated', h('span', { class: 'badge simulated', id: 'simulated' }, 'every figure of this job comes from bench-sim-train, not from a GPU')] : null,
    s === 'QUEUED' ? ['queue position', String(num(job.queue_position) || '-')] : null,
    ['name', spec.name || noData('-')],
    ['model', `${spec.model || ''}, ${num(spec.image_size) || 0}px images, ${num(job.parameters) ? `${num(job.parameters)} parameters` : 'parameters not known yet'}`],
    ['devices', `${num(spec.devices) || 0}${num(spec.nodes) ? ` (${num(spec.nodes)} nodes × ${num(spec.devices_per_node)})` : ''} ${job.device_kind || ''}`],
    ['data', dataText(spec)],
    ['precision', [precisionName(spec.precision), job.effective_precision ? ` (in effect: ${job.effective_precision})` : '']],
    ['batch size', `${num(spec.batch_size) || 0} per device`],
    ['iterations', `${num(job.iterations_done) || 0} of ${num(spec.iterations) || 0} done, ${num(spec.warmup_iterations) || 0} warm-up`],
    [fig('images/s'), ips],
    spec.data_vs_compute ? [fig('vs compute'), figures && figures.vs_compute ? figures.vs_compute : noData()] : null,
    [fig('energy per image'), has(job.energy_per_image_j) ? `${general(num(job.energy_per_image_j), 4)} J` : noData()],
    [fig('images/s per watt'), has(job.images_per_second_per_watt) ? general(num(job.images_per_second_per_watt), 4) : noData()],
    [fig('baseline'), formatBaselineVerdict(job.baseline) || noData('no baseline for this configuration')],
    ['labels', chips(spec.labels)],
    (spec.allowed_nodes || []).length || Object.keys(spec.node_labels || {}).length
      ? ['constraints', [(spec.allowed_nodes || []).map((n) => h('span', { class: 'chip' }, `node ${n}`)),
        Object.keys(spec.node_labels || {}).length ? chips(spec.node_labels) : null]] : null,
    ['submitted', formatTime(job.created_unix_ms)],
    ['attempt', `${num(job.attempt) || 0}${num(job.requeues) ? `, requeued ${num(job.requeues)}×` : ''}`],
  ], true);
}

function problems(job) {
  const lines = [];
  const s = stateName(job.state);
  if (s === 'FAILED') lines.push(`failed: ${job.reason || 'no reason given'}`);
  if (job.precision_mismatch) lines.push(`precision: ${job.precision_mismatch}`);
  if (num(job.nonfinite_losses)) lines.push(`${num(job.nonfinite_losses)} iterations with a NaN or infinite loss`);
  if (num(job.skipped_steps)) lines.push(`${num(job.skipped_steps)} fp16 loss-scaler steps skipped (of ${num(job.ranks_summarized)} ranks summarised)`);
  if (job.telemetry_note) lines.push(`telemetry: ${job.telemetry_note}`);
  if (!lines.length) return null;
  return h('div', { class: s === 'FAILED' ? 'error' : 'card' }, lines.map((line) => h('div', null, line)));
}

function devicesTable(job) {
  const ranks = job.rank_devices || [];
  if (!ranks.length) return h('p', { class: 'note' }, 'Not placed yet.');
  return table(['rank', 'agent', 'host', 'device', 'GPU', 'UUID', 'precision'], ranks.map((r) => [
    String(num(r.rank) || 0), r.agent || noData('-'), r.hostname || noData('-'), String(num(r.device_index) || 0),
    r.gpu_name || noData('CPU slot'), r.gpu_uuid ? h('span', { class: 'mono' }, r.gpu_uuid) : noData('-'), r.precision || noData('-'),
  ]), { class: 'ranks' });
}

function percentiles(p, digits) {
  if (!p || !num(p.count)) return noData();
  return `${figure(p.p50, digits)} (${figure(p.p5, digits)}-${figure(p.p95, digits)})`;
}

function telemetryTable(job) {
  const gpus = job.gpu_telemetry || [];
  if (!gpus.length) return h('p', { class: 'note' }, job.telemetry_note || 'No GPU telemetry for this job (yet).');
  return table(['rank', 'agent', 'GPU', 'readings', 'energy', 'J/image', 'power W p50 (p5-p95)', 'SM MHz p50 (p5-p95)', '°C p50 (p5-p95)'],
    gpus.map((g) => [String(num(g.rank) || 0), g.agent || '', String(num(g.gpu_index) || 0), String(num(g.samples) || 0),
      figure(g.energy_j, 1, 'J'), has(g.energy_per_image_j) ? general(num(g.energy_per_image_j), 4) : noData(),
      percentiles(g.power_w, 1), percentiles(g.sm_clock_mhz, 0), percentiles(g.temperature_c, 0)]), { class: 'telemetry' });
}

// The job's diagnosis: benchd's text (/text's "diagnosis", benchctl status's section), with
// the failing checks counted from the job's JSON.
function diagnosisBox(job, figures) {
  const d = job.diagnosis;
  if (!d) {
    return h('p', { class: 'note' }, isTerminal(job.state) && stateName(job.state) !== 'CANCELLED'
      ? 'Diagnosing…' : 'A job is diagnosed once it ends (succeeded or failed).');
  }
  const failing = num(d.failing_checks) || 0;
  return h('div', null,
    d.available ? h('p', { class: failing ? 'note flag-bad' : 'note', id: 'job-diagnosis-verdict' },
      failing ? `${failing} failing check${failing === 1 ? '' : 's'}: results --strict leaves this run out.` : 'Every check passed.') : null,
    h('pre', { class: 'diagnosis', id: 'job-diagnosis' }, figures && figures.diagnosis ? figures.diagnosis : (d.note || 'no data')));
}

function historyTable(job) {
  return table(['time', 'state', 'reason'], (job.history || []).map((t) => [formatTime(t.time_unix_ms), stateBadge(t.state), t.reason || '']),
    { class: 'history' });
}

function environment(job) {
  const env = job.environment || {};
  return kv([
    ['versions', chips(env.versions, ' ')],
    ['hosts', (env.hostnames || []).length ? env.hostnames.join(', ') : noData('-')],
  ]);
}

// What the chart shows, gathered from the samples endpoint and the event stream.
class Series {
  constructor() {
    this.iterations = new Map();  // rank -> Map(iteration -> {t, ips, warmup, step})
    this.gpu = new Map();         // rank -> Map(seq or time -> {t, power, sm})
    this.absolute = true;         // the agents sent wall-clock times (else each rank's own clock)
    this.anchor = new Map();      // rank -> wall-clock seconds at its elapsed_s 0
    this.origin = null;           // wall-clock seconds at x = 0
  }

  // x of a rank's point: seconds since the origin (the first rank's start).
  x(rank, elapsed) {
    if (!this.absolute) return elapsed;
    return (this.anchor.get(rank) ?? this.originOr()) + elapsed - this.originOr();
  }

  originOr() {
    if (this.origin === null && this.anchor.size) this.origin = Math.min(...this.anchor.values());
    return this.origin ?? 0;
  }

  // Raw IterationSamples (the event stream) or the samples endpoint's downsampled points
  // ({rank, first_iteration, last_iteration, samples, step_time_s (mean), images,
  // images_per_second, warmup, received_unix_ns of the last}); both keyed by (rank, last
  // iteration), so a point and a raw sample of the same iteration do not both count.
  addSamples(samples) {
    for (const s of samples || []) {
      const rank = num(s.rank) || 0;
      const bucket = s.first_iteration !== undefined;
      const count = bucket ? num(s.samples) || 1 : 1;
      const step = (num(s.step_time_s) || 0) * count;  // the time the point spans
      const images = num(s.images);
      const ips = bucket ? num(s.images_per_second) : images / step;
      if (!(step > 0) || !(ips > 0) || !Number.isFinite(ips)) continue;
      const received = num(s.received_unix_ns) || 0;
      const elapsed = num(s.elapsed_s) || 0;
      if (!received) this.absolute = false;
      // The rank's own clock (elapsed_s) placed on the wall clock: the agent reads a
      // rank's lines in bursts, so its receive times bunch up; the earliest
      // received − elapsed is the closest to when the rank started.
      if (received) this.anchor.set(rank, Math.min(this.anchor.get(rank) ?? Infinity, received / 1e9 - elapsed));
      const t = elapsed;
      const iteration = bucket ? num(s.last_iteration) : num(s.iteration);
      const first = bucket ? num(s.first_iteration) : iteration;
      if (!this.iterations.has(rank)) this.iterations.set(rank, new Map());
      this.iterations.get(rank).set(iteration, { t, ips, warmup: !!s.warmup, step, first, last: iteration });
    }
  }

  addGpu(readings) {
    for (const r of readings || []) {
      const t = (num(r.time_unix_ns) || 0) / 1e9;
      if (!t) continue;
      const rank = num(r.rank) || 0;
      if (!this.gpu.has(rank)) this.gpu.set(rank, new Map());
      const power = num(r.power_w ?? r.power_average_w);
      this.gpu.get(rank).set(String(num(r.seq) || t), { wall: t, power: power ?? null, sm: num(r.sm_clock_mhz) ?? null });
    }
  }

  // [xs, per-rank images/s..., total, per-GPU power..., per-GPU SM clock...] and the labels.
  table(worldSize) {
    const ranks = [...this.iterations.keys()].sort((a, b) => a - b);
    const gpuRanks = this.absolute && this.anchor.size ? [...this.gpu.keys()].sort((a, b) => a - b) : [];
    const origin = this.originOr();
    for (const [rank, m] of this.iterations) for (const p of m.values()) p.x = this.x(rank, p.t);
    for (const m of this.gpu.values()) for (const p of m.values()) p.x = p.wall - origin;
    const cols = [];
    const labels = [];
    for (const rank of ranks) {
      const points = [...this.iterations.get(rank).values()].sort((a, b) => a.x - b.x);
      cols.push(points.map((p) => [p.x, p.ips]));
      labels.push({ label: `rank ${rank} images/s`, scale: 'ips' });
    }
    // Total: the iterations every rank has, at the time the last rank finished it.
    const total = [];
    if (ranks.length > 1 || worldSize === 1) {
      const first = this.iterations.get(ranks[0]) || new Map();
      for (const [iteration, p] of first) {
        let sum = 0;
        let t = p.x;
        let all = ranks.length >= worldSize;
        for (const rank of ranks) {
          const q = this.iterations.get(rank).get(iteration);
          if (!q) { all = false; break; }
          sum += q.ips;
          t = Math.max(t, q.x);
        }
        if (all) total.push([t, sum]);
      }
      total.sort((a, b) => a[0] - b[0]);
    }
    if (ranks.length > 1) {
      cols.push(total);
      labels.push({ label: 'total images/s', scale: 'ips', width: 2.5, color: '#111' });
    }
    for (const rank of gpuRanks) {
      cols.push([...this.gpu.get(rank).values()].filter((p) => p.power !== null).map((p) => [p.x, p.power]));
      labels.push({ label: `GPU of rank ${rank} W`, scale: 'W', dash: [6, 3], points: false });
    }
    for (const rank of gpuRanks) {
      cols.push([...this.gpu.get(rank).values()].filter((p) => p.sm !== null).map((p) => [p.x, p.sm]));
      labels.push({ label: `GPU of rank ${rank} MHz`, scale: 'MHz', dash: [2, 3], points: false });
    }
    const xs = [...new Set(cols.flatMap((c) => c.map((p) => p[0])))].sort((a, b) => a - b);
    const index = new Map(xs.map((x, i) => [x, i]));
    const data = [xs];
    for (const c of cols) {
      const ys = new Array(xs.length).fill(null);
      for (const [x, y] of c) ys[index.get(x)] = y;
      data.push(ys);
    }
    return { data, labels, count: [...this.iterations.values()].reduce((n, m) => n + m.size, 0) };
  }

  // The measured window: from the start of the first non-warm-up iteration to the end of the
  // last one, over all ranks; null before one is stored.
  window() {
    let start = Infinity;
    let end = -Infinity;
    let first = Infinity;
    let last = -Infinity;
    for (const [rank, m] of this.iterations) {
      for (const p of m.values()) {
        if (p.warmup) continue;
        const x = this.x(rank, p.t);
        start = Math.min(start, x - p.step);
        end = Math.max(end, x);
        first = Math.min(first, p.first);
        last = Math.max(last, p.last);
      }
    }
    return Number.isFinite(start) ? { start, end, first, last } : null;
  }
}

function samplesOf(answer) {
  if (Array.isArray(answer)) return answer;
  return answer.points || answer.samples || [];
}

function gpuOf(answer) {
  if (!answer || Array.isArray(answer)) return [];
  return answer.gpu_samples || answer.gpu || [];
}

export async function render(main, route, ctx) {
  const id = route.arg;
  let job;
  try {
    job = await getJson(`/api/v1/jobs/${encodeURIComponent(id)}`);
  } catch (error) {
    replace(main, h('h1', null, 'Job ', h('span', { class: 'mono' }, id)), errorBox('could not load the job', error));
    ctx.ready();
    return undefined;
  }
  if (!ctx.current()) return undefined;

  const title = h('h1', null);
  const live = h('span', { class: 'live', hidden: true });
  const summaryBox = h('div', { class: 'card' });
  const problemsBox = h('div');
  const chartBox = h('div', { class: 'chart', id: 'job-chart' });
  const chartNote = h('p', { class: 'note' });
  const devicesBox = h('div');
  const telemetryBox = h('div');
  const envBox = h('div');
  const diagnosisBoxEl = h('div');
  const historyBox = h('div');
  const logs = h('p', { class: 'downloads' }, 'Logs: ', ['dllogger', 'mllog', 'jsonl'].map((format) =>
    h('a', { href: apiUrl(`/api/v1/jobs/${encodeURIComponent(id)}/logs`, { format }), download: `${id}.${format === 'jsonl' ? 'jsonl' : format + '.log'}` },
      { dllogger: 'DLLogger', mllog: 'MLPerf MLLOG', jsonl: 'JSON lines' }[format])),
  ' · ', h('a', { href: hashHref('#/compare', { a: id }) }, 'compare with…'));

  // The job's figures benchd words (data vs compute, the diagnosis), read again with the job.
  let figures = null;
  const loadFigures = async () => {
    if (!job.spec?.data_vs_compute && !job.diagnosis) return;
    try {
      figures = await getJson(`/api/v1/jobs/${encodeURIComponent(id)}/text`);
    } catch (error) {
      figures = null;
    }
  };
  const reloadFigures = () => loadFigures().then(() => { if (ctx.current()) drawStatus(); });

  const series = new Series();
  let chart = null;
  let window_ = null;
  const drawChart = () => {
    const { data, labels, count } = series.table(num(job.spec?.devices) || 1);
    window_ = series.window();
    chartBox.dataset.iterations = String(count);
    if (data[0].length === 0) {
      chartBox.dataset.points = '0';
      replace(chartNote, stateName(job.state) === 'QUEUED' ? 'No iteration yet: the job is queued.' : 'no data: no iteration stored yet.');
      return;
    }
    if (chart && chart.options.series.length !== labels.length) {
      chart.destroy();
      chartBox.replaceChildren();
      chart = null;
    }
    if (!chart) {
      const scales = { ips: { label: 'images/s' } };
      if (labels.some((l) => l.scale === 'W')) scales.W = { label: 'W', side: 'right' };
      if (labels.some((l) => l.scale === 'MHz')) scales.MHz = { label: 'MHz', side: 'right' };
      const origin = series.originOr();
      chart = new Chart(chartBox, {
        time: false, xLegend: 's',
        xLabel: series.absolute && origin ? `seconds since ${formatTime(origin * 1000)} (the first rank's start)` : 'seconds since each rank started',
        height: 320, scales,
        series: labels.map((l, i) => ({ ...l, color: l.color || color(i) })),
        drawClear: (u) => {
          if (window_) shadeX(u, window_.start, window_.end, 'rgba(31, 95, 191, 0.08)', 'measured window');
        },
      });
    }
    chart.set(data);
    replace(chartNote, window_
      ? `Shaded: the measured window, iterations ${window_.first}–${window_.last} (warm-up excluded from throughput).`
      : 'Warm-up only so far: the measured window starts after it.',
    series.absolute ? '' : ' The agents sent no wall-clock times, so each rank is drawn on its own clock and GPU readings are left out.');
  };

  const drawStatus = () => {
    replace(title, 'Job ', h('span', { class: 'mono' }, job.id), ' ', job.spec?.name ? h('span', { class: 'job-name' }, job.spec.name) : '',
      job.simulated ? [' ', h('span', { class: 'badge simulated' }, 'simulated')] : '');
    replace(summaryBox, summary(job, figures));
    replace(problemsBox, problems(job));
    replace(devicesBox, devicesTable(job));
    replace(telemetryBox, telemetryTable(job));
    replace(envBox, environment(job));
    replace(diagnosisBoxEl, diagnosisBox(job, figures));
    replace(historyBox, historyTable(job));
  };

  replace(main, h('div', { class: 'title-row' }, title, live), summaryBox, problemsBox,
    h('h2', null, 'Throughput, power and SM clock'), chartBox, chartNote, logs,
    h('h2', null, 'Diagnosis'), diagnosisBoxEl,
    h('h2', null, 'Devices'), devicesBox, h('h2', null, 'GPU telemetry (measured window)'), telemetryBox,
    h('h2', null, 'Environment'), envBox, h('h2', null, 'History'), historyBox);
  drawStatus();

  try {
    const answer = await getJson(`/api/v1/jobs/${encodeURIComponent(id)}/samples`, { points: CHART_POINTS });
    series.addSamples(samplesOf(answer));
    series.addGpu(gpuOf(answer));
    if (answer && answer.job) job = answer.job;
  } catch (error) {
    replace(chartNote, errorBox('could not load the samples', error));
  }
  await loadFigures();
  if (!ctx.current()) return undefined;
  drawStatus();
  drawChart();
  ctx.ready();

  const cleanupChart = () => { if (chart) chart.destroy(); };
  // benchd diagnoses a job just after it ends: read the job again until it has one.
  let diagnosisTries = 0;
  const awaitDiagnosis = () => {
    if (job.diagnosis || !ctx.current() || ++diagnosisTries > 30 || stateName(job.state) === 'CANCELLED') return;
    setTimeout(() => getJson(`/api/v1/jobs/${encodeURIComponent(id)}`).then((status) => {
      if (!ctx.current()) return;
      job = status;
      if (job.diagnosis) reloadFigures(); else awaitDiagnosis();
    }, () => awaitDiagnosis()), 1000);
  };
  if (isTerminal(job.state)) {
    awaitDiagnosis();
    return cleanupChart;
  }

  live.hidden = false;
  live.textContent = 'live';
  // The stream sends the job on changes of state; progress, parameters and the like are
  // read again at most every 3 s while samples arrive.
  let lastRefresh = Date.now();
  const refreshStatus = () => {
    if (Date.now() - lastRefresh < 3000) return;
    lastRefresh = Date.now();
    getJson(`/api/v1/jobs/${encodeURIComponent(id)}`).then((status) => {
      if (ctx.current() && !isTerminal(job.state)) {
        job = status;
        drawStatus();
        reloadFigures();
      }
    }, () => {});
  };
  let close = null;
  close = followEvents(`/api/v1/jobs/${encodeURIComponent(id)}/events`, {
    job: (status) => {
      job = status;
      drawStatus();
      if (isTerminal(job.state)) {
        // The stream ends after this event; do not let EventSource reconnect.
        close();
        live.className = 'live stale';
        live.textContent = 'ended';
        reloadFigures();
        awaitDiagnosis();
        // The final figures and the complete samples.
        getJson(`/api/v1/jobs/${encodeURIComponent(id)}/samples`, { points: CHART_POINTS }).then((answer) => {
          if (!ctx.current()) return;
          series.addSamples(samplesOf(answer));
          series.addGpu(gpuOf(answer));
          drawChart();
        }, () => {});
      }
    },
    samples: (samples) => {
      series.addSamples(Array.isArray(samples) ? samples : samplesOf(samples));
      drawChart();
      refreshStatus();
    },
    gpu: (readings) => { series.addGpu(Array.isArray(readings) ? readings : gpuOf(readings)); drawChart(); },
  }, () => {
    if (!isTerminal(job.state)) { live.className = 'live stale'; live.textContent = 'reconnecting…'; }
  });
  return () => { close(); cleanupChart(); };
}
