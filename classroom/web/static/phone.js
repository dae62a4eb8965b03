// The phone page of class mode (classroom/web/phone.py serves it). It joins a class, asks the server for
// the class's state every few seconds (with the ETag it holds: an unchanged class answers 304, nothing
// to draw), and sends a vote as one POST. Every text from the server goes in with textContent: no HTML
// is ever built from a string.
"use strict";

const LETTERS = "ABCDEFGH";
const ROUND_NAMES = {1: "First vote", 2: "Second vote, after discussion"};
const MINE_SIGN = "◆";  // the phone's own choice; the reveal marks the right answer with ✓, never this
const API = "/phone/api";
const CODE_RE = /^[ABCDEFGHJKLMNPQRSTUVWXYZ23456789]{6}$/;

const pollMs = Number(document.body.dataset.pollMs) || 1500;
let code = null, etag = null, last = null, timer = null, joined = false, pollFailed = false;

const $ = (id) => document.getElementById(id);
const letter = (i) => (i >= 0 && i < LETTERS.length ? LETTERS[i] : String(i + 1));
const roundName = (r) => ROUND_NAMES[r] || `Vote ${r}`;
const spaced = (c) => `${c.slice(0, 3)} ${c.slice(3)}`;

function el(tag, props = {}, ...children) {
  const node = document.createElement(tag);
  for (const [k, v] of Object.entries(props)) {
    if (k === "class") node.className = v;
    else if (k === "text") node.textContent = v;
    else if (k.startsWith("data-") || k.startsWith("aria-") || k === "role" || k === "type") node.setAttribute(k, v);
    else node[k] = v;
  }
  for (const child of children) node.append(child);
  return node;
}

function say(text, kind = "bad") {
  const box = $("status");
  box.replaceChildren();
  if (text) box.append(el("p", {class: `notice ${kind}`, text}));
}

function normalize(text) {
  const c = (text || "").replace(/[\s-]/g, "").toUpperCase();
  return text && text.length <= 24 && CODE_RE.test(c) ? c : null;
}

async function call(method, path, body) {
  const headers = {"Accept": "application/json"};
  if (body !== undefined) headers["Content-Type"] = "application/json";
  if (method === "GET" && etag) headers["If-None-Match"] = etag;
  const response = await fetch(path, {method, headers, credentials: "same-origin", cache: "no-cache",
                                      body: body === undefined ? undefined : JSON.stringify(body)});
  if (response.status === 304) return null;
  let data = null;
  try { data = await response.json(); } catch (e) { data = null; }
  if (!response.ok) {
    const error = new Error((data && data.error) || `The server answered ${response.status}. Try again in a moment.`);
    error.status = response.status;
    throw error;
  }
  etag = response.headers.get("ETag") || null;
  return data;
}

function show(section) {
  for (const id of ["join", "enter", "question"]) $(id).hidden = id !== section;
}

function optionButton(q, state, i) {
  const chosen = state.mine === i;
  const button = el("button", {type: "button", class: "option", "aria-pressed": String(chosen),
                               "data-option": String(i), "data-question": q.id, "data-round": String(state.round)},
                    el("span", {class: "letter", text: letter(i)}), el("span", {class: "text", text: q.options[i]}));
  if (chosen) button.append(el("span", {class: "sign", text: `${MINE_SIGN} your answer`}));
  button.addEventListener("click", () => vote(q.id, state.round, i));
  return button;
}

function optionList(q, state) {
  const list = el("ul", {class: "options-list"});
  q.options.forEach((text, i) => {
    const item = el("li", {}, el("b", {text: letter(i)}), ` ${text}`);
    if (state.mine === i) item.append(el("span", {class: "sign", text: `  ${MINE_SIGN} your answer`}));
    list.append(item);
  });
  return list;
}

function results(q, res) {
  const box = el("div");
  const top = Math.max(1, ...res.rounds.flatMap((r) => r.counts));
  for (const r of res.rounds) {
    const total = r.counts.reduce((a, b) => a + b, 0);
    const group = el("div", {class: `round round-${r.round}`, role: "group",
                             "aria-label": `${roundName(r.round)}: ${total} answer${total === 1 ? "" : "s"}`},
                     el("h3", {text: `${roundName(r.round)} (${total} answer${total === 1 ? "" : "s"})`}));
    r.counts.forEach((n, i) => {
      const right = res.right === i;
      const label = el("span", {class: "label", text: letter(i) + (right ? " ✓" : "")});
      const bar = el("div", {class: "bar"});
      bar.style.width = `${(100 * n) / top}%`;
      const row = el("div", {class: "row", "data-option": String(i), "aria-label":
                               `${letter(i)}${right ? ", the right answer" : ""}: ${n} student${n === 1 ? "" : "s"}`},
                     label, el("div", {class: "track", "aria-hidden": "true"}, bar), el("span", {class: "count", text: String(n)}));
      group.append(row);
    });
    box.append(group);
  }
  box.append(el("p", {class: "caption", text: "Counts per option, never names" +
                                               (res.right !== null ? "; ✓ marks the right answer." : ".")}));
  if (res.by_demo && res.right !== null) {
    box.append(el("p", {class: "notice ok explain"}, el("b", {text: `The demo decided: ${letter(res.right)}. `}), res.why || ""));
  } else if (res.right !== null) {
    box.append(el("p", {class: "notice ok explain"}, el("b", {text: `Right answer: ${letter(res.right)}. `}), res.why || ""));
  }
  return box;
}

function render(state) {
  last = state;
  $("title").textContent = `Class ${spaced(state.code)}`;
  if (!state.joined) {
    show("join");
    $("join-button").textContent = `Join class ${spaced(state.code)}`;
    return;
  }
  show("question");
  const q = state.question;
  const focused = document.activeElement && document.activeElement.dataset ? document.activeElement.dataset.option : undefined;
  const mine = $("mine"), hint = $("hint"), options = $("options"), res = $("results");
  if (!q) {
    $("where").textContent = "";
    $("prompt").textContent = "You're in.";
    hint.hidden = false;
    hint.textContent = "The question appears here when the teacher opens the vote.";
    options.replaceChildren(); mine.hidden = true; res.hidden = true;
    return;
  }
  const which = state.round === 2 ? "Second vote" : roundName(state.round || 1);
  $("where").textContent = `Question ${q.position} of ${q.total} · ${which}: ${state.open ? "open" : "closed"}`;
  $("prompt").textContent = q.prompt;
  hint.hidden = !(state.open && state.round >= 2);
  hint.textContent = "Second vote, after discussion: answer again, even if you keep your first answer.";
  options.replaceChildren(...(state.open ? q.options.map((_, i) => optionButton(q, state, i)) : [optionList(q, state)]));
  if (focused !== undefined && state.open) {
    const again = options.querySelector(`[data-option="${Number(focused)}"]`);
    if (again) again.focus();
  }
  mine.hidden = false;
  if (state.mine !== null) {
    mine.className = "notice ok";
    mine.replaceChildren(el("b", {text: `Your answer is in: ${letter(state.mine)}. `}),
                         state.open ? "You can change it until the vote closes." : "The vote is closed.");
  } else if (state.open) {
    mine.className = "notice info";
    mine.replaceChildren("Tap an answer. If you answered before reloading the page, it still counts; tapping again replaces it.");
  } else {
    mine.className = "notice info";
    mine.replaceChildren(state.revealed ? "The vote is closed." : "The vote is closed. Look at the screen at the front.");
  }
  res.hidden = !state.results;
  res.replaceChildren(...(state.results ? [results(q, state.results)] : []));
}

async function poll() {
  clearTimeout(timer);
  try {
    const state = await call("GET", `${API}/state?code=${code}`);
    if (state) render(state);
    if (pollFailed || state) say("");  // a vote's refusal stays until the class moves on
    pollFailed = false;
  } catch (error) {
    say(error.message);
    pollFailed = true;
    if (error.status === 404) return;  // the class has ended: nothing more to ask
  }
  if (joined || (last && last.joined)) timer = setTimeout(poll, document.hidden ? pollMs * 4 : pollMs);
}

async function join() {
  $("join-button").disabled = true;
  try {
    etag = null;
    const state = await call("POST", `${API}/join`, {code});
    joined = true;
    say("");
    render(state);
    timer = setTimeout(poll, pollMs);
  } catch (error) {
    say(error.message);
  } finally {
    $("join-button").disabled = false;
  }
}

async function vote(question, round, option) {
  try {
    const state = await call("POST", `${API}/vote`, {code, question, round, option});
    say("");
    render(state);
  } catch (error) {
    say(error.message);
    etag = null;
    poll();
  }
}

function start() {
  const params = new URLSearchParams(location.search);
  const raw = params.get("join") || params.get("code");
  code = normalize(raw);
  $("join-button").addEventListener("click", join);
  $("code-button").addEventListener("click", () => {
    const typed = normalize($("code-input").value);
    if (!typed) { say("That is not a class code: a code is 6 letters and digits, as on the screen."); return; }
    location.search = `?join=${typed}`;
  });
  document.addEventListener("visibilitychange", () => { if (!document.hidden && code && last && last.joined) poll(); });
  if (!code) {
    show("enter");
    if (raw) say("This link's class code is not valid: type the code on the screen at the front.");
    return;
  }
  poll();
}

start();
