import { readFileSync, readdirSync, statSync } from "node:fs";
import { join } from "node:path";
import { expect, it } from "vitest";
import { messages, redirectErrors } from "../errors";
import { LANGUAGES, pickLanguage, translate } from "../i18n";
import { ago, describeDevice } from "../ua";

it("picks the language picked before, else the browser's first one we have, else English", () => {
  expect(pickLanguage(["de-AT", "en"], null)).toBe("de");
  expect(pickLanguage(["fr-FR", "de"], null)).toBe("de");
  expect(pickLanguage(["fr-FR"], null)).toBe("en");
  expect(pickLanguage(["de"], "en")).toBe("en");
  expect(pickLanguage(["en"], "xx")).toBe("en");
  expect(translate("de", "Sign in")).toBe("Anmelden");
  expect(translate("de", "Not in any file yet")).toBe("Not in any file yet");
  expect(translate("en", "Try again in {n} seconds.", { n: 5 })).toBe("Try again in 5 seconds.");
  const de = (s: string, v?: Record<string, string | number>) => translate("de", s, v);
  const now = Date.parse("2026-11-24T12:00:00Z");
  expect(ago("2026-11-24T11:55:00Z", now, de)).toBe("vor 5 Minuten");
  expect(ago("2026-11-23T12:00:00Z", now, de)).toBe("vor 1 Tag");
  expect(describeDevice("Mozilla/5.0 (X11; Linux x86_64) Chrome/156.0 Safari/537.36", de)).toBe("Chrome unter Linux");
});

/** Every literal given to `t(…)` in the pages' sources. */
function sentencesInSources(dir: string, out = new Set<string>()): Set<string> {
  for (const name of readdirSync(dir)) {
    const path = join(dir, name);
    if (statSync(path).isDirectory()) {
      if (name !== "test" && name !== "i18n") sentencesInSources(path, out);
    } else if (/\.(ts|tsx)$/.test(name)) {
      const text = readFileSync(path, "utf8");
      // t("…"), tx("…") and marked("…"), and the labels, hints, titles and buttons the form parts and dialogs translate themselves.
      for (const m of text.matchAll(/\b(?:tx?|marked)\(\s*"((?:[^"\\]|\\.)*)"/g)) out.add(JSON.parse(`"${m[1]}"`));
      if (/\bt\(/.test(text)) {
        const parts = /<(?:Field|PasswordField|Dialog|Confirm|ShownOnce)\b[^>]*?\b(?:label|hint|title|confirm|body)="([^"]*)"/g;
        for (const m of text.matchAll(parts)) out.add(m[1] ?? "");
      }
    }
  }
  return out;
}

it("every sentence the pages show has a translation in every language", () => {
  const sentences = sentencesInSources(join(__dirname, ".."));
  for (const m of [...Object.values(messages), ...Object.values(redirectErrors)]) sentences.add(m);
  expect(sentences.size).toBeGreaterThan(10);
  for (const [code, lang] of Object.entries(LANGUAGES)) {
    if (code === "en") continue;
    const missing = [...sentences].filter((s) => !(s in lang.messages));
    expect(missing, `${code} lacks these`).toEqual([]);
  }
});

/** Words a page shows as they are in every language: a header's name, an abbreviation. */
const SAME_IN_EVERY_LANGUAGE = new Set(["x-api-key", "2FA"]);

it("no page shows a sentence outside the catalogue: every text and label goes through t", () => {
  const found: string[] = [];
  const scan = (dir: string) => {
    for (const name of readdirSync(dir)) {
      const path = join(dir, name);
      if (statSync(path).isDirectory()) {
        if (name !== "test" && name !== "i18n") scan(path);
        continue;
      }
      if (!name.endsWith(".tsx")) continue;
      const text = readFileSync(path, "utf8");
      const at = (i: number) => `${path.slice(path.indexOf("src/"))}:${text.slice(0, i).split("\n").length}`;
      // Text between tags: `<p>Hello</p>`, `<button>\n  Save\n</button>` (not `{t("…")}`).
      for (const m of text.matchAll(/>\s*([^<>{}=;()`"[\]]*?[A-Za-z]{2,}[^<>{}=;()`"[\]]*?)\s*(?=<|\{)/g)) {
        const words = (m[1] ?? "").trim();
        // Type parameters (`Promise<void>`) and nodes inside an object literal (`a: <b/>,\n c:`) are not text.
        if (/^(void|Promise)( \| (void|Promise))*$/.test(words) || words.startsWith(",") || SAME_IN_EVERY_LANGUAGE.has(words)) continue;
        found.push(`${at(m.index)} ${JSON.stringify(words)}`);
      }
      // Attributes a person reads or hears, on plain elements (the form parts translate their own).
      for (const m of text.matchAll(/<([a-z][a-z0-9]*)\b[^>]*?\b(aria-label|placeholder|title|alt)="([^"]*[A-Za-z][^"]*)"/g)) {
        if ((m[3] ?? "").startsWith("https://")) continue;
        found.push(`${at(m.index)} ${m[2]}=${JSON.stringify(m[3])}`);
      }
    }
  };
  scan(join(__dirname, ".."));
  expect(found).toEqual([]);
});
