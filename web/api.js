// benchd's JSON API (docs/web-api.md) and its event streams, as the page uses them.
import { h } from './dom.js';

export class ApiError extends Error {
  constructor(status, code, message) {
    super(message || `HTTP ${status}`);
    this.status = status;
    this.code = code;
  }
}

export function apiUrl(path, params = {}) {
  const query = new URLSearchParams();
  for (const [key, value] of Object.entries(params)) {
    if (Array.isArray(value)) value.forEach((v) => v !== '' && query.append(key, v));
    else if (value !== undefined && value !== null && value !== '') query.set(key, value);
  }
  const text = query.toString();
  return text ? `${path}?${text}` : path;
}

// GET a JSON answer; throws ApiError with the API's {"error":{"code","message"}}.
export async function getJson(path, params = {}, options = {}) {
  let response;
  try {
    response = await fetch(apiUrl(path, params), { headers: { Accept: 'application/json' }, signal: options.signal });
  } catch (error) {
    if (error.name === 'AbortError') throw error;
    throw new ApiError(0, 'UNAVAILABLE', `benchd did not answer (${error.message})`);
  }
  const text = await response.text();
  let body = null;
  try {
    body = text ? JSON.parse(text) : null;
  } catch (error) {
    throw new ApiError(response.status, 'INTERNAL', `not JSON from ${path}`);
  }
  if (!response.ok) {
    const e = body && body.error ? body.error : {};
    if (response.status === 401) askForToken(e.message || 'benchd wants a credential');
    throw new ApiError(response.status, e.code || String(response.status), e.message || response.statusText);
  }
  return body;
}

// Follows a server-sent event stream: handlers maps event names to functions of the parsed
// JSON data. Returns close(). The browser reconnects by itself after a dropped connection;
// onError (optional) hears of it.
export function followEvents(path, handlers, onError) {
  const source = new EventSource(path);
  for (const [event, fn] of Object.entries(handlers)) {
    source.addEventListener(event, (message) => {
      let data;
      try {
        data = JSON.parse(message.data);
      } catch (error) {
        return;
      }
      fn(data);
    });
  }
  if (onError) source.onerror = () => onError(source.readyState);
  return () => source.close();
}

// With security on, benchd answers the API with 401 until the page presents a credential
// that may read (docs/security.md). The page asks for a token once and keeps it in the
// bench_token cookie, which benchd reads: a browser's EventSource cannot send an
// Authorization header. (A client certificate the browser holds works without this.)
export function askForToken(message) {
  if (document.getElementById('token-form')) return;
  const input = h('input', { type: 'password', id: 'token-input', autocomplete: 'off', size: 40 });
  const form = h('form', { id: 'token-form', class: 'error', role: 'alert' },
    `${message}. `,
    h('label', { for: 'token-input' }, 'Token (view role or above): '), input, ' ',
    h('button', { type: 'submit' }, 'Use token'));
  form.addEventListener('submit', (event) => {
    event.preventDefault();
    const secure = location.protocol === 'https:' ? '; Secure' : '';
    document.cookie = `bench_token=${encodeURIComponent(input.value.trim())}; path=/; SameSite=Strict${secure}`;
    location.reload();
  });
  document.body.prepend(form);
}
