// The live Infinite Blackjack table (seed 002): traffic light and timer, chips, bets,
// UNDO / UNDO ALL / REPEAT / 2x / ALL SIDE BETS, insurance, the open step's options with
// the cash-out amount and the live decision statistics, the cards as they are shown,
// the result and the balance.
//
// How it stays right: the table's stream (Server-Sent Events, resumed by the browser
// with Last-Event-ID after a drop) says when something changed; the client then reads
// the table state (GET /v1/sessions/{id}/tables/{table}, or /v1/tables/{table}/watch for
// a spectator) and draws it. The state is the truth; the stream is the doorbell, and
// carries the chat. Deadlines are compared with the server's clock (server_time).
import { explain } from "./api.js";
import { $, cardItem, el, fillCards, money, setCurrency } from "./format.js";

const BET_LABELS = {
  main: "Main bet",
  "perfect-pairs": "Perfect Pairs",
  "21+3": "21+3",
  "hot-3": "Hot 3",
  "bust-it": "Bust It",
};
const DECISIONS = {
  hit: "Hit",
  stand: "Stand",
  double: "Double",
  split: "Split",
  "cash-out": "Cash out",
  insure: "Take insurance",
  "no-insurance": "No insurance",
};
const PHASES = {
  betting: "Place your bets",
  insurance: "Insurance?",
  step: "Decide",
  dealer: "Dealer plays",
  settled: "Round over",
  voided: "Round voided",
};
export const STREAM_TYPES = [
  "round-opened", "betting-extended", "betting-waiting", "bets-closed", "insurance-closed", "step-closed",
  "dealer-played", "round-settled", "table-paused", "table-resumed", "round-voided",
  "shoe-shuffled", "shoe-revealed", "seat-opened", "bet-accepted", "bet-undone",
  "bets-cancelled", "decided", "connection", "seat-settled", "seat-voided", "balance",
  "options", "heartbeat", "chat", "chat-hidden",
];
const CHIP_MULTIPLES = [1, 5, 25, 100];
const YELLOW_MS = 5000; // the betting light turns yellow this long before the deadline
// (or in the last third of a shorter window)

export class Blackjack {
  constructor(client) {
    this.c = client;
    this.state = null;
    this.info = null;
    this.offset = 0;
    this.chip = null;
    this.lastId = null;
    this.decided = null;
    this.loading = false;
    this.again = false;
    this.messages = []; // every stream message received, in order (tests read it)
    window.croupierMessages = this.messages;
  }

  get base() {
    return `/v1/sessions/${this.c.sid}/tables/${encodeURIComponent(this.c.table)}`;
  }

  async start(minorUnit) {
    this.info = await this.c.api.get(`/v1/tables/${encodeURIComponent(this.c.table)}`);
    if (this.c.spectator) setCurrency(this.info.currency, minorUnit(this.info.currency));
    $("bj-table").textContent = this.info.table;
    if (this.c.spectator) {
      $("bj-betting").hidden = true;
      $("bj-decide").hidden = true;
    } else {
      this.buildControls();
    }
    await this.refresh();
    this.connect();
    setInterval(() => this.tick(), 250);
    // The stream says when to look; this looks anyway now and then (a window past its
    // deadline by a second, or ten quiet seconds), in case a message is slow to come.
    setInterval(() => this.lookAgain(), 1000);
  }

  // -- controls ----------------------------------------------------------------------

  buildControls() {
    const chips = CHIP_MULTIPLES.map((m) => m * this.info.chip);
    this.chip = chips[0];
    $("bj-chips").replaceChildren(
      ...chips.map((value) => {
        const b = el("button", { type: "button", "data-chip": value, "aria-pressed": "false", text: money(value) });
        b.addEventListener("click", () => {
          this.chip = value;
          this.renderChips();
        });
        return b;
      }),
    );
    $("bj-spots").replaceChildren(
      ...Object.keys(this.info.limits).map((bet) => {
        const b = el("button", { type: "button", id: `bj-spot-${bet}`, "data-bet": bet });
        b.addEventListener("click", () => this.act("bets", { bet, amount: this.chip }));
        return b;
      }),
    );
    $("bj-undo").addEventListener("click", () => this.act("undo"));
    $("bj-undo-all").addEventListener("click", () => this.act("undo-all"));
    $("bj-repeat").addEventListener("click", () => this.act("repeat"));
    $("bj-double").addEventListener("click", () => this.act("double"));
    $("bj-all-sides").addEventListener("click", () => this.act("all-side-bets"));
  }

  async act(path, body) {
    try {
      this.c.notice("");
      const result = await this.c.api.post(`${this.base}/${path}`, body);
      if (result.balance !== undefined) this.c.setBalance(result.balance);
    } catch (e) {
      this.c.fail(e);
    }
    await this.refresh();
  }

  async decide(decision) {
    const r = this.state.round;
    this.decided = `${r.code}:${r.phase}:${r.step}`;
    this.renderOptions();
    if (decision === "insure" || decision === "no-insurance") {
      await this.act("insurance", { take: decision === "insure" });
    } else {
      await this.act("decide", { step: r.step, decision });
    }
  }

  // -- the stream ----------------------------------------------------------------------

  connect() {
    const params = new URLSearchParams({ access_token: this.c.token });
    if (this.lastId) params.set("last_event_id", this.lastId);
    const source = new EventSource(`/v1/tables/${encodeURIComponent(this.c.table)}/stream?${params}`);
    this.source = source;
    source.onopen = () => {
      $("conn").textContent = "Connected";
      this.refresh();
    };
    source.onerror = () => {
      $("conn").textContent = "Reconnecting…";
      if (source.readyState === EventSource.CLOSED) {
        // refused (e.g. too many streams): the browser does not retry by itself
        setTimeout(() => this.connect(), 2000);
      }
    };
    for (const type of STREAM_TYPES) {
      source.addEventListener(type, (event) => this.onMessage(type, event));
    }
  }

  // Lose the stream as a dropped connection would, and come back after `ms` from the
  // last message seen (the browser test drops it mid-round; nothing may be lost).
  drop(ms = 1500) {
    this.source.close();
    $("conn").textContent = "Reconnecting…";
    setTimeout(() => this.connect(), ms);
  }

  onMessage(type, event) {
    if (event.lastEventId) this.lastId = event.lastEventId;
    const data = JSON.parse(event.data);
    this.messages.push({ ...data, sse_id: event.lastEventId || null });
    if (type === "heartbeat") return;
    if (type === "chat") return this.c.chat.add(data);
    if (type === "chat-hidden") return this.c.chat.hide(data);
    if (type === "balance") this.c.setBalance(data.balance);
    this.refresh();
  }

  // -- the state -----------------------------------------------------------------------

  async refresh() {
    if (this.loading) {
      this.again = true;
      return;
    }
    this.loading = true;
    try {
      const path = this.c.spectator ? `/v1/tables/${encodeURIComponent(this.c.table)}/watch` : this.base;
      this.state = await this.c.api.get(path);
      this.offset = Date.parse(this.state.server_time) - Date.now();
      this.loadedAt = Date.now() + this.offset;
      this.render();
    } catch (e) {
      this.c.fail(e);
    } finally {
      this.loading = false;
    }
    if (this.again) {
      this.again = false;
      await this.refresh();
    }
  }

  lookAgain() {
    const r = this.state && this.state.round;
    const now = Date.now() + this.offset;
    const overdue = r && r.deadline && now - Date.parse(r.deadline) > 1000;
    if (overdue || now - (this.loadedAt || 0) > 10_000) this.refresh();
  }

  render() {
    const st = this.state;
    const r = st.round;
    const section = $("blackjack");
    section.dataset.phase = r ? r.phase : "";
    section.dataset.round = r ? r.code : "";
    section.dataset.step = r && r.step !== null ? String(r.step) : "";
    $("bj-code").textContent = r ? r.code : "";
    $("bj-seats").textContent = r ? String(r.seats) : "0";
    let cards = r ? r.cards : { dealer: [], player: [], up: null };
    const last = st.previous && r && r.phase === "betting" && !cards.dealer.length;
    if (last && st.previous.cards) cards = st.previous.cards; // the last round, until the deal
    const dealer = [...cards.dealer];
    if (dealer.length === 1 && !last && r.phase !== "settled") dealer.push(null); // the hole card
    fillCards($("bj-dealer"), dealer);
    fillCards($("bj-shared"), cards.player);
    fillCards($("bj-steps"), cards.steps || []); // each step's card, once its step closed
    $("bj-steps-row").hidden = !(cards.steps && cards.steps.length);
    if (!this.c.spectator) {
      this.c.setBalance(st.balance);
      this.renderSeat();
      this.renderBetting();
      this.renderOptions();
    }
    this.renderStatistics();
    this.tick();
  }

  seatToShow() {
    const st = this.state;
    if (st.seat && st.seat.dealt) return [st.seat, false];
    if (st.previous && st.previous.dealt && (!st.seat || st.round.phase === "betting")) return [st.previous, true];
    return [st.seat, false];
  }

  renderSeat() {
    const [seat, previous] = this.seatToShow();
    const hands = seat ? seat.hands : [];
    $("bj-hands").replaceChildren(
      ...hands.map((h, i) =>
        el(
          "div",
          { class: "hand", "data-hand": i },
          el("h3", { text: `${previous ? "Last round, hand" : "Your hand"} ${i + 1}: ${h.total}${h.soft ? " (soft)" : ""} · bet ${money(h.stake)}${h.doubled ? " · doubled" : ""}` }),
          el("ul", { class: "cards", "aria-label": `Hand ${i + 1}` }, ...h.cards.map(cardItem)),
        ),
      ),
    );
    const result = $("bj-result");
    if (seat && seat.result) {
      const net = seat.result.returned - seat.result.staked;
      result.textContent = `${seat.code}: staked ${money(seat.result.staked)}, paid ${money(seat.result.returned)} (${net >= 0 ? "+" : ""}${money(net)})${seat.cashed_out ? " · cashed out" : ""}`;
      result.dataset.code = seat.code;
    } else if (!seat || !seat.dealt) {
      result.textContent = "";
      delete result.dataset.code;
    }
  }

  renderBetting() {
    const st = this.state;
    const betting = Boolean(st.round && st.round.phase === "betting" && !st.round.paused);
    const seat = st.seat;
    const bets = seat ? seat.bets : {};
    let total = 0;
    for (const [bet, limits] of Object.entries(this.info.limits)) {
      const amount = bets[bet] || 0;
      total += amount;
      const b = $(`bj-spot-${bet}`);
      b.textContent = `${BET_LABELS[bet] || bet}: ${money(amount)}`;
      b.setAttribute("aria-label", `${BET_LABELS[bet] || bet}, ${money(amount)} placed, add a ${money(this.chip)} chip (limit ${money(limits[1])})`);
      b.disabled = !betting || (bet !== "main" && !bets.main);
    }
    $("bj-total").textContent = money(total);
    const chips = seat ? seat.chips.length : 0;
    $("bj-undo").disabled = !betting || !chips;
    $("bj-undo-all").disabled = !betting || !chips;
    $("bj-repeat").disabled = !betting || chips > 0 || !st.previous;
    $("bj-double").disabled = !betting || !chips;
    $("bj-all-sides").disabled = !betting || !bets.main;
    this.renderChips();
  }

  renderChips() {
    if (!this.info || this.c.spectator) return;
    const betting = Boolean(this.state && this.state.round && this.state.round.phase === "betting");
    const buttons = [...$("bj-chips").querySelectorAll("button")];
    for (const b of buttons) {
      const value = Number(b.dataset.chip);
      b.disabled = !betting || value > (this.c.balance || 0); // seed 002: only chips the balance covers
      b.setAttribute("aria-pressed", String(value === this.chip));
      b.setAttribute("aria-label", `Chip ${money(value)}`);
    }
    const chosen = buttons.find((b) => Number(b.dataset.chip) === this.chip);
    if (betting && chosen && chosen.disabled) {
      const fits = buttons.filter((b) => !b.disabled);
      if (fits.length) {
        this.chip = Number(fits[fits.length - 1].dataset.chip);
        this.renderChips();
      }
    }
  }

  renderOptions() {
    const st = this.state;
    const r = st.round;
    const key = r ? `${r.code}:${r.phase}:${r.step}` : "";
    const open = r && (r.phase === "insurance" || r.phase === "step") && this.decided !== key;
    const stats = Object.fromEntries((st.statistics || []).map((s) => [s.decision, s.players]));
    const buttons = open
      ? st.options.map((o) => {
          const amount = o.amount ? ` ${money(o.amount)}` : "";
          const players = stats[o.decision];
          const b = el("button", {
            type: "button",
            id: `bj-opt-${o.decision}`,
            "data-decision": o.decision,
            text: `${DECISIONS[o.decision] || o.decision}${amount}`,
          });
          if (players !== undefined) b.append(el("small", { text: ` · ${players} chose this` }));
          b.addEventListener("click", () => this.decide(o.decision));
          return b;
        })
      : [];
    $("bj-options").replaceChildren(...buttons);
    $("bj-decide").hidden = buttons.length === 0;
  }

  renderStatistics() {
    const st = this.state;
    const rows = [];
    if (this.c.spectator) {
      for (const s of st.statistics || []) {
        const sit = s.situation || {};
        const counts = Object.entries(s.counts || {}).map(([k, v]) => `${DECISIONS[k] || k} ${v}`).join(", ");
        rows.push(el("li", { text: `Hand ${sit.total ?? "?"}${sit.soft ? " soft" : ""} vs ${sit.up ?? "?"}: ${counts}` }));
      }
    } else {
      for (const s of st.statistics || []) {
        rows.push(el("li", { text: `${DECISIONS[s.decision] || s.decision}: ${s.players} players` }));
      }
    }
    $("bj-stats").replaceChildren(...rows);
    $("bj-stats-box").hidden = rows.length === 0;
  }

  // -- the traffic light (seed 002 "SEMAFORO") and the timer ------------------------------

  tick() {
    const st = this.state;
    const light = $("bj-light");
    const r = st && st.round;
    let colour = "red";
    let text = "Waiting for the next round";
    if (r) {
      const left = r.deadline ? Date.parse(r.deadline) - (Date.now() + this.offset) : 0;
      const seconds = Math.max(0, Math.ceil(left / 1000));
      const label = PHASES[r.phase] || r.phase;
      if (r.paused) {
        text = "Paused: the operator is looking into a problem";
      } else if (r.phase === "betting" && !r.deadline) {
        colour = "green"; // an idle table waits: the first bet starts the timer
        text = `${label}: the timer starts with the first bet`;
      } else if (r.phase === "betting" && left > 0) {
        colour = left > Math.min(YELLOW_MS, this.info.windows_ms.betting / 3) ? "green" : "yellow";
        text = `${label}: ${seconds} s`;
      } else if (r.phase === "betting") {
        text = "Bets closed";
      } else if (r.deadline && left > 0) {
        text = `${label}: ${seconds} s`;
      } else {
        text = label;
      }
    }
    light.dataset.light = colour;
    $("bj-light-text").textContent = text;
  }
}
