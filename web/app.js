// The page's router. Every view's state is in the URL's hash, so a link reproduces it:
//   #/fleet  #/jobs?state=RUNNING&model=resnet50&label=site=a  #/job/ID
//   #/results?model=resnet50  #/variability?threshold_pct=5  #/compare?a=ID&b=ID
//   #/history?model=resnet50&devices=8&precision=amp&batch_size=256
//   #/screening  #/screening/ID
// A view module exports render(main, route, ctx) and may return a cleanup function (close
// event streams, destroy charts), called before the next view renders.
import { h, replace, errorBox, hashHref } from './dom.js';

// Each view's module is loaded when it is first shown, so a page opens on the modules of
// its own view and starts that view's requests sooner.
const VIEWS = {
  fleet: () => import('./view_fleet.js'),
  jobs: () => import('./view_jobs.js'),
  job: () => import('./view_job.js'),
  results: () => import('./view_results.js'),
  variability: () => import('./view_variability.js'),
  history: () => import('./view_history.js'),
  compare: () => import('./view_compare.js'),
  screening: () => import('./view_screening.js'),
};

export function parseHash(hash) {
  const raw = (hash || '').replace(/^#/, '') || '/fleet';
  const q = raw.indexOf('?');
  const path = q < 0 ? raw : raw.slice(0, q);
  const params = new URLSearchParams(q < 0 ? '' : raw.slice(q + 1));
  const parts = path.split('/').filter(Boolean).map((p) => decodeURIComponent(p));
  return { name: parts[0] || 'fleet', arg: parts.slice(1).join('/'), params };
}

let cleanup = null;
let generation = 0;

function render() {
  const route = parseHash(location.hash);
  const main = document.getElementById('main');
  if (cleanup) {
    try { cleanup(); } catch (error) { console.warn('cleanup', error); }
    cleanup = null;
  }
  const mine = ++generation;
  main.removeAttribute('data-ready');
  main.dataset.view = route.name;
  for (const a of document.querySelectorAll('#nav a')) {
    a.classList.toggle('active', a.dataset.view === route.name || (route.name === 'job' && a.dataset.view === 'jobs'));
  }
  const load = VIEWS[route.name];
  if (!load) {
    replace(main, h('h1', null, 'Not found'), h('p', null, 'No view named ', h('code', null, route.name), '. ',
      h('a', { href: '#/fleet' }, 'Fleet')));
    main.dataset.ready = '1';
    return;
  }
  const ctx = {
    // Marks the view as loaded (the tests wait for main[data-ready]); ignored once the user
    // has moved on to another view.
    ready() { if (mine === generation) main.dataset.ready = '1'; },
    current() { return mine === generation; },
    // Changes the URL (and so the view); replace: no new history entry.
    navigate(path, params, { replace: replaceEntry = false } = {}) {
      const href = hashHref(path, params);
      if (replaceEntry) history_.replaceState(null, '', href);
      else location.hash = href;
      if (replaceEntry) render();
    },
  };
  replace(main, h('p', { class: 'loading' }, 'loading…'));
  load().then((view) => {
    if (mine !== generation) return undefined;
    return view.render(main, route, ctx);
  }).then((fn) => {
    if (typeof fn !== 'function') return;
    if (mine === generation) cleanup = fn;
    else fn();
  }, (error) => {
    if (mine !== generation) return;
    replace(main, errorBox('this view failed', error));
    console.error(error);
    ctx.ready();
  });
}

const history_ = window.history;
window.addEventListener('hashchange', render);
render();
