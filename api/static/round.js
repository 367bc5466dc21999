// The round viewer: draws every step of one round and checks, in the browser, the seed
// against its commitment and the round's events against the latest signed checkpoint
// (RFC 9162 inclusion proofs; Ed25519 tree-head signature, format of ledger/envelope.py).
"use strict";

const SUITS = { s: "♠", h: "♥", d: "♦", c: "♣" };
// ledger/envelope.py: a format 2 tree head binds the log id; a legacy format 1 head does not.
const HEAD_DOMAIN = { 1: "croupier-checkpoint/v1\0", 2: "croupier-checkpoint/v2\0" };

function el(tag, attrs, ...children) {
  const node = document.createElement(tag);
  for (const [k, v] of Object.entries(attrs || {})) node.setAttribute(k, v);
  for (const c of children) if (c !== null && c !== undefined) node.append(c);
  return node;
}

function card(text, extra) {
  const rank = text.slice(0, -1) === "T" ? "10" : text.slice(0, -1);
  const suit = text.slice(-1).toLowerCase();
  const red = suit === "h" || suit === "d" ? " red" : "";
  return el("span", { class: "card" + red + (extra ? " " + extra : ""), "data-card": text },
    el("span", { class: "rank" }, rank), el("span", { class: "suit" }, SUITS[suit] || "?"));
}

function hand(label, cards, marks) {
  const row = el("div", { class: "hand" }, el("span", { class: "label" }, label));
  cards.forEach((c, i) => row.append(card(c, marks ? marks(i) : "")));
  return row;
}

let exponent = 2;
let currency = "";
function fmt(minor) {
  if (minor === null || minor === undefined) return "–";
  return `${(Number(minor) / 10 ** exponent).toFixed(exponent)} ${currency}`;
}
function money(minor) { return el("span", { class: "money" }, fmt(minor)); }

function hex(bytes) { return [...bytes].map((b) => b.toString(16).padStart(2, "0")).join(""); }
function unhex(text) { return new Uint8Array((text.match(/../g) || []).map((h) => parseInt(h, 16))); }
function concat(...parts) {
  const out = new Uint8Array(parts.reduce((n, p) => n + p.length, 0));
  let at = 0;
  for (const p of parts) { out.set(p, at); at += p.length; }
  return out;
}
async function sha256(bytes) { return new Uint8Array(await crypto.subtle.digest("SHA-256", bytes)); }
const nodeHash = (l, r) => sha256(concat(new Uint8Array([1]), l, r));

// RFC 9162 §2.1.3.2, as ledger/merkle.py verify_inclusion.
async function verifyInclusion(leaf, index, size, proof, root) {
  if (index < 0 || index >= size) return false;
  let fn = index, sn = size - 1, r = leaf;
  for (const p of proof) {
    if (sn === 0) return false;
    if (fn & 1 || fn === sn) {
      r = await nodeHash(p, r);
      while (fn && !(fn & 1)) { fn >>= 1; sn >>= 1; }
    } else {
      r = await nodeHash(r, p);
    }
    fn >>= 1; sn >>= 1;
  }
  return sn === 0 && hex(r) === hex(root);
}

function u64(n) {
  const b = new Uint8Array(8);
  new DataView(b.buffer).setBigUint64(0, BigInt(n));
  return b;
}

async function verifyHead(cp, publicKeys) {
  const kid = new TextEncoder().encode(cp.kid);
  const domain = new TextEncoder().encode(HEAD_DOMAIN[cp.log_id ? 2 : 1]);
  const message = concat(domain, cp.log_id ? unhex(cp.log_id) : new Uint8Array(0), u64(cp.tree_size),
    unhex(cp.root_hash), u64(cp.timestamp_ms), new Uint8Array([kid.length]), kid);
  const raw = publicKeys[cp.kid];
  if (!raw) return false;
  const key = await crypto.subtle.importKey("raw", unhex(raw), { name: "Ed25519" }, false, ["verify"]);
  return crypto.subtle.verify({ name: "Ed25519" }, key, unhex(cp.signature), message);
}

function check(id, text) {
  const li = el("li", { id, class: "pending" }, text);
  document.getElementById("checks").append(li);
  return (ok, result) => { li.className = ok ? "ok" : "bad"; li.textContent = result; };
}

function details(step, doc) {
  const rows = [];
  const add = (k, v) => rows.push(el("tr", {}, el("td", {}, k), el("td", {}, v)));
  if (step.decision) add("decision", JSON.stringify(step.decision) + (step.automatic ? " (automatic)" : ""));
  if (step.step === "started") add("bet", money(step.stake));
  if (step.stake_added) add("added stake", money(step.stake_added));
  if (step.step === "settled") {
    add("staked", money(step.staked));
    add("payout", money(step.payout));
    add("outcome", step.outcome);
  }
  if (step.step === "voided") {
    add("reason", `${step.reason} (incident ${step.incident_id})`);
    add("refunded", money(step.refunded));
    add("reversed win", money(step.reversed_win));
  }
  return el("table", {}, ...rows);
}

function drawRedDog(box, view) {
  if (!view || !view.cards) return;
  box.append(hand("cards", view.cards));
  const facts = [`phase ${view.phase}`];
  if (view.spread !== null && view.spread !== undefined) facts.push(`spread ${view.spread}`);
  if (view.raise) facts.push(`raise ${fmt(view.raise)}`);
  box.append(el("div", {}, facts.join(" · ")));
}

function drawDoubleUp(box, d) {
  const picked = (i) => (d.index === i ? "picked" : "");
  const row = el("div", { class: "hand double" }, el("span", { class: "label" },
    `double-up ${d.n + 1} (${d.bet_type})`), card(d.dealer_card));
  row.append(el("span", {}, " vs "));
  if (d.cards.length) d.cards.forEach((c, i) => row.append(card(c, picked(i))));
  else for (let i = 0; i < 4; i++) row.append(el("span", { class: "card back" }));
  row.append(el("span", {}, ` staked ${fmt(d.staked)}, banked ${fmt(d.banked)}: `
    + (d.result || "pending") + (d.amount_after === null ? "" : ` → ${fmt(d.amount_after)}`)));
  box.append(row);
}

function drawPoker(box, step, view, previous) {
  if (!view) return;
  const kind = step.decision ? step.decision[0] : step.step;
  const lines = view.lines || [];
  const ups = view.double_up || [];
  if (step.step === "started" || kind === "hold") {
    const held = new Set(kind === "hold" ? step.decision[1] : view.recommended);
    box.append(hand(kind === "hold" ? "held" : "dealt", view.dealt, (i) => (held.has(i) ? "held" : "")));
    if (step.step === "started") box.append(el("div", {}, `proposed hold: ${JSON.stringify(view.recommended)}`));
  } else if (kind === "draw" || (step.step === "settled" && !ups.length)) {
    lines.forEach((ln, i) => {
      const row = hand(`line ${i + 1}`, ln.cards);
      row.append(el("span", {}, ` ${ln.rank} · ${fmt(ln.win)}`));
      box.append(row);
    });
  } else if (["double", "half-double", "pick"].includes(kind) && ups.length) {
    drawDoubleUp(box, ups[ups.length - 1]);
  } else if (step.step === "settled") {
    ups.forEach((d) => drawDoubleUp(box, d));
  }
  if (step.step === "settled" || kind === "collect") box.append(el("div", {}, `win ${fmt(view.win)}`));
}

// A live blackjack round (IBJ-...): every seat shares the player cards and each step's
// card (DESIGN.md §5.3 "shared dealing"); the dealer's cards; each seat's hands and payout.
function drawBlackjack(steps, doc) {
  const t = doc.table;
  let up = null;
  for (const s of doc.check.steps) {
    if (s.step === "summary") continue;
    const box = el("section", { class: "step", "data-step": s.step, "data-version": String(s.version) },
      el("h2", {}, `${s.version}. ${s.step}`, el("span", { class: "time" }, s.at || t.started_at)));
    if (s.step === "dealt") {
      up = s.up;
      box.append(hand("every seat", s.player_cards), hand("dealer up", [s.up]));
    } else if (s.step === "insurance-closed") {
      box.append(s.hole ? hand("dealer hole", [s.hole]) : el("div", {}, "insurance closed, no dealer blackjack"));
    } else if (s.step === "step-closed") {
      box.append(s.card ? hand(`step ${s.closed}`, [s.card]) : el("div", {}, `step ${s.closed}: nobody drew`));
      for (const seat of t.seat_list) {
        const d = (seat.decisions || {})[String(s.closed)];
        if (d) box.append(el("div", { class: "decision" },
          `${seat.player_id}: ${d.decision}${d.automatic ? ` (automatic: ${d.automatic})` : ""}`));
      }
    } else if (s.step === "dealer-played") {
      box.append(hand("dealer", [up, s.hole, ...(s.draws || [])].filter(Boolean)));
    } else if (s.step === "settled") {
      box.append(el("div", {}, "staked ", money(s.totals.staked), " · returned ", money(s.totals.returned)));
    } else if (s.step === "voided") {
      box.append(el("div", {}, `${s.reason} (incident ${s.incident_id})`));
    }
    steps.append(box);
  }
  const seats = el("section", { class: "step", "data-step": "seats" }, el("h2", {}, `seats (${t.seat_list.length})`));
  for (const seat of t.seat_list) {
    const row = el("div", { class: "seat", "data-seat": seat.player_id },
      el("div", {}, `${seat.player_id} · ${seat.status} · bets `,
        Object.entries(seat.bets || {}).map(([k, v]) => `${k} ${fmt(v)}`).join(", ") || "none"));
    (seat.hands || []).forEach((h, i) => {
      const result = seat.result && seat.result.hands[i];
      const line = hand(`hand ${i + 1}`, h.cards);
      if (result) line.append(el("span", {}, ` ${result[0]} · staked ${fmt(result[1])} · paid ${fmt(result[2])}`));
      row.append(line);
    });
    row.append(el("div", {}, "staked ", money(seat.staked), " · paid ", money(seat.paid)));
    seats.append(row);
  }
  steps.append(seats);
}

async function main() {
  const response = await fetch(location.pathname.replace(/\/$/, "") + "/data" + location.search);
  if (!response.ok) {
    document.getElementById("summary").textContent = `cannot load the round (${response.status})`;
    return;
  }
  const doc = await response.json();
  exponent = doc.exponent ?? 2;
  currency = doc.currency;
  document.title = `round ${doc.code}`;
  document.getElementById("title").textContent = `${doc.code} · ${doc.game} ${doc.variant}`;
  const summary = document.getElementById("summary");
  summary.textContent = "";
  summary.append(`${doc.status}, started ${doc.started_at} · staked `, money(doc.staked),
    " · paid ", money(doc.payout), ` · ${doc.outcome || "open"}`);

  const server = check("check-events", "");
  const c = doc.check;
  server(c.ok, c.ok
    ? `every event signed and chained${c.rederived ? ", and re-derived from the seed" : ""}`
    : `${c.problems.length} finding(s): ${c.problems.join("; ")}`);

  const steps = document.getElementById("steps");
  const blackjack = doc.game === "blackjack";
  if (blackjack) drawBlackjack(steps, doc);
  let previous = null;
  for (const s of blackjack ? [] : c.steps) {
    const box = el("section", { class: "step", "data-step": s.step, "data-version": String(s.version) },
      el("h2", {}, `${s.version}. ${s.step}`, el("span", { class: "time" }, s.time || "")));
    box.append(details(s, doc));
    if (doc.game === "red-dog") drawRedDog(box, s.view);
    else drawPoker(box, s, s.view || (previous && previous.view), previous);
    steps.append(box);
    if (s.view) previous = s;
  }

  const seed = document.getElementById("seed");
  const addSeed = (k, v) => seed.append(el("tr", {}, el("td", {}, k), el("td", { class: "mono" }, v)));
  const owner = blackjack ? "the shoe's" : "the round's";
  addSeed(`${owner} commitment SHA-256(seed)`, doc.commitment);
  addSeed(`${owner} seed`, doc.seed || (blackjack
    ? "sealed until the shoe's last round has settled" : "sealed until the round ends"));
  const commitment = check("check-commitment", "");
  if (doc.seed) {
    const digest = hex(await sha256(unhex(doc.seed)));
    commitment(digest === doc.commitment, digest === doc.commitment
      ? "the revealed seed matches its commitment (SHA-256 recomputed in this page)"
      : `SHA-256 of the revealed seed is ${digest}, not the commitment`);
  } else {
    commitment(true, blackjack ? "the shoe's seed is revealed once its cut-card round has settled"
      : "the seed is revealed when the round ends");
  }

  const inclusion = check("check-inclusion", "");
  const head = check("check-checkpoint", "");
  if (!doc.inclusion) {
    inclusion(false, doc.not_covered || "no checkpoint covers this round yet");
    head(false, "no checkpoint to check");
    return;
  }
  const cp = doc.inclusion.checkpoint;
  // Every event of the round (and, at a table, of its seats) has its proof.
  let all = blackjack ? doc.inclusion.events.length > 0 : doc.inclusion.events.length === c.steps.length;
  for (const e of doc.inclusion.events) {
    all = all && await verifyInclusion(unhex(e.leaf_hash), e.leaf_index, cp.tree_size,
      e.proof.map(unhex), unhex(cp.root_hash));
  }
  inclusion(all, all
    ? `all ${doc.inclusion.events.length} events are in checkpoint ${cp.seq} (tree of ${cp.tree_size} events, root ${cp.root_hash.slice(0, 16)}…)`
    : "an inclusion proof does not lead to the checkpoint's root");
  let signed = false;
  try { signed = await verifyHead(cp, doc.public_keys); } catch (err) { signed = false; }
  head(signed, signed
    ? `checkpoint ${cp.seq} is signed by key ${cp.kid} (Ed25519, checked in this page)`
    : `the signature of checkpoint ${cp.seq} does not verify in this page`);
  addSeed("checkpoint", `#${cp.seq}, ${cp.tree_size} events, root ${cp.root_hash}, ${new Date(cp.timestamp_ms).toISOString()}`);
}

main().then(() => document.body.setAttribute("data-ready", "1"),
  (err) => { document.getElementById("summary").textContent = `error: ${err}`; document.body.setAttribute("data-ready", "error"); });
