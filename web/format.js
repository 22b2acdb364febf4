// How the figures the views still format themselves read on the page (jobs, job, compare,
// history, variability, fleet): as benchctl prints them. The results grids are not here:
// benchd renders them (GET /api/v1/results/grids, report/grid_view.h) and view_results.js
// only lays them out. Pure functions, no DOM: node's tests import this file too
// (tests/web/format_test.mjs).
//
// benchctl formats with absl::StrFormat("%.1f"), which rounds the double's exact binary value
// and breaks exact ties to even (1.25 -> "1.2", 0.75 -> "0.8"). Number.prototype.toFixed
// breaks ties upward (1.25 -> "1.3"), so fixed() rounds the exact decimal expansion itself.

// The exact decimal expansion of a finite non-negative double: [integer digits, fraction
// digits]. toFixed(100) is exact for every double whose fraction has at most 100 binary
// digits (all >= 2^-47); smaller ones only lose digits far past any rounding point used here.
function exactDigits(a) {
  if (a >= 1e21) return [BigInt(a).toString(), ''];  // an integer: exact
  const text = a.toFixed(100);
  const dot = text.indexOf('.');
  return [text.slice(0, dot), text.slice(dot + 1).replace(/0+$/, '')];
}

// Adds one unit in the last place of a string of decimal digits ("199" -> "200", "9" -> "10").
function incrementDigits(digits) {
  const out = digits.split('');
  let i = out.length - 1;
  while (i >= 0) {
    if (out[i] === '9') {
      out[i] = '0';
      --i;
    } else {
      out[i] = String.fromCharCode(out[i].charCodeAt(0) + 1);
      return out.join('');
    }
  }
  return '1' + out.join('');
}

// Rounds digit string `kept` + `rest` to `kept`, half to even, as glibc and absl do.
function roundHalfEven(kept, rest) {
  if (rest === '' || rest[0] < '5') return kept;
  const tie = rest[0] === '5' && /^5?0*$/.test(rest);
  if (tie) {
    const last = kept.length ? kept.charCodeAt(kept.length - 1) - 48 : 0;
    if (last % 2 === 0) return kept;
  }
  return incrementDigits(kept === '' ? '0' : kept);
}

// printf("%.<digits>f", x).
export function fixed(x, digits) {
  x = Number(x);
  if (Number.isNaN(x)) return 'nan';
  if (!Number.isFinite(x)) return x < 0 ? '-inf' : 'inf';
  const sign = x < 0 || Object.is(x, -0) ? '-' : '';
  const [int, frac] = exactDigits(Math.abs(x));
  const padded = frac.padEnd(digits, '0');
  const all = roundHalfEven(int + padded.slice(0, digits), padded.slice(digits));
  const intLen = all.length - digits;
  const intPart = intLen > 0 ? all.slice(0, intLen) : '0';
  return sign + intPart + (digits > 0 ? '.' + all.slice(intLen) : '');
}

// printf("%.<precision>g", x): significant digits, trailing zeros removed, exponent form
// ("1.235e+05") when the exponent is < -4 or >= precision.
export function general(x, precision) {
  x = Number(x);
  if (Number.isNaN(x)) return 'nan';
  if (!Number.isFinite(x)) return x < 0 ? '-inf' : 'inf';
  const p = precision === 0 ? 1 : precision;
  const sign = x < 0 || Object.is(x, -0) ? '-' : '';
  const a = Math.abs(x);
  if (a === 0) return sign + '0';
  let [int, frac] = exactDigits(a);
  // All significant digits and the decimal exponent of the first one.
  let digits;
  let exponent;
  if (int !== '0') {
    digits = int + frac;
    exponent = int.length - 1;
  } else {
    const lead = frac.search(/[1-9]/);
    digits = frac.slice(lead);
    exponent = -(lead + 1);
  }
  let rounded = roundHalfEven(digits.slice(0, p).padEnd(p, '0'), digits.slice(p));
  if (rounded.length > p) {  // 9.99 -> 10.0
    rounded = rounded.slice(0, p);
    exponent += 1;
  }
  const strip = (text) => (text.includes('.') ? text.replace(/\.?0+$/, '') : text);
  if (exponent < -4 || exponent >= p) {
    const mantissa = strip(rounded[0] + '.' + rounded.slice(1));
    const e = Math.abs(exponent);
    return `${sign}${mantissa}e${exponent < 0 ? '-' : '+'}${e < 10 ? '0' : ''}${e}`;
  }
  let text;
  if (exponent >= 0) {
    const fraction = rounded.slice(exponent + 1);
    text = rounded.slice(0, exponent + 1) + (fraction ? '.' + fraction : '');
  } else {
    text = '0.' + '0'.repeat(-exponent - 1) + rounded;
  }
  return sign + strip(text);
}

// A proto3 JSON double: a number, or "NaN"/"Infinity"/"-Infinity" as strings.
export function num(value) {
  if (value === undefined || value === null) return undefined;
  if (typeof value === 'number') return value;
  if (value === 'NaN') return NaN;
  if (value === 'Infinity') return Infinity;
  if (value === '-Infinity') return -Infinity;
  const n = Number(value);  // int64 fields arrive as strings
  return Number.isNaN(n) ? undefined : n;
}

export function has(value) {
  return value !== undefined && value !== null;
}

// images/s as tables show it: one decimal ("1316.7").
export function formatRate(imagesPerSecond) {
  return fixed(imagesPerSecond, 1);
}

const PRECISION_NUMBERS = { 1: 'PRECISION_FP32', 2: 'PRECISION_AMP', 3: 'PRECISION_TF32', 4: 'PRECISION_BF16' };
const PRECISIONS = {
  PRECISION_FP32: 'fp32',
  PRECISION_AMP: 'amp',
  PRECISION_TF32: 'tf32',
  PRECISION_BF16: 'bf16',
};

function precisionEnum(precision) {
  if (typeof precision === 'number') return PRECISION_NUMBERS[precision] || 'PRECISION_UNSPECIFIED';
  return precision || 'PRECISION_UNSPECIFIED';
}

// "fp32", "amp", ... ; "unspecified" otherwise (common/names.h).
export function precisionName(precision) {
  return PRECISIONS[precisionEnum(precision)] || 'unspecified';
}

// The API's enum name for a user-facing precision ("amp" -> "PRECISION_AMP").
export function precisionEnumOf(name) {
  for (const [key, value] of Object.entries(PRECISIONS)) if (value === String(name).toLowerCase()) return key;
  return '';
}

// "JOB_STATE_RUNNING" -> "RUNNING" (common/names.h spells them so).
export function stateName(state) {
  if (!state) return 'UNSPECIFIED';
  return String(state).replace(/^JOB_STATE_/, '');
}

export function isTerminal(state) {
  return ['SUCCEEDED', 'FAILED', 'CANCELLED'].includes(stateName(state));
}

// "0.93x REGRESSION", "1.01x within", "1.08x ABOVE"; "-" without a baseline.
export function formatBaselineComparison(baseline) {
  baseline = baseline || {};
  const flags = {
    BASELINE_VERDICT_WITHIN: 'within',
    BASELINE_VERDICT_BELOW: 'REGRESSION',
    BASELINE_VERDICT_ABOVE: 'ABOVE',
  };
  const flag = flags[baseline.verdict];
  if (!has(baseline.ratio)) return flag || '-';
  let text = `${fixed(num(baseline.ratio), 2)}x`;
  if (flag) text += ` ${flag}`;
  return text;
}

// "0.93x of 10440.0 images/s (job j-1): REGRESSION (below the lower bound)"; "" without one.
export function formatBaselineVerdict(baseline) {
  baseline = baseline || {};
  const verdicts = {
    BASELINE_VERDICT_WITHIN: 'within bounds',
    BASELINE_VERDICT_BELOW: 'REGRESSION (below the lower bound)',
    BASELINE_VERDICT_ABOVE: 'ABOVE (faster than the upper bound)',
  };
  const verdict = verdicts[baseline.verdict];
  if (!verdict && !has(baseline.ratio)) return '';
  let text = '';
  if (has(baseline.ratio)) text = `${fixed(num(baseline.ratio), 3)}x`;
  if (has(baseline.baseline_images_per_second)) {
    text += `${text ? ' of ' : ''}${formatRate(num(baseline.baseline_images_per_second))} images/s`;
  }
  if (baseline.baseline_job_id) text += `${text ? ' ' : ''}(job ${baseline.baseline_job_id})`;
  if (verdict) text += `${text ? ': ' : ''}${verdict}`;
  return text;
}

// The grid's name: "resnet50 32px (cpu)", "resnet50 224px (cuda, NVIDIA H100 80GB HBM3)".
export function gridName(grid) {
  let title = grid.model || '(no model)';
  if (grid.image_size > 0) title += ` ${grid.image_size}px`;
  const where = [];
  if (grid.device_kind) where.push(grid.device_kind);
  if (grid.gpu_model) where.push(grid.gpu_model);
  if (where.length) title += ` (${where.join(', ')})`;
  return title;
}

// Durations and times for people.
export function formatTime(unixMs) {
  const ms = num(unixMs);
  if (!ms) return 'no data';
  const d = new Date(ms);
  const pad = (n) => String(n).padStart(2, '0');
  return `${d.getUTCFullYear()}-${pad(d.getUTCMonth() + 1)}-${pad(d.getUTCDate())} ` +
      `${pad(d.getUTCHours())}:${pad(d.getUTCMinutes())}:${pad(d.getUTCSeconds())} UTC`;
}

export function formatAge(unixMs, nowMs = Date.now()) {
  const ms = num(unixMs);
  if (!ms) return 'no data';
  let s = Math.max(0, Math.round((nowMs - ms) / 1000));
  if (s < 60) return `${s}s`;
  if (s < 3600) return `${Math.floor(s / 60)}m${String(s % 60).padStart(2, '0')}s`;
  if (s < 86400) return `${Math.floor(s / 3600)}h${String(Math.floor((s % 3600) / 60)).padStart(2, '0')}m`;
  return `${Math.floor(s / 86400)}d${Math.floor((s % 86400) / 3600)}h`;
}

// A figure with its unit, or "no data" when there is none.
export function figure(value, digits, unit = '') {
  const n = num(value);
  if (n === undefined || Number.isNaN(n)) return 'no data';
  return fixed(n, digits) + (unit ? ` ${unit}` : '');
}
