// The dashboard page served at /web (protocol/PROTOCOL.md, UI-7 to UI-9).
//
// It watches every session through /ws/ui?dashboard=1 and drives a private session of its
// own on /ws (the playground), all on the page's own origin; it reads /metadata and /schema
// for the environment's name and action schema. No dependencies, no build step. Values that
// come from the server are only ever put into the page as text (never as HTML); the one
// exception, the environment's own drawing of an observation (POST /web/view, UI-10), goes
// into a sandboxed frame of its own (no scripts, no requests, an opaque origin: SECURITY.md).
//
// A server with bearer tokens (SECURITY.md, SEC-TOKEN-1) refuses the page until it has one.
// The page asks the public GET /access first (SEC-TOKEN-2: whether a token is required and
// what the page's token grants), so it never provokes a refusal; it asks the user for a token
// when needed and keeps it in this tab's sessionStorage only. It goes out in
// the Authorization header of fetches and, since a browser cannot set headers on a
// WebSocket, as the subprotocol offer "openenv-anyio.bearer." + base64url(token); never in
// a URL, so it reaches no server or proxy log.

const $ = (id) => document.getElementById(id);
const SVG = "http://www.w3.org/2000/svg";
const TREE_ITEMS_SHOWN = 100;

/** session_id -> the latest episode_state of that session */
const sessions = new Map();
let selectedId = null;
let renderQueued = false;
/** JSON-tree paths the user opened or closed, so live updates keep them as they were */
const treeToggles = new Map();

const TOKEN_KEY = "openenv-anyio.token";
let token = sessionStorage.getItem(TOKEN_KEY);

function base64url(text) {
  let binary = "";
  for (const byte of new TextEncoder().encode(text)) binary += String.fromCharCode(byte);
  return btoa(binary).replaceAll("+", "-").replaceAll("/", "_").replace(/=+$/, "");
}

/** The subprotocols a WebSocket of this page offers: the token's carrier when it has one. */
function protocols() {
  return token ? ["openenv-anyio.v1", `openenv-anyio.bearer.${base64url(token)}`] : [];
}

function get(path) {
  return fetch(path, { headers: token ? { Authorization: `Bearer ${token}` } : {}, cache: "no-store" });
}

function post(path, body) {
  const headers = { "Content-Type": "application/json", ...(token ? { Authorization: `Bearer ${token}` } : {}) };
  return fetch(path, { method: "POST", headers, body: JSON.stringify(body), cache: "no-store" });
}

function wsUrl(path) {
  const url = new URL(path, location.href);
  url.protocol = location.protocol === "https:" ? "wss:" : "ws:";
  return url.href;
}

function el(tag, attributes = {}, ...children) {
  const node = document.createElement(tag);
  for (const [name, value] of Object.entries(attributes)) node.setAttribute(name, value);
  for (const child of children) node.append(child);
  return node;
}

function svgEl(tag, attributes = {}) {
  const node = document.createElementNS(SVG, tag);
  for (const [name, value] of Object.entries(attributes)) node.setAttribute(name, String(value));
  return node;
}

function formatNumber(value) {
  if (value === null || value === undefined) return "";
  if (typeof value === "boolean") return value ? "true" : "false";
  if (Number.isInteger(value)) return String(value);
  return Math.abs(value) >= 1000 ? value.toFixed(0) : value.toPrecision(4).replace(/\.?0+$/, "");
}

function formatAge(openedAt) {
  const seconds = Math.max(0, Math.floor((Date.now() - Date.parse(openedAt)) / 1000));
  if (seconds < 60) return `${seconds} s`;
  if (seconds < 3600) return `${Math.floor(seconds / 60)} min ${seconds % 60} s`;
  return `${Math.floor(seconds / 3600)} h ${Math.floor((seconds % 3600) / 60)} min`;
}

function shortId(id) {
  return id ? String(id).slice(0, 8) : "";
}

// ---------------------------------------------------------------- the /ws/ui feed

let feedRetryMs = 500;
/** whether the /ws/ui feed is open: the session list is only news while it is */
let feedLive = false;

function setFeed(state, text) {
  const badge = $("feed-status");
  badge.dataset.state = state;
  badge.textContent = text ?? state;
}

function connectFeed() {
  const socket = new WebSocket(wsUrl("/ws/ui?dashboard=1"), protocols());
  let opened = false;
  setFeed("connecting");
  socket.addEventListener("open", () => {
    opened = true;
    feedLive = true;
    feedRetryMs = 500;
    setFeed("live");
    queueRender();
  });
  socket.addEventListener("message", (event) => {
    const frame = JSON.parse(event.data);
    if (frame.type === "state_update") {
      sessions.set(frame.episode_state.session_id, frame.episode_state);
    } else if (frame.type === "session_closed") {
      sessions.delete(frame.session_id);
    } // other frame types are for other subscribers: ignored
    queueRender();
  });
  socket.addEventListener("close", async (event) => {
    feedLive = false;
    sessions.clear();
    queueRender();
    setFeed("closed", event.code === 1006 ? "disconnected" : `closed (${event.code})`);
    if (!opened && (await needsToken())) return; // the token form starts the page again
    setTimeout(connectFeed, feedRetryMs);
    feedRetryMs = Math.min(feedRetryMs * 2, 10000);
  });
}

/** What the page's token grants (SEC-TOKEN-2): {tokens_required, role}; role null when
 *  the server needs a token the page does not have. Null when the server is unreachable. */
async function fetchGrant() {
  try {
    const response = await get("/access");
    return response.ok ? await response.json() : null;
  } catch {
    return null;
  }
}

/** Whether the server refuses this page without a (valid) token; if so, ask for one. */
async function needsToken(grant) {
  grant = grant ?? (await fetchGrant());
  if (!grant || grant.role !== null) return false;
  setFeed("refused", token ? "token refused" : "token needed");
  $("token-form").hidden = false;
  $("token-input").focus();
  return true;
}

function wireTokenForm() {
  $("token-form").addEventListener("submit", (event) => {
    event.preventDefault();
    token = $("token-input").value.trim() || null;
    if (token) sessionStorage.setItem(TOKEN_KEY, token);
    else sessionStorage.removeItem(TOKEN_KEY);
    $("token-input").value = "";
    $("token-form").hidden = true;
    start();
  });
}

/** What the token grants on /ws/ui (SEC-UI-1): an operator sees every session in full; an
 *  agent sees other sessions without their observations. */
function showGrant(grant) {
  const role = grant?.tokens_required ? grant.role : null;
  $("grant").textContent =
    role === "agent" ? "agent token: other sessions are listed without their observations" : role === "operator" ? "operator token: every session in full" : "";
}

function queueRender() {
  if (renderQueued) return;
  renderQueued = true;
  requestAnimationFrame(() => {
    renderQueued = false;
    renderSessions();
    renderDetail();
  });
}

// ---------------------------------------------------------------- the session table

/** session_id -> its table row; rows are updated in place, so a click never lands on a
 *  row that a live update just replaced */
const rowsById = new Map();

function cellTexts(state) {
  return [
    shortId(state.session_id),
    shortId(state.episode_id),
    String(state.step_count),
    formatNumber(state.reward),
    formatNumber(state.episode_return),
    state.done ? "done" : "",
    formatAge(state.opened_at),
    state.brought_back ? `${state.status} · back (${state.brought_back})` : state.status,
  ];
}

function newRow(sessionId) {
  const row = el("tr", { "data-session": sessionId });
  const classes = ["id", "episode", "steps", "reward", "return", "done", "age", "status"];
  for (const name of classes) row.append(el("td", { class: name }));
  row.cells[0].title = sessionId;
  row.cells[7].append(el("span", { class: "state" }));
  return row;
}

function renderSessions() {
  const states = [...sessions.values()].sort((a, b) => a.opened_at.localeCompare(b.opened_at));
  $("session-count").textContent = String(states.length);
  $("no-sessions").hidden = states.length > 0 || !feedLive;
  $("no-feed").hidden = feedLive;
  const body = $("sessions").tBodies[0];
  for (const [id, row] of rowsById) {
    if (!sessions.has(id)) {
      row.remove();
      rowsById.delete(id);
    }
  }
  states.forEach((state, index) => {
    let row = rowsById.get(state.session_id);
    if (row === undefined) {
      row = newRow(state.session_id);
      rowsById.set(state.session_id, row);
    }
    if (body.rows[index] !== row) body.insertBefore(row, body.rows[index] ?? null);
    const texts = cellTexts(state);
    texts.forEach((text, column) => {
      const target = column === 7 ? row.cells[7].firstChild : row.cells[column];
      if (target.textContent !== text) target.textContent = text;
    });
    row.cells[1].title = state.episode_id ?? "";
    row.cells[7].firstChild.className = `state state-${state.status}`;
    row.cells[7].title = state.brought_back
      ? `came back after a server restart: ${state.brought_back === "replay" ? "replayed" : "restored from a snapshot"}`
      : "";
    row.classList.toggle("selected", state.session_id === selectedId);
  });
}

function wireSessionTable() {
  $("sessions").tBodies[0].addEventListener("click", (event) => {
    const row = event.target.closest("tr[data-session]");
    if (row === null) return;
    selectedId = row.dataset.session;
    queueRender();
  });
}

// ---------------------------------------------------------------- the selected session

function renderDetail() {
  const state = sessions.get(selectedId);
  $("detail").hidden = state === undefined;
  if (state === undefined) return;
  $("detail-id").textContent = state.session_id;
  drawRewardCurve(state.rewards ?? []);
  drawReturns(state.returns ?? [], state.episode_return ?? 0);
  const observation = state.current_observation;
  const image = observation ? findImage(observation, []) : null;
  $("frame-figure").hidden = image === null;
  if (image !== null) {
    $("frame").hidden = image.url !== undefined;
    $("frame-img").hidden = image.url === undefined;
    if (image.url !== undefined) {
      if ($("frame-img").getAttribute("src") !== image.url) $("frame-img").src = image.url;
    } else {
      drawImage($("frame"), image.pixels);
    }
    // an image at the observation's own "frame" member is the env's frame; any other is named by its path
    const isFrame = image.path.length === 1 && image.path[0] === "frame";
    $("frame-title").textContent = isFrame ? "Frame" : "Image at";
    $("frame-path").textContent = isFrame ? "" : ["observation", ...image.path].join(".");
    $("frame-path").hidden = isFrame;
  }
  const tree = $("observation");
  const hidden = observation == null && (state.step_count > 0 || state.is_reset);
  const empty = el("span", { class: "hint" }, hidden ? "not shown to this page's token (SEC-UI-1)" : "none yet");
  tree.replaceChildren(observation == null ? empty : jsonTree(withoutEmptySideMembers(observation), ["observation"], 0));
}

function isEmpty(value) {
  return value === null || (typeof value === "object" && Object.keys(value).length === 0);
}

/** Members that carry an environment's side information: left out of the tree when empty
 *  (openenv 0.10 sends ``metadata: {}`` with every observation of an env that has none,
 *  Gymnasium's ``info`` is ``{}`` on most steps), where they would only be noise. */
const SIDE_MEMBERS = ["metadata", "info"];

function withoutEmptySideMembers(observation) {
  if (typeof observation !== "object" || Array.isArray(observation)) return observation;
  return Object.fromEntries(Object.entries(observation).filter(([key, value]) => !(SIDE_MEMBERS.includes(key) && isEmpty(value))));
}

function scaled(values, width, height) {
  const low = Math.min(0, ...values);
  const high = Math.max(1e-9, ...values);
  const span = high - low || 1;
  const step = values.length > 1 ? width / (values.length - 1) : 0;
  return values.map((value, index) => [index * step, height - ((value - low) / span) * height]);
}

function drawRewardCurve(rewards) {
  const svg = $("reward-curve");
  let total = 0;
  const totals = [0, ...rewards.map((reward) => (total += reward ?? 0))];
  const scaledPoints = scaled(totals, 320, 116);
  const points = scaledPoints.map(([x, y]) => `${x.toFixed(1)},${(y + 2).toFixed(1)}`);
  const zero = scaledPoints[0][1] + 2; // the first point is the return 0 at step 0
  svg.replaceChildren(svgEl("line", { class: "zero", x1: 0, x2: 320, y1: zero, y2: zero }), svgEl("polyline", { points: points.join(" ") }));
  // the axes: the return's range (the curve starts at 0) and the steps so far
  $("curve-y-high").textContent = formatNumber(Math.max(0, ...totals));
  $("curve-y-low").textContent = formatNumber(Math.min(0, ...totals));
  $("curve-x-high").textContent = String(rewards.length);
  $("curve-label").textContent = `${rewards.length} steps, return ${formatNumber(total)}`;
}

function drawReturns(returns, current) {
  const svg = $("returns-chart");
  const values = [...returns, current];
  const high = Math.max(1e-9, ...values.map(Math.abs));
  const width = 320 / Math.max(values.length, 10);
  // the axes: bars are the size of each return (the highest at the top), one per episode
  $("returns-y-high").textContent = formatNumber(Math.max(0, ...values.map(Math.abs)));
  $("returns-x-high").textContent = String(Math.max(values.length, 10)); // the chart has room for 10 at least
  svg.replaceChildren(
    ...values.map((value, index) => {
      const height = (Math.abs(value) / high) * 116;
      const bar = svgEl("rect", { x: index * width + 1, y: 118 - height, width: Math.max(width - 2, 1), height });
      bar.classList.add("bar");
      if (index === values.length - 1) bar.classList.add("current");
      const title = svgEl("title");
      title.textContent = `${index === values.length - 1 ? "this episode so far" : `episode ${index + 1}`}: ${formatNumber(value)}`;
      bar.append(title);
      return bar;
    }),
  );
}

/** An array of rows of pixels (height x width x 3 or 4 integers in 0-255), or null. */
function asImage(value) {
  if (!Array.isArray(value) || value.length === 0) return null;
  const row = value[0];
  if (!Array.isArray(row) || row.length === 0 || !Array.isArray(row[0])) return null;
  const channels = row[0].length;
  if (channels !== 3 && channels !== 4) return null;
  const last = value[value.length - 1];
  const corners = [row[0], row[row.length - 1], last?.[0], last?.[last.length - 1]];
  const isPixel = (pixel) =>
    Array.isArray(pixel) && pixel.length === channels && pixel.every((c) => Number.isInteger(c) && c >= 0 && c <= 255);
  return corners.every(isPixel) ? value : null;
}

/** A PNG or JPEG image as a data: URL (what the Gymnasium adapter sends as ``frame``). */
function isImageUrl(value) {
  return typeof value === "string" && /^data:image\/(png|jpeg);base64,/.test(value);
}

function findImage(value, path) {
  if (isImageUrl(value)) return { url: value, path };
  if (asImage(value)) return { pixels: value, path };
  if (value && typeof value === "object" && !Array.isArray(value)) {
    for (const [key, child] of Object.entries(value)) {
      const found = findImage(child, [...path, key]);
      if (found) return found;
    }
  }
  return null;
}

function drawImage(canvas, pixels) {
  const height = pixels.length;
  const width = pixels[0].length;
  canvas.width = width;
  canvas.height = height;
  const context = canvas.getContext("2d");
  const image = context.createImageData(width, height);
  const data = image.data;
  let offset = 0;
  for (const row of pixels) {
    for (let x = 0; x < width; x++) {
      const pixel = row[x] ?? [0, 0, 0];
      data[offset] = pixel[0];
      data[offset + 1] = pixel[1];
      data[offset + 2] = pixel[2];
      data[offset + 3] = pixel.length === 4 ? pixel[3] : 255;
      offset += 4;
    }
  }
  context.putImageData(image, 0, 0);
}

function jsonLeaf(value) {
  if (isImageUrl(value)) return el("span", { class: "lit" }, `image (${Math.round((value.length * 3) / 4 / 1024)} kB, drawn above)`);
  if (typeof value === "string") return el("span", { class: "str" }, JSON.stringify(value));
  if (typeof value === "number") return el("span", { class: "num" }, String(value));
  return el("span", { class: "lit" }, String(value));
}

function jsonTree(value, path, depth) {
  if (value === null || typeof value !== "object") return jsonLeaf(value);
  const key = path.join("\u0000");
  const image = asImage(value);
  const entries = Array.isArray(value) ? value.map((child, index) => [index, child]) : Object.entries(value);
  const summary = image
    ? `image ${image.length} × ${image[0].length} × ${image[0][0].length}`
    : Array.isArray(value)
      ? `[${value.length}]`
      : `{${entries.length}}`;
  const details = el("details", {}, el("summary", {}, el("span", { class: "key" }, String(path[path.length - 1])), `: ${summary}`));
  details.open = treeToggles.has(key) ? treeToggles.get(key) : depth < 2 && !image;
  details.addEventListener("toggle", () => treeToggles.set(key, details.open));
  if (image) return details;
  for (const [name, child] of entries.slice(0, TREE_ITEMS_SHOWN)) {
    if (child !== null && typeof child === "object") {
      details.append(jsonTree(child, [...path, name], depth + 1));
    } else {
      details.append(el("div", { class: "leaf" }, el("span", { class: "key" }, String(name)), ": ", jsonLeaf(child)));
    }
  }
  if (entries.length > TREE_ITEMS_SHOWN) {
    details.append(el("div", { class: "leaf hint" }, `… ${entries.length - TREE_ITEMS_SHOWN} more`));
  }
  return details;
}

// ---------------------------------------------------------------- the playground

const playground = {
  socket: null,
  rootSchema: null,
  readAction: null,
  /** the last observation ended the episode: Step waits for a reset */
  done: false,
  /** the types of the requests sent and not answered yet, oldest first (answers come in order) */
  pending: [],
  /** the number of the latest drawing asked for: an older answer arriving late is dropped */
  viewAsked: 0,
};
let logCount = 0;

/** Arguments whose names end so are masked in the form and the log, as upstream's playground does. */
const SECRET_SUFFIXES = ["api_key", "token", "secret", "password"];
const MASK = "•••";

function isSecret(name) {
  const lower = String(name).toLowerCase();
  return SECRET_SUFFIXES.some((suffix) => lower.endsWith(suffix));
}

/** ``value`` with every member whose name is a secret's replaced by a mask (a copy). */
function masked(value) {
  if (Array.isArray(value)) return value.map(masked);
  if (value === null || typeof value !== "object") return value;
  return Object.fromEntries(Object.entries(value).map(([key, child]) => [key, isSecret(key) && child != null && child !== "" ? MASK : masked(child)]));
}

function log(text, kind, detail) {
  const item = el("li", { class: kind }, el("span", { class: "n" }, `${++logCount}.`), text);
  if (detail !== undefined) item.append(el("details", {}, el("summary", {}, "frame"), JSON.stringify(masked(detail), null, 2)));
  $("pg-log").prepend(item);
}

function setPlaygroundOpen(open, status) {
  $("pg-status").textContent = status;
  for (const id of ["pg-reset", "pg-state", "pg-end"]) $(id).disabled = !open;
  $("pg-start").disabled = open;
  $("pg-fields").disabled = !open;
  setStepping(open && !playground.done);
}

/** Step (the button, Enter and the one-click actions) only while an episode runs. */
function setStepping(allowed) {
  $("pg-step").disabled = !allowed;
  for (const button of $("pg-actions").querySelectorAll("button")) button.disabled = !allowed;
}

function playgroundOpen() {
  return playground.socket !== null && playground.socket.readyState === WebSocket.OPEN;
}

/** An observation arrived: an episode that ended takes no more steps until a reset. */
function episodeAnswered(done) {
  playground.done = done;
  setStepping(playgroundOpen() && !done);
  if (done) $("pg-status").textContent = "episode over: reset to start another";
  else if (playgroundOpen()) $("pg-status").textContent = "session open";
}

/** Follows a local "#/$defs/..." reference of the action schema. */
function resolve(schema) {
  let current = schema ?? {};
  for (let hops = 0; typeof current.$ref === "string" && current.$ref.startsWith("#/") && hops < 32; hops++) {
    current = current.$ref
      .slice(2)
      .split("/")
      .reduce((node, part) => node?.[part.replaceAll("~1", "/").replaceAll("~0", "~")], playground.rootSchema) ?? {};
  }
  const options = current.anyOf ?? current.oneOf;
  if (Array.isArray(options)) {
    const nonNull = options.filter((option) => option.type !== "null");
    if (nonNull.length === 1) return { ...resolve(nonNull[0]), nullable: true };
  }
  return current;
}

function typeOf(schema) {
  return Array.isArray(schema.type) ? schema.type.find((type) => type !== "null") : schema.type;
}

/** The value a field starts from: the schema's default, else its first example, else the
 *  enclosing object's example's member (``example``); undefined when the schema offers none. */
function startingValue(schema, example) {
  if (schema.default !== undefined) return schema.default;
  if (Array.isArray(schema.examples) && schema.examples.length > 0) return schema.examples[0];
  return example;
}

/** A form control for ``schema``: returns [element, read] where read() gives the value
 *  (undefined when left empty) or throws an Error naming the field. A field starts from the
 *  schema's default or example; a required number without either starts at its minimum or 0,
 *  so that Reset then Step sends a valid action when the schema allows one. */
function control(schemaIn, name, required, example) {
  const schema = resolve(schemaIn);
  const start = startingValue(schema, example);
  const label = (input) => el("label", { class: "field" }, el("span", { title: schema.description ?? "" }, name), input);
  if (Array.isArray(schema.enum)) {
    const select = el("select", { name });
    if (!required) select.append(el("option", { value: "" }, "—"));
    schema.enum.forEach((option, index) => select.append(el("option", { value: String(index) }, JSON.stringify(option))));
    const chosen = schema.enum.findIndex((option) => JSON.stringify(option) === JSON.stringify(start));
    if (chosen >= 0) select.value = String(chosen);
    return [label(select), () => (select.value === "" ? undefined : schema.enum[Number(select.value)])];
  }
  if ("const" in schema) return [label(el("code", {}, JSON.stringify(schema.const))), () => schema.const];
  const type = typeOf(schema);
  if (type === "boolean") {
    const box = el("input", { type: "checkbox", name });
    box.checked = start === true;
    return [label(box), () => box.checked];
  }
  if (type === "integer" || type === "number") {
    const input = el("input", { type: "number", name, step: type === "integer" ? "1" : "any" });
    if (schema.minimum !== undefined) input.min = schema.minimum;
    if (schema.maximum !== undefined) input.max = schema.maximum;
    if (typeof start === "number") input.value = String(start);
    else if (required) input.value = String(schema.minimum ?? (schema.exclusiveMinimum !== undefined ? schema.exclusiveMinimum + 1 : 0));
    return [label(input), () => (input.value === "" ? undefined : Number(input.value))];
  }
  if (type === "string") {
    const input = el("input", { type: isSecret(name) ? "password" : "text", name });
    if (typeof start === "string") input.value = start;
    return [label(input), () => (input.value === "" && !required ? undefined : input.value)];
  }
  if (type === "object" && schema.properties) {
    const fieldset = el("fieldset", {}, el("legend", {}, name));
    const examples = start !== null && typeof start === "object" ? start : {};
    const readers = Object.entries(schema.properties).map(([key, child]) => {
      const [element, read] = control(child, key, (schema.required ?? []).includes(key), examples[key]);
      fieldset.append(element);
      return [key, read];
    });
    const read = () => {
      const value = {};
      for (const [key, readChild] of readers) {
        const child = readChild();
        if (child !== undefined) value[key] = child;
      }
      return value;
    };
    return [fieldset, read];
  }
  const input = el("input", { type: isSecret(name) ? "password" : "text", name, placeholder: "JSON" });
  if (start !== undefined) input.value = JSON.stringify(start);
  return [
    label(input),
    () => {
      if (input.value.trim() === "") return undefined;
      try {
        return JSON.parse(input.value);
      } catch (error) {
        throw new Error(`${name}: not JSON (${error.message})`);
      }
    },
  ];
}

function buildForm(actionSchema) {
  playground.rootSchema = actionSchema;
  const fields = $("pg-fields");
  fields.replaceChildren(el("legend", {}, "Action"));
  const schema = resolve(actionSchema);
  const formed = typeOf(schema) === "object" && schema.properties;
  if (formed) {
    const [element, read] = control(schema, "action", true);
    fields.append(...[...element.childNodes].filter((node) => node.tagName !== "LEGEND"));
    playground.readAction = read;
    $("pg-use-json").checked = false;
  } else {
    playground.readAction = null;
    $("pg-use-json").checked = true;
  }
  // no form, no empty Action box: the JSON box is the action, and says why
  fields.hidden = !formed;
  $("pg-json-toggle").hidden = !formed;
  $("pg-json-hint").hidden = formed;
  $("pg-json-hint").textContent = declaresNothing(actionSchema ?? {})
    ? "Action (JSON): the environment declares no action schema."
    : "Action (JSON): this schema has no form.";
  syncJson();
}

/** Whether an action schema says nothing beyond "an object" (what a server publishes for an
 *  environment that declares none). */
function declaresNothing(schema) {
  const said = Object.keys(schema).filter((key) => !["type", "title", "description", "$schema"].includes(key));
  return said.length === 0 && (schema.type === undefined || schema.type === "object");
}

/** The JSON box shows the form's action (secrets masked) until the user chooses to send the
 *  box instead: then it gets the action as it is, to edit. */
function syncJson(toggled = false) {
  if (playground.readAction === null) return;
  const raw = $("pg-use-json").checked;
  if (raw && !toggled) return; // the user's own JSON: the form no longer writes it
  try {
    const action = playground.readAction();
    $("pg-json").value = JSON.stringify(raw ? action : masked(action));
  } catch (error) {
    if (!raw) $("pg-json").value = "";
  }
}

function currentAction() {
  if ($("pg-use-json").checked || playground.readAction === null) {
    const text = $("pg-json").value.trim() || "{}";
    try {
      return JSON.parse(text);
    } catch (error) {
      throw new Error(`the action is not JSON: ${error.message}`);
    }
  }
  return playground.readAction();
}

function describeReply(frame) {
  const data = frame.data ?? {};
  if (frame.type === "observation") return [`← observation  reward ${formatNumber(data.reward)}  done ${data.done}`, "reply"];
  if (frame.type === "state") return [`← state  episode ${data.episode_id}  steps ${data.step_count}`, "reply"];
  if (frame.type === "error") {
    const pointers = [data.pointer, ...(Array.isArray(data.errors) ? data.errors.map((entry) => entry?.pointer) : [])]
      .filter((pointer) => typeof pointer === "string")
      .map((pointer) => pointer || "/");
    const where = pointers.length ? ` (at ${[...new Set(pointers)].join(", ")})` : "";
    return [`← error ${data.code}${where}: ${data.message}`, "error"];
  }
  return [`← ${frame.type}`, "reply"];
}

async function startPlayground() {
  setPlaygroundOpen(false, "starting…");
  $("pg-start").disabled = true;
  try {
    const response = await get("/schema");
    if (!response.ok) throw new Error(`GET /schema answered ${response.status}`);
    buildForm((await response.json()).action ?? {});
  } catch (error) {
    log(`could not read the action schema: ${error.message}`, "error");
    buildForm({});
  }
  const socket = new WebSocket(wsUrl("/ws"), protocols());
  playground.socket = socket;
  playground.pending = [];
  playground.done = false;
  showView(null, []);
  socket.addEventListener("open", () => setPlaygroundOpen(true, "session open: reset to start an episode"));
  socket.addEventListener("message", (event) => {
    const frame = JSON.parse(event.data);
    const asked = ["observation", "state", "error"].includes(frame.type) ? playground.pending.shift() : undefined;
    if (frame.type === "observation" && asked === "reset") log("new episode", "episode");
    const [text, kind] = describeReply(frame);
    log(text, kind, frame);
    if (frame.type === "observation") {
      episodeAnswered(frame.data?.done === true);
      drawObservation(frame.data ?? {});
    }
    if (frame.type === "error" && asked === "reset") {
      log("the reset failed: the episode, its drawing and its actions are kept", "error");
    }
  });
  socket.addEventListener("close", (event) => {
    if (playground.socket === socket) playground.socket = null;
    setPlaygroundOpen(false, `session ended (${event.code}${event.reason ? `: ${event.reason}` : ""})`);
  });
}

function send(frame) {
  const socket = playground.socket;
  if (socket === null || socket.readyState !== WebSocket.OPEN) return;
  socket.send(JSON.stringify(frame));
  if (frame.type !== "close") playground.pending.push(frame.type);
  log(`→ ${JSON.stringify(masked(frame))}`, "sent");
}

/** What the drawing frame may do on its own (with its sandbox: no scripts, an opaque origin). */
const DRAWING_POLICY = "default-src 'none'; style-src 'unsafe-inline'; img-src data:; form-action 'none'";

/** Ask the server for the environment's drawing and one-click actions of an observation
 *  (UI-10); the latest answer wins. */
async function drawObservation(data) {
  const asked = ++playground.viewAsked;
  let view;
  try {
    const response = await post("/web/view", data);
    view = await response.json();
    if (!response.ok) throw new Error(`POST /web/view answered ${response.status}: ${view.detail ?? ""}`);
  } catch (error) {
    if (asked === playground.viewAsked) log(`could not draw the observation: ${error.message}`, "error");
    return;
  }
  if (asked === playground.viewAsked) showView(view.html ?? null, view.actions ?? []);
}

function showView(html, actions) {
  $("pg-view").hidden = html === null && actions.length === 0;
  const frame = $("pg-drawing");
  frame.hidden = html === null;
  const page = html === null ? "" : `<!doctype html><html><head><meta charset="utf-8"><meta http-equiv="Content-Security-Policy" content="${DRAWING_POLICY}"></head><body>${html}</body></html>`;
  if (frame.srcdoc !== page) frame.srcdoc = page;
  const open = playgroundOpen() && !playground.done;
  $("pg-actions").replaceChildren(
    ...actions.map(({ label, action }) => {
      const button = el("button", { type: "button", title: JSON.stringify(masked(action)) }, String(label));
      button.disabled = !open;
      button.addEventListener("click", () => send({ type: "step", data: action }));
      return button;
    }),
  );
}

function wirePlayground() {
  $("pg-start").addEventListener("click", startPlayground);
  $("pg-end").addEventListener("click", () => {
    send({ type: "close" });
    playground.socket?.close(1000);
  });
  $("pg-reset").addEventListener("click", () => send({ type: "reset", data: {} }));
  $("pg-state").addEventListener("click", () => send({ type: "state" }));
  $("pg-form").addEventListener("submit", (event) => {
    event.preventDefault();
    let action;
    try {
      action = currentAction();
    } catch (error) {
      log(error.message, "error");
      return;
    }
    send({ type: "step", data: action });
  });
  $("pg-form").addEventListener("keydown", (event) => {
    // Enter in a field steps (a select or checkbox too, where the browser would not submit)
    if (event.key !== "Enter" || event.isComposing || !["INPUT", "SELECT"].includes(event.target.tagName)) return;
    event.preventDefault();
    if (!$("pg-step").disabled) $("pg-form").requestSubmit();
  });
  $("pg-form").addEventListener("input", (event) => {
    if (event.target !== $("pg-json") && event.target !== $("pg-use-json")) syncJson();
  });
  $("pg-use-json").addEventListener("change", () => syncJson(true));
}

// ---------------------------------------------------------------- start

async function showEnvName() {
  try {
    const response = await get("/metadata");
    if (response.ok) {
      const metadata = await response.json();
      $("env-name").textContent = metadata.name ?? "";
      document.title = `${metadata.name ?? "environment"} · openenv-anyio`;
    }
  } catch {
    // the name is a nicety: the feed's badge already tells when the server is unreachable
  }
}

/** Ask for a token if the server needs one, else show what the token grants and go live. */
async function start() {
  const grant = await fetchGrant();
  if (await needsToken(grant)) return; // the token form starts again
  showGrant(grant);
  showEnvName();
  connectFeed();
}

wireTokenForm();
wireSessionTable();
wirePlayground();
start();
setInterval(queueRender, 1000); // ages
