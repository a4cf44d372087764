// A confirmation asked in a modal <dialog> (the browser keeps focus inside it, Escape cancels,
// and focus returns to the control that opened it). Imported by the views for actions that
// cannot be undone, such as finishing a session.

import { h } from "./dom.js";

/**
 * Asks `question`; resolves true when the person confirms.
 * @param {string} question
 * @param {{confirm: string, detail?: string, danger?: boolean}} words
 * @returns {Promise<boolean>}
 */
export function confirmAction(question, words) {
  const opener = document.activeElement;
  return new Promise((resolve) => {
    const yes = h("button", { type: "button", class: words.danger ? "danger" : "primary", testid: "confirm-yes" }, words.confirm);
    const no = h("button", { type: "button", testid: "confirm-no" }, "Cancel");
    const dialog = /** @type {HTMLDialogElement} */ (h("dialog", { class: "confirm-dialog", testid: "confirm-dialog",
      "aria-label": question },
    h("p", { class: "confirm-question", text: question }),
    words.detail ? h("p", { class: "confirm-detail", text: words.detail }) : null,
    h("div", { class: "confirm-actions" }, no, yes)));
    let answer = false;
    yes.addEventListener("click", () => { answer = true; dialog.close(); });
    no.addEventListener("click", () => dialog.close());
    dialog.addEventListener("close", () => {
      dialog.remove();
      if (opener instanceof HTMLElement && opener.isConnected) opener.focus();
      resolve(answer);
    });
    document.body.append(dialog);
    dialog.showModal();
    no.focus();
  });
}
