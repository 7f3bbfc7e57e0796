/*
 * Keyboard: Enter searches, alpha steps by 0.05 (0.01 with Shift), Esc leaves presentation mode.
 *
 * The query box is a text area (so a long question shows whole), and a text
 * area has no "submit": Enter clicks Search, Shift+Enter breaks the line.
 * The alpha slider's own step is 0.01 so a drag is fine; its arrow keys are
 * taken here so that a press moves a useful 0.05 and Shift+arrow the fine 0.01.
 */
(function () {
  "use strict";

  const STEP = 0.05;
  const FINE = 0.01;
  const KEYS = {ArrowRight: 1, ArrowUp: 1, ArrowLeft: -1, ArrowDown: -1};
  let pending = null;

  function alphaKey(event) {
    const thumb = event.target.closest && event.target.closest("#alpha [role=slider]");
    if (!thumb || !(event.key in KEYS) || !window.dash_clientside) return false;
    // Presses can come faster than the slider re-renders: go on from the value
    // this handler last set while the slider has not shown it yet.
    const shown = parseFloat(thumb.getAttribute("aria-valuenow"));
    const now = pending && Date.now() - pending.at < 1000 && shown !== pending.value ? pending.value : shown;
    if (Number.isNaN(now)) return false;
    const step = event.shiftKey || event.altKey ? FINE : STEP;
    // A coarse step lands on the 0.05 grid first, so 0.73 goes to 0.75, not 0.78.
    const grid = KEYS[event.key] > 0 ? Math.floor(now / step + 1e-6) + 1 : Math.ceil(now / step - 1e-6) - 1;
    const next = Math.min(1, Math.max(0, +(grid * step).toFixed(2)));
    window.dash_clientside.set_props("alpha", {value: next});
    pending = {value: next, at: Date.now()};
    return true;
  }

  document.addEventListener(
    "keydown",
    (event) => {
      if (event.key === "Enter" && !event.shiftKey && event.target && event.target.id === "query") {
        event.preventDefault();
        const search = document.getElementById("search");
        if (search) search.click();
        return;
      }
      if (event.key === "Escape") {
        const app = document.getElementById("app");
        if (app && app.classList.contains("presenting")) document.getElementById("present").click();
        return;
      }
      if (alphaKey(event)) {
        event.preventDefault();
        event.stopPropagation();
      }
    },
    true, // capture: before the slider's own handler
  );
})();
