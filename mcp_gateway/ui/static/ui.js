// Progressive enhancement only: every page works without this file.
"use strict";
document.addEventListener("DOMContentLoaded", () => {
  // Filters apply as soon as they change.
  for (const el of document.querySelectorAll(".autosubmit")) {
    el.addEventListener("change", () => el.form && el.form.requestSubmit());
  }
  // Ask before forgetting a memory.
  for (const form of document.querySelectorAll("form.confirm")) {
    form.addEventListener("submit", (ev) => {
      if (!window.confirm(form.dataset.confirm || "Are you sure?")) ev.preventDefault();
    });
  }
  // "/" focuses the search box, as on most sites.
  document.addEventListener("keydown", (ev) => {
    const box = document.querySelector("input[type=search]");
    if (ev.key === "/" && box && document.activeElement !== box &&
        !["INPUT", "TEXTAREA", "SELECT"].includes(document.activeElement.tagName)) {
      ev.preventDefault();
      box.focus();
    }
  });
});
