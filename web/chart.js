// Charts on uPlot (vendored: /vendor/uPlot.iife.min.js defines the global uPlot).
// A chart is one uPlot in a container that follows the container's width; its data is
// replaced whole with set(data). The container carries data-points (the number of x
// values drawn), which the browser tests read to see a live chart grow.

const PALETTE = ['#1f77b4', '#d62728', '#2ca02c', '#9467bd', '#ff7f0e', '#17becf', '#8c564b',
  '#e377c2', '#7f7f7f', '#bcbd22'];

export function color(i) {
  return PALETTE[i % PALETTE.length];
}

// options: { title, time (x in unix seconds), height, xLabel, scales: {name: {label, side, range}},
//   series: [{label, scale, color, dash, width, points (bool), fill}], draw(u) (after drawing),
//   legend (default true) }
export class Chart {
  constructor(container, options) {
    this.container = container;
    this.options = options;
    this.plot = null;
    this.observer = null;
    this.visibility = null;
  }

  width() {
    // The content box: clientWidth less the container's padding.
    const style = getComputedStyle(this.container);
    const padding = parseFloat(style.paddingLeft || 0) + parseFloat(style.paddingRight || 0);
    return Math.max(300, Math.floor((this.container.clientWidth || 800) - padding));
  }

  build(data) {
    const o = this.options;
    const scaleNames = Object.keys(o.scales || {});
    const scales = { x: { time: !!o.time } };
    if (o.xRange) scales.x.range = o.xRange;
    for (const name of scaleNames) {
      scales[name] = { auto: true };
      if (o.scales[name].range) scales[name].range = o.scales[name].range;
    }
    const axes = [{ stroke: '#444', grid: { stroke: '#eee' } }];
    if (o.xLabel) axes[0].label = o.xLabel;
    if (o.xIncrs) axes[0].incrs = o.xIncrs;
    scaleNames.forEach((name, i) => {
      const s = o.scales[name];
      axes.push({
        scale: name, label: s.label, side: s.side === 'right' ? 1 : 3, stroke: '#444',
        grid: { show: i === 0, stroke: '#eee' }, size: 60,
      });
    });
    const series = [{ label: o.xLegend || (o.time ? 'time' : 'x') }];
    for (const [i, s] of (o.series || []).entries()) {
      const entry = { label: s.label, scale: s.scale, stroke: s.color || color(i), width: s.width || 1.5, spanGaps: true };
      if (s.dash) entry.dash = s.dash;
      if (s.fill) entry.fill = s.fill;
      if (s.points !== undefined) entry.points = { show: s.points, size: 7, fill: s.color || color(i) };
      if (s.noLine) entry.paths = () => null;
      series.push(entry);
    }
    const hooks = {};
    if (o.draw) hooks.draw = [(u) => o.draw(u)];
    if (o.drawClear) hooks.drawClear = [(u) => o.drawClear(u)];
    this.plot = new uPlot({
      title: o.title, width: this.width(), height: o.height || 300, scales, axes, series, hooks,
      legend: { show: o.legend !== false }, cursor: { drag: { x: true, y: false } },
    }, data, this.container);
    this.observer = new ResizeObserver(() => {
      if (this.plot) this.plot.setSize({ width: this.width(), height: o.height || 300 });
    });
    this.observer.observe(this.container);
  }

  // data: [xs, ys1, ys2, ...] with null for gaps.
  set(data) {
    this.container.dataset.points = String(data[0].length);
    if (!this.plot) this.build(data);
    else this.plot.setData(data);
  }

  // set(data) once the container comes near the viewport: a page of many charts (the
  // results view draws one per precision × batch of every grid) builds only those seen,
  // so its tables are usable at once. The container keeps the chart's height meanwhile.
  setWhenVisible(data) {
    if (typeof IntersectionObserver === 'undefined') {
      this.set(data);
      return;
    }
    this.container.style.minHeight = `${(this.options.height || 300) + 60}px`;
    this.visibility = new IntersectionObserver((entries) => {
      if (!entries.some((entry) => entry.isIntersecting)) return;
      this.visibility.disconnect();
      this.visibility = null;
      this.set(data);
    }, { rootMargin: '300px' });
    this.visibility.observe(this.container);
  }

  destroy() {
    if (this.visibility) this.visibility.disconnect();
    this.visibility = null;
    if (this.observer) this.observer.disconnect();
    if (this.plot) this.plot.destroy();
    this.plot = null;
  }
}

// Joins series sampled at different x values onto one sorted x axis with nulls in the gaps:
// tables = [[xs, ys], [xs, ys], ...] -> [xs, ys1, ys2, ...].
export function joinSeries(tables) {
  const xs = [...new Set(tables.flatMap((t) => t[0]))].sort((a, b) => a - b);
  const index = new Map(xs.map((x, i) => [x, i]));
  const out = [xs];
  for (const [txs, tys] of tables) {
    const ys = new Array(xs.length).fill(null);
    txs.forEach((x, i) => { ys[index.get(x)] = tys[i]; });
    out.push(ys);
  }
  return out;
}

// Shades [x0, x1] of the plot area (e.g. a job's measured window) with a label.
export function shadeX(u, x0, x1, fill, label) {
  const left = u.valToPos(x0, 'x', true);
  const right = u.valToPos(x1, 'x', true);
  const { top, height } = u.bbox;
  const ctx = u.ctx;
  ctx.save();
  ctx.fillStyle = fill;
  const l = Math.max(left, u.bbox.left);
  const r = Math.min(right, u.bbox.left + u.bbox.width);
  if (r > l) ctx.fillRect(l, top, r - l, height);
  if (label && r > l) {
    ctx.fillStyle = '#555';
    ctx.font = `${12 * devicePixelRatio}px sans-serif`;
    ctx.fillText(label, l + 4 * devicePixelRatio, top + 14 * devicePixelRatio);
  }
  ctx.restore();
}

// A horizontal band between y0 and y1 on `scale` (a baseline's tolerance band).
export function shadeY(u, scale, y0, y1, fill) {
  const a = u.valToPos(y0, scale, true);
  const b = u.valToPos(y1, scale, true);
  const ctx = u.ctx;
  ctx.save();
  ctx.fillStyle = fill;
  const top = Math.max(Math.min(a, b), u.bbox.top);
  const bottom = Math.min(Math.max(a, b), u.bbox.top + u.bbox.height);
  if (bottom > top) ctx.fillRect(u.bbox.left, top, u.bbox.width, bottom - top);
  ctx.restore();
}
