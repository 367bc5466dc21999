// Jacks or Better, 4 lines (seed 000) and multi-hand (seed 004): Bet one, Bet max, Deal,
// Hold (the proposed holds pre-selected), Draw, then Collect, Double or Half double, and
// the double-up's pick among four face-down cards. The paytable is always on screen.
import { $, cardItem, cardName, cardText, el, isRed, money } from "./format.js";

const HANDS = {
  "royal-flush": "Royal flush",
  "straight-flush": "Straight flush",
  "four-of-a-kind": "Four of a kind",
  "full-house": "Full house",
  flush: "Flush",
  straight: "Straight",
  "three-of-a-kind": "Three of a kind",
  "two-pair": "Two pair",
  "jacks-or-better": "Jacks or better",
  nothing: "Nothing",
};

export class Poker {
  constructor(client) {
    this.c = client;
    this.round = null;
    this.coins = 1;
    this.holds = new Set();
  }

  get base() {
    return `/v1/sessions/${this.c.sid}/video-poker`;
  }

  get variant() {
    return this.variants.find((v) => v.id === $("vp-variant").value) || this.variants[0];
  }

  async start() {
    const games = await this.c.api.get("/v1/games");
    this.variants = games.video_poker;
    $("vp-variant").replaceChildren(...this.variants.map((v) => el("option", { value: v.id, text: v.id === "jb-4line" ? "Jacks or Better, 4 lines" : `Jacks or Better, ${v.id}` })));
    $("vp-variant").addEventListener("change", () => this.setup());
    $("vp-coin").addEventListener("change", () => this.showBet());
    $("vp-lines").addEventListener("change", () => this.showBet());
    $("vp-bet-one").addEventListener("click", () => {
      this.coins = this.coins >= 5 ? 1 : this.coins + 1;
      this.showBet();
    });
    $("vp-bet-max").addEventListener("click", () => {
      this.coins = 5;
      this.showBet();
      this.deal();
    });
    $("vp-deal").addEventListener("click", () => this.deal());
    $("vp-draw").addEventListener("click", () => this.call("draw", { holds: [...this.holds].sort() }));
    $("vp-collect").addEventListener("click", () => this.call("collect"));
    $("vp-double-up").addEventListener("click", () => this.call("double"));
    $("vp-half").addEventListener("click", () => this.call("half-double"));
    this.setup();
    // an open round of this game (after a reload): resume it
    const open = await this.c.api.get(`/v1/sessions/${this.c.sid}/round`).catch(() => ({ round: null }));
    if (open.round && open.round.game === "video-poker") this.show(open.round);
    this.render();
  }

  setup() {
    const v = this.variant;
    $("vp-coin").replaceChildren(...v.coin_values.map((c) => el("option", { value: c, text: money(c) })));
    $("vp-lines").replaceChildren(...v.lines.map((n) => el("option", { value: n, text: String(n) })));
    $("vp-lines").disabled = v.lines.length < 2;
    const head = el("tr", {}, el("th", { scope: "col", text: "Hand" }), ...[1, 2, 3, 4, 5].map((n) => el("th", { scope: "col", text: `${n} coin${n > 1 ? "s" : ""}` })));
    $("vp-paytable").querySelector("thead").replaceChildren(head);
    $("vp-paytable").querySelector("tbody").replaceChildren(
      ...v.paytable.map((p) => el("tr", { "data-hand": p.hand }, el("th", { scope: "row", text: HANDS[p.hand] || p.hand }), ...p.pays.map((x) => el("td", { text: String(x) })))),
    );
    this.showBet();
  }

  showBet() {
    const bet = Number($("vp-coin").value) * this.coins * Number($("vp-lines").value || 1);
    $("vp-coins").textContent = String(this.coins);
    $("vp-bet").textContent = money(bet);
    for (const row of $("vp-paytable").querySelectorAll("tbody tr")) {
      [...row.children].forEach((cell, i) => cell.classList.toggle("coins", i === this.coins));
    }
  }

  deal() {
    return this.call("deal", {
      variant: this.variant.id,
      coin_value: Number($("vp-coin").value),
      coins: this.coins,
      lines: Number($("vp-lines").value),
    });
  }

  async call(action, body) {
    try {
      this.c.notice("");
      this.show(await this.c.api.post(`${this.base}/${action}`, body));
      this.c.setBalance(this.round.balance);
    } catch (e) {
      this.c.fail(e);
    }
    this.render();
  }

  show(round) {
    const fresh = !this.round || this.round.code !== round.code;
    this.round = round;
    if (fresh || round.view.phase === "dealt") {
      this.holds = new Set(round.view.holds || round.view.recommended || []);
    }
  }

  render() {
    const r = this.round;
    const view = r ? r.view : null;
    const phase = view ? view.phase : "";
    const open = Boolean(r && r.status === "open");
    $("poker").dataset.phase = phase;
    $("poker").dataset.status = r ? r.status : "";
    $("vp-code").textContent = r ? r.code : "";
    const dealt = open && phase === "dealt";
    for (const id of ["vp-bet-one", "vp-bet-max", "vp-deal", "vp-variant", "vp-coin"]) $(id).disabled = open;
    $("vp-lines").disabled = open || this.variant.lines.length < 2;
    $("vp-draw").disabled = !dealt;
    $("vp-hand").replaceChildren(
      ...(view ? view.cards : []).map((card, i) => {
        const held = this.holds.has(i);
        const b = el(
          "button",
          { type: "button", "data-index": i, "aria-pressed": String(held), "aria-label": `${cardName(card)}${held ? ", held" : ""}` },
          el("span", { class: isRed(card) ? "red" : "", text: cardText(card) }),
          el("span", { class: "held", text: held ? "HELD" : "Hold" }),
        );
        b.disabled = !dealt;
        b.addEventListener("click", () => {
          if (this.holds.has(i)) this.holds.delete(i);
          else this.holds.add(i);
          this.render();
          $("vp-hand").querySelector(`[data-index="${i}"]`).focus();
        });
        return b;
      }),
    );
    $("vp-lines-out").replaceChildren(
      ...(view ? view.lines : []).map((line, i) =>
        el("li", {}, el("span", { text: `Hand ${i + 1}: ${HANDS[line.rank] || line.rank} ${line.win ? `wins ${money(line.win)}` : ""} ` }), el("ul", { class: "cards" }, ...line.cards.map(cardItem))),
      ),
    );
    const pending = open && phase === "win-pending";
    const picking = open && phase === "double-pick";
    $("vp-double").hidden = !(pending || picking || (view && view.double_up.length));
    $("vp-win").textContent = view && (pending || picking) ? `Win: ${money(view.win)}` : "";
    $("vp-collect").disabled = !pending;
    $("vp-double-up").disabled = !pending;
    $("vp-half").disabled = !pending || view.win < 2;
    $("vp-pick-box").hidden = !picking;
    const step = view && view.double_up.length ? view.double_up[view.double_up.length - 1] : null;
    if (picking && step) {
      $("vp-dealer-card").textContent = `${cardText(step.dealer_card)} (${cardName(step.dealer_card)})`;
      $("vp-pick").replaceChildren(
        ...[0, 1, 2, 3].map((i) => {
          const b = el("button", { type: "button", "data-pick": i, text: `Card ${i + 1}`, "aria-label": `Face-down card ${i + 1}` });
          b.addEventListener("click", () => this.call("pick", { index: i }));
          return b;
        }),
      );
    }
    $("vp-steps").replaceChildren(
      ...(view ? view.double_up : [])
        .filter((s) => s.result)
        .map((s) => el("li", { text: `${s.bet_type}: dealer ${cardText(s.dealer_card)}, you picked ${cardText(s.cards[s.index])} — ${s.result}` })),
    );
    const result = $("vp-result");
    if (r && r.status === "settled") {
      result.textContent = `${r.code}: ${r.outcome} · staked ${money(r.staked)}, paid ${money(r.payout)}`;
    } else if (dealt) {
      result.textContent = "Choose the cards to hold (the proposed ones are held), then draw.";
    } else {
      result.textContent = "";
    }
  }
}
