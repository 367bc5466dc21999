// Boot: who is playing (a session token, or a spectator token, from the launch URL's
// fragment), then the games, the history and the settings.
import { Api, explain } from "./api.js";
import { $, el, money, setCurrency } from "./format.js";
import { Blackjack } from "./blackjack.js";
import { Chat } from "./chat.js";
import { RedDog } from "./reddog.js";
import { Poker } from "./poker.js";

const TABS = ["blackjack", "reddog", "poker", "history", "settings"];

function launch() {
  const params = new URLSearchParams(location.hash.slice(1));
  return {
    token: params.get("token"),
    spectator: params.get("spectator"),
    table: params.get("table") || "ibj-1",
  };
}

class Client {
  constructor(how) {
    this.how = how;
    this.spectator = Boolean(how.spectator);
    this.token = how.spectator || how.token;
    this.api = new Api(this.token);
    this.table = how.table;
    this.sid = this.spectator ? null : this.token.split(".")[0];
    this.settings = { show_cash_out: true, show_chat: true };
  }

  notice(text) {
    $("notice").textContent = text || "";
  }

  fail(error) {
    this.notice(explain(error));
  }

  setBalance(minor) {
    if (this.spectator || minor === undefined || minor === null) return;
    this.balance = minor;
    $("balance").textContent = money(minor);
    $("balance").dataset.minor = String(minor);
    this.blackjack && this.blackjack.renderChips();
  }

  async start() {
    $("tabs").hidden = false;
    const currencies = await this.api.get("/v1/currencies").catch(() => null);
    const minor = (code) => {
      const found = currencies && currencies.currencies.find((c) => c.code === code);
      return found ? found.minor_unit : 2;
    };
    if (this.spectator) {
      $("who").hidden = false;
      $("who").textContent = `Watching table ${this.table} (spectator: no bets)`;
      for (const tab of ["reddog", "poker", "history", "settings"]) {
        document.querySelector(`[data-tab="${tab}"]`).hidden = true;
      }
    } else {
      const session = await this.api.get(`/v1/sessions/${this.sid}`);
      setCurrency(session.currency, minor(session.currency));
      $("who").hidden = false;
      $("who").textContent = `Player ${session.player_id}`;
      $("balance-box").hidden = false;
      this.setBalance(session.balance);
      this.settings = (await this.api.get(`/v1/sessions/${this.sid}/settings`)).settings;
    }
    this.chat = new Chat(this);
    this.blackjack = new Blackjack(this);
    await this.blackjack.start(minor);
    if (!this.spectator) {
      this.reddog = new RedDog(this);
      this.poker = new Poker(this);
      await Promise.all([this.reddog.start(), this.poker.start()]);
      this.bindHistory();
      this.bindSettings();
    }
    for (const button of document.querySelectorAll("#tabs button")) {
      button.addEventListener("click", () => this.show(button.dataset.tab));
    }
    this.show("blackjack");
    document.body.dataset.ready = "true";
  }

  show(tab) {
    for (const name of TABS) {
      $(name).hidden = name !== tab;
      document.querySelector(`[data-tab="${name}"]`).setAttribute("aria-pressed", String(name === tab));
    }
    $("chat").hidden = tab !== "blackjack" || !this.settings.show_chat;
    if (tab === "history") this.history().catch((e) => this.fail(e));
  }

  // -- history (seed 002 "Cronologia"): every round of the session, newest first -------

  bindHistory() {
    $("hist-refresh").addEventListener("click", () => this.history().catch((e) => this.fail(e)));
  }

  async history() {
    const data = await this.api.get(`/v1/sessions/${this.sid}/history`);
    const rows = data.games.map((g) =>
      el(
        "tr",
        { "data-code": g.code },
        el("td", { text: (g.started_at || "").replace("T", " ").slice(0, 19) }),
        el("td", { class: "code", text: g.code }),
        el("td", { text: g.table ? `blackjack ${g.table}` : `${g.game} ${g.variant || ""}` }),
        el("td", { text: money(g.stakes) }),
        el("td", { text: money(g.wins) }),
        el("td", { text: g.outcome || g.status }),
      ),
    );
    $("hist-table").querySelector("tbody").replaceChildren(...rows);
  }

  // -- settings (seed 002 "Impostazioni"): kept in the player's profile -----------------

  bindSettings() {
    $("set-cash-out").checked = Boolean(this.settings.show_cash_out);
    $("set-chat").checked = Boolean(this.settings.show_chat);
    $("settings-form").addEventListener("submit", async (event) => {
      event.preventDefault();
      try {
        const body = { ...this.settings, show_cash_out: $("set-cash-out").checked, show_chat: $("set-chat").checked };
        this.settings = (await this.api.post(`/v1/sessions/${this.sid}/settings`, body)).settings;
        $("set-saved").textContent = "Settings saved.";
        this.chat.applySettings();
        this.blackjack.refresh();
      } catch (e) {
        this.fail(e);
      }
    });
  }
}

async function boot() {
  const how = launch();
  if (!how.token && !how.spectator) {
    const form = $("login");
    form.hidden = false;
    form.addEventListener("submit", (event) => {
      event.preventDefault();
      const params = new URLSearchParams({ token: $("login-token").value.trim(), table: $("login-table").value.trim() });
      location.hash = params.toString();
      location.reload();
    });
    document.body.dataset.ready = "login";
    return;
  }
  const client = new Client(how);
  window.croupier = client; // for the curious integrator (and the browser tests)
  try {
    await client.start();
  } catch (e) {
    client.fail(e);
    document.body.dataset.ready = "error";
  }
}

boot();
