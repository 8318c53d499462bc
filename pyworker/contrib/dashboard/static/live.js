// The live refresh's guard: htmx refreshes each page's #live region (base.html), when a task changes
// and on a slow poll, only while this says yes, so that a refresh never throws away what the
// operator is typing or has opened.
function liveRefreshAllowed() {
  const live = document.getElementById("live");
  if (!live || document.hidden || livePaused()) return false;
  if (live.querySelector("details[open]")) return false;
  const focused = document.activeElement;
  if (focused && live.contains(focused) && focused.matches("input, select, textarea")) return false;
  return !Array.from(live.querySelectorAll("input, textarea, select")).some(edited);
}

function edited(field) {
  if (field.tagName === "SELECT") {
    // With no option marked selected, a select starts on its first.
    const start = Array.from(field.options).findIndex((option) => option.defaultSelected);
    return field.selectedIndex !== Math.max(start, 0);
  }
  if (field.type === "checkbox" || field.type === "radio") return field.checked !== field.defaultChecked;
  return field.value !== field.defaultValue;
}

// The operator's pause, kept in this browser for every page and tab until resumed: a page held
// still to read, compare or act on, whatever the pool does meanwhile.
const PAUSED_KEY = "taskpool.live.paused";

function livePaused() {
  try {
    return window.localStorage.getItem(PAUSED_KEY) === "1";
  } catch (error) {
    return false; // storage refused (a private window's policy): never paused
  }
}

// The stream of task changes (server-sent events from /api/task-changes, named by #live's
// data-changes): a change refreshes #live at once, then at most once a second however many
// follow; htmx's slow poll stays as the fallback. Open only while the refresh is not paused.
const MIN_REFRESH_GAP_MS = 1000;
let changeStream = null;
let lastRefreshAt = 0;
let refreshTimer = null;

function tasksChanged() {
  if (refreshTimer !== null) return;
  const wait = Math.max(MIN_REFRESH_GAP_MS / 10, lastRefreshAt + MIN_REFRESH_GAP_MS - Date.now());
  refreshTimer = setTimeout(() => {
    refreshTimer = null;
    if (livePaused()) return;
    // Held back (the operator is typing, a detail is open, the tab is hidden): try again until
    // it may go, so the page catches up once the operator is done.
    if (!liveRefreshAllowed()) {
      tasksChanged();
      return;
    }
    lastRefreshAt = Date.now();
    const live = document.getElementById("live");
    if (live && window.htmx) window.htmx.trigger(live, "tasks-changed");
  }, wait);
}

function followTaskChanges() {
  const live = document.getElementById("live");
  const url = live && live.dataset.changes;
  if (!url || !window.EventSource || livePaused()) {
    if (changeStream !== null) changeStream.close();
    changeStream = null;
    return;
  }
  if (changeStream === null) {
    changeStream = new EventSource(url);
    changeStream.addEventListener("change", tasksChanged);
  }
}

function showLivePause() {
  const button = document.getElementById("live-pause");
  const note = document.getElementById("live-note");
  if (!button || !note) return;
  const paused = livePaused();
  button.textContent = paused ? "Resume" : "Pause";
  note.textContent = paused ? "live refresh paused" : note.dataset.running || note.textContent;
  button.hidden = false;
}

// A page left behind (navigated away from, or kept in the back-forward cache) closes its stream:
// an open one holds one of the browser's few connections to the dashboard (six over HTTP/1.1),
// and a few pages later the next page waited about a minute for a connection.
window.addEventListener("pagehide", () => {
  if (changeStream !== null) changeStream.close();
  changeStream = null;
});
window.addEventListener("pageshow", (event) => {
  if (event.persisted) followTaskChanges();
});

document.addEventListener("DOMContentLoaded", () => {
  const button = document.getElementById("live-pause");
  const note = document.getElementById("live-note");
  if (!button || !note) return;
  note.dataset.running = note.textContent;
  button.addEventListener("click", () => {
    try {
      if (livePaused()) window.localStorage.removeItem(PAUSED_KEY);
      else window.localStorage.setItem(PAUSED_KEY, "1");
    } catch (error) {
      return;
    }
    showLivePause();
    followTaskChanges();
  });
  showLivePause();
  followTaskChanges();
});
