// The web UI's one script: seven screens, each shown by the URL's fragment and each
// calling the API as docs/authentication.md, "The web UI", maps it.
//
//   #/login              login          POST   /api/login
//   #/users[?cursor=..]  user list      GET    /api/users
//   #/users/3            user detail    GET    /api/users/3
//   #/users/3/edit       user edit      PUT    /api/users/3
//   #/register           user register  POST   /api/users
//   #/users/3/delete     user delete    DELETE /api/users/3 (after a confirmation)
//   #/explore            explore        POST   /lab/explain (docs/explain.md)
//
// It is authenticated by the session cookie the login sets (HttpOnly: no script
// reads it) and keeps the CSRF token only in memory, from the login's answer or
// from GET /api/session when the page is loaded anew. The Bearer token the login
// also answers is never kept. Text from the API is written with textContent only,
// never parsed as HTML.

const API = document.body.dataset.api; // "/prod/api" under the mount point /prod
const LAB = document.body.dataset.lab; // "/prod/lab": the learner's lab
const PAGE_SIZE = 10;

// The retry policy (docs/authentication.md, "Retries"): at most RETRIES retries, waiting
// 2**i * BASE_DELAY_MS before retry i, or Retry-After seconds x 1000 when the
// answer has one. Only what may pass by itself is retried: a network failure and
// these statuses. Anything else is shown at once, so a wrong password is never
// sent twice. The script waits by itself only up to LONGEST_WAIT_MS: a longer
// Retry-After (a login locked for minutes) is shown in words, and nothing is
// sent again until the person acts.
const RETRIES = 3;
const BASE_DELAY_MS = 300;
const LONGEST_WAIT_MS = 5000;
const RETRIED_STATUSES = new Set([429, 502, 503, 504]);

// Who is logged in, and the CSRF token of the session; null when nobody is.
const state = { user: null, csrfToken: null, next: null, flash: "", email: "" };

class ApiError extends Error {
  // `waitMs`: how long the answer asked to wait before asking again (its
  // Retry-After), when that was too long to wait by ourselves; null otherwise.
  constructor(status, body, waitMs = null) {
    const known = body && typeof body.message === "string";
    super(waitMs !== null ? tooSoon(status, waitMs)
      : known ? body.message : `The service answered ${status}.`);
    this.status = status;
    this.code = known ? body.code : "";
    this.details = (known && body.details) || {};
  }
}

// A wait in words, never shorter than the wait (docs/authentication.md,
// "Retries"): seconds under a minute, minutes rounded up under two hours, hours
// rounded up beyond. "in 637 s" is a sum to do; "in 11 minutes" is not.
function inWords(ms) {
  const plural = (n, unit) => `${n} ${unit}${n === 1 ? "" : "s"}`;
  const seconds = Math.ceil(ms / 1000);
  if (seconds < 60) return plural(seconds, "second");
  const minutes = Math.ceil(seconds / 60);
  if (minutes < 120) return plural(minutes, "minute");
  return plural(Math.ceil(minutes / 60), "hour");
}

function tooSoon(status, waitMs) {
  const what = status === 429 ? "Too many attempts" : "The service is busy";
  return `${what}; try again in ${inWords(waitMs)}.`;
}

const NETWORK_FAILURE = { code: "NETWORK", message: "The service could not be reached." };

function sleep(ms) {
  return new Promise((resolve) => setTimeout(resolve, ms));
}

function waitBefore(retry, response) {
  const retryAfter = response ? response.headers.get("Retry-After") : null;
  if (retryAfter !== null && /^\d+$/.test(retryAfter.trim())) {
    return Number(retryAfter) * 1000;
  }
  return 2 ** retry * BASE_DELAY_MS;
}

// fetch() under the retry policy: the last answer, or ApiError after the last
// network failure or before a wait too long to make by ourselves.
async function send(method, path, body, base = API) {
  const headers = { Accept: "application/json" };
  const init = { method, headers, credentials: "same-origin" };
  if (body !== undefined) {
    headers["Content-Type"] = "application/json";
    init.body = JSON.stringify(body);
  }
  if (method !== "GET" && state.csrfToken) {
    headers["X-CSRF-Token"] = state.csrfToken;
  }
  for (let retry = 0; ; retry += 1) {
    let response = null;
    try {
      response = await fetch(base + path, init);
    } catch {
      if (retry === RETRIES) {
        if (retry > 0) setStatus("");
        throw new ApiError(0, NETWORK_FAILURE);
      }
    }
    if (response && (!RETRIED_STATUSES.has(response.status) || retry === RETRIES)) {
      if (retry > 0) setStatus(""); // the note of the wait below
      return response;
    }
    const wait = waitBefore(retry, response);
    if (wait > LONGEST_WAIT_MS) {
      // Too long to hold the screen: say how long, and leave the next try to
      // the person (docs/authentication.md, "Retries").
      if (retry > 0) setStatus("");
      throw new ApiError(response.status, await bodyOf(response), wait);
    }
    setStatus(`No answer yet; trying again in ${inWords(wait)}.`);
    await sleep(wait);
  }
}

// The JSON of an answer, or null (an empty body, or a proxy's page: the status
// is all there is).
async function bodyOf(response) {
  const text = await response.text();
  try {
    return text ? JSON.parse(text) : null;
  } catch {
    return null;
  }
}

// One API call: the JSON of a success (null for 204), or ApiError with the
// error object's message.
async function api(method, path, body, base = API) {
  const response = await send(method, path, body, base);
  const data = await bodyOf(response);
  if (!response.ok) throw new ApiError(response.status, data);
  return data;
}

// --- what the page shows -------------------------------------------------------

const screen = document.getElementById("screen");

function setStatus(text) {
  document.getElementById("status").textContent = text;
}

function clearError() {
  document.getElementById("error").hidden = true;
  document.getElementById("error-message").textContent = "";
  document.getElementById("error-fields").replaceChildren();
  for (const note of screen.querySelectorAll(".field-error")) note.remove();
  for (const input of screen.querySelectorAll("[aria-invalid]")) {
    input.removeAttribute("aria-invalid");
    input.removeAttribute("aria-describedby");
  }
}

// The input of `form` that an error names, or null. The error object names a
// field by a JSON pointer (RFC 6901) in details.errors ("/firstName"), or by its
// bare name in details.field ("email", a conflict); each input's name is the
// member's. A textarea may hold a whole list (Explore's header lines), so a
// pointer into it ("/headers/2/0") names it too. Only an input the person can
// see counts: the Role select a user is not shown keeps its error in the
// form-level message.
function inputNamed(form, field) {
  if (!form || typeof field !== "string" || field === "") return null;
  const path = field.startsWith("/") ? field.slice(1).split("/") : [field];
  const name = path[0].replaceAll("~1", "/").replaceAll("~0", "~");
  const input = form.elements.namedItem(name);
  const one = input instanceof HTMLInputElement || input instanceof HTMLSelectElement;
  const control = input instanceof HTMLTextAreaElement || (one && path.length === 1);
  return control && !input.disabled && !input.closest("[hidden]") ? input : null;
}

// The message goes just below the input, which points at it with
// aria-describedby, so a screen reader reads it with the input's label
// (WAI-ARIA 1.2, aria-invalid and aria-describedby).
function markInvalid(input, message) {
  const note = document.createElement("p");
  note.className = "field-error";
  note.id = `${input.id}-error`;
  note.textContent = message;
  input.after(note);
  input.setAttribute("aria-invalid", "true");
  input.setAttribute("aria-describedby", note.id);
}

// The error object's message above the form; each field error beside the input
// it names, or, when `form` has no such input, listed under the message. The
// first input in error takes the focus; when none is, the message does: the
// form's button, disabled while it was sent, lost it (WCAG 2.2, 2.4.3).
function showError(error, form = null) {
  const { errors, field } = error.details;
  const besides = new Map(); // input -> its messages
  const unplaced = [];
  for (const item of Array.isArray(errors) ? errors : []) {
    const input = inputNamed(form, item.field);
    if (input) besides.set(input, [...(besides.get(input) || []), item.message]);
    else unplaced.push(item);
  }
  const input = inputNamed(form, field); // the message itself is about it
  if (input && !besides.has(input)) besides.set(input, [error.message]);
  document.getElementById("error-message").textContent = error.message;
  document.getElementById("error-fields").replaceChildren(
    ...unplaced.map((item) => {
      const li = document.createElement("li");
      li.textContent = item.field ? `${item.field}: ${item.message}` : item.message;
      return li;
    }),
  );
  document.getElementById("error").hidden = false;
  for (const [input, messages] of besides) markInvalid(input, messages.join("; "));
  const first = form && [...form.elements].find((input) => besides.has(input));
  if (first) first.focus();
  else if (form) document.getElementById("error-message").focus();
}

function showWho() {
  const user = state.user;
  document.getElementById("who").textContent = user
    ? `Logged in as ${user.email} (${user.role})`
    : "";
  document.getElementById("login-link").hidden = Boolean(user);
  document.getElementById("register-link").hidden = Boolean(user);
  document.getElementById("logout").hidden = !user;
}

// A new copy of the screen of template `name`, not yet on the page: each screen
// function fills one in and returns it, and route() shows it.
function build(name) {
  return document.importNode(document.getElementById(`screen-${name}`).content, true);
}

function fill(view, record) {
  for (const element of view.querySelectorAll("[data-field]")) {
    element.textContent = String(record[element.dataset.field] ?? "");
  }
}

function mayChange(user) {
  return state.user.role === "admin" || state.user.id === user.id;
}

// A form's submit handler: the API call runs once per submit, and its error is
// shown on the screen.
function onSubmit(form, action) {
  form.addEventListener("submit", async (event) => {
    event.preventDefault();
    clearError();
    const button = form.querySelector("button[type=submit]");
    button.disabled = true;
    try {
      await action(Object.fromEntries(new FormData(form)));
    } catch (error) {
      failed(error, form);
    } finally {
      button.disabled = false;
    }
  });
}

function go(hash, flash = "") {
  state.flash = flash;
  if (location.hash === hash) route();
  else location.hash = hash;
}

function loggedIn(body) {
  state.user = body.user;
  state.csrfToken = body.csrfToken;
  showWho();
}

function loggedOut() {
  state.user = null;
  state.csrfToken = null;
  showWho();
}

// An error of a call (of `form`'s submit, when given): a session that has ended
// sends the user to log in again.
function failed(error, form = null) {
  if (error.code === "UNAUTHENTICATED" && state.user) {
    loggedOut();
    state.next = location.hash;
    go("#/login", "Your session has ended: log in again.");
    return;
  }
  showError(error, form);
}

// --- the screens ---------------------------------------------------------------

async function showLogin() {
  const view = build("login");
  const form = view.querySelector("form");
  form.elements.email.value = state.email;
  onSubmit(form, async ({ email, password }) => {
    loggedIn(await api("POST", "/login", { email, password }));
    const next = state.next || "#/users";
    state.next = null;
    go(next);
  });
  return view;
}

async function showUsers(cursor) {
  let query = `?limit=${PAGE_SIZE}`;
  if (cursor) query += `&cursor=${encodeURIComponent(cursor)}`;
  const page = await api("GET", `/users${query}`);
  const view = build("users");
  const rows = page.data.map((user) => {
    const row = document.createElement("tr");
    const link = document.createElement("a");
    link.href = `#/users/${user.id}`;
    link.textContent = user.email;
    const name = `${user.firstName} ${user.lastName}`.trim();
    for (const cell of [String(user.id), link, name, user.role]) {
      const td = document.createElement("td");
      td.append(cell);
      row.append(td);
    }
    return row;
  });
  view.querySelector("tbody").replaceChildren(...rows);
  view.querySelector("[data-empty]").hidden = rows.length > 0;
  // "First page" only past the first page: on it, the link would lead nowhere.
  view.querySelector("[data-first]").hidden = !cursor;
  const next = view.querySelector("[data-next]");
  if (page.nextCursor) {
    next.href = `#/users?cursor=${encodeURIComponent(page.nextCursor)}`;
    next.hidden = false;
  }
  return view;
}

async function showUser(id) {
  const user = await api("GET", `/users/${id}`);
  const view = build("user");
  fill(view, user);
  if (mayChange(user)) {
    for (const [name, path] of [["edit", "edit"], ["delete", "delete"]]) {
      const link = view.querySelector(`[data-${name}]`);
      link.href = `#/users/${id}/${path}`;
      link.hidden = false;
    }
  }
  return view;
}

async function showEdit(id) {
  const user = await api("GET", `/users/${id}`);
  const view = build("edit");
  fill(view, user);
  const form = view.querySelector("form");
  for (const name of ["email", "firstName", "lastName", "role"]) {
    form.elements[name].value = user[name];
  }
  const admin = state.user.role === "admin";
  view.querySelector("[data-admin]").hidden = !admin;
  view.querySelector("[data-cancel]").href = `#/users/${id}`;
  // Users changing their own password give the current one too; an admin
  // changing someone else's does not. Disabled while hidden, the field is
  // neither required nor sent.
  const own = user.id === state.user.id;
  const { password, currentPassword } = form.elements;
  password.addEventListener("input", () => {
    const asked = own && password.value !== "";
    currentPassword.closest("[data-current-password]").hidden = !asked;
    currentPassword.disabled = !asked;
  });
  onSubmit(form, async (values) => {
    const body = {
      email: values.email,
      firstName: values.firstName,
      lastName: values.lastName,
    };
    if (values.password) body.password = values.password;
    if (values.password && own) body.currentPassword = values.currentPassword;
    if (admin) body.role = values.role;
    const saved = await api("PUT", `/users/${id}`, body).catch((error) => {
      // A wrong or missing current password is 403 FORBIDDEN, naming no field.
      // No other 403 answers this PUT (the user edits their own record, and
      // only an admin sends a role), so its message goes beside that field.
      const { errors, field } = error.details;
      if (error.code === "FORBIDDEN" && "currentPassword" in body && !errors && !field) {
        error.details.field = "currentPassword";
      }
      throw error;
    });
    if (saved.id === state.user.id) {
      state.user = saved;
      showWho();
    }
    go(`#/users/${id}`, "Saved.");
  });
  return view;
}

async function showRegister() {
  const view = build("register");
  onSubmit(view.querySelector("form"), async (values) => {
    const user = await api("POST", "/users", values);
    state.email = user.email;
    go("#/login", `Registered ${user.email}: log in.`);
  });
  return view;
}

async function showDelete(id) {
  const user = await api("GET", `/users/${id}`);
  const view = build("delete");
  fill(view, user);
  view.querySelector("[data-cancel]").href = `#/users/${id}`;
  onSubmit(view.querySelector("form"), async () => {
    await api("DELETE", `/users/${id}`);
    if (user.id === state.user.id) {
      loggedOut(); // the account's logins went with it
      go("#/login", "Your account was deleted.");
    } else {
      go("#/users", `Deleted ${user.email}.`);
    }
  });
  return view;
}

// Explore: the form's request is run by POST /lab/explain, and the exchange shown
// with what each status and field means (docs/explain.md). Logged in, the call
// carries the CSRF token, so the session counts for the explained request too.
// Everything shown comes from the answer and may quote what a response said: it
// is written with textContent, never parsed as HTML.
//
// The header lines as [name, value] pairs, and the line each pair is on
// (counting from 1, blank lines too), so that an error can say which.
function headerLines(text) {
  const pairs = [];
  const lines = [];
  text.split("\n").forEach((line, index) => {
    if (line.trim() === "") return;
    const colon = line.indexOf(":");
    pairs.push(colon < 0 ? [line.trim(), ""]
      : [line.slice(0, colon).trim(), line.slice(colon + 1).trim()]);
    lines.push(index + 1);
  });
  return { pairs, lines };
}

// An error of a header field is named by a pointer into the list sent
// ("/headers/2/0", the third pair's name); it goes beside the textarea, so it
// says which line instead.
function onLines(error, lines) {
  for (const item of Array.isArray(error.details.errors) ? error.details.errors : []) {
    const [, index, part] = /^\/headers\/(\d+)(?:\/([01]))?$/.exec(item.field) || [];
    const line = lines[Number(index)];
    if (line === undefined) continue; // not a line: the CSRF token added below
    const which = { 0: ", name", 1: ", value" }[part] || "";
    item.message = `line ${line}${which}: ${item.message}`;
  }
  return error;
}

// Each value is text or a node built here; append() never parses HTML.
function cells(row, values) {
  for (const value of values) {
    const td = document.createElement("td");
    td.append(value ?? "");
    row.append(td);
  }
  return row;
}

// A docs section the answer cites, as a link to the guide the service serves: its
// `guide` is a URL under the mount point (docs/explain.md, "The Explore screen").
// It opens in a new tab, as the screen says, so the exchange stays here.
function guideLink({ docs, guide }) {
  const link = document.createElement("a");
  link.href = guide;
  link.target = "_blank";
  link.rel = "noopener";
  link.textContent = docs;
  return link;
}

function explained(annotation) {
  const meaning = document.createDocumentFragment();
  if (!annotation) return meaning;
  const spec = annotation.spec ? ` (${annotation.spec})` : "";
  meaning.append(`${annotation.meaning.replace(/\.$/, "")}${spec}.`);
  if (annotation.guide) meaning.append(" See ", guideLink(annotation), ".");
  return meaning;
}

// What each name in "Set by" is, outermost first, from the answer's `setters`.
function setters(list) {
  return list.flatMap((setter) => {
    const name = document.createElement("dt");
    name.textContent = setter.name;
    const meaning = document.createElement("dd");
    meaning.append(setter.meaning, " See ", guideLink(setter), ".");
    return [name, meaning];
  });
}

function showExchange(view, exchange) {
  const notes = new Map(exchange.annotations.map(
    (a) => [`${a.part}:${a.name.toLowerCase()}`, a]));
  const { request, response } = exchange;
  const status = notes.get(`status:${response.status}`);
  view.querySelector("[data-status]").textContent = String(response.status);
  view.querySelector("[data-status-meaning]").replaceChildren(
    explained(status), ` Set by: ${status.setBy}.`);
  view.querySelector("[data-request] tbody").replaceChildren(...request.headers.map(
    ([name, value]) => cells(document.createElement("tr"),
      [name, value, explained(notes.get(`request:${name.toLowerCase()}`))])));
  view.querySelector("[data-response] tbody").replaceChildren(...response.headers.map(
    ([name, value]) => {
      const note = notes.get(`response:${name.toLowerCase()}`);
      return cells(document.createElement("tr"),
        [name, value, explained(note), note && note.setBy]);
    }));
  view.querySelector("[data-setters]").replaceChildren(...setters(exchange.setters));
  // The explainer shows the first 16 KiB of a longer body (docs/explain.md, "Limits").
  const whole = response.bodyBytes.toLocaleString("en");
  const cut = response.bodyTruncated
    ? `\n[cut: the first 16 KiB of ${whole} bytes; the notes read only these]` : "";
  view.querySelector("[data-body]").textContent = response.body + cut;
  view.querySelector("[data-notes]").replaceChildren(...exchange.notes.map((note) => {
    const li = document.createElement("li");
    li.textContent = `${note.level}, ${note.category}: ${note.summary}`;
    return li;
  }));
  // What to change in the request itself (docs/lab.md, "Notes on your request").
  const said = exchange.requestNotes.map((note) => {
    const li = document.createElement("li");
    li.textContent = `${note.level}, ${note.subject} (${note.spec}): ${note.summary}`;
    return li;
  });
  if (said.length === 0) {
    const li = document.createElement("li");
    li.textContent = "Nothing to change.";
    said.push(li);
  }
  view.querySelector("[data-request-notes]").replaceChildren(...said);
  const section = view.querySelector("[data-exchange]");
  section.hidden = false;
  section.querySelector("h2").focus();
}

async function showExplore() {
  const view = build("explore");
  const form = view.querySelector("form");
  onSubmit(form, async (values) => {
    // The last answer goes: kept under this request's error or while it runs,
    // it would read as this request's.
    screen.querySelector("[data-exchange]").hidden = true;
    const { pairs: headers, lines } = headerLines(values.headers);
    // An unsafe request on the session's authority needs its CSRF token too,
    // unless the form names one (docs/explain.md, "Guards").
    const unsafe = !["GET", "HEAD", "OPTIONS"].includes(values.method.toUpperCase());
    const named = headers.some(([name]) => name.toLowerCase() === "x-csrf-token");
    if (unsafe && state.csrfToken && !named) {
      headers.push(["X-CSRF-Token", state.csrfToken]);
    }
    const exchange = await api(
      "POST",
      "/explain",
      { method: values.method, path: values.path, headers, body: values.body },
      LAB,
    ).catch((error) => {
      throw onLines(error, lines);
    });
    showExchange(screen, exchange);
  });
  return view;
}

// The fragment -> the screen, and whether it needs someone logged in (true),
// nobody (false) or either (null): a logged-in user is sent to the list, not
// offered a login or a new account.
const SCREENS = [
  [/^#\/login$/, showLogin, false],
  [/^#\/register$/, showRegister, false],
  [/^#\/users(?:\?cursor=([^&]+))?$/, showUsers, true],
  [/^#\/users\/(\d+)$/, showUser, true],
  [/^#\/users\/(\d+)\/edit$/, showEdit, true],
  [/^#\/users\/(\d+)\/delete$/, showDelete, true],
  [/^#\/explore$/, showExplore, null],
];

// The page's title names the screen by its heading, "Log in: refapi", as the
// guides' do: a tab, a bookmark and the history tell the screens apart (WCAG
// 2.2, 2.4.2 Page Titled).
function titled() {
  document.title = `${screen.querySelector("h1").textContent}: refapi`;
}

// route()'s calls so far: a screen that was still loading when a later call
// began is not shown (a slow answer never replaces a newer screen).
let routes = 0;

// Show the screen the fragment names once its data is in, so a refusal (a
// missing user's 404) is shown under a heading of its own, not above an empty
// screen.
async function route() {
  const call = (routes += 1);
  clearError();
  setStatus(state.flash);
  state.flash = "";
  const hash = location.hash || "#/users";
  const found = SCREENS.find(([pattern]) => pattern.test(hash));
  if (!found) {
    go("#/users");
    return;
  }
  const [pattern, show, needsLogin] = found;
  if (needsLogin === true && !state.user) {
    state.next = hash;
    go("#/login");
    return;
  }
  if (needsLogin === false && state.user) {
    go("#/users");
    return;
  }
  const args = pattern.exec(hash).slice(1).map((arg) => arg && decodeURIComponent(arg));
  let view;
  try {
    view = await show(...args);
  } catch (error) {
    if (call !== routes) return;
    // A heading and the error, not the screen before it nor an empty one; the
    // message takes the focus, so it is read first (docs/authentication.md,
    // "Keyboard and labels").
    screen.replaceChildren(build("failed"));
    screen.querySelector("h1").textContent =
      error.status === 404 ? "Not found" : "Not shown";
    titled();
    failed(error);
    if (call === routes && !document.getElementById("error").hidden) {
      document.getElementById("error-message").focus();
    }
    return;
  }
  if (call !== routes) return;
  screen.replaceChildren(view);
  titled();
  // The heading takes the focus, so keyboard and screen-reader users start at
  // the new screen.
  screen.querySelector("h1").focus();
}

async function logOut() {
  clearError();
  try {
    await api("POST", "/logout");
  } catch (error) {
    if (error.code !== "UNAUTHENTICATED") {
      showError(error);
      return;
    }
  }
  loggedOut();
  go("#/login", "Logged out.");
}

async function start() {
  document.getElementById("logout").addEventListener("click", logOut);
  let trouble = null;
  try {
    loggedIn(await api("GET", "/session"));
  } catch (error) {
    loggedOut();
    if (error.code !== "UNAUTHENTICATED") trouble = error; // else nobody is logged in
  }
  window.addEventListener("hashchange", route);
  await route();
  if (trouble) showError(trouble);
}

start();
