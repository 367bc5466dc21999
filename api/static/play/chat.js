// The table chat: messages arrive on the table's stream ("chat", "chat-hidden"), are
// shown as plain text (textContent: markup in a message is never interpreted), and are
// sent with POST /v1/sessions/{id}/tables/{table}/chat. A player who hides the chat gets
// none from the server; a spectator reads it and cannot send.
import { $, el } from "./format.js";
import { explain } from "./api.js";

export class Chat {
  constructor(client) {
    this.client = client;
    this.log = $("chat-log");
    this.form = $("chat-form");
    if (client.spectator) {
      this.form.hidden = true;
    } else {
      this.form.addEventListener("submit", (event) => {
        event.preventDefault();
        this.send();
      });
    }
  }

  add(message) {
    if (this.log.querySelector(`[data-id="${CSS.escape(message.id)}"]`)) return;
    const item = el(
      "li",
      { "data-id": message.id },
      el("span", { class: "author", text: `${message.author}:` }),
      el("span", { class: "text", text: message.text }),
    );
    this.log.append(item);
    this.log.scrollTop = this.log.scrollHeight;
  }

  hide(message) {
    const item = this.log.querySelector(`[data-id="${CSS.escape(message.id)}"]`);
    if (item) item.remove();
  }

  async send() {
    const input = $("chat-text");
    $("chat-error").textContent = "";
    try {
      const c = this.client;
      await c.api.post(`/v1/sessions/${c.sid}/tables/${c.table}/chat`, { text: input.value });
      input.value = "";
    } catch (e) {
      $("chat-error").textContent = explain(e);
      $("chat-error").dataset.code = e.code || "";
    }
  }

  applySettings() {
    const shown = Boolean(this.client.settings.show_chat);
    $("chat").hidden = !shown || $("blackjack").hidden;
    if (!shown) this.log.replaceChildren();
  }
}
