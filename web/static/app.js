// cropkit viewer: a single page over the cropkit API of the same origin.
// Plain ES module, no build step; Leaflet (L) and uPlot are vendored scripts
// loaded before this one (index.html).
//
// The token lives in sessionStorage (gone when the tab closes) and travels
// only in the Authorization header: images are fetched with it and shown
// through blob: URLs, so the token never appears in a URL, a log or a
// Referer. Every API error ends in a visible message, never a blank page.

const TOKEN_KEY = "cropkit.token";
const OSM_KEY = "cropkit.osm";
const OSM_URL = "https://tile.openstreetmap.org/{z}/{x}/{y}.png";
const UNITS = { n_fertilizer: "kg N/ha", seeding: "seeds/ha" };
// Sequential light-to-dark ramp for doses (ColorBrewer YlGn, 5 classes).
const DOSE_RAMP = ["#ffffcc", "#c2e699", "#78c679", "#31a354", "#006837"];

const $ = (sel) => document.querySelector(sel);

// state is the page's one mutable object; every render reads from it.
const state = {
  token: "",
  user: "",
  fields: [], // /fields/list entries
  outlines: new Map(), // field name → Leaflet layer
  colormaps: new Map(), // index → {scale, start, stop}
  field: null, // selected field
  files: null, // /files/list of the selected field
  index: "",
  date: "",
  overlay: null, // L.ImageOverlay of the index PNG
  overlayURL: "", // its blob: URL, revoked when replaced
  zonesLayer: null,
  zonesQuery: null, // parameters of the drawn zones, reused by the downloads
  chart: null,
  seq: 0, // selection generation: responses of an older selection are dropped
  seriesSeq: 0, // the same for the chart's daily series
  pending: 0,
};

let map = null; // the Leaflet map, created once signed in
let osmLayer = null;

// ---------- API ----------

class ApiError extends Error {
  constructor(status, code, message) {
    super(message);
    this.status = status;
    this.code = code;
  }
}

function setPending(delta) {
  state.pending += delta;
  // Tests (and anyone curious) can wait for data-pending="0".
  document.documentElement.dataset.pending = String(state.pending);
  document.documentElement.setAttribute("aria-busy", state.pending > 0 ? "true" : "false");
}

// api calls path with query parameters and the Bearer token; it returns the
// Response (ok) or throws an ApiError carrying the API's message.
async function api(path, params = {}, init = {}) {
  const q = new URLSearchParams();
  for (const [k, v] of Object.entries(params)) {
    if (v !== undefined && v !== null && v !== "") q.set(k, String(v));
  }
  const url = path + (q.toString() ? "?" + q : "");
  const headers = new Headers(init.headers || {});
  if (state.token) headers.set("Authorization", "Bearer " + state.token);
  setPending(1);
  let resp;
  try {
    resp = await fetch(url, { ...init, headers });
  } catch (e) {
    throw new ApiError(0, "network", `cannot reach the server (${path}): ${e.message}`);
  } finally {
    setPending(-1);
  }
  if (resp.ok) return resp;
  let code = "http_" + resp.status;
  let message = `${path}: HTTP ${resp.status}`;
  try {
    const body = await resp.json();
    if (body && body.error) {
      code = body.error.code || code;
      message = body.error.message || message;
    }
  } catch {
    // Not the API's JSON error shape: keep the status line.
  }
  const err = new ApiError(resp.status, code, message);
  // A missing, invalid, expired or revoked token is a 403 with code
  // "unauthorized" (the spec lists 403, never 401); a 403 "forbidden" is an
  // index or operation this account may not use, and stays a message.
  if ((resp.status === 401 || (resp.status === 403 && code === "unauthorized")) && path !== "/login") {
    signOut(`Your session is not valid any more (${message}); sign in again.`);
    err.reported = true;
  }
  throw err;
}

async function apiJSON(path, params) {
  const resp = await api(path, params);
  return resp.json();
}

// ---------- messages ----------

function showMessage(text, kind = "error") {
  const box = $("#messages");
  const p = document.createElement("p");
  p.className = "message " + kind;
  const span = document.createElement("span");
  span.textContent = text;
  const close = document.createElement("button");
  close.type = "button";
  close.textContent = "Dismiss";
  close.setAttribute("aria-label", "Dismiss message: " + text);
  close.addEventListener("click", () => p.remove());
  p.append(span, close);
  // Keep the last few only: a flapping network must not fill the screen.
  while (box.children.length >= 3) box.firstChild.remove();
  box.append(p);
}

// textElement is a span holding text as text: Leaflet inserts a string
// tooltip or popup with innerHTML, so user-controlled strings (field names)
// reach it only this way.
function textElement(text) {
  const e = document.createElement("span");
  e.textContent = text;
  return e;
}

function clearMessages() {
  $("#messages").replaceChildren();
}

function reportError(e, what) {
  if (e && e.reported) return; // signOut said it
  showMessage(what ? `${what}: ${e.message}` : e.message);
}

window.addEventListener("error", (ev) => showMessage("Unexpected error: " + (ev.message || ev.error)));
window.addEventListener("unhandledrejection", (ev) => showMessage("Unexpected error: " + (ev.reason && ev.reason.message ? ev.reason.message : ev.reason)));

// ---------- sign-in ----------

function showSignIn() {
  $("#app-view").hidden = true;
  $("#signin-view").hidden = false;
  $("#signout").hidden = true;
  $("#user").textContent = "";
  document.documentElement.dataset.view = "signin";
  $("#token-input").focus();
}

function signOut(message) {
  // Requests in flight with the old token fail together: say it once.
  const wasSignedIn = state.token !== "";
  sessionStorage.removeItem(TOKEN_KEY);
  state.token = "";
  showSignIn();
  if (message && wasSignedIn) showMessage(message);
}

async function signIn(token, user) {
  state.token = token;
  state.user = user || "";
  sessionStorage.setItem(TOKEN_KEY, token);
  clearMessages();
  $("#signin-view").hidden = true;
  $("#app-view").hidden = false;
  $("#signout").hidden = false;
  $("#user").textContent = user ? "Signed in as " + user : "Signed in with a token";
  document.documentElement.dataset.view = "app";
  await loadFields();
}

function setupSignIn() {
  $("#token-form").addEventListener("submit", (ev) => {
    ev.preventDefault();
    const t = $("#token-input").value.trim();
    $("#token-input").value = "";
    if (t) signIn(t).catch((e) => reportError(e, "Sign-in"));
  });
  $("#login-form").addEventListener("submit", async (ev) => {
    ev.preventDefault();
    const body = JSON.stringify({ username: $("#login-user").value, password: $("#login-password").value });
    $("#login-password").value = "";
    try {
      const resp = await api("/login", {}, { method: "POST", body, headers: { "Content-Type": "application/json" } });
      const r = await resp.json();
      await signIn(r.token, r.username);
    } catch (e) {
      reportError(e, "Sign-in failed");
    }
  });
  $("#signout").addEventListener("click", () => signOut());
}

// ---------- map ----------

function setupMap() {
  if (map) return;
  if (typeof L === "undefined") throw new Error("the map library (Leaflet) did not load");
  map = L.map("map", { zoomSnap: 0.25, attributionControl: true });
  map.attributionControl.setPrefix(false);
  map.setView([50.75, 4.06], 12);
  osmLayer = L.tileLayer(OSM_URL, {
    maxZoom: 19,
    attribution: "© OpenStreetMap contributors",
  });
  const box = $("#osm");
  box.checked = localStorage.getItem(OSM_KEY) === "1";
  const applyOSM = () => {
    localStorage.setItem(OSM_KEY, box.checked ? "1" : "0");
    if (box.checked) osmLayer.addTo(map);
    else osmLayer.remove();
  };
  box.addEventListener("change", applyOSM);
  applyOSM();
}

function outlineStyle(selected) {
  return selected
    ? { color: "#0b57d0", weight: 3, fill: false, className: "field-outline" }
    : { color: "#1f5f2a", weight: 2, fillOpacity: 0.08, className: "field-outline" };
}

// markOutline styles a field's outline and, since Leaflet sets className only
// when it creates a path, toggles the "selected" class on its elements.
function markOutline(layer, selected) {
  layer.setStyle(outlineStyle(selected));
  layer.eachLayer((l) => {
    const el = l.getElement && l.getElement();
    if (el) el.classList.toggle("selected", selected);
  });
}

function drawOutlines() {
  for (const layer of state.outlines.values()) layer.remove();
  state.outlines.clear();
  const all = [];
  for (const f of state.fields) {
    const layer = L.geoJSON(f.geometry, { style: () => outlineStyle(false) });
    layer.bindTooltip(textElement(f.field_name), { sticky: true });
    layer.on("click", () => selectField(f.field_name));
    layer.addTo(map);
    state.outlines.set(f.field_name, layer);
    all.push(layer);
  }
  if (all.length) {
    const b = L.featureGroup(all).getBounds();
    if (b.isValid()) map.fitBounds(b, { padding: [20, 20], animate: false });
  }
}

// ---------- fields ----------

async function loadFields() {
  setupMap();
  const [fields] = await Promise.all([apiJSON("/fields/list"), loadColormaps()]);
  state.fields = (fields.fields || []).slice().sort((a, b) => a.field_name.localeCompare(b.field_name));
  $("#fields-count").textContent = `(${state.fields.length})`;
  renderFieldList();
  drawOutlines();
  if (state.fields.length === 0) {
    showMessage("No fields yet: register one with /fields/register (or start the server with --demo).", "info");
    return;
  }
  await selectField(state.fields[0].field_name, { fit: false });
}

async function loadColormaps() {
  try {
    const resp = await fetch("/app/colormaps.json");
    if (!resp.ok) throw new Error("HTTP " + resp.status);
    for (const c of await resp.json()) state.colormaps.set(c.index, c);
  } catch (e) {
    showMessage("The colour legends could not be loaded: " + e.message);
  }
}

function fieldMatches(f, q) {
  if (!q) return true;
  const hay = [f.field_name, f.group || "", ...Object.values(f.labels || {})].join(" ").toLowerCase();
  return hay.includes(q);
}

function renderFieldList() {
  const q = $("#fields-search").value.trim().toLowerCase();
  const ul = $("#fields-list");
  const items = [];
  for (const f of state.fields) {
    if (!fieldMatches(f, q)) continue;
    const li = document.createElement("li");
    const b = document.createElement("button");
    b.type = "button";
    b.dataset.field = f.field_name;
    const name = document.createElement("span");
    name.className = "name";
    name.textContent = f.field_name;
    b.append(name);
    if (f.group) {
      const g = document.createElement("span");
      g.className = "group";
      g.textContent = f.group;
      b.append(g);
    }
    if (state.field && state.field.field_name === f.field_name) b.setAttribute("aria-current", "true");
    b.addEventListener("click", () => selectField(f.field_name));
    li.append(b);
    items.push(li);
  }
  ul.replaceChildren(...items);
  if (items.length === 0) {
    const li = document.createElement("li");
    li.className = "hint";
    li.textContent = "No field matches.";
    ul.append(li);
  }
}

async function selectField(name, opts = {}) {
  const f = state.fields.find((x) => x.field_name === name);
  if (!f) return;
  const seq = ++state.seq;
  if (state.field) {
    const prev = state.outlines.get(state.field.field_name);
    if (prev) markOutline(prev, false);
  }
  state.field = f;
  clearZones();
  const layer = state.outlines.get(name);
  if (layer) {
    markOutline(layer, true);
    layer.bringToFront();
    // Without animation: a fit started while another one still animates
    // (drawing all outlines, then selecting a field at once, or two quick
    // clicks) could leave Leaflet's SVG renderer clipped to the old view,
    // the selected outline not drawn.
    map.fitBounds(layer.getBounds(), { padding: [30, 30], maxZoom: opts.fit !== false ? 17 : 16, animate: false });
  }
  $("#field-title").textContent = "Field " + name;
  document.title = name + " · cropkit viewer";
  for (const b of document.querySelectorAll("#fields-list button")) {
    if (b.dataset.field === name) b.setAttribute("aria-current", "true");
    else b.removeAttribute("aria-current");
  }
  try {
    // Every sensor's dates: the timeline marks each one's sensor.
    const files = await apiJSON("/files/list", { field_name: name, sensor: "any" });
    if (seq !== state.seq) return;
    state.files = files;
  } catch (e) {
    reportError(e, `Dates of ${name}`);
    return;
  }
  const indices = f.indices && f.indices.length ? f.indices : Object.keys(state.files.indices || {});
  const sel = $("#index-select");
  sel.replaceChildren(
    ...indices.map((ix) => {
      const o = document.createElement("option");
      o.value = ix;
      const n = (state.files.indices[ix] || []).length;
      o.textContent = `${ix.toUpperCase()} (${n} date${n === 1 ? "" : "s"})`;
      return o;
    }),
  );
  let index = indices.includes(state.index) ? state.index : indices.includes("ndvi") ? "ndvi" : indices[0];
  if (!index) {
    showMessage(`Field ${name} has no index registered.`, "info");
    return;
  }
  sel.value = index;
  await selectIndex(index);
}

// ---------- index, dates, image ----------

function datesOf(index) {
  const list = (state.files && state.files.indices && state.files.indices[index]) || [];
  return list.slice().sort((a, b) => a.date.localeCompare(b.date));
}

async function selectIndex(index) {
  state.index = index;
  renderLegend(index);
  const dates = datesOf(index);
  renderChart(index, dates);
  loadSeries(index, dates); // the daily series replaces the chart when it arrives
  if (dates.length === 0) {
    renderTimeline([], "");
    removeOverlay();
    $("#stats").replaceChildren();
    showMessage(`No usable ${index.toUpperCase()} image for ${state.field.field_name} yet.`, "info");
    return;
  }
  // Keep the date when the new index has it, else the latest.
  const keep = dates.find((d) => d.date === state.date);
  const last = dates[dates.length - 1];
  await selectDate(keep ? keep.date : last.date, keep ? keep.sensor : last.sensor);
}

// sensorFamily is the family of a sensor name (sentinel-2a → sentinel-2).
function sensorFamily(sensor) {
  const s = (sensor || "sentinel-2").toLowerCase();
  if (s.startsWith("landsat")) return "landsat";
  if (s.startsWith("sentinel-1")) return "sentinel-1";
  return "sentinel-2";
}

// sensorLabel names a sensor for people: "Sentinel-2A", "Landsat 8", "Sentinel-1".
function sensorLabel(sensor) {
  const s = (sensor || "sentinel-2").toLowerCase();
  const m = /^landsat-?(\d)?$/.exec(s);
  if (m) return m[1] ? "Landsat " + m[1] : "Landsat";
  return s.replace(/^sentinel-(\d)([abc]?)$/, (_, n, u) => "Sentinel-" + n + u.toUpperCase());
}

async function selectDate(date, sensor) {
  const seq = ++state.seq;
  const f = state.field;
  const index = state.index;
  const entry = datesOf(index).find((d) => d.date === date && (!sensor || d.sensor === sensor)) || {};
  state.date = date;
  renderTimeline(datesOf(index), date, entry.sensor);
  $("#date-label").textContent = "· " + date + (entry.sensor ? " · " + sensorLabel(entry.sensor) : "");
  // The image of that date from the sensor the timeline marks (Sentinel-2,
  // the API's default for optical indices, needs no parameter).
  const params = { field_name: f.field_name, date };
  if (entry.sensor && sensorFamily(entry.sensor) !== "sentinel-2") params.sensor = sensorFamily(entry.sensor);
  try {
    const [json, png] = await Promise.all([
      apiJSON(`/download/${encodeURIComponent(index)}/json`, params),
      api(`/download/${encodeURIComponent(index)}/image`, params).then((r) => r.blob()),
    ]);
    if (seq !== state.seq) return;
    renderStats(json, index);
    placeOverlay(png, json.bounds, `/download/${encodeURIComponent(index)}/image?` + new URLSearchParams(params), index, date);
  } catch (e) {
    if (seq === state.seq) reportError(e, `${index.toUpperCase()} of ${f.field_name} on ${date}`);
  }
}

function removeOverlay() {
  if (state.overlay) state.overlay.remove();
  if (state.overlayURL) URL.revokeObjectURL(state.overlayURL);
  state.overlay = null;
  state.overlayURL = "";
}

function placeOverlay(blob, bounds, downloadURL, index, date) {
  removeOverlay();
  if (!Array.isArray(bounds) || bounds.length !== 2) {
    showMessage("The server's JSON has no bounds: the image cannot be placed.");
    return;
  }
  state.overlayURL = URL.createObjectURL(blob);
  state.overlay = L.imageOverlay(state.overlayURL, bounds, {
    className: "index-overlay",
    opacity: 0.9,
    alt: `${index.toUpperCase()} of ${state.field.field_name} on ${date}`,
  }).addTo(map);
  // The img shows a blob: URL (fetched with the Bearer header); data-src
  // names the API resource it came from (without the token).
  const img = state.overlay.getElement();
  img.dataset.src = downloadURL;
  img.dataset.index = index;
  img.dataset.date = date;
  const outline = state.outlines.get(state.field.field_name);
  if (outline) outline.bringToFront();
  if (state.zonesLayer) state.zonesLayer.bringToFront();
}

function fmt(v) {
  if (v === null || v === undefined || Number.isNaN(v)) return "–";
  if (typeof v !== "number") return String(v);
  if (Math.abs(v) >= 1000) return Math.round(v).toLocaleString("en");
  if (Number.isInteger(v)) return String(v);
  return String(Number(v.toPrecision(4)));
}

function renderStats(json, index) {
  const rows = [
    ["Date", json.date],
    ["Mean", fmt(json.mean)],
    ["Median", fmt(json.median)],
    ["Std. deviation", fmt(json.std)],
    ["Minimum", fmt(json.min)],
    ["Maximum", fmt(json.max)],
    ["25th percentile", fmt(json.p25)],
    ["75th percentile", fmt(json.p75)],
    ["Pixels", fmt(json.num)],
    ["Mean vs previous", json.mean_variation === null || json.mean_variation === undefined ? "–" : (json.mean_variation > 0 ? "+" : "") + fmt(json.mean_variation) + " %"],
  ];
  if (json.cloud_cover !== undefined) rows.push(["Cloud cover", fmt(json.cloud_cover) + " %"]);
  const dl = $("#stats");
  dl.dataset.index = index;
  dl.dataset.date = json.date || "";
  dl.replaceChildren(
    ...rows.flatMap(([k, v]) => {
      const dt = document.createElement("dt");
      dt.textContent = k;
      const dd = document.createElement("dd");
      dd.textContent = v;
      return [dt, dd];
    }),
  );
}

function renderLegend(index) {
  const box = $("#legend");
  const c = state.colormaps.get(index);
  if (!c) {
    box.innerHTML = "";
    const p = document.createElement("p");
    p.className = "hint";
    p.textContent = `No spec colormap for ${index.toUpperCase()}.`;
    box.append(p);
    return;
  }
  const bar = document.createElement("div");
  bar.className = "legend-bar";
  bar.style.background = `linear-gradient(to right, ${c.scale.join(", ")})`;
  bar.setAttribute("role", "img");
  bar.setAttribute("aria-label", `Colour scale of ${index.toUpperCase()} from ${c.start} (${c.scale[0]}) to ${c.stop} (${c.scale[c.scale.length - 1]})`);
  const ticks = document.createElement("div");
  ticks.className = "legend-ticks";
  const n = 5;
  for (let i = 0; i < n; i++) {
    const s = document.createElement("span");
    s.textContent = fmt(c.start + ((c.stop - c.start) * i) / (n - 1));
    ticks.append(s);
  }
  box.replaceChildren(bar, ticks);
}

// renderTimeline draws one radio button per usable date, placed by its date
// on the track and marked with its sensor (data-sensor, a shape per family);
// arrows move between dates (roving tabindex).
function renderTimeline(dates, current, currentSensor) {
  const tl = $("#timeline");
  if (dates.length === 0) {
    tl.replaceChildren();
    return;
  }
  const t0 = Date.parse(dates[0].date);
  const t1 = Date.parse(dates[dates.length - 1].date);
  const span = Math.max(t1 - t0, 1);
  const pos = (d) => (dates.length === 1 ? 50 : ((Date.parse(d) - t0) / span) * 100);
  const nodes = [];
  dates.forEach((d, i) => {
    const b = document.createElement("button");
    b.type = "button";
    b.setAttribute("role", "radio");
    b.dataset.date = d.date;
    b.dataset.sensor = d.sensor || "sentinel-2";
    b.classList.add("sensor-" + sensorFamily(d.sensor));
    const checked = d.date === current && (!currentSensor || d.sensor === currentSensor);
    b.setAttribute("aria-checked", checked ? "true" : "false");
    b.tabIndex = checked ? 0 : -1;
    b.setAttribute("aria-label", `${d.date}, ${sensorLabel(d.sensor)}, mean ${fmt(d.mean)}`);
    b.title = `${d.date} (${sensorLabel(d.sensor)}): mean ${fmt(d.mean)}`;
    b.style.left = pos(d.date) + "%";
    b.addEventListener("click", () => selectDate(d.date, d.sensor));
    b.addEventListener("keydown", (ev) => {
      let j = -1;
      if (ev.key === "ArrowRight" || ev.key === "ArrowDown") j = Math.min(i + 1, dates.length - 1);
      if (ev.key === "ArrowLeft" || ev.key === "ArrowUp") j = Math.max(i - 1, 0);
      if (ev.key === "Home") j = 0;
      if (ev.key === "End") j = dates.length - 1;
      if (j < 0) return;
      ev.preventDefault();
      selectDate(dates[j].date, dates[j].sensor).then(() => {
        const nb = $(`#timeline button[data-date="${dates[j].date}"][data-sensor="${dates[j].sensor || "sentinel-2"}"]`);
        if (nb) nb.focus();
      });
    });
    nodes.push(b);
  });
  // Month ticks under the track, at most ~6 so they never overlap.
  const first = new Date(t0);
  const months = [];
  for (let m = new Date(Date.UTC(first.getUTCFullYear(), first.getUTCMonth() + 1, 1)); m.getTime() <= t1; m = new Date(Date.UTC(m.getUTCFullYear(), m.getUTCMonth() + 1, 1))) months.push(m);
  const step = Math.ceil(months.length / 6) || 1;
  months.forEach((m, i) => {
    if (i % step) return;
    const s = document.createElement("span");
    s.className = "tick";
    s.setAttribute("aria-hidden", "true");
    s.style.left = ((m.getTime() - t0) / span) * 100 + "%";
    s.textContent = m.toLocaleString("en", { month: "short", timeZone: "UTC" });
    nodes.push(s);
  });
  tl.replaceChildren(...nodes);
  // Focus follows a mouse choice too, so arrows continue from there.
  // (Only when focus already was in the timeline.)
  if (tl.contains(document.activeElement) && document.activeElement.getAttribute("aria-checked") !== "true") {
    const nb = tl.querySelector('[aria-checked="true"]');
    if (nb) nb.focus();
  }
}

// RADAR lists the radar indices (their values are dB or a radar ratio: a
// second axis when shown with an optical index).
const RADAR = ["vv", "vh", "vh_vv", "rvi"];

// companionIndex is the series drawn on the chart's second axis: the
// field's first radar index beside an optical one, or its first optical
// index beside a radar one; "" when the field has none.
function companionIndex(index) {
  const all = (state.field && state.field.indices) || Object.keys((state.files && state.files.indices) || {});
  const radar = RADAR.includes(index);
  return all.find((ix) => ix !== index && RADAR.includes(ix) !== radar && datesOf(ix).length > 0) || "";
}

function renderChart(index, dates) {
  const el = $("#chart");
  $("#chart-title").textContent = "Mean through time";
  if (state.chart) {
    state.chart.destroy();
    state.chart = null;
  }
  el.replaceChildren();
  if (dates.length === 0 || typeof uPlot === "undefined") {
    if (typeof uPlot === "undefined") showMessage("The chart library (uPlot) did not load.");
    return;
  }
  // The index on the left axis; optical and radar series together: the
  // companion (radar beside optical, or the reverse) on the right axis.
  const other = companionIndex(index);
  const otherDates = other ? datesOf(other) : [];
  const days = [...new Set([...dates, ...otherDates].map((d) => d.date))].sort();
  const meanOn = (list) => {
    const m = new Map(list.map((d) => [d.date, d.mean]));
    return days.map((day) => (m.has(day) ? m.get(day) : null));
  };
  const xs = days.map((d) => Date.parse(d) / 1000);
  const data = [xs, meanOn(dates)];
  let label = `${index.toUpperCase()} mean through time: ` + dates.map((d) => `${d.date} ${fmt(d.mean)} (${sensorLabel(d.sensor)})`).join(", ");
  const series = [
    {},
    { label: index.toUpperCase() + " mean", scale: "y", stroke: "#1f5f2a", width: 2, spanGaps: true, points: { size: 7, fill: "#1f5f2a" } },
  ];
  const axes = [
    { stroke: "#1b1b1b", grid: { stroke: "#e0e0e0" } },
    { scale: "y", stroke: "#1f5f2a", grid: { stroke: "#e0e0e0" }, size: 50 },
  ];
  if (other) {
    data.push(meanOn(otherDates));
    series.push({ label: other.toUpperCase() + " mean", scale: "y2", stroke: "#4a74b4", width: 2, dash: [6, 4], spanGaps: true, points: { size: 6, fill: "#4a74b4" } });
    axes.push({ scale: "y2", side: 1, stroke: "#4a74b4", grid: { show: false }, size: 50 });
    label += `; ${other.toUpperCase()} mean on the second axis: ` + otherDates.map((d) => `${d.date} ${fmt(d.mean)}`).join(", ");
  }
  el.dataset.series = [index, other].filter(Boolean).join(",");
  el.setAttribute("aria-label", label);
  const width = Math.max(el.clientWidth, 240);
  state.chart = new uPlot(
    {
      width,
      height: 170,
      legend: { show: !!other },
      cursor: { drag: { x: false, y: false } },
      scales: { x: { time: true }, y: {}, y2: {} },
      axes,
      series,
    },
    data,
    el,
  );
}

// ---------- daily series, phenology and events ----------

// Observation colours by sensor (Sentinel-2 green, Landsat blue, Sentinel-1 purple).
const SENSOR_COLORS = { "sentinel-2": "#1f5f2a", landsat: "#1f4e9f", "sentinel-1": "#6a3d9a" };

function sensorColor(sensor) {
  const s = String(sensor || "");
  for (const [k, c] of Object.entries(SENSOR_COLORS)) if (s.startsWith(k)) return c;
  return "#555555";
}

// loadSeries fetches the field's daily series (estimate, 80 % band,
// observations by sensor), phenology and events over its usable dates and
// redraws the chart with them; the plain mean chart stays when they fail.
async function loadSeries(index, dates) {
  if (!state.field || dates.length === 0 || typeof uPlot === "undefined") return;
  const seq = ++state.seriesSeq;
  const field = state.field.field_name;
  // Over the index's dates and its companion's (radar beside optical), so
  // the second axis keeps its whole span.
  const other = companionIndex(index);
  const span = [...dates, ...(other ? datesOf(other) : [])].map((d) => d.date).sort();
  const from = span[0];
  const to = span[span.length - 1];
  try {
    const [ts, ph, ev] = await Promise.all([
      apiJSON("/fields/timeseries", { field_name: field, index, start_date: from, end_date: to }),
      apiJSON("/fields/phenology", { field_name: field, index }).catch(() => ({ seasons: [] })),
      apiJSON("/fields/events", { field_name: field, index }).catch(() => ({ events: [] })),
    ]);
    if (seq !== state.seriesSeq || state.index !== index || !state.field || state.field.field_name !== field) return;
    renderSeriesChart(index, ts.series || [], ph.seasons || [], (ev.events || []).filter((e) => e.date >= from && e.date <= to));
  } catch (e) {
    // Keep the plain chart: the series is an addition to it.
  }
}

function renderSeriesChart(index, series, seasons, events) {
  const el = $("#chart");
  if (series.length === 0) return;
  $("#chart-title").textContent = "Daily estimate, 80 % interval, observations and events";
  if (state.chart) {
    state.chart.destroy();
    state.chart = null;
  }
  el.replaceChildren();
  const xs = series.map((d) => Date.parse(d.date) / 1000);
  const sensors = [...new Set(series.filter((d) => d.observed !== null).map((d) => d.sensor))].sort();
  const data = [xs, series.map((d) => d.estimate), series.map((d) => d.lower), series.map((d) => d.upper)];
  for (const s of sensors) data.push(series.map((d) => (d.observed !== null && d.sensor === s ? d.observed : null)));
  const byDate = new Map(events.map((e) => [e.date, e]));
  data.push(series.map((d) => (byDate.has(d.date) ? byDate.get(d.date).observed : null)));
  const label = index.toUpperCase();
  const marks = [];
  for (const ss of seasons) {
    if (ss.start) marks.push({ date: ss.start, text: "start" });
    if (ss.peak) marks.push({ date: ss.peak, text: "peak" });
    if (ss.end) marks.push({ date: ss.end, text: "end" });
  }
  let aria =
    `${label} daily estimate with its 80 % interval from ${series[0].date} to ${series[series.length - 1].date}; ` +
    `${series.filter((d) => d.observed !== null).length} observations (${sensors.join(", ")}); ` +
    (marks.length ? "season " + marks.map((m) => `${m.text} ${m.date}`).join(", ") + "; " : "") +
    (events.length ? "events " + events.map((e) => `${e.kind} on ${e.date} (${fmt(e.magnitude)})`).join(", ") : "no events");
  const none = () => null;
  const plot = [
    {},
    { label: label + " estimate", scale: "y", stroke: "#1b1b1b", width: 1.5 },
    { label: "lower 80 %", scale: "y", stroke: "rgba(31,95,42,0.35)", width: 1 },
    { label: "upper 80 %", scale: "y", stroke: "rgba(31,95,42,0.35)", width: 1 },
    ...sensors.map((s) => ({ label: s, scale: "y", stroke: sensorColor(s), paths: none, points: { show: true, size: 7, fill: sensorColor(s) } })),
    { label: "events", scale: "y", stroke: "#c0392b", paths: none, points: { show: true, size: 12, width: 2, fill: "rgba(0,0,0,0)" } },
  ];
  const axes = [
    { stroke: "#1b1b1b", grid: { stroke: "#e0e0e0" } },
    { scale: "y", stroke: "#1b1b1b", grid: { stroke: "#e0e0e0" }, size: 50 },
  ];
  // The companion index (radar beside optical, or the reverse) keeps its
  // second axis, as on the plain chart.
  const other = companionIndex(index);
  if (other) {
    const m = new Map(datesOf(other).map((d) => [d.date, d.mean]));
    data.push(series.map((d) => (m.has(d.date) ? m.get(d.date) : null)));
    plot.push({ label: other.toUpperCase() + " mean", scale: "y2", stroke: "#4a74b4", width: 2, dash: [6, 4], spanGaps: true, points: { size: 6, fill: "#4a74b4" } });
    axes.push({ scale: "y2", side: 1, stroke: "#4a74b4", grid: { show: false }, size: 50 });
    aria += `; ${other.toUpperCase()} mean on the second axis: ` + datesOf(other).map((d) => `${d.date} ${fmt(d.mean)}`).join(", ");
  }
  el.dataset.series = [index, other].filter(Boolean).join(",");
  el.dataset.days = String(series.length);
  el.dataset.events = String(events.length);
  el.dataset.marks = String(marks.length);
  el.setAttribute("aria-label", aria);
  const width = Math.max(el.clientWidth, 240);
  state.chart = new uPlot(
    {
      width,
      height: 190,
      legend: { show: false },
      cursor: { drag: { x: false, y: false } },
      scales: { x: { time: true }, y: {}, y2: {} },
      axes,
      series: plot,
      bands: [{ series: [3, 2], fill: "rgba(31,95,42,0.15)" }],
      hooks: {
        draw: [
          (u) => {
            const ctx = u.ctx;
            ctx.save();
            ctx.strokeStyle = "#8a6d00";
            ctx.fillStyle = "#8a6d00";
            ctx.setLineDash([4, 3]);
            ctx.font = `${10 * devicePixelRatio}px sans-serif`;
            for (const m of marks) {
              const x = u.valToPos(Date.parse(m.date) / 1000, "x", true);
              if (x < u.bbox.left || x > u.bbox.left + u.bbox.width) continue;
              ctx.beginPath();
              ctx.moveTo(x, u.bbox.top);
              ctx.lineTo(x, u.bbox.top + u.bbox.height);
              ctx.stroke();
              ctx.fillText(m.text, x + 2, u.bbox.top + 10 * devicePixelRatio);
            }
            ctx.restore();
          },
        ],
      },
    },
    data,
    el,
  );
}

// ---------- zones ----------

function clearZones() {
  if (state.zonesLayer) state.zonesLayer.remove();
  state.zonesLayer = null;
  state.zonesQuery = null;
  $("#zones-result").replaceChildren();
  $("#download-status").textContent = "";
  for (const b of document.querySelectorAll(".downloads button")) b.disabled = true;
}

function zonesParams(format) {
  const type = $("#zones-type").value;
  const p = {
    field_name: state.field.field_name,
    type,
    n_zones: $("#zones-n").value,
    index: state.index,
    base_rate: $("#zones-base").value,
    min_rate: $("#zones-min").value,
    max_rate: $("#zones-max").value,
    format,
  };
  if (type === "n_fertilizer" && state.date) p.date = state.date;
  return p;
}

function doseColor(v, lo, hi) {
  const f = hi > lo ? (v - lo) / (hi - lo) : 0.5;
  return DOSE_RAMP[Math.min(DOSE_RAMP.length - 1, Math.max(0, Math.floor(f * DOSE_RAMP.length)))];
}

async function drawZones() {
  if (!state.field || !state.index) {
    showMessage("Select a field first.", "info");
    return;
  }
  const params = zonesParams("geojson");
  const button = $("#zones-draw");
  button.disabled = true;
  try {
    const resp = await api("/prescription_maps/get_zones", params);
    const col = await resp.json();
    const imageDate = resp.headers.get("X-Image-Date") || "";
    if (state.zonesLayer) state.zonesLayer.remove();
    const feats = col.features || [];
    const doses = feats.map((x) => x.properties.DOSE);
    const lo = Math.min(...doses);
    const hi = Math.max(...doses);
    const unit = UNITS[params.type] || "";
    state.zonesLayer = L.geoJSON(col, {
      style: (ft) => ({ color: "#1b1b1b", weight: 1, fillColor: doseColor(ft.properties.DOSE, lo, hi), fillOpacity: 0.75, className: "zone-polygon" }),
      onEachFeature: (ft, layer) => {
        layer.bindTooltip(textElement(`${fmt(ft.properties.DOSE)} ${unit}`), { permanent: true, direction: "center", className: "zone-label" });
      },
    }).addTo(map);
    state.zonesQuery = params;
    renderZonesTable(feats, lo, hi, unit, imageDate, params);
    for (const b of document.querySelectorAll(".downloads button")) b.disabled = false;
  } catch (e) {
    reportError(e, "Zones");
  } finally {
    button.disabled = false;
  }
}

function renderZonesTable(feats, lo, hi, unit, imageDate, params) {
  // One row per zone number (a zone may have several polygons).
  const byZone = new Map();
  for (const ft of feats) {
    const z = ft.properties.ZONE;
    if (!byZone.has(z)) byZone.set(z, { zone: z, dose: ft.properties.DOSE, value: ft.properties.RASTER_VAL, parts: 0 });
    byZone.get(z).parts++;
  }
  const rows = [...byZone.values()].sort((a, b) => a.zone - b.zone);
  const table = document.createElement("table");
  table.className = "zones-table";
  const cap = document.createElement("caption");
  cap.className = "hint";
  cap.textContent = `${rows.length} zones, ${params.type === "seeding" ? "seeding" : "nitrogen"} on ${params.index.toUpperCase()}` + (imageDate ? ` of ${imageDate}` : "");
  table.append(cap);
  const head = table.createTHead().insertRow();
  for (const h of ["Zone", `DOSE (${unit})`, params.index.toUpperCase(), "Polygons"]) {
    const th = document.createElement("th");
    th.scope = "col";
    th.textContent = h;
    head.append(th);
  }
  const body = table.createTBody();
  for (const r of rows) {
    const tr = body.insertRow();
    const c0 = tr.insertCell();
    const sw = document.createElement("span");
    sw.className = "swatch";
    sw.style.background = doseColor(r.dose, lo, hi);
    c0.append(sw, document.createTextNode(String(r.zone)));
    tr.insertCell().textContent = fmt(r.dose);
    tr.insertCell().textContent = fmt(r.value);
    tr.insertCell().textContent = String(r.parts);
  }
  $("#zones-result").replaceChildren(table);
}

async function download(format) {
  if (!state.zonesQuery) return;
  const status = $("#download-status");
  status.textContent = `Preparing ${format}…`;
  try {
    const resp = await api("/prescription_maps/get_zones", { ...state.zonesQuery, format });
    const blob = await resp.blob();
    const cd = resp.headers.get("Content-Disposition") || "";
    const m = /filename="?([^";]+)"?/.exec(cd);
    const name = m ? m[1] : `${state.zonesQuery.field_name}_zones.${format === "geojson" ? "geojson" : "zip"}`;
    const url = URL.createObjectURL(blob);
    const a = document.createElement("a");
    a.href = url;
    a.download = name;
    document.body.append(a);
    a.click();
    a.remove();
    setTimeout(() => URL.revokeObjectURL(url), 60000);
    status.textContent = `Downloaded ${name} (${blob.size.toLocaleString("en")} bytes).`;
    status.dataset.file = name;
    status.dataset.bytes = String(blob.size);
  } catch (e) {
    status.textContent = "";
    reportError(e, `Download ${format}`);
  }
}

// ---------- tabs ----------

function setupTabs() {
  const tabs = [...document.querySelectorAll('[role="tab"]')];
  const activate = (tab) => {
    for (const t of tabs) {
      const on = t === tab;
      t.setAttribute("aria-selected", on ? "true" : "false");
      t.tabIndex = on ? 0 : -1;
      $("#" + t.getAttribute("aria-controls")).hidden = !on;
    }
    if (tab.id === "tab-index" && state.chart) {
      state.chart.setSize({ width: Math.max($("#chart").clientWidth, 240), height: 170 });
    }
  };
  tabs.forEach((t, i) => {
    t.addEventListener("click", () => activate(t));
    t.addEventListener("keydown", (ev) => {
      let j = -1;
      if (ev.key === "ArrowRight") j = (i + 1) % tabs.length;
      if (ev.key === "ArrowLeft") j = (i - 1 + tabs.length) % tabs.length;
      if (j < 0) return;
      ev.preventDefault();
      activate(tabs[j]);
      tabs[j].focus();
    });
  });
}

// ---------- start ----------

function setup() {
  setupSignIn();
  setupTabs();
  $("#fields-search").addEventListener("input", renderFieldList);
  $("#index-select").addEventListener("change", (ev) => selectIndex(ev.target.value).catch((e) => reportError(e)));
  $("#zones-form").addEventListener("submit", (ev) => {
    ev.preventDefault();
    drawZones();
  });
  for (const b of document.querySelectorAll(".downloads button")) b.addEventListener("click", () => download(b.dataset.format));
  new ResizeObserver(() => {
    if (state.chart && $("#chart").clientWidth > 0) state.chart.setSize({ width: $("#chart").clientWidth, height: 170 });
    if (map) map.invalidateSize();
  }).observe($("#app-view"));
  setPending(0);

  // A link with #token=… opened in this tab later signs in with it too.
  window.addEventListener("hashchange", () => {
    const t = hashToken();
    if (t) signIn(t).catch((e) => reportError(e, "Loading the fields"));
  });
  const token = hashToken() || sessionStorage.getItem(TOKEN_KEY);
  if (token) signIn(token).catch((e) => reportError(e, "Loading the fields"));
  else showSignIn();
}

// hashToken takes the token of a #token=… address and removes it from the
// address bar and the history at once.
function hashToken() {
  const t = new URLSearchParams(location.hash.slice(1)).get("token");
  if (t) history.replaceState(null, "", location.pathname + location.search);
  return t;
}

try {
  setup();
} catch (e) {
  showMessage("The viewer could not start: " + e.message);
}
