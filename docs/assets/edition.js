/* edition.js: the book's three editions, English at the site's root, Traditional Chinese under
   zh-Hant/ and Simplified Chinese (generated from the Traditional at build time) under zh-Hans/
   (mkdocs-static-i18n's suffix structure: every page has the same path in each, and every heading
   the same id). The header's language switch goes to the same page and the same section
   (location.hash) in the edition chosen, with a full page load so the new page is wholly in its
   language, and remembers the choice in localStorage "agentloop.lang", the key the panels' language
   selects write too: one choice. Panels start in the page's language (i18n.js asks pageLang()).
   Opening the site's root page from outside the book (no referrer from this site, no #section) goes
   to the Chinese edition the reader chose before; a link to any other page opens that page,
   in the language its address names. Before leaving a page that holds a live conversation, the
   switch lets the panels ask the reader (LEAVE_EVENT): a language switch never loses one silently. */

export const LANG_KEY = "agentloop.lang";
// Announced on window, cancelable, before the header's switch leaves the page for the other edition.
export const LEAVE_EVENT = "agentloop-leave-edition";
export const EDITIONS = ["en", "zh-Hant", "zh-Hans"];
// Where each edition lives, under the site's root.
export const PREFIXES = { en: "", "zh-Hant": "zh-Hant/", "zh-Hans": "zh-Hans/" };

// The edition whose folder `path` (under the site's root) starts with, and the path without it.
export function editionOf(path) {
  for (const lang of EDITIONS) {
    const prefix = PREFIXES[lang];
    if (prefix && path.startsWith(prefix)) return { lang, rest: path.slice(prefix.length) };
  }
  return { lang: "en", rest: path };
}
// Pages that exist in one edition only (the code's source pages): the other edition's home instead.
const ENGLISH_ONLY = /^source\//;

// The site's root: this module is assets/edition.js of the edition it was loaded from, a fixed
// address, unlike the page's, which Material's instant navigation changes without a reload.
function siteRoot() {
  const editionRoot = new URL("../", import.meta.url);
  const inEdition = EDITIONS.some(
    (lang) => PREFIXES[lang] && editionRoot.pathname.endsWith("/" + PREFIXES[lang]),
  );
  return inEdition ? new URL("../", editionRoot) : editionRoot;
}

// The page's path under the site's root, without the edition's prefix, and its edition.
export function whereAmI(loc = globalThis.location) {
  const root = siteRoot().pathname;
  return editionOf(loc.pathname.startsWith(root) ? loc.pathname.slice(root.length) : loc.pathname);
}

export function pageLang(loc = globalThis.location) {
  return loc && loc.pathname !== undefined && loc.protocol !== "file:" ? whereAmI(loc).lang : "en";
}

// The same page, and the same section, in edition `lang`.
export function addressIn(lang, loc = globalThis.location, hash = loc.hash) {
  const { rest } = whereAmI(loc);
  const path = ENGLISH_ONLY.test(rest) ? "" : rest;
  const url = new URL((PREFIXES[lang] || "") + path, siteRoot());
  return url.href + (path ? loc.search + hash : "");
}

// The section the reader is in: the address's #section, else the last heading scrolled past (the
// ids are the same in both editions), else none (the top of the page).
function sectionHash() {
  if (window.location.hash) return window.location.hash;
  let last = "";
  const headings = document.querySelectorAll(".md-content h2[id], .md-content h3[id]");
  for (const h of headings) {
    if (h.getBoundingClientRect().top > 80) break; // below the header: not reached yet
    last = "#" + h.id;
  }
  return last;
}

export function remember(lang) {
  try {
    localStorage.setItem(LANG_KEY, lang);
  } catch {
    // storage refused: the switch still goes
  }
}

export function remembered() {
  try {
    const kept = localStorage.getItem(LANG_KEY);
    return EDITIONS.includes(kept) ? kept : null;
  } catch {
    return null;
  }
}

// The header's switch (Material's language selector, fed by extra.alternate in mkdocs.yml): taken
// over before Material's instant navigation sees the click.
function onSwitch(event) {
  const link = event.target instanceof Element && event.target.closest(".md-select a[hreflang]");
  if (!link || event.metaKey || event.ctrlKey || event.shiftKey || event.button !== 0) return;
  const lang = link.getAttribute("hreflang");
  if (!EDITIONS.includes(lang)) return;
  event.preventDefault();
  event.stopImmediatePropagation();
  if (lang === pageLang()) return;
  // The other edition is another page: whatever holds work on this one (a live panel's conversation)
  // may ask the reader first, and keep the page by cancelling.
  const leaving = new CustomEvent(LEAVE_EVENT, { cancelable: true, detail: lang });
  if (!window.dispatchEvent(leaving)) return;
  remember(lang);
  window.location.assign(addressIn(lang, window.location, sectionHash()));
}

// Without JavaScript the links go to each edition's home; with it, to this page: keep their href
// true for a middle click or "open in a new tab" too.
function pointSwitch() {
  for (const link of document.querySelectorAll(".md-select a[hreflang]")) {
    const lang = link.getAttribute("hreflang");
    if (EDITIONS.includes(lang)) link.href = addressIn(lang);
  }
}

function fromOutside() {
  try {
    return !document.referrer || new URL(document.referrer).origin !== window.location.origin;
  } catch {
    return true;
  }
}

if (typeof document !== "undefined" && window.location.protocol !== "file:") {
  const here = whereAmI();
  if (here.lang === "en" && here.rest === "" && !window.location.hash && fromOutside()) {
    const chosen = remembered();
    if (chosen && chosen !== "en") window.location.replace(addressIn(chosen));
  }
  window.addEventListener("click", onSwitch, true);
  const point = () => pointSwitch();
  if (window.document$ && typeof window.document$.subscribe === "function") {
    window.document$.subscribe(point);
  } else if (document.readyState === "loading") {
    document.addEventListener("DOMContentLoaded", point);
  } else point();
  window.addEventListener("hashchange", point);
}
