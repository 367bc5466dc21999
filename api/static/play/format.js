// Money, cards and small DOM helpers. Text only: nothing from the server is ever
// inserted as HTML (textContent everywhere).

let exponent = 2;
let currency = "EUR";

export function setCurrency(code, minorUnit) {
  currency = code;
  exponent = minorUnit;
}

export function money(minor) {
  const value = Number(minor) / 10 ** exponent;
  return new Intl.NumberFormat("en", {
    style: "currency",
    currency,
    minimumFractionDigits: exponent,
    maximumFractionDigits: exponent,
  }).format(value);
}

export function toMinor(text) {
  return Math.round(Number(text) * 10 ** exponent);
}

export function fromMinor(minor) {
  return (Number(minor) / 10 ** exponent).toFixed(exponent);
}

const SUITS = { h: ["♥", "hearts", true], d: ["♦", "diamonds", true], c: ["♣", "clubs", false], s: ["♠", "spades", false] };
const RANKS = { A: "Ace", K: "King", Q: "Queen", J: "Jack", T: "10" };

export function cardName(card) {
  const [glyph, suit] = SUITS[card[1]] || ["?", "?"];
  return `${RANKS[card[0]] || card[0]} of ${suit}`;
}

export function cardText(card) {
  const glyph = (SUITS[card[1]] || ["?"])[0];
  return `${card[0] === "T" ? "10" : card[0]}${glyph}`;
}

export function isRed(card) {
  return Boolean((SUITS[card[1]] || [])[2]);
}

export function el(tag, attrs = {}, ...children) {
  const node = document.createElement(tag);
  for (const [name, value] of Object.entries(attrs)) {
    if (name === "text") node.textContent = value;
    else if (name === "class") node.className = value;
    else if (value !== null && value !== undefined && value !== false) node.setAttribute(name, value);
  }
  for (const child of children) node.append(child);
  return node;
}

export function cardItem(card) {
  if (!card) {
    return el("li", { class: "card back", "aria-label": "face-down card", text: "?" });
  }
  return el("li", {
    class: `card${isRed(card) ? " red" : ""}`,
    "aria-label": cardName(card),
    "data-card": card,
    text: cardText(card),
  });
}

export function fillCards(list, cards) {
  list.replaceChildren(...cards.map(cardItem));
}

export function $(id) {
  return document.getElementById(id);
}
