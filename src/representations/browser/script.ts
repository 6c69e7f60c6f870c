/**
 * The HAL browser's script (contract §4b), plain ES2020 for the browser, with no dependency. It
 * fetches the JSON of the page's own URL with the token of this tab (sessionStorage) in
 * `Authorization`, and renders it: fields, links as links, embedded entities as a table with the
 * page links, problem documents, and forms from the resource's schema in `/openapi.json`. A
 * collection or entity page then watches what changes it (the change feed's event stream, read
 * with fetch so that the token goes in `Authorization`, never in a URL) and updates itself.
 *
 * Kept as a string (no template literal inside, no `${`) so that it ships in the build as it is.
 */
export const BROWSER_SCRIPT = String.raw`'use strict';
(function () {
  var base = document.documentElement.getAttribute('data-base') || '';
  var main = document.getElementById('main');
  var TOKEN_KEY = 'halserve.token';
  var PROBLEM = 'application/problem+json';
  var SERVER_FIELDS = ['id', 'createdAt', 'updatedAt', '_links', '_embedded'];
  var schemas;

  function el(tag, attrs, children) {
    var node = document.createElement(tag);
    Object.keys(attrs || {}).forEach(function (name) {
      var value = attrs[name];
      if (value === undefined || value === null || value === false) return;
      if (name === 'text') node.textContent = value;
      else if (name.slice(0, 2) === 'on') node.addEventListener(name.slice(2), value);
      else node.setAttribute(name, value === true ? '' : String(value));
    });
    (children || []).forEach(function (child) {
      if (child === undefined || child === null) return;
      node.appendChild(typeof child === 'string' ? document.createTextNode(child) : child);
    });
    return node;
  }

  function token() { return sessionStorage.getItem(TOKEN_KEY) || ''; }

  /** fetch with the tab's token; resolves { status, type, body, headers }. */
  function api(method, url, body, contentType) {
    var headers = { Accept: 'application/hal+json' };
    if (token()) headers.Authorization = 'Bearer ' + token();
    if (body !== undefined) headers['Content-Type'] = contentType || 'application/json';
    return fetch(url, { method: method, headers: headers, body: body === undefined ? undefined : JSON.stringify(body), cache: 'no-store' })
      .then(function (res) {
        var type = (res.headers.get('content-type') || '').split(';')[0];
        return res.text().then(function (text) {
          var parsed;
          try { parsed = text ? JSON.parse(text) : undefined; } catch (e) { parsed = text; }
          return { status: res.status, type: type, body: parsed, headers: res.headers };
        });
      });
  }

  /**
   * Follows an event stream at url (list, then watch): onEvent(type, event) for each message,
   * reconnecting after its last id when the connection ends. One watch at a time: a new one (the
   * page rendered again) ends the one before.
   */
  var watching;
  function watch(url, onEvent) {
    if (watching) watching.abort();
    var controller = new AbortController();
    watching = controller;
    var lastId;
    function again() { if (!controller.signal.aborted) setTimeout(connect, 2000); }
    function connect() {
      if (controller.signal.aborted) return;
      var headers = { Accept: 'text/event-stream' };
      if (token()) headers.Authorization = 'Bearer ' + token();
      if (lastId) headers['Last-Event-ID'] = lastId;
      fetch(url, { headers: headers, signal: controller.signal, cache: 'no-store' }).then(function (res) {
        if (res.status !== 200 || !res.body) return;
        var reader = res.body.getReader();
        var decoder = new TextDecoder();
        var buffer = '';
        function pump() {
          return reader.read().then(function (chunk) {
            if (chunk.done) { again(); return; }
            buffer += decoder.decode(chunk.value, { stream: true });
            for (var end = buffer.indexOf('\n\n'); end >= 0; end = buffer.indexOf('\n\n')) {
              var fields = {};
              buffer.slice(0, end).split('\n').forEach(function (line) {
                var colon = line.indexOf(': ');
                if (colon > 0) fields[line.slice(0, colon)] = line.slice(colon + 2);
              });
              buffer = buffer.slice(end + 2);
              if (!fields.id) continue;
              lastId = fields.id;
              onEvent(fields.event, JSON.parse(fields.data));
            }
            return pump();
          });
        }
        return pump();
      }).catch(again);
    }
    connect();
  }

  /** Renders the page again soon; not while a form field has the focus (it would lose what is typed). */
  var refreshing;
  function refresh() {
    clearTimeout(refreshing);
    refreshing = setTimeout(function () {
      var active = document.activeElement;
      if (active && active.form && main.contains(active)) { refresh(); return; }
      load();
    }, 100);
  }

  /** The resource name and id of a path below the base path (and /v1). */
  function route(path) {
    var rest = path.slice(base.length).split('/').filter(Boolean).map(decodeURIComponent);
    if (rest[0] === 'v1') rest.shift();
    return { name: rest[0], id: rest[1], depth: rest.length };
  }

  function loadSchemas() {
    if (schemas) return Promise.resolve(schemas);
    return api('GET', base + '/openapi.json').then(function (r) {
      schemas = r.status === 200 && r.body && r.body.components ? r.body.components.schemas : {};
      return schemas;
    }, function () { return {}; });
  }

  function fieldsSchema(name) {
    var schema = schemas && schemas[name + '.Fields'];
    return schema && schema.properties ? schema : undefined;
  }

  function show(value) {
    if (value === null || typeof value !== 'object') return document.createTextNode(value === undefined ? '' : String(value));
    return el('pre', { text: JSON.stringify(value, null, 2) });
  }

  function linkList(links) {
    var items = [];
    Object.keys(links || {}).forEach(function (rel) {
      [].concat(links[rel]).forEach(function (link) {
        if (link && typeof link.href === 'string') items.push(el('li', {}, [el('a', { href: link.href, rel: rel, text: rel }), ' ', el('span', { class: 'muted', text: link.href })]));
      });
    });
    return items.length ? el('ul', { class: 'links' }, items) : el('p', { class: 'muted', text: 'No links.' });
  }

  function crumbs() {
    var nav = document.getElementById('crumbs');
    var r = route(location.pathname);
    nav.textContent = '';
    nav.appendChild(el('a', { href: base + '/', text: '/' }));
    if (r.name) nav.appendChild(el('a', { href: base + '/' + encodeURIComponent(r.name), text: r.name }));
    if (r.id) { nav.appendChild(document.createTextNode(' / ')); nav.appendChild(el('span', { text: r.id })); }
  }

  /** A problem document, shown readably; validation messages are listed too (and put beside fields by the form). */
  function problemBox(problem, status) {
    var doc = problem && typeof problem === 'object' ? problem : { title: 'HTTP ' + status, detail: String(problem || '') };
    var rest = [];
    Object.keys(doc).forEach(function (key) {
      if (['type', 'title', 'status', 'detail', 'validationMessages'].indexOf(key) === -1) rest.push(el('li', {}, [key + ': ', show(doc[key])]));
    });
    var messages = [];
    Object.keys(doc.validationMessages || {}).forEach(function (field) {
      var rules = doc.validationMessages[field];
      Object.keys(rules).forEach(function (rule) { messages.push(el('li', {}, [el('strong', { text: field }), ' ' + rules[rule]])); });
    });
    return el('section', { class: 'problem', role: 'alert' }, [
      el('h2', { text: (doc.status || status) + ' ' + (doc.title || '') }),
      el('p', { class: 'detail', text: doc.detail || '' }),
      messages.length ? el('ul', { class: 'validation' }, messages) : null,
      rest.length ? el('ul', {}, rest) : null,
      status === 401 ? el('p', { text: 'Enter a token above.' }) : null,
    ]);
  }

  // ---- forms, from the schema ----

  function inputFor(name, prop, value, required) {
    var type = Array.isArray(prop.type) ? prop.type.filter(function (t) { return t !== 'null'; })[0] : prop.type;
    var id = 'f-' + name;
    var input;
    if (Array.isArray(prop.enum)) {
      input = el('select', { id: id, name: name, 'data-kind': 'enum' }, [required ? null : el('option', { value: '', text: '' })].concat(prop.enum.map(function (v) {
        return el('option', { value: JSON.stringify(v), text: String(v), selected: value !== undefined && JSON.stringify(v) === JSON.stringify(value) });
      })));
    } else if (type === 'boolean') {
      input = el('input', { id: id, name: name, type: 'checkbox', 'data-kind': 'boolean', checked: value === true });
    } else if (type === 'number' || type === 'integer') {
      input = el('input', { id: id, name: name, type: 'number', step: 'any', 'data-kind': 'number', value: value === undefined ? '' : value });
    } else if (type === 'string') {
      input = el('input', { id: id, name: name, type: 'text', 'data-kind': 'string', value: value === undefined ? '' : value });
    } else {
      input = el('textarea', { id: id, name: name, 'data-kind': 'json' });
      input.value = value === undefined ? '' : JSON.stringify(value, null, 2);
    }
    var hint = prop.description ? el('span', { class: 'muted', text: ' ' + prop.description }) : null;
    return el('div', { class: 'field', 'data-field': name }, [
      el('label', { for: id }, [name + (required ? ' *' : ''), hint]),
      input,
      el('div', { class: 'error', 'aria-live': 'polite' }),
    ]);
  }

  /** The form's values: empty inputs are left out; a JSON field that does not parse is an error beside it. */
  function readForm(form) {
    var out = {};
    var bad = false;
    form.querySelectorAll('[data-kind]').forEach(function (input) {
      var kind = input.getAttribute('data-kind');
      if (kind === 'boolean') { out[input.name] = input.checked; return; }
      var raw = input.value;
      if (raw.trim() === '') return;
      if (kind === 'number') out[input.name] = Number(raw);
      else if (kind === 'string') out[input.name] = raw;
      else {
        try { out[input.name] = JSON.parse(raw); } catch (e) { fieldError(form, input.name, 'not valid JSON: ' + e.message); bad = true; }
      }
    });
    return bad ? undefined : out;
  }

  function clearErrors(form) {
    form.querySelectorAll('.field').forEach(function (f) { f.classList.remove('invalid'); f.querySelector('.error').textContent = ''; });
    var box = form.querySelector('.form-problem');
    if (box) box.textContent = '';
  }

  function fieldError(form, field, message) {
    var name = field.split('.')[0];
    var target = form.querySelector('.field[data-field="' + CSS.escape(name) + '"]');
    if (!target) return false;
    target.classList.add('invalid');
    var error = target.querySelector('.error');
    error.textContent = (error.textContent ? error.textContent + '; ' : '') + (name === field ? '' : field + ': ') + message;
    return true;
  }

  /** A problem answered to a form: the document above it, each validation message beside its field. */
  function formProblem(form, response) {
    var box = form.querySelector('.form-problem');
    box.textContent = '';
    box.appendChild(problemBox(response.body, response.status));
    var messages = response.body && response.body.validationMessages;
    Object.keys(messages || {}).forEach(function (field) {
      Object.keys(messages[field]).forEach(function (rule) { fieldError(form, field, messages[field][rule]); });
    });
  }

  function entityForm(name, values, buttons) {
    var schema = fieldsSchema(name);
    var fields;
    if (schema) {
      var required = schema.required || [];
      fields = Object.keys(schema.properties).map(function (field) { return inputFor(field, schema.properties[field], values[field], required.indexOf(field) !== -1); });
    } else {
      var body = {};
      Object.keys(values).forEach(function (k) { if (SERVER_FIELDS.indexOf(k) === -1) body[k] = values[k]; });
      fields = [inputFor('_body', { description: 'the entity as a JSON object' }, Object.keys(values).length ? body : undefined, true)];
    }
    return el('form', { class: 'entity', novalidate: true }, [el('div', { class: 'form-problem' })].concat(fields, [el('div', { class: 'actions' }, buttons)]));
  }

  function bodyOf(form) {
    var values = readForm(form);
    if (values === undefined) return undefined;
    return Object.prototype.hasOwnProperty.call(values, '_body') ? values._body : values;
  }

  // ---- pages ----

  function renderIndex(doc) {
    main.appendChild(el('h1', { text: 'Collections' }));
    main.appendChild(linkList(doc._links));
  }

  function renderCollection(name, doc) {
    var items = (doc._embedded && doc._embedded[name]) || [];
    main.appendChild(el('h1', { text: name }));
    main.appendChild(el('p', { class: 'summary', text: doc.total + ' in all; page ' + doc.page + ' of ' + doc.pages + ', ' + doc.count + ' shown' }));
    main.appendChild(pager(doc._links, doc));
    var columns = ['id'];
    items.forEach(function (item) {
      Object.keys(item).forEach(function (key) { if (columns.indexOf(key) === -1 && key.charAt(0) !== '_' && columns.length < 9) columns.push(key); });
    });
    var rows = items.map(function (item) {
      return el('tr', {}, columns.map(function (col) {
        if (col === 'id') return el('td', {}, [el('a', { href: item._links && item._links.self ? item._links.self.href : '#', class: 'entity-link', text: item.id })]);
        var v = item[col];
        // A field that links elsewhere (contract §4a): its value is a link to the entity it names.
        var link = item._links && item._links[col];
        if (link && !Array.isArray(link) && typeof v === 'string') return el('td', {}, [el('a', { href: link.href, rel: col, class: 'relation', text: v })]);
        return el('td', { class: typeof v === 'number' ? 'num' : undefined, text: v === undefined ? '' : typeof v === 'object' ? JSON.stringify(v) : String(v) });
      }));
    });
    main.appendChild(el('table', { class: 'entities' }, [el('thead', {}, [el('tr', {}, columns.map(function (c) { return el('th', { text: c }); }))]), el('tbody', {}, rows)]));
    main.appendChild(pager(doc._links, doc));
    main.appendChild(el('h2', { text: 'Create' }));
    var form = entityForm(name, {}, [el('button', { type: 'submit', text: 'Create' })]);
    form.addEventListener('submit', function (e) {
      e.preventDefault();
      clearErrors(form);
      var body = bodyOf(form);
      if (body === undefined) return;
      api('POST', location.pathname, body).then(function (r) {
        if (r.status === 201) location.assign(r.headers.get('location') || r.body._links.self.href);
        else formProblem(form, r);
      });
    });
    main.appendChild(form);
  }

  function pager(links, doc) {
    var parts = ['first', 'prev', 'next', 'last'].map(function (rel) {
      return links && links[rel] ? el('a', { href: links[rel].href, rel: rel, class: 'page-' + rel, text: rel }) : el('span', { class: 'muted', text: rel });
    });
    parts.splice(2, 0, el('span', { class: 'current', text: 'page ' + doc.page + ' / ' + doc.pages }));
    return el('nav', { class: 'pager' }, parts);
  }

  function renderEntity(name, doc, notice) {
    main.appendChild(el('h1', { text: name + ' ' + doc.id }));
    if (notice) main.appendChild(el('p', { class: 'notice', role: 'status', text: notice }));
    var rows = [];
    Object.keys(doc).forEach(function (key) {
      if (key === '_links' || key === '_embedded') return;
      rows.push(el('dt', { text: key }), el('dd', { 'data-field': key }, [show(doc[key])]));
    });
    main.appendChild(el('dl', { class: 'fields' }, rows));
    main.appendChild(el('h2', { text: 'Links' }));
    main.appendChild(linkList(doc._links));
    if (doc._embedded) {
      // What embed asked for: each embedded entity (or page) by its own self link.
      main.appendChild(el('h2', { text: 'Embedded' }));
      var embedded = {};
      Object.keys(doc._embedded).forEach(function (rel) {
        embedded[rel] = [].concat(doc._embedded[rel]).filter(function (e) { return e && e._links; }).map(function (e) { return e._links.self; });
      });
      main.appendChild(linkList(embedded));
    }
    main.appendChild(el('h2', { text: 'Edit' }));
    var form = entityForm(name, doc, [
      el('button', { type: 'submit', name: 'patch', value: 'patch', text: 'Save changes (PATCH)' }),
      el('button', { type: 'button', class: 'replace', text: 'Replace (PUT)' }),
      el('button', { type: 'button', class: 'danger delete', text: 'Delete' }),
    ]);
    var url = location.pathname;
    function write(method, body) {
      clearErrors(form);
      var saved = main.querySelector('.notice');
      if (saved) saved.remove();
      if (body === undefined) return;
      api(method, url, body, method === 'PATCH' ? 'application/merge-patch+json' : 'application/json').then(function (r) {
        if (r.status === 200) { main.textContent = ''; renderEntity(name, r.body, 'Saved.'); }
        else formProblem(form, r);
      });
    }
    form.addEventListener('submit', function (e) {
      e.preventDefault();
      var next = bodyOf(form);
      if (next === undefined) return;
      // A merge patch of what changed; a field emptied in the form is removed (null).
      var patch = {};
      Object.keys(next).forEach(function (k) { if (JSON.stringify(next[k]) !== JSON.stringify(doc[k])) patch[k] = next[k]; });
      Object.keys(doc).forEach(function (k) { if (SERVER_FIELDS.indexOf(k) === -1 && !(k in next) && fieldsSchema(name)) patch[k] = null; });
      write('PATCH', patch);
    });
    form.querySelector('.replace').addEventListener('click', function () { write('PUT', bodyOf(form)); });
    form.querySelector('.delete').addEventListener('click', function () {
      if (!confirm('Delete ' + name + ' ' + doc.id + '?')) return;
      api('DELETE', url).then(function (r) {
        if (r.status === 204) location.assign(base + '/' + encodeURIComponent(name));
        else formProblem(form, r);
      });
    });
    main.appendChild(form);
  }

  function renderOther(doc) {
    main.appendChild(el('h1', { text: location.pathname }));
    var rows = [];
    Object.keys(doc || {}).forEach(function (key) {
      if (key !== '_links') rows.push(el('dt', { text: key }), el('dd', {}, [show(doc[key])]));
    });
    main.appendChild(el('dl', { class: 'fields' }, rows));
    if (doc && doc._links) { main.appendChild(el('h2', { text: 'Links' })); main.appendChild(linkList(doc._links)); }
  }

  function load() {
    crumbs();
    var r = route(location.pathname);
    // An entity page watches its resource's changes from a cursor read before the entity itself.
    var cursor = r.depth === 2 ? api('GET', base + '/changes?since=now&resource=' + encodeURIComponent(r.name)) : Promise.resolve(undefined);
    cursor.then(function (feed) {
      return Promise.all([api('GET', location.pathname + location.search), loadSchemas(), feed]);
    }).then(function (results) {
      var res = results[0];
      var feed = results[2];
      main.textContent = '';
      document.title = (r.name ? r.name + (r.id ? ' ' + r.id : '') : 'index') + ' · halserve';
      if (res.type === PROBLEM || res.status >= 400) { main.appendChild(problemBox(res.body, res.status)); return; }
      var doc = res.body;
      if (r.depth === 0) renderIndex(doc);
      else if (r.depth === 1 && doc && typeof doc.total === 'number') {
        renderCollection(r.name, doc);
        // The page's own changes link: everything after the state it shows.
        if (doc._links && doc._links.changes) watch(doc._links.changes.href, refresh);
      } else if (r.depth === 2 && doc && doc.id !== undefined) {
        renderEntity(r.name, doc);
        if (feed && feed.status === 200 && feed.body && feed.body._links) {
          watch(feed.body._links.next.href, function (type, event) { if (event.id === doc.id) refresh(); });
        }
      } else renderOther(doc);
    }, function (error) {
      main.textContent = '';
      main.appendChild(problemBox({ title: 'Network error', detail: String(error) }, 0));
    });
  }

  var tokenInput = document.getElementById('token');
  tokenInput.value = token();
  document.getElementById('token-form').addEventListener('submit', function (e) {
    e.preventDefault();
    sessionStorage.setItem(TOKEN_KEY, tokenInput.value.trim());
    schemas = undefined;
    load();
  });
  load();
})();
`;
