/**
 * The HAL browser's script (docs/conventions.md §4.1), plain ES2020 for the browser, with no dependency. It
 * fetches the JSON of the page's own URL with the token of this tab (sessionStorage) in
 * `Authorization`, and renders it: fields, links as links, embedded entities as a table with the
 * page links, a search box and facets on collections, problem documents, and forms drawn from the
 * HAL-FORMS templates the server sends with collections and entities (one source for every client).
 * A collection or entity page then watches what changes it (the change feed's event stream, read
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
  var SERVER_FIELDS = ['id', 'createdAt', 'updatedAt', '_links', '_embedded', '_templates'];
  var TIME_FIELDS = ['createdAt', 'updatedAt'];
  /** Templates where there are any (collections, entities); HAL elsewhere (the server answers 406 to HAL-FORMS alone there). */
  var ACCEPT = 'application/prs.hal-forms+json, application/hal+json;q=0.9';
  /** Most facets one page asks for (the server takes 8), and the most entities a link field offers. */
  var MAX_FACETS = 8;
  var MAX_CHOICES = 200;
  /** Values of a facet listed at once; the others behind a disclosure. */
  var FACET_SHOWN = 10;

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

  /**
   * Sets a member of an object made here. Defined, not assigned: an entity may hold a member named
   * __proto__ (JSON.parse keeps it as data, as the server does), and assigning one would set the
   * object's prototype instead, which JSON.stringify leaves out of what is sent.
   */
  function put(target, key, value) {
    Object.defineProperty(target, key, { value: value, enumerable: true, writable: true, configurable: true });
  }

  /** A member of an entity's own, never one of Object.prototype (a field named constructor or toString). */
  function own(object, key) { return Object.prototype.hasOwnProperty.call(object, key) ? object[key] : undefined; }

  /**
   * The URL of a path on this server. A path that begins with two slashes (a page opened at
   * //other.example) would be a URL of another host to fetch, which the token would go to.
   */
  function here(path) { return location.origin + '/' + String(path).replace(/^\/+/, ''); }

  /** fetch with the tab's token (a write on the version tagged etag, when given); resolves { status, type, body, headers }. */
  function api(method, url, body, contentType, etag) {
    var headers = { Accept: ACCEPT };
    if (token()) headers.Authorization = 'Bearer ' + token();
    if (body !== undefined) headers['Content-Type'] = contentType || 'application/json';
    if (etag) headers['If-Match'] = etag;
    return fetch(here(url), { method: method, headers: headers, body: body === undefined ? undefined : JSON.stringify(body), cache: 'no-store' })
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
      fetch(here(url), { headers: headers, signal: controller.signal, cache: 'no-store' }).then(function (res) {
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

  /**
   * The resource name and id of a path, below the base path where it begins with it (the server
   * takes a path with or without it, behind a proxy that strips it or not), and /v1.
   */
  function route(path) {
    var below = base !== '' && (path === base || path.indexOf(base + '/') === 0) ? path.slice(base.length) : path;
    var rest = below.split('/').filter(Boolean).map(decodeURIComponent);
    if (rest[0] === 'v1') rest.shift();
    return { name: rest[0], id: rest[1], depth: rest.length };
  }

  function show(value) {
    if (value === null || typeof value !== 'object') return document.createTextNode(value === undefined ? '' : String(value));
    return el('pre', { text: JSON.stringify(value, null, 2) });
  }

  /** Unix seconds as a date a person reads (UTC), the number itself in the tooltip. */
  function timeOf(seconds) {
    var date = new Date(seconds * 1000);
    if (typeof seconds !== 'number' || isNaN(date.getTime())) return show(seconds);
    var iso = date.toISOString();
    return el('time', { datetime: iso, title: String(seconds), text: iso.slice(0, 10) + ' ' + iso.slice(11, 19) + ' UTC' });
  }

  /** A field's value for display: the server's times as dates, anything else as it is. */
  function showField(key, value) {
    return TIME_FIELDS.indexOf(key) !== -1 ? timeOf(value) : show(value);
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
      status === 412 ? el('p', {}, ['It changed since this page was drawn, and nothing was written: ', el('a', { href: location.pathname + location.search, class: 'reload', text: 'reload it' }), ' to see it as it is now.']) : null,
    ]);
  }

  // ---- forms, from the HAL-FORMS templates ----

  /** A select's options: each value as JSON (so that 3 and "3" stay apart), the current one selected. */
  function optionsFor(choices, current, many) {
    var selected = many ? [].concat(current === undefined ? [] : current).map(function (v) { return JSON.stringify(v); }) : [JSON.stringify(current)];
    return choices.map(function (choice) {
      var value = choice !== null && typeof choice === 'object' && 'value' in choice ? choice.value : choice;
      var label = choice !== null && typeof choice === 'object' && 'prompt' in choice ? choice.prompt : String(value);
      return el('option', { value: JSON.stringify(value), text: label, selected: selected.indexOf(JSON.stringify(value)) !== -1 });
    });
  }

  /**
   * A choice among the entities of the collection an x-link names (the template's options.link):
   * the current value at once, the collection's first entities (labelled by name or title) when
   * they arrive.
   */
  function linkSelect(id, prop, value, many) {
    var current = [].concat(value === undefined ? [] : value);
    var select = el('select', { id: id, name: prop.name, 'data-kind': many ? 'links' : 'link', multiple: many, 'data-href': prop.options.link.href },
      // Nothing is chosen for the person: a blank first, unless a value is held and one is required.
      [many || (prop.required && current.length) ? null : el('option', { value: '', text: '' })].concat(current.map(function (v) { return el('option', { value: String(v), text: String(v), selected: true }); })));
    var valueField = prop.options.valueField || 'id';
    var href = prop.options.link.href;
    api('GET', href + (href.indexOf('?') === -1 ? '?' : '&') + 'limit=' + MAX_CHOICES).then(function (r) {
      var embedded = r.body && r.body._embedded ? r.body._embedded : {};
      var list = embedded[Object.keys(embedded)[0]] || [];
      list.forEach(function (entity) {
        var key = String(entity[valueField]);
        var label = (entity.name || entity.title || key) + (entity.name || entity.title ? ' (' + key + ')' : '');
        var known = Array.prototype.find.call(select.options, function (o) { return o.value === key; });
        if (known) known.textContent = label;
        else select.appendChild(el('option', { value: key, text: label }));
      });
      select.setAttribute('data-loaded', String(list.length));
    });
    return select;
  }

  /** The input of one template property (HAL-FORMS: name, prompt, required, type, options, value). */
  function inputFor(prop, value) {
    var name = prop.name;
    var id = 'f-' + name;
    var options = prop.options;
    var many = options !== undefined && options.maxItems !== 1;
    var input;
    if (options && options.link) {
      input = linkSelect(id, prop, value, many);
    } else if (options && options.inline) {
      input = el('select', { id: id, name: name, 'data-kind': many ? 'enum-many' : 'enum', multiple: many },
        [many || prop.required ? null : el('option', { value: '', text: '' })].concat(optionsFor(options.inline, value, many)));
    } else if (prop.type === 'checkbox') {
      input = el('input', { id: id, name: name, type: 'checkbox', 'data-kind': 'boolean', checked: value === true });
    } else if (prop.type === 'number') {
      input = el('input', { id: id, name: name, type: 'number', step: prop.step || 'any', min: prop.min, max: prop.max, 'data-kind': 'number', value: value === undefined ? '' : value });
    } else if (prop.type === 'text') {
      input = el('input', { id: id, name: name, type: 'text', 'data-kind': 'string', placeholder: prop.placeholder, value: value === undefined ? '' : value });
    } else {
      input = el('textarea', { id: id, name: name, 'data-kind': 'json', placeholder: prop.placeholder });
      input.value = value === undefined ? '' : JSON.stringify(value, null, 2);
    }
    var hint = prop.placeholder && prop.type !== 'text' && prop.type !== 'textarea' ? el('span', { class: 'muted', text: ' ' + prop.placeholder }) : null;
    return el('div', { class: 'field', 'data-field': name }, [
      el('label', { for: id }, [(prop.prompt || name) + (prop.required ? ' *' : ''), hint]),
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
      if (kind === 'boolean') { put(out, input.name, input.checked); return; }
      if (kind === 'links' || kind === 'enum-many') {
        var chosen = Array.prototype.filter.call(input.options, function (o) { return o.selected; });
        if (chosen.length) put(out, input.name, chosen.map(function (o) { return kind === 'links' ? o.value : JSON.parse(o.value); }));
        return;
      }
      var raw = input.value;
      if (raw.trim() === '') return;
      if (kind === 'number') put(out, input.name, Number(raw));
      else if (kind === 'string' || kind === 'link') put(out, input.name, raw);
      else {
        try { put(out, input.name, JSON.parse(raw)); } catch (e) { fieldError(form, input.name, 'not valid JSON: ' + e.message); bad = true; }
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

  /**
   * A form from a template: an input per property, holding values (the template's own values
   * where it has them). A template without properties (a resource without a schema) takes the
   * entity as one JSON object.
   */
  function entityForm(template, values, buttons) {
    var props = (template && template.properties) || [];
    var fields;
    if (props.length) {
      fields = props.map(function (prop) { return inputFor(prop, 'value' in prop ? prop.value : own(values, prop.name)); });
    } else {
      var body = {};
      Object.keys(values).forEach(function (k) { if (SERVER_FIELDS.indexOf(k) === -1) put(body, k, values[k]); });
      fields = [inputFor({ name: '_body', prompt: '_body', required: true, type: 'textarea', placeholder: 'the entity as a JSON object' }, Object.keys(values).length ? body : undefined)];
    }
    return el('form', { class: 'entity', novalidate: true }, [el('div', { class: 'form-problem' })].concat(fields, [el('div', { class: 'actions' }, buttons)]));
  }

  /** Sends a form's body as a template says (method, target, content type), on the version tagged etag when given. */
  function submit(template, body, etag) {
    return api(template.method, template.target, body, template.contentType, etag);
  }

  function bodyOf(form) {
    var values = readForm(form);
    if (values === undefined) return undefined;
    return Object.prototype.hasOwnProperty.call(values, '_body') ? values._body : values;
  }

  function isObject(value) { return value !== null && typeof value === 'object' && !Array.isArray(value); }

  /**
   * The JSON merge patch (RFC 7396) that turns before into after: each member changed, a member
   * taken out as null, an object changed in part as a patch of its own (a patch merges objects,
   * so a nested member taken out must be named too).
   */
  function mergePatch(before, after) {
    var patch = {};
    Object.keys(after).forEach(function (k) {
      var was = own(before, k);
      if (JSON.stringify(after[k]) === JSON.stringify(was)) return;
      put(patch, k, isObject(was) && isObject(after[k]) ? mergePatch(was, after[k]) : after[k]);
    });
    Object.keys(before).forEach(function (k) { if (!Object.prototype.hasOwnProperty.call(after, k)) put(patch, k, null); });
    return patch;
  }

  // ---- pages ----

  function renderIndex(doc) {
    main.appendChild(el('h1', { text: 'Collections' }));
    main.appendChild(linkList(doc._links));
  }

  /** The query of this page as pairs, raw (a comma sent as %2C stays one). */
  function queryPairs() {
    return location.search.slice(1).split('&').filter(Boolean).map(function (part) {
      var eq = part.indexOf('=');
      return eq === -1 ? [part, ''] : [part.slice(0, eq), part.slice(eq + 1)];
    });
  }

  function paramName(raw) {
    try { return decodeURIComponent(raw.replace(/\+/g, ' ')); } catch (e) { return raw; }
  }

  /** This page's query with name set to value (or removed when undefined), from page 1. */
  function withParam(name, value) {
    var pairs = queryPairs().filter(function (p) { var n = paramName(p[0]); return n !== name && n !== 'page'; });
    if (value !== undefined) pairs.push([encodeURIComponent(name), encodeURIComponent(value)]);
    return location.pathname + (pairs.length ? '?' + pairs.map(function (p) { return p[0] + '=' + p[1]; }).join('&') : '');
  }

  /** q: a search box over every string of the entities, keeping the other parameters. */
  function searchBox() {
    var current = '';
    queryPairs().forEach(function (p) { if (paramName(p[0]) === 'q') current = paramName(p[1]); });
    var input = el('input', { id: 'q', name: 'q', type: 'search', value: current, placeholder: 'words that must all occur' });
    var form = el('form', { class: 'search', role: 'search' }, [el('label', { for: 'q', text: 'Search' }), input, el('button', { type: 'submit', text: 'Search' })]);
    form.addEventListener('submit', function (e) {
      e.preventDefault();
      var words = input.value.trim();
      location.assign(withParam('q', words === '' ? undefined : words));
    });
    return form;
  }

  /**
   * The fields to count: the template's properties with choices first (enums,
   * links), then booleans and short text; without a template's properties, the scalar fields the
   * page's entities hold. At most MAX_FACETS.
   */
  function facetFields(template, items) {
    var props = (template && template.properties) || [];
    var fields;
    if (props.length) {
      // Numbers are left out: a price has as many values as products.
      var rank = function (p) { return p.options ? 0 : p.type === 'checkbox' ? 1 : p.type === 'text' ? 2 : 9; };
      fields = props.filter(function (p) { return rank(p) < 9; }).sort(function (a, b) { return rank(a) - rank(b); }).map(function (p) { return p.name; });
    } else {
      fields = [];
      items.forEach(function (item) {
        Object.keys(item).forEach(function (key) {
          var v = item[key];
          if (SERVER_FIELDS.indexOf(key) === -1 && fields.indexOf(key) === -1 && (typeof v === 'string' || typeof v === 'boolean' || v === null || Array.isArray(v))) fields.push(key);
        });
      });
    }
    return fields.slice(0, MAX_FACETS);
  }

  /** The facets of this page's query as a sidebar of links with counts; a field whose values are all different is left out (it narrows nothing). */
  function facetSidebar(fields) {
    var aside = el('aside', { class: 'facets', 'aria-label': 'Facets' }, [el('h2', { text: 'Narrow' })]);
    if (!fields.length) return aside;
    // The field names' commas are separators: sent as they are.
    var url = withParam('facets', undefined);
    url += (url.indexOf('?') === -1 ? '?' : '&') + 'facets=' + fields.map(encodeURIComponent).join(',');
    // No prototype: a field named constructor or toString is in it only when the query names it.
    var current = Object.create(null);
    queryPairs().forEach(function (p) { current[paramName(p[0])] = p[1]; });
    api('GET', url).then(function (r) {
      var facets = (r.body && r.body.facets) || {};
      Object.keys(facets).forEach(function (field) {
        var values = facets[field];
        // Mostly values held once or twice (names, descriptions): counting them narrows nothing.
        var middle = values[Math.floor(values.length / 2)];
        if (!values.length || (values.length > 1 && middle.count <= 2 && !(field in current))) return;
        var item = function (v) {
          var label = typeof v.value === 'string' ? v.value : JSON.stringify(v.value);
          return el('li', {}, [el('a', { href: v._links.self.href, class: 'facet-value', 'data-count': String(v.count), text: label }), ' ', el('span', { class: 'count', text: String(v.count) })]);
        };
        var more = values.slice(FACET_SHOWN);
        aside.appendChild(el('section', { 'data-facet': field }, [
          el('h3', { text: field }),
          el('ul', {}, values.slice(0, FACET_SHOWN).map(item)),
          more.length ? el('details', {}, [el('summary', { text: more.length + ' more' }), el('ul', {}, more.map(item))]) : null,
          field in current ? el('a', { href: withParam(field, undefined), class: 'facet-clear', text: 'any ' + field }) : null,
        ]));
      });
      aside.setAttribute('data-loaded', 'true');
    });
    return aside;
  }

  function renderCollection(name, doc) {
    var items = (doc._embedded && doc._embedded[name]) || [];
    var create = doc._templates && doc._templates['default'];
    main.appendChild(el('h1', { text: name }));
    var content = el('div', { class: 'content' });
    main.appendChild(el('div', { class: 'collection' }, [facetSidebar(facetFields(create, items)), content]));
    content.appendChild(searchBox());
    content.appendChild(el('p', { class: 'summary', text: doc.total + ' in all; page ' + doc.page + ' of ' + doc.pages + ', ' + doc.count + ' shown' }));
    content.appendChild(pager(doc._links, doc));
    var columns = ['id'];
    items.forEach(function (item) {
      Object.keys(item).forEach(function (key) { if (columns.indexOf(key) === -1 && key.charAt(0) !== '_' && columns.length < 9) columns.push(key); });
    });
    var rows = items.map(function (item) {
      return el('tr', {}, columns.map(function (col) {
        if (col === 'id') return el('td', {}, [el('a', { href: item._links && item._links.self ? item._links.self.href : '#', class: 'entity-link', text: item.id })]);
        var v = item[col];
        if (TIME_FIELDS.indexOf(col) !== -1) return el('td', { 'data-field': col }, [timeOf(v)]);
        // A field that links elsewhere (docs/relations.md): its value is a link to the entity it names.
        var link = item._links && own(item._links, col);
        if (link && !Array.isArray(link) && typeof v === 'string') return el('td', {}, [el('a', { href: link.href, rel: col, class: 'relation', text: v })]);
        return el('td', { class: typeof v === 'number' ? 'num' : undefined, text: v === undefined ? '' : typeof v === 'object' ? JSON.stringify(v) : String(v) });
      }));
    });
    content.appendChild(el('table', { class: 'entities' }, [el('thead', {}, [el('tr', {}, columns.map(function (c) { return el('th', { text: c }); }))]), el('tbody', {}, rows)]));
    content.appendChild(pager(doc._links, doc));
    if (!create) return;
    content.appendChild(el('h2', { text: 'Create' }));
    var form = entityForm(create, {}, [el('button', { type: 'submit', text: create.title || 'Create' })]);
    form.addEventListener('submit', function (e) {
      e.preventDefault();
      clearErrors(form);
      var body = bodyOf(form);
      if (body === undefined) return;
      submit(create, body).then(function (r) {
        if (r.status === 201) location.assign(r.headers.get('location') || r.body._links.self.href);
        else formProblem(form, r);
      });
    });
    content.appendChild(form);
  }

  function pager(links, doc) {
    var parts = ['first', 'prev', 'next', 'last'].map(function (rel) {
      return links && links[rel] ? el('a', { href: links[rel].href, rel: rel, class: 'page-' + rel, text: rel }) : el('span', { class: 'muted', text: rel });
    });
    parts.splice(2, 0, el('span', { class: 'current', text: 'page ' + doc.page + ' / ' + doc.pages }));
    return el('nav', { class: 'pager' }, parts);
  }

  /**
   * An entity and its forms. Each write names the version shown (etag, If-Match): one that another
   * client changed since is refused (412), never overwritten unseen.
   */
  function renderEntity(name, doc, notice, etag) {
    main.appendChild(el('h1', { text: name + ' ' + doc.id }));
    if (notice) main.appendChild(el('p', { class: 'notice', role: 'status', text: notice }));
    var rows = [];
    Object.keys(doc).forEach(function (key) {
      if (key === '_links' || key === '_embedded' || key === '_templates') return;
      rows.push(el('dt', { text: key }), el('dd', { 'data-field': key }, [showField(key, doc[key])]));
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
    var templates = doc._templates || {};
    var replace = templates['default'];
    var update = templates.update;
    var remove = templates['delete'];
    if (!replace && !update && !remove) return;
    main.appendChild(el('h2', { text: 'Edit' }));
    var form = entityForm(replace || update, doc, [
      update ? el('button', { type: 'submit', name: 'patch', value: 'patch', text: 'Save changes (PATCH)' }) : null,
      replace ? el('button', { type: 'button', class: 'replace', text: 'Replace (PUT)' }) : null,
      remove ? el('button', { type: 'button', class: 'danger delete', text: 'Delete' }) : null,
    ]);
    function write(template, body) {
      clearErrors(form);
      var saved = main.querySelector('.notice');
      if (saved) saved.remove();
      if (body === undefined) return;
      submit(template, body, etag).then(function (r) {
        if (r.status === 200) { main.textContent = ''; renderEntity(name, r.body, 'Saved.', r.headers.get('etag')); }
        else formProblem(form, r);
      });
    }
    form.addEventListener('submit', function (e) {
      e.preventDefault();
      if (!update) return;
      var next = bodyOf(form);
      if (next === undefined) return;
      // What the person changed since the form was drawn, read the same way: a field left as it
      // was is not sent (an empty string, an unset checkbox, a field the form does not show).
      write(update, mergePatch(drawn, next));
    });
    if (replace) form.querySelector('.replace').addEventListener('click', function () { write(replace, bodyOf(form)); });
    if (remove) form.querySelector('.delete').addEventListener('click', function () {
      if (!confirm('Delete ' + name + ' ' + doc.id + '?')) return;
      submit(remove, undefined, etag).then(function (r) {
        if (r.status === 204) location.assign(base + '/' + encodeURIComponent(name));
        else formProblem(form, r);
      });
    });
    main.appendChild(form);
    var drawn = bodyOf(form);
  }

  function renderOther(doc) {
    main.appendChild(el('h1', { text: location.pathname }));
    var rows = [];
    Object.keys(doc || {}).forEach(function (key) {
      if (key !== '_links' && key !== '_templates') rows.push(el('dt', { text: key }), el('dd', {}, [show(doc[key])]));
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
      return Promise.all([api('GET', location.pathname + location.search), feed]);
    }).then(function (results) {
      var res = results[0];
      var feed = results[1];
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
        renderEntity(r.name, doc, undefined, res.headers.get('etag'));
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
    load();
  });
  load();
})();
`;
