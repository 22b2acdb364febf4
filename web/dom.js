// Building the page's DOM. Every piece of data (job names, labels, node names, reasons)
// goes in as text: h() turns string children into text nodes and never sets innerHTML, so
// a job named <script>alert(1)</script> shows as those characters.

// h('a', {href: '#/job/1', class: 'id'}, 'job-1', otherNode, [more, nodes])
// Attributes: class, title, href, id, data-* and the like are set with setAttribute;
// `on: {click: fn}` adds listeners; `style` takes an object. null/undefined/false are skipped.
export function h(tag, attrs, ...children) {
  const node = document.createElement(tag);
  if (attrs) {
    for (const [key, value] of Object.entries(attrs)) {
      if (value === undefined || value === null || value === false) continue;
      if (key === 'on') {
        for (const [event, fn] of Object.entries(value)) node.addEventListener(event, fn);
      } else if (key === 'style') {
        Object.assign(node.style, value);
      } else if (key === 'value' && 'value' in node) {
        node.value = value;
      } else {
        node.setAttribute(key, value === true ? '' : String(value));
      }
    }
  }
  append(node, children);
  return node;
}

export function append(node, children) {
  for (const child of children.flat(Infinity)) {
    if (child === undefined || child === null || child === false) continue;
    node.append(child instanceof Node ? child : document.createTextNode(String(child)));
  }
  return node;
}

// Replaces every child of `node`.
export function replace(node, ...children) {
  node.replaceChildren();
  return append(node, children);
}

// A table from a header row and rows of cells (strings or nodes); `cellAttrs(r, c)` may add
// attributes to a body cell.
export function table(header, rows, attrs = {}, cellAttrs = null) {
  return h('table', attrs,
    h('thead', null, h('tr', null, header.map((text) => h('th', null, text)))),
    h('tbody', null, rows.map((row, r) =>
      h('tr', Array.isArray(row) ? null : row.attrs,
        (Array.isArray(row) ? row : row.cells).map((cell, c) =>
          h('td', cellAttrs ? cellAttrs(r, c) : null, cell))))));
}

// "no data", marked so that it reads (and tests find it) as the absence of a figure.
export function noData(text = 'no data') {
  return h('span', { class: 'nodata' }, text);
}

export function errorBox(what, error) {
  return h('div', { class: 'error', role: 'alert' }, `${what}: ${error && error.message ? error.message : error}`);
}

export function jobLink(id) {
  return h('a', { href: `#/job/${encodeURIComponent(id)}`, class: 'job-id' }, id);
}

// A hash link: link('#/jobs', {state: 'RUNNING'}, 'running').
export function hashHref(path, params = {}) {
  const query = new URLSearchParams();
  for (const [key, value] of Object.entries(params)) {
    if (Array.isArray(value)) value.forEach((v) => query.append(key, v));
    else if (value !== undefined && value !== null && value !== '') query.set(key, value);
  }
  const text = query.toString();
  return text ? `${path}?${text}` : path;
}
