// The web UI's one script: six screens, each shown by the URL's fragment and each
// calling the API as the specification's table of screens maps it.
//
//   #/login              login          POST   /api/login
//   #/users[?cursor=..]  user list      GET    /api/users
//   #/users/3            user detail    GET    /api/users/3
//   #/users/3/edit       user edit      PUT    /api/users/3
//   #/register           user register  POST   /api/users
//   #/users/3/delete     user delete    DELETE /api/users/3 (after a confirmation)
//
// It is authenticated by the session cookie the login sets (HttpOnly: no script
// reads it) and keeps the CSRF token only in memory, from the login's answer or
// from GET /api/session when the page is loaded anew. The Bearer token the login
// also answers is never kept. Text from the API is written with textContent only,
// never parsed as HTML.

const API = document.body.dataset.api; // "/prod/api" under the mount point /prod
const PAGE_SIZE = 10;

// The retry policy (decisions, section 8): at most RETRIES retries, waiting
// 2**i * BASE_DELAY_MS before retry i, or Retry-After seconds x 1000 when the
// answer has one. Only what may pass by itself is retried: a network failure and
// these statuses. Anything else is shown at once, so a wrong password is never
// sent twice.
const RETRIES = 3;
const BASE_DELAY_MS = 300;
const RETRIED_STATUSES = new Set([429, 502, 503, 504]);

// Who is logged in, and the CSRF token of the session; null when nobody is.
const state = { user: null, csrfToken: null, next: null, flash: "", email: "" };

class ApiError extends Error {
  constructor(status, body) {
    const known = body && typeof body.message === "string";
    super(known ? body.message : `The service answered ${status}.`);
    this.status = status;
    this.code = known ? body.code : "";
    this.details = (known && body.details) || {};
  }
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
// network failure.
async function send(method, path, body) {
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
      response = await fetch(API + path, init);
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
    setStatus(`No answer yet; trying again in ${Math.ceil(wait / 1000)} s.`);
    await sleep(wait);
  }
}

// One API call: the JSON of a success (null for 204), or ApiError with the
// error object's message.
async function api(method, path, body) {
  const response = await send(method, path, body);
  const text = await response.text();
  let data = null;
  try {
    data = text ? JSON.parse(text) : null;
  } catch {
    data = null; // not JSON (a proxy's page): the status is all there is
  }
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
}

function showError(error) {
  const fields = (error.details && error.details.errors) || [];
  document.getElementById("error-message").textContent = error.message;
  document.getElementById("error-fields").replaceChildren(
    ...fields.map((item) => {
      const li = document.createElement("li");
      li.textContent = `${item.field}: ${item.message}`;
      return li;
    }),
  );
  document.getElementById("error").hidden = false;
}

function showWho() {
  const user = state.user;
  document.getElementById("who").textContent = user
    ? `Logged in as ${user.email} (${user.role})`
    : "";
  document.getElementById("login-link").hidden = Boolean(user);
  document.getElementById("logout").hidden = !user;
}

// Show the screen of template `name`; the heading takes the focus, so keyboard
// and screen-reader users start at the new screen.
function mount(name) {
  const view = document.getElementById(`screen-${name}`).content.cloneNode(true);
  screen.replaceChildren(view);
  screen.querySelector("h1").focus();
  return screen;
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
      failed(error);
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

// An error of a call: a session that has ended sends the user to log in again.
function failed(error) {
  if (error.code === "UNAUTHENTICATED" && state.user) {
    loggedOut();
    state.next = location.hash;
    go("#/login", "Your session has ended: log in again.");
    return;
  }
  showError(error);
}

// --- the screens ---------------------------------------------------------------

async function showLogin() {
  const view = mount("login");
  const form = view.querySelector("form");
  form.elements.email.value = state.email;
  onSubmit(form, async ({ email, password }) => {
    loggedIn(await api("POST", "/login", { email, password }));
    const next = state.next || "#/users";
    state.next = null;
    go(next);
  });
}

async function showUsers(cursor) {
  const view = mount("users");
  let query = `?limit=${PAGE_SIZE}`;
  if (cursor) query += `&cursor=${encodeURIComponent(cursor)}`;
  const page = await api("GET", `/users${query}`);
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
  const next = view.querySelector("[data-next]");
  if (page.nextCursor) {
    next.href = `#/users?cursor=${encodeURIComponent(page.nextCursor)}`;
    next.hidden = false;
  }
}

async function showUser(id) {
  const view = mount("user");
  const user = await api("GET", `/users/${id}`);
  fill(view, user);
  if (mayChange(user)) {
    for (const [name, path] of [["edit", "edit"], ["delete", "delete"]]) {
      const link = view.querySelector(`[data-${name}]`);
      link.href = `#/users/${id}/${path}`;
      link.hidden = false;
    }
  }
}

async function showEdit(id) {
  const view = mount("edit");
  const user = await api("GET", `/users/${id}`);
  fill(view, user);
  const form = view.querySelector("form");
  for (const name of ["email", "firstName", "lastName", "role"]) {
    form.elements[name].value = user[name];
  }
  const admin = state.user.role === "admin";
  view.querySelector("[data-admin]").hidden = !admin;
  view.querySelector("[data-cancel]").href = `#/users/${id}`;
  onSubmit(form, async (values) => {
    const body = {
      email: values.email,
      firstName: values.firstName,
      lastName: values.lastName,
    };
    if (values.password) body.password = values.password;
    if (admin) body.role = values.role;
    const saved = await api("PUT", `/users/${id}`, body);
    if (saved.id === state.user.id) {
      state.user = saved;
      showWho();
    }
    go(`#/users/${id}`, "Saved.");
  });
}

async function showRegister() {
  const view = mount("register");
  onSubmit(view.querySelector("form"), async (values) => {
    const user = await api("POST", "/users", values);
    if (state.user) {
      go(`#/users/${user.id}`, `Registered ${user.email}.`);
    } else {
      state.email = user.email;
      go("#/login", `Registered ${user.email}: log in.`);
    }
  });
}

async function showDelete(id) {
  const view = mount("delete");
  const user = await api("GET", `/users/${id}`);
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
}

// The fragment -> the screen, and whether it needs someone logged in.
const SCREENS = [
  [/^#\/login$/, showLogin, false],
  [/^#\/register$/, showRegister, false],
  [/^#\/users(?:\?cursor=([^&]+))?$/, showUsers, true],
  [/^#\/users\/(\d+)$/, showUser, true],
  [/^#\/users\/(\d+)\/edit$/, showEdit, true],
  [/^#\/users\/(\d+)\/delete$/, showDelete, true],
];

async function route() {
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
  if (needsLogin && !state.user) {
    state.next = hash;
    go("#/login");
    return;
  }
  const args = pattern.exec(hash).slice(1).map((arg) => arg && decodeURIComponent(arg));
  try {
    await show(...args);
  } catch (error) {
    failed(error);
  }
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
