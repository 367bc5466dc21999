// Red Dog (seed 003): Deal, Clear, See, Repeat, and the raise up to the original bet.
// Every call answers the round as the player sees it (view), which is drawn as it is.
import { $, el, fillCards, fromMinor, money, toMinor } from "./format.js";

export class RedDog {
  constructor(client) {
    this.c = client;
    this.round = null;
  }

  get base() {
    return `/v1/sessions/${this.c.sid}/red-dog`;
  }

  async start() {
    const games = await this.c.api.get("/v1/games");
    this.game = games.red_dog[0];
    $("rd-bet").value = fromMinor(this.game.min_bet);
    $("rd-bet").min = fromMinor(this.game.min_bet);
    $("rd-bet").max = fromMinor(this.game.max_bet);
    const rows = this.game.paytable.map((p) =>
      el("tr", {}, el("td", { text: p.outcome === "win" ? `Spread ${p.spread}` : "Three of a kind" }), el("td", { text: `${p.pays_to_one}:1` })),
    );
    rows.push(el("tr", {}, el("td", { text: "Consecutive cards, or a pair" }), el("td", { text: "push" })));
    $("rd-paytable").querySelector("tbody").replaceChildren(...rows);
    $("rd-deal").addEventListener("click", () => this.call("bet", { bet: toMinor($("rd-bet").value) }));
    $("rd-clear").addEventListener("click", () => {
      $("rd-bet").value = fromMinor(this.game.min_bet);
      $("rd-bet").focus();
    });
    $("rd-repeat").addEventListener("click", () => this.call("repeat"));
    $("rd-raise").addEventListener("click", () => this.call("raise", { amount: toMinor($("rd-raise-amount").value) }));
    $("rd-see").addEventListener("click", () => this.call("see"));
    // an open round of this game (after a reload): resume it
    const open = await this.c.api.get(`/v1/sessions/${this.c.sid}/round`).catch(() => ({ round: null }));
    if (open.round && open.round.game === "red-dog") this.round = open.round;
    this.render();
  }

  async call(action, body) {
    try {
      this.c.notice("");
      this.round = await this.c.api.post(`${this.base}/${action}`, body);
      this.c.setBalance(this.round.balance);
    } catch (e) {
      this.c.fail(e);
    }
    this.render();
  }

  render() {
    const r = this.round;
    const open = Boolean(r && r.status === "open");
    const phase = r ? r.view.phase : "";
    $("reddog").dataset.phase = phase;
    $("reddog").dataset.status = r ? r.status : "";
    $("rd-code").textContent = r ? r.code : "";
    fillCards($("rd-cards"), r ? r.view.cards : []);
    $("rd-spread").textContent = r && r.view.spread !== null && r.view.spread !== undefined ? `Spread: ${r.view.spread}` : "";
    $("rd-deal").disabled = open;
    $("rd-clear").disabled = open;
    $("rd-repeat").disabled = open || !r;
    const deciding = open && phase === "decide";
    $("rd-see").disabled = !deciding;
    $("rd-raise").disabled = !deciding || !r.view.max_raise;
    $("rd-raise-amount").disabled = !deciding || !r.view.max_raise;
    if (deciding) {
      $("rd-raise-amount").value = fromMinor(r.view.max_raise);
      $("rd-raise-amount").max = fromMinor(r.view.max_raise);
    }
    const result = $("rd-result");
    if (r && r.status === "settled") {
      result.textContent = `${r.code}: ${r.outcome} · staked ${money(r.staked)}, paid ${money(r.payout)}`;
    } else if (deciding) {
      result.textContent = `Raise up to ${money(r.view.max_raise)}, or see the third card.`;
    } else {
      result.textContent = "";
    }
  }
}
