/*
 * A click on a slider's mark label sets the slider to that mark's value.
 *
 * Dash draws a mark where the thumb stands at that value, 8 px inside the track's
 * ends, while the track maps a click linearly over its whole width: clicking the
 * label "1" of alpha gave 0.96, "0" gave 0.04. The press is taken here, before
 * the slider's own handler, and the mark's own value is set. A range slider
 * moves the thumb nearest the mark, as its track does.
 */
(function () {
  "use strict";

  function markValue(mark, min, max) {
    // Dash positions a mark at "calc(P% + Npx)", P being where its value lies.
    const found = /calc\(\s*(-?[\d.]+)%/.exec(mark.style.left || "") || /^(-?[\d.]+)%$/.exec(mark.style.left || "");
    if (!found) return null;
    const value = min + (parseFloat(found[1]) / 100) * (max - min);
    const digits = Math.max(0, 6 - Math.ceil(Math.log10(max - min || 1)));
    return +value.toFixed(digits);
  }

  document.addEventListener(
    "pointerdown",
    (event) => {
      const container = event.target.closest && event.target.closest(".dash-slider-container");
      if (!container || !container.id || !window.dash_clientside) return;
      // Marks take no pointer events (the press lands on the slider under them): find the one pressed.
      const mark = Array.from(container.querySelectorAll(".dash-slider-mark")).find((m) => {
        const r = m.getBoundingClientRect();
        return event.clientX >= r.left - 2 && event.clientX <= r.right + 2 && event.clientY >= r.top - 2 && event.clientY <= r.bottom + 2;
      });
      if (!mark) return;
      const thumbs = Array.from(container.querySelectorAll("[role=slider]"));
      if (!thumbs.length || container.querySelector("[data-disabled]")) return;
      const min = parseFloat(thumbs[0].getAttribute("aria-valuemin"));
      const max = parseFloat(thumbs[0].getAttribute("aria-valuemax"));
      const value = markValue(mark, min, max);
      if (value === null || Number.isNaN(min) || Number.isNaN(max)) return;
      event.preventDefault();
      event.stopPropagation();
      const values = thumbs.map((t) => parseFloat(t.getAttribute("aria-valuenow")));
      if (values.length === 1) {
        window.dash_clientside.set_props(container.id, {value: value});
        return;
      }
      let nearest = 0;
      values.forEach((v, i) => { if (Math.abs(v - value) < Math.abs(values[nearest] - value)) nearest = i; });
      const next = values.slice();
      next[nearest] = value;
      next.sort((a, b) => a - b);
      if (new Set(next).size < next.length) return; // two thumbs on one value: the slider would refuse it
      window.dash_clientside.set_props(container.id, {value: next});
    },
    true, // capture: before the slider's own handler
  );
})();
