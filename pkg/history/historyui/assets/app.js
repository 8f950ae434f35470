// kubediff's timeline page: a client of the history API (docs/history.md).
// Every value from the cluster goes into the page as text, never as HTML.
"use strict";

const params = new URLSearchParams(location.search);
// Of a kubediff watching several clusters, the one this page shows: every
// call names it, and the token typed for it is kept for it alone.
const cluster = params.get("cluster") || "";
const home = cluster ? "./?" + new URLSearchParams({ cluster }) : "./";
const tokenKey = cluster ? "kubediff-token:" + cluster : "kubediff-token";
document.getElementById("home").href = home;
const main = document.getElementById("main");
// A history store's page without a cluster lists every cluster's changes:
// each row then names its cluster, and links to it.
let manyClusters = false;
const clusterOf = (c) => (c.cluster && c.cluster.name) || "";
const maxRecords = 5000; // a window's records drawn at most

// el makes an element with attributes and children (strings become text).
function el(tag, attrs, ...children) {
  const e = document.createElement(tag);
  for (const [k, v] of Object.entries(attrs || {})) {
    if (v !== undefined && v !== null) e.setAttribute(k, v);
  }
  for (const c of children.flat()) {
    if (c !== undefined && c !== null) e.append(typeof c === "string" ? document.createTextNode(c) : c);
  }
  return e;
}

function show(...nodes) { main.replaceChildren(...nodes); }

// api calls the history API relative to the page, so that the page works
// behind a path prefix; a 401 asks for a token and tries again.
async function api(path, query) {
  const url = new URL("api/v1/history/" + path, document.baseURI);
  for (const [k, v] of query || []) if (v) url.searchParams.append(k, v);
  if (cluster) url.searchParams.set("cluster", cluster);
  const headers = {};
  const token = sessionStorage.getItem(tokenKey);
  if (token) headers.Authorization = "Bearer " + token;
  const resp = await fetch(url, { headers });
  if (resp.status === 401) {
    await signIn();
    return api(path, query);
  }
  const type = resp.headers.get("Content-Type") || "";
  const body = type.startsWith("application/json") ? await resp.json() : await resp.text();
  if (!resp.ok) throw Object.assign(new Error(body.error || resp.statusText), { reason: body.reason, status: resp.status });
  return body;
}

function signIn() {
  const dialog = document.getElementById("login");
  return new Promise((resolve) => {
    dialog.addEventListener("close", () => {
      sessionStorage.setItem(tokenKey, new FormData(document.getElementById("login-form")).get("token"));
      resolve();
    }, { once: true });
    dialog.showModal();
  });
}

// moment reads a duration ago ("90m", "2h", "1d") or an RFC 3339 time;
// anything else is an error naming the parameter, never a silent default.
function moment(s, fallback, name) {
  if (!s) return fallback;
  const m = /^(\d+(?:\.\d+)?)(s|m|h|d)$/.exec(s.trim());
  if (m) return new Date(Date.now() - m[1] * { s: 1e3, m: 6e4, h: 36e5, d: 864e5 }[m[2]]);
  const t = /^\d{4}-\d\d-\d\dT/.test(s.trim()) ? new Date(s) : new Date(NaN);
  if (isNaN(t)) throw new Error(`${name} "${s.slice(0, 80)}" is neither an RFC 3339 time (2026-11-23T14:02:00Z) nor a duration ago (90m, 2h, 1d)`);
  return t;
}

const iso = (d) => d.toISOString();
// exact keeps a typed RFC 3339 time as typed (a browser's Date would cut
// it to milliseconds), and turns a duration ago into a time.
const exact = (s, name) => (/^\d{4}-\d\d-\d\dT/.test(s.trim()) ? s.trim() : iso(moment(s, new Date(), name)));
const clock = (d) => d.toISOString().replace("T", " ").replace(/\.\d+Z$/, "Z");

// selector resolves a kind as kubectl names it into the API's RESOURCE.GROUP.
async function selector(kind) {
  const { types } = await api("types", [["name", kind]]);
  if (types.length !== 1) throw new Error(types.length ? `"${kind}" names several types` : `no type "${kind}" in the history`);
  const t = types[0];
  return t.group ? `${t.resource}.${t.group}` : t.resource;
}

// records reads every page of a query, up to maxRecords.
async function records(query) {
  const out = [];
  let after = "";
  do {
    const page = await api("records", [...query, ["after", after], ["limit", "1000"]]);
    out.push(...page.records);
    after = page.next || "";
  } while (after && out.length < maxRecords);
  return out.slice(0, maxRecords);
}

function fillFilters() {
  const form = document.getElementById("filters");
  for (const input of form.elements) {
    if (input.name) input.value = params.get(input.name) || (input.tagName === "SELECT" ? input.options[0].value : "");
  }
}

// eventsFilter is the Events the page lists, as the filter chose them.
const eventsFilter = () => params.get("events") || "warnings";

// lookBack is how far back a timeline with no window chosen looks for
// the newest changes: the last hour, else the last day, else the week.
const lookBack = [36e5, 864e5, 7 * 864e5];

async function timeline() {
  const chosen = params.get("from") || params.get("until");
  let until = moment(params.get("until"), new Date(), "until");
  let from = moment(params.get("from"), new Date(until - lookBack[0]), "from");
  const kind = params.get("kind"), name = params.get("name");
  const select = kind ? (await selector(kind)) + (name ? "/" + name : "") : "";
  let recs = await filtered(select, from, until);
  if (!chosen) {
    for (const back of lookBack.slice(1)) {
      if (recs.length) break;
      from = new Date(until - back);
      recs = await filtered(select, from, until);
    }
    if (recs.length && recs.length < maxRecords) [from, until] = fitted(recs, until);
  }
  if (!recs.length) return show(el("p", { class: "status" }, `No changes from ${clock(from)} to ${clock(until)}.`));
  manyClusters = !cluster && new Set(recs.map(clusterOf)).size > 1;
  const groups = group(recs);
  show(legend(recs, from, until), axis(from, until), ...groups.map((g) => drawGroup(g, from, until)));
}

// filtered reads the window's records the filters select.
async function filtered(select, from, until) {
  const query = [["namespace", params.get("namespace")], ["user", params.get("user")], ["rule", params.get("rule")],
    ["severity", params.get("severity")], ["release", params.get("release")], ["from", iso(from)], ["until", iso(until)],
    ["events", eventsFilter()], ["select", select]];
  const kind = params.get("kind"), name = params.get("name");
  const manager = params.get("manager") || "", field = params.get("field") || "";
  return (await records(query)).filter((c) =>
    (!name || kind || c.name === name) && (!manager || (c.manager && c.manager.name.includes(manager))) &&
    (!field || (c.changed || "").includes(field)));
}

// fitted is a window around the records, a tenth of their span either
// side (a second for a lone moment), ending no later than until: with no
// window chosen, the changes fill the page instead of a fixed hour's last
// sliver.
function fitted(recs, until) {
  const times = recs.map((c) => Date.parse(c.time));
  const first = Math.min(...times), last = Math.max(...times);
  const pad = last > first ? Math.max(10, (last - first) / 10) : 1000;
  return [new Date(first - pad), new Date(Math.min(+until, last + pad))];
}

function legend(recs, from, until) {
  const events = recs.filter((c) => c.event).length;
  const counts = `${recs.length - events} changes${events ? `, ${events} events` : ""}`;
  const named = recs.filter((c) => c.severity).length;
  const outside = recs.filter((c) => drifted(c) === " outside").length, putBack = recs.filter((c) => drifted(c) === " reverts").length;
  // A window of seconds (fitted to a burst) is told in milliseconds.
  const when = until - from < 1e4 ? (d) => d.toISOString().replace("T", " ") : clock;
  return el("div", { class: "legend", role: "note" }, el("strong", {}, `${counts}, ${when(from)} – ${when(until)}`),
    el("span", { class: "added" }, "added"), el("span", { class: "updated" }, "updated"),
    el("span", { class: "deleted" }, "deleted"), el("span", { class: "burst" }, "folded burst"),
    el("span", { class: "event" }, "event"), el("span", { class: "warning" }, "warning"),
    named ? el("span", { class: "ringed" }, `named by a rule (${named})`) : null,
    outside ? el("span", { class: "outside" }, `outside GitOps (${outside})`) : null,
    putBack ? el("span", { class: "reverts" }, `put back (${putBack})`) : null, zoomLink(recs, from, until));
}

// said is what a Kubernetes Event said about an object: "Warning
// FailedCreate: … (×3)".
const said = (e) => `${e.type} ${e.reason}${e.message ? ": " + e.message : ""}${e.count > 1 ? ` (×${e.count})` : ""}`;

// markClass is a mark's class: an Event's (a warning marked apart) keeps
// its own in a folded burst, where the changes fold; a ring when the
// rules named the change.
function markClass(c, burst) {
  if (c.event) return c.event.type === "Warning" ? "event warning" : "event";
  return (burst ? "burst" : c.type) + (c.severity ? " severity-" + c.severity : "") + drifted(c);
}

// drifted marks a change outside its object's GitOps owner, and the
// write that put it back (docs/drift.md).
const drifted = (c) => (!c.gitops ? "" : c.gitops.via === "outside" ? " outside" : c.gitops.reverts ? " reverts" : "");

// gitopsOwner names the owner as text output does: "Argo CD app shop".
function gitopsOwner(g) {
  const name = (g.namespace ? g.namespace + "/" : "") + g.name;
  return ({ argocd: "Argo CD app ", flux: `Flux ${g.kind} `, helm: "Helm release " }[g.tool] || g.tool + " ") + name;
}

// gitopsText says how a change was made as text output does: "outside
// Argo CD app shop", "sync by Argo CD app shop, put back after 2.4s (ID)".
function gitopsText(g) {
  if (g.via === "outside") return "outside " + gitopsOwner(g);
  return `${g.via} by ${gitopsOwner(g)}` + (g.reverts ? `, put back after ${(g.driftSeconds || 0).toFixed(1)}s (${g.reverts})` : "");
}

// driftText is a drifted field as text output says it: "spec.replicas:
// declared 2, was 2, now 5".
function driftText(f) {
  const v = (x) => (x === undefined || x === null ? "none" : JSON.stringify(x));
  const declared = f.undeclared ? "none" : f.declared === undefined && !f.truncated ? "unknown" : v(f.declared);
  return `${f.field}: declared ${declared}, was ${v(f.before)}, now ${v(f.now)}`;
}

// zoomLink narrows the window to where the changes are, when they crowd
// a small part of it.
function zoomLink(recs, from, until) {
  const times = recs.map((c) => Date.parse(c.time));
  const first = Math.min(...times), last = Math.max(...times);
  if (last - first > (until - from) / 4) return null;
  const pad = Math.max(250, (last - first) / 10);
  const q = new URLSearchParams(location.search);
  q.set("from", iso(new Date(first - pad)));
  q.set("until", iso(new Date(last + pad)));
  return el("a", { href: "?" + q, class: "zoom" }, "zoom to the changes");
}

function axis(from, until) {
  const fine = until - from < 1e4; // a few seconds: milliseconds tell the ticks apart
  const tick = (d) => (fine ? d.toISOString().slice(11, 23) : clock(d).slice(11));
  const ticks = [0, 0.25, 0.5, 0.75, 1].map((f) => el("span", {}, tick(new Date(+from + f * (until - from)))));
  return el("div", { class: "axis", "aria-hidden": "true" }, el("span", {}, "object"), el("span", {}, "#"), el("div", { class: "ticks" }, ticks));
}

const keyOf = (cl, kind, ns, name) => `${cl}\u0000${kind}\u0000${ns}\u0000${name}`;

// group gathers each object's records under its top owner (a Deployment
// with its ReplicaSets and their Pods), as far as the records tell.
function group(recs) {
  const objects = new Map();
  for (const c of recs) {
    const cl = clusterOf(c), k = keyOf(cl, c.kind, c.namespace, c.name);
    if (!objects.has(k)) objects.set(k, { cluster: cl, kind: c.kind, namespace: c.namespace, name: c.name, resource: c.resource, apiVersion: c.apiVersion, owner: null, records: [] });
    const o = objects.get(k);
    o.records.push(c);
    if (c.owner) o.owner = keyOf(cl, c.owner.kind, c.namespace, c.owner.name);
  }
  const root = (k, seen = new Set()) => {
    const o = objects.get(k);
    if (!o || !o.owner || seen.has(k)) return k;
    seen.add(k);
    return root(o.owner, seen);
  };
  const groups = new Map();
  for (const [k, o] of objects) {
    const r = o.owner ? root(o.owner) : k;
    if (!groups.has(r)) groups.set(r, { key: r, members: [] });
    groups.get(r).members.push(o);
  }
  const first = (g) => Math.min(...g.members.map((o) => Date.parse(o.records[0].time)));
  return [...groups.values()].sort((a, b) => first(a) - first(b));
}

function objectLink(o) {
  const group = o.apiVersion.includes("/") ? "." + o.apiVersion.split("/")[0] : "";
  const q = new URLSearchParams({ object: `${o.resource}${group}/${o.name}` });
  if (o.namespace) q.set("namespace", o.namespace);
  const cl = cluster || (manyClusters ? o.cluster : "");
  if (cl) q.set("cluster", cl);
  if (params.get("events")) q.set("events", params.get("events")); // the object's page lists the Events the timeline did
  return "?" + q;
}

// userName names a user as text output does: a ServiceAccount by its kind
// and namespaced name, anyone else by the name the API server gave.
const userName = (u) => (u.serviceAccount ? `ServiceAccount ${u.serviceAccount.namespace}/${u.serviceAccount.name}` : u.name);

// shortRevision shortens a full commit hash, alone or after "sha1:", to
// 12 digits, as text output does.
const shortRevision = (rev) => rev.replace(/^(.*[:@])?([0-9a-f]{40,})$/, (_, prefix, hash) => (prefix || "") + hash.slice(0, 12));

// releaseText names the release an object belongs to as text output
// does: "release web rev 7, chart web-1.4.2", "Application argocd/shop,
// revision 4f1c2a9d0e1b (Succeeded)".
function releaseText(r) {
  const parts = [r.kind ? `${r.kind} ${r.namespace ? r.namespace + "/" : ""}${r.name}` : `release ${r.name}${r.revision ? " rev " + r.revision : ""}`];
  if (r.chart) parts.push("chart " + r.chart);
  if (r.gitRevision) parts.push("revision " + shortRevision(r.gitRevision));
  return parts.join(", ") + (r.kind && r.status ? ` (${r.status})` : "");
}

// by names who made a change as text output does: the user, with the
// field manager and the release beside it.
function by(c) {
  const user = c.user ? userName(c.user) : "", manager = c.manager ? c.manager.name : "";
  const notes = [];
  if (user && manager) notes.push(manager);
  if (c.release) notes.push(releaseText(c.release));
  const who = user || manager;
  if (!notes.length) return who;
  return who ? `${who} (${notes.join(", ")})` : notes.join(", ");
}

// judged says what the rules said of a change, as text output does:
// "[warning: image-changed, rbac-admin-binding]"; "" when no rule matched.
const judged = (c) => (c.rules && c.rules.length ? `[${c.severity}: ${c.rules.join(", ")}]` : "");

const objectName = (o) => `${o.kind} ${o.namespace ? o.namespace + "/" : ""}${o.name}`;
// where says, in a row, the object's namespace and, of a fleet, its cluster.
const where = (o) => `${o.namespace ? " · " + o.namespace : ""}${manyClusters && o.cluster ? " · " + o.cluster : ""}`;

function lane(recs, from, until, href, burst) {
  const span = until - from || 1;
  return el("div", { class: "lane" }, recs.map((c) => {
    const left = Math.min(100, Math.max(0, ((Date.parse(c.time) - from) / span) * 100));
    const what = c.event ? `${c.time} ${c.kind} ${c.name}: ${said(c.event)}` :
      `${c.time} ${c.type} ${c.kind} ${c.name}${c.changed ? ": " + c.changed : ""}${by(c) ? " by " + by(c) : ""}${c.gitops ? " — " + gitopsText(c.gitops) : ""}${judged(c) ? " " + judged(c) : ""}`;
    const mark = el("a", { class: "mark " + markClass(c, burst), href: href(c), title: what, "aria-label": what });
    mark.style.left = left + "%"; // CSSOM: allowed by the page's content security policy
    return mark;
  }));
}

function row(o, from, until, cls) {
  return el("div", { class: "row " + (cls || "") },
    el("a", { class: "label", href: objectLink(o), title: objectName(o) }, o.name, el("span", { class: "dim" }, ` ${o.kind}${where(o)}`)),
    el("span", { class: "count", title: "changes" }, String(o.records.length)),
    lane(o.records, from, until, () => objectLink(o)));
}

// drawGroup draws a lone object as a row, and an owner's objects folded
// under one row that opens (a controller's burst).
function drawGroup(g, from, until) {
  if (g.members.length === 1) return row(g.members[0], from, until);
  const [cl, kind, ns, name] = g.key.split("\u0000");
  const all = g.members.flatMap((o) => o.records).sort((a, b) => Date.parse(a.time) - Date.parse(b.time));
  const children = g.members.map((o) => row(o, from, until, "child"));
  const owner = `${kind} ${ns ? ns + "/" : ""}${name}`;
  const summary = el("summary", { class: "row", title: `${owner}: ${g.members.length} objects, ${all.length} changes` },
    el("span", { class: "label" }, name, el("span", { class: "dim" }, ` ${kind}${where({ namespace: ns, cluster: cl })} · ${g.members.length} objects, ${all.length} changes`)),
    el("span", { class: "count" }, String(all.length)),
    lane(all, from, until, () => "#", true));
  return el("details", {}, summary, children);
}

async function objectPage() {
  const object = params.get("object"), namespace = params.get("namespace") || "";
  const recs = await records([["select", object], ["namespace", namespace], ["events", eventsFilter()]]);
  const back = el("a", { href: home }, "← timeline");
  if (!recs.length) return show(back, el("p", { class: "status" }, `No changes kept for ${object}.`));
  // Events about the objects it owns are listed too, under their own names.
  const name = object.split("/").slice(1).join("/");
  const changes = recs.filter((c) => !c.event && c.name === name);
  const first = changes[0] || recs[0];
  const title = el("h2", {}, `${first.kind} ${namespace ? namespace + "/" : ""}${name}`);
  // A deleted object is blamed and restored as it was before its deletion.
  const last = changes[changes.length - 1];
  const when = last && last.type === "deleted" && changes.length > 1 ? changes[changes.length - 2].time : new Date().toISOString();
  // Its changes first, what a person came for; then who last changed
  // each line, comparing two moments, and restoring one.
  show(back, title, el("div", { id: "records" }, recs.map((c) => drawRecord(c, name))), blameSection(object, namespace, when),
    compareForm(object, namespace, changes.length ? changes : recs), restoreSection(object, namespace, when, name));
}

// momentForm is a form of one moment that runs act with it.
function momentForm(label, at, button, act) {
  const input = el("input", { name: "at", size: "26", value: at });
  const form = el("form", { class: "moment", "aria-label": label }, el("label", {}, "at", input), el("button", { type: "submit" }, button));
  form.addEventListener("submit", (e) => { e.preventDefault(); act(exact(input.value, "at")); });
  return form;
}

// blameSection shows each line of the object with the change that last
// changed it, as `kubediff blame` prints it.
function blameSection(object, namespace, at) {
  const out = el("pre", { id: "blame", "aria-live": "polite" });
  const run = async (when) => {
    try {
      const b = await api("blame", [["object", object], ["namespace", namespace], ["at", when]]);
      out.replaceChildren(...b.lines.map((l) => el("span", { class: "blame-line" },
        el("span", { class: "dim", title: l.record || "" }, blamedBy(l, b)), l.text + "\n")));
    } catch (err) {
      out.replaceChildren(el("span", { class: "error" }, err.message));
    }
  };
  run(at);
  return el("section", {}, el("h3", {}, "Who last changed each line"), momentForm("Blame at a moment", at, "Blame", run), out);
}

// blamedBy is a blamed line's origin, padded to one width.
function blamedBy(l, b) {
  const origins = { quiet: `${l.time} quiet change`, beforeHistory: "older than the history", unwalked: `unchanged in the ${b.walked} newest changes` };
  const text = origins[l.origin] || `${l.time} ${l.by || "-"}`;
  return text.padEnd(48).slice(0, 48) + " │ ";
}

// restoreSection offers the manifest that puts the object back as it was
// at a moment, as `kubediff restore` prints it, to download.
function restoreSection(object, namespace, at, name) {
  const out = el("pre", { id: "restore", "aria-live": "polite" });
  const run = async (when) => {
    try {
      const yaml = await api("restore", [["object", object], ["namespace", namespace], ["at", when], ["format", "yaml"]]);
      out.replaceChildren(yaml);
      const link = el("a", { href: URL.createObjectURL(new Blob([yaml], { type: "application/yaml" })), download: `${name}.restore.yaml` });
      link.click();
    } catch (err) {
      out.replaceChildren(el("span", { class: "error" }, err.message));
    }
  };
  return el("section", {}, el("h3", {}, "Restore manifest"),
    el("p", { class: "dim" }, "For server-side apply: kubectl apply --server-side -f FILE, or kubediff restore --apply."),
    momentForm("Restore manifest at a moment", at, "Download restore manifest", run), out);
}

function compareForm(object, namespace, recs) {
  const out = el("pre", { id: "diff", "aria-live": "polite" });
  const fromInput = el("input", { name: "from", size: "26", value: recs[0].time });
  const toInput = el("input", { name: "to", size: "26", value: new Date().toISOString() });
  const form = el("form", { class: "compare", "aria-label": "Compare two moments" },
    el("label", {}, "from", fromInput), el("label", {}, "to", toInput), el("button", { type: "submit" }, "Compare"));
  form.addEventListener("submit", async (e) => {
    e.preventDefault();
    try {
      const text = await api("diff", [["object", object], ["namespace", namespace],
        ["from", exact(fromInput.value, "from")], ["to", exact(toInput.value, "to")]]);
      out.replaceChildren(...diffLines(text || "no difference\n"));
    } catch (err) {
      out.replaceChildren(el("span", { class: "error" }, err.message));
    }
  });
  return el("section", {}, el("h3", {}, "Compare two moments"), form, out);
}

function diffLines(text) {
  return text.split("\n").map((line) => {
    const cls = line.startsWith("@@") ? "hunk" : line.startsWith("+") ? "add" : line.startsWith("-") ? "del" : "";
    return el("span", { class: cls }, line + "\n");
  });
}

// drawEvent shows what an Event said about the object, or an object it
// owns (named then).
function drawEvent(c, object) {
  const e = c.event, about = c.name === object ? "" : ` ${c.kind} ${c.name}`;
  return el("article", { class: "record event" + (e.type === "Warning" ? " warning" : "") },
    el("h3", {}, el("span", { class: e.type === "Warning" ? "warning" : "event" }, `${e.type.toLowerCase()} ${e.reason}`), ` ${c.time}${about}`,
      e.reportingController ? el("span", { class: "dim" }, ` by ${e.reportingController}`) : null),
    el("p", {}, said(e), el("span", { class: "dim" }, ` first ${e.firstTime}, last ${e.lastTime}`)));
}

function drawRecord(c, object) {
  if (c.event) return drawEvent(c, object);
  const fields = (c.changes || []).map((fc) => {
    if (fc.lines) {
      const hunks = fc.lines.hunks.flatMap((h) => [`@@ -${h.fromLine},${h.fromCount} +${h.toLine},${h.toCount} @@`, ...h.lines]);
      return el("li", {}, el("code", {}, fc.field), ` ${fc.lines.fromLines} → ${fc.lines.toLines} lines`, el("pre", {}, diffLines(hunks.join("\n"))));
    }
    const v = (x) => (x === undefined ? "" : JSON.stringify(x));
    const change = fc.op === "add" ? `+ ${v(fc.to)}` : fc.op === "remove" ? `- ${v(fc.from)}` : `${v(fc.from)} → ${v(fc.to)}`;
    return el("li", {}, el("code", {}, fc.field), ": ", el("code", {}, change));
  });
  // What access an RBAC change gave or took away, before its fields: it
  // is what a reviewer reads the record for.
  const access = (c.access || []).map((sentence) => el("li", {}, sentence));
  const drift = ((c.gitops && c.gitops.drift) || []).map((f) => el("li", {}, driftText(f)));
  return el("article", { class: "record" + drifted(c) },
    el("h3", {}, el("span", { class: c.type }, c.type), ` ${c.time}`, by(c) ? el("span", { class: "dim" }, ` by ${by(c)}`) : null,
      c.gitops ? el("span", { class: "gitops" }, ` — ${gitopsText(c.gitops)}`) : null,
      judged(c) ? el("span", { class: "severity " + c.severity, title: "the rules this change matched" }, ` ${judged(c)}`) : null),
    c.summary ? el("p", { class: "summary" }, c.summary) : null,
    access.length ? el("ul", { class: "access", "aria-label": "access" }, access) : null,
    drift.length ? el("ul", { class: "drift", "aria-label": "drifted from the declared state" }, drift) : null,
    fields.length ? el("ul", { class: "fields" }, fields) : null);
}

async function start() {
  fillFilters();
  try {
    await (params.get("object") ? objectPage() : timeline());
  } catch (err) {
    show(el("p", { class: "error", role: "alert" }, err.message));
  }
}

start();
